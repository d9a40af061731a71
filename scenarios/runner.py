"""The runner: broker + recorder + collector + fleet for one scenario, then the outputs.

``run_scenario`` starts the broker (unless external), the trace recorder, the collector and
the fleet in one event loop, waits until the collector closes the stream stage, and writes
``OUT/results.json``, ``OUT/trace.sqlite``, ``OUT/ledger.json`` (and the collector's report
store ``OUT/collector.sqlite``). A ``[gcdp]`` scenario adds the collector's GC-DP release
stage (``collector.gcdp_stage``): results.json gets a ``gcdp`` entry (with the error of the
released window means against the simulator's true ones) and ledger.json the collector's
own ledger. The same pieces run as separate processes through the
``ldpfleet broker|collector|fleet`` commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import operator
import os
import re
import resource
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
from ldpfleet.broker.auth import ADMIN, AuthError, Credentials, use_credentials
from ldpfleet.broker.mqtt import BrokerUrlError, parse_broker_url
from ldpfleet.broker.recorder import (
    TraceRecorder,
    control_filters,
    stamp_public_key,
)
from ldpfleet.broker.select import open_broker
from ldpfleet.broker.transport import AsUser, Transport
from ldpfleet.collector.analytics import note_secure_sum, privacy_entry, sw_mean_estimates
from ldpfleet.collector.metrics import cosine_distance, period_correct
from ldpfleet.collector.service import CollectorService, announce_run_closed
from ldpfleet.devices.fleet import DeviceOutcome, Fleet
from ldpfleet.devices.hostile import HostileClient
from ldpfleet.devices.secagg_agent import SecAggAgent
from ldpfleet.devices.sources import (
    missing_entry,
    replay_jump_warnings,
    source_cycles_entry,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.ledger import within_budget
from ldpfleet.protocol.rendezvous import scenario_digest
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.stream import StreamConfig
from ldpfleet.protocol.sw import normalise
from ldpfleet.protocol.topics import check_ident
from ldpfleet.scenarios.cadr_run import every_set, fresh_outputs, scenario_header
from ldpfleet.scenarios.clipping import add_clipping
from ldpfleet.scenarios.jsonout import write_json, write_results
from ldpfleet.scenarios.plans import fleet_config, gcdp_stage_config, run_connection
from ldpfleet.scenarios.plugin_load import export_plugin_folder
from ldpfleet.scenarios.schema import SEED_MAX, LoadedScenario, ScenarioError, load_scenario
from ldpfleet.scenarios.schema_checks import (
    secure_sum_risk_warnings,
    unclaimable_period_warnings,
)
from ldpfleet.scenarios.secure_sum_stage import collect_secure_sum, secure_sum_participants
from ldpfleet.scenarios.shards import ShardedFleet, shards_entry
from ldpfleet.scenarios.stream_document import (
    accuracy_entry,
    collector_counts,
    collector_delivery,
    delivery_entry,
    gcdp_ledger,
    gcdp_stage_entry,
    reconstruction_summary,
    stream_entry,
    stream_stage_entry,
    trace_entry,
    trace_gap_warnings,
)

T = TypeVar("T")
SECURE_SUM_SESSION = "sum0"  # the [secure_sum] stage's one aggregation session
SECURE_SUM_TOTAL_MAX = 1000  # results.json lists the decoded total up to this many entries
TRUTH_SAMPLE = 4  # devices whose clean stream is saved beside their reconstruction
# (reports persisted, reports expected[, devices joined, devices]): the stream stage
ProgressCallback = Callable[..., None]
# A coroutine run beside the fleet once the collector listens (fault and attack experiments):
# it gets the transport, the run id and the collector service. With auth on, its
# connections log in as the run's ``admin`` (every topic of the run): an attack experiment
# models what got past the broker's ACL (a compromised device, a broker without ACLs).
# A side task with a ``ready`` asyncio.Event (e.g. subscribed to what it attacks) is waited
# for before the fleet starts, so nothing it must see can pass before it listens.
SideTask = Callable[[Transport, str, CollectorService], Awaitable[None]]


def run_credentials(
    scenario: LoadedScenario,
    broker: str | Transport,
    run: str,
    credentials: Credentials | None = None,
    *,
    devices: list[str] | None = None,
) -> Credentials | None:
    """The credentials a run uses, per ``[broker] auth`` (docs/scenarios.md):

    - given ``credentials`` (``--credentials``, from ``ldpfleet mosquitto-config``): those;
    - ``auth = false``, or a ready ``Transport`` object: none (anonymous, no ACL);
    - ``embedded`` or ``memory``: fresh ones for this run unless ``auth = false``;
    - an ``mqtt://`` URL: none unless ``auth = true``, which needs ``credentials`` (the
      external broker must know the passwords: its password file is generated with them).
    """
    setting = scenario.spec.broker.auth
    if credentials is not None:
        if setting is False:
            raise AuthError("[broker] auth = false, but credentials were given")
        if credentials.run != run:
            raise AuthError(
                f"the credentials are for run {credentials.run!r}, not {run!r} (use --run "
                f"{credentials.run})"
            )
        return credentials
    if setting is False or not isinstance(broker, str):
        return None
    if broker in ("embedded", "memory"):
        return Credentials.generate(run, devices, partitions=scenario.spec.collector.partitions)
    if setting is True:
        raise AuthError(
            f"[broker] auth = true on {broker}: the broker must know the passwords; generate "
            "them with `ldpfleet mosquitto-config SCENARIO --out DIR --run RUN`, start the "
            "broker with DIR/mosquitto.conf and pass --credentials DIR/credentials.json"
        )
    return None


def new_run_id(scenario: LoadedScenario) -> str:
    """A fresh run id: the scenario name and a random suffix (never reused on a broker)."""
    return f"{scenario.name}-{secrets.token_hex(3)}"


def ledger_document(
    run: str,
    eps: float,
    w: int,
    outcomes: list[DeviceOutcome],
    *,
    collector: dict | None = None,
) -> dict:
    """ledger.json: every device's ledger and the worst window over the fleet, and (central
    releases) the collector's own ledger."""
    # a device whose shard wrote nothing has no stream account to report
    outcomes = [o for o in outcomes if "stream" in o.ledger.get("accounts", {})]
    worst = max((o.ledger["accounts"]["stream"]["max_window_spent"] for o in outcomes), default=0.0)
    document = {
        "run": run,
        "eps": eps,
        "w": w,
        "max_window_spent": worst,
        "within_budget": within_budget(worst, eps),
        "refusals": sum(o.ledger["accounts"]["stream"]["refusals"] for o in outcomes),
        "devices": {o.device: o.ledger for o in outcomes},
    }
    if collector is not None:
        document["collector"] = collector
    return document


def score_gcdp(entry: dict, stage, fleet: Fleet, window: int, bounds: tuple[float, float]) -> dict:
    """Add what only the simulator knows to the ``gcdp`` entry: the error of each released
    window mean against the true mean of the clipped, normalised readings (``bounds``:
    ``LoadedScenario.stream_bounds``, what the clean streams are normalised from — a
    one-``bounds`` source's clean streams are in physical units; compared as they were, an
    Intel Lab run said "MAE 93.7" in [0, 1] units: helper N)."""
    released = stage.released_values()
    devices = entry["nodes"]
    clean = {d: normalise(fleet.clean[d], *bounds) for d in devices}
    truth = {
        k: np.array([float(np.mean(clean[d][k * window : (k + 1) * window])) for d in devices])
        for k in released
    }
    errors = np.array([np.abs(released[k] - truth[k]) for k in released])
    clipped = np.array([np.abs(np.clip(released[k], 0.0, 1.0) - truth[k]) for k in released])
    centre = (entry.get("public_baseline") or {}).get("calibration_mean")
    free = np.array([np.abs(np.asarray(centre) - truth[k]) for k in released]) if centre else None
    return {
        **entry,
        "accuracy": {
            "metric": "abs error of released window means vs true means ([0, 1] units)",
            "mae": float(errors.mean()) if errors.size else None,
            "mae_clipped": float(clipped.mean()) if clipped.size else None,
            "mae_per_node": errors.mean(axis=0).tolist() if errors.size else None,
            # the free baseline scored the same way: each node's public calibration mean
            "public_baseline_mae": float(free.mean()) if free is not None and free.size else None,
        },
        "released": {str(k): released[k].tolist() for k in released},
        "true_means": {str(k): truth[k].tolist() for k in truth},
    }


