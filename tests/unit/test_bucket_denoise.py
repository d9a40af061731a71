"""collector.bucket_denoise: reading the θ search's noisy bucket counts (post-processing)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.collector.bucket_denoise import denoise_counts, noise_sd
from ldpfleet.collector.degree_postprocess import degree_prior, post_process, simplex_projection
from ldpfleet.protocol.cadr_theta_noise import (
    bucket_count,
    bucket_grid,
    noise_parties,
    noise_sum,
)
from ldpfleet.protocol.dsr import dsr_release
from ldpfleet.protocol.errors import ParameterError

EPS_THETA = 0.5  # the dp pipeline's ε_θ on graphs of n <= 2,000 (CadrBudget.for_pipeline)


def test_noise_sd_is_the_negative_binomial_difference_sd():
    # NB(r, 1 - a) failures: variance r a / (1 - a)^2; the difference of two: twice it
    a = math.exp(-EPS_THETA / 2)
    assert noise_sd(EPS_THETA, 45, 45) == pytest.approx(math.sqrt(2 * a) / (1 - a))
    assert noise_sd(EPS_THETA, 50, 45) == pytest.approx(math.sqrt(2 * a * 50 / 45) / (1 - a))
    rng = np.random.default_rng(7)
    draws = noise_sum(rng, 50, 45, EPS_THETA, 20_000)
    # sample sd of 2e4 draws: relative standard error ≈ sqrt((kurtosis - 1) / 4n) = 0.008
    # (excess kurtosis ≈ 3 for this Laplace-like law, kurtosis 6): 0.04 is 5 standard
    # errors, a two-sided false failure of 6e-7
    assert np.std(draws) == pytest.approx(noise_sd(EPS_THETA, 50, 45), rel=0.04)


@pytest.mark.parametrize("seed", range(5))
def test_counts_are_non_negative_sum_to_n_and_depend_on_public_inputs_only(seed):
    rng = np.random.default_rng(seed)
    exact = rng.multinomial(300, rng.dirichlet(np.ones(17)))
    sums = exact + noise_sum(rng, 300, noise_parties(300), EPS_THETA, 17)
    first = denoise_counts(sums, 300, EPS_THETA, noise_parties(300))
    again = denoise_counts(list(sums), 300, EPS_THETA, noise_parties(300))
    assert np.all(first >= 0)
    assert first.sum() == pytest.approx(300)
    np.testing.assert_array_equal(first, again)  # no randomness, no hidden state


def test_noise_free_separated_counts_come_back_exactly():
    # counts far above the threshold (3 sds ≈ 18) or 0: the exact counts are returned
    exact = np.array([0, 0, 120, 0, 60, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 300])
    out = denoise_counts(exact, int(exact.sum()), EPS_THETA, noise_parties(int(exact.sum())))
    np.testing.assert_allclose(out, exact)
    # and spread small counts (below the threshold, summing far above the noise) too:
    # the goodness-of-fit test keeps them, the projection of exact counts is the identity
    spread = np.array([5, 8, 12, 9, 7, 6, 10, 11, 4, 3, 9, 8, 7, 6, 3, 2, 0])
    out = denoise_counts(spread, int(spread.sum()), EPS_THETA, noise_parties(int(spread.sum())))
    np.testing.assert_allclose(out, spread)


def test_bad_sums_are_refused_naming_the_field():
    with pytest.raises(ParameterError, match="bucket_sums"):
        denoise_counts([1.0, float("nan")], 5, EPS_THETA, 5)
    with pytest.raises(ParameterError, match="eps_theta"):
        denoise_counts([1, 4], 5, 0.0, 5)


def test_the_empty_buckets_of_a_complete_graph_get_no_mass():
    """K_50: every node in the last of 17 buckets, ε_θ = 0.5, 200 seeded noise draws.

    New estimator: an empty bucket gets mass if its noise reaches 3 sds (17.84 here):
    P(Z >= 17.84) = 0.0073 (2e5 draws of noise_sum), P(some of the 16) = 1 - (1 -
    0.0073)^16 = 0.111 per draw; or if the fit test wrongly rejects "the rest is empty"
    (one-sided 2 sds: <= 0.023). So p <= 0.134 per draw (measured: 0.1337 in 3,000 draws)
    and the number of such draws in 200 is at most Binomial(200, 0.134): P(>= 55) = 1.0e-7
    — the bound fails falsely with probability < 1e-6 (these seeds: 33). The least-squares
    projection leaves mass in an empty bucket whenever one noisy count exceeds the common
    shift λ: 189 of these 200 draws (P(<= 150 | p = 0.9) < 1e-9).
    """
    parties = noise_parties(50)
    exact = np.zeros(17)
    exact[-1] = 50
    rng = np.random.default_rng(2026)
    spurious_new = spurious_old = 0
    for _ in range(200):
        sums = exact + noise_sum(rng, 50, parties, EPS_THETA, 17)
        spurious_new += denoise_counts(sums, 50, EPS_THETA, parties)[:-1].sum() > 0
        spurious_old += simplex_projection(sums, 50)[:-1].sum() > 0
    assert spurious_new < 55
    assert spurious_old > 150


def test_degree_prior_uses_the_denoised_counts_with_the_noise_parameters():
    sums = [3, -2, 5, 1, 52]
    old = degree_prior(sums, [0, 1, 2, 3], 49, 50)
    new = degree_prior(sums, [0, 1, 2, 3], 49, 50, eps_theta=EPS_THETA, parties=45)
    assert old[:4].sum() > 0  # the projection keeps noise in the low buckets
    assert new[:4].sum() == 0 and new.sum() == pytest.approx(1)


def test_k50_posterior_medians_stay_on_the_true_degree_with_the_denoised_prior():
    """K_50 at ε = 5 (ε_θ = 0.5, ε_dsr = 4.3, θ = 49, every node keeps its 49 edges):
    100 draws of the θ search's sums and the DSR releases, each post-processed with the
    projection's prior and with the denoised one.

    Denoised: a node leaves 49 only if spurious mass is left, which happens in a draw with
    probability <= 0.134 (test_the_empty_buckets_of_a_complete_graph_get_no_mass), so
    the number of draws with MAE > 0 is at most Binomial(100, 0.134): P(>= 34) = 1.3e-7.
    Projection: MAE > 0 in 146 of 200 draws of another seed (p ≈ 0.73); P(<= 33 |
    Binomial(100, 0.6)) = 4.5e-8. Both bounds fail falsely with probability < 1e-6.
    """
    thresholds = bucket_grid(49, bucket_count(50, EPS_THETA))
    parties = noise_parties(50)
    exact = np.zeros(len(thresholds) + 1)
    exact[-1] = 50
    rng = np.random.default_rng(31)
    off_old = off_new = 0
    for _ in range(100):
        sums = exact + noise_sum(rng, 50, parties, EPS_THETA, exact.size)
        released = dsr_release(np.full(50, 49), 49, 4.3, rng)
        old = degree_prior(sums, thresholds, 49, 50)
        new = degree_prior(sums, thresholds, 49, 50, eps_theta=EPS_THETA, parties=parties)
        off_old += np.any(post_process(released, 49, 4.3, old).estimates != 49)
        off_new += np.any(post_process(released, 49, 4.3, new).estimates != 49)
    assert off_new < 34 < off_old
