"""The exponential mechanism's exact sampler (``samplers.exponential_choice``, used by
``ExponentialMechanism.sample``: NDOE at every CADR device, GCDP's threshold choice).

Statistical thresholds: the counts of ``n`` draws over ``m`` candidates are compared with
the exact law by Pearson's chi-square on ``m - 1`` degrees of freedom, failing only when
its p-value is below ``1e-6`` (every expected count is >= 5, where the chi-square
approximation holds), so a correct sampler fails a test with probability about 1e-6; the
seeds are fixed, so the outcome is too.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.exponential import (
    ExponentialMechanism,
    ndoe_partitions,
    ndoe_scores,
    ndoe_sensitivity,
)
from ldpfleet.protocol.samplers import exponential_choice
from scipy import stats

from tests.unit.test_exact_coins import _PoolGenerator as _BitPool

P_MIN = 1e-6  # the chi-square p-value below which a test fails (module docstring)


class _PoolGenerator(_BitPool):
    """``test_exact_coins``'s stub for ``samplers._Bits`` (the given bit string, least
    significant bit first, as 63-bit words, then zeros); ``random`` returns the largest
    double below 1 (the former inverse-CDF sampler's last chance)."""

    def random(self, size=None):
        return np.full(() if size is None else size, np.nextafter(1.0, 0.0))[()]


def _accepting_bits(proposal: int, whole: int) -> int:
    """The bits on which the sampler proposes candidate ``proposal`` of two (one bit) and
    accepts it with ``Bernoulli(exp(-whole))`` for an integer gap: per CKS Bernoulli(exp(-1)),
    k = 1 needs no bit, k = 2 the bit 0 (success), k = 3 two bits worth 1 (failure at the
    odd K = 3: heads)."""
    pool, at = proposal, 1
    for _ in range(whole):
        pool |= 0b010 << at
        at += 3
    return pool


def test_a_candidate_below_the_float_cdf_rounding_is_reachable():
    """eps = 50, Du = 1, scores (0, -10): candidate 1's weight is exp(-250) ~ 2.7e-109, so
    the float CDF was (1.0, 1.0) and no uniform, not even the largest double below 1, gave
    candidate 1: for an input that swaps the two scores its probability ratio was infinite.
    The exact sampler outputs it on the draws that realise Bernoulli(exp(-250)). (Fails on
    the former inverse-CDF sampler, which returned 0 here.)"""
    mech = ExponentialMechanism(50.0, 1.0)
    assert mech.sample([0.0, -10.0], _PoolGenerator(_accepting_bits(1, 250))) == 1
    assert mech.rate == 25
    assert mech.sample([-10.0, 0.0], _PoolGenerator(_accepting_bits(0, 250))) == 0
    # one failing coin among the 250 and the proposal is rejected: the next (all-zero
    # bits) proposes candidate 0, whose gap is 0
    broken = _accepting_bits(1, 250) & ~(1 << (1 + 3 * 100 + 1))
    assert mech.sample([0.0, -10.0], _PoolGenerator(broken)) == 0


def _exact_law(scores: np.ndarray, rate: Fraction) -> np.ndarray:
    """exp(rate (s_k - max s)) normalised, from the exact rational gaps (float64 is exact
    to ~1e-16 relative here, far below the test's resolution)."""
    top = max(Fraction(float(s)) for s in scores)
    weights = np.array([math.exp(-float(rate * (top - Fraction(float(s))))) for s in scores])
    return weights / weights.sum()


def _chi_square_p(draws: np.ndarray, probs: np.ndarray) -> float:
    expected = probs * draws.size
    assert expected.min() >= 5  # the chi-square approximation (module docstring)
    observed = np.bincount(draws, minlength=probs.size)
    return float(stats.chisquare(observed, expected).pvalue)


@pytest.mark.parametrize(
    ("eps", "sensitivity", "scores"),
    [
        (6.0, 1.0, [0.0, -1.0, -2.0, -3.0]),  # gaps 0, 3, 6, 9: whole exp(-1) coins
        (0.3, 1.0, [0.25, -0.5, 0.0, 1.0, -2.0]),  # eps / 2 with a 2**-54 denominator
        (1.7, 7.0, [3.0, 2.0, -4.5, 0.5]),  # a rate of denominator 7 * 2**53
    ],
)
def test_the_law_is_the_exponential_mechanism(eps, sensitivity, scores):
    mech = ExponentialMechanism(eps, sensitivity)
    rng = np.random.default_rng(20261204)
    draws = np.array([mech.sample(scores, rng) for _ in range(100_000)])
    probs = _exact_law(np.array(scores), mech.rate)
    assert _chi_square_p(draws, probs) > P_MIN


@pytest.mark.parametrize("eps", [0.05, 1.0, 8.0])
def test_ndoe_codes_follow_the_law(eps):
    """NDOE as a CADR device runs it: scores of a degree against 12 partitions."""
    parts = ndoe_partitions(0, 60, 12)
    mech = ExponentialMechanism(eps, ndoe_sensitivity(parts))
    scores = ndoe_scores(17, parts)
    rng = np.random.default_rng(7)
    draws = np.array([mech.sample(scores, rng) for _ in range(60_000)])
    assert _chi_square_p(draws, _exact_law(scores, mech.rate)) > P_MIN
    np.testing.assert_allclose(_exact_law(scores, mech.rate), mech.probabilities(scores))


def test_the_rate_is_exact_and_the_seed_fixes_the_draws():
    mech = ExponentialMechanism(0.1, 3.0)
    assert mech.rate == Fraction(0.1) / 6  # the float's exact rational, not 1/60
    a = [mech.sample([0.0, -1.0, -2.0], np.random.default_rng(4)) for _ in range(3)]
    b = [mech.sample([0.0, -1.0, -2.0], np.random.default_rng(4)) for _ in range(3)]
    assert a == b
    assert mech.sample([5.0], np.random.default_rng(0)) == 0


def test_extreme_scores_neither_overflow_nor_loop():
    """Gaps are exact rationals: 1e300 - (-1e300) does not overflow, and a huge gap costs
    one early failing coin (CKS stops at the first failure)."""
    mech = ExponentialMechanism(40.0, 1.0)
    rng = np.random.default_rng(1)
    draws = {mech.sample([0.0, -1e300, 1e300, 1e300], rng) for _ in range(200)}
    assert draws == {2, 3}


@pytest.mark.parametrize(
    ("scores", "rate", "field"),
    [([], Fraction(1), "scores"), ([0.0, math.nan], Fraction(1), "scores"), ([0.0], -1, "rate")],
)
def test_exponential_choice_refuses_bad_arguments_naming_the_field(scores, rate, field):
    with pytest.raises(ParameterError) as caught:
        exponential_choice(np.random.default_rng(0), np.array(scores), rate)
    assert caught.value.field == field
