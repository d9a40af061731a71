"""Mid-size fleets' θ-search share (issue 20, helper A): fleets of
``MID_FLEET_MIN_DEVICES`` to ``MID_FLEET_DEVICES`` devices take ε_θ = min(ε / 2,
``MID_FLEET_THETA_EPS_CAP``, 1200 / n) from ε = 1 up (``protocol.cadr_budget``;
pre-registered, scripts/A_theta_cap.py). Tier 1. Measured with the weak-count rule
(``SIGNAL_RATIO_TARGET``, tests/unit/test_A_signal_budget.py) off: this is the rule
before it."""

from __future__ import annotations

import pytest
from ldpfleet.protocol import cadr_budget
from ldpfleet.protocol.cadr_budget import (
    MID_FLEET_DEVICES,
    MID_FLEET_MIN_DEVICES,
    MID_FLEET_THETA_EPS_CAP,
    THETA_EPS_CAP,
    CadrBudget,
)


@pytest.fixture(autouse=True)
def _weak_count_rule_off(monkeypatch):
    monkeypatch.setattr(cadr_budget, "SIGNAL_RATIO_TARGET", None)


@pytest.mark.parametrize(
    ("eps", "devices", "eps_theta"),
    [
        (3.0, 80, 1.5),  # mid-size, ε = 3: the cap 1.5 (ε / 2 = 1.5 too)
        (5.0, 80, 1.5),  # ε / 2 = 2.5 is cut at 1.5
        (2.0, 150, 1.0),  # ε / 2 binds at ε = 2
        (1.0, 80, 0.5),  # ε = 1: ε / 2 = 0.5, as before
        (5.0, 151, 0.5),  # above MID_FLEET_DEVICES: THETA_EPS_CAP, as before
        (5.0, 24, 0.5),  # below MID_FLEET_MIN_DEVICES (the small-fleet rule's fleets): as before
        (3.0, 4039, 1200 / 4039),  # large: 1200 / n, as before (f α ε = 0.18 below it)
    ],
)
def test_mid_size_fleets_take_a_larger_theta_share_from_eps_1(eps, devices, eps_theta):
    budget = CadrBudget.for_pipeline(eps, 0.1, "dp", True, devices)
    assert budget.theta == pytest.approx(eps_theta)
    assert budget.theta + budget.ndoe + budget.lpea + budget.dsr == pytest.approx(eps)


def test_below_eps_1_and_outside_25_to_150_devices_nothing_changes():
    assert (MID_FLEET_MIN_DEVICES, MID_FLEET_DEVICES) == (25, 150)
    assert (MID_FLEET_THETA_EPS_CAP, THETA_EPS_CAP) == (1.5, 0.5)
    for eps in (0.5, 0.75):  # the small-ε rule: the same for n = 80 and n = 151
        small = CadrBudget.for_pipeline(eps, 0.1, "dp", True, 80)
        other = CadrBudget.for_pipeline(eps, 0.1, "dp", True, 151)
        assert small.theta == pytest.approx(other.theta)
