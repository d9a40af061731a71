"""Gaps found by helper T4's planted-bug hunt in the pieces of a stream run's results.json
(scenarios/stream_document.py), which only end-to-end runs exercised (whose figures are
mostly zeros: no reconnect, no loss, no rejection). Hand-made inputs with a different
figure in every field; each test names the mutants it kills."""

from __future__ import annotations

from types import SimpleNamespace

from ldpfleet.scenarios import stream_document as sd


def _config(steps: int = 8, batch_steps: int = 4):
    return SimpleNamespace(mechanism="sw", eps=2.0, w=4, eps0=0.5, steps=steps,
                           batch_steps=batch_steps, lo=0.0, hi=1.0)  # fmt: skip


def test_values_received_counts_values_not_reports():
    """Kills SD1: ``stream.values_received`` gave the reports (batches) received, not
    the values in them (batch_steps each)."""
    assert sd.stream_entry(_config(), {"reports_received": 6})["values_received"] == 24
    assert sd.stream_entry(_config(steps=10), {"reports_received": 6})["values_received"] is None


def test_a_stage_with_a_rejected_device_is_incomplete():
    """Kills SD2: a stream stage where nothing was lost but a device was stopped by a
    rejection was called "complete"."""
    entry = sd.stream_stage_entry({"reports_lost": 0, "devices_rejected": 1}, aborted=False,
                                  fleet_seconds=None)  # fmt: skip
    assert entry["status"] == "incomplete"
    clean = sd.stream_stage_entry({"reports_lost": 0, "devices_rejected": 0}, aborted=False,
                                  fleet_seconds=None)  # fmt: skip
    assert clean["status"] == "complete"


def test_a_release_missing_a_window_is_incomplete():
    """Kills SD3: the GC-DP stage "complete" when any window was released."""
    entry = sd.gcdp_stage_entry({"windows_released": 3, "windows_expected": 4,
                                 "calibration_seconds": 1.0})  # fmt: skip
    assert entry["status"] == "incomplete"


def test_the_per_record_loss_adds_the_calibrations_epsilon():
    """Kills SD4: the ledger's per-record loss without ε_cal (the calibration reads each
    reading too: the loss is ε_cal + ε_rel, docs/gcdp-fleet.md)."""

    class Ledger:
        def to_dict(self):
            return {"owner": "collector"}

    stage = SimpleNamespace(ledger=Ledger())
    gcdp = {"eps_cal": 0.25, "eps_rel": 1.0, "ledger_per_record_loss": 1.0}
    assert sd.gcdp_ledger(stage, gcdp)["per_record_loss"] == 1.25


def test_a_trace_missing_only_hellos_or_only_reports_warns():
    """Kills SD5: the trace-gap warning given only when BOTH hellos and reports were
    missing from the trace."""
    assert len(sd.trace_gap_warnings({"missing_hellos": 2, "missing_reports": 0})) == 1
    assert len(sd.trace_gap_warnings({"missing_hellos": 0, "missing_reports": 5})) == 1
    assert sd.trace_gap_warnings({"missing_hellos": 0, "missing_reports": 0}) == []


def _outcome(reconnects: int, republished: int, retransmissions: int):
    return SimpleNamespace(reconnects=reconnects, republished=republished,
                           retransmissions=retransmissions)  # fmt: skip


def test_the_delivery_entry_sums_the_fleet_and_the_collector():
    """Kills SD7 (the collector's republished messages left out of ``republished``) and
    SD8 (every device counted as reconnected)."""
    collector = {"collector_reconnects": 1, "recorder_reconnects": 0,
                 "collector_republished": 4, "reports_duplicate": 0, "reports_lost": 0,
                 "collector_peak_pending": 3, "max_in_flight": 8}  # fmt: skip
    entry = sd.delivery_entry(collector, [_outcome(2, 1, 5), _outcome(0, 0, 0)])
    assert entry["device_reconnects"] == 2 and entry["devices_reconnected"] == 1
    assert entry["republished"] == 5 and entry["retransmissions"] == 5


def test_the_reconstruction_summary_leaves_the_per_device_entries_out():
    """Kills SD9: results.json ``reconstruction`` repeated every device's entry (they go
    into ``per_device``)."""
    summary = sd.reconstruction_summary({"method": "cpr", "per_device": {"d1": {}}})
    assert summary == {"method": "cpr"}


def test_the_collector_counts_carry_the_fleets_unfinished_devices():
    """Kills SD10: ``devices_unfinished`` written 0 whatever the fleet said."""
    counts = sd.collector_counts({"devices": 4, "devices_complete": 3}, 1)
    assert counts["devices_unfinished"] == 1 and list(counts)[:3] == [
        "devices", "devices_complete", "devices_unfinished"]  # fmt: skip


def test_the_device_means_error_is_absolute():
    """Kills SD6: the per-device errors signed (an estimate 0.2 under and one 0.2 over
    the truth gave a mean "absolute" error of 0)."""
    scenario = SimpleNamespace(multi_column=False, device_ids=lambda: ["d1", "d2"])
    outcomes = [SimpleNamespace(device="d1", true_mean=0.5),
                SimpleNamespace(device="d2", true_mean=0.5)]  # fmt: skip
    entry = sd.accuracy_entry(scenario, _config(), {"d1": 0.3, "d2": 0.7}, outcomes)
    assert abs(entry["mean_abs_error"] - 0.2) < 1e-12
    assert abs(entry["max_abs_error"] - 0.2) < 1e-12
