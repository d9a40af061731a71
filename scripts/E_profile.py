"""Profile ``detect_period`` on the issue-19 speed streams (helper E).

``save OUT.npz``: the speed streams of ``cpr_speed_same.py`` (keys ``T/source/eps0``);
``prof IN.npz T REPS``: cProfile of REPS calls on every stream of period T, by function;
``time IN.npz T REPS``: per-stream median CPU ms of the installed module.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def save(out: str) -> None:
    import cpr_speed_same as s

    arrays = {f"{period}|{key}": x for period, key, x in s.streams()}
    np.savez(out, **arrays)


def load(path: str, period: int):
    data = np.load(path)
    return [(k, data[k]) for k in data.files if int(k.split("|")[0]) == period]


def prof(path: str, period: int, reps: int) -> None:
    from ldpfleet.collector.period import detect_period

    streams = load(path, period)
    for _, x in streams:
        detect_period(x)
    pr = cProfile.Profile(time.process_time)
    pr.enable()
    for _ in range(reps):
        for _, x in streams:
            detect_period(x)
    pr.disable()
    st = pstats.Stats(pr)
    st.sort_stats("tottime").print_stats(35)
    st.sort_stats("cumulative").print_stats(45)


def timing(path: str, period: int, reps: int) -> None:
    from ldpfleet.collector.period import detect_period

    rows = []
    for key, x in load(path, period):
        ms = []
        for _ in range(reps):
            t0 = time.process_time()
            detect_period(x)
            ms.append(1000 * (time.process_time() - t0))
        rows.append((float(np.median(ms)), key))
    rows.sort()
    for ms, key in rows:
        print(f"{key}: {ms:.1f}")
    print("median", np.median([r[0] for r in rows]), "max", rows[-1][0])


def ab(path: str, old_path: str, period: int, reps: int) -> None:
    """Old module against the installed one, alternately per call, on the streams of
    ``period``: per-stream medians, then the median and max over the streams."""
    from cpr_period_ab import load_old
    from ldpfleet.collector.period import detect_period

    old = load_old(old_path)
    pairs = []
    for _key, x in load(path, period):
        a, b = [], []
        for _ in range(reps):
            for f, acc in ((old.detect_period, a), (detect_period, b)):
                t0 = time.process_time()
                f(x)
                acc.append(1000 * (time.process_time() - t0))
        pairs.append((float(np.median(a)), float(np.median(b))))
    o, n = np.array(pairs).T
    print(
        f"T {period}: old median {np.median(o):.1f} max {o.max():.1f} | new median "
        f"{np.median(n):.1f} max {n.max():.1f} | ratio median {np.median(n / o):.3f}"
    )


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "save":
        save(sys.argv[2])
    elif cmd == "prof":
        prof(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "ab":
        ab(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        timing(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
