"""Gau-DP's exact sampler (collector/gcdp/gaussian.py): the discrete Gaussian of CKS 2020
on a fine grid, its zCDP accounting, and ``gau_dp`` drawing through it (issue 19).

Statistical thresholds (fixed seeds; each derived for a false-failure rate near 1e-6):

* moments: a sample mean (variance) is within Z = 5 standard errors of its expectation;
  for a sum of many i.i.d. draws the standardised error is ~N(0, 1) and
  P(|N(0, 1)| > 5) = 5.7e-7 per check. The standard error of the mean is sigma / sqrt(n),
  of the sample variance sigma^2 sqrt(2 / (n - 1)) (near-normal kurtosis; the discrete
  Gaussian at sigma^2 >= 3 has excess kurtosis below 1e-3);
* the probability mass function: Pearson's statistic over bins with expected counts >= 50
  is ~chi^2 with (bins - 1) degrees of freedom; the test accepts it below
  ``chi2.isf(1e-6, df)`` (false-failure rate 1e-6 by construction);
* a Bernoulli frequency: within 5 binomial standard errors (5.7e-7).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.collector.gcdp import gau_dp
from ldpfleet.collector.gcdp.gaussian import (
    _bernoulli_exp,
    analytic_gaussian_sigma,
    discrete_gaussian,
    gaussian_grid,
    gaussian_on_grid,
    zcdp_delta,
    zcdp_rho,
)
from ldpfleet.protocol.errors import ParameterError
from scipy.stats import chi2

Z = 5.0


def _pmf(sigma2: float, lo: int, hi: int) -> np.ndarray:
    """Exact discrete Gaussian probabilities of lo..hi (normalised over +-60 sigma)."""
    span = int(60 * math.sqrt(sigma2)) + 60
    z = np.arange(-span, span + 1)
    w = np.exp(-(z.astype(float) ** 2) / (2.0 * sigma2))
    w /= w.sum()
    return w[(z >= lo) & (z <= hi)]


def _chi2_statistic(draws: np.ndarray, sigma2: float, cut: int) -> tuple[float, int]:
    """Pearson's statistic over the bins -cut..cut plus the two pooled tails."""
    n = draws.size
    inner = _pmf(sigma2, -cut, cut)
    tail = (1.0 - inner.sum()) / 2.0
    expected = n * np.concatenate([[tail], inner, [tail]])
    observed = np.concatenate(
        [[np.sum(draws < -cut)], [np.sum(draws == z) for z in range(-cut, cut + 1)],
         [np.sum(draws > cut)]]
    )  # fmt: skip
    assert expected.min() >= 50  # the chi^2 approximation's condition
    return float(np.sum((observed - expected) ** 2 / expected)), expected.size - 1


def test_discrete_gaussian_matches_its_pmf():
    draws = discrete_gaussian(np.random.default_rng(2020), 3, 100_000)
    stat, df = _chi2_statistic(draws, 3.0, 5)
    assert stat <= chi2.isf(1e-6, df)
    # the planted bug "10 % more variance" is caught by the same sample and threshold
    assert _chi2_statistic(draws, 3.3, 5)[0] > chi2.isf(1e-6, df)


def test_discrete_gaussian_moments_at_the_bench_scale():
    n, sigma2 = 200_000, 2**21  # the grid puts sigma at 2**10..2**11 grid units
    draws = discrete_gaussian(np.random.default_rng(7), sigma2, n).astype(float)
    sigma = math.sqrt(sigma2)
    assert abs(draws.mean()) <= Z * sigma / math.sqrt(n)
    assert abs(draws.var(ddof=1) / sigma2 - 1.0) <= Z * math.sqrt(2.0 / (n - 1))
    assert draws.dtype == float and np.all(draws == np.rint(draws))


def test_bernoulli_exp_whole_and_fractional_parts():
    n = 200_000
    p = math.exp(-2.5)
    hits = _bernoulli_exp(np.random.default_rng(3), np.full(n, 5, dtype=np.int64), 2)
    assert abs(hits.mean() - p) <= Z * math.sqrt(p * (1 - p) / n)
    assert _bernoulli_exp(np.random.default_rng(3), np.zeros(4, dtype=np.int64), 2).all()  # e^0


