"""collector.degree_postprocess: deconvolution of the DSR release, posterior medians, the
consistent histogram, the θ noise weight and the scoring helpers."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.degree_postprocess import (
    _kernel,
    consistent_histogram,
    deconvolve,
    histogram_emd,
    histogram_l1,
    noise_weight,
    post_process,
    posterior_medians,
    score,
    trivial_baselines,
)
from ldpfleet.collector.theta_search import deviation_target, theta_by_deviation
from ldpfleet.protocol.errors import ParameterError


def _loglik(y: np.ndarray, prior: np.ndarray, scale: float) -> float:
    return float(np.sum(np.log(_kernel(y, prior.size - 1, scale) @ prior)))


def test_every_em_step_keeps_a_distribution_and_never_lowers_the_likelihood():
    rng = np.random.default_rng(0)
    k = rng.choice([2, 3, 10], size=500, p=[0.5, 0.3, 0.2])
    y = k + rng.laplace(0.0, 4.0, size=k.size)
    previous = -np.inf
    for steps in (0, 1, 2, 5, 20, 100):
        prior = deconvolve(y, 12, 4.0, iterations=steps)
        assert prior.shape == (13,) and np.all(prior >= 0)
        assert prior.sum() == pytest.approx(1.0, abs=1e-12)
        like = _loglik(y, prior, 4.0)
        assert like >= previous - 1e-9  # EM is monotone in the likelihood
        previous = like


def test_deconvolution_recovers_a_two_point_distribution():
    # k_i in {5, 25} (0.7 / 0.3), Laplace scale 2: the atoms are 10 scales apart, so the
    # posterior of every release sits on its own atom except with probability ~e^-5 each.
    # The estimated mass within 3 of 5 is 0.7 up to the sampling error of the 0.7 / 0.3
    # split: sd sqrt(0.21 / 4000) = 0.0072; 0.04 is 5.5 sd (two-sided tail ~4e-8), plus
    # the ~e^-5 misassignment (< 0.007) and what 100 EM steps leave spread (measured ~0.002).
    rng = np.random.default_rng(7)
    k = np.where(rng.random(4000) < 0.7, 5, 25)
    y = k + rng.laplace(0.0, 2.0, size=k.size)
    prior = deconvolve(y, 30, 2.0)
    assert prior[2:9].sum() == pytest.approx(0.7, abs=0.04)
    assert prior[22:29].sum() == pytest.approx(0.3, abs=0.04)
    medians = posterior_medians(y, prior, 2.0)
    assert np.mean(np.abs(medians - k) <= 3) > 0.98  # ~e^-5 misassigned + spread


def test_post_processing_beats_the_raw_release_on_uniform_degrees():
    # k uniform on 0..40, scale 40 (eps_dsr = 1): the raw release's MAE is E|Lap(40)| = 40
    # with sd 40 / sqrt(3000) = 0.73 for the mean of 3,000; the posterior median's is about
    # noise_weight(1) * 40 ~ 9.6 (module docstring) and at most 40 / 2 (the prior median's
    # error) — the margin, > 20, is > 27 sd of the raw mean alone.
    rng = np.random.default_rng(3)
    k = rng.integers(0, 41, 3000)
    y = k + rng.laplace(0.0, 40.0, size=k.size)
    post = post_process(y, 40, 1.0)
    assert np.mean(np.abs(y - k)) > 37.0
    assert np.mean(np.abs(post.estimates - k)) < 15.0
    assert post.histogram.sum() == 3000 and np.all(post.histogram >= 0)


def test_posterior_median_under_a_point_mass_is_the_atom_and_is_monotone_in_the_release():
    prior = np.zeros(11)
    prior[4] = 1.0
    assert posterior_medians([-50.0, 4.2, 99.0], prior, 3.0).tolist() == [4, 4, 4]
    uniform = np.full(11, 1 / 11)
    y = np.linspace(-20, 30, 201)
    medians = posterior_medians(y, uniform, 2.0)
    # below 0 the posterior is ∝ e^(-k/2) on 0..10: P(0) = (1 - e^-0.5) / (1 - e^-5.5)
    # = 0.395 < 1/2 <= P(<= 1) = 0.634, so the median is 1 (and 9 above 10, by symmetry)
    assert np.all(np.diff(medians) >= 0) and medians[0] == 1 and medians[-1] == 9


def test_consistent_histogram_is_integer_non_negative_and_sums_to_n():
    for n in (0, 1, 7, 4039):
        p = np.array([0.1, 0.25, 0.0, 0.333, 0.317])
        h = consistent_histogram(p, n)
        assert h.dtype == np.int64 and h.sum() == n and np.all(h >= 0)
        assert np.all(np.abs(h - n * p) < 1.0)
    assert consistent_histogram(np.array([0.5, 0.5]), 3).tolist() == [2, 1]  # tie: lower


def test_histogram_distances_on_hand_examples():
    degrees = np.array([0, 1, 1, 2])  # P = (1/4, 1/2, 1/4)
    assert histogram_l1(degrees, [1, 2, 1]) == 0.0
    assert histogram_emd(degrees, [1, 2, 1]) == 0.0
    assert histogram_l1(degrees, [0, 0, 4]) == pytest.approx(1.5)  # |1/4|+|1/2|+|3/4|
    # CDFs (1/4, 3/4, 1) vs (0, 0, 1): EMD = 1/4 + 3/4 = 1 (degrees)
    assert histogram_emd(degrees, [0, 0, 4]) == pytest.approx(1.0)
    # moving all of a point mass by 5 degrees costs 5
    assert histogram_emd(np.full(10, 3), [0] * 8 + [10]) == pytest.approx(5.0)


def test_trivial_baselines_use_the_true_median_and_zero():
    degrees = np.array([1, 2, 3, 10, 40])
    base = trivial_baselines(degrees)
    assert base["constant_median_oracle"]["value"] == 3
    assert base["constant_median_oracle"]["mae"] == pytest.approx((2 + 1 + 0 + 7 + 37) / 5)
    assert base["all_zero"]["mae"] == pytest.approx(56 / 5)
    assert base["all_zero"]["mse"] == pytest.approx((1 + 4 + 9 + 100 + 1600) / 5)
    assert base["all_zero"]["histogram_emd"] == pytest.approx(56 / 5)
    assert score(degrees, degrees, np.bincount(degrees))["histogram_l1"] == 0.0


def test_noise_weight_is_a_fraction_growing_with_eps():
    weights = [noise_weight(e) for e in (0.45, 0.9, 1.8, 2.7, 4.5)]
    assert all(0 < w < 1 for w in weights) and weights == sorted(weights)
    assert weights == pytest.approx([0.1118, 0.2169, 0.3943, 0.5256, 0.6866], abs=2e-4)


def test_the_noise_weight_moves_theta_up_and_keeps_the_clamp():
    degrees = np.arange(1, 101)
    count = lambda t: int(np.sum(degrees > t))  # noqa: E731
    paper, _ = theta_by_deviation(1, 100, count, 100, 2.0)
    dp, _ = theta_by_deviation(1, 100, count, 100, 2.0, 0.4)
    assert (paper, dp) == (50, 80)  # count <= 50, then count <= 20
    assert deviation_target(100, 0.5, 0.2) == pytest.approx(40.0)  # eps_dsr < 1, weight < 1
    assert deviation_target(100, 0.5) == 100.0  # the paper's clamp


def test_bad_input_is_refused_with_the_field():
    with pytest.raises(ParameterError) as err:
        deconvolve([1.0, float("nan")], 5, 1.0)
    assert err.value.field == "released[1]"
    with pytest.raises(ParameterError) as err:
        deconvolve([], 5, 1.0)
    assert err.value.field == "released"
    with pytest.raises(ParameterError) as err:
        post_process([1.0], 0, 1.0)
    assert err.value.field == "theta"
    with pytest.raises(ParameterError) as err:
        posterior_medians([1.0], np.array([0.5, 0.6]), 1.0)
    assert err.value.field == "prior"
    with pytest.raises(ParameterError) as err:
        noise_weight(0.0)
    assert err.value.field == "eps_dsr"
