"""The θ search's share where its counts' signal is weak (issue 20, claims row D9; helper A,
second step): from ε > 0.5, a fleet of at least ``MID_FLEET_MIN_DEVICES`` devices takes
ε_θ up to the very-small-ε share (DSR keeps ``DSR_FLOOR · ε``), at most
``MID_FLEET_THETA_EPS_CAP`` and at most the ε_θ at which the count signal ratio
``n / (√K σ)`` reaches ``SIGNAL_RATIO_TARGET``, for fleets of at most ``WEAK_COUNT_MAX_DEVICES``
(``protocol.cadr_budget``; pre-registered, docs/preregistration/A-weak-counts.md). Tier 1."""

from __future__ import annotations

import itertools
import math

import pytest
from ldpfleet.protocol import cadr_budget
from ldpfleet.protocol.cadr_budget import (
    DSR_FLOOR,
    MID_FLEET_THETA_EPS_CAP,
    SIGNAL_RATIO_TARGET,
    CadrBudget,
    eps_for_signal_ratio,
    signal_ratio,
)
from ldpfleet.protocol.cadr_theta_noise import bucket_count, noise_parties, noise_sd

EPS_GRID = [0.5 + 0.05 * i for i in range(91)]  # 0.5 .. 5


def _theta(eps: float, devices: int, alpha: float = 0.1) -> float:
    return CadrBudget.for_pipeline(eps, alpha, "dp", True, devices).theta


def _without_rule(eps: float, devices: int, alpha: float = 0.1) -> float:
    saved = cadr_budget.SIGNAL_RATIO_TARGET
    cadr_budget.SIGNAL_RATIO_TARGET = None
    try:
        return _theta(eps, devices, alpha)
    finally:
        cadr_budget.SIGNAL_RATIO_TARGET = saved


def test_signal_ratio_is_the_devices_against_the_summed_count_noise():
    n, eps_theta = 80, 0.5
    buckets = bucket_count(n, eps_theta) + 1
    want = n / (math.sqrt(buckets) * noise_sd(eps_theta, n, noise_parties(n)))
    assert signal_ratio(eps_theta, n) == pytest.approx(want, rel=1e-12)
    assert signal_ratio(1.0, n) > signal_ratio(0.5, n)


def test_eps_for_signal_ratio_reaches_the_target_and_no_more():
    for n in (25, 60, 80, 150, 190):
        e = eps_for_signal_ratio(SIGNAL_RATIO_TARGET, n, 10.0)
        assert signal_ratio(e, n) >= SIGNAL_RATIO_TARGET
        assert signal_ratio(e * (1 - 1e-9), n) < SIGNAL_RATIO_TARGET
    assert eps_for_signal_ratio(1e6, 80, 1.5) == 1.5  # unreachable: the most it may take


def test_a_weak_fleet_at_eps_1_takes_more_than_before():
    assert SIGNAL_RATIO_TARGET == 8.0 and cadr_budget.WEAK_COUNT_MAX_DEVICES == 150
    before, now = _without_rule(1.0, 80), _theta(1.0, 80)
    assert before == pytest.approx(0.5)
    want = min(0.86, MID_FLEET_THETA_EPS_CAP, eps_for_signal_ratio(8.0, 80, 0.86))
    assert now == pytest.approx(want) and now > 0.7
    budget = CadrBudget.for_pipeline(1.0, 0.1, "dp", True, 80)
    assert budget.dsr >= DSR_FLOOR * 1.0 - 1e-12
    assert budget.theta + budget.ndoe + budget.lpea + budget.dsr == pytest.approx(1.0)


@pytest.mark.parametrize("devices", [4039, 7115, 1000, 500, 300, 200, 175, 151])
def test_large_fleets_are_unchanged_at_every_eps(devices):
    for eps in EPS_GRID:
        assert _theta(eps, devices) == _without_rule(eps, devices)


@pytest.mark.parametrize("devices", [5, 15, 24])
def test_fleets_below_25_devices_are_unchanged(devices):
    for eps in EPS_GRID:
        assert _theta(eps, devices) == _without_rule(eps, devices)


def test_eps_up_to_half_is_unchanged_and_the_split_is_continuous_and_monotone():
    for n in (25, 40, 80, 120, 150):
        assert _theta(0.5, n) == _without_rule(0.5, n)
        values = [_theta(e, n) for e in EPS_GRID]
        assert all(b >= a - 1e-12 for a, b in itertools.pairwise(values)), n
        steps = [b - a for a, b in itertools.pairwise(values)]
        assert max(steps) <= 0.05 * 0.87, n  # no jump: at most the share's slope


def test_every_n_from_25_moves_only_when_the_band_is_lifted(monkeypatch):
    assert _theta(3.0, 80) == _without_rule(3.0, 80)  # ε >= 3: the mid-size cap binds
    assert _theta(5.0, 175) == _without_rule(5.0, 175)
    monkeypatch.setattr(cadr_budget, "WEAK_COUNT_MAX_DEVICES", None)  # pre-registration 1
    assert _theta(5.0, 175) > _without_rule(5.0, 175)


def test_never_below_the_rule_before_and_valid_for_any_alpha():
    for alpha in (0.05, 0.1, 0.3, 0.5, 0.8):
        for n in (25, 60, 150):
            for eps in (0.6, 1.0, 2.0, 5.0):
                budget = CadrBudget.for_pipeline(eps, alpha, "dp", True, n)
                assert budget.theta >= _without_rule(eps, n, alpha) - 1e-12
                assert budget.dsr >= DSR_FLOOR * eps - 1e-9
