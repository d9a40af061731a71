"""Speed of step 2b (helper E, round 3; docs/preregistration/E3-long-divisors-v2.md): CPU
time of ``detect_period`` with step 2b off (``DIVISOR_CANDIDATES = 0``) and on, alternating
in one process on the 10,000-report cells of ``E3_user_streams`` (the first TRIALS streams
of each, seed block BLOCK), ROUNDS rounds each, the minimum per stream and side.

Run: ``python scripts/E3_speed_ab.py TRIALS ROUNDS BLOCK``."""

from __future__ import annotations

import sys
import time

import numpy as np
from E3_user_streams import SEED, clean_stream, periodic_cells
from ldpfleet.collector import period as P

import ldpfleet


def main(argv: list[str]) -> None:
    trials, rounds, block = (int(a) for a in argv[:3])
    on = P.DIVISOR_CANDIDATES
    old, new = [], []
    for index, (source, period, n, eps0, beats) in enumerate(periodic_cells()):
        if n != 10000:
            continue
        for trial in range(trials):
            rng = np.random.default_rng([SEED, block, index, trial])
            x = ldpfleet.SquareWave(eps0).perturb(clean_stream(source, period, n, rng, beats), rng)
            ldpfleet.detect_period(x)  # warm the (n, T)-keyed caches for both sides
            times = {0: [], on: []}
            for _ in range(rounds):
                for side in (0, on):
                    P.DIVISOR_CANDIDATES = side
                    start = time.process_time()
                    ldpfleet.detect_period(x)
                    times[side].append(time.process_time() - start)
            P.DIVISOR_CANDIDATES = on
            old.append(1000 * min(times[0]))
            new.append(1000 * min(times[on]))
    old_a, new_a = np.array(old), np.array(new)
    print(
        f"{old_a.size} streams: CPU ms median {np.median(old_a):.1f} -> {np.median(new_a):.1f}, "
        f"max {old_a.max():.1f} -> {new_a.max():.1f}, per-stream ratio median "
        f"{np.median(new_a / old_a):.3f} (max {np.max(new_a / old_a):.3f})"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