def secure_sum_vectors(scenario: LoadedScenario, clean: dict[str, np.ndarray]) -> dict:
    """Each device's ``[secure_sum]`` input: the first ``dim`` readings of its clean stream,
    clipped to the fixed-point range (``clean``: device -> its clean stream)."""
    section = scenario.spec.secure_sum
    assert section is not None
    fixed_point = scenario.fixed_point()
    low, high = fixed_point.clip_low, fixed_point.clip_high
    return {d: np.clip(values[: section.dim], low, high) for d, values in clean.items()}


def secure_sum_dropouts(scenario: LoadedScenario, devices: list[str], seed: int) -> set[str]:
    """The devices that drop out of the ``[secure_sum]`` stage: a seeded ``dropout``
    fraction of ``devices`` (every device of the fleet, in index order), the same wherever
    the devices run."""
    section = scenario.spec.secure_sum
    assert section is not None
    chooser = np.random.default_rng([seed, 0x5EC])
    n_drop = round(section.dropout * len(devices))
    return set(chooser.choice(devices, size=n_drop, replace=False)) if n_drop else set()


def secure_sum_entry(scenario: LoadedScenario, devices: list[str], result) -> dict:
    """The results.json ``secure_sum`` entry from the collector's ``SecureSumResult`` (what
    the collector knows: ``score_secure_sum`` adds the check against the true inputs)."""
    section = scenario.spec.secure_sum
    assert section is not None
    entry: dict = {
        "dim": section.dim,
        "graph": section.graph,
        "devices": len(devices),
        "dropped_devices": sorted(result.dropped),
        "survivors": len(result.survivors),
        "aborted": result.aborted,
        "seconds": result.seconds,
        "seconds_per_stage": result.stage_seconds,
        "collector": result.summary,
    }
    if result.total is not None:
        entry["total"] = result.total.tolist() if section.dim <= SECURE_SUM_TOTAL_MAX else None
    return entry


def score_secure_sum(
    scenario: LoadedScenario, entry: dict, total, survivors, vectors: dict
) -> dict:
    """Add what only the simulator knows: the error of the decoded ``total`` against the
    true sum of the survivors' clipped inputs, and whether it is within rounding."""
    if total is None:
        return entry
    fixed_point = scenario.fixed_point()
    truth = np.sum([vectors[d] for d in survivors], axis=0)
    decoded = np.asarray(total, dtype=np.float64)
    error = float(np.max(np.abs(decoded - truth)))
    exact = _sum_exact(fixed_point, decoded, survivors, vectors, error)
    return {**entry, "max_abs_error": error, "exact": exact}


def _sum_exact(fixed_point, decoded: np.ndarray, survivors, vectors: dict, error: float) -> bool:
    """docs/secagg.md's ``exact``: the unmasked integer total equals the survivors'
    fixed-point encodings summed. The decoded floats give the integers back
    (rint((total - n clip_low) scale)) while their rounding stays far below one unit;
    past that (totals beyond 2^53 units) the decoding's own bound is all that is checked:
    within n / (2 scale) of the clipped inputs' sum (``error``: the largest difference from
    it, as ``score_secure_sum`` measured). (Held-out QA, helper T: the bound alone
    said ``exact: true`` at scale 0.04 with one survivor's input left out of the total.)"""
    n = len(survivors)
    per_entry = np.sum([fixed_point.encode(vectors[d]).astype(object) for d in survivors], axis=0)
    offset = n * fixed_point.clip_low
    magnitude = float(max(np.max(np.abs(decoded)), abs(offset), 1.0))
    if np.spacing(magnitude) * 4 * fixed_point.scale < 0.25 and max(per_entry) < 2**53:
        units = np.rint((decoded - offset) * fixed_point.scale)
        return all(int(u) == int(e) for u, e in zip(units, per_entry, strict=True))
    return error <= n / (2 * fixed_point.scale) + 1e-9


async def run_secure_sum_stage(
    scenario: LoadedScenario, transport: Transport, run: str, fleet: Fleet, seed: int
) -> dict:
    """The ``[secure_sum]`` stage: every device of the fleet takes part with the first
    ``dim`` readings of its clean stream (clipped); a seeded ``dropout`` fraction drops at
    ``dropout_stage`` (announced, like an MQTT last will). The stage opens under the rule
    the split run's collector side uses too (``scenarios.secure_sum_stage``). Returns the
    results.json entry."""
    section = scenario.spec.secure_sum
    assert section is not None
    devices = scenario.device_ids()
    vectors = secure_sum_vectors(scenario, {d: fleet.clean[d] for d in devices})
    dropping = secure_sum_dropouts(scenario, devices, seed)
    # a device that crashed mid-stream and never came back ([faults] never_return) is
    # still in the collector's list (it cannot know) but runs no agent: silent, the join
    # deadline counts it out (held-out QA, helper T: such devices were summed)
    gate = asyncio.Semaphore(scenario.spec.fleet.connect_concurrency)
    agents = [
        SecAggAgent(
            transport,
            SecAggClient(run, SECURE_SUM_SESSION, d, vectors[d]),
            dropout=section.dropout_stage if d in dropping else None,
            announce_dropout=True,
            connect_gate=gate,
            ready=True,
        )
        for d in secure_sum_participants(fleet)
    ]
    tasks: list[asyncio.Task] = []

    def start_agents() -> None:
        tasks.extend(asyncio.create_task(agent.run()) for agent in agents)

    try:
        result = await collect_secure_sum(
            scenario, transport, run, SECURE_SUM_SESSION, on_listening=start_agents
        )
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if isinstance(result, dict):  # no device joined: no session
        return result
    entry = secure_sum_entry(scenario, devices, result)
    return score_secure_sum(scenario, entry, result.total, result.survivors, vectors)


def score_reconstructions(
    summary: dict, reconstructions: dict, fleet: Fleet, config, *, tolerance: int = 0
) -> dict:
    """Add what only the simulator can know: ``period_correct`` (within ``tolerance``) and
    ``cosine_distance`` to the clean clipped stream (collector.metrics), per device and
    on average. Only CPR looks for a period: the other methods (sw, sw_moving, sw_filter,
    laplace) get ``period_correct`` None and no ``period_accuracy`` (they were scored as
    wrong on every device: "period accuracy 0%" for a method that never names a period)."""
    per_device = {device: dict(entry) for device, entry in summary["per_device"].items()}
    detects = summary.get("method") == "cpr"
    for device, result in reconstructions.items():
        entry = per_device[device]
        truth = fleet.true_periods.get(device)
        entry["period_true"] = truth
        entry["period_correct"] = (
            period_correct(result.period, truth, tolerance=tolerance) if detects else None
        )
        clean = normalise(fleet.clean[device], config.lo, config.hi)
        entry["cosine_distance"] = cosine_distance(result.values, clean)
        # a flat line (CPR's answer when it finds no period), scored the same way
        entry["constant_cosine_distance"] = cosine_distance(np.full(clean.shape, 0.5), clean)
    scored = [e for e in per_device.values() if e.get("period_correct") is not None]
    distances = [e["cosine_distance"] for e in per_device.values() if "cosine_distance" in e]
    flat = [e["constant_cosine_distance"] for e in per_device.values() if "cosine_distance" in e]
    return {
        **summary,
        "period_tolerance": tolerance,
        "per_device": per_device,
        "period_accuracy": (sum(e["period_correct"] for e in scored) / len(scored))
        if scored
        else None,
        "mean_cosine_distance": float(np.mean(distances)) if distances else None,
        "constant_cosine_distance": float(np.mean(flat)) if flat else None,
    }


def recorder_for(
    scenario: LoadedScenario, transport: Transport, run: str, path: Path
) -> TraceRecorder:
    """The trace recorder of ``scenario`` for run ``run``: every message, or the control
    plane only with ``[collector] trace = "control"``."""
    control = scenario.spec.collector.trace == "control"
    return TraceRecorder(
        transport,
        run,
        path,
        filters=control_filters(run) if control else None,
        scenario_digest=scenario_digest(scenario.to_dict()),  # signed with the trace
    )


