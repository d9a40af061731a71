"""The held-out user table's cells whose claims reach the top of the range, old detector
(OLD: a directory with a copy of ``collector/period*.py``) against the current one:
exact answers and claims per (T, n) (docs/preregistration/C-range-edge-v3.md).

    python scripts/C3_heldout_edge.py OLD [all]

``all``: every periodic cell of the table, not only those whose claims reach the top.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as heldout
from cpr_period_ab import load_old
from ldpfleet.collector.period import detect_period

CELLS = ((8, 24), (23, 100), (61, 250), (333, 1000))


def main(old_dir: str, every: bool = False, trials: int = 20) -> None:
    old = load_old(old_dir)
    totals: Counter = Counter()
    for index, cell in enumerate(heldout.periodic_cells()):
        source, period, n, eps0 = cell
        if not every and (period, n) not in CELLS:
            continue
        for trial in range(trials):
            rng = np.random.default_rng([heldout.SEED, index, trial])
            clean = heldout.clean_stream(source, period, n, rng)
            reports = heldout.SquareWave(eps0).perturb(clean, rng)
            a, b = old.detect_period(reports).period, detect_period(reports).period
            for tag, answer in (("old", a), ("new", b)):
                totals[(period, n, tag + "_exact")] += answer == period
                totals[(period, n, tag + "_claim")] += answer is not None
            totals[(period, n, "changed")] += a != b
    for key in sorted(totals):
        print(key, totals[key])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:3] == ["all"])
