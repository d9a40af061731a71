"""Tier 1 tests of the two readings added by the fidelity review of Gau-DP and Risk-DP
(docs/gcdp.md, "Fidelity review of Gau-DP, Risk-DP and the attack"): the discrete
Gaussian's exact privacy curve (``gau_sigma=analytic_discrete``) and Risk-DP's scales
without the graph-compressed expansion (``risk_scales=direct``). No statistics: every
check is an exact or hand-computed value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.app.gcdp_datasets import READINGS, parse_readings
from ldpfleet.collector.gcdp import calibrate_from_data, empirical_influence, release_scales
from ldpfleet.collector.gcdp.gaussian import (
    analytic_discrete_sigma2,
    analytic_gaussian_sigma,
    discrete_gaussian_delta,
    gaussian_grid,
    zcdp_rho,
)
from ldpfleet.protocol.errors import ParameterError


def _brute_force_delta(sigma2: int, eps: float, max_shift: int) -> float:
    """max over shifts a of sum_z max(0, p(z) - e^eps p(z - a)), term by term."""
    weight = {z: math.exp(-z * z / (2 * sigma2)) for z in range(-400, 401)}
    total = math.fsum(weight.values())
    return max(
        math.fsum(
            max(0.0, (weight[z] - math.exp(eps) * weight[z - a]) / total) for z in range(-200, 201)
        )
        for a in range(1, max_shift + 1)
    )


def test_exact_curve_on_a_hand_computed_case():
    # sigma2 = 1, eps = 1, shift 1: the loss (1 - 2z)/2 exceeds 1 exactly for z <= -1, so
    # delta = (sum_{z>=1} e^{-z^2/2} - e sum_{z>=2} e^{-z^2/2}) / sum_z e^{-z^2/2}
    norm = math.fsum(math.exp(-z * z / 2) for z in range(-40, 41))
    first = math.fsum(math.exp(-z * z / 2) for z in range(1, 41)) / norm
    second = math.fsum(math.exp(-z * z / 2) for z in range(2, 41)) / norm
    hand = first - math.e * second
    assert hand == pytest.approx(0.1413513394, abs=1e-10)
    value = discrete_gaussian_delta(1, 1.0, 1)
    assert hand <= value <= hand + 2e-9  # never understated; the slack is 1e-9 of a tail


@pytest.mark.parametrize(("sigma2", "eps", "max_shift"), [(4, 0.5, 3), (9, 1.0, 5), (2, 2.0, 2)])
def test_exact_curve_is_the_worst_shift_of_the_hockey_stick(sigma2, eps, max_shift):
    brute = _brute_force_delta(sigma2, eps, max_shift)
    assert brute <= discrete_gaussian_delta(sigma2, eps, max_shift) <= brute + 2e-9


def test_calibrated_variance_is_the_smallest_admissible_one():
    sigma2 = analytic_discrete_sigma2(1.0, 1e-3, 3, 1)  # upper 1 is doubled until admissible
    assert (
        discrete_gaussian_delta(sigma2, 1.0, 3)
        <= 1e-3
        < discrete_gaussian_delta(sigma2 - 1, 1.0, 3)
    )


@pytest.mark.parametrize("eps", [0.2, 1.0, 4.0])
def test_grid_reading_is_certified_and_close_to_balle_wang(eps):
    noise = gaussian_grid(eps, 1e-5, 1 / 30, 1, "analytic_discrete")
    max_shift = math.floor((1 / 30) / noise.grid) + 1
    assert discrete_gaussian_delta(noise.sigma2, eps, max_shift) <= 1e-5
    assert discrete_gaussian_delta(noise.sigma2 - 1, eps, max_shift) > 1e-5
    # the rounding adds at most one grid unit to the sensitivity's Delta / g units (68 at
    # eps = 0.2, ~270-550 above): at most that share above the continuous analytic sigma
    # (0.1 % for the float search), and below the zCDP sigma (8-10 % above it)
    ratio = noise.sigma / analytic_gaussian_sigma(eps, 1e-5, 1 / 30)
    assert 1.0 <= ratio <= (1.0 + noise.grid * 30) * 1.001
    assert noise.sigma < gaussian_grid(eps, 1e-5, 1 / 30, 1).sigma
    assert noise.rho > zcdp_rho(eps, 1e-5)  # certified by the exact curve, not by zCDP


def test_grid_reading_refuses_more_than_one_changed_coordinate():
    with pytest.raises(ParameterError) as info:
        gaussian_grid(1.0, 1e-5, 1 / 30, 3, "analytic_discrete")
    assert info.value.field == "changed_coordinates"
    assert "3" in str(info.value)


@pytest.mark.parametrize(("bad", "field"), [(0, "sigma2"), (1.5, "sigma2"), (True, "sigma2")])
def test_exact_curve_refuses_a_bad_variance(bad, field):
    with pytest.raises(ParameterError) as info:
        discrete_gaussian_delta(bad, 1.0, 1)
    assert info.value.field == field


def test_exact_curve_refuses_a_bad_shift():
    with pytest.raises(ParameterError) as info:
        discrete_gaussian_delta(4, 1.0, 0)
    assert info.value.field == "max_shift"


def test_direct_scales_leave_out_the_expansion_term():
    # three nodes, 1 and 2 strongly correlated; node 0 independent
    rng = np.random.default_rng(3)
    base = rng.normal(size=400)
    nodes = np.column_stack([rng.normal(size=400), base, base + 0.1 * rng.normal(size=400)])
    graph = calibrate_from_data(nodes, tau=0.15)
    deltas = np.array([[0.30, 0.0, 0.0], [0.0, 0.20, 0.10], [0.0, 0.10, 0.20]])
    bounds = np.full(3, 0.05)
    direct = release_scales(bounds, empirical_influence(deltas, graph, gamma=0.0))
    # by hand: xi_k = min(1, max_{i in a(k)} delta_ik) = delta_kk, then s = max(B, xi)
    assert np.array_equal(direct, [0.30, 0.20, 0.20])
    full = release_scales(bounds, empirical_influence(deltas, graph))
    assert np.all(full >= direct)
    assert full[1] > direct[1]  # node 1's neighbour adds gamma r_bar w~ delta


def test_risk_reading_direct_uses_the_direct_scales():
    cal = {"bounds": np.full(3, 0.05), "scales": np.full(3, 0.4),
           "direct_scales": np.array([0.3, 0.2, 0.2])}  # fmt: skip
    pick = bench._risk_scales
    assert np.array_equal(pick(cal, READINGS), cal["bounds"])
    assert np.array_equal(pick(cal, parse_readings("risk_scales=gcdp")), cal["scales"])
    assert np.array_equal(pick(cal, parse_readings("risk_scales=direct")), cal["direct_scales"])


def test_new_reading_names_parse_and_bad_ones_are_refused():
    assert parse_readings("gau_sigma=analytic_discrete").gau_sigma == "analytic_discrete"
    with pytest.raises(ParameterError) as info:
        parse_readings("risk_scales=expanded")
    assert info.value.field == "readings.risk_scales"


def test_bench_release_draws_the_reading_it_names():
    y = np.tile([0.2, 0.4, 0.6, 0.8, 0.5], (40, 1))
    b = np.full(5, 1 / 30)
    cal = {"bounds": b, "scales": b, "direct_scales": np.array([0.05, *b[1:]]),
           "exposure": np.array([0.08, 0.0, 0.22, 1.0, 0.21]), "utility": np.zeros(5),
           "gau_l2": 1 / 30, "gau_changed": 1, "coordinate_map": None}  # fmt: skip

    def release(method: str, text: str) -> np.ndarray:
        run = {**cal, "readings": parse_readings(text)}
        return bench._release(method, y, run, 1.0, np.random.default_rng(17))

    common = {"bounds": b, "eps": 1.0, "delta": 1e-5, "low": 0.0, "high": 1.0}
    exact = bench.gau_dp(y, **common, l2_sensitivity=1 / 30, changed_coordinates=1,
                         calibration="analytic_discrete",
                         rng=np.random.default_rng(17))  # fmt: skip
    assert np.array_equal(release("Gau-DP", "gau_sigma=analytic_discrete"), exact)
    assert np.array_equal(release("Gau-DP", ""), exact)  # the default since 2026-12-05
    assert not np.array_equal(release("Gau-DP", "gau_sigma=zcdp"), exact)  # the earlier one
    direct = bench.risk_dp(y, bounds=b, scales=cal["direct_scales"], exposure_norm=cal["exposure"],
                           eps_rel=1.0, low=0.0, high=1.0, coordinate_map=None,
                           rng=np.random.default_rng(17))  # fmt: skip
    assert np.array_equal(release("Risk-DP", "risk_scales=direct"), direct)
    assert not np.array_equal(release("Risk-DP", ""), direct)
    # the noise law (the informed attacker's knowledge) follows the same readings
    law = bench.noise_law(
        "Gau-DP", {**cal, "readings": parse_readings("gau_sigma=analytic_discrete")}, 1.0
    )
    assert law.scale[0] == gaussian_grid(1.0, 1e-5, 1 / 30, 1, "analytic_discrete").sigma


def test_protocol_names_every_gau_calibration():
    from ldpfleet.app.gcdp_datasets import READING_CHOICES

    assert set(bench.GAU_CALIBRATION_NAMES) == set(READING_CHOICES["gau_sigma"])


def test_default_falls_back_to_zcdp_where_several_coordinates_move():
    # WISDM: one sensor-axis contribution moves 3 coordinates; no exact curve is computed
    kept = READINGS
    assert kept.gau_sigma == "analytic_discrete"
    assert bench.gau_calibration(kept, 1) == "analytic_discrete"
    assert bench.gau_calibration(kept, 3) == "zcdp"
    assert bench.gau_calibration(parse_readings("gau_sigma=classic"), 3) == "classic"
    b = np.full(6, 0.1)
    cal = {"bounds": b, "gau_l2": 0.1 * math.sqrt(3), "gau_changed": 3, "readings": kept}
    law = bench.noise_law("Gau-DP", cal, 1.0)
    assert law.scale[0] == gaussian_grid(1.0, 1e-5, 0.1 * math.sqrt(3), 3, "zcdp").sigma


def test_protocol_says_which_gau_rule_ran():
    from types import SimpleNamespace

    occupancy = SimpleNamespace(gau_changed=1, bounds=np.full(5, 1 / 30))
    wisdm = SimpleNamespace(gau_changed=3, bounds=np.full(6, 0.1))
    assert "exact discrete-Gaussian curve" in bench._gau_sampler_note(occupancy, READINGS)
    note = bench._gau_sampler_note(wisdm, READINGS)
    assert "zCDP accounting" in note and "3 move here" in note