def collector_for(
    scenario: LoadedScenario,
    transport: Transport,
    run: str,
    store_path: Path,
    *,
    seed: int | None = None,
    central_release: bool = True,
) -> CollectorService:
    """The collector service of ``scenario`` for run ``run``, configured from ``[collector]``
    (with the GC-DP release stage of ``[gcdp]``, seeded by ``seed`` or the scenario's, unless
    ``central_release`` is False: a partition worker, whose coordinator releases)."""
    settings = scenario.spec.collector
    gcdp = None
    if scenario.spec.gcdp is not None and central_release:
        from ldpfleet.collector.gcdp_stage import GcdpStage

        gcdp = GcdpStage(
            gcdp_stage_config(scenario),
            run,
            scenario.device_ids(),
            seed=scenario.spec.scenario.seed if seed is None else seed,
        )
    return CollectorService(
        transport,
        scenario.stream_config(run),
        scenario.device_ids(),
        store_path,
        max_in_flight=settings.max_in_flight,
        credit_window=settings.credit_window,
        stage_timeout=settings.stage_timeout,
        idle_timeout=settings.idle_timeout,
        reconstruct=scenario.spec.stream.reconstruct,
        cpr=scenario.cpr_config(),
        final_stage=scenario.spec.secure_sum is None,
        gcdp=gcdp,
        process_delay=scenario.spec.faults.collector_delay if scenario.spec.faults else 0.0,
    )


def partial_collector_results(collector: CollectorService | None, config, reason: str) -> dict:
    """The collector's results.json counters from what it had persisted when the run was
    aborted (``run_timeout``): everything not persisted counts as lost."""
    machine = collector.machine if collector is not None else None
    warnings: list[str] = []  # a failing estimate_mean's sentence (collector.analytics)
    if machine is None:
        expected = 0 if collector is None else len(collector.devices) * config.n_batches
        summary = {
            "devices": 0 if collector is None else len(collector.devices),
            "devices_complete": 0,
            "reports_expected": expected,
            "reports_received": 0,
            "reports_duplicate": 0,
            "reports_rejected": 0,
            "rejections_by_field": {},
            "rejections_by_reason": {},
            "reports_refused": 0,
            "budget_refusals": {},
            "devices_rejected": 0,
            "device_rejections": {},
            "reports_withdrawn": 0,
            "reports_lost": expected,
        }
        missing: dict = {}
        streams: dict = {}
    else:
        summary = machine.summary()
        missing = {device: seqs for device, seqs in machine.missing().items() if seqs}
        streams = collector.store.device_values() if collector is not None else {}
    # a [gcdp] stage's releases so far: each was charged to its ledger and published
    # before the abort, so results.json ``gcdp`` and ledger.json's collector account
    # must state them (before, an aborted run dropped both: ``trace verify`` found the
    # trace's releases without an account, ``no_ledger``)
    gcdp = getattr(collector, "gcdp", None)
    released = {"gcdp": gcdp.summary()} if gcdp is not None else {}
    return {
        **summary,
        **released,
        "stage_state": "aborted",
        "close_reason": reason,
        "missing_batches": missing,
        "mean_estimates": sw_mean_estimates(config, streams, warnings) if streams else {},
        "mean_estimate_warnings": warnings,
        "stream_seconds": collector.seconds_so_far() if collector is not None else 0.0,
    }


