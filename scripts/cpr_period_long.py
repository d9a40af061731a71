"""Old against new ``detect_period`` on long streams: CPU and wall time, alternating.

``OLD`` is a copy of an earlier ``collector/period.py``; "new" is the installed package.
Streams: SW(1.0) reports of the grid's speed stream (Darwin template, T = 25; ``darwin``)
or SW(2.0) reports of ``0.5 + 0.3 sin(2 pi t / 48)`` (``sine48``, the stream of the
timing line in docs/cpr.md "Using it"), ``N`` reports, seed 0 / 48. Every call of both
must give the same estimate (asserted, all fields but the ones added after OLD).

Run: ``python scripts/cpr_period_long.py OLD darwin 1000000 4`` (KIND N REPS).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from ldpfleet.app.bench_cpr import grid_stream, grid_template
from ldpfleet.collector import period as new
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cpr_period_same import as_dict, load_old


def stream(kind: str, n: int) -> np.ndarray:
    """The timed stream (module docstring)."""
    if kind == "sine48":
        rng = np.random.default_rng(48)
        return SquareWave(2.0).perturb(0.5 + 0.3 * np.sin(2 * np.pi * np.arange(n) / 48), rng)
    rng = np.random.default_rng(0)
    return SquareWave(1.0).perturb(grid_stream(grid_template("darwin", 25, rng), n, rng), rng)


def main(old_path: str, kind: str, n: int, reps: int) -> None:
    old = load_old(old_path)
    x = stream(kind, n)
    wall: dict[str, list[float]] = {"old": [], "new": []}
    cpu: dict[str, list[float]] = {"old": [], "new": []}
    pair = (("old", old.detect_period), ("new", new.detect_period))
    answers = []
    for i in range(reps):
        for name, detect in pair if i % 2 == 0 else pair[::-1]:
            started, cpu_started = time.perf_counter(), time.process_time()
            answers.append(as_dict(detect(x)))
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
    assert all(a == answers[0] for a in answers), "the estimates differ"
    print(
        f"{kind} n={n} reps={reps} "
        + "  ".join(
            f"{k}: CPU median {np.median(cpu[k]):.4f} s, wall median {np.median(wall[k]):.4f} s"
            for k in wall
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
