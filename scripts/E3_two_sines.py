"""Two incommensurate sines (helper E, round 3): is a claim a near-period? For each claim T,
the share of the clean stream's variance that the fold at T keeps (R^2 of the phase means,
partial last cycle included) against the best share over every T in 3 .. n/3, and the
clean stream's correlation with itself T samples later (a local repeat).

Run: ``python scripts/E3_two_sines.py TRIALS`` (streams of ``E3_user_streams.aperiodic``,
fresh seeds ``[SEED, 8, cell, trial]``)."""

from __future__ import annotations

import sys

import numpy as np
from E3_user_streams import SEED, aperiodic

import ldpfleet


def fold_r2(x: np.ndarray, period: int) -> float:
    """1 - within-phase sum of squares / total sum of squares of ``x`` folded at ``period``."""
    phase = np.arange(x.size) % period
    means = np.bincount(phase, weights=x) / np.bincount(phase)
    return 1.0 - float(np.sum((x - means[phase]) ** 2) / np.sum((x - x.mean()) ** 2))


def lag_corr(x: np.ndarray, lag: int) -> float:
    """Correlation of ``x_t`` with ``x_{t + lag}``: how well the stream repeats after ``lag``
    samples locally (a slow phase slip lowers the whole-stream fold, not this)."""
    return float(np.corrcoef(x[:-lag], x[lag:])[0, 1])


def main(argv: list[str]) -> None:
    trials = int(argv[0])
    for ci, (n, eps0) in enumerate(((1000, 2.0), (1000, 5.0), (10000, 1.0), (10000, 5.0))):
        sw = ldpfleet.SquareWave(eps0)
        r2_claim, r2_best, gap, abst, corr = [], [], [], 0, []
        for trial in range(trials):
            rng = np.random.default_rng([SEED, 8, ci, trial])
            clean, _ = aperiodic("two_sines", n, rng)
            reports = sw.perturb(clean, rng)
            est = ldpfleet.detect_period(reports)
            best = max(fold_r2(clean, t) for t in range(3, n // 3 + 1))
            r2_best.append(best)
            if est.period is None:
                abst += 1
                continue
            r2_claim.append(fold_r2(clean, est.period))
            corr.append(lag_corr(clean, est.period))
            gap.append(best - r2_claim[-1])
        print(
            f"n={n} eps0={eps0:g}: claims {trials - abst}/{trials}; fold R^2 at the claim "
            f"median {np.median(r2_claim):.3f} (min {np.min(r2_claim):.3f}); best R^2 over "
            f"T <= n/3 median {np.median(r2_best):.3f}; claims with R^2 < 0.5: "
            f"{sum(r < 0.5 for r in r2_claim)}; lag correlation of the clean stream at the "
            f"claim median {np.median(corr):.3f}, min {np.min(corr):.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