def latency_summary(outcomes: list[DeviceOutcome]) -> dict:
    """p50/p99/max of the fleet's report -> ack latencies, in milliseconds."""
    samples = np.fromiter((x for o in outcomes for x in o.ack_latencies), dtype=float)
    if samples.size == 0:
        return {"samples": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    p50, p99 = np.percentile(samples, [50, 99])
    return {
        "samples": int(samples.size),
        "p50_ms": round(1000 * float(p50), 2),
        "p99_ms": round(1000 * float(p99), 2),
        "max_ms": round(1000 * float(samples.max()), 2),
    }


def fleet_process_stats(fleet) -> dict | None:
    """Per device process (sharded fleets): peak RSS and seconds."""
    if not isinstance(fleet, ShardedFleet):
        return None
    return shards_entry(
        fleet.shards,
        fleet.peak_rss_mb,
        seconds={i: round(t, 3) for i, t in sorted(fleet.shard_seconds.items())},
        exit_codes=fleet.exit_codes,
    )


async def _all_of(coroutines: list[Awaitable[None]]) -> None:
    await asyncio.gather(*coroutines)


async def _until_ready(side_tasks: list, running: asyncio.Task) -> None:
    """Wait until every side task that has a ``ready`` event has set it (or they ended)."""
    events = [
        task.ready for task in side_tasks if isinstance(getattr(task, "ready", None), asyncio.Event)
    ]
    if not events:
        return
    ready = asyncio.ensure_future(every_set(events))
    try:
        await asyncio.wait({ready, running}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        ready.cancel()


def fault_report(faults, fleet, outcomes, collector_results: dict, attacker) -> dict | None:
    """results.json ``faults``: what was injected, and the outcome for each fault."""
    if faults is None:
        return None
    crashed = fleet.crashed if fleet is not None else {}
    by_device = {o.device: o for o in outcomes}
    missing = collector_results["missing_batches"]
    returned = sorted(d for d, c in crashed.items() if c["returned"])
    gone = sorted(d for d, c in crashed.items() if not c["returned"])
    return {
        "injected": {
            "crashes": {device: crashed[device] for device in sorted(crashed)},
            "planned_crashes": len(fleet.crashes) if fleet is not None else 0,
            "hostile": attacker.summary() if attacker is not None else None,
            "collector_delay": faults.collector_delay,
        },
        "outcome": {
            # a returning device restored its storage and completed its stream
            "returned_complete": sum(
                1 for d in returned if by_device[d].state == "done" and d not in missing
            ),
            "returned": len(returned),
            # a device that never came back: its batches are reported missing, not dropped
            "never_returned": {d: len(missing.get(d, [])) for d in gone},
            # batches missing from devices that did NOT crash-and-stay-away (should be 0)
            "other_missing_batches": sum(
                len(seqs) for device, seqs in missing.items() if device not in gone
            ),
            "reports_rejected": collector_results["reports_rejected"],
            "rejections_by_reason": collector_results["rejections_by_reason"],
            "reports_duplicate": collector_results["reports_duplicate"],
        },
    }


async def watch_progress(service: CollectorService, callback: ProgressCallback) -> None:
    """Call ``callback(persisted, expected, joined, devices)`` every 0.2 s while ``service``
    collects (``joined``: devices whose hello arrived — the connect phase)."""
    while True:
        machine = service.machine
        if machine is not None:
            states = machine.devices.values()
            expected = len(machine.devices) * machine.config.n_batches
            persisted = sum(len(s.persisted) for s in states)
            callback(persisted, expected, sum(s.hello for s in states), len(machine.devices))
        await asyncio.sleep(0.2)


def _refused(field: str, reason: str, limit: str, value: object) -> ParameterError:
    return ParameterError(reason, field=field, limit=limit, value=value)


def checked_scenario(scenario: object) -> LoadedScenario:
    """``scenario`` as a ``LoadedScenario``: one already, or loaded from a path or a
    built-in scenario's name (``load_scenario``); TOML text and other types raise
    ``ParameterError`` naming ``scenario``."""
    if isinstance(scenario, LoadedScenario):
        return scenario
    if isinstance(scenario, str) and ("\n" in scenario or scenario.lstrip().startswith("[")):
        raise _refused(
            "scenario",
            "this is TOML text, not a path or a built-in scenario's name: pass "
            "ldpfleet.parse_scenario(text) instead",
            "a path or a built-in scenario's name, not TOML text",
            scenario,
        )
    if not isinstance(scenario, str | os.PathLike) or scenario == "":
        raise _refused(
            "scenario",
            "must be a LoadedScenario (ldpfleet.parse_scenario / load_scenario), a path to a "
            f"scenario file or a built-in scenario's name, got {scenario!r:.80}",
            "a LoadedScenario, a path to a scenario file or a built-in scenario's name",
            scenario,
        )
    return load_scenario(Path(scenario).expanduser() if str(scenario)[:1] == "~" else scenario)


def checked_run_options(
    broker: object, out_dir: object, seed: object, run_id: object
) -> int | None:
    """Refuse what ``run_scenario`` cannot use before anything starts, each option named
    with its limit and value (``ParameterError``); returns ``seed`` as an ``int`` (a numpy
    integer is one) or ``None``."""
    if broker is not None and not (
        (isinstance(broker, str) and broker) or hasattr(broker, "connect")
    ):
        raise _refused(
            "broker",
            "must be 'memory', 'embedded', an mqtt:// or mqtts:// URL, or a Transport; "
            f"got {broker!r}",
            "'memory', 'embedded', an mqtt:// or mqtts:// URL, or a Transport",
            broker,
        )
    if isinstance(broker, str) and broker not in ("memory", "embedded"):
        try:  # a malformed URL is a bad argument, not an unreachable broker
            parse_broker_url(broker)
        except BrokerUrlError as error:
            raise _refused(
                "broker",
                str(error),
                "'memory', 'embedded', an mqtt:// or mqtts:// URL, or a Transport",
                broker,
            ) from None
    if not isinstance(out_dir, str | os.PathLike) or str(out_dir) == "":
        raise _refused(
            "out_dir",
            f"must be a folder's path (str or Path), got {out_dir!r}",
            "a folder's path (str or Path)",
            out_dir,
        )
    if Path(out_dir).expanduser().exists() and not Path(out_dir).expanduser().is_dir():
        raise _refused(
            "out_dir",
            f"{out_dir} is a file, not a folder for the run's outputs",
            "a folder (or a path not yet taken), not a file",
            out_dir,
        )
    from ldpfleet.scenarios.out_paths import out_path_problem

    problem = out_path_problem(Path(out_dir).expanduser())
    if problem is not None:
        raise _refused(
            "out_dir",
            f"cannot create {out_dir}: {problem}",
            "a folder (or a path not yet taken) the run can create",
            out_dir,
        )
    writable = _nearest_folder(Path(out_dir).expanduser())
    if writable is not None and not os.access(writable, os.W_OK | os.X_OK):
        raise _refused(
            "out_dir",
            f"cannot write {out_dir}: {writable} is not writable (a read-only folder or "
            "file system)",
            "a folder this user can write (or a new path under one)",
            out_dir,
        )
    if run_id is not None:
        check_ident(run_id, "run_id")
    if seed is None:
        return None
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise _refused(
            "seed",
            f"must be an integer in [0, 2^63 - 1], got {seed!r}",
            "an integer in [0, 2^63 - 1]",
            seed,
        )
    if not 0 <= operator.index(seed) <= SEED_MAX:
        raise _refused(
            "seed",
            f"must be an integer in [0, 2^63 - 1], got {seed!r}",
            "an integer in [0, 2^63 - 1]",
            seed,
        )
    return operator.index(seed)


def device_processes(scenario: LoadedScenario, broker: object) -> int:
    """How many device processes a stream run of ``scenario`` on ``broker`` starts (1: its
    devices run in this process; a ``Transport`` object: the run decides, 1 on memory)."""
    if scenario.spec.cadr is not None or scenario.spec.fleet is None:
        return 1
    spec = broker if broker is not None else scenario.spec.broker.url
    if not isinstance(spec, str):
        return 1
    return scenario.fleet_shards(spec if spec in ("memory", "embedded") else "mqtt")


def check_main_mechanism(scenario: LoadedScenario, broker: object) -> None:
    """Refuse a mechanism class of the caller's script or notebook (``"__main__:Class"``)
    for a run whose devices run as processes (``[fleet] shards`` > 1 on a real broker):
    their ``__main__`` is not the caller's, every shard failed to load it, and the run
    "completed" with no device (``ScenarioError`` naming ``stream.mechanism``)."""
    stream = scenario.spec.stream
    if stream is None or not stream.mechanism.startswith("__main__:"):
        return
    shards = device_processes(scenario, broker)
    if shards > 1:
        raise ScenarioError(
            f"stream.mechanism: {stream.mechanism!r} is a class of this script or notebook, "
            f"which the {shards} device processes of [fleet] shards = "
            f"{scenario.spec.fleet.shards!r} cannot import: move it into a module of its own "
            "(importable there: installed, or its folder on PYTHONPATH) and name it "
            "'module:Class', or run the devices in this process ([fleet] shards = 1, or "
            "broker='memory')",
            field="stream.mechanism",
            value=stream.mechanism,
            limit="a class the device processes can import (not __main__)",
        )


def share_plugin_folder(scenario: LoadedScenario, broker: object) -> None:
    """For a run with device processes: name the folder this process imported the
    plugin mechanism from for them (``plugin_load.export_plugin_folder``; a plugin made
    importable by ``sys.path.insert`` in the caller's script is found there too), or
    refuse, before anything starts, a plugin module no ``sys.path`` folder explains
    (``ScenarioError`` naming ``stream.mechanism``)."""
    stream = scenario.spec.stream
    if stream is None or device_processes(scenario, broker) <= 1:
        return
    try:
        export_plugin_folder(stream.mechanism)
    except ParameterError as error:
        raise ScenarioError(
            f"stream.mechanism: {error.reason}",
            field="stream.mechanism",
            value=stream.mechanism,
            limit=error.limit,
        ) from None


def checked_progress(progress: object) -> ProgressCallback | None:
    """``progress`` as the runner calls it, ``progress(received, expected, joined,
    devices)`` while the stream runs, ``progress(received, expected)`` at its end: a
    callable naming four positional parameters (the CLI's ``joined=None, devices=None``)
    gets all, any other that takes two (the documented form; ``print``, ``*args``) those
    two; either way behind ``_UserProgress``, which keeps what it raises. Anything else
    (not callable, not callable with two arguments) raises ``ParameterError`` naming
    ``progress`` before the run starts."""
    if progress is None:
        return None
    if not callable(progress):
        raise _refused(
            "progress",
            f"must be a function called as progress(received, expected), got {progress!r:.80}",
            "a callable progress(received, expected)",
            progress,
        )
    try:
        signature = inspect.signature(progress)
    except (TypeError, ValueError):  # a builtin without one (print): the documented two
        return _UserProgress(progress, 2)
    try:
        signature.bind(0, 0)
    except TypeError:
        raise _refused(
            "progress",
            f"must take two positional arguments, progress(received, expected); "
            f"{getattr(progress, '__name__', progress)!r:.80} has the signature {signature}",
            "a callable progress(received, expected)",
            progress,
        ) from None
    named = [
        parameter
        for parameter in signature.parameters.values()
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
    ]
    if len(named) >= 4:  # it names joined and devices too (not given at the end)
        return _UserProgress(progress, None)
    return _UserProgress(progress, 2)  # print, lambda *a: the documented two


class _UserProgress:
    """The caller's ``progress``, called with the arguments it takes (``arguments``: the
    first two only, or all when None); what it raises is kept in ``raised`` and re-raised,
    so that ``run_scenario`` raises the caller's own error as it is, not wrapped in the
    fleet's ``ExceptionGroup: unhandled errors in a TaskGroup``."""

    def __init__(self, callback: Callable[..., object], arguments: int | None) -> None:
        self.callback, self.arguments = callback, arguments
        self.raised: list[BaseException] = []

    def __call__(self, *values: int | None) -> None:
        try:
            self.callback(*(values if self.arguments is None else values[: self.arguments]))
        except BaseException as error:
            self.raised.append(error)
            raise


def _raised_by_progress(group: BaseExceptionGroup, progress: object) -> BaseException | None:
    """The error the caller's ``progress`` raised, if ``group`` holds it."""
    if not isinstance(progress, _UserProgress) or not progress.raised:
        return None
    error = progress.raised[0]
    return error if group.subgroup(lambda leaf: leaf is error) is not None else None


TASK_GROUP_MESSAGE = "unhandled errors in a TaskGroup"  # asyncio.TaskGroup's own groups


def task_group_leaves(group: BaseExceptionGroup) -> list[BaseException]:
    """The errors inside ``group`` and the task groups nested in it (``TASK_GROUP_MESSAGE``;
    a group raised by other code, such as the caller's side task, is one error), each once,
    in order, without cancellations."""
    leaves: list[BaseException] = []
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup) and error.message == TASK_GROUP_MESSAGE:
            found = task_group_leaves(error)
        elif isinstance(error, asyncio.CancelledError):
            found = []
        else:
            found = [error]
        leaves += [leaf for leaf in found if all(leaf is not known for known in leaves)]
    return leaves


def one_error(group: BaseExceptionGroup, progress: object = None) -> BaseException | None:
    """The one error ``run_scenario`` raises for a run's failed task group: the caller's
    ``progress`` error if it raised, else the first error of the run's parts (the
    collector, the recorder, the fleet, a side task, the secure-sum stage: ``_part``
    notes which, e.g. a ``ConnectionLost`` after the broker was gone past
    ``give_up_after``), with a note for each other error (``also raised: ...``). None when
    ``group`` holds only cancellations."""
    leaves = task_group_leaves(group)
    error = _raised_by_progress(group, progress) or (leaves[0] if leaves else None)
    for other in leaves:
        if other is not error and error is not None:
            _add_note(error, f"also raised: {type(other).__name__}: {other}")
    return error


def _add_note(error: BaseException, note: str) -> None:
    """``error.add_note(note)`` unless it has that note already."""
    if note not in getattr(error, "__notes__", ()):
        error.add_note(note)


STOPPED_NOTE = "raised by {part}; the run stopped before writing results.json"


async def _part(name: str, awaitable: Awaitable[T]) -> T:
    """Await one part of a run's task group; what it raises gets the note "raised by
    ``name``" (``one_error`` then raises it alone, with that context)."""
    try:
        return await awaitable
    except Exception as error:
        _add_note(error, STOPPED_NOTE.format(part=name))
        raise


def stopped_by(error: BaseException) -> str | None:
    """The note naming the part of a run that raised ``error`` ("raised by the collector;
    the run stopped ..."), or None: not raised by a running run's part."""
    head, _, tail = STOPPED_NOTE.partition("{part}")
    notes = getattr(error, "__notes__", ())
    return next((n for n in notes if n.startswith(head) and n.endswith(tail)), None)


def _nearest_folder(path: Path) -> Path | None:
    """``path`` or the nearest of its parents that exists, if that is a folder (the one a
    run writes into or creates its folder in); None if it is a file (refused apart)."""
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    return existing if existing is not None and existing.is_dir() else None


_RUNNING_OUT_DIRS: set[Path] = set()  # the out_dir of every run of this process now running
_RUNNING_LOCK = threading.Lock()  # runs in threads claim folders too


_RUNNING_RUN_IDS: set[tuple[str, str]] = set()  # (broker URL, run id) of runs now running


@contextlib.contextmanager
def claimed_run_id(run_id: str | None, broker: object) -> Iterator[None]:
    """Hold ``run_id`` on the external ``broker`` (a URL) for one run of this process: a
    second run with the same ``run_id`` on the same broker while the first runs raises
    ``ParameterError`` naming ``run_id`` before it starts (their clients shared MQTT
    client ids and took each other's connections over: one died in ``ConnectionLost``).
    The in-process and embedded brokers are each run's own: no clash there."""
    if run_id is None or not isinstance(broker, str) or broker in ("memory", "embedded"):
        yield
        return
    key = (broker, run_id)
    with _RUNNING_LOCK:
        if key in _RUNNING_RUN_IDS:
            raise _refused(
                "run_id",
                f"{run_id!r} is the run id of another run of this process on {broker}, still "
                "running: give each concurrent run its own run_id (or leave it out: a fresh "
                "one is drawn)",
                "a run id no other running run of this process uses on this broker",
                run_id,
            )
        _RUNNING_RUN_IDS.add(key)
    try:
        yield
    finally:
        with _RUNNING_LOCK:
            _RUNNING_RUN_IDS.discard(key)


@contextlib.contextmanager
def claimed_out_dir(out_dir: str | os.PathLike) -> Iterator[None]:
    """Hold ``out_dir`` for one run of this process: a second run into the same folder
    while the first runs (``asyncio.gather``, threads) raises ``ParameterError`` naming
    ``out_dir`` before it touches anything (both runs died in "disk I/O error" from their
    shared SQLite files). Released when the run ends, however it ends."""
    folder = Path(out_dir).resolve()
    with _RUNNING_LOCK:
        if folder in _RUNNING_OUT_DIRS:
            raise _refused(
                "out_dir",
                f"{out_dir} is the folder of another run of this process, still running: "
                "give each concurrent run its own out_dir",
                "a folder no other running run of this process holds",
                out_dir,
            )
        _RUNNING_OUT_DIRS.add(folder)
    try:
        yield
    finally:
        with _RUNNING_LOCK:
            _RUNNING_OUT_DIRS.discard(folder)


async def run_scenario(
    scenario: LoadedScenario | str | os.PathLike,
    *,
    broker: str | Transport | None = None,
    out_dir: str | os.PathLike = "runs/latest",
    seed: int | None = None,
    run_id: str | None = None,
    progress: ProgressCallback | None = None,
    side_task: SideTask | None = None,
    credentials: Credentials | None = None,
    shard_brokers: list[str] | None = None,
) -> dict:
    """Run a whole scenario in this process and write its outputs; returns results.

    ``scenario``: a ``LoadedScenario`` (``parse_scenario`` / ``load_scenario``), a path to
    a scenario file or a built-in scenario's name. ``broker``: ``"memory"`` (in-process),
    ``"embedded"`` (an amqtt broker on a free port), an ``mqtt://``/``mqtts://`` URL or a
    ``Transport``; default the scenario's ``[broker] url``. ``out_dir``: the folder the
    outputs go to (created; a previous run's files there are replaced). ``seed``: an
    integer in [0, 2^63 - 1] (a numpy integer too) in place of ``[scenario] seed``.
    ``run_id``: the run's id (1-64 characters of A-Z a-z 0-9 _ . -; default the scenario's
    name and a random suffix). ``progress``: called as ``progress(received, expected)``
    (reports stored so far and in all) every 0.2 s while the stream runs and once at its
    end; a callable that also names ``joined`` and ``devices`` (devices whose hello
    arrived, the fleet's size) gets those too.

    Returns the results dict written to ``out_dir/results.json`` (docs/results.md).

    Raises ``ParameterError`` (``.field`` names the option: ``scenario``, ``broker``,
    ``out_dir``, ``seed``, ``run_id``, ``progress``; ``broker`` also for a malformed URL
    such as ``'http://x'`` or ``'Memory'``; ``out_dir`` also when another run of this
    process is still writing there, ``run_id`` when another uses it on the same broker URL)
    before anything starts, ``ScenarioError`` for a scenario file that does not load or a
    ``__main__`` mechanism class with device processes (or a plugin module no ``sys.path``
    folder explains: ``share_plugin_folder``), ``BrokerUnavailable``
    (``ldpfleet.broker.select``, a ``ConnectionError``) for a broker that cannot be reached,
    ``scenarios.bulk_run.BulkRunFailed`` (a ``RuntimeError``) when a bulk run's collector
    ends before writing its summary. ``~`` in a path is the home folder. A run that fails
    once started raises one error, never an ``ExceptionGroup`` (``one_error``): the error
    itself, noted with the part of the run that raised it (``stopped_by``); the caller's
    ``progress`` or ``side_task`` error as it is; a broker that refused a reconnecting
    service or stayed away past its ``give_up_after``: the transport's
    ``ConnectionRefused`` / ``ConnectionLost`` (``ConnectionError``s).

    Every connection logs in with the run's credentials (``run_credentials``: by default
    fresh ones on the embedded and in-memory brokers, none on an external URL). With
    ``[fleet] shards`` > 1 the devices run as processes; ``shard_brokers`` (nodes of a
    broker cluster) spreads them, shard i on ``shard_brokers[i % n]``, while the collector
    and the recorder use ``broker``."""
    scenario = checked_scenario(scenario)
    seed = checked_run_options(broker, out_dir, seed, run_id)
    progress = checked_progress(progress)
    check_main_mechanism(scenario, broker)
    share_plugin_folder(scenario, broker)
    out_dir = Path(out_dir).expanduser()  # "~/runs/x": a folder in $HOME, not one named "~"
    shared_broker = broker if broker is not None else scenario.spec.broker.url
    # two runs of this process into one folder, or as one run id on one broker, ruin both
    try:
        with claimed_out_dir(out_dir), claimed_run_id(run_id, shared_broker):
            results = await _run_checked(
                scenario, broker, out_dir, seed, run_id, progress, side_task, credentials,
                shard_brokers,
            )  # fmt: skip
    except BaseExceptionGroup as group:  # one error, never "unhandled errors in a TaskGroup"
        error = one_error(group, progress)
        if error is None:
            raise
        raise error from None
    # as results.json reads back (tuples become lists): run(...) == read_results(out_dir)
    return json.loads(json.dumps(results))


def fresh_run_outputs(out_dir: str | Path) -> Path:
    """``fresh_outputs``, and the pieces a previous run in separate processes left in
    ``out_dir`` (``collector/``, ``coordinator/``, ``fleet-i-of-k/``, ``partition-p-of-P/``,
    ``shards/fleet-i-of-k/``): a run in this process (``--broker memory``) writes none of
    them, and ``trace verify`` would read a stale ``fleet-*/ledger.json`` beside this run's
    ledger; a run in separate processes (``split_run``) writes its own afresh. Only pieces
    holding nothing but a run's files go (``remove_run_piece``)."""
    out = fresh_outputs(out_dir)
    for piece in run_pieces(out):
        remove_run_piece(piece)
    return out


def run_pieces(out: Path) -> list[Path]:
    """The folders of ``out`` a run in separate processes writes: its collector side,
    coordinator, partition workers and fleet shards (``ShardedFleet``'s under ``shards/``)."""
    pieces = [out / "collector", out / "coordinator", *sorted(out.glob("fleet-*-of-*"))]
    pieces += sorted(out.glob("partition-*-of-*"))
    return pieces + sorted((out / "shards").glob("fleet-*-of-*"))


# every file a piece of a run holds (scenarios/split_run.py, sides.py, fleet_shard.py,
# coordinator, partitions): a folder holding anything else is not only a run's piece
RUN_PIECE_FILE = re.compile(
    r"(results|ledger|outcomes|credentials|summary|reports)\.json"
    r"|(collector|fleet|partition)\.log|scenario\.toml|report\.html|\.report\.html\.\d+\.partial"
    r"|(collector-side|reconstructions|truth_sample|estimates)\.npz"
    r"|(trace|collector|device-state)(-p\d+)?\.sqlite(-wal|-shm|-journal)?"
    r"|[A-Za-z0-9_.-]+-shard-\d+-of-\d+\.sqlite(-wal|-shm|-journal)?"
)


def remove_run_piece(piece: Path) -> bool:
    """Remove ``piece`` (a folder ``run_pieces`` names) if every file in it, at any depth,
    is one a run writes (``RUN_PIECE_FILE``); a folder holding anything else (a user's
    ``collector/`` package beside ``--out .``) is left whole. True if removed."""
    if not piece.is_dir() or piece.is_symlink():
        return False
    for entry in piece.rglob("*"):
        if entry.is_symlink() or (entry.is_file() and not RUN_PIECE_FILE.fullmatch(entry.name)):
            return False
        if not entry.is_dir() and not entry.is_file():
            return False
    shutil.rmtree(piece)
    return True


async def _run_checked(
    scenario: LoadedScenario,
    broker: str | Transport | None,
    out_dir: str | Path,
    seed: int | None,
    run_id: str | None,
    progress: ProgressCallback | None,
    side_task: SideTask | None,
    credentials: Credentials | None,
    shard_brokers: list[str] | None,
) -> dict:
    """``run_scenario`` once its arguments are checked and ``out_dir`` is claimed."""
    broker_spec = broker or scenario.spec.broker.url
    if scenario.bulk:  # [fleet] connection = "bulk": bulk gateways (scenarios/bulk_run.py)
        from ldpfleet.scenarios.bulk_run import run_bulk_scenario

        return await run_bulk_scenario(
            scenario, broker=broker_spec, out_dir=out_dir, seed=seed, run_id=run_id,
            progress=progress, credentials=credentials, shard_brokers=shard_brokers,
        )  # fmt: skip
    if scenario.spec.cadr is not None:
        fresh_run_outputs(out_dir)  # a stream run's pieces left there: same reason
        return await _run_cadr(scenario, broker_spec, out_dir, seed, run_id, credentials)
    out = fresh_run_outputs(out_dir)
    run = (credentials.run if credentials else None) or run_id or new_run_id(scenario)
    seed = scenario.spec.scenario.seed if seed is None else seed
    creds = run_credentials(scenario, broker_spec, run, credentials, devices=scenario.device_ids())
    state = _StreamRun(scenario, out, run, seed, creds, scenario.stream_config(run))
    run_timeout = scenario.run_timeout()
    deadline = asyncio.timeout(run_timeout)
    try:
        # a run never hangs: past ``run_timeout`` every task is cancelled (docs/reliability.md)
        async with deadline:
            await _pump_stream_run(state, broker_spec, progress, side_task, shard_brokers)
    except TimeoutError:
        if not deadline.expired():
            raise  # some other timeout, not the run's
        state.stopped_by_deadline(run_timeout)
    if progress and state.collector_results is not None:
        c = state.collector_results
        progress(c["reports_received"], c["reports_expected"])
    results = stream_results(state, shard_brokers)
    ledger = stream_ledger(state, results["gcdp"])
    noise = state.scenario.spec.privacy.device_noise  # the fleet's (never its generators)
    results["device_noise"] = noise
    results["privacy"] = privacy_entry(ledger, state.config, noise)  # the claim, the spend
    results["privacy"] = note_secure_sum(results["privacy"], results.get("secure_sum"))
    write_results(out / "results.json", results, indent=2)
    write_json(out / "ledger.json", ledger, indent=2)
    return results


async def _run_cadr(scenario, broker_spec, out_dir, seed, run_id, credentials) -> dict:
    """A ``[cadr]`` scenario: CADR-LDP opens its broker and device shards itself; the
    credentials reach them as the ambient ones (and, for the shard processes, a 0600 file
    named in the env)."""
    from ldpfleet.scenarios.cadr_run import run_cadr_scenario

    run = (credentials.run if credentials else None) or run_id or new_run_id(scenario)
    creds = run_credentials(scenario, broker_spec, run, credentials)
    with (
        tempfile.TemporaryDirectory(prefix="ldpfleet-auth-") as private,
        use_credentials(creds, export_dir=Path(private) if creds else None),
    ):
        results = await run_cadr_scenario(
            scenario, broker=broker_spec, out_dir=out_dir, seed=seed, run_id=run
        )
    return stamp_public_key(out_dir, results)  # trace.public_key: verify's anchor


@dataclass
class _StreamRun:
    """What one stream run's pumps leave behind for its results (``stream_results``): set
    as the run goes, so a run stopped by its deadline still reports what had arrived."""

    scenario: LoadedScenario
    out: Path
    run: str
    seed: int
    creds: Credentials | None
    config: StreamConfig
    wall: float = field(default_factory=time.perf_counter)
    stages: dict[str, dict] = field(default_factory=dict)
    broker_info: object | None = None
    collector: CollectorService | None = None
    recorder: TraceRecorder | None = None
    fleet: Fleet | ShardedFleet | None = None
    outcomes: list[DeviceOutcome] | None = None
    collector_results: dict | None = None
    fleet_seconds: float | None = None
    secure: dict | None = None
    aborted: dict | None = None
    trace_note: str | None = None
    attacker: HostileClient | None = None

    def __post_init__(self) -> None:
        faults = self.scenario.spec.faults
        if faults is not None and faults.hostile_messages:
            self.attacker = HostileClient(self.config, faults.hostile_messages)

    def stopped_by_deadline(self, run_timeout: float) -> None:
        """The run's deadline cancelled every task: keep what had arrived."""
        self.aborted = {
            "reason": "run_timeout",
            "run_timeout": run_timeout,
            "detail": f"the run did not finish within run_timeout ({run_timeout:g} s); every "
            "task was cancelled and the outputs hold what had arrived",
        }
        if self.fleet is not None and self.outcomes is None:
            self.outcomes = self.fleet.outcomes()
        if self.collector_results is None:
            self.collector_results = partial_collector_results(
                self.collector, self.config, self.aborted["detail"]
            )
        if self.collector is not None:
            self.collector.store.close()
        if self.recorder is not None and not self.recorder.complete:
            self.trace_note = "the run was aborted (run_timeout) before the collector closed it"


async def _pump_stream_run(
    state: _StreamRun,
    broker_spec: str | Transport,
    progress: ProgressCallback | None,
    side_task: SideTask | None,
    shard_brokers: list[str] | None,
) -> None:
    """Broker, recorder, collector and fleet of a stream run, until the recorder is done."""
    scenario, out, run = state.scenario, state.out, state.run
    t = time.perf_counter()
    async with (
        open_broker(broker_spec, credentials=state.creds) as (transport, state.broker_info),
        contextlib.AsyncExitStack() as stack,
    ):
        state.stages["broker"] = {"status": "ok", "seconds": time.perf_counter() - t}
        state.recorder = recorder_for(scenario, transport, run, out / "trace.sqlite")
        state.collector = collector_for(
            scenario, transport, run, out / "collector.sqlite", seed=state.seed
        )
        persist_release_ledger(state.collector, out / "ledger.json", run, state.config)
        t = time.perf_counter()
        shards = scenario.fleet_shards(state.broker_info.kind)
        state.fleet = _build_fleet(state, transport, stack, shards, shard_brokers)
        state.stages["fleet_build"] = {
            "status": "ok",
            "seconds": time.perf_counter() - t,
            "shards": shards,
        }
        await _run_agents(state, transport, progress, side_task)


def _build_fleet(
    state: _StreamRun,
    transport: Transport,
    stack: contextlib.AsyncExitStack,
    shards: int,
    shard_brokers: list[str] | None,
) -> Fleet | ShardedFleet:
    """The devices: in this event loop, or ``shards`` processes against the broker
    (docs/scaling.md) that log in with the run's credentials from a 0600 file that lives
    as long as the run."""
    scenario = state.scenario
    if shards <= 1:
        config = fleet_config(scenario, state.run, state.seed, broker_kind=state.broker_info.kind)
        return Fleet(config, transport)
    secrets_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="ldpfleet-auth-"))
    creds = state.creds
    return ShardedFleet(
        scenario,
        state.broker_info.url,
        state.run,
        seed=state.seed,
        shards=shards,
        out_dir=state.out,
        credentials_path=creds.save(Path(secrets_dir) / "credentials.json") if creds else None,
        shard_brokers=shard_brokers,
    )


