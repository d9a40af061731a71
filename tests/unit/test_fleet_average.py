"""results.json ``accuracy.fleet_average`` and the summary's "fleet average (private)" row:
the figure a stream budget too small for per-device means still gives. The quickstart's
per-device means are worse than a constant guess (4.6 against 0.15) and the run said
nothing of what the budget IS good for; now it prints the fleet's private average beside
its truth, with the collector's own standard error."""

import math

import numpy as np
import pytest
from ldpfleet.app import cli
from ldpfleet.collector.analytics import fleet_average, mean_estimates
from ldpfleet.protocol.stream import StreamConfig

import ldpfleet
from tests.unit.test_summary_device_means_baseline import _render, _results


def test_the_average_its_truth_its_error_and_its_standard_error():
    entry = fleet_average({"a": 1.0, "b": 3.0, "c": 2.0}, {"a": 2.0, "b": 2.0, "c": 2.5})
    assert entry["devices"] == 3
    assert entry["estimate"] == pytest.approx(2.0)
    assert entry["true"] == pytest.approx(13 / 6)
    assert entry["abs_error"] == pytest.approx(1 / 6)
    assert entry["standard_error"] == pytest.approx(1.0 / math.sqrt(3))  # sd 1 (ddof 1)


def test_devices_without_an_estimate_or_a_truth_are_left_out():
    entry = fleet_average({"a": 1.0, "b": 5.0}, {"a": 2.0, "b": None, "c": 9.0})
    assert entry["devices"] == 1 and entry["estimate"] == 1.0 and entry["true"] == 2.0
    assert entry["standard_error"] is None  # one device: no spread to state
    assert fleet_average({}, {"a": 1.0}) is None


def test_one_entry_per_channel_keyed_by_channel_index():
    estimates = {"a": 0.2, "b": 0.9, "c": 0.4, "d": 0.7}
    truths = {"a": 0.3, "b": 0.8, "c": 0.3, "d": 0.8}
    entry = fleet_average(estimates, truths, {"a": 0, "b": 1, "c": 0, "d": 1})
    assert set(entry) == {"0", "1"}
    assert entry["0"]["estimate"] == pytest.approx(0.3) and entry["0"]["true"] == 0.3
    assert entry["1"]["estimate"] == pytest.approx(0.8) and entry["1"]["true"] == 0.8


def _summary(average) -> str:
    return _render(cli._summary_table(_results({"mean_abs_error": 4.6, "fleet_average": average})))


def test_the_summary_prints_the_average_with_its_interval_and_truth():
    average = {
        "devices": 50,
        "estimate": 19.97,
        "true": 20.05,
        "abs_error": 0.08,
        "standard_error": 0.85,
    }
    text = _summary(average)
    assert "fleet average (private)" in text
    assert "19.97 ± 1.7 (95 %); true 20.05, error 0.08" in text


def test_no_row_without_a_single_channel_average():
    assert "fleet average" not in _summary(None)
    per_channel = {"0": {"estimate": 0.3, "true": 0.3, "abs_error": 0.0, "standard_error": 0.1}}
    assert "fleet average" not in _summary(per_channel)


def test_the_private_average_of_square_wave_reports_is_within_its_stated_error():
    """Through the collector's own ``mean_estimates`` on Square Wave reports (ε0 = 0.4, the
    quickstart's per-report budget): 60 devices, each 200 readings around its own level in
    [10, 30] (bounds [5, 35]). Each device's estimate is unbiased with independent noise,
    so (estimate − true) / SE is about N(0, 1), and smaller, since SE also holds the
    devices' real spread (conservative). Threshold 5.5 SE: P(|N(0, 1)| > 5.5) = 3.8e-8,
    and against a t(59) reference (SE from 60 devices) P(|t| > 5.5) ≈ 8e-7 — a false
    failure near 1e-6. SE is pinned to the estimates' spread / √60, so an average of the
    wrong numbers (the reports in [0, 1] units, the truths) or a missing √n fails."""
    rng = np.random.default_rng(20261206)
    config = StreamConfig(
        run="avg", mechanism="sw", eps=2.0, w=5, steps=200, batch_steps=5, lo=5.0, hi=35.0
    )
    mechanism = config.mechanism_object()
    levels = rng.uniform(10.0, 30.0, size=60)
    streams, truths = {}, {}
    for i, level in enumerate(levels):
        readings = np.clip(level + rng.normal(0.0, 2.0, size=200), 5.0, 35.0)
        truths[f"d{i}"] = float(readings.mean())
        reports = mechanism.perturb((readings - 5.0) / 30.0, rng)
        streams[f"d{i}"] = reports
    estimates = mean_estimates(config, streams)
    entry = fleet_average(estimates, truths)
    spread = np.std(list(estimates.values()), ddof=1)
    assert entry["standard_error"] == pytest.approx(spread / math.sqrt(60), rel=0.01)
    assert entry["abs_error"] <= 5.5 * entry["standard_error"]


def test_a_run_states_the_average_beside_the_fleet_mean_baseline(tmp_path):
    """The average is the same number as ``baselines.fleet_mean.value`` (one channel)."""
    scenario = ldpfleet.parse_scenario(
        """
[scenario]
name = "avg"
seed = 3
[fleet]
devices = 8
[stream]
steps = 40
eps = 2.0
w = 5
[source]
kind = "synthetic"
shape = "sine"
period = 10
amplitude = 1.0
bounds = [-1.0, 1.0]
"""
    )
    results = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path / "run")
    accuracy = results["accuracy"]
    average = accuracy["fleet_average"]
    assert average["devices"] == 8
    assert average["estimate"] == pytest.approx(accuracy["baselines"]["fleet_mean"]["value"])
    means = [v["true_mean"] for v in results["per_device"].values()]
    assert average["true"] == pytest.approx(float(np.mean(means)))


def test_the_printed_interval_uses_students_t_for_few_devices():
    """3 devices: t(2) = 4.303 standard errors, not 1.96 (a 1.96 interval of 3 estimates
    covers about 81 %)."""
    from ldpfleet.app.accuracy_text import fleet_average_text

    entry = {"devices": 3, "estimate": 20.0, "true": 20.1, "abs_error": 0.1, "standard_error": 1}
    assert fleet_average_text(entry).startswith("20 ± 4.3 (95 %)")
    entry["devices"] = 1000  # many devices: the normal quantile
    assert fleet_average_text(entry).startswith("20 ± 2 (95 %)")


def test_the_interval_covers_the_true_average_95_percent_of_the_time_with_few_devices():
    """Coverage of estimate ± half-width over 40,000 fleets of 5 devices whose private
    estimates are normal around the truth (the interval is then exact: 95 %). Threshold:
    the coverage's standard deviation is sqrt(0.95 · 0.05 / 40,000) = 0.00109; 0.95 -
    5 × 0.00109 = 0.9445 fails a correct interval with probability ~3e-7. The 1.96
    interval covers 87.8 % at 5 devices and fails it."""
    from ldpfleet.app.accuracy_text import _t_quantile_975

    rng = np.random.default_rng(20261206)
    estimates = rng.normal(0.0, 3.0, size=(40_000, 5))
    standard_error = estimates.std(axis=1, ddof=1) / math.sqrt(5)
    covered = np.abs(estimates.mean(axis=1)) <= _t_quantile_975(5) * standard_error
    assert covered.mean() >= 0.9445
