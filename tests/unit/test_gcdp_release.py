"""GC-DP Algorithm 4 (collector/gcdp/release.py), the Table 4 baselines (baselines.py) and
the Theorem 1 refusal layer (validate.py)."""

from __future__ import annotations

import ldpfleet.collector.gcdp as gcdp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ldpfleet.collector.gcdp.allocation import allocate_budget, fit_total
from ldpfleet.collector.gcdp.baselines import ada_dp, gau_dp, gc_dp, lap_dp, non_private, risk_dp
from ldpfleet.collector.gcdp.constants import GcdpConstants, eps_min_for
from ldpfleet.collector.gcdp.gaussian import gaussian_grid
from ldpfleet.collector.gcdp.release import laplace_release
from ldpfleet.collector.gcdp.sensitivity import release_scales
from ldpfleet.collector.gcdp.validate import check_release_parameters
from ldpfleet.protocol.errors import ParameterError

# Statistical thresholds. Each check compares a sample mean of n i.i.d. draws with its
# expectation and allows Z = 5 standard errors: by the CLT the two-sided false-failure
# probability is 2 (1 - Phi(5)) = 5.7e-7 (~1e-6). With |Z_k| ~ Exponential(mean b) for
# Z_k ~ Laplace(0, b): E|Z| = b, sd |Z| = b, so |mean |Z| - b| <= 5 b / sqrt(n). For the
# Gaussian sample variance of n draws, sd(s^2) ~ sigma^2 sqrt(2 / n), so the relative
# tolerance is 5 sqrt(2 / n). The seeds are fixed, so the tests are also deterministic.
N_DRAWS = 20_000
Z = 5.0


def _args(**over):
    base = {
        "bounds": [1.0, 0.5, 0.0],
        "scales": [1.0, 0.8, 0.0],
        "budgets": [0.25, 0.5, 0.25],  # exact in binary: the sum is exactly 1
        "eps_rel": 1.0,
    }
    return {**base, **over}


# --- the refusal layer: one test per Theorem 1 condition -------------------------------------


def test_a_rounding_overshoot_within_the_ledger_tolerance_is_accepted():
    # 0.4 + 0.4 + 0.2 in binary exceeds 1 by ~1e-16: rounding, as the ledger treats it
    params = check_release_parameters([1.0, 0.5, 0.0], [1.0, 0.5, 0.0], [0.4, 0.4, 0.2], 1.0)
    assert params.eps_rel == 1.0


@pytest.mark.parametrize(
    ("over", "field", "words"),
    [
        ({"scales": [1.0, 0.4, 0.0]}, "scales[1]", "certified bound"),  # s_k < B_k
        ({"budgets": [0.4, 0.0, 0.2]}, "budgets[1]", "> 0"),  # eps_k = 0
        ({"budgets": [0.4, -0.1, 0.2]}, "budgets[1]", "> 0"),
        # just above the ledger's rounding tolerance (relative 1e-9): refused
        ({"budgets": [0.4, 0.4, 0.2 + 2e-9]}, "budgets", "tolerance"),
        ({"budgets": [0.5, 0.4, 0.2]}, "budgets", "eps_rel"),  # sum > eps_rel
        (
            {"budgets": [0.11] * 10, "bounds": [1.0] * 10, "scales": [1.0] * 10},
            "budgets",
            "exceeds",
        ),
        ({"eps_rel": 0.0}, "eps_rel", "> 0"),
        ({"bounds": [1.0, -0.5, 0.0]}, "bounds[1]", ">= 0"),
        ({"bounds": [1.0, float("inf"), 0.0]}, "bounds[1]", "finite"),
        ({"scales": [1.0, 0.8]}, "scales", "3 entries"),
        ({"budgets": [[0.4, 0.4, 0.2]]}, "budgets", "1-D"),
    ],
)
def test_release_parameters_outside_theorem_1_are_refused(over, field, words):
    with pytest.raises(ParameterError) as info:
        check_release_parameters(**_args(**over))
    assert info.value.field == field
    assert words in str(info.value) and field in str(info.value)


def test_allocation_floor_at_or_above_eps_rel_over_d_is_refused():
    with pytest.raises(ParameterError, match=r"eps_min: must be < eps_rel / d") as info:
        allocate_budget(1.0, [1.0, 1.0], [0.5, 0.5], [0.0, 0.0], eps_min=0.5)
    assert info.value.field == "eps_min"


