"""Old against new ``detect_period`` on FRESH speed streams (helper D, issue 19; the
pre-registration is docs/preregistration/D-speed.md): every field identical, and CPU
times alternately (old, new, old, ...).

Streams: the sources and eps0 of ``cpr_speed_same.py`` at T = 144 and 1,000, n = 10,000,
seeds ``[grid.SEED, 31_000 + r, T, 10 eps0]``, r = 0, 1 (that script uses 30_000).

Run: ``nice -n 5 python scripts/D3_fresh_speed.py OLD REPS``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid
from cpr_period_ab import load_old
from cpr_period_same import as_dict

N = 10_000


def fresh_streams():
    """``(T, key, reports)`` of the fresh evaluation streams."""
    for period in (144, 1000):
        for r in (0, 1):
            for source in grid.SOURCES:
                for eps0 in grid.EPS0:
                    rng = np.random.default_rng([grid.SEED, 31_000 + r, period, int(10 * eps0)])
                    clean = grid.clean_stream(source, period, N, rng)
                    key = f"{source}/{period}/{eps0:g}/{r}"
                    yield period, key, SquareWave(eps0).perturb(clean, rng)


def _cpu_ms(detect, x: np.ndarray) -> float:
    start = time.process_time()
    detect(x)
    return 1000.0 * (time.process_time() - start)


def main(old_path: str, reps: int) -> int:
    from ldpfleet.collector.period import detect_period

    old = load_old(old_path)
    print("load before", os.getloadavg())
    rows: dict[int, list[tuple[float, float]]] = {}
    different = 0
    for period, key, x in fresh_streams():
        if as_dict(old.detect_period(x)) != as_dict(detect_period(x)):
            different += 1
            print("DIFFERENT", key, flush=True)
        a, b = [], []
        for _ in range(reps):
            a.append(_cpu_ms(old.detect_period, x))
            b.append(_cpu_ms(detect_period, x))
        rows.setdefault(period, []).append((float(np.median(a)), float(np.median(b))))
    print("load after", os.getloadavg())
    print(f"different {different}")
    for period, pairs in rows.items():
        old_ms, new_ms = np.array(pairs).T
        ratio = new_ms / old_ms
        print(
            f"T {period}: {len(pairs)} streams, old median/max {np.median(old_ms):.1f} / "
            f"{old_ms.max():.1f} ms, new {np.median(new_ms):.1f} / {new_ms.max():.1f} ms, "
            f"ratio median {np.median(ratio):.3f} (range {ratio.min():.3f}-{ratio.max():.3f}), "
            f"max new / max old {new_ms.max() / old_ms.max():.3f}"
        )
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
