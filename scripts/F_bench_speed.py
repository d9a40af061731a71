"""Helper F (issue 19, C8): ``ldpfleet bench cpr``'s detect_period speed fields
(``app/bench_cpr_speed._detector_speed``: the grid's Darwin T = 25 stream, wall time, and
its ``_slow_stream_speed``: intel T = 1,000, eps0 = 5, CPU time) for an OLD copy of the
period modules and the installed ones, alternating ROUNDS times in one process (the
bench's own functions, with their module's ``detect_period`` swapped).

Run: ``nice -n 5 python scripts/F_bench_speed.py /tmp/F_old 3``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.app import bench_cpr_speed as speed

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpr_period_ab import load_old

FIELDS = (
    "detect_period_ms_10k_median",
    "detect_period_cpu_ms_10k_t1000_median",
    "detect_period_cpu_ms_10k_t1000_max",
)


def main(argv: list[str]) -> int:
    from ldpfleet.collector.period import detect_period

    old = load_old(argv[0]).detect_period
    rounds = int(argv[1]) if len(argv) > 1 else 3
    seen: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    for i in range(rounds):
        for name, detect in (("old", old), ("new", detect_period))[:: 1 if i % 2 == 0 else -1]:
            speed.detect_period = detect
            out = speed._detector_speed(0)
            for field in FIELDS:
                seen[name].setdefault(field, []).append(out[field])
    for field in FIELDS:
        o, n = np.median(seen["old"][field]), np.median(seen["new"][field])
        print(f"{field}: old {o:.2f} new {n:.2f} (median of {rounds} rounds; new/old {n / o:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
