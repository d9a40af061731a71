"""GC-DP-Cache and its drift monitor (``collector.gcdp.cache``)."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.gcdp.cache import CachedCalibration, DriftMonitor, summary_distance
from ldpfleet.protocol.errors import BudgetExhausted, ParameterError
from ldpfleet.protocol.ledger import BudgetAccount, PrivacyLedger


def counting_calibration():
    calls = []

    def calibrate():
        calls.append(len(calls))
        return f"theta-{len(calls)}"

    return calls, calibrate


def test_theta_is_reused_while_the_summary_stays_within_the_threshold():
    calls, calibrate = counting_calibration()
    cache = CachedCalibration(calibrate, DriftMonitor(threshold=0.1))
    base = np.array([0.2, 0.5, 0.9])
    first = cache.theta_for(base)
    assert first.refreshed and first.reason == "first" and first.theta == "theta-1"
    for shift in (0.0, 0.05, -0.1):  # exactly at the threshold still reuses
        decision = cache.theta_for(base + shift)
        assert not decision.refreshed and decision.theta == "theta-1"
        assert decision.distance == pytest.approx(abs(shift))
    drifted = cache.theta_for(base + np.array([0.0, 0.11, 0.0]))
    assert drifted.refreshed and drifted.reason == "drift" and drifted.theta == "theta-2"
    assert len(calls) == 2 and cache.refreshes == 2
    # the reference moved with the refresh: the drifted summary is now the baseline
    assert not cache.theta_for(base + np.array([0.0, 0.11, 0.0])).refreshed


def test_periodic_refresh_is_the_fallback():
    calls, calibrate = counting_calibration()
    cache = CachedCalibration(calibrate, DriftMonitor(threshold=1.0, refresh_every=3))
    reasons = [cache.theta_for([0.5]).reason for _ in range(7)]
    assert reasons == ["first", "reuse", "reuse", "periodic", "reuse", "reuse", "periodic"]
    assert len(calls) == 3


def test_every_refresh_is_charged_first_and_a_refused_charge_keeps_the_cached_theta():
    ledger = PrivacyLedger("collector")
    ledger.open_account("cal", BudgetAccount(1.0))
    calls, calibrate = counting_calibration()
    cache = CachedCalibration(
        calibrate,
        DriftMonitor(threshold=0.0),
        on_refresh=lambda: ledger.charge("cal", 0.4, mechanism="gcdp_calibration"),
    )
    cache.theta_for([0.0])
    cache.theta_for([0.5])
    assert ledger.account("cal").spent == pytest.approx(0.8) and len(calls) == 2
    with pytest.raises(BudgetExhausted):
        cache.theta_for([1.0])  # a third calibration would overspend
    assert len(calls) == 2 and ledger.account("cal").spent == pytest.approx(0.8)
    assert cache.theta_for([0.5]).theta == "theta-2"  # the cached theta is still served


def test_distance_and_monitor_parameters_are_validated():
    assert summary_distance([0.1, 0.4], [0.2, 0.1]) == pytest.approx(0.3)
    assert summary_distance([], []) == 0.0
    with pytest.raises(ParameterError) as info:
        summary_distance([0.1, 0.2], [0.1])
    assert info.value.field == "summary"
    with pytest.raises(ParameterError):
        summary_distance([0.1], [np.nan])
    for bad, field in (
        ({"threshold": -0.1}, "threshold"),
        ({"threshold": float("inf")}, "threshold"),
        ({"threshold": 0.1, "refresh_every": 0}, "refresh_every"),
        ({"threshold": True}, "threshold"),
    ):
        with pytest.raises(ParameterError) as info:
            DriftMonitor(**bad)
        assert info.value.field == field
    with pytest.raises(ParameterError) as info:
        CachedCalibration("not callable", DriftMonitor(0.1))
    assert info.value.field == "calibrate"


def test_a_real_calibration_graph_is_cached_until_the_correlations_move():
    from ldpfleet.collector.gcdp import calibrate_from_data
    from ldpfleet.collector.gcdp.private_calibration import upper_pairs

    rng = np.random.default_rng(0)
    base = rng.normal(size=(400, 4))
    base[:, 1] = base[:, 0] + 0.1 * rng.normal(size=400)  # channels 0 and 1 correlated
    data = {"now": base}
    cache = CachedCalibration(lambda: calibrate_from_data(data["now"]), DriftMonitor(threshold=0.2))

    def summary(x):
        graph = calibrate_from_data(x)  # public data here: the summary is public
        return upper_pairs(graph.scores)

    first = cache.theta_for(summary(base))
    same = cache.theta_for(summary(base[::-1].copy()))
    assert first.refreshed and not same.refreshed
    moved = base.copy()
    moved[:, 2] = moved[:, 0] + 0.05 * rng.normal(size=400)  # a new strong correlation
    data["now"] = moved
    decision = cache.theta_for(summary(moved))
    assert decision.refreshed and decision.reason == "drift"
    assert decision.theta.degree.sum() > first.theta.degree.sum()
