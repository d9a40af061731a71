"""Tests of the Square Wave randomizer (protocol/sw.py) against the exact math of
/work/shared/reference/sw-and-cpr.md.

Statistical tests use FIXED seeds, so they are deterministic; their thresholds are chosen so
that a *correct* implementation would fail for a random seed with probability ~1e-6 per check.
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.sw import GRID, MECHANISMS, SquareWave, denormalise, normalise, sw_b
from scipy import integrate, stats

EPS_GRID = (1e-4, 0.1, 1.0, 5.0, 20.0)
V_GRID = (0.0, 0.01, 0.1, 0.25, 0.3, 0.5, 0.7, 0.9, 0.99, 1.0)

# Two-sided normal quantile for a false-failure rate of 1e-6: P(|Z| > z) = 1e-6
# <=> z = Phi^-1(1 - 5e-7) = 4.89..., rounded up to 4.9.
Z = 4.9
assert abs(stats.norm.isf(5e-7) - 4.89) < 0.01


def reference_b(eps: float) -> float:
    """b(eps) from the reference formula, evaluated with 60-digit decimals (no cancellation)."""
    getcontext().prec = 60
    x = Decimal(repr(eps))
    e = x.exp()
    return float((x * e - e + 1) / (2 * e * (e - 1 - x)))


def reference_b_grid(eps: float) -> float:
    """b(eps) rounded to a whole number of 2**-20 cells, at least one, below 2**19 (the
    exact sampler's grid, protocol/sw.py)."""
    return min(max(1, round(reference_b(eps) * 2**20)), 2**19 - 1) / 2**20


def reference_pieces(eps: float, variant: str, v: float) -> list[tuple[float, float, float]]:
    """The output density for input v as (lo, hi, density) pieces, built from the reference
    formulas (independently of SquareWave's p, q and window) with b on the 2**-20 grid and
    v rounded to it: the exact sampler reports cell midpoints whose law is this density's
    mass per cell."""
    b = reference_b_grid(eps)
    v = round(v * 2**20) / 2**20
    e = math.exp(eps)
    if variant == "sw":
        q = 1.0 / (2 * b * e + 1)
        p = e / (2 * b * e + 1)
        lo, hi, a = -b, 1 + b, v - b
    else:
        q = 1.0 / (1 + 2 * b * (e - 1))
        p = e * q
        lo, hi, a = 0.0, 1.0, min(max(v - b, 0.0), 1 - 2 * b)
    return [(lo, a, q), (a, a + 2 * b, p), (a + 2 * b, hi, q)]


def reference_cdf(pieces: list[tuple[float, float, float]]):
    def cdf(y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        out = np.zeros_like(y)
        for lo, hi, dens in pieces:
            out += dens * (np.clip(y, lo, hi) - lo)
        return out

    return cdf


def moments(pieces: list[tuple[float, float, float]]) -> tuple[float, float]:
    """Exact E[y] and Var[y] of a piecewise-constant density."""
    m1 = sum(d * (hi**2 - lo**2) / 2 for lo, hi, d in pieces)
    m2 = sum(d * (hi**3 - lo**3) / 3 for lo, hi, d in pieces)
    return m1, m2 - m1**2


# --- b(eps) --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "eps", [1e-8, 1e-6, 1e-4, 9.99e-4, 1e-3, 1.001e-3, 0.01, 0.5, 1, 5, 20, 50]
)
def test_b_matches_high_precision_reference(eps):
    assert sw_b(eps) == pytest.approx(reference_b(eps), rel=1e-12)


def test_b_tends_to_half_and_decreases():
    assert sw_b(1e-12) == pytest.approx(0.5, abs=1e-11)
    assert abs(sw_b(1e-6) - 0.5) < 1e-6
    grid = np.logspace(-6, math.log10(50), 300)
    bs = np.array([sw_b(float(e)) for e in grid])
    assert np.all(np.diff(bs) < 0)
    assert np.all((bs > 0) & (bs <= 0.5))


# --- densities -----------------------------------------------------------------------------


@pytest.mark.parametrize("variant", MECHANISMS)
@pytest.mark.parametrize("eps", EPS_GRID)
def test_p_over_q_is_exactly_e_eps(eps, variant):
    sw = SquareWave(eps, variant)
    assert sw.p / sw.q == pytest.approx(math.exp(eps), rel=1e-12)
    assert sw.ratio <= Fraction(math.exp(eps)) * (1 + Fraction(1, 2**50))
    assert sw.b == reference_b_grid(eps)


@pytest.mark.parametrize("variant", MECHANISMS)
@pytest.mark.parametrize("eps", EPS_GRID)
def test_density_integrates_to_one(eps, variant):
    sw = SquareWave(eps, variant)
    for v in V_GRID:
        lo, hi = sw.window(v)
        edges = [x for x in (lo, hi) if sw.output_low < x < sw.output_high]

        def f(y, v=v):
            return float(sw.density(np.array(y), v))

        total, err = integrate.quad(f, sw.output_low, sw.output_high, points=edges, limit=200)
        # for large eps the window (width 2b ~ 1e-8 at eps=20) has density p ~ 1e7, so the
        # float rounding of its edges (a few ulps of 1) alone moves the mass by ~p * ulp
        tol = 1e-10 + sw.p * 8 * np.spacing(sw.output_high)
        assert total == pytest.approx(1.0, abs=tol), (v, total, err)
        # exact piecewise sum with the module's own window
        exact = 2 * sw.b * sw.p + (sw.output_high - sw.output_low - 2 * sw.b) * sw.q
        assert exact == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("variant", MECHANISMS)
@pytest.mark.parametrize("eps", EPS_GRID)
def test_density_takes_only_p_and_q_and_window_matches_reference(eps, variant):
    sw = SquareWave(eps, variant)
    ys = np.linspace(sw.output_low, sw.output_high, 2001)
    for v in V_GRID:
        ys = np.append(np.linspace(sw.output_low, sw.output_high, 2001), sum(sw.window(v)) / 2)
        d = sw.density(ys, v)
        assert set(np.unique(d)) <= {sw.p, sw.q}
        assert np.any(d == sw.p)
        expected = np.zeros_like(ys)
        for lo, hi, dens in reference_pieces(eps, variant, v):
            expected = np.where((ys > lo) & (ys < hi), dens, expected)
        interior = expected > 0  # ignore points exactly on an edge
        np.testing.assert_allclose(d[interior], expected[interior], rtol=1e-12)
    outside = np.array([sw.output_low - 1e-9, sw.output_high + 1e-9, np.nan, np.inf, -np.inf])
    assert np.all(sw.density(outside, 0.5) == 0.0)


@pytest.mark.parametrize("variant", MECHANISMS)
@pytest.mark.parametrize("eps", [1e-4, 0.5, 2.0, 20.0, 50.0])
def test_density_ratio_bounded_by_e_eps(eps, variant):
    """Pure eps-LDP: for every output y, max_v f(y|v) / min_v f(y|v) <= e^eps."""
    sw = SquareWave(eps, variant)
    ys = np.linspace(sw.output_low, sw.output_high, 501)
    dens = np.array([sw.density(ys, v) for v in np.linspace(0, 1, 101)])
    assert np.all(dens > 0)
    ratio = dens.max(axis=0) / dens.min(axis=0)
    assert ratio.max() <= math.exp(eps) * (1 + 1e-12)


# --- sampling ------------------------------------------------------------------------------

N_MASS = 200_000


@pytest.mark.parametrize("variant", MECHANISMS)
@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_region_masses(eps, variant):
    """Fraction of samples below / inside / above the high-density window vs the exact mass.

    With n samples the count in a region of exact mass m is Binomial(n, m), so the fraction
    has standard deviation sqrt(m(1-m)/n). For a two-sided false-failure rate of 1e-6 per
    check we allow |fraction - m| <= Z * sqrt(m(1-m)/n) with Z = 4.9 (normal approximation,
    accurate here since n*m >> 1000 for every checked region)."""
    sw = SquareWave(eps, variant)
    rng = np.random.default_rng(20240601)
    for v in (0.0, 0.1, 0.5, 0.95, 1.0):
        y = sw.perturb(np.full(N_MASS, v), rng)
        assert np.all(sw.in_domain(y))
        lo, hi = sw.window(v)
        pieces = reference_pieces(eps, variant, v)
        assert (lo, hi) == pytest.approx((pieces[1][0], pieces[1][1]), abs=1e-12)
        regions = [
            ((y < lo), pieces[0][2] * (pieces[0][1] - pieces[0][0])),
            (((y >= lo) & (y <= hi)), 2 * sw.b * sw.p),
            ((y > hi), pieces[2][2] * (pieces[2][1] - pieces[2][0])),
        ]
        assert regions[1][1] == pytest.approx(pieces[1][2] * 2 * reference_b_grid(eps), rel=1e-12)
        for mask, m in regions:
            frac = mask.mean()
            if m == 0.0:
                assert frac == 0.0
                continue
            assert abs(frac - m) <= Z * math.sqrt(m * (1 - m) / N_MASS), (v, frac, m)


@pytest.mark.parametrize("variant", MECHANISMS)
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0, 10.0])
def test_ks_goodness_of_fit_against_exact_cdf(eps, variant):
    """KS test of samples against the exact piecewise-linear CDF built from the reference
    formulas; reject only if p < 1e-6 (false-failure rate 1e-6 per check, fixed seed). The
    reports are cell midpoints; plus an independent uniform(-GRID/2, GRID/2) they have
    exactly the piecewise-constant density (its mass per cell is the cell's probability)."""
    sw = SquareWave(eps, variant)
    rng = np.random.default_rng(7)
    jitter = np.random.default_rng(8)
    for v in (0.0, 0.2, 0.5, 1.0):
        y = sw.perturb(np.full(20_000, v), rng) + jitter.uniform(-GRID / 2, GRID / 2, 20_000)
        cdf = reference_cdf(reference_pieces(eps, variant, v))
        assert cdf(np.array(sw.output_high)) == pytest.approx(1.0, abs=1e-12)
        result = stats.kstest(y, cdf)
        assert result.pvalue > 1e-6, (v, result)


