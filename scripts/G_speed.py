"""Helper G: a 10,000-report stream, ``detect_period`` timed warm (median of repeats), with
``VETO_NAMED_MARGIN`` as set (default) and off; the periodic stream of the speed claim (a daily
shape, T = 144, SW eps0 1) and an AR(1) 0.95 stream.

    python scripts/G_speed.py [REPEATS]
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
from ldpfleet.app.cpr_grid_streams import aperiodic_stream
from ldpfleet.collector import period_search
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave


def _median_ms(y: np.ndarray, repeats: int) -> float:
    detect_period(y)  # warm
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        detect_period(y)
        times.append(1000 * (time.perf_counter() - t0))
    return statistics.median(times)


def main(repeats: int) -> None:
    """Print the median warm time per stream and setting."""
    rng = np.random.default_rng(2027)
    t = np.arange(10_000)
    periodic = 0.5 + 0.4 * np.sin(2 * np.pi * t / 144)
    streams = {
        "periodic T 144": SquareWave(1.0).perturb(periodic, rng),
        "ar1 0.95": SquareWave(5.0).perturb(aperiodic_stream("ar1", 10_000, rng), rng),
    }
    for margin in (period_search.VETO_NAMED_MARGIN, None):
        period_search.VETO_NAMED_MARGIN = margin
        for name, y in streams.items():
            print(f"margin {margin}: {name}: median {_median_ms(y, repeats):.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
