"""Tests of collector/kde.py, collector/baselines.py and collector/metrics.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.collector.baselines import (
    laplace_perturb,
    laplace_smoothed,
    lbd,
    moving_average,
    sw_filter,
    sw_moving,
    sw_raw,
)
from ldpfleet.collector.kde import (
    H_FLOOR,
    kde_density,
    kde_mode,
    silverman_bandwidth,
    weighted_quantile,
)
from ldpfleet.collector.metrics import cosine_distance, period_correct
from ldpfleet.protocol.errors import BudgetExhausted, ParameterError
from ldpfleet.protocol.ledger import WindowAccount
from ldpfleet.protocol.sw import SquareWave
from scipy.special import ndtr

# --- KDE: bandwidth and weighted quantiles -------------------------------------------------


def test_silverman_matches_hand_computation():
    # x = 0..4: mean 2, sum of squares 10, ddof=1 variance 10/4 -> sigma = sqrt(2.5).
    # Hazen knots p_i = (i - 1/2)/5 = .1 .3 .5 .7 .9 -> Q(.25) = 0 + (.15/.2) * 1 = 0.75,
    # Q(.75) = 3 + (.05/.2) * 1 = 3.25, IQR = 2.5, IQR/1.34 = 1.866 > sigma = 1.581.
    x = np.array([3.0, 0.0, 4.0, 1.0, 2.0])
    expected = 0.9 * math.sqrt(2.5) * 5 ** (-1 / 5)
    assert silverman_bandwidth(x) == pytest.approx(expected, rel=1e-12)
    assert weighted_quantile(x, 0.25) == pytest.approx(0.75)
    assert weighted_quantile(x, 0.75) == pytest.approx(3.25)


def test_silverman_textbook_formula_iqr_branch_and_numpy_agreement():
    rng = np.random.default_rng(11)
    # heavy tails: IQR/1.34 < sigma, so the IQR branch is the one exercised
    x = rng.standard_t(2, size=400)
    sigma = np.std(x, ddof=1)
    iqr = np.subtract(*np.percentile(x, [75, 25], method="hazen"))
    assert iqr / 1.34 < sigma
    expected = 0.9 * min(sigma, iqr / 1.34) * 400 ** (-0.2)
    assert silverman_bandwidth(x) == pytest.approx(expected, rel=1e-12)
    # and the sigma branch on normal data
    y = rng.normal(size=300)
    sigma = np.std(y, ddof=1)
    iqr = np.subtract(*np.percentile(y, [75, 25], method="hazen"))
    expected = 0.9 * min(sigma, iqr / 1.34) * 300 ** (-0.2)
    assert silverman_bandwidth(y) == pytest.approx(expected, rel=1e-12)


def test_weighted_quantile_simple_case_and_rules():
    # samples 0, 1 with weights 1, 3: S = 1, 4; knots p = (1 - .5)/4 = .125, (4 - 1.5)/4 = .625
    z, w = np.array([1.0, 0.0]), np.array([3.0, 1.0])
    assert weighted_quantile(z, 0.5, w) == pytest.approx(0.0 + (0.5 - 0.125) / 0.5)  # 0.75
    assert weighted_quantile(z, 0.125, w) == pytest.approx(0.0)
    assert weighted_quantile(z, 0.1, w) == 0.0  # below the first knot
    assert weighted_quantile(z, 0.9, w) == 1.0  # above the last knot
    # zero-weight samples are ignored entirely
    z3, w3 = np.array([0.0, 0.4, 1.0]), np.array([1.0, 0.0, 3.0])
    assert weighted_quantile(z3, 0.5, w3) == pytest.approx(0.75)
    # equal weights: Hyndman-Fan type 5 (numpy "hazen")
    x = np.random.default_rng(3).random(37)
    for q in (0.0, 0.1, 0.25, 0.5, 0.75, 0.97, 1.0):
        assert weighted_quantile(x, q, np.full(37, 2.5)) == pytest.approx(
            np.percentile(x, 100 * q, method="hazen"), abs=1e-14
        )


def test_silverman_weighted_uses_kish_n_eff_and_weighted_spread():
    z = np.array([0.1, 0.2, 0.4, 0.8, 0.9])
    w = np.array([1.0, 2.0, 3.0, 1.0, 0.5])
    v1, v2 = w.sum(), (w * w).sum()
    mu = (w * z).sum() / v1
    sigma = math.sqrt((w * (z - mu) ** 2).sum() / (v1 - v2 / v1))
    iqr = weighted_quantile(z, 0.75, w) - weighted_quantile(z, 0.25, w)
    expected = 0.9 * min(sigma, iqr / 1.34) * (v1 * v1 / v2) ** (-0.2)
    assert silverman_bandwidth(z, w) == pytest.approx(expected, rel=1e-12)
    # scaling all weights changes nothing
    assert silverman_bandwidth(z, 7 * w) == pytest.approx(expected, rel=1e-12)


def test_silverman_degenerate_cases_and_vectorisation():
    # IQR 0 but sigma > 0 -> sigma is used
    z = np.array([0.5] * 8 + [0.9])
    sigma = np.std(z, ddof=1)
    assert silverman_bandwidth(z) == pytest.approx(0.9 * sigma * 9 ** (-0.2), rel=1e-12)
    assert silverman_bandwidth(np.full(6, 0.3)) == H_FLOOR  # all equal
    assert silverman_bandwidth(np.array([0.3])) == H_FLOOR  # one sample
    assert math.isnan(silverman_bandwidth(np.array([0.3, 0.4]), np.zeros(2)))
    rng = np.random.default_rng(5)
    rows = rng.random((4, 30))
    wts = rng.random((4, 30))
    got = silverman_bandwidth(rows, wts)
    assert got.shape == (4,)
    for i in range(4):
        assert got[i] == pytest.approx(silverman_bandwidth(rows[i], wts[i]), rel=1e-12)
    assert np.allclose(silverman_bandwidth(rows.T, wts.T, axis=0), got, rtol=1e-12)
    with pytest.raises(ParameterError):
        silverman_bandwidth(np.array([0.1, np.nan]))
    with pytest.raises(ParameterError):
        silverman_bandwidth(np.array([0.1, 0.2]), np.array([1.0, -1.0]))


# --- KDE: mode and density --------------------------------------------------------------------


def _mixture(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    first = rng.random(n) < 0.7
    return np.where(first, rng.normal(0.3, 0.05, n), rng.normal(0.75, 0.05, n))


def test_kde_mode_of_a_known_mixture():
    # 0.7 N(0.3, .05^2) + 0.3 N(0.75, .05^2), n = 5000. Silverman gives h ~ 0.035, so the
    # smoothed major component is N(0.3, 0.061^2), whose mode is 0.3; the minor one is
    # 0.45 / 0.061 ~ 7 sd away (its pull on the mode is ~ e^-27). The sampling sd of the KDE
    # mode (delta method: sd(f'(x)) / |f''(x)| with Var f' ~ f R(K') / (n h^3)) is ~ 0.0016,
    # so 0.01 is ~6 sd. A mean-based estimate would give 0.435, the minor peak 0.75.
    z = _mixture(5000, seed=1)
    h = silverman_bandwidth(z)
    assert 0.03 < h < 0.04
    assert abs(float(kde_mode(z)) - 0.3) < 0.01
    assert abs(float(kde_mode(z, mirror=False)) - 0.3) < 0.01  # far from the boundaries


def test_kde_mode_refines_between_grid_points():
    # One cluster at 0.4123 (not a grid point of a 11-point grid): the log-parabola refinement
    # is exact for a single Gaussian bump, the grid alone would give 0.4.
    z = np.array([0.4123])
    assert float(kde_mode(z, bandwidth=0.05, grid=11)) == pytest.approx(0.4123, abs=1e-9)
    assert float(kde_mode(z, bandwidth=0.05, grid=11, mirror=False)) == pytest.approx(
        0.4123, abs=1e-9
    )


def test_kde_weights_equal_repeated_samples():
    rng = np.random.default_rng(2)
    z = rng.random(25)
    counts = rng.integers(1, 5, size=25)
    repeated = np.repeat(z, counts)
    pts = np.linspace(0.0, 1.0, 41)
    for mirror in (True, False):
        # with a fixed bandwidth (Silverman's n_eff treats weights as reliability weights,
        # so the automatic bandwidths differ on purpose)
        a = kde_mode(z, counts.astype(float), bandwidth=0.07, mirror=mirror)
        b = kde_mode(repeated, bandwidth=0.07, mirror=mirror)
        assert float(a) == pytest.approx(float(b), abs=1e-12)
        da = kde_density(z, counts, bandwidth=0.07, points=pts, mirror=mirror)
        db = kde_density(repeated, bandwidth=0.07, points=pts, mirror=mirror)
        assert np.allclose(da, db, rtol=1e-12)
    # and the weights matter: uniform weights give another answer
    assert float(kde_mode(z, bandwidth=0.07)) != pytest.approx(
        float(kde_mode(z, counts, bandwidth=0.07)), abs=1e-6
    )


def test_mirror_padding_at_zero_and_one():
    rng = np.random.default_rng(4)
    z = np.abs(rng.normal(0.0, 0.05, 2000))
    z = z[z <= 1.0]
    assert float(kde_mode(z)) < 0.01
    true_at_0 = 2.0 / (0.05 * math.sqrt(2.0 * math.pi))  # half-normal density at 0: 15.96
    mirrored = float(kde_density(z, points=np.array([0.0]))[0])
    plain = float(kde_density(z, points=np.array([0.0]), mirror=False)[0])
    assert mirrored == pytest.approx(true_at_0, rel=0.15)
    assert plain < 0.6 * mirrored  # plain KDE loses about half its mass at the boundary
    assert plain == pytest.approx(0.5 * mirrored, rel=0.05)
    # the same at 1, which exercises the reflection 2 - z
    top = 1.0 - z
    assert float(kde_mode(top)) > 0.99
    at_1 = float(kde_density(top, points=np.array([1.0]))[0])
    assert at_1 == pytest.approx(mirrored, rel=1e-9)
    assert float(kde_density(top, points=np.array([1.0]), mirror=False)[0]) < 0.6 * at_1


def test_kde_density_integrates_to_one_with_mirror():
    x = np.linspace(0.0, 1.0, 5001)
    rng = np.random.default_rng(6)
    for z in (np.abs(rng.normal(0, 0.05, 300)).clip(0, 1), rng.random(200), _mixture(500, 7)):
        d = kde_density(z, points=x)
        assert np.trapezoid(d, x) == pytest.approx(1.0, abs=1e-6)
        plain = kde_density(z, points=x, mirror=False)
        assert np.trapezoid(plain, x) <= 1.0 + 1e-9
    # boundary-heavy data: the plain KDE leaks mass out of [0, 1], exactly sum Phi(-z/h) / n
    z = np.abs(rng.normal(0, 0.05, 300)).clip(0, 1)
    leak = np.mean(ndtr(-z / silverman_bandwidth(z)))
    assert leak > 0.03
    inside = np.trapezoid(kde_density(z, points=x, mirror=False), x)
    assert inside == pytest.approx(1.0 - leak, abs=1e-5)  # trapezoid error ~3e-6
    # mirrored density is 0 outside [0, 1]
    assert np.all(kde_density(z, points=np.array([-0.01, 1.01])) == 0.0)


def test_kde_mode_vectorised_rows_equal_row_by_row():
    rng = np.random.default_rng(8)
    rows = rng.beta(2, 5, size=(9, 40))
    wts = rng.random((9, 40))
    wts[3] = 0.0  # zero total weight -> NaN
    wts[5, 20:] = 0.0  # ragged row: padding with weight 0
    got = kde_mode(rows, wts)
    assert got.shape == (9,)
    assert math.isnan(got[3])
    for i in (0, 1, 2, 4, 5, 6, 7, 8):
        assert got[i] == pytest.approx(float(kde_mode(rows[i], wts[i])), abs=1e-12)
    assert got[5] == pytest.approx(float(kde_mode(rows[5, :20], wts[5, :20])), abs=1e-12)
    # explicit per-row bandwidths, 3-d input, and row chunking
    h = np.linspace(0.02, 0.1, 9)
    got_h = kde_mode(rows, bandwidth=h)
    assert all(
        got_h[i] == pytest.approx(float(kde_mode(rows[i], bandwidth=h[i]))) for i in range(9)
    )
    assert kde_mode(rows.reshape(3, 3, 40)).shape == (3, 3)
    big = rng.random((300, 30))
    import ldpfleet.collector.kde as kde_module

    saved = kde_module._CHUNK_ELEMENTS
    try:
        kde_module._CHUNK_ELEMENTS = 50_000  # forces many chunks
        chunked = kde_mode(big)
    finally:
        kde_module._CHUNK_ELEMENTS = saved
    assert np.array_equal(chunked, kde_mode(big))
    dens = kde_density(rows, points=np.linspace(0, 1, 5))
    assert dens.shape == (9, 5)
    assert np.allclose(dens[0], kde_density(rows[0], points=np.linspace(0, 1, 5)))


def test_kde_rejects_bad_parameters():
    z = np.array([0.2, 0.3])
    with pytest.raises(ParameterError):
        kde_mode(z, grid=1)
    with pytest.raises(ParameterError):
        kde_mode(z, bandwidth=0.0)
    with pytest.raises(ParameterError):
        kde_mode(z, bandwidth=np.array([0.1, 0.2]))  # one row, two bandwidths
    with pytest.raises(ParameterError):
        kde_mode(np.array([0.2, np.inf]))


# --- baselines ---------------------------------------------------------------------------------


def _naive_moving_average(x: np.ndarray, k: int) -> np.ndarray:
    r = (k + 1) // 2 if k % 2 == 0 else k // 2
    out = []
    for i in range(len(x)):
        window = [x[j] for j in range(i - r, i + r + 1) if 0 <= j < len(x)]
        out.append(sum(window) / len(window))
    return np.array(out)


def test_moving_average_equals_naive_loop():
    rng = np.random.default_rng(9)
    for n in (1, 2, 5, 17, 100):
        x = rng.normal(size=n)
        for k in (1, 2, 3, 4, 7, 8, 31, 250):
            assert np.allclose(moving_average(x, k), _naive_moving_average(x, k), atol=1e-12)
    assert np.allclose(moving_average(np.full(10, 0.3), 5), 0.3, rtol=1e-15, atol=0)
    assert moving_average(np.array([]), 3).size == 0
    with pytest.raises(ParameterError):
        moving_average(np.ones(4), 0)


def test_laplace_perturb_scale():
    # Laplace(b): sd sigma = sqrt(2) b, fourth central moment 24 b^4, so
    # Var(s^2) ~ (24 b^4 - 4 b^4) / n = 20 b^4 / n -> sd(s^2) / sigma^2 = sqrt(5 / n) and by the
    # delta method sd(s) / sigma = sqrt(5 / n) / 2 = sqrt(1.25 / n). With n = 200_000 that is
    # 0.0025; a two-sided false-failure rate of 1e-6 needs z = 4.89, so rel tol 0.0123 (0.0125
    # used). A scale of 1/eps0 off by a factor sqrt(2) or 2 is far outside it.
    n = 200_000
    for eps0 in (0.5, 2.0):
        rng = np.random.default_rng(10)
        v = np.full(n, 0.4)
        noise = laplace_perturb(v, eps0, rng) - v
        assert np.std(noise, ddof=1) == pytest.approx(math.sqrt(2.0) / eps0, rel=0.0125)
        assert abs(np.mean(noise)) < 5 * math.sqrt(2.0) / eps0 / math.sqrt(n)  # unbiased
    smoothed = laplace_smoothed(laplace_perturb(np.full(50, 0.5), 0.2, rng), 5)
    assert smoothed.min() >= 0.0
    assert smoothed.max() <= 1.0
    for bad in (0.0, -1.0, math.inf, math.nan, True):
        with pytest.raises(ValueError):
            laplace_perturb(v[:3], bad, rng)
    with pytest.raises(ValueError):
        laplace_perturb(np.array([0.5, 1.5]), 1.0, rng)


@pytest.mark.parametrize("variant", ["sw", "sw01"])
def test_sw_baselines_in_unit_interval_and_smoothing_helps(variant):
    n = 2000
    t = np.arange(n)
    v = 0.5 + 0.3 * np.sin(2 * np.pi * t / 200)
    mech = SquareWave(1.0, variant)
    y = mech.perturb(v, np.random.default_rng(12))
    raw = sw_raw(y, mech)
    moving = sw_moving(y, mech, 15)
    filtered = sw_filter(y, mech, cutoff=0.05)
    for out in (raw, moving, filtered):
        assert out.shape == v.shape
        assert out.min() >= 0.0
        assert out.max() <= 1.0
    assert raw.min() == 0.0  # clipping active: unbiased SW estimates leave [0, 1] at eps 1
    assert raw.max() == 1.0
    mse = {name: np.mean((out - v) ** 2) for name, out in [("raw", raw), ("mov", moving)]}
    mse["filt"] = np.mean((filtered - v) ** 2)
    assert mse["mov"] < 0.3 * mse["raw"]
    assert mse["filt"] < 0.3 * mse["raw"]


def test_sw_filter_is_zero_phase_lowpass_with_unit_dc_gain():
    mech = SquareWave(50.0)  # nearly noiseless reports: v_hat ~ v
    # estimates of a constant stay that constant (unit DC gain, odd extension)
    const = np.full(300, 0.5 * (mech.output_low + mech.output_high))
    assert np.allclose(sw_filter(const, mech), mech.estimate(const[0]), atol=1e-9)
    # a slow sine passes without delay (zero phase), a fast one is removed
    t = np.arange(400)
    slow = 0.5 + 0.3 * np.sin(2 * np.pi * t / 100)  # 0.02 x Nyquist
    fast = 0.2 * np.sin(2 * np.pi * t / 3)  # 0.67 x Nyquist
    scale = 2 * mech.b * (mech.p - mech.q)
    y = (slow + fast) * scale + mech.q * (1 + 2 * mech.b) / 2  # estimate(y) == slow + fast
    out = sw_filter(y, mech, cutoff=0.1, order=4)
    assert np.max(np.abs(out[20:-20] - slow[20:-20])) < 0.01
    short = sw_filter(y[:5], mech)  # shorter than scipy's default padlen
    assert short.shape == (5,)
    with pytest.raises(ParameterError):
        sw_filter(y, mech, cutoff=1.0)
    with pytest.raises(ParameterError):
        sw_raw(np.array([5.0]), mech)


# --- LBD ---------------------------------------------------------------------------------------


class _ZeroNoise:
    """An rng whose Laplace draws are all 0, so the LBD decisions are deterministic."""

    def laplace(self, loc=0.0, scale=1.0, size=None):
        return loc


def _window_sums(per_step: np.ndarray, w: int) -> np.ndarray:
    return np.convolve(per_step, np.ones(w), mode="valid")


@pytest.mark.parametrize(("eps", "w"), [(1.0, 5), (5.0, 1), (10.0, 3), (50.0, 5), (2.0, 25)])
def test_lbd_budget_never_exceeded(eps, w):
    rng = np.random.default_rng(13)
    v = np.clip(0.5 + 0.4 * np.sin(np.arange(600) / 3.0) + rng.normal(0, 0.1, 600), 0, 1)
    account = WindowAccount(eps, w)
    res = lbd(v, eps, w, np.random.default_rng(14), account=account)  # no BudgetExhausted
    assert account.refusals == 0
    assert account.max_window_spent() <= eps * (1 + 1e-9)
    assert np.all(_window_sums(res.eps_spent, w) <= eps * (1 + 1e-12))
    assert np.allclose(account.window_spent(), _window_sums(res.eps_spent, w))
    eps1 = eps / (2 * w)
    pub = res.eps_spent - eps1
    assert np.all(pub[~res.published] == 0.0)
    # every publication spends half of what its window has left: eps2 = (eps/2 - recent) / 2
    for t in np.flatnonzero(res.published):
        recent = pub[max(0, t - w + 1) : t].sum()
        assert pub[t] == pytest.approx((eps / 2 - recent) / 2, rel=1e-12)
    assert res.published.any()


def test_lbd_a_foreign_over_budget_account_refuses():
    account = WindowAccount(1.0, 5)
    account.charge(0, 1.0)  # this window is already full
    with pytest.raises(BudgetExhausted):
        lbd(np.full(3, 0.5), 1.0, 5, np.random.default_rng(0), account=account)


def test_lbd_decision_rule_with_noise_removed():
    # eps 40, w 2: eps1 = 10 (bias 2/eps1^2 = 0.02); a window's publication budget is 20.
    # t0: v 0.5, r = 0.5 -> dis_sq = -0.02 < err = 2/10^2  -> repeat 0.5
    # t1: v 1.0: dis_sq = 0.25 - 0.02 = 0.23 > 0.02 (eps2 = 10) -> publish 1.0
    # t2: v 0.75: eps_rm = 20 - 10 = 10, eps2 = 5, err = 0.08; dis_sq = 0.0625 - 0.02 = 0.0425
    #     < 0.08 -> repeat 1.0 (it WOULD publish if the earlier spend were ignored)
    # t3: v 0.75: eps_rm = 20 - 0 = 20, eps2 = 10, err = 0.02 < 0.0425 -> publish 0.75
    # t4: v 0.75: dis 0 -> repeat
    # t5: v 0.92: dis^2 = 0.0289 > err = 0.02 but dis_sq = 0.0089 < 0.02 -> repeat (only the
    #     debiasing by 2/eps1^2 prevents the publication)
    v = np.array([0.5, 1.0, 0.75, 0.75, 0.75, 0.92])
    res = lbd(v, 40.0, 2, _ZeroNoise())
    assert res.published.tolist() == [False, True, False, True, False, False]
    assert res.release.tolist() == [0.5, 1.0, 1.0, 0.75, 0.75, 0.75]
    assert res.eps_spent.tolist() == [10.0, 20.0, 10.0, 20.0, 10.0, 10.0]


def test_lbd_publishes_less_on_a_constant_stream_and_repeats_releases():
    n = 1000
    constant = lbd(np.full(n, 0.5), 50.0, 5, np.random.default_rng(15))
    changing = lbd(np.tile([0.0, 1.0], n // 2), 50.0, 5, np.random.default_rng(15))
    assert constant.published.mean() < changing.published.mean() - 0.3
    for res in (constant, changing):
        assert res.release.min() >= 0.0
        assert res.release.max() <= 1.0
        steps = np.flatnonzero(~res.published[1:]) + 1
        assert np.array_equal(res.release[steps], res.release[steps - 1])
        if not res.published[0]:
            assert res.release[0] == 0.5


def test_lbd_deterministic_for_a_seed():
    v = np.random.default_rng(16).random(300)
    a = lbd(v, 5.0, 5, np.random.default_rng(17))
    b = lbd(v, 5.0, 5, np.random.default_rng(17))
    c = lbd(v, 5.0, 5, np.random.default_rng(18))
    for field in ("release", "published", "eps_spent"):
        assert np.array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.release, c.release)
    with pytest.raises(ParameterError):
        lbd(np.array([0.2, 1.2]), 5.0, 5, np.random.default_rng(0))
    with pytest.raises(ParameterError):
        lbd(v, 5.0, 0, np.random.default_rng(0))


# --- metrics -----------------------------------------------------------------------------------


def test_cosine_distance_invariances_and_extremes():
    rng = np.random.default_rng(19)
    x = rng.random(120)
    assert cosine_distance(x, x) == pytest.approx(0.0, abs=1e-12)
    assert cosine_distance(3.0 * x - 7.0, x) == pytest.approx(0.0, abs=1e-12)
    assert cosine_distance(x, 0.01 * x + 100) == pytest.approx(0.0, abs=1e-12)
    # disjoint supports after min-max normalisation: orthogonal
    a = np.array([5.0, 2.0, 5.0, 2.0])
    b = np.array([-1.0, 4.0, -1.0, 4.0])
    assert cosine_distance(a, b) == pytest.approx(1.0, abs=1e-12)
    # a constant maps to 0.5 everywhere: cos with [0, 1, 0, 1] is 1/sqrt(2)
    assert cosine_distance(np.full(4, 9.0), b) == pytest.approx(1 - 1 / math.sqrt(2), abs=1e-12)
    # a decreasing affine map is NOT equivalent
    assert cosine_distance(-x, x) > 0.1
    y = rng.random(120)
    assert cosine_distance(x, y) == pytest.approx(cosine_distance(y, x), abs=1e-15)
    assert 0.0 < cosine_distance(x, y) < 1.0


def test_cosine_distance_interpolates_different_lengths():
    # [0, 1] on the 3-point grid is [0, .5, 1]; vs [0, 1, 0]: cos = .5 / (sqrt(1.25) * 1)
    assert cosine_distance(np.array([0.0, 1.0]), np.array([0.0, 1.0, 0.0])) == pytest.approx(
        1 - 0.5 / math.sqrt(1.25), abs=1e-12
    )
    assert cosine_distance(np.array([0.0, 1.0]), np.array([0.0, 0.5, 1.0])) == pytest.approx(0)
    fine = np.sin(2 * np.pi * np.linspace(0, 1, 1000))
    coarse = 10 * np.sin(2 * np.pi * np.linspace(0, 1, 250)) + 3
    assert cosine_distance(coarse, fine) < 1e-4
    assert cosine_distance(coarse, -fine) > 0.2
    # explicit grid: on 2 points both [0, 1, 0] and [0, 0] are constant -> distance 0
    assert cosine_distance(np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0]), grid=2) == (
        pytest.approx(0.0, abs=1e-15)
    )
    assert cosine_distance(np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0])) > 0.0
    assert cosine_distance(np.array([3.0]), np.array([1.0, 2.0])) == pytest.approx(
        1 - 0.5 / math.sqrt(0.5), abs=1e-12
    )
    with pytest.raises(ParameterError):
        cosine_distance(np.array([]), fine)
    with pytest.raises(ParameterError):
        cosine_distance(fine, fine, grid=0)
    with pytest.raises(ParameterError):
        cosine_distance(np.array([0.0, np.nan]), fine)


def test_period_correct_tolerance_semantics():
    assert period_correct(24, 24) is True
    assert period_correct(25, 24) is False
    assert period_correct(25, 24, tolerance=1) is True
    assert period_correct(23, 24, tolerance=1) is True
    assert period_correct(22, 24, tolerance=1) is False
    assert period_correct(np.int64(12), 12) is True
    assert period_correct(None, 24) is False
    assert period_correct(24, None) is None
    assert period_correct(None, None) is None
    for bad in ({"tolerance": -1}, {"tolerance": 1.5}):
        with pytest.raises(ParameterError):
            period_correct(24, 24, **bad)
    with pytest.raises(ParameterError):
        period_correct(0, 24)
    with pytest.raises(ParameterError):
        period_correct(24.0, 24)
