"""Pieces of a stream run's results.json, shared by every way of running one.

``ldpfleet run`` in one process (``scenarios.runner``), the collector side of a split run
(``scenarios.sides``) and the coordinator that merges a split run's pieces
(``scenarios.coordinator``) write the same layout; the entries that only read the
collector's results, the recorder and the GC-DP stage are built here, once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from ldpfleet.broker.trace import hellos_missing_from_trace, reports_missing_from_trace
from ldpfleet.collector.analytics import accuracy_baselines, fleet_average
from ldpfleet.scenarios.schema import LoadedScenario

# The collector's counters results.json copies as they are, in this order ("devices_unfinished",
# which only the fleet knows, goes between the first two and the rest).
COLLECTOR_DEVICE_COUNTS = ("devices", "devices_complete")
COLLECTOR_REPORT_COUNTS = (
    "reports_expected",
    "reports_received",
    "reports_rejected",
    "reports_duplicate",
    "reports_lost",
    "rejections_by_field",
    # stable reason keys (docs/reliability.md, "Bad input"); an identical replay of a
    # received batch is a duplicate (reports_duplicate), not a rejection
    "rejections_by_reason",
    # batches devices refused to privatise (their ledger), each announced by a
    # budget_refused message (docs/reliability.md, "Budget safety"); not lost
    "reports_refused",
    "budget_refusals",
    # devices that stopped because the collector finally rejected one of their messages
    # (a parameter or domain disagreement no retransmission fixes), with the rejection;
    # their batches from it on are withdrawn, not lost (docs/reliability.md)
    "devices_rejected",
    "device_rejections",
    "reports_withdrawn",
    "missing_batches",
)


def collector_counts(c: dict, devices_unfinished: int | None) -> dict:
    """The collector's counters, with the fleet's ``devices_unfinished`` between the device
    and the report counts (None where the fleet ran elsewhere)."""
    return {
        **{key: c.get(key) for key in COLLECTOR_DEVICE_COUNTS},
        "devices_unfinished": devices_unfinished,
        **{key: c.get(key) for key in COLLECTOR_REPORT_COUNTS},
    }


def stream_entry(config, c: dict) -> dict:
    """results.json ``stream``: the stream's public parameters and the values received."""
    received = c.get("reports_received") or 0
    return {
        "mechanism": config.mechanism,
        "eps": config.eps,
        "w": config.w,
        "eps0": config.eps0,
        "steps": config.steps,
        "batch_steps": config.batch_steps,
        "bounds": [config.lo, config.hi],
        "values_received": received * config.batch_steps
        if config.steps % config.batch_steps == 0
        else None,
    }


def stream_stage_entry(c: dict, *, aborted: bool, fleet_seconds: float | None) -> dict:
    """results.json ``stages.stream``: "aborted" (the run's deadline stopped the stage),
    "complete" (nothing lost, no device rejected) or "incomplete"."""
    if aborted:
        status = "aborted"
    elif c.get("reports_lost") == 0 and not c.get("devices_rejected"):
        status = "complete"
    else:
        status = "incomplete"
    return {
        "status": status,
        "seconds": c.get("stream_seconds"),
        "fleet_seconds": fleet_seconds,
        "close_reason": c.get("close_reason"),
    }


def reconstruction_summary(reconstruction: dict | None) -> dict | None:
    """results.json ``reconstruction``: everything but the per-device entries (those go
    into ``per_device``); None when the collector reconstructed nothing."""
    return {k: v for k, v in (reconstruction or {}).items() if k != "per_device"} or None


def gcdp_stage_entry(gcdp: dict) -> dict:
    """results.json ``stages.gcdp`` from the release's entry."""
    complete = gcdp["windows_released"] == gcdp["windows_expected"]
    return {
        "status": "complete" if complete else "incomplete",
        "calibration_seconds": gcdp["calibration_seconds"],
    }


def gcdp_ledger(stage, gcdp: dict | None) -> dict | None:
    """A GC-DP stage's ledger with its accounting (None without a release)."""
    if stage is None or gcdp is None:
        return None
    return {
        **stage.ledger.to_dict(),
        "eps_cal": gcdp["eps_cal"],
        "eps_rel": gcdp["eps_rel"],
        "per_record_loss": gcdp["eps_cal"] + gcdp["ledger_per_record_loss"],
        "accounting": "windows are disjoint: each clipped channel value at one timestamp "
        "is in one window, so its loss is eps_cal + eps_rel (parallel composition); "
        "total_spent sums disjoint windows",
    }


