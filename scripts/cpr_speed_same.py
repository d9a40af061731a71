"""Old against new ``detect_period`` on the issue-19 speed streams: the same answers, and
their CPU times timed alternately (issue 19, helper H).

Streams: every source of the held-out user grid (``scripts/cpr_user_heldout.py``) at
T = 37, 144 and 1,000, eps0 0.2, 1 and 5, n = 10,000 (the seeds of
``scripts/cpr_user_speed.py``), and the speed stream of ``ldpfleet bench cpr`` (Darwin
T = 25, eps0 = 1). ``OLD`` is a copy of an earlier ``collector/period.py``
(``git show REV:collector/period.py > /tmp/period_old.py``); "new" is the installed package.

- ``same OLD``: every field of the two estimates on every stream (floats bit for bit);
  exit status 1 if any differs.
- ``time OLD REPS``: per stream, REPS calls of each module alternately (old, new, old, ...:
  the machine's load hits both alike), CPU time (``time.process_time``); per T the median
  and the maximum over the streams of the per-stream medians, and how many exceed 50 ms.

Run: ``nice -n 5 python scripts/cpr_speed_same.py same /tmp/period_old.py`` and
``nice -n 5 python scripts/cpr_speed_same.py time /tmp/period_old.py 5``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from ldpfleet.app.bench_cpr import grid_stream, grid_template
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as grid
from cpr_period_ab import load_old
from cpr_period_same import as_dict

PERIODS = (37, 144, 1000)
N = 10_000
BUDGET_MS = 50.0  # issue 19


def streams():
    """``(T, key, reports)`` of every speed stream; T = 0 for the bench's speed stream."""
    rng = np.random.default_rng(0)
    yield (
        0,
        "bench/darwin/25/1",
        SquareWave(1.0).perturb(grid_stream(grid_template("darwin", 25, rng), N, rng), rng),
    )
    for period in PERIODS:
        for source in grid.SOURCES:
            for eps0 in grid.EPS0:
                rng = np.random.default_rng([grid.SEED, 30_000, period, int(10 * eps0)])
                clean = grid.clean_stream(source, period, N, rng)
                yield period, f"{source}/{period}/{eps0:g}", SquareWave(eps0).perturb(clean, rng)


def same(old) -> int:
    """Every field of old and new on every stream; prints the differences."""
    from ldpfleet.collector.period import detect_period

    total, diff = 0, 0
    for _, key, x in streams():
        a, b = as_dict(old.detect_period(x)), as_dict(detect_period(x))
        total += 1
        if a != b:
            diff += 1
            print("DIFFERENT", key, a, b, flush=True)
    print(f"streams {total}, identical {total - diff}, different {diff}")
    return 1 if diff else 0


def _cpu_ms(detect, x: np.ndarray) -> float:
    start = time.process_time()
    detect(x)
    return 1000.0 * (time.process_time() - start)


def timing(old, reps: int) -> None:
    """The per-T table of old and new CPU times (module docstring)."""
    from ldpfleet.collector.period import detect_period

    rows: dict[int, list[tuple[float, float]]] = {}
    for period, key, x in streams():
        a, b = [], []
        for _ in range(reps):
            a.append(_cpu_ms(old.detect_period, x))
            b.append(_cpu_ms(detect_period, x))
        rows.setdefault(period, []).append((float(np.median(a)), float(np.median(b))))
        print(
            f"{key}: old {rows[period][-1][0]:.1f} ms, new {rows[period][-1][1]:.1f} ms", flush=True
        )
    print("T | streams | old median / max ms | new median / max ms | over 50 ms old / new")
    for period, pairs in rows.items():
        old_ms, new_ms = np.array(pairs).T
        print(
            f"{period or 'bench 25'} | {len(pairs)} | {np.median(old_ms):.1f} / {old_ms.max():.1f}"
            f" | {np.median(new_ms):.1f} / {new_ms.max():.1f}"
            f" | {(old_ms > BUDGET_MS).sum()} / {(new_ms > BUDGET_MS).sum()}"
        )


def main(argv: list[str]) -> int:
    old = load_old(argv[1])
    if argv[0] == "same":
        return same(old)
    timing(old, int(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