@pytest.mark.parametrize("variant", MECHANISMS)
def test_perturb_is_deterministic_and_two_words_per_input(variant):
    sw = SquareWave(1.5, variant)
    v = np.linspace(0, 1, 257)
    a = sw.perturb(v, np.random.default_rng(42))
    b = sw.perturb(v, np.random.default_rng(42))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, sw.perturb(v, np.random.default_rng(43)))
    # scalar-by-scalar draws give the same sequence as the vectorised call
    rng = np.random.default_rng(42)
    scalars = [sw.perturb(float(x), rng) for x in v]
    assert all(isinstance(s, float) for s in scalars)
    np.testing.assert_array_equal(np.array(scalars), a)
    # two 62-bit words per input (module docstring; more only at probability < 2**-40)
    rng1, rng2 = np.random.default_rng(9), np.random.default_rng(9)
    sw.perturb(v.reshape(257, 1), rng1)
    rng2.integers(0, 2**62, size=(257, 2))
    assert rng1.random() == rng2.random()
    assert sw.perturb(v.reshape(257, 1), rng1).shape == (257, 1)


# --- estimation ----------------------------------------------------------------------------


@pytest.mark.parametrize("variant", MECHANISMS)
@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_estimate_exactly_unbiased_in_expectation(eps, variant):
    """E[estimate(y)] = estimate(E[y]) (linear), with E[y] from the exact reference moments."""
    sw = SquareWave(eps, variant)
    b = sw.b
    vs = np.linspace(0, 1, 41) if variant == "sw" else np.linspace(b, 1 - b, 41)
    for v in vs:
        m1, _ = moments(reference_pieces(eps, variant, float(v)))
        v_grid = round(float(v) * 2**20) / 2**20  # the sampler's pre-processing
        assert float(sw.estimate(m1)) == pytest.approx(v_grid, abs=1e-9)