async def _run_agents(
    state: _StreamRun,
    transport: Transport,
    progress: ProgressCallback | None,
    side_task: SideTask | None,
) -> None:
    """Recorder, collector, side tasks and fleet in one task group: the fleet starts once
    the others listen; the stream stage, then the secure-sum stage, then the recorder end."""
    recorder, collector, fleet = state.recorder, state.collector, state.fleet
    grace = state.scenario.spec.collector.finish_grace
    async with asyncio.TaskGroup() as group:
        recorder_task = group.create_task(_part("the trace recorder", recorder.run_until_closed()))
        await recorder.subscribed.wait()
        collector_task = group.create_task(_part("the collector", collector.run()))
        await collector.subscribed.wait()
        watcher = group.create_task(watch_progress(collector, progress)) if progress else None
        side = await _start_side_tasks(state, transport, group, side_task)
        t = time.perf_counter()
        fleet_task = group.create_task(_part("the fleet", fleet.run()))
        await asyncio.wait({fleet_task, collector_task}, return_when=asyncio.FIRST_COMPLETED)
        if not fleet_task.done():
            # the collector has finished: devices still waiting (its final message lost,
            # their acks lost) get ``finish_grace``, then stop
            await asyncio.wait({fleet_task}, timeout=grace)
            if not fleet_task.done():
                fleet_task.cancel()
                await asyncio.gather(fleet_task, return_exceptions=True)
        if fleet_task.done() and not fleet_task.cancelled() and fleet_task.exception() is None:
            # ``Fleet.run`` ends with its ``outcomes()``, every agent ended: the same list
            # (a second call rebuilt every device's ledger.to_dict: ~3 % of the
            # fleet-stream audit, helper A)
            state.outcomes = fleet_task.result()
        else:
            state.outcomes = fleet.outcomes()
        state.fleet_seconds = time.perf_counter() - t
        if not collector_task.done():
            # Every agent has ended: nothing more can arrive. Devices that failed leave
            # their batches missing, which the collector reports as lost.
            await asyncio.sleep(0)
            if any(o.error or o.unfinished for o in state.outcomes):
                collector.request_close("the fleet ended with failed or crashed devices")
        state.collector_results = await collector_task
        if state.scenario.spec.secure_sum is not None:
            await _part("the secure-sum stage", _secure_sum_stage(state, transport))
        # the final "run closed" may be lost: the recorder gets ``finish_grace``
        await asyncio.wait({recorder_task}, timeout=grace)
        if not recorder_task.done():
            recorder_task.cancel()
            state.trace_note = (
                f"the collector's final 'run closed' message did not reach the recorder "
                f"within finish_grace ({grace:g} s)"
            )
        await asyncio.gather(recorder_task, return_exceptions=True)
        for helper in (watcher, side):
            if helper is not None:
                helper.cancel()


