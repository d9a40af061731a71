"""Tests of EM / EMS distribution reconstruction from Square Wave reports (collector/sw_em.py),
against /work/shared/reference/sw-and-cpr.md ("EM / EMS distribution reconstruction").

Statistical tests use FIXED seeds, so they are deterministic. The Monte-Carlo check of the
transition matrix has a derived threshold (false-failure rate ~1e-6 for a random seed); the
EM recovery tolerances are stated next to ``W1_TOL`` with how they were chosen.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from ldpfleet.collector.sw_em import (
    EMResult,
    bucket_counts,
    default_buckets,
    em,
    estimate_distribution,
    input_centres,
    output_edges,
    posterior_means,
    transition_matrix,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.sw import MECHANISMS, SquareWave
from scipy import integrate, stats

N_EM = 20_000


def w1(centres: np.ndarray, pmf: np.ndarray, xs, ws, clip=None) -> float:
    """1-Wasserstein distance between a pmf on ``centres`` and weighted atoms ``xs``; with
    ``clip = (lo, hi)`` both are first pushed through ``clip(., lo, hi)``."""
    xs = np.asarray(xs, dtype=float)
    if clip is not None:
        centres, xs = np.clip(centres, *clip), np.clip(xs, *clip)
    return float(stats.wasserstein_distance(centres, xs, pmf, ws))


def roughness(pmf: np.ndarray) -> float:
    """Sum of squared second differences."""
    return float(np.sum(np.diff(pmf, 2) ** 2))


# --- buckets -------------------------------------------------------------------------------


def test_input_centres():
    np.testing.assert_array_equal(input_centres(4), [0.125, 0.375, 0.625, 0.875])
    c = input_centres(1000)
    assert c.shape == (1000,)
    np.testing.assert_allclose(np.diff(c), 1e-3, rtol=1e-9)
    with pytest.raises(ParameterError) as info:
        input_centres(0)
    assert info.value.field == "d_in"


@pytest.mark.parametrize("variant", MECHANISMS)
def test_output_edges(variant):
    sw = SquareWave(1.5, variant)
    e = output_edges(sw, 10)
    assert e.shape == (11,)
    assert e[0] == sw.output_low and e[-1] == sw.output_high
    np.testing.assert_allclose(np.diff(e), (sw.output_high - sw.output_low) / 10, rtol=1e-12)
    with pytest.raises(ParameterError) as info:
        output_edges(sw, 2.5)
    assert info.value.field == "d_out"


@pytest.mark.parametrize(
    ("n", "d"),
    [
        (0, 16),
        (1, 16),
        (100, 16),
        (511, 16),  # sqrt = 22.6 < 16 * sqrt(2): nearest power of two on a log scale is 16
        (512, 32),  # log2(512) / 2 + 1/2 = 5 exactly: ties go up
        (2047, 32),
        (2048, 64),
        (20_000, 128),
        (65_536, 256),
        (524_287, 512),
        (524_288, 1024),
        (10**6, 1024),
        (10**9, 1024),
    ],
)
def test_default_buckets_rule(n, d):
    assert default_buckets(n) == d


def test_default_buckets_is_monotone_power_of_two():
    ds = [default_buckets(n) for n in range(0, 5000, 7)]
    assert all(a <= b for a, b in itertools.pairwise(ds))
    assert all(d in (16, 32, 64) for d in ds)
    with pytest.raises(ParameterError):
        default_buckets(-1)


# --- transition matrix ---------------------------------------------------------------------

SHAPES = [(16, 16), (32, 64), (64, 32)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("variant", MECHANISMS)
def test_transition_columns_sum_to_one_and_nonnegative(variant, eps, shape):
    d_in, d_out = shape
    m = transition_matrix(SquareWave(eps, variant), d_in, d_out)
    assert m.shape == (d_out, d_in)
    assert np.all(m >= 0)
    assert np.max(np.abs(m.sum(axis=0) - 1.0)) <= 1e-12


@pytest.mark.parametrize("variant", MECHANISMS)
def test_transition_mirror_symmetry(variant):
    """Both variants are symmetric under v -> 1 - v, y -> (low + high) - y."""
    m = transition_matrix(SquareWave(0.7, variant), 24, 40)
    np.testing.assert_allclose(m, m[::-1, ::-1], atol=1e-13)


def test_sw01_inputs_below_b_are_indistinguishable():
    """sw01: every input in [0, b] has the same output law, so the columns of input buckets
    inside [0, b] coincide (and likewise inside [1 - b, 1]); sw separates them."""
    sw01 = SquareWave(0.5, "sw01")  # b = 0.358: buckets 0..4 of 16 lie in [0, b]
    k = int(sw01.b * 16)
    assert k >= 3
    m = transition_matrix(sw01, 16, 20)
    for i in range(1, k):
        np.testing.assert_allclose(m[:, i], m[:, 0], atol=1e-14)
        np.testing.assert_allclose(m[:, -1 - i], m[:, -1], atol=1e-14)
    assert np.max(np.abs(m[:, k + 1] - m[:, 0])) > 1e-3
    m_sw = transition_matrix(SquareWave(0.5, "sw"), 16, 20)
    assert np.max(np.abs(m_sw[:, 1] - m_sw[:, 0])) > 1e-3


def test_transition_cached_and_read_only():
    sw = SquareWave(1.0, "sw")
    a = transition_matrix(sw, 16, 16)
    assert transition_matrix(SquareWave(1.0, "sw"), 16, 16) is a
    assert transition_matrix(sw, 16, 32) is not a
    assert transition_matrix(SquareWave(1.0, "sw01"), 16, 16) is not a
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0, 0] = 1.0
    with pytest.raises(ParameterError) as info:
        transition_matrix(sw, 0, 16)
    assert info.value.field == "d_in"
    with pytest.raises(ParameterError) as info:
        transition_matrix("sw", 16, 16)  # type: ignore[arg-type]
    assert info.value.field == "mechanism"


def quadrature_matrix(mech: SquareWave, d_in: int, d_out: int) -> np.ndarray:
    """M by nested scipy quadrature of ``mech.density``: inner over the output bucket (with the
    window edges as break points), outer over the input bucket (with the break points where a
    window edge crosses an output edge, and b, 1 - b for sw01); the piecewise-linear outer
    integrand is then integrated exactly up to rounding."""
    edges = output_edges(mech, d_out)
    c = np.linspace(0.0, 1.0, d_in + 1)
    b = mech.b
    out = np.empty((d_out, d_in))
    for j in range(d_out):
        a1, a2 = edges[j], edges[j + 1]

        def inner(v, a1=a1, a2=a2):
            # the EM models the input as continuous; the exact sampler rounds it to the
            # 2**-20 grid first (protocol/sw.py), a step function quad cannot integrate: the
            # window here is the unrounded one (it moves by at most 2**-21)
            lo = mech.output_low + float(mech._window_start(np.asarray(v)))
            hi = lo + 2.0 * b
            pts = [t for t in (lo, hi) if a1 < t < a2] or None
            val, _ = integrate.quad(
                lambda x: mech.p if lo <= x <= hi else mech.q,
                a1,
                a2,
                points=pts,
                epsabs=1e-13,
                epsrel=1e-13,
            )
            return val

        for i in range(d_in):
            c1, c2 = c[i], c[i + 1]
            kinks = (a1 - b, a1 + b, a2 - b, a2 + b, b, 1.0 - b)
            pts = sorted(t for t in kinks if c1 < t < c2) or None
            val, _ = integrate.quad(inner, c1, c2, points=pts, epsabs=1e-13, epsrel=1e-13)
            out[j, i] = val / (c2 - c1)
    return out


@pytest.mark.parametrize(("variant", "eps"), [("sw", 1.0), ("sw01", 1.0), ("sw01", 3.0)])
def test_transition_matches_quadrature(variant, eps):
    mech = SquareWave(eps, variant)
    np.testing.assert_allclose(
        transition_matrix(mech, 3, 5), quadrature_matrix(mech, 3, 5), rtol=0, atol=1e-8
    )


# Monte Carlo: for input bucket i draw N_MC inputs v ~ U(B_i), perturb them and histogram the
# outputs. The count in output bucket j is Binomial(N_MC, M[j, i]), so the frequency has
# standard deviation s = sqrt(M (1 - M) / N_MC). The test makes K = 2 variants x D_OUT x D_IN
# comparisons; for a total false-failure rate of 1e-6 (Bonferroni) each two-sided check uses
# z = Phi^-1(1 - 1e-6 / (2 K)) (= 5.84 here) and allows |freq - M| <= z s. Normal approximation:
# every entry has N_MC * M >= 1700 (smallest entry 0.044), far into the CLT regime.
N_MC = 40_000
D_IN_MC, D_OUT_MC = 8, 12
K_MC = 2 * D_IN_MC * D_OUT_MC
Z_MC = float(stats.norm.isf(1e-6 / (2 * K_MC)))
assert 5.8 < Z_MC < 5.9


@pytest.mark.parametrize("variant", MECHANISMS)
def test_transition_matches_monte_carlo(variant):
    mech = SquareWave(1.0, variant)
    m = transition_matrix(mech, D_IN_MC, D_OUT_MC)
    assert m.min() * N_MC >= 1700
    rng = np.random.default_rng(31337)
    edges = output_edges(mech, D_OUT_MC)
    for i in range(D_IN_MC):
        v = (i + rng.random(N_MC)) / D_IN_MC
        y = mech.perturb(v, rng)
        freq = np.histogram(y, bins=edges)[0] / N_MC
        sd = np.sqrt(m[:, i] * (1 - m[:, i]) / N_MC)
        assert np.all(np.abs(freq - m[:, i]) <= Z_MC * sd), (i, freq, m[:, i])


# --- bucket_counts -------------------------------------------------------------------------


@pytest.mark.parametrize("variant", MECHANISMS)
def test_bucket_counts_edges(variant):
    mech = SquareWave(2.0, variant)
    e = output_edges(mech, 8)
    counts = bucket_counts(e, mech, 8)  # every edge once: edge k -> bucket k, top -> last
    assert counts.shape == (1, 8) and counts.dtype == float
    np.testing.assert_array_equal(counts[0], [1, 1, 1, 1, 1, 1, 1, 2])
    below = np.nextafter(e[1:], -np.inf)  # just below edge k+1 -> bucket k
    np.testing.assert_array_equal(bucket_counts(below, mech, 8)[0], np.ones(8))
    mids = (e[:-1] + e[1:]) / 2
    y = np.repeat(mids, np.arange(1, 9))
    np.testing.assert_array_equal(bucket_counts(y, mech, 8)[0], np.arange(1, 9))
    assert bucket_counts(np.array([]), mech, 8).sum() == 0


def test_bucket_counts_groups_and_consistency_with_histogram():
    mech = SquareWave(1.0, "sw")
    rng = np.random.default_rng(5)
    y = mech.perturb(rng.random(5000), rng)
    groups = rng.integers(0, 7, size=y.size)
    counts = bucket_counts(y, mech, 20, groups, 7)
    assert counts.shape == (7, 20)
    edges = output_edges(mech, 20)
    for g in range(7):
        np.testing.assert_array_equal(counts[g], np.histogram(y[groups == g], bins=edges)[0])
    np.testing.assert_array_equal(counts.sum(axis=0), bucket_counts(y, mech, 20)[0])
    # an unused group gives a zero row
    assert bucket_counts(y, mech, 20, np.zeros(y.size, dtype=int), 3)[1:].sum() == 0


@pytest.mark.parametrize(
    ("bad", "field"),
    [(np.nan, "y[2]"), (np.inf, "y[2]"), (-np.inf, "y[2]"), (-0.3, "y[2]"), (1.3, "y[2]")],
)
def test_bucket_counts_rejects_bad_reports(bad, field):
    mech = SquareWave(1.0, "sw")  # domain [-0.256, 1.256]
    y = np.array([0.0, 0.5, bad, 0.2])
    with pytest.raises(ValueError) as info:
        bucket_counts(y, mech, 8)
    assert isinstance(info.value, ParameterError) and info.value.field == field


def test_bucket_counts_sw01_domain_is_unit_interval():
    mech = SquareWave(1.0, "sw01")
    with pytest.raises(ParameterError) as info:
        bucket_counts(np.array([0.5, -1e-9]), mech, 8)
    assert info.value.field == "y[1]"


def test_bucket_counts_rejects_bad_groups():
    mech = SquareWave(1.0, "sw")
    y = np.array([0.1, 0.2, 0.3])
    with pytest.raises(ParameterError) as info:
        bucket_counts(y, mech, 4, np.array([0, 3, 1]), 3)
    assert info.value.field == "groups[1]"
    with pytest.raises(ParameterError) as info:
        bucket_counts(y, mech, 4, np.array([0, -1, 1]), 3)
    assert info.value.field == "groups[1]"
    with pytest.raises(ParameterError) as info:
        bucket_counts(y, mech, 4, np.array([0, 1]), 3)
    assert info.value.field == "groups"
    with pytest.raises(ParameterError) as info:
        bucket_counts(y, mech, 4, np.array([0.0, 1.0, 0.5]), 3)
    assert info.value.field == "groups"
    with pytest.raises(ParameterError) as info:
        bucket_counts(y, mech, 4, None, 2)
    assert info.value.field == "n_groups"


# --- EM / EMS: the update rules ------------------------------------------------------------


def test_one_em_step_matches_formula():
    rng = np.random.default_rng(1)
    m = rng.random((6, 4))
    m /= m.sum(axis=0)
    n = np.array([3.0, 0.0, 7.0, 1.0, 2.0, 5.0])
    theta0 = np.array([0.1, 0.2, 0.3, 0.4])
    res = em(n, m, init=theta0, max_iter=1, tol=0.0)
    expected = theta0 * (m.T @ (n / (m @ theta0))) / n.sum()
    np.testing.assert_allclose(res.theta[0], expected / expected.sum(), rtol=1e-13)
    assert res.theta.shape == (1, 4) and res.iterations.tolist() == [1]
    assert res.log_likelihood[0] == pytest.approx(n @ np.log(m @ res.theta[0]), rel=1e-13)


def test_smoothing_kernel_interior_and_both_ends():
    """With M = I one EM step from uniform gives theta = n / N; EMS then applies S once.
    S rows: (2/3, 1/3) at BOTH ends, (1/4, 1/2, 1/4) inside."""
    eye = np.eye(5)
    left = em(np.array([1.0, 0, 0, 0, 0]), eye, smoothing=True, max_iter=1)
    np.testing.assert_allclose(left.theta[0], [8 / 11, 3 / 11, 0, 0, 0], rtol=1e-14)
    right = em(np.array([0, 0, 0, 0, 1.0]), eye, smoothing=True, max_iter=1)
    np.testing.assert_allclose(right.theta[0], [0, 0, 0, 3 / 11, 8 / 11], rtol=1e-14)
    mid = em(np.array([0, 0, 2.0, 0, 0]), eye, smoothing=True, max_iter=1)
    np.testing.assert_allclose(mid.theta[0], [0, 0.25, 0.5, 0.25, 0], rtol=1e-14)
    plain = em(np.array([1.0, 0, 0, 0, 0]), eye, smoothing=False, max_iter=1)
    np.testing.assert_allclose(plain.theta[0], [1, 0, 0, 0, 0], atol=1e-15)


def test_plain_em_log_likelihood_never_decreases():
    mech = SquareWave(1.0, "sw")
    m = transition_matrix(mech, 32, 32)
    rng = np.random.default_rng(2)
    counts = bucket_counts(mech.perturb(rng.beta(2, 5, 3000), rng), mech, 32)
    lls = [em(counts, m, max_iter=k, tol=0.0).log_likelihood[0] for k in range(0, 25)]
    assert np.all(np.diff(lls) >= -1e-9)
    assert lls[-1] > lls[0] + 10


@pytest.mark.parametrize("smoothing", [False, True])
def test_stopping_rule(smoothing):
    """A row stops at the first iteration whose log-likelihood gain is below tol."""
    mech = SquareWave(2.0, "sw01")
    m = transition_matrix(mech, 16, 16)
    rng = np.random.default_rng(3)
    counts = bucket_counts(mech.perturb(rng.beta(2, 5, 2000), rng), mech, 16)
    tol = 0.05
    full = em(counts, m, smoothing=smoothing, tol=tol)
    r = int(full.iterations[0])
    assert full.converged[0] and 3 <= r < 1000
    ll = [em(counts, m, smoothing=smoothing, tol=0.0, max_iter=k) for k in (r - 2, r - 1, r)]
    assert ll[2].log_likelihood[0] - ll[1].log_likelihood[0] < tol
    assert ll[1].log_likelihood[0] - ll[0].log_likelihood[0] >= tol
    np.testing.assert_array_equal(ll[2].theta, full.theta)
    capped = em(counts, m, smoothing=smoothing, tol=tol, max_iter=r - 1)
    assert not capped.converged[0] and capped.iterations[0] == r - 1


def test_ems_stops_when_smoothing_lowers_the_likelihood():
    """The smoothing step can lower the log-likelihood; a negative gain is "less than tol", so
    the row stops there (it does not wait for |gain| < tol)."""
    mech = SquareWave(4.0, "sw")
    m = transition_matrix(mech, 16, 16)
    rng = np.random.default_rng(3)
    counts = bucket_counts(mech.perturb(np.full(2000, 0.3), rng), mech, 16)
    res = em(counts, m, smoothing=True, tol=1e-3)
    k = int(res.iterations[0])
    before = em(counts, m, smoothing=True, tol=0.0, max_iter=k - 1)
    assert res.converged[0] and before.iterations[0] == k - 1
    assert res.log_likelihood[0] - before.log_likelihood[0] < -5e-3


def test_zero_count_rows_are_uniform():
    m = transition_matrix(SquareWave(1.0, "sw"), 8, 8)
    counts = np.zeros((3, 8))
    counts[1] = np.arange(8) + 1.0
    res = em(counts, m, init=np.linspace(1, 2, 8), smoothing=True)
    for g in (0, 2):
        np.testing.assert_array_equal(res.theta[g], np.full(8, 1 / 8))
        assert res.iterations[g] == 0 and res.converged[g] and res.log_likelihood[g] == 0
    assert res.iterations[1] > 0
    assert np.all(np.isfinite(res.theta))


@pytest.mark.parametrize("smoothing", [False, True])
def test_batched_rows_equal_rows_run_alone(smoothing):
    """100 rows x 32 buckets at once (the CPR phase-bin shape) == each row alone; the rows
    converge after different numbers of iterations, so frozen rows must stay frozen."""
    mech = SquareWave(1.0, "sw")
    m = transition_matrix(mech, 32, 32)
    rng = np.random.default_rng(4)
    g = 100
    groups = np.repeat(np.arange(g), 400)
    centres = rng.random(g)
    v = np.clip(centres[groups] + 0.1 * rng.standard_normal(groups.size), 0, 1)
    counts = bucket_counts(mech.perturb(v, rng), mech, 32, groups, g)
    counts[17] = 0.0
    batch = em(counts, m, smoothing=smoothing, max_iter=300)
    assert isinstance(batch, EMResult)
    assert batch.theta.shape == (g, 32) and batch.iterations.shape == (g,)
    assert len(np.unique(batch.iterations)) >= 5
    np.testing.assert_allclose(batch.theta.sum(axis=1), 1.0, rtol=1e-12)
    for k in range(g):
        alone = em(counts[k], m, smoothing=smoothing, max_iter=300)
        np.testing.assert_allclose(batch.theta[k], alone.theta[0], rtol=1e-9, atol=1e-15)
        assert batch.iterations[k] == alone.iterations[0]
        assert batch.converged[k] == alone.converged[0]
        assert batch.log_likelihood[k] == pytest.approx(alone.log_likelihood[0], rel=1e-12)


def test_em_guards_degenerate_inputs():
    """A zero row in M (an impossible output bucket) and zero init entries: no NaN and no
    warning (warnings are errors under this pytest config)."""
    m = np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 1.0], [0.0, 0.0]])
    res = em(np.array([1.0, 2.0, 3.0, 4.0]), m, init=np.array([1.0, 0.0]))
    assert np.all(np.isfinite(res.theta)) and np.isfinite(res.log_likelihood[0])
    np.testing.assert_allclose(res.theta.sum(), 1.0)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"counts": np.array([1.0, -1.0, 0, 0])}, "counts[0, 1]"),
        ({"counts": np.array([1.0, np.nan, 0, 0])}, "counts[0, 1]"),
        ({"counts": np.ones(5)}, "counts"),
        ({"init": np.ones(3)}, "init"),
        ({"init": np.zeros(4)}, "init[0]"),
        ({"tol": -1.0}, "tol"),
        ({"tol": math.nan}, "tol"),
        ({"max_iter": -1}, "max_iter"),
        ({"max_iter": 2.0}, "max_iter"),
    ],
)
def test_em_rejects_bad_arguments(kwargs, field):
    args = {"counts": np.ones(4), "M": np.full((4, 4), 0.25)} | kwargs
    counts, m = args.pop("counts"), args.pop("M")
    with pytest.raises(ParameterError) as info:
        em(counts, m, **args)
    assert info.value.field == field


# --- EM / EMS: recovery --------------------------------------------------------------------

# 1-Wasserstein tolerances for n = 20 000 reports and d_in = d_out = default_buckets(n) = 128.
# Chosen as ~1.3-2x the LARGEST W1 observed over 30 seeds (0..29) for each setting, both
# variants (worst seen: Beta EM 0.021 / EMS 0.014 at eps=1, 0.011 / 0.0072 at eps=2; point
# mass EM 0.016 / EMS 0.046 at eps=1, 0.0075 / 0.026 at eps=2). For scale: W1 between the
# uniform pmf and Beta(2,5) is ~0.21, and bucket centres alone allow 1/(4*128) = 0.002. EMS is
# worse than EM on a point mass by construction: its smoothing spreads every spike.
W1_TOL = {
    ("beta", 1.0, False): 0.03,
    ("beta", 1.0, True): 0.02,
    ("beta", 2.0, False): 0.015,
    ("beta", 2.0, True): 0.01,
    ("point", 1.0, False): 0.025,
    ("point", 1.0, True): 0.06,
    ("point", 2.0, False): 0.012,
    ("point", 2.0, True): 0.035,
}
# EMS must beat plain EM on the Beta case up to this factor: over 30 seeds the ratio
# W1(EMS) / W1(EM) was <= 0.92 except sw01 at eps=1 (2 seeds up to 1.05).
EMS_VS_EM = 1.10
BETA_GRID = (np.arange(20_000) + 0.5) / 20_000
BETA_W = stats.beta(2, 5).pdf(BETA_GRID)


def identifiable(mech: SquareWave):
    """sw01 maps all of [0, b] (and [1 - b, 1]) to one output law, so only the law of
    clip(v, b, 1 - b) can be recovered: compare after that clip. sw identifies everything."""
    return (mech.b, 1.0 - mech.b) if mech.variant == "sw01" else None


@pytest.mark.parametrize("eps", [1.0, 2.0])
@pytest.mark.parametrize("variant", MECHANISMS)
def test_em_recovers_point_mass(variant, eps):
    mech = SquareWave(eps, variant)
    assert mech.b < 0.3 < 1 - mech.b  # 0.3 is identifiable for sw01 too
    rng = np.random.default_rng(1000 + int(eps))
    y = mech.perturb(np.full(N_EM, 0.3), rng)
    for smoothing in (False, True):
        centres, pmf = estimate_distribution(y, mech, smoothing=smoothing)
        assert centres.shape == pmf.shape == (128,)
        assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
        dist = w1(centres, pmf, [0.3], [1.0])
        assert dist <= W1_TOL[("point", eps, smoothing)], (smoothing, dist)


@pytest.mark.parametrize("eps", [1.0, 2.0])
@pytest.mark.parametrize("variant", MECHANISMS)
def test_em_and_ems_recover_beta(variant, eps):
    mech = SquareWave(eps, variant)
    rng = np.random.default_rng(2000 + int(eps))
    y = mech.perturb(rng.beta(2, 5, N_EM), rng)
    clip = identifiable(mech)
    got = {}
    for smoothing in (False, True):
        centres, pmf = estimate_distribution(y, mech, smoothing=smoothing)
        got[smoothing] = (w1(centres, pmf, BETA_GRID, BETA_W, clip), roughness(pmf))
        assert got[smoothing][0] <= W1_TOL[("beta", eps, smoothing)], (smoothing, got)
    (w_em, r_em), (w_ems, r_ems) = got[False], got[True]
    assert w_ems <= EMS_VS_EM * w_em, got
    # EMS is far smoother: over 30 seeds its roughness was < 3e-4 x plain EM's
    assert r_ems <= 0.01 * r_em, got


def test_uniform_pmf_is_far_from_beta():
    """Scale check for the tolerances above: a non-estimate fails every Beta tolerance."""
    c = input_centres(128)
    assert w1(c, np.full(128, 1 / 128), BETA_GRID, BETA_W) > 0.15


def test_estimate_distribution_matches_em_pipeline():
    mech = SquareWave(1.5, "sw01")
    rng = np.random.default_rng(9)
    y = mech.perturb(rng.random(3000), rng)
    centres, pmf = estimate_distribution(y, mech, smoothing=False, d_out=48)
    d = default_buckets(3000)
    assert d == 64
    np.testing.assert_array_equal(centres, input_centres(d))
    ref = em(bucket_counts(y, mech, 48), transition_matrix(mech, d, 48), smoothing=False)
    np.testing.assert_array_equal(pmf, ref.theta[0])
    # d_out defaults to d_in
    _, pmf_default = estimate_distribution(y, mech, smoothing=False)
    square = em(bucket_counts(y, mech, d), transition_matrix(mech, d, d), smoothing=False)
    np.testing.assert_array_equal(pmf_default, square.theta[0])


# --- posterior means -----------------------------------------------------------------------


@pytest.mark.parametrize("variant", MECHANISMS)
@pytest.mark.parametrize(("alpha", "beta"), [(2, 5), (5, 5)])
def test_posterior_means(variant, alpha, beta):
    """For a unimodal prior E[v | y] lies in [0, 1], averages to the prior mean (tower rule)
    and increases across the central output buckets. It is NOT monotone over the whole
    output range: the SW density has a flat floor q, so a report far from the prior's bulk
    carries almost no information and its posterior mean shrinks back towards the prior
    mean (both end segments move towards it)."""
    mech = SquareWave(2.0, variant)
    d = 32
    c = input_centres(d)
    theta = stats.beta(alpha, beta).pdf(c)
    theta /= theta.sum()
    m = transition_matrix(mech, d, d)
    pm = posterior_means(theta, m)
    assert pm.shape == (1, d)
    pm = pm[0]
    assert np.all((pm >= 0) & (pm <= 1))
    prior_mean = float(theta @ c)
    assert float((m @ theta) @ pm) == pytest.approx(prior_mean, abs=1e-13)
    lo, hi = int(np.argmin(pm)), int(np.argmax(pm))
    assert np.all(np.diff(pm[lo : hi + 1]) > 0)
    e = output_edges(mech, d)
    yc = (e[:-1] + e[1:]) / 2
    q25, q75 = stats.beta(alpha, beta).ppf([0.25, 0.75])
    assert yc[lo] < q25 and yc[hi] > q75
    assert pm[0] > pm[lo] and pm[-1] < pm[hi]  # shrinkage at the ends


def test_posterior_means_batch_and_prior_fallback():
    m = np.array([[0.9, 0.1, 0.0], [0.1, 0.9, 0.0], [0.0, 0.0, 1.0]])
    theta = np.array([[0.2, 0.8, 0.0], [0.0, 0.0, 1.0]])
    pm = posterior_means(theta, m)
    assert pm.shape == (2, 3)
    v = input_centres(3)
    post0 = (0.9 * 0.2 * v[0] + 0.1 * 0.8 * v[1]) / (0.9 * 0.2 + 0.1 * 0.8)
    post1 = (0.1 * 0.2 * v[0] + 0.9 * 0.8 * v[1]) / (0.1 * 0.2 + 0.9 * 0.8)
    # row 0: output bucket 2 is impossible under the prior (denominator 0) -> prior mean
    np.testing.assert_allclose(pm[0], [post0, post1, theta[0] @ v], rtol=1e-14)
    # row 1: buckets 0 and 1 impossible -> prior mean v[2]; bucket 2 -> v[2]
    np.testing.assert_allclose(pm[1], [v[2], v[2], v[2]], rtol=1e-14)
    # a 1-D theta is one row
    np.testing.assert_allclose(posterior_means(theta[0], m), pm[:1], rtol=1e-14)