N_EST = 200_000


@pytest.mark.parametrize(
    ("variant", "vs"),
    [("sw", (0.0, 0.3, 1.0)), ("sw01", ("b", 0.5, "1-b"))],
)
def test_estimate_unbiased_empirically(variant, vs):
    """The mean of n estimates is within Z * sigma / sqrt(n) of v, where sigma^2 =
    Var[y] / (2b(p-q))^2 is the exact variance of one estimate (CLT; Z = 4.9 gives a
    two-sided false-failure rate of 1e-6 per check)."""
    eps = 1.0
    sw = SquareWave(eps, variant)
    rng = np.random.default_rng(1234)
    for v in vs:
        v = {"b": sw.b, "1-b": 1 - sw.b}.get(v, v)
        _, var_y = moments(reference_pieces(eps, variant, v))
        sigma = math.sqrt(var_y) / (2 * sw.b * (sw.p - sw.q))
        est = sw.estimate(sw.perturb(np.full(N_EST, v), rng))
        assert abs(est.mean() - v) <= Z * sigma / math.sqrt(N_EST), (v, est.mean())
        assert est.var() == pytest.approx(sigma**2, rel=0.05)


def test_sw01_inputs_below_b_share_the_law_of_b():
    """Documented sw01 bias: v in [0, b) has the same output law as v = b, so the estimate's
    expectation is b (not v); symmetric at the top end."""
    eps = 1.0
    sw = SquareWave(eps, "sw01")
    b = sw.b
    ys = np.linspace(0, 1, 1001)
    for v in (0.0, b / 3, b / 2, 0.999 * b):
        np.testing.assert_array_equal(sw.density(ys, v), sw.density(ys, b))
        np.testing.assert_array_equal(sw.density(ys, 1 - v), sw.density(ys, 1 - b))
        m1, _ = moments(reference_pieces(eps, "sw01", v))
        assert float(sw.estimate(m1)) == pytest.approx(b, abs=1e-12)
    # empirically: at v = 0 the mean estimate is b (within the CLT bound) and far from 0
    _, var_y = moments(reference_pieces(eps, "sw01", 0.0))
    tol = Z * math.sqrt(var_y) / (2 * b * (sw.p - sw.q)) / math.sqrt(N_EST)
    mean0 = sw.estimate(sw.perturb(np.zeros(N_EST), np.random.default_rng(99))).mean()
    assert abs(mean0 - b) <= tol
    assert abs(mean0 - 0.0) > 10 * tol
    # the original variant has no such bias
    sw0 = SquareWave(eps, "sw")
    m1, _ = moments(reference_pieces(eps, "sw", 0.0))
    assert float(sw0.estimate(m1)) == pytest.approx(0.0, abs=1e-12)


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0, 0.0, -1.0, -1e-300, math.nan, math.inf, -math.inf, 50.0001])
def test_eps_refused(eps):
    with pytest.raises(ParameterError) as info:
        SquareWave(eps)
    assert info.value.field == "eps"
    assert "50" in info.value.reason


