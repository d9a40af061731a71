"""Doubled periods (~2T answers), old against new ``detect_period`` on the same streams
(issue 19, helper K, 2026-12-05; docs/cpr.md, "Doubled periods: a common scale in step 2").

``OLD`` is a copy of an earlier ``collector/period.py`` (``git show abd5a51:collector/
period.py > /tmp/period_old.py``); "new" is the installed package.

- ``gcells OLD SEED TRIALS``: helper G's cells (docs/cpr.md, "A doubled period at 8
  cycles"): the sine ``0.5 + 0.5 sin(2 pi (t / T + U))``, ``U`` uniform, SW at eps0 1, 2,
  5, ``(T, cycles)`` = (144, 6), (144, 8), (144, 10), (144, 12), (100, 8), (60, 8); trial
  seeds ``[SEED, cell, trial]``. Per cell old and new: exact / near (within 3, not T) / 2T
  (within 3 of 2T) / other / abstain.
- ``heldout OLD SEED TRIALS``: every source of ``scripts/cpr_user_heldout.py`` (its
  ``clean_stream``) at its (T, n) cells with n <= 1,000, eps0 0.2, 1, 5; trial seeds
  ``[SEED, cell, trial]``. Exact answers old / new per cell, the cells with fewer, and the
  2T answers of each source.
- ``aperiodic OLD SEED TRIALS``: the held-out aperiodic kinds at n 24, 100, 1,000, eps0
  0.2, 1, 5: claims old / new.

Run: ``nice -n 5 python scripts/cpr_double_ab.py gcells /tmp/period_old.py 7301 200``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as heldout_grid
from cpr_period_ab import load_old

G_CELLS = ((144, 6), (144, 8), (144, 10), (144, 12), (100, 8), (60, 8))
G_EPS0 = (1.0, 2.0, 5.0)
HELDOUT_MAX_N = 1000
APERIODIC_N = (24, 100, 1000)


def kind_of(answer: int | None, period: int) -> str:
    """exact / near (within 3 of T) / 2T (within 3 of 2 T) / other / abstain."""
    if answer is None:
        return "abstain"
    if answer == period:
        return "exact"
    if abs(answer - period) <= 3:
        return "near"
    if abs(answer - 2 * period) <= 3:
        return "2T"
    return "other"


def sine_stream(period: int, cycles: int, eps0: float, rng: np.random.Generator) -> np.ndarray:
    """G's stream: one sine of ``period`` with a uniform phase, SW-privatised."""
    n = period * cycles
    clean = 0.5 + 0.5 * np.sin(2 * np.pi * (np.arange(n) / period + rng.random()))
    return SquareWave(eps0).perturb(clean, rng)


def _tally(rows: list[tuple[int | None, int | None]], period: int) -> dict[str, dict[str, int]]:
    out = {}
    for side, index in (("old", 0), ("new", 1)):
        counts = dict.fromkeys(("exact", "near", "2T", "other", "abstain"), 0)
        for row in rows:
            counts[kind_of(row[index], period)] += 1
        out[side] = counts
    return out


def gcells(old, seed: int, trials: int) -> None:
    """G's cells, old and new on the same streams."""
    total = {"old": 0, "new": 0}
    worse = []
    changed = []
    for cell, ((period, cycles), eps0) in enumerate((c, e) for c in G_CELLS for e in G_EPS0):
        rows = []
        for trial in range(trials):
            reports = sine_stream(period, cycles, eps0, np.random.default_rng([seed, cell, trial]))
            rows.append((old.detect_period(reports).period, detect_period(reports).period))
            if rows[-1][0] != rows[-1][1]:
                changed.append((period, cycles, eps0, trial, *rows[-1]))
        tally = _tally(rows, period)
        for side in total:
            total[side] += tally[side]["2T"]
        if tally["new"]["exact"] < tally["old"]["exact"]:
            worse.append((period, cycles, eps0))
        fmt = " / ".join
        print(
            f"| {period} | {cycles} | {eps0:g} | "
            f"{fmt(str(v) for v in tally['old'].values())} | "
            f"{fmt(str(v) for v in tally['new'].values())} |",
            flush=True,
        )
    print(f"2T answers old {total['old']}, new {total['new']}; cells with fewer exact: {worse}")
    print(f"changed answers {len(changed)}: {changed}")


def heldout(old, seed: int, trials: int) -> None:
    """The held-out shapes at n <= 1,000, old and new on the same streams."""
    cells = [
        (s, t, n, e)
        for s in heldout_grid.SOURCES
        for t, n in heldout_grid.PERIOD_N
        if n <= HELDOUT_MAX_N
        for e in heldout_grid.EPS0
    ]
    exact = {"old": 0, "new": 0}
    doubled: dict[str, dict[str, int]] = {}
    worse, changed = [], []
    for index, (source, period, n, eps0) in enumerate(cells):
        rows = []
        for trial in range(trials):
            rng = np.random.default_rng([seed, index, trial])
            clean = heldout_grid.clean_stream(source, period, n, rng)
            reports = SquareWave(eps0).perturb(clean, rng)
            rows.append((old.detect_period(reports).period, detect_period(reports).period))
            if rows[-1][0] != rows[-1][1]:
                changed.append((source, period, n, eps0, trial, *rows[-1]))
        tally = _tally(rows, period)
        for side in exact:
            exact[side] += tally[side]["exact"]
            doubled.setdefault(source, {"old": 0, "new": 0})[side] += tally[side]["2T"]
        if tally["new"]["exact"] < tally["old"]["exact"]:
            worse.append((source, period, n, eps0))
    print(
        f"cells {len(cells)}, streams {len(cells) * trials}; "
        f"exact old {exact['old']}, new {exact['new']}"
    )
    print(f"cells with fewer exact answers {len(worse)}: {worse}")
    pairs = {k: (v["old"], v["new"]) for k, v in doubled.items()}
    print(f"2T answers per source (old, new): {pairs}")
    print(f"changed answers {len(changed)}: {changed}")


def aperiodic(old, seed: int, trials: int) -> None:
    """Claims on the held-out aperiodic kinds, old and new on the same streams."""
    cells = [
        (k, n, e) for k in heldout_grid.APERIODIC for n in APERIODIC_N for e in heldout_grid.EPS0
    ]
    claims = {"old": 0, "new": 0}
    changed = []
    for index, (kind, n, eps0) in enumerate(cells):
        for trial in range(trials):
            rng = np.random.default_rng([seed, index, trial])
            reports = SquareWave(eps0).perturb(heldout_grid.aperiodic(kind, n, rng), rng)
            pair = (old.detect_period(reports).period, detect_period(reports).period)
            claims["old"] += pair[0] is not None
            claims["new"] += pair[1] is not None
            if pair[0] != pair[1]:
                changed.append((kind, n, eps0, trial, *pair))
    print(f"streams {len(cells) * trials}; claims old {claims['old']}, new {claims['new']}")
    print(f"changed answers {len(changed)}: {changed}")


if __name__ == "__main__":
    command, old_path, seed_text, trials_text = sys.argv[1:5]
    module = load_old(old_path)
    {"gcells": gcells, "heldout": heldout, "aperiodic": aperiodic}[command](
        module, int(seed_text), int(trials_text)
    )
