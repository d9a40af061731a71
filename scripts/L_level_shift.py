"""Helper L: claims of ``detect_period`` on aperiodic level-shift streams, with and without
step 12 (collector/period_levelshift.py), on the same streams.

Usage: python scripts/L_level_shift.py SEED TRIALS [NS...]
Families (clean in [0, 1] before noise): one shift (position 10-90 %, height 0.1-1), two
shifts, ramp-then-flat, a block (spike/outlier block), each raw with Gaussian noise sd 0,
0.05, 0.3 and as SW reports at eps0 0.5, 2, 8. Seeds ``[SEED, family, n, variant, trial]``.
Exploration seed 7301 (excluded from evaluation); evaluation seeds in
docs/preregistration/L-level-shift.md."""

from __future__ import annotations

import sys

import numpy as np
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave

FAMILIES = ("shift1", "shift2", "ramp_flat", "block")
VARIANTS = (("raw", 0.0), ("raw", 0.05), ("raw", 0.3), ("sw", 0.5), ("sw", 2.0), ("sw", 8.0))


def clean(family: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """One aperiodic stream of the family, values in [0, 1]."""
    t = np.arange(n)
    base = rng.uniform(0.0, 1.0 - 0.1)
    if family == "shift1":
        at, h = rng.uniform(0.1, 0.9) * n, rng.uniform(0.1, 1.0)
        x = np.where(t >= at, h, 0.0)
    elif family == "shift2":
        a, b = np.sort(rng.uniform(0.1, 0.9, 2)) * n
        h1, h2 = rng.uniform(-1.0, 1.0, 2)
        x = np.where(t >= a, h1, 0.0) + np.where(t >= b, h2, 0.0)
    elif family == "ramp_flat":
        at = rng.uniform(0.1, 0.9) * n
        x = np.minimum(t, at) / at * rng.uniform(0.1, 1.0)
    else:  # block: a level that leaves and returns (an outlier block / spike)
        width = rng.uniform(0.01, 0.3) * n
        a = rng.uniform(0.05, 0.95 - width / n) * n
        x = np.where((t >= a) & (t < a + width), rng.uniform(0.1, 1.0), 0.0)
    x = x - x.min()
    span = x.max()
    return base + (x / span if span > 0 else x) * 0.1 * rng.uniform(1.0, 9.0)


def stream(family, n, kind, level, rng):
    x = clean(family, n, rng)
    x = np.clip(x, 0.0, 1.0)
    if kind == "raw":
        return x + rng.normal(0.0, level, n) if level > 0 else x
    return SquareWave(level).perturb(x, rng)


def main(seed: int, trials: int, ns: list[int]) -> None:
    fixed = P._shift_checked
    off = lambda arr, est, *a: est  # noqa: E731
    total = [0, 0, 0]
    for fi, family in enumerate(FAMILIES):
        for n in ns:
            for vi, (kind, level) in enumerate(VARIANTS):
                before = after = 0
                for trial in range(trials):
                    rng = np.random.default_rng([seed, fi, n, vi, trial])
                    x = stream(family, n, kind, level, rng)
                    P._shift_checked = off
                    b = P.detect_period(x).period
                    P._shift_checked = fixed
                    a = P.detect_period(x).period
                    before += b is not None
                    after += a is not None
                total[0] += trials
                total[1] += before
                total[2] += after
                if before or after:
                    print(
                        f"{family:9s} n={n:5d} {kind}{level:<5} "
                        f"claims {before:3d} -> {after:3d} of {trials}",
                        flush=True,
                    )
    print(f"TOTAL streams {total[0]} claims {total[1]} -> {total[2]}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), [int(v) for v in sys.argv[3:]] or [50, 150, 300, 1000])