@pytest.mark.parametrize("eps", [True, "1.0", None])
def test_eps_wrong_type_refused(eps):
    with pytest.raises(ParameterError) as info:
        SquareWave(eps)
    assert info.value.field == "eps"


def test_eps_boundary_accepted():
    for variant in MECHANISMS:
        sw = SquareWave(50.0, variant)
        assert sw.eps == 50.0
        assert sw.p / sw.q == pytest.approx(math.exp(50.0), rel=1e-12)
        assert sw.b == GRID  # b(50) ~ 4.7e-21: the window is one cell each side
        y = sw.perturb(np.linspace(0, 1, 11), np.random.default_rng(0))
        assert np.all(sw.in_domain(y))
    assert SquareWave(5).eps == 5.0
    assert sw_b(1e-300) == pytest.approx(0.5)  # b itself is fine; p == q is not
    with pytest.raises(ParameterError, match="must be >= 1e-12"):
        SquareWave(1e-300)  # tests/unit/test_eps_range.py
    with pytest.raises(ParameterError):
        sw_b(0.0)
    with pytest.raises(ParameterError):
        sw_b(50.0001)


@pytest.mark.parametrize("variant", ["bogus", "SW", "", None])
def test_variant_refused(variant):
    with pytest.raises(ParameterError) as info:
        SquareWave(1.0, variant)
    assert info.value.field == "variant"


