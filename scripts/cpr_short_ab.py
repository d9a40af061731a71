"""Old against new ``detect_period`` on short streams (issue 19, helper A, 2026-12-05): the
evaluation of the short-stream penalty (``SHORT_STREAM``, ``SHORT_PENALTY_SLOPE``), on a
seed the calibration (``cpr_short_sweep.py``, seed 88001) never saw.

Aperiodic: the eight families of ``cpr_short_limit.py`` (the held-out six, AR(1) 0.9 and
0.95) at n in ``LENGTHS`` (24-200), SW at eps0 0.2, 1, 5, TRIALS each (seeds ``[SEED,
family, n, eps0 x 10, trial]``): claims old / new per cell, per family, and every changed
answer. Periodic: the 11 held-out sources at ``cpr_short_sweep.SHAPES``, eps0 0.2, 1, 5,
TRIALS // 10 each (seeds ``[SEED + 1, ...]``): exact and wrong answers old / new.

Run: ``nice -n 5 python scripts/cpr_short_ab.py OLD SEED TRIALS`` with OLD a copy of an
earlier ``collector/period.py`` (``git show main:collector/period.py > OLD``).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
from ldpfleet.collector import period as new_module
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid
from cpr_period_ab import load_old
from cpr_short_limit import FAMILIES, null_stream
from cpr_short_sweep import SHAPES

LENGTHS = (24, 30, 36, 50, 75, 100, 120, 150, 200)


def main(old_path: str, seed: int, trials: int) -> None:
    old_module = load_old(old_path)

    def both(y):
        return old_module.detect_period(y).period, new_module.detect_period(y).period

    cells: dict[tuple, list[int]] = {}
    changed = []
    for fi, family in enumerate(FAMILIES):
        for n in LENGTHS:
            for eps0 in grid.EPS0:
                row = cells.setdefault((family, n, eps0), [0, 0, 0])
                for t in range(trials):
                    rng = np.random.default_rng([seed, fi, n, int(eps0 * 10), t])
                    a, b = both(SquareWave(eps0).perturb(null_stream(family, n, rng), rng))
                    row[0] += a is not None
                    row[1] += b is not None
                    row[2] += 1
                    if a != b:
                        changed.append((family, n, eps0, a, b))
    total = sum(r[2] for r in cells.values())
    old = sum(r[0] for r in cells.values())
    new = sum(r[1] for r in cells.values())
    print(
        f"aperiodic: {total} streams, claims old {old} ({100 * old / total:.2f} %) new {new} "
        f"({100 * new / total:.2f} %)"
    )
    print(
        f"worst cell old {max(r[0] for r in cells.values())} new "
        f"{max(r[1] for r in cells.values())} of {trials}"
    )
    for family in FAMILIES:
        sub = [r for k, r in cells.items() if k[0] == family]
        print(
            f"  {family}: old {sum(r[0] for r in sub)} new {sum(r[1] for r in sub)} "
            f"of {sum(r[2] for r in sub)}"
        )
    for n in LENGTHS:
        sub = [r for k, r in cells.items() if k[1] == n]
        print(
            f"  n={n}: old {sum(r[0] for r in sub)} new {sum(r[1] for r in sub)} "
            f"of {sum(r[2] for r in sub)}; worst cell new "
            f"{max(r[1] for r in sub)} of {trials}"
        )
    print(f"changed answers: {len(changed)}: {Counter((c[0], c[1]) for c in changed)}")
    per: dict[tuple, list[int]] = {}
    for si, source in enumerate(grid.SOURCES):
        for period, n in SHAPES:
            for eps0 in grid.EPS0:
                row = per.setdefault((period, n, eps0), [0, 0, 0, 0, 0])
                for t in range(max(1, trials // 10)):
                    rng = np.random.default_rng([seed + 1, si, period, n, int(eps0 * 10), t])
                    clean = grid.clean_stream(source, period, n, rng)
                    a, b = both(SquareWave(eps0).perturb(clean, rng))
                    row[0] += a == period
                    row[1] += b == period
                    row[2] += a is not None and a != period
                    row[3] += b is not None and b != period
                    row[4] += 1
    for key, (e_old, e_new, w_old, w_new, count) in sorted(per.items()):
        if (e_old, w_old) != (e_new, w_new) or e_old:
            print(f"{key}: of {count} exact old/new {e_old}/{e_new}, wrong old/new {w_old}/{w_new}")
    print(
        "periodic totals: exact old/new "
        f"{sum(r[0] for r in per.values())}/{sum(r[1] for r in per.values())}, wrong old/new "
        f"{sum(r[2] for r in per.values())}/{sum(r[3] for r in per.values())} of "
        f"{sum(r[4] for r in per.values())}"
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
