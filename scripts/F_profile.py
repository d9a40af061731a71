"""Helper F (issue 19, C8): where the CPU of ``detect_period`` goes on the speed streams of
``scripts/cpr_speed_same.py``.

- ``times [T]``: per stream, the median CPU ms of 3 calls of the installed module.
- ``profile KEY [REPS] [SORT]``: cProfile of REPS calls on the stream named KEY
  (e.g. ``counts/1000/1``), top 40 by SORT (default ``tottime``).

Run: ``nice -n 5 python scripts/F_profile.py times 1000``.
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


def _ms(x: np.ndarray, reps: int = 3) -> float:
    out = []
    for _ in range(reps):
        start = time.process_time()
        detect_period(x)
        out.append(1000.0 * (time.process_time() - start))
    return float(np.median(out))


def main(argv: list[str]) -> int:
    if argv[0] == "times":
        want = int(argv[1]) if len(argv) > 1 else None
        for period, key, x in streams():
            if want is None or period == want:
                print(f"{key}: {_ms(x):.1f} ms", flush=True)
        return 0
    key, reps = argv[1], int(argv[2]) if len(argv) > 2 else 10
    x = next(x for _, k, x in streams() if k == key)
    detect_period(x)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(reps):
        detect_period(x)
    prof.disable()
    pstats.Stats(prof).sort_stats(argv[3] if len(argv) > 3 else "tottime").print_stats(40)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