def test_frozen_and_equality():
    sw = SquareWave(1.0, "sw01")
    with pytest.raises(AttributeError):
        sw.eps = 2.0  # type: ignore[misc]
    assert sw == SquareWave(1.0, "sw01")
    assert sw != SquareWave(1.0, "sw")


@pytest.mark.parametrize("v", [-1e-12, 1 + 1e-12, -1.0, 2.0, math.nan, math.inf])
def test_v_out_of_range_refused(v):
    sw = SquareWave(1.0)
    rng = np.random.default_rng(0)
    with pytest.raises(ParameterError) as info:
        sw.perturb(v, rng)
    assert info.value.field == "v"
    with pytest.raises(ValueError):
        sw.density(np.array([0.5]), v)


def test_v_array_with_bad_element_names_index_and_draws_nothing():
    sw = SquareWave(1.0, "sw01")
    rng1, rng2 = np.random.default_rng(5), np.random.default_rng(5)
    with pytest.raises(ParameterError) as info:
        sw.perturb(np.array([0.0, 0.5, np.nan, 1.0]), rng1)
    assert info.value.field == "v[2]"
    assert rng1.random() == rng2.random()


def test_in_domain():
    for variant in MECHANISMS:
        sw = SquareWave(2.0, variant)
        y = np.array([sw.output_low, sw.output_high, 0.5, sw.output_low - 1e-12])
        np.testing.assert_array_equal(sw.in_domain(y), [True, True, True, False])
        np.testing.assert_array_equal(
            sw.in_domain(np.array([np.nan, np.inf, -np.inf])), [False, False, False]
        )
    sw = SquareWave(2.0, "sw")
    assert sw.output_low == -sw.b and sw.output_high == 1 + sw.b
    assert bool(sw.in_domain(np.array(-sw.b / 2)))
    assert not bool(SquareWave(2.0, "sw01").in_domain(np.array(-sw.b / 2)))


# --- normalisation -------------------------------------------------------------------------


def test_normalise_clips_and_maps():
    x = np.array([-5.0, 0.0, 2.5, 5.0, 10.0, 15.0, np.inf, -np.inf])
    np.testing.assert_allclose(normalise(x, 0.0, 10.0), [0, 0, 0.25, 0.5, 1, 1, 1, 0])
    np.testing.assert_allclose(normalise(x, -10.0, 10.0)[:4], [0.25, 0.5, 0.625, 0.75])
    assert float(normalise(20.0, 10.0, 30.0)) == 0.5
    v = np.linspace(0, 1, 11)
    np.testing.assert_allclose(normalise(denormalise(v, -3.0, 7.0), -3.0, 7.0), v, atol=1e-15)
    np.testing.assert_allclose(denormalise(np.array([-0.5, 1.5]), 0.0, 2.0), [-1.0, 3.0])


@pytest.mark.parametrize(
    ("lo", "hi"), [(1.0, 1.0), (2.0, 1.0), (math.nan, 1.0), (0.0, math.inf), (-math.inf, 0.0)]
)
def test_normalise_bad_bounds(lo, hi):
    with pytest.raises(ParameterError) as info:
        normalise(np.array([0.5]), lo, hi)
    assert info.value.field == "bounds"
    with pytest.raises(ParameterError):
        denormalise(np.array([0.5]), lo, hi)


