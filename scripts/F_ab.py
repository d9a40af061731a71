"""Helper F (issue 19, C8): old against new ``detect_period`` CPU time on the speed streams
of ``scripts/cpr_speed_same.py`` at one ``T`` (0: the bench stream), alternating old and new
per call in one process (the machine's load hits both alike): per stream the median of
REPS calls of each, then the median and maximum over the streams, and the summed medians.

``cold`` as a 4th argument: the caches helper F added (``_within_trend``, ``_masked_shapes``,
``_quadratic_columns``, keyed by the stream's length and period) are cleared before every
new call, as for a stream whose (n, T) no earlier call saw.

Run: ``nice -n 5 python scripts/F_ab.py /tmp/F_old 1000 5 [cold]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpr_period_ab import load_old
from cpr_speed_same import streams


def _cpu_ms(detect, x: np.ndarray) -> float:
    start = time.process_time()
    detect(x)
    return 1000.0 * (time.process_time() - start)


def main(argv: list[str]) -> int:
    from ldpfleet.collector.period import detect_period

    old = load_old(argv[0])
    want, reps = int(argv[1]), int(argv[2])
    cold = argv[3:4] == ["cold"]
    from ldpfleet.collector import period_stats, period_whiten

    caches = (
        period_whiten._within_trend,
        period_whiten._quadratic_columns,
        period_stats._masked_shapes,
    )

    def new(x: np.ndarray) -> float:
        if cold:
            for cache in caches:
                cache.cache_clear()
        return _cpu_ms(detect_period, x)

    rows = []
    for period, key, x in streams():
        if period != want:
            continue
        a, b = [], []
        for i in range(reps):
            if i % 2:
                b.append(new(x))
                a.append(_cpu_ms(old.detect_period, x))
            else:
                a.append(_cpu_ms(old.detect_period, x))
                b.append(new(x))
        rows.append((float(np.median(a)), float(np.median(b)), key))
    old_ms, new_ms = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    for o, n, key in sorted(rows, key=lambda r: r[1])[-6:]:
        print(f"  {key}: old {o:.1f} new {n:.1f} ms")
    print(
        f"{'cold ' if cold else ''}T {want}: streams {len(rows)};"
        f" old median {np.median(old_ms):.1f} max {old_ms.max():.1f}"
        f" sum {old_ms.sum():.0f}; new median {np.median(new_ms):.1f} max {new_ms.max():.1f}"
        f" sum {new_ms.sum():.0f} ms; new/old (sums) {new_ms.sum() / old_ms.sum():.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
