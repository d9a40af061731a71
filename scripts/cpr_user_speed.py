"""CPU time of ``detect_period`` on 10,000-report streams of the held-out user grid
(``scripts/cpr_user_heldout.py``: every source, T = 1000 (10 cycles) and T = 37, eps0 0.2,
1, 5), next to the speed stream of ``ldpfleet bench cpr`` (Darwin T = 25, eps0 = 1), timed
alternately in one process so that the machine's load hits both alike.

Run: ``nice -n 5 python scripts/cpr_user_speed.py REPS`` (one line per stream kind: median
CPU ms over REPS calls on one stream, then the speed stream's median).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from ldpfleet.app.bench_cpr import grid_stream, grid_template
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid


def _cpu_ms(stream: np.ndarray) -> float:
    start = time.process_time()
    detect_period(stream)
    return 1000.0 * (time.process_time() - start)


def main(reps: int) -> None:
    rng = np.random.default_rng(0)
    reference = SquareWave(1.0).perturb(
        grid_stream(grid_template("darwin", 25, rng), 10_000, rng), rng
    )
    worst = 0.0
    for source in grid.SOURCES:
        for period in (1000, 37):
            for eps0 in grid.EPS0:
                rng = np.random.default_rng([grid.SEED, 30_000, period, int(10 * eps0)])
                clean = grid.clean_stream(source, period, 10_000, rng)
                stream = SquareWave(eps0).perturb(clean, rng)
                ours, ref = [], []
                for _ in range(reps):
                    ours.append(_cpu_ms(stream))
                    ref.append(_cpu_ms(reference))
                med = float(np.median(ours))
                worst = max(worst, med)
                print(
                    f"{source} T={period} eps0={eps0:g}: {med:.1f} ms "
                    f"(speed stream {np.median(ref):.1f} ms)",
                    flush=True,
                )
    print(f"worst median {worst:.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]))
