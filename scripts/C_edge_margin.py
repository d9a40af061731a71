"""Calibration of step 10 (a)'s margin (helper C, 2026-12-06; docs/preregistration/
C-range-edge-v2.md): on the periodic streams of ``scripts/C_range_edge.py`` (``beyond``:
true period past the range; ``inrange``: ``n // 3 - d``), every claim where the settle
with the lifted cut chose a period past ``max_period``, with the exact-test difference
``exact_logp(winner) - exact_logp(T)`` (step 10 (a) withdraws when it is below
``-EDGE_MARGIN``) and whether the claim was exact.

    python scripts/C_edge_margin.py SEED TRIALS
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.collector import period as P

sys.path.insert(0, str(Path(__file__).resolve().parent))
import C_range_edge as C

ROWS: list = []


def _spy(self, period):
    top = self.n // 2
    harmonics = P._resolving_level(self.power(period))
    upper = min(period + self.span(period, harmonics), top)
    if top > self.max_period and upper > self.max_period:
        winner = self.settle(period, harmonics, upper)
        if winner > self.max_period:
            ROWS.append((period, self.exact_logp(winner)[0] - self.exact_logp(period)[0]))
    return None  # measure main's answers: withdraw nothing


def main(argv: list[str]) -> int:
    seed, trials = int(argv[0]), int(argv[1])
    P._Search.beyond = _spy
    for mode in ("beyond", "inrange"):
        periods_of = (
            C.beyond_periods
            if mode == "beyond"
            else (lambda n: [n // 3 - d for d in (0, 1, 2, 5, 10)])
        )
        diffs = {"exact": [], "wrong": []}
        for _n, period, _shape, _eps0, x in C.periodic(seed, trials, periods_of, mode):
            ROWS.clear()
            est = P.detect_period(x)
            if est.period is not None and ROWS:
                diffs["exact" if est.period == period else "wrong"].append(ROWS[-1][1])
        for kind, values in diffs.items():
            values = np.sort(values)
            print(f"{mode} {kind}: {values.size} settled past the range")
            for margin in (0.0, 0.5, 1.0, 2.0, 3.0, 5.0):
                print(f"   margin {margin}: withdrawn {int(np.sum(values < -margin))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