def trace_entry(scenario: LoadedScenario, recorder, out: Path | None) -> dict:
    """results.json ``trace``: the recorder's key and counts, and the stored reports the
    trace misses (None when the trace keeps the control plane only, or nothing was
    stored)."""
    return {
        "path": "trace.sqlite",
        # the recorder's Ed25519 key: what ``ldpfleet trace verify`` checks against
        "public_key": getattr(recorder, "public_key", None),
        "messages": recorder.recorded if recorder else 0,
        "by_kind": dict(sorted(recorder.by_kind.items())) if recorder else {},
        # stored reports the recorder never saw (a broker restart without persistence)
        "missing_reports": reports_missing_from_trace(
            out / "trace.sqlite", out / "collector.sqlite"
        )
        if out is not None and scenario.spec.collector.trace == "all"
        else None,
        # devices with stored reports whose hello the recorder never saw (a broker that
        # dropped messages queued for the recorder): ``trace verify`` fails on them
        "missing_hellos": hellos_missing_from_trace(out / "trace.sqlite", out / "collector.sqlite")
        if out is not None
        else None,
    }


def trace_gap_warnings(trace: dict | None) -> list[str]:
    """results.json ``warnings`` for what the trace lacks of what the collector stored."""
    trace = trace or {}
    hellos, reports = trace.get("missing_hellos") or 0, trace.get("missing_reports") or 0
    if not (hellos or reports):
        return []
    return [
        f"the trace lacks {hellos:,} devices' hellos and {reports:,} stored reports that the "
        "collector received (results.json trace.missing_hellos, trace.missing_reports): the "
        "broker dropped messages queued for the trace recorder (Mosquitto's default "
        "max_queued_messages 1000; docs/mosquitto/large-fleet.conf raises it), so `ldpfleet "
        "trace verify` will report their reports; the stored data is complete"
    ]


def accuracy_entry(scenario: LoadedScenario, config, estimates: dict, outcomes: list) -> dict:
    """results.json ``accuracy``: the device means' error against the simulator's truth
    (``outcomes``: the fleet's ``DeviceOutcome``, with each device's true mean)."""
    errors = [abs(estimates[o.device] - o.true_mean) for o in outcomes if o.device in estimates]
    truths = {o.device: o.true_mean for o in outcomes}
    channels = len(scenario.spec.source.columns) if scenario.multi_column else 1
    groups = {d: i % channels for i, d in enumerate(scenario.device_ids())}  # channel
    units = (
        "[0, 1] units: each channel normalised by its bounds"
        if scenario.multi_column
        else "physical units"
    )
    return {
        "metric": f"per-device mean of the clipped stream ({units})",
        # every device mean is the stream mechanism's own unbiased estimate_mean
        "estimator": f"{config.mechanism} estimate_mean",
        "mean_abs_error": float(np.mean(errors)) if errors else None,
        "max_abs_error": float(np.max(errors)) if errors else None,
        # a constant guess and the fleet's average estimate, scored the same way
        "baselines": accuracy_baselines(estimates, truths, config.lo, config.hi, groups),
        # what the budget is for: the fleet's average, with a standard error
        "fleet_average": fleet_average(estimates, truths, groups),
    }


def collector_delivery(scenario: LoadedScenario, c: dict, service, recorder) -> dict:
    """The collector's part of results.json ``delivery`` (its and the recorder's
    reconnects, what it republished, duplicates, losses and its peak of pending
    deliveries); ``delivery_entry`` adds the fleet's part."""
    session = getattr(service, "session", None)
    rec_session = getattr(recorder, "session", None)
    return {
        "collector_reconnects": session.reconnects if session else 0,
        "recorder_reconnects": rec_session.reconnects if rec_session else 0,
        "collector_republished": session.republished if session else 0,
        "reports_duplicate": c.get("reports_duplicate"),
        "reports_lost": c.get("reports_lost"),
        # most deliveries the collector ever had buffered unconsumed: bounded by the
        # credit flow control (max_in_flight), whatever the offered load
        "collector_peak_pending": c.get("peak_pending"),
        "max_in_flight": scenario.spec.collector.max_in_flight,
    }


def delivery_entry(collector: dict, outcomes: list) -> dict:
    """results.json ``delivery``: what the connections went through and what was sent
    again (docs/reliability.md, "Delivery"): every loss on the wire is repaired by a
    resend or shows up here. ``collector``: ``collector_delivery``'s part."""
    return {
        "device_reconnects": sum(o.reconnects for o in outcomes),
        "devices_reconnected": sum(1 for o in outcomes if o.reconnects),
        "collector_reconnects": collector["collector_reconnects"],
        "recorder_reconnects": collector["recorder_reconnects"],
        "republished": sum(o.republished for o in outcomes) + collector["collector_republished"],
        "retransmissions": sum(o.retransmissions for o in outcomes),
        "reports_duplicate": collector["reports_duplicate"],
        "reports_lost": collector["reports_lost"],
        "collector_peak_pending": collector["collector_peak_pending"],
        "max_in_flight": collector["max_in_flight"],
    }
