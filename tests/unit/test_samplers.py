"""Exact samplers (protocol/samplers.py): the distribution against the exact probability
mass function and against OpenDP's sampler, determinism under a seed, the grid property
that defeats Mironov's attack, and typed errors.

Statistical thresholds: every goodness-of-fit test below is a Pearson chi-square test
whose statistic is compared with the chi-square quantile at 1 - 1e-6 for its degrees of
freedom (``chi2.ppf(1 - 1e-6, df)``), so a correct sampler fails one of them with
probability about 1e-6 per test (asymptotic chi-square law; every pooled cell has an
expected count >= 50, where the approximation is good). Seeds are fixed, so the outcome
is deterministic."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.samplers import (
    SCALE_BITS,
    VECTOR_MIN,
    bernoulli_exp,
    discrete_laplace,
    exact_scale,
    geometric,
    geometric_ratio_bound,
    laplace_on_grid,
    negative_binomial,
)
from scipy.stats import chi2, nbinom

FALSE_FAILURE = 1e-6


def _pmf(z: np.ndarray, scale: float) -> np.ndarray:
    p = math.exp(-1.0 / scale)
    return (1 - p) / (1 + p) * p ** np.abs(z)


def _cells(scale: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Cells -K..K (each expected >= 50) and the two tails pooled into the end cells."""
    k = 0
    while n * _pmf(np.array([k + 1]), scale)[0] >= 50:
        k += 1
    support = np.arange(-k, k + 1)
    probs = _pmf(support, scale)
    tail = (1.0 - probs.sum()) / 2.0
    probs[0] += tail
    probs[-1] += tail
    return support, probs


def _chi_square(sample: np.ndarray, support: np.ndarray, probs: np.ndarray) -> float:
    clipped = np.clip(sample, support[0], support[-1])
    counts = np.bincount(clipped - support[0], minlength=support.size)
    expected = probs * sample.size
    return float(np.sum((counts - expected) ** 2 / expected))


@pytest.mark.parametrize("scale", [1, 2.5, Fraction(7, 3), 10.0])
def test_discrete_laplace_matches_its_exact_pmf(scale):
    n = 200_000  # the vectorised implementation (n >= VECTOR_MIN)
    sample = discrete_laplace(np.random.default_rng(11), scale, n)
    assert sample.dtype == np.int64 and sample.shape == (n,)
    support, probs = _cells(float(scale), n)
    stat = _chi_square(sample, support, probs)
    assert stat < chi2.ppf(1 - FALSE_FAILURE, support.size - 1), stat


@pytest.mark.parametrize("scale", [1, 2.5, 10.0])
def test_the_small_request_path_matches_the_pmf_too(scale):
    # requests below VECTOR_MIN values run the pure-Python implementation (the bit pool)
    rng = np.random.default_rng(12)
    sample = np.concatenate([discrete_laplace(rng, scale, VECTOR_MIN - 1) for _ in range(500)])
    sample = np.concatenate([sample, [discrete_laplace(rng, scale) for _ in range(500)]])
    n = sample.size
    support, probs = _cells(float(scale), n)
    stat = _chi_square(sample, support, probs)
    assert stat < chi2.ppf(1 - FALSE_FAILURE, support.size - 1), stat


def test_the_small_request_path_counts_zero_once():
    # Quick-tier guard of the pure-Python path (the pmf test above is in the slow tier): a
    # sampler that keeps the draw (sign -, 0) puts P[0] = 1 - a instead of (1 - a) / (1 + a)
    # (a = e^-1: 0.632 instead of 0.462), an eps-DP break at the outputs next to the input.
    # Hoeffding over n = 2520 draws: P[|freq - P0| >= 0.085] <= 2 exp(-2 n 0.085^2) = 3e-16,
    # far below FALSE_FAILURE; the planted bug is 0.17 away, so it fails as surely.
    rng = np.random.default_rng(13)
    sample = np.concatenate([discrete_laplace(rng, 1, VECTOR_MIN - 1) for _ in range(40)])
    a = math.exp(-1.0)
    assert abs(np.mean(sample == 0) - (1 - a) / (1 + a)) < 0.085