def test_zcdp_conversion_equals_opendp():
    """Corollary 13 as OpenDP computes it (make_zCDP_to_approxDP), to 1e-12 relative."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    for scale, eps in ((4.045, 1.0), (1.16, 4.0), (17.9, 0.2)):
        gaussian = dp.m.make_gaussian(dp.atom_domain(T=int), dp.absolute_distance(T=int),
                                      scale=scale)  # fmt: skip
        rho = gaussian.map(1)
        ref = dp.c.make_zCDP_to_approxDP(gaussian).map(1).delta(eps)
        assert zcdp_delta(rho, eps) == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("eps", [0.2, 0.5, 1.0, 2.0, 4.0])
def test_rho_and_grid_certify_delta_and_the_cost(eps):
    rho = zcdp_rho(eps, 1e-5)
    assert zcdp_delta(rho, eps) <= 1e-5 < zcdp_delta(rho * (1 + 1e-9), eps)
    for m in (1, 3, 6):
        for calibration in ("zcdp", "classic"):
            noise = gaussian_grid(eps, 1e-5, 1 / 30, m, calibration)
            assert noise.rho <= rho  # certified for the rounded answers
            assert math.log2(noise.grid) == int(math.log2(noise.grid))
            assert 2**20 <= noise.sigma2 < 2**23
    # the cost of the certificate: 7-11 % more noise than the continuous analytic sigma
    ratio = gaussian_grid(eps, 1e-5, 1 / 30, 1).sigma / analytic_gaussian_sigma(eps, 1e-5, 1 / 30)
    assert 1.05 < ratio < 1.12
    classic = gaussian_grid(eps, 1e-5, 1 / 30, 1, "classic").sigma
    assert classic >= gaussian_grid(eps, 1e-5, 1 / 30, 1).sigma


def test_more_changed_coordinates_cost_more_noise():
    sigmas = [gaussian_grid(1.0, 1e-5, 1 / 30, m).sigma for m in (1, 4, 100)]
    assert sigmas == sorted(sigmas) and sigmas[0] < sigmas[-1]


def test_outputs_are_grid_points_whatever_the_input():
    noise = gaussian_grid(1.0, 1e-5, 1 / 30, 1)
    a = gaussian_on_grid(np.random.default_rng(5), np.full(500, 0.3), noise)
    b = gaussian_on_grid(np.random.default_rng(5), np.full(500, 0.3 + noise.grid / 8), noise)
    assert np.array_equal(a, b)  # the same grid point: the same output, bit for bit
    assert np.all(a / noise.grid == np.rint(a / noise.grid))


def test_gau_dp_draws_the_grid_noise_of_its_certificate():
    noise = gaussian_grid(1.0, 1e-5, 1 / 30, 1)
    y = np.full((400, 5), 0.5)
    common = {"bounds": np.full(5, 1 / 30), "eps": 1.0, "delta": 1e-5, "low": 0.0, "high": 1.0}
    out = gau_dp(y, **common, rng=np.random.default_rng(9), l2_sensitivity=1 / 30,
                 changed_coordinates=1)  # fmt: skip
    ref = gaussian_on_grid(np.random.default_rng(9), y, noise)
    assert np.array_equal(out, ref)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"changed_coordinates": 0}, "changed_coordinates"),
        ({"changed_coordinates": 1.5}, "changed_coordinates"),
        ({"changed_coordinates": True}, "changed_coordinates"),
        ({"calibration": "float"}, "calibration"),
    ],
)
def test_refusals(kwargs, field):
    with pytest.raises(ParameterError) as info:
        gaussian_grid(1.0, 1e-5, 0.1, **{"changed_coordinates": 1, **kwargs})
    assert info.value.field == field


@pytest.mark.parametrize("bad", [0, 2**41, 2.0, True])
def test_discrete_gaussian_refuses_a_bad_variance(bad):
    with pytest.raises(ParameterError) as info:
        discrete_gaussian(np.random.default_rng(0), bad, 3)
    assert info.value.field == "sigma2"
