"""Off-by-one diagnosis (helper E, round 3): the same two-harmonic cycle plain, with a level
step at n / 2 (``level_shift``) and with multiplicative noise (``mult_noise``), SW at eps0,
fresh seeds ``[SEED, 7, cell, trial]``; prints each variant's answers.

Run: ``python scripts/E3_diag_offbyone.py TRIALS EPS0 [T,n ...]``."""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
from E3_user_streams import SEED, _two_harmonics, grid_stream

import ldpfleet


def stream(variant: str, period: int, n: int, rng: np.random.Generator) -> np.ndarray:
    u = (np.arange(period) / period + rng.random()) % 1.0
    base = grid_stream(_two_harmonics(u, rng), n, rng, 0.02, 0.0)
    if variant == "plain":
        return np.clip(0.1 + 0.5 * base, 0.0, 1.0)
    if variant == "plain_full":
        return base
    if variant == "level_shift":
        return np.clip(0.1 + 0.5 * base + 0.3 * (np.arange(n) >= n // 2), 0.0, 1.0)
    if variant == "mult_noise":
        return np.clip(0.6 * base * np.exp(0.3 * rng.standard_normal(n)), 0.0, 1.0)
    raise ValueError(variant)


def main(argv: list[str]) -> None:
    trials, eps0 = int(argv[0]), float(argv[1])
    shapes = [tuple(int(v) for v in a.split(",")) for a in argv[2:]] or [(97, 1000)]
    for ci, (period, n) in enumerate(shapes):
        for variant in ("plain", "plain_full", "level_shift", "mult_noise"):
            answers = Counter()
            for trial in range(trials):
                rng = np.random.default_rng([SEED, 7, ci, trial])
                x = ldpfleet.SquareWave(eps0).perturb(stream(variant, period, n, rng), rng)
                hat = ldpfleet.detect_period(x).period
                answers[hat if hat is None else hat - period] += 1
            print(period, n, eps0, variant, dict(sorted(answers.items(), key=str)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