def test_discrete_laplace_agrees_with_opendp():
    # Two-sample chi-square test of homogeneity between our sampler (seeded generator) and
    # OpenDP's (OS randomness; its outcome is random, the false-failure rate ~1e-6 as above).
    import opendp.prelude as dp

    dp.enable_features("contrib")
    scale, n = 3.0, 100_000
    reference = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=scale
    )
    theirs = np.asarray(reference([0] * n), dtype=np.int64)
    ours = discrete_laplace(np.random.default_rng(5), scale, n)
    support, _ = _cells(scale, n // 2)
    table = np.array(
        [np.bincount(np.clip(s, support[0], support[-1]) - support[0]) for s in (ours, theirs)]
    )
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0) / table.sum()
    stat = float(np.sum((table - expected) ** 2 / expected))
    assert stat < chi2.ppf(1 - FALSE_FAILURE, support.size - 1), stat


def test_bernoulli_exp_frequencies():
    # |hits/n - p| <= 4.9 sigma: a two-sided normal tail of ~1e-6 for each gamma.
    rng = np.random.default_rng(2)
    n = 100_000
    for gamma in (Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)):
        p = math.exp(-float(gamma))
        hits = int(np.sum(bernoulli_exp(rng, gamma, n)))
        assert abs(hits / n - p) <= 4.9 * math.sqrt(p * (1 - p) / n) + 1e-12, (gamma, hits)
    assert isinstance(bernoulli_exp(rng, Fraction(1, 2)), bool)


def test_same_seed_same_values_and_scalar_shapes():
    a = discrete_laplace(np.random.default_rng(3), 4.0, (3, 5))
    b = discrete_laplace(np.random.default_rng(3), 4.0, (3, 5))
    assert a.shape == (3, 5) and np.array_equal(a, b)
    assert isinstance(discrete_laplace(np.random.default_rng(3), 4.0), int)
    x = laplace_on_grid(np.random.default_rng(9), np.array([0.1, 0.7]), 1.0)
    y = laplace_on_grid(np.random.default_rng(9), np.array([0.1, 0.7]), 1.0)
    assert np.array_equal(x, y) and isinstance(
        laplace_on_grid(np.random.default_rng(9), 0.1, 1.0), float
    )


def test_grid_outputs_do_not_depend_on_the_low_bits_of_the_input():
    # Mironov's attack reads the set of doubles reachable from x; here every output is a
    # multiple of the grid whatever x is, and x, x + tiny give the same output distribution.
    grid = 2.0**-3
    out = laplace_on_grid(np.random.default_rng(1), np.full(10_000, 0.3 + 1e-12), 0.5, grid)
    assert np.all(np.mod(out, grid) == 0.0)
    same = laplace_on_grid(np.random.default_rng(1), np.full(10_000, 0.3), 0.5, grid)
    assert np.array_equal(out, same)
    # and the noise has the discrete Laplace law of scale / grid on the grid
    k = np.rint(0.3 / grid)
    z = np.rint(out / grid - k).astype(np.int64)
    support, probs = _cells(0.5 / grid, z.size)
    assert _chi_square(z, support, probs) < chi2.ppf(1 - FALSE_FAILURE, support.size - 1)


def test_a_float_scale_is_rounded_up_never_down():
    s = exact_scale(0.1)
    assert s >= Fraction(0.1) and s - Fraction(0.1) < Fraction(1, 2**SCALE_BITS)
    assert exact_scale(3) == 3 and exact_scale(Fraction(1, 3)) == Fraction(1, 3)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "2", Fraction(-1)])
def test_bad_scales_are_refused_naming_the_field(bad):
    with pytest.raises(ParameterError) as info:
        discrete_laplace(np.random.default_rng(0), bad)
    assert info.value.field == "scale"


def test_bad_grid_and_values_are_refused():
    rng = np.random.default_rng(0)
    for grid in (0.3, 0.0, -0.5, float("inf")):
        with pytest.raises(ParameterError) as info:
            laplace_on_grid(rng, 0.0, 1.0, grid)
        assert info.value.field == "grid"
    for value in (float("nan"), 2.0**60):
        with pytest.raises(ParameterError) as info:
            laplace_on_grid(rng, value, 1.0, 2.0**-20)
        assert info.value.field == "value"
    with pytest.raises(ParameterError) as info:
        bernoulli_exp(rng, Fraction(-1, 2))
    assert info.value.field == "gamma"


# --- negative binomial (Pólya) shares -------------------------------------------------------