def test_release_refuses_before_drawing_any_noise():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ParameterError):
        laplace_release([0.5, 0.5, 0.5], low=0.0, high=1.0, rng=rng, **_args(scales=[0.1, 0.8, 0]))
    assert rng.bit_generator.state == state


def test_accepted_parameters_are_frozen_copies():
    scales = np.array([1.0, 0.8, 0.0])
    params = check_release_parameters(**_args(scales=scales))
    scales[0] = 0.0  # the caller's array is not aliased
    assert params.scales[0] == 1.0 and not params.scales.flags.writeable
    np.testing.assert_array_equal(params.laplace_scales, [4.0, 1.6, 0.0])
    repaired = fit_total(np.array([0.4, 0.4, 0.2]), 1.0)
    assert check_release_parameters(**_args(budgets=repaired)).d == 3


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"lag_window": -1}, "lag_window"),
        ({"lam": 1.5}, "lam"),
        ({"degree_cap": 0}, "degree_cap"),
        ({"kappa": 0.9}, "kappa"),
        ({"g_max": 0}, "g_max"),
        ({"eta": 0}, "eta"),
        ({"beta_g": -1}, "beta_g"),
        ({"tau_c": True}, "tau_c"),
    ],
)
def test_invalid_constants_are_refused(kwargs, field):
    with pytest.raises(ParameterError) as info:
        GcdpConstants(**kwargs)
    assert info.value.field == field


def test_table_5_defaults():
    c = GcdpConstants()
    assert (c.lag_window, c.lam, c.degree_cap, c.alpha) == (3, 0.6, 5, 0.7)
    assert (c.gamma, c.tau_c, c.kappa, c.g_max, c.eta) == (1.2, 0.85, 1.0, 1.0, 1e-8)
    assert (c.beta_r, c.beta_g, c.beta_u) == (1.0, 1.0, 0.7)
    assert eps_min_for(1.0, 10) == pytest.approx(1e-3)


# --- Theorem 1 end to end: Algorithms 2 + 3 never exceed eps_rel -----------------------------


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(1, 20), st.floats(0.05, 8.0))
def test_worst_case_log_ratio_of_the_pipeline_is_at_most_eps_rel(data, d, eps_rel):
    """Theorem 1: for |y_k - y'_k| <= B_k the Laplace log density ratio is at most
    sum_k eps_k B_k / s_k <= sum_k eps_k <= eps_rel, with s_k from Algorithm 2 (Prop. 1)
    and eps_k from Algorithm 3 (Prop. 2)."""
    bounds = data.draw(hnp.arrays(float, d, elements=st.floats(1e-3, 10.0)))
    xi = data.draw(hnp.arrays(float, d, elements=st.floats(0.0, 1.0)))
    utility = data.draw(hnp.arrays(float, d, elements=st.floats(0.0, 1.0)))
    exposure = data.draw(hnp.arrays(float, d, elements=st.floats(0.0, 1.0)))
    scales = release_scales(bounds, xi)
    budgets = allocate_budget(eps_rel, scales, utility, exposure)
    params = check_release_parameters(bounds, scales, budgets, eps_rel)
    assert float(np.sum(params.budgets * bounds / params.scales)) <= eps_rel * (1 + 1e-12)


# --- Algorithm 4 and the baselines --------------------------------------------------------


def test_laplace_release_has_the_certified_scale():
    rng = np.random.default_rng(20260611)
    bounds, scales, budgets = [1.0, 0.5, 0.0], [2.0, 0.5, 0.0], [0.5, 0.25, 0.25]
    y = np.array([0.3, 0.7, 0.2])
    out = np.array(
        [
            laplace_release(
                y,
                bounds=bounds,
                scales=scales,
                budgets=budgets,
                eps_rel=1.0,
                low=0.0,
                high=1.0,
                rng=rng,
            )
            for _ in range(N_DRAWS)
        ]
    )
    noise = out - y
    assert np.all(noise[:, 2] == 0.0)  # zero sensitivity: released deterministically
    for k, b in ((0, 4.0), (1, 2.0)):
        mean_abs = float(np.mean(np.abs(noise[:, k])))
        assert abs(mean_abs - b) <= Z * b / np.sqrt(N_DRAWS)
        assert abs(float(np.mean(noise[:, k]))) <= Z * np.sqrt(2.0) * b / np.sqrt(N_DRAWS)


