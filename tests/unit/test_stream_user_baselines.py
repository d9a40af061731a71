"""results.json's accuracy baselines and privacy claim (helper G): a user sees whether the
per-device means beat a constant guess, and what the ledgers spent against the stated
w-event claim (collector/analytics.py ``accuracy_baselines``, ``privacy_entry``)."""

from __future__ import annotations

import pytest
from ldpfleet.collector.analytics import accuracy_baselines, privacy_entry
from ldpfleet.protocol.ledger import REL_TOL as BUDGET_RTOL
from ldpfleet.protocol.stream import StreamConfig


def test_the_constant_and_the_fleet_mean_are_scored_like_the_estimates():
    estimates = {"a": 1.0, "b": 3.0, "c": 9.0}
    truths = {"a": 2.0, "b": 2.0, "c": 8.0}
    entry = accuracy_baselines(estimates, truths, 0.0, 20.0)
    assert entry["devices"] == 3
    assert entry["constant"] == {"value": 10.0, "mean_abs_error": pytest.approx(6.0)}
    assert entry["fleet_mean"]["value"] == pytest.approx(13 / 3)
    assert entry["fleet_mean"]["mean_abs_error"] == pytest.approx((7 / 3 + 7 / 3 + 11 / 3) / 3)
    assert entry["beats_constant"] is True  # 1.0 against 6.0


def test_noise_worse_than_a_constant_is_said():
    entry = accuracy_baselines({"a": 30.0, "b": -10.0}, {"a": 10.0, "b": 11.0}, 0.0, 20.0)
    assert entry["beats_constant"] is False


def test_channels_of_a_multi_column_source_are_averaged_apart():
    """Channels are in different units: one fleet mean per channel, never across them."""
    estimates = {"r0c0": 0.2, "r0c1": 0.8, "r1c0": 0.4, "r1c1": 0.6}
    truths = {"r0c0": 0.3, "r0c1": 0.7, "r1c0": 0.3, "r1c1": 0.7}
    groups = {"r0c0": 0, "r0c1": 1, "r1c0": 0, "r1c1": 1}
    entry = accuracy_baselines(estimates, truths, 0.0, 1.0, groups)
    assert entry["fleet_mean"]["value"] == {"0": pytest.approx(0.3), "1": pytest.approx(0.7)}
    assert entry["fleet_mean"]["mean_abs_error"] == pytest.approx(0.0)


def test_devices_without_an_estimate_or_a_truth_are_left_out():
    entry = accuracy_baselines({"a": 1.0}, {"a": 1.0, "b": 5.0, "c": None}, 0.0, 4.0)
    assert entry["devices"] == 1
    empty = accuracy_baselines({}, {"a": 1.0}, 0.0, 4.0)
    assert empty == {
        "devices": 0,
        "constant": None,
        "fleet_mean": None,
        "beats_constant": None,
        "clipped_to_bounds": None,
    }


def _config(**kw) -> StreamConfig:
    fields = dict(run="r", mechanism="sw", eps=2.0, w=5, steps=20, batch_steps=5, lo=0, hi=1)
    fields.update(kw)
    return StreamConfig(**fields)


def test_the_claim_states_what_the_ledgers_spent():
    # 5 charges of 0.4 summed in float64: 2.0000000000000018, a rounding above eps = 2
    ledger = {"max_window_spent": 2.0000000000000018, "devices": {"d0": {}, "d1": {}}}
    entry = privacy_entry(ledger, _config())
    assert entry["within_budget"] is True
    assert entry["devices"] == 2
    assert (entry["eps"], entry["w"], entry["eps0"], entry["mechanism"]) == (2.0, 5, 0.4, "sw")
    for words in ("2-LDP over any 5 consecutive steps", "eps0 = 0.4", "per simulated reading"):
        assert words in entry["claim"], entry["claim"]


def test_a_ledger_above_eps_is_not_within_budget():
    ledger = {"max_window_spent": 2.0 * (1 + 10 * BUDGET_RTOL), "devices": {"d0": {}}}
    assert privacy_entry(ledger, _config())["within_budget"] is False


def test_a_central_release_is_checked_against_its_own_ledger():
    """mechanism = "raw": the devices spend nothing; the collector's release account is
    what the claim rests on (ledger.json ``collector``)."""
    config = _config(mechanism="raw", eps=1.0, w=30)
    account = {"kind": "w-event", "eps": 1.0, "w": 1, "max_window_spent": 1.0}
    ledger = {
        "max_window_spent": 0.0,
        "devices": {"d0": {}},
        "collector": {"accounts": {"gcdp_release": account}},
    }
    entry = privacy_entry(ledger, config)
    assert (entry["max_window_spent"], entry["within_budget"]) == (1.0, True)
    assert "central release" in entry["claim"]
    over = {**account, "max_window_spent": 1.5}
    ledger["collector"]["accounts"]["gcdp_release"] = over
    assert privacy_entry(ledger, config)["within_budget"] is False


def test_estimates_clipped_to_the_public_bounds_are_scored_beside_them():
    """Every truth lies in the public bounds, so an estimate clipped to them is never
    further from it: the clipped figure is post-processing a user can always apply, shown
    beside the unbiased one (one device here estimated 1,793 on a range of 10)."""
    estimates = {"a": 1793.0, "b": -4.0, "c": 6.0}
    truths = {"a": 9.0, "b": 1.0, "c": 5.0}
    entry = accuracy_baselines(estimates, truths, 0.0, 10.0)
    clipped = entry["clipped_to_bounds"]
    assert clipped["mean_abs_error"] == pytest.approx((1.0 + 1.0 + 1.0) / 3)
    assert clipped["max_abs_error"] == pytest.approx(1.0)
    assert clipped["beats_constant"] is True  # 1.0 against the constant's (4 + 4 + 0) / 3
    assert entry["beats_constant"] is False  # the unbiased estimates: (1784 + 5 + 1) / 3


def test_clipping_never_increases_an_error():
    import numpy as np

    rng = np.random.default_rng(7)
    truths = {f"d{i}": float(v) for i, v in enumerate(rng.uniform(-2, 3, 200))}
    estimates = {d: t + float(rng.normal(0, 4)) for d, t in truths.items()}
    entry = accuracy_baselines(estimates, truths, -2.0, 3.0)
    raw = np.mean([abs(estimates[d] - truths[d]) for d in truths])
    assert entry["clipped_to_bounds"]["mean_abs_error"] < raw
