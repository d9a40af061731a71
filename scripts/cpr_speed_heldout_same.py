"""Old against new ``detect_period`` on a sample of the held-out user grid
(``scripts/cpr_user_heldout.py``): every field of both estimates, floats bit for bit
(issue 19, helper K: the partial-DFT refinement must not change an answer there either).

Streams: the periodic cells with ``T >= 150`` (where folds of 600 samples and more are
refined: the partial DFT's range), trials 0 .. TRIALS-1 with the grid's own seeds
``[SEED, cell index, trial]``; the aperiodic cells at n = 5,000; and the long cell
(T = 997, n = 100,000) trial 0 per source (``LONG`` = 1 to include it).

Run: ``git show REV:collector/period.py > /tmp/period_old.py``, then
``nice -n 5 python scripts/cpr_speed_heldout_same.py /tmp/period_old.py TRIALS LONG``;
exit status 1 if any field differs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid
from cpr_period_ab import load_old
from cpr_period_same import as_dict


def streams(trials: int, long: bool):
    """``(key, reports)`` of the sampled held-out streams."""
    for index, (source, period, n, eps0) in enumerate(grid.periodic_cells()):
        if period < 150:
            continue
        for trial in range(trials):
            rng = np.random.default_rng([grid.SEED, index, trial])
            clean = grid.clean_stream(source, period, n, rng)
            yield f"{source}/{period}/{n}/{eps0:g}/{trial}", SquareWave(eps0).perturb(clean, rng)
    for index, kind in enumerate(
        ("white", "random_walk", "ar1_0.7", "trend", "level_shift", "student_t2")
    ):
        for eps0 in grid.EPS0:
            rng = np.random.default_rng([grid.SEED, 50_000 + index, int(10 * eps0)])
            clean = grid.aperiodic(kind, 5_000, rng)
            yield f"aperiodic/{kind}/{eps0:g}", SquareWave(eps0).perturb(clean, rng)
    if long:
        for index, source in enumerate(grid.SOURCES):
            rng = np.random.default_rng([grid.SEED, 20_000 + index, 0])
            clean = grid.clean_stream(source, 997, 100_000, rng)
            yield f"long/{source}", SquareWave(1.0).perturb(clean, rng)


def main(argv: list[str]) -> int:
    from ldpfleet.collector.period import detect_period

    old = load_old(argv[0])
    total = diff = 0
    for key, x in streams(int(argv[1]), argv[2:3] == ["1"]):
        a, b = as_dict(old.detect_period(x)), as_dict(detect_period(x))
        total += 1
        if a != b:
            diff += 1
            print("DIFFERENT", key, a, b, flush=True)
    print(f"streams {total}, identical {total - diff}, different {diff}")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