def test_release_projects_onto_the_clipped_interval_first():
    rng = np.random.default_rng(1)
    out = laplace_release(
        [5.0, -3.0],
        bounds=[0.0, 0.0],
        scales=[0.0, 0.0],
        budgets=[0.5, 0.5],
        eps_rel=1.0,
        low=[0.0, -1.0],
        high=[1.0, 1.0],
        rng=rng,
    )
    assert out.tolist() == [1.0, -1.0]
    assert non_private([5.0, -3.0], [0.0, -1.0], [1.0, 1.0]).tolist() == [1.0, -1.0]


def test_gau_dp_uses_the_certified_sigma_of_the_l2_certificate():
    rng = np.random.default_rng(314159)
    bounds = [3.0, 4.0]  # l2 certificate 5; both coordinates may move (the default d = 2)
    sigma = gaussian_grid(1.0, 1e-5, 5.0, 2).sigma  # the exact sampler's zCDP sigma
    out = np.array(
        [
            gau_dp([0.5, 0.5], bounds=bounds, eps=1.0, delta=1e-5, low=0.0, high=1.0, rng=rng)
            for _ in range(N_DRAWS)
        ]
    )
    var = np.var(out - 0.5, axis=0)
    assert np.all(np.abs(var / sigma**2 - 1.0) <= Z * np.sqrt(2.0 / N_DRAWS))


def test_baselines_are_the_documented_reductions():
    common = {"low": 0.0, "high": 1.0, "eps_rel": 1.0}
    y, b, s = [0.2, 0.4, 0.6], [0.1, 0.2, 0.3], [0.5, 0.2, 0.3]
    mu, r = [0.9, 0.1, 0.5], [0.0, 1.0, 0.5]

    def same_noise(f, **kw):
        return f(y, rng=np.random.default_rng(7), **common, **kw)

    def release_with(budgets, scales):
        return same_noise(laplace_release, bounds=b, scales=scales, budgets=budgets)

    np.testing.assert_array_equal(
        same_noise(lap_dp, bounds=b), release_with(np.full(3, 1.0 / 3.0), b)
    )
    np.testing.assert_array_equal(
        same_noise(ada_dp, bounds=b, scales=s, utility=mu),
        release_with(allocate_budget(1.0, s, mu, [0, 0, 0], beta_r=0.0), s),
    )
    np.testing.assert_array_equal(
        same_noise(risk_dp, bounds=b, scales=s, exposure_norm=r),
        release_with(allocate_budget(1.0, s, [0, 0, 0], r, beta_u=0.0), s),
    )
    np.testing.assert_array_equal(
        same_noise(gc_dp, bounds=b, scales=s, utility=mu, exposure_norm=r),
        release_with(allocate_budget(1.0, s, mu, r), s),
    )


def test_baselines_refuse_scales_below_the_certificate():
    with pytest.raises(ParameterError) as info:
        gc_dp(
            [0.5, 0.5],
            bounds=[1.0, 1.0],
            scales=[1.0, 0.5],
            utility=[0.5, 0.5],
            exposure_norm=[0.5, 0.5],
            eps_rel=1.0,
            low=0.0,
            high=1.0,
            rng=np.random.default_rng(0),
        )
    assert info.value.field == "scales[1]"


def test_public_calibration_pipeline_end_to_end():
    """Algorithms 1 -> 2 -> 3 -> 4 on public calibration data (eps_cal = 0)."""
    rng = np.random.default_rng(11)
    z = rng.normal(size=303)
    public = np.column_stack([z[3:], z[1:301] + 0.2 * rng.normal(size=300), rng.normal(size=300)])
    public = np.clip(public, -3.0, 3.0)
    c = gcdp.GcdpConstants()
    graph = gcdp.calibrate_from_data(public, tau=c.tau, degree_cap=c.degree_cap, bounds=(-3, 3))
    assert graph.edges[0] == (0, 1)  # the lagged pair

    def channel_means(x):
        return x.mean(axis=0)

    deltas = gcdp.masking_deltas(channel_means, public, low=-3.0, high=3.0)
    xi = gcdp.empirical_influence(deltas, graph, gamma=c.gamma, kappa=c.kappa, g_max=c.g_max)
    bounds = np.full(3, gcdp.mean_bound(-3.0, 3.0, n=300))
    scales = gcdp.release_scales(bounds, xi)
    budgets = gcdp.allocate_budget(1.0, scales, [0.5, 0.5, 0.5], graph.exposure_norm)
    out = gcdp.laplace_release(
        channel_means(public),
        bounds=bounds,
        scales=scales,
        budgets=budgets,
        eps_rel=1.0,
        low=-3.0,
        high=3.0,
        rng=rng,
    )
    assert out.shape == (3,) and np.all(np.isfinite(out))