def test_bounds_whose_width_overflows_are_refused():
    """[-1e308, 1e308] are finite, but hi - lo is infinite: every reading would map to 0
    and every estimate to -inf (results.json held -Infinity, invalid JSON)."""
    with pytest.raises(ParameterError) as info:
        normalise(np.array([0.5]), -1e308, 1e308)
    assert info.value.field == "bounds" and "hi - lo overflows to infinity" in str(info.value)
    from ldpfleet.protocol.stream import StreamConfig

    with pytest.raises(ParameterError) as info:
        StreamConfig(run="r", mechanism="sw", eps=1.0, w=1, steps=5, batch_steps=5,
                     lo=-1e308, hi=1e308, retransmit_after=5.0)  # fmt: skip
    assert info.value.field == "bounds" and "got [-1e+308, 1e+308]" in str(info.value)
    from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

    toml = (
        '[scenario]\nname = "x"\n[fleet]\ndevices = 1\n[stream]\nsteps = 5\neps = 1.0\n'
        'w = 1\n[source]\nkind = "synthetic"\nbounds = [-1e308, 1e308]\n'
    )
    with pytest.raises(ScenarioError) as info:
        parse_scenario(toml)
    assert str(info.value).startswith("source.bounds: hi - lo overflows to infinity"), info.value


def test_normalise_refuses_nan_reading():
    with pytest.raises(ParameterError) as info:
        normalise(np.array([0.0, np.nan]), 0.0, 1.0)
    assert info.value.field == "x"


# --- exact sampling on the grid (Mironov's attack) ------------------------------------------


@pytest.mark.parametrize("variant", MECHANISMS)
@pytest.mark.parametrize("eps", [0.5, 4.0, 50.0])
def test_every_output_is_a_cell_midpoint_whatever_the_input(eps, variant):
    """The former inverse CDF computed ``a + (r - q a)/p`` in doubles: the low bits of the
    output depended on the input's (0.1 and its neighbouring double reached different sets
    of doubles). Now every report is ``output_low + (i + 1/2) GRID`` for an integer cell
    ``i`` in ``[0, N)``, for any input bits."""
    sw = SquareWave(eps, variant)
    rng = np.random.default_rng(5)
    inputs = np.concatenate(
        [[0.1, np.nextafter(0.1, 1.0), 1 / 3, math.pi / 4, 5e-324, 1.0], rng.random(2000)]
    )
    y = sw.perturb(np.repeat(inputs, 50), rng)
    cell = (y - sw.output_low) / GRID - 0.5
    n_cells = round((sw.output_high - sw.output_low) / GRID)
    assert np.all(cell == np.rint(cell)) and np.all((cell >= 0) & (cell < n_cells))
    assert np.all(y - sw.output_low == (cell + 0.5) * GRID)  # exact doubles


def test_far_coin_ties_are_resolved_by_the_remaining_bits():
    """A word equal to P(far)'s first 62 bits defers to the exact remainder; below it is far,
    above it is near."""
    from ldpfleet.protocol.sw import _far_coins, _far_expansion

    sw = SquareWave(1.0)
    k = 2 * round(sw.b / GRID)
    m = round((sw.output_high - sw.output_low) / GRID) - k
    chunk, rest = _far_expansion(k, m, sw.ratio)
    assert 0 < rest < 1
    words = np.array([chunk - 1, chunk + 1] + [chunk] * 100_000, dtype=np.int64)
    far = _far_coins(np.random.default_rng(3), words, k, m, sw.ratio)
    assert far[0] and not far[1]
    # the ties follow Bernoulli(rest): |z| <= 4.9 (module docstring's 1e-6 rule)
    ties = int(far[2:].sum())
    r = float(rest)
    assert abs(ties - 100_000 * r) <= Z * math.sqrt(100_000 * r * (1 - r))
