"""Where ``detect_period``'s CPU time goes on the issue-19 speed streams (helper D).

``python scripts/D3_profile.py T [REPS] [SORT]``: cProfile over REPS passes of every
speed stream of ``cpr_speed_same.streams`` at period ``T`` (0: the bench's stream), the
top 35 functions by SORT (default ``tottime``), and the CPU milliseconds per stream
without the profiler (median of REPS) beside it.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpr_speed_same import streams
from ldpfleet.collector.period import detect_period


def main(argv: list[str]) -> None:
    period = int(argv[0])
    reps = int(argv[1]) if len(argv) > 1 else 1
    order = argv[2] if len(argv) > 2 else "tottime"
    chosen = [(key, x) for t, key, x in streams() if t == period]
    for key, x in chosen:
        cpu = []
        for _ in range(reps):
            start = time.process_time()
            detect_period(x)
            cpu.append(1000.0 * (time.process_time() - start))
        print(f"{key}: {np.median(cpu):.1f} ms", flush=True)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(reps):
        for _, x in chosen:
            detect_period(x)
    profile.disable()
    pstats.Stats(profile).sort_stats(order).print_stats(35)


if __name__ == "__main__":
    main(sys.argv[1:])
