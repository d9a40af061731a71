"""Calibration data for step 9b's level and neighbour margin on the held-out cells below a
baseline that step 9b reaches (issue 19, helper M2, 2026-12-06).

For each of the 29 cells of ``cpr_short_limit.BELOW`` with ``SHORT_STREAM <= n <
SHORT_CYCLES_STREAM`` (the eight (23, 100) cells): TRIALS fresh streams (seeds ``[SEED,
held-out cell index, trial]``), one JSON line each in ``M_collect.py``'s format (the
installed detector's answer and candidate, the phase-ANOVA log p-values at periods 3 ..
n // 3) plus the folded-variance and autocorrelation baselines' answers (``fv``, ``ac``),
so ``M_rules.py`` / ``M2_rules.py`` replay any rule on them offline.

Run: ``nice -n 5 python scripts/M2_cells_collect.py SEED TRIALS OUT.jsonl``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from ldpfleet.app.bench_cpr import autocorrelation_period, folded_variance_period
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid
from cpr_short_limit import BELOW
from M_collect import record


def main(seed: int, trials: int, out: str) -> None:
    cells = grid.periodic_cells()
    with open(out, "w") as handle:
        for cell in BELOW:
            source, period, n, eps0 = cell
            if not P.SHORT_STREAM <= n < P.SHORT_CYCLES_STREAM:
                continue
            index = cells.index(cell)
            for trial in range(trials):
                rng = np.random.default_rng([seed, index, trial])
                x = SquareWave(eps0).perturb(grid.clean_stream(source, period, n, rng), rng)
                row = json.loads(record(x, source=source, period=period, eps0=eps0))
                row["fv"] = folded_variance_period(x)
                row["ac"] = autocorrelation_period(x)
                handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
