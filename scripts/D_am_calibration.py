"""Amplitude-modulated cycles: does ``detect_period`` answer T or a multiple (issue 19, helper D)?

CALIBRATION set (seeds 71001-71100; never the held-out script's seed 94117): one cycle
``sin(2 pi u) + 0.6 sin(4 pi u + phase)`` scaled to [0, 1] (the held-out ``am`` shape),
repeated with jitter N(0, 0.02^2), times the envelope ``0.55 + 0.45 sin(2 pi t / P + phase)``
with ``P = ratio * T``; SW reports at eps0. Cells: (T, n) x ratio x eps0.

Run: ``python scripts/D_am_calibration.py [OLD] TRIALS`` -- with OLD (a copy of an earlier
``collector/period.py``) old and new on the same streams; prints exact / near / multiple / other /
abstain per cell (``classify``).
"""

from __future__ import annotations

import sys

import numpy as np
from ldpfleet.app.bench_cpr import grid_stream
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cpr_period_ab import load_old

SEEDS = range(71001, 71101)
PERIOD_N = ((60, 600), (150, 1000), (200, 3000), (1000, 10000))
RATIOS = (2.3, 3.7, 5.5, 9.0)
EPS0 = (1.0, 5.0)


def am_stream(period: int, n: int, ratio: float, rng: np.random.Generator) -> np.ndarray:
    """The modulated clean stream in [0, 1]."""
    u = (np.arange(period) / period + rng.random()) % 1.0
    cycle = np.sin(2 * np.pi * u) + 0.6 * np.sin(4 * np.pi * u + 6 * rng.random())
    cycle = (cycle - cycle.min()) / np.ptp(cycle)
    base = grid_stream(cycle, n, rng, 0.02, 0.0)
    envelope = 0.55 + 0.45 * np.sin(2 * np.pi * np.arange(n) / (ratio * period) + 6 * rng.random())
    return np.clip(base * envelope, 0.0, 1.0)


def cells():
    return [(t, n, r, e) for t, n in PERIOD_N for r in RATIOS for e in EPS0]


def streams(cell, trials: int):
    period, n, ratio, eps0 = cell
    for index, seed in enumerate(SEEDS[:trials]):
        rng = np.random.default_rng([seed, period, n, int(ratio * 10), int(eps0 * 10)])
        yield index, SquareWave(eps0).perturb(am_stream(period, n, ratio, rng), rng)


def classify(answer, period: int, n: int) -> str:
    """exact, near (within max(3, T^2 / n) of T), multiple (within 3 of m T, m = 2..6), other
    or abstain."""
    if answer is None:
        return "abstain"
    if answer == period:
        return "exact"
    if abs(answer - period) <= max(3, period * period // n):
        return "near"
    if any(abs(answer - m * period) <= 3 for m in range(2, 7)):
        return "multiple"
    return "other"


def main(argv: list[str]) -> None:
    old = load_old(argv[0]) if len(argv) > 1 else None
    trials = int(argv[-1])
    keys = ("exact", "near", "multiple", "other", "abstain")
    totals = {"old": dict.fromkeys(keys, 0), "new": dict.fromkeys(keys, 0)}
    print("| T | n | P/T | eps0 | " + ("old e/n/m/o/a | " if old else "") + "new e/n/m/o/a |")
    for cell in cells():
        count = {"old": dict.fromkeys(keys, 0), "new": dict.fromkeys(keys, 0)}
        for _, y in streams(cell, trials):
            count["new"][classify(detect_period(y).period, cell[0], cell[1])] += 1
            if old:
                count["old"][classify(old.detect_period(y).period, cell[0], cell[1])] += 1
        for who in count:
            for k in keys:
                totals[who][k] += count[who][k]
        row = [f"{c}" for c in cell]
        if old:
            row.append(" / ".join(str(count["old"][k]) for k in keys))
        row.append(" / ".join(str(count["new"][k]) for k in keys))
        print("| " + " | ".join(row) + " |", flush=True)
    print("totals", totals)


if __name__ == "__main__":
    main(sys.argv[1:])