async def _start_side_tasks(
    state: _StreamRun, transport: Transport, group: asyncio.TaskGroup, side_task
) -> asyncio.Task | None:
    """The caller's side task and the ``[faults]`` attacker, started and (those with a
    ``ready`` event) listening before the fleet starts; None when there are none."""
    side_tasks = [task for task in (side_task, state.attacker) if task is not None]
    if not side_tasks:
        return None
    creds = state.creds
    view = transport if creds is None else AsUser(transport, ADMIN, creds.password(ADMIN))
    named = [(side_task, "run_scenario's side_task"), (state.attacker, "the hostile client")]
    running = group.create_task(
        _all_of(
            [_part(name, task(view, state.run, state.collector)) for task, name in named if task]
        )
    )
    await _until_ready(side_tasks, running)
    return running


async def _secure_sum_stage(state: _StreamRun, transport: Transport) -> None:
    """The ``[secure_sum]`` stage after the stream, then the run's "closed" announcement."""
    secure = await run_secure_sum_stage(
        state.scenario, transport, state.run, state.fleet, state.seed
    )
    state.secure = secure
    state.stages["secure_sum"] = {
        "status": "aborted" if secure["aborted"] else "ok",
        "seconds": secure["seconds"],
    }
    async with transport.connect(f"{state.run}-collector") as conn:
        await announce_run_closed(conn, state.run)


