"""Calibration data for step 9b's false claims at every length it reaches (issue 19, helper
M2, 2026-12-06): the eight aperiodic families of ``cpr_short_limit.py`` x n 96, 100, 105,
110, 115, 120, 127 (``M_ab.py``'s lengths) x eps0 0.2 / 1 / 5 x TRIALS (seeds ``[SEED,
family index, n, eps0 x 10, trial]``), one JSON line each in ``M_collect.py``'s format.

Run: ``nice -n 5 python scripts/M2_null_collect.py SEED TRIALS OUT.jsonl``, then
``python scripts/M2_rules.py OUT.jsonl RULES``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpr_short_limit import FAMILIES, null_stream
from M_collect import record

LENGTHS = (96, 100, 105, 110, 115, 120, 127)
EPS0 = (0.2, 1.0, 5.0)


def main(seed: int, trials: int, out: str) -> None:
    with open(out, "w") as handle:
        for fi, family in enumerate(FAMILIES):
            for n in LENGTHS:
                for eps0 in EPS0:
                    for trial in range(trials):
                        rng = np.random.default_rng([seed, fi, n, int(eps0 * 10), trial])
                        x = SquareWave(eps0).perturb(null_stream(family, n, rng), rng)
                        handle.write(record(x, kind=family, eps0=eps0) + "\n")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