def _nb_cells(shape: float, ratio: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Cells 0..K (each expected >= 50; K >= 1) with the upper tail pooled into cell K."""
    k = 1
    while n * nbinom.pmf(k + 1, shape, 1 - ratio) >= 50:
        k += 1
    support = np.arange(k + 1)
    probs = nbinom.pmf(support, shape, 1 - ratio)
    probs[-1] += nbinom.sf(k, shape, 1 - ratio)
    return support, probs


@pytest.mark.parametrize(
    ("shape", "ratio"),
    [
        (Fraction(1, 3), Fraction(3, 5)),  # a share of 3 parties
        (Fraction(7, 5), Fraction(3, 5)),  # one geometric + NB(2/5): the simulated sum
        (Fraction(1, 40), Fraction(9, 10)),  # mostly zeros, long tail
        (Fraction(2), Fraction(1, 7)),  # integer shape: geometrics only
    ],
)
def test_negative_binomial_matches_its_exact_pmf(shape, ratio):
    sample = negative_binomial(np.random.default_rng(21), shape, ratio, 300_000)
    support, probs = _nb_cells(float(shape), float(ratio), sample.size)
    stat = _chi_square(sample, support, probs)
    assert stat < chi2.ppf(1 - FALSE_FAILURE, support.size - 1), (stat, support.size)


def test_the_small_request_negative_binomial_path_matches_the_pmf_too():
    rng = np.random.default_rng(23)
    size = 40  # the bit-pool path: 40 / (1 - 2/3) = 120 < 512 expected coin rounds
    shape, ratio = Fraction(2, 7) + 1, Fraction(2, 3)
    sample = np.concatenate([negative_binomial(rng, shape, ratio, size) for _ in range(1600)])
    support, probs = _nb_cells(float(shape), float(ratio), sample.size)
    stat = _chi_square(sample, support, probs)
    assert stat < chi2.ppf(1 - FALSE_FAILURE, support.size - 1), (stat, support.size)


def test_m_polya_shares_sum_to_one_geometric():
    # NB(1/m) summed over m independent draws is NB(1) = Geometric(1 - a) exactly.
    rng = np.random.default_rng(22)
    m, a, n = 10, Fraction(4, 5), 60_000
    total = sum(negative_binomial(rng, Fraction(1, m), a, n) for _ in range(m))
    support, probs = _nb_cells(1.0, 0.8, n)
    assert _chi_square(total, support, probs) < chi2.ppf(1 - FALSE_FAILURE, support.size - 1)
    plain = geometric(rng, a, n)
    assert _chi_square(plain, support, probs) < chi2.ppf(1 - FALSE_FAILURE, support.size - 1)


def test_negative_binomial_same_seed_same_values():
    a = negative_binomial(np.random.default_rng(5), Fraction(1, 9), Fraction(7, 8), 49)
    b = negative_binomial(np.random.default_rng(5), Fraction(1, 9), Fraction(7, 8), 49)
    assert a.dtype == np.int64 and a.shape == (49,) and np.array_equal(a, b)


@pytest.mark.parametrize("gamma", [Fraction(1, 10**6), 0.09, 0.015, 1.0, Fraction(7, 2), 30.0])
def test_geometric_ratio_bound_is_an_upper_bound_within_one_grid_step(gamma):
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60  # exp of a 60-digit value, correctly rounded: far below 2**-30
        g = Fraction(gamma)
        true = Fraction((-(Decimal(g.numerator) / Decimal(g.denominator))).exp())
    a = geometric_ratio_bound(gamma)
    assert a.denominator <= 2**30 and a >= true and a - true < Fraction(1, 2**30)
    # the mechanism it gives spends at most the gamma it was asked for
    assert -math.log(float(a)) <= float(gamma) * (1 + 1e-12)


def test_bad_negative_binomial_arguments_are_refused_naming_the_field():
    rng = np.random.default_rng(0)
    cases = [
        (dict(shape=Fraction(0), ratio=Fraction(1, 2), size=3), "shape"),
        (dict(shape=0.5, ratio=Fraction(1, 2), size=3), "shape"),
        (dict(shape=Fraction(1, 2), ratio=0.5, size=3), "ratio"),
        (dict(shape=Fraction(1, 2), ratio=Fraction(1), size=3), "ratio"),
        (dict(shape=Fraction(1, 2), ratio=Fraction(1, 2), size=0), "size"),
    ]
    for kwargs, field in cases:
        with pytest.raises(ParameterError) as info:
            negative_binomial(rng, **kwargs)
        assert info.value.field == field
    for bad in (0, -1.0, float("nan"), "1", 2.0**-40):
        with pytest.raises(ParameterError) as info:
            geometric_ratio_bound(bad)
        assert info.value.field == "gamma"