def stream_results(state: _StreamRun, shard_brokers: list[str] | None) -> dict:
    """results.json of a one-process stream run (the layout in docs/scenarios.md)."""
    scenario, config, c = state.scenario, state.config, state.collector_results
    recorder, fleet = state.recorder, state.fleet
    outcomes = state.outcomes or []
    stages = state.stages
    reconstruction = _scored_reconstruction(state)
    gcdp_entry = _stream_stages(state)
    unfinished = {o.device: o.unfinished for o in outcomes if o.unfinished}
    results = {
        "run": state.run,
        "event_loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
        "scenario": scenario_header(scenario, state.seed),
        "broker": _broker_entry(state, shard_brokers),
        # set when the run was stopped by its global deadline (docs/reliability.md)
        "aborted": state.aborted,
        # devices whose stream did not finish (``devices_unfinished``): they gave up on a
        # silent collector, failed, or were stopped after the finish grace
        # (fleet.unfinished_devices says which)
        **collector_counts(c, devices_unfinished=len(unfinished)),
        "stream": stream_entry(config, c),
        "stages": stages,
        "fleet": _fleet_entry(state, unfinished),
        # peak resident memory of this process (collector, recorder, and the devices when
        # they are not sharded; the embedded broker too)
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "accuracy": accuracy_entry(scenario, config, c["mean_estimates"], outcomes),
        "per_device": per_device_entries(outcomes, c, reconstruction),
        "reconstruction": reconstruction_summary(reconstruction),
        "secure_sum": state.secure,
        "gcdp": gcdp_entry,
        "trace": trace_entry(scenario, recorder, state.out),
        "delivery": delivery_entry(
            collector_delivery(scenario, c, state.collector, recorder), outcomes
        ),
        # what [faults] injected and how the run recovered (docs/reliability.md)
        "faults": fault_report(scenario.spec.faults, fleet, outcomes, c, state.attacker),
        # False when the recorder stopped before the collector's final message
        "trace_complete": bool(recorder and recorder.complete),
        "trace_incomplete_reason": state.trace_note,
        "seconds": time.perf_counter() - state.wall,
    }
    _add_warnings(results, state)
    return results


