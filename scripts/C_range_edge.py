"""Step 10 of ``detect_period``, the range-edge check (issue 19, helper C, 2026-12-06):
old (``OLD``: a directory holding a copy of main's ``collector/period*.py``) against new
(the installed package) on the same streams. docs/preregistration/C-range-edge.md.

    python scripts/C_range_edge.py beyond OLD SEED TRIALS     # (b) periods past the range
    python scripts/C_range_edge.py inrange OLD SEED TRIALS    # in-range periods near the top
    python scripts/C_range_edge.py aperiodic OLD SEED TRIALS  # (c) white, RW, AR(1), trend
    python scripts/C_range_edge.py pinned OLD                 # (a) cpr_period_same's 3,540

``beyond``: n in 150, 600, 3,000, 10,000 (default ``min_cycles`` 3, searched (3, n // 3));
periods ``n // 3 + 1`` and 4 more spread up to ``n // 2``; sine, square, sawtooth,
spikes with a random phase, amplitude jitter 0.02; noise-free and SW reports at eps0 0.5, 1,
2, 5. Every claim is wrong (the true period is not admissible). ``inrange``: the same
shapes and budgets at the periods ``n // 3 - d``, d = 0, 1, 2, 5, 10: exact and wrong
answers. ``aperiodic``: ``aperiodic_stream`` white, random_walk, ar1 (0.95), ar1_0.9,
trend x n 150, 600, 3,000 x eps0 0.5, 1, 5: claims. ``pinned``: every changed answer
with its truth (grid and phase-jump streams: their period; aperiodic: none).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
from ldpfleet.app.cpr_grid_streams import aperiodic_stream, grid_stream, grid_template, trial_rng
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpr_period_ab import load_old

LENGTHS = (150, 600, 3000, 10_000)
SHAPES = ("sine", "square", "sawtooth", "spikes")
BUDGETS = (None, 0.5, 1.0, 2.0, 5.0)  # None: the clean stream itself
APERIODIC = ("white", "random_walk", "ar1", "ar1_0.9", "trend")


def _cycle(shape: str, period: int, rng: np.random.Generator) -> np.ndarray:
    if shape == "sine":
        u = np.arange(period) / period + rng.random()
        return 0.5 + 0.4 * np.sin(2 * np.pi * u)
    return grid_template(shape, period, rng)


def _reports(clean: np.ndarray, eps0, rng: np.random.Generator) -> np.ndarray:
    return clean if eps0 is None else SquareWave(eps0).perturb(clean, rng)


def beyond_periods(n: int) -> list[int]:
    """``n // 3 + 1`` and four more periods spread up to ``n // 2`` (distinct)."""
    low, high = n // 3 + 1, n // 2
    return sorted({round(low + f * (high - low)) for f in (0, 0.1, 0.3, 0.6, 1.0)})


def periodic(seed: int, trials: int, periods_of, label: str):
    """(n, period, shape, eps0, reports) of the periodic stream sets."""
    for n in LENGTHS:
        reps = trials if n < 10_000 else max(1, trials // 4)
        for period in periods_of(n):
            for shape in SHAPES:
                for eps0 in BUDGETS:
                    for trial in range(reps if eps0 is not None else 1):
                        rng = trial_rng(seed, label, trial, f"{n}/{period}/{shape}/{eps0}")
                        clean = grid_stream(_cycle(shape, period, rng), n, rng, 0.02)
                        yield n, period, shape, eps0, _reports(clean, eps0, rng)


def run_periodic(old, seed: int, trials: int, mode: str) -> None:
    if mode == "beyond":
        periods_of = beyond_periods
    else:
        periods_of = lambda n: [n // 3 - d for d in (0, 1, 2, 5, 10)]  # noqa: E731
    rows: Counter = Counter()
    changed = []
    for n, period, shape, eps0, x in periodic(seed, trials, periods_of, mode):
        a, b = old.detect_period(x).period, detect_period(x).period
        key = (n, shape, eps0)
        rows[(*key, "streams")] += 1
        for tag, answer in (("old", a), ("new", b)):
            rows[(*key, tag + "_claim")] += answer is not None
            rows[(*key, tag + "_exact")] += answer == period
        if a != b:
            changed.append((n, period, shape, eps0, a, b))
    total = Counter()
    for (_n, _shape, _eps0, what), count in rows.items():
        total[what] += count
    print(f"{mode} seed {seed}: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
    by_n: Counter = Counter()
    for (n, _shape, _eps0, what), count in rows.items():
        by_n[(n, what)] += count
    for n in LENGTHS:
        print(
            f"  n={n}: "
            + ", ".join(
                f"{w} {by_n[(n, w)]}"
                for w in ("streams", "old_claim", "new_claim", "old_exact", "new_exact")
            )
        )
    lost = [c for c in changed if c[4] == c[1]]
    print(f"  changed {len(changed)}, exact lost {len(lost)}: {lost[:10]}")
    print(f"  first changes: {changed[:15]}")


def run_aperiodic(old, seed: int, trials: int) -> None:
    counts: Counter = Counter()
    for kind in APERIODIC:
        for n in LENGTHS[:3]:
            for eps0 in (0.5, 1.0, 5.0):
                for trial in range(trials):
                    rng = trial_rng(seed, "aperiodic", trial, f"{kind}/{n}/{eps0}")
                    x = SquareWave(eps0).perturb(aperiodic_stream(kind, n, rng), rng)
                    a, b = old.detect_period(x).period, detect_period(x).period
                    counts[(kind, "streams")] += 1
                    counts[(kind, "old")] += a is not None
                    counts[(kind, "new")] += b is not None
    for kind in APERIODIC:
        print(
            f"aperiodic seed {seed} {kind}: streams {counts[(kind, 'streams')]}, "
            f"claims old {counts[(kind, 'old')]}, new {counts[(kind, 'new')]}"
        )
    print(
        "aperiodic total claims: old",
        sum(counts[(k, "old")] for k in APERIODIC),
        "new",
        sum(counts[(k, "new")] for k in APERIODIC),
    )


def _truth(key: str):
    import ldpfleet.app.cpr_phase_jumps as pj

    if key.startswith("g"):
        return int(key.split("/")[2])
    if key.startswith("j/"):
        return pj.cells()[int(key.split("/")[1])][1]
    if key.startswith("a"):
        return None
    return {"e/sine": 37, "e/sine365": 365, "e/square7": 7, "e/sine97": 97}.get(key)


def run_pinned(old) -> None:
    import cpr_period_same as same

    changed, lost = [], 0
    for key, x in same.streams():
        a, b = old.detect_period(x).period, detect_period(x).period
        if a != b:
            truth = _truth(key)
            changed.append((key, truth, a, b))
            lost += a == truth
    print(f"pinned: changed {len(changed)}, old answer was right in {lost}")
    for row in changed:
        print("  ", row)


def main(argv: list[str]) -> int:
    mode, old = argv[0], load_old(argv[1])
    if mode in ("beyond", "inrange"):
        run_periodic(old, int(argv[2]), int(argv[3]), mode)
    elif mode == "aperiodic":
        run_aperiodic(old, int(argv[2]), int(argv[3]))
    elif mode == "pinned":
        run_pinned(old)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
