"""The gap-corrected top significant bucket (``collector.bucket_isotonic.
top_significant_bucket``, issue 20, helper H) on pure noise: tier 1, seeded draws of the
secure sum's exact noise law (no transport).

The setting of the dp θ search on a fleet of n = 3,000: ε_θ = 0.5, the noise parties of
``noise_parties(n)`` (m = 2,700), so each bucket's noise is ``NB(r, 1 − a) − NB(r, 1 − a)``
with r = n/m, a = e^(−ε_θ/2) (sd ≈ 5.95). A bulk far above the noise sits in bucket 0 (the
densest); the 48 buckets above it are EMPTY, so any g above 0 is set by noise alone.

Designed rate (the scan's union bound, ``top_significant_bucket``'s docstring): g leaves
bucket 0 only if some bucket k above it reaches (3 + ln k/√2) σ, so P(g set by noise) <=
p_H = Σ_(k=1..48) P(D >= ⌈(3 + ln k/√2) σ⌉), computed here from the exact law (scipy's
negative binomial; ≈ 0.0296). Helper B's rule (the highest 3σ bucket) is set by noise
with probability exactly p_B = 1 − (1 − P(D >= ⌈3σ⌉))^48 ≈ 0.301 (independent buckets).

Thresholds for a false-failure rate of 1e-6 with 4,000 draws (seed 11): the scan's count
must be at most ``binom.isf(1e-6, 4000, p_H)`` (= 172; P(Binomial(4000, p) > 172) <= 1e-6
for every p <= p_H), and B's count at least ``binom.ppf(1e-6, 4000, p_B)`` (= 1,067; P
below it < 1e-6): the draws do make the old rule fail, so the first check can fail. A
pilot on this seed: 107 and 1,244."""

from __future__ import annotations

import math

import numpy as np
from ldpfleet.collector.bucket_isotonic import top_significant_bucket
from ldpfleet.protocol.cadr_theta_noise import noise_parties, noise_sd, noise_sum
from scipy.stats import binom, nbinom

N, EPS_THETA, BUCKETS, DRAWS, SEED, MODE_Z = 3000, 0.5, 49, 4000, 11, 3.0


def _tail(c: int, r: float, a: float) -> float:
    """P(D >= c) for D = NB(r, 1 − a) − NB(r, 1 − a) (failures), summed over the second."""
    b = np.arange(20_000)  # P(NB >= 20,000) is below 1e-300 here
    return float(np.sum(nbinom.pmf(b, r, 1 - a) * nbinom.sf(c + b - 1, r, 1 - a)))


def test_on_pure_noise_above_the_bulk_g_moves_at_most_at_the_designed_rate():
    m = noise_parties(N)
    sd = noise_sd(EPS_THETA, N, m)
    r, a = N / m, math.exp(-EPS_THETA / 2)
    thresholds = [(MODE_Z + math.log(k) / math.sqrt(2)) * sd for k in range(1, BUCKETS)]
    p_scan = sum(_tail(math.ceil(t), r, a) for t in thresholds)
    p_highest = 1 - (1 - _tail(math.ceil(MODE_Z * sd), r, a)) ** (BUCKETS - 1)
    rng = np.random.default_rng(SEED)
    moved_scan = moved_highest = 0
    for _ in range(DRAWS):
        y = noise_sum(rng, N, m, EPS_THETA, BUCKETS).astype(float)
        y[0] += 2000.0  # the bulk
        moved_scan += top_significant_bucket(y, sd, mode_z=MODE_Z, gap_corrected=True) != 0
        moved_highest += top_significant_bucket(y, sd, mode_z=MODE_Z) != 0
    assert 0.02 < p_scan < 0.04 and 0.25 < p_highest < 0.35  # the docstring's figures
    assert moved_scan <= binom.isf(1e-6, DRAWS, p_scan)
    assert moved_highest >= binom.ppf(1e-6, DRAWS, p_highest)