def _stream_stages(state: _StreamRun) -> dict | None:
    """Set the run's ``stream`` stage entry (and its ``gcdp`` one when the collector
    released); returns the scored GC-DP entry of results.json, or None."""
    scenario, c, collector = state.scenario, state.collector_results, state.collector
    stages = state.stages
    stages["stream"] = stream_stage_entry(
        c,
        aborted=bool(state.aborted) and c.get("stage_state") == "aborted",
        fleet_seconds=state.fleet_seconds,
    )
    gcdp_entry = None
    if collector is not None and collector.gcdp is not None and "gcdp" in c:
        gcdp_entry = score_gcdp(
            c["gcdp"],
            collector.gcdp,
            state.fleet,
            config_window(scenario),
            scenario.stream_bounds(),
        )
        stages["gcdp"] = gcdp_stage_entry(gcdp_entry)
    return gcdp_entry


def _broker_entry(state: _StreamRun, shard_brokers: list[str] | None) -> dict:
    """results.json ``broker``: its kind and URL, whether it asked for credentials, and
    the fleet shards' brokers (a sharded fleet only)."""
    info = state.broker_info
    return {
        "kind": info.kind if info else None,
        "url": info.url if info else None,
        "auth": state.creds is not None,
        "shard_brokers": shard_brokers if isinstance(state.fleet, ShardedFleet) else None,
    }


def per_device_entries(outcomes: list[DeviceOutcome], c: dict, reconstruction: dict | None) -> dict:
    """results.json ``per_device``: each device's state, batches acknowledged, estimated
    and true mean, and its scored reconstruction (period found, distance) when any."""
    return {
        o.device: {
            "state": o.state,
            "batches_acked": o.batches_acked,
            "mean_estimate": c["mean_estimates"].get(o.device),
            "true_mean": o.true_mean,
            **((reconstruction or {}).get("per_device", {}).get(o.device, {})),
        }
        for o in outcomes
    }


def _add_warnings(results: dict, state: _StreamRun) -> None:
    """results.json ``warnings`` and the simulator-side entries that come with theirs:
    what the public bounds clipped, the gaps filled (``missing_values``), and how many
    times a short CSV source is replayed (``source_cycles``)."""
    scenario, fleet = state.scenario, state.fleet
    # a plugin's estimate_mean failing on the collector (collector.analytics): console too
    results["warnings"] = list(state.collector_results.get("mean_estimate_warnings", []))
    if fleet is not None:  # simulator-only: what the public bounds clipped (scenarios.clipping)
        add_clipping(results, fleet.clipping)
        # simulator-only: the gaps the devices filled before privatising (source.missing)
        entry, warnings = missing_entry(scenario.source_spec())
        if entry is not None:
            results["missing_values"] = entry
            results["warnings"] += warnings
    # how many times a CSV file shorter than the stream is replayed (devices.sources)
    cycles, warnings = source_cycles_entry(scenario.source_spec(), scenario.spec.stream.steps)
    results["source_cycles"] = cycles
    results["warnings"] += warnings
    results["warnings"] += stream_warnings(
        scenario, scenario.source_spec(), results.get("trace"), results.get("gcdp")
    )


def stream_warnings(
    scenario: LoadedScenario, source: object, trace: dict | None, gcdp: dict | None = None
) -> list[str]:
    """A stream run's warnings beside its source's cycles (both runners): what the trace
    lacks of what the collector stored, a synthetic period CPR can never claim, a
    ``[secure_sum]`` graph whose session may well abort, a CSV ``true_period`` that a
    wrapping replay breaks (``source``: the run's source spec) and, with a ``[gcdp]``
    release (``gcdp``: its results.json entry), the sampling of its two files."""
    spec = scenario.spec
    warnings = [
        *trace_gap_warnings(trace),
        *unclaimable_period_warnings(spec),
        *secure_sum_risk_warnings(spec),
        *replay_jump_warnings(
            source, spec.stream.steps, spec.fleet.devices, getattr(spec.source, "true_period", None)
        ),
    ]
    if gcdp is not None:
        from ldpfleet.collector.gcdp_stage import release_warnings

        warnings += release_warnings(gcdp)
    return warnings


def _scored_reconstruction(state: _StreamRun) -> dict | None:
    """The collector's reconstruction summary scored against the simulator's truth, with
    the truth of a few devices saved beside it (OUT/truth_sample.npz) so the report can draw
    one against the other (never available to the collector)."""
    reconstruction = state.collector_results.get("reconstruction")
    if reconstruction is None:
        return None
    collector, fleet, config = state.collector, state.fleet, state.config
    state.stages["reconstruct"] = {"status": "ok", "seconds": reconstruction["seconds"]}
    scored = score_reconstructions(
        reconstruction,
        collector.reconstructions,
        fleet,
        config,
        tolerance=state.scenario.spec.cpr.period_tolerance,
    )
    sample = sorted(collector.reconstructions)[:TRUTH_SAMPLE]
    np.savez_compressed(
        state.out / "truth_sample.npz",
        **{d: np.clip(fleet.clean[d], config.lo, config.hi) for d in sample},
    )
    return scored


def _fleet_entry(state: _StreamRun, unfinished: dict) -> dict:
    """results.json ``fleet``: how the devices ran and what they sent again."""
    fleet, outcomes = state.fleet, state.outcomes or []
    return {
        "devices_run": len(outcomes),
        # "device" (an MQTT connection each) or "gateway" ([fleet] connection; "auto" on
        # the memory broker: "device", plans.run_connection)
        "connection": run_connection(
            state.scenario, state.broker_info.kind if state.broker_info else None
        ),
        "connect_seconds": fleet.connect_seconds if fleet else None,
        "unfinished_devices": unfinished,
        "device_errors": {o.device: o.error for o in outcomes if o.error},
        "retransmissions": sum(o.retransmissions for o in outcomes),
        "refused_messages": sum(o.refused_messages for o in outcomes),
        # final-rejection notices naming no message the device sent (ignored)
        "rejects_ignored": sum(o.rejects_ignored for o in outcomes),
        # end to end: a batch's first transmission to its ack (after the collector's
        # commit), over the batches sent once
        "ack_latency": latency_summary(outcomes),
        "shards": fleet_process_stats(fleet),
    }


def persist_release_ledger(collector: CollectorService, path: Path, run: str, config) -> None:
    """With a central GC-DP release: before each batch of releases is published, write
    ``path`` (ledger.json) holding the collector's ledger with their charges, so a
    collector killed mid-run has persisted every charge it published (persist before
    acknowledging; helper B noticed a one-collector run kept it in memory only). The run's
    end overwrites the file with every ledger; the devices' accounts are not in it before."""
    stage = getattr(collector, "gcdp", None)
    if stage is None:
        return

    def persist(stage) -> None:
        ledger = gcdp_ledger(stage, stage.summary())
        write_json(path, ledger_document(run, config.eps, config.w, [], collector=ledger))

    stage.before_publish = persist


def stream_ledger(state: _StreamRun, gcdp_entry: dict | None) -> dict:
    """ledger.json of a stream run: every device's ledger and (GC-DP) the collector's."""
    stage = state.collector.gcdp if state.collector is not None else None
    return ledger_document(
        state.run,
        state.config.eps,
        state.config.w,
        state.outcomes or [],
        collector=gcdp_ledger(stage, gcdp_entry),
    )


def config_window(scenario: LoadedScenario) -> int:
    """The ``[gcdp]`` window length."""
    assert scenario.spec.gcdp is not None
    return scenario.spec.gcdp.window
