"""Old against new ``detect_period`` on short streams (issue 19, helper A, 2026-12-05): the
check of the step-6 skip where no masked background can be fitted (``masked_bins``).

Aperiodic: the six kinds of ``cpr_user_heldout.py`` (white, random walk, AR(1) 0.7, trend,
level shift, Student t2), n = 24, 27, ..., 51 (``MIN_CYCLES = 3``) or 60, 100, 300, 1,000
(``MIN_CYCLES = 2``), SW at eps0 0.2, 1, 5, TRIALS each: claims old / new and every changed
answer. Periodic: the 11 held-out sources at (T, n) = (8, 27), (8, 29), (11, 37), (13, 44),
(16, 50), (10, 35) (or, at ``min_cycles = 2``, (40, 100), (45, 100), (140, 300),
(400, 1000)), eps0 1 and 5, TRIALS // 10 trials a source: exact and wrong answers old / new.
Seeds ``[SEED, ...]`` (aperiodic) and ``[SEED + 1, ...]`` (periodic): 61001 calibration,
61011 evaluation, 61021 the ``min_cycles = 2`` check.

Run: ``python scripts/cpr_user_short_ab.py OLD SEED TRIALS [MIN_CYCLES]`` with OLD a copy
of an earlier ``collector/period.py`` (``git show main:collector/period.py > OLD``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.collector import period as new_module
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid
from cpr_period_ab import load_old


def main(old_path: str, seed: int, trials: int, min_cycles: int = 3) -> None:
    old_module = load_old(old_path)

    def both(y):
        return (
            old_module.detect_period(y, min_cycles=min_cycles).period,
            new_module.detect_period(y, min_cycles=min_cycles).period,
        )

    old = new = total = 0
    changed = []
    lengths = range(24, 54, 3) if min_cycles == 3 else (60, 100, 300, 1000)
    for kind in grid.APERIODIC:
        for n in lengths:
            for eps0 in grid.EPS0:
                for t in range(trials):
                    rng = np.random.default_rng(
                        [seed, grid.APERIODIC.index(kind), n, int(eps0 * 10), t]
                    )
                    a, b = both(SquareWave(eps0).perturb(grid.aperiodic(kind, n, rng), rng))
                    old += a is not None
                    new += b is not None
                    total += 1
                    if a != b:
                        changed.append((kind, n, eps0, a, b))
    print(f"min_cycles={min_cycles} aperiodic claims old {old} new {new} of {total}; {changed}")
    shapes = (
        ((8, 27), (8, 29), (11, 37), (13, 44), (16, 50), (10, 35))
        if min_cycles == 3
        else ((40, 100), (45, 100), (140, 300), (400, 1000))
    )
    cells: dict[tuple, list[int]] = {}
    for source in grid.SOURCES:
        for period, n in shapes:
            for eps0 in (1.0, 5.0):
                for t in range(max(1, trials // 10)):
                    rng = np.random.default_rng(
                        [seed + 1, grid.SOURCES.index(source), period, n, int(eps0 * 10), t]
                    )
                    clean = grid.clean_stream(source, period, n, rng)
                    a, b = both(SquareWave(eps0).perturb(clean, rng))
                    row = cells.setdefault((period, n, eps0), [0, 0, 0, 0])
                    row[0] += a == period
                    row[1] += b == period
                    row[2] += a is not None and a != period
                    row[3] += b is not None and b != period
    for key, (e_old, e_new, w_old, w_new) in sorted(cells.items()):
        print(f"{key}: exact old/new {e_old}/{e_new}, wrong old/new {w_old}/{w_new}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *map(int, sys.argv[4:5]))
