"""A partitioned stream run's collector side: the coordinator and the partition workers.

DESIGN.md "Scale" (issue 23). ``coordinator_side`` records the run's global topics
(``ctl/``, ``rel/``, ``svc/``) in its own trace, waits for every worker's ``ready``, announces
the run (the fleet shards start), opens and closes the stream stage and closes the run
(``collector.partition.coordinate_stream``); with ``[secure_sum]`` it then runs the
secure-sum stage over every device (``scenarios.sides._collector_secure_sum``: the SecAgg
messages keep the unpartitioned ``ldp/{run}/dev/`` topics, which the ACL grants devices and
the collector account in any case, and the coordinator's trace records them) before it
closes the run; its results.json holds the summed counters and the secure sum. The
fleet shards' "my devices are done" statuses (``protocol.fleet_done``) are the
coordinator's to read (``FleetStatusReader``, in its ``StreamCoordinator``): once every
shard said so it closes the stream stage on every worker (results.json ``fleet_status``),
so devices gone for good do not hold the stage until ``stage_timeout``. With
``[gcdp]`` it also holds the central release and its ledger, persisted before each release is
published, and a coordinator stopped early (SIGTERM) writes it with ``aborted`` ``stopped``.
``partition_side`` is worker ``p`` of ``P``: the ``CollectorService`` of its devices
(``topics.partition_of``), its recorder of ``ldp/{run}/p{p}/#`` and ``ctl/stage``, its store,
its analytics; its results.json is a collector side's for its devices only.
With ``[faults] hostile_messages`` each worker holds its stage until it counted its share
of the flood (``scenarios.sides.hold_for_hostile``; fleet shard 0 attacks).

``merge_partitions`` unites them into one collector side's directory (what one collector
would have written: per-device entries united, counters summed, reconstructions and
arrays joined) that ``scenarios.merge.merge_run`` merges with the fleet shards as usual;
each partition's trace and store stay files of their own (``trace-p{p}.sqlite``,
``collector-p{p}.sqlite`` in the run folder).

A CADR-LDP scenario's coordinator, workers and merge are ``scenarios.cadr_partition``'s
(the three functions hand over to it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.recorder import TraceRecorder, control_filters
from ldpfleet.broker.select import open_broker
from ldpfleet.broker.transport import Transport
from ldpfleet.collector.announce import say_run_closed
from ldpfleet.collector.gcdp_stage import GcdpShare, GcdpStage
from ldpfleet.collector.npz_files import merge_npz
from ldpfleet.collector.partition import PartitionLink, WorkersMissing, coordinate_stream
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.fleet_done import FleetStatusReader, fleet_done_filter
from ldpfleet.protocol.messages import Message
from ldpfleet.protocol.partition import COUNTERS, GcdpWindowMeans
from ldpfleet.protocol.rendezvous import scenario_digest
from ldpfleet.scenarios.cadr_partition import (
    cadr_coordinator_side,
    cadr_partition_side,
    merge_cadr_partitions,
)
from ldpfleet.scenarios.cadr_run import scenario_header
from ldpfleet.scenarios.jsonout import write_results
from ldpfleet.scenarios.plans import gcdp_stage_config
from ldpfleet.scenarios.runner import collector_for
from ldpfleet.scenarios.schema import LoadedScenario
from ldpfleet.scenarios.sides import (
    SIDE_FILE,
    _collector_document,
    _collector_secure_sum,
    _CollectorRun,
    _first,
    _save_side_arrays,
    _stopped,
    hold_for_hostile,
    run_announcer,
    run_terms,
    terms_refused,
)
from ldpfleet.scenarios.stream_document import gcdp_ledger, gcdp_stage_entry, stream_entry

__all__ = ["coordinator_side", "merge_partitions", "partition_devices", "partition_side"]


def partition_devices(scenario: LoadedScenario, partition: int, partitions: int) -> list[str]:
    """The devices of ``partition`` (scenario order)."""
    return [d for d in scenario.device_ids() if topics.partition_of(d, partitions) == partition]


def _check_partitions(scenario: LoadedScenario, partitions: int) -> None:
    """A worker's P must be the scenario's ``[collector] partitions`` (a typed error naming
    the field, the scenario's count and the value given)."""
    wanted = scenario.spec.collector.partitions
    if partitions != wanted:
        raise ParameterError(
            f"must be p/{wanted} (the scenario's [collector] partitions), got .../{partitions}",
            field="partition",
            limit=f"p/{wanted} (the scenario's [collector] partitions)",
            value=partitions,
        )


# ---- a partition worker -------------------------------------------------------------------


async def partition_side(
    scenario: LoadedScenario,
    broker: str | Transport,
    run: str,
    partition: tuple[int, int],
    out_dir: str | Path,
    *,
    seed: int | None = None,
    credentials: Credentials | None = None,
) -> dict:
    """Worker ``p`` of ``P`` (module docstring); writes OUT/results.json, collector.sqlite,
    trace.sqlite and collector-side.npz; returns the results."""
    p, count = partition
    _check_partitions(scenario, count)
    if scenario.spec.cadr is not None:  # the DSR intake of its devices only
        return await cadr_partition_side(
            scenario, broker, run, partition, out_dir, seed=seed, credentials=credentials
        )
    seed = scenario.spec.scenario.seed if seed is None else seed
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    wall = time.perf_counter()
    state = _CollectorRun(auth=credentials is not None)
    devices = partition_devices(scenario, p, count)
    try:
        async with open_broker(broker, credentials=credentials) as (transport, info):
            state.info = info
            await _serve_partition(scenario, transport, run, p, count, devices, out, seed, state)
    except asyncio.CancelledError:
        if devices:
            _stopped(scenario, run, state)
        _write_partition(scenario, run, seed, state, out, wall, p, count, devices)
        raise
    return _write_partition(scenario, run, seed, state, out, wall, p, count, devices)


async def _serve_partition(scenario, transport, run, p, count, devices, out, seed, state) -> None:
    grace = scenario.spec.collector.finish_grace
    state.recorder = recorder = TraceRecorder(
        transport,
        run,
        out / "trace.sqlite",
        filters=_worker_filters(scenario, run, p),
        scenario_digest=scenario_digest(scenario.to_dict()),
        client_id=f"{run}-recorder-p{p}",
    )
    link = PartitionLink(run, p, count)
    async with asyncio.TaskGroup() as group:
        recording = group.create_task(recorder.run_until_closed())
        await _first(recorder.subscribed, recording)
        if devices:
            service = collector_for(
                scenario, transport, run, out / "collector.sqlite", seed=seed,
                central_release=False,
            )  # fmt: skip
            service.devices, service.partition, service.link = devices, p, link
            if scenario.spec.gcdp is not None:  # its devices' window means to the coordinator
                service.gcdp = GcdpShare(
                    run, devices, scenario.spec.gcdp.window, scenario.spec.stream.steps, (p, count)
                )
            service.final_stage = False  # the coordinator closes the run
            state.service = service
            holding = group.create_task(hold_for_hostile(scenario, service, state, (p, count)))
            state.results = await service.run()
            await holding  # ends with the stage
            # the stage may have closed before the coordinator listened: say it again
            repeating = group.create_task(_repeat_closed(transport, run, p, link, recorder))
        else:
            async with transport.connect(f"{run}-collector-p{p}") as conn:
                await link.serve_empty(conn, recorder.finished)
        # the coordinator says 'run closed' after its secure sum, if there is one
        secure = scenario.spec.secure_sum
        extra = 6 * secure.stage_timeout if secure is not None else 0.0
        await asyncio.wait({recording}, timeout=grace + 60.0 + extra)
        if not recording.done():
            recording.cancel()
            state.trace_note = "the coordinator's 'run closed' did not reach this partition"
        await asyncio.gather(recording, return_exceptions=True)
        if devices:
            repeating.cancel()


async def _repeat_closed(transport, run, p, link: PartitionLink, recorder) -> None:
    """A worker's ``closed`` status again until the run closes (``PartitionLink.
    repeat_closed``), on a connection of its own: the service's session has ended."""
    if link.closed_status is None:  # the service failed before its summary
        return
    try:
        async with transport.connect(f"{run}-collector-p{p}-closed") as conn:
            await link.repeat_closed(conn, recorder.finished)
    except Exception:  # best effort: the first ``closed`` went out on the session
        return


def _central_release(scenario: LoadedScenario, run: str, seed: int) -> GcdpStage | None:
    """With ``[gcdp]``: the coordinator's release stage (calibrated now, before any reading
    arrives), fed the workers' window means (``collector.gcdp_stage``)."""
    if scenario.spec.gcdp is None:
        return None
    config = gcdp_stage_config(scenario)
    return GcdpStage(config, run, scenario.device_ids(), seed=seed, given_means=True)


def _coordinator_filters(scenario: LoadedScenario, run: str) -> tuple[str, ...]:
    """The coordinator's recorder: the run's control plane (``ctl/``, ``rel/``, ``svc/``),
    the fleet shards' statuses it reads (``protocol.fleet_done``) and, with
    ``[secure_sum]`` and ``trace = "all"``, the secure aggregation's device messages, which
    keep the unpartitioned ``ldp/{run}/dev/`` layout (the coordinator serves them all; the
    partitions' subtrees carry the streams only)."""
    filters = control_filters(run)
    if scenario.spec.secure_sum is not None and scenario.spec.collector.trace != "control":
        return (*filters, f"{topics.PREFIX}/{run}/dev/#")
    return (*filters, fleet_done_filter(run))


def _worker_filters(scenario: LoadedScenario, run: str, p: int) -> tuple[str, ...]:
    """A worker's recorder: its partition's subtree and the stage messages; with
    ``[collector] trace = "control"`` the stage messages only (the coordinator records the
    control plane, rejections included)."""
    stage = topics.ctl(run, "stage")  # also what ends the recording ('run closed')
    if scenario.spec.collector.trace == "control":
        return (stage,)
    return (topics.partition_filter(run, p), stage)


def _write_partition(scenario, run, seed, state, out: Path, wall, p, count, devices) -> dict:
    results = _collector_document(scenario, run, seed, state, time.perf_counter() - wall)
    mine = set(devices)
    results["per_device"] = {d: e for d, e in results["per_device"].items() if d in mine}
    results["mean_estimates"] = {d: v for d, v in results["mean_estimates"].items() if d in mine}
    results["partition"] = {"index": p, "of": count, "devices": len(devices)}
    if not devices:
        results.update({name: 0 for name in COUNTERS})
        results["stages"]["stream"]["status"] = "complete"
    write_results(out / "results.json", results, indent=2)
    _save_side_arrays(out, state)
    return results


# ---- the coordinator ----------------------------------------------------------------------


@dataclass
class _Coordination:
    """What the coordinator's steps share (``coordinator_side``)."""

    scenario: LoadedScenario
    run: str
    count: int  # partitions
    announcer: object  # scenarios.sides.run_announcer
    release: GcdpStage | None  # the central GC-DP release, with [gcdp]
    document: dict  # results.json, filled in as the run goes
    progress: Callable[..., None] | None
    fleet_timeout: float
    workers_timeout: float
    out: Path | None = None  # the coordinator's folder
    seed: int = 0
    wall: float = 0.0  # perf_counter at the start
    broker: dict | None = None  # results.json ``broker``, once connected
    recorder: TraceRecorder | None = None
    fleet: FleetStatusReader | None = None  # the fleet shards' "my devices are done"


STOPPED = "the coordinator was stopped before the run closed"


async def coordinator_side(
    scenario: LoadedScenario,
    broker: str | Transport,
    run: str,
    out_dir: str | Path,
    *,
    seed: int | None = None,
    credentials: Credentials | None = None,
    fleet_timeout: float = 60.0,
    workers_timeout: float = 60.0,
    progress: Callable[..., None] | None = None,
) -> dict:
    """The coordinator (module docstring); writes OUT/results.json and trace.sqlite.

    Stopped early (SIGTERM, cancelled) it still writes results.json, with ``aborted``
    ``stopped``: with ``[gcdp]`` the ``gcdp`` entry and the collector ledger of every
    window released so far. Every release is persisted before it is published
    (``GcdpStage.before_publish``): results.json on disk, as of the last release, already
    holds its charge, so even a coordinator killed outright leaves the account of what it
    published."""
    if scenario.spec.cadr is not None:  # scenarios.cadr_partition
        return await cadr_coordinator_side(
            scenario, broker, run, out_dir, seed=seed, credentials=credentials,
            fleet_timeout=fleet_timeout, workers_timeout=workers_timeout,
        )  # fmt: skip
    count = scenario.spec.collector.partitions
    seed = scenario.spec.scenario.seed if seed is None else seed
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    wall = time.perf_counter()
    announcer = run_announcer(scenario, run, run_terms(scenario, run, seed))
    document: dict = {"run": run, "aborted": None, "partitions": count}
    job = _Coordination(
        scenario, run, count, announcer, _central_release(scenario, run, seed), document,
        progress, fleet_timeout, workers_timeout, out, seed, wall,
        fleet=FleetStatusReader(run, scenario.device_ids(), run_terms(scenario, run, seed)),
    )  # fmt: skip
    if job.release is not None:  # persist each release (its charge) before publishing it
        job.release.before_publish = lambda _stage: _persist_release(job)
    tally = None
    try:
        async with open_broker(broker, credentials=credentials) as (transport, info):
            job.broker = {"kind": info.kind, "url": info.url, "auth": credentials is not None}
            job.recorder = TraceRecorder(
                transport,
                run,
                out / "trace.sqlite",
                filters=_coordinator_filters(scenario, run),
                scenario_digest=scenario_digest(scenario.to_dict()),
            )
            tally = await _record_and_coordinate(job, transport, job.recorder)
    except asyncio.CancelledError:
        document["aborted"] = document["aborted"] or {"reason": "stopped", "detail": STOPPED}
        _write_coordinator(job, None)  # what was released and charged, then it stops
        raise
    return _write_coordinator(job, tally)


def _write_coordinator(job: _Coordination, tally, *, arrays: bool = True) -> dict:
    """results.json (and, with ``[gcdp]``, collector-side.npz) of the coordinator as the
    run stands; ``tally`` None: no stream tally (workers missing, or stopped); ``arrays``
    False: results.json only (the released values are in the trace; the npz costs as much
    as the document)."""
    document, out = job.document, job.out
    assert out is not None
    if job.release is not None:
        document |= _release_outputs(job.release, out, arrays=arrays)
    document |= {
        "scenario": scenario_header(job.scenario, job.seed),
        "broker": job.broker,
        **_coordinator_outcome(tally, job.recorder),
        # which shards said their devices are done (the merge's fleet.shards.said_done)
        "fleet_status": job.fleet.summary() if job.fleet is not None else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "seconds": time.perf_counter() - job.wall,
    }
    write_results(out / "results.json", document, indent=2)
    return document


def _persist_release(job: _Coordination) -> None:
    """Before releases are published: results.json as if the run stopped now (``aborted``
    ``stopped``, the ledger holding their charges). The run's end overwrites it."""
    document = job.document
    if document["aborted"] is not None:  # an abort of its own: it is written at the end
        _write_coordinator(job, None, arrays=False)
        return
    document["aborted"] = {
        "reason": "stopped",
        "detail": f"{STOPPED} (written before its last release was published)",
    }
    try:
        _write_coordinator(job, None, arrays=False)
    finally:
        document["aborted"] = None


async def _record_and_coordinate(job: _Coordination, transport, recorder: TraceRecorder):
    """Record while the run is coordinated, close the run, then let the recorder finish
    (``finish_grace``); returns the stream tally (None: workers missing)."""
    async with transport.connect(f"{job.run}-collector-run") as conn, asyncio.TaskGroup() as g:
        recording = g.create_task(recorder.run_until_closed())
        await _first(recorder.subscribed, recording)
        tally = await _coordinate(job, transport, conn)
        # on a new connection if the broker closed this one (collector.announce)
        await say_run_closed(transport, conn, job.run, job.announcer)
        await asyncio.wait({recording}, timeout=job.scenario.spec.collector.finish_grace)
        if not recording.done():
            recording.cancel()
        await asyncio.gather(recording, return_exceptions=True)
    return tally


async def _coordinate(job: _Coordination, transport, conn):
    """The stream stage over the workers (``coordinate_stream``), then the central release's
    rest and the secure sum; the announcement is closed whatever happens. Returns the
    tally, None when workers were missing (``aborted``: ``workers_missing``)."""
    document = job.document
    try:
        tally = await coordinate_stream(
            transport,
            job.run,
            job.count,
            on_ready=lambda: job.announcer.open(conn),
            progress=job.progress,
            workers_timeout=job.workers_timeout,
            fleet_timeout=job.fleet_timeout,
            aborted=lambda s: document.update(
                aborted={"reason": "no_fleet", "fleet_timeout": job.fleet_timeout, "detail": s}
            ),
            on_message=_means_receiver(job.release, conn),
            fleet=job.fleet,
        )
        # fleet shards that refused the run (other terms): the stage closed on it at once
        refused = terms_refused(job.fleet.status if job.fleet is not None else None)
        document["aborted"] = document["aborted"] or refused
        await _after_stream(job, transport, conn)
    except WorkersMissing as error:
        document["aborted"] = {"reason": "workers_missing", "detail": error.sentence}
        tally = None
    finally:
        reason = (document["aborted"] or {}).get("detail", "")
        with contextlib.suppress(Exception):
            await job.announcer.close(conn, reason)
    return tally


def _means_receiver(release: GcdpStage | None, conn) -> Callable:
    """``on_message`` of ``coordinate_stream``: a worker's window means go to the central
    release, which publishes what is due."""

    async def on_message(message: Message) -> None:
        if release is None or not isinstance(message, GcdpWindowMeans):
            raise RemoteProtocolError(  # counted by coordinate_stream
                f"a {message.type_name()} on the status topic", field="type"
            )
        release.receive_means(message)  # RemoteProtocolError: counted there too
        await release.flush(conn)

    return on_message


async def _after_stream(job: _Coordination, transport, conn) -> None:
    """Every worker's means are in: the central release's remaining windows; with
    ``[secure_sum]`` and no abort, the secure sum (the coordinator's; the workers keep
    the streams)."""
    if job.release is not None:
        job.release.finish()
        await job.release.flush(conn)
    scenario, document = job.scenario, job.document
    if scenario.spec.secure_sum is not None and document["aborted"] is None:
        secure = await _collector_secure_sum(scenario, transport, job.run)
        document["secure_sum"] = secure
        document["secure_sum_stage"] = {
            "status": "aborted" if secure["aborted"] else "ok",
            "seconds": secure["seconds"],
        }


def _release_outputs(release: GcdpStage, out: Path, *, arrays: bool = True) -> dict:
    """The central release's results.json entries, and (``arrays``) its arrays
    (``collector-side.npz``)."""
    gcdp = release.summary()
    if arrays:
        values = {f"gcdp/{k}": v for k, v in release.released_values().items()}
        np.savez_compressed(out / SIDE_FILE, **values)
    return {
        "gcdp": gcdp,
        "gcdp_stage": gcdp_stage_entry(gcdp),
        "collector_ledger": gcdp_ledger(release, gcdp),
        "gcdp_means_refused": release.means_refused,
    }


def _coordinator_outcome(tally, recorder: TraceRecorder | None) -> dict:
    """results.json's counters, close reason, completeness and trace entries."""
    return {
        "counters": tally.counters() if tally else None,
        "partition_messages_refused": tally.refused if tally else None,
        "close_reason": tally.close_reason() if tally else None,
        "complete": bool(tally and tally.complete),
        "trace": {
            "path": "trace.sqlite",
            "public_key": recorder.public_key if recorder else None,
            "messages": recorder.recorded if recorder else 0,
            "complete": recorder.complete if recorder else False,
        },
    }


# ---- merging ------------------------------------------------------------------------------


def merge_partitions(
    scenario: LoadedScenario, coordinator_dir: str | Path, partition_dirs, out_dir: str | Path
) -> Path:
    """One collector side's directory in ``out_dir`` from the coordinator's and the workers'
    (module docstring); returns it. The coordinator's trace becomes its ``trace.sqlite``."""
    if scenario.spec.cadr is not None:
        return merge_cadr_partitions(coordinator_dir, partition_dirs, out_dir)
    coordinator_dir, out = Path(coordinator_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    coordinator = json.loads((coordinator_dir / "results.json").read_text())
    parts = [json.loads((Path(d) / "results.json").read_text()) for d in partition_dirs]
    merged = _merged_document(scenario, coordinator, parts)
    arrays: dict[str, np.ndarray] = {}
    for directory in partition_dirs:
        side = Path(directory) / SIDE_FILE
        if side.exists():
            with np.load(side) as data:
                arrays |= {key: data[key] for key in data.files}
    if (coordinator_dir / SIDE_FILE).exists():  # the GC-DP releases
        with np.load(coordinator_dir / SIDE_FILE) as data:
            arrays |= {key: data[key] for key in data.files}
    np.savez_compressed(out / SIDE_FILE, **arrays)
    recon = [Path(d) / "reconstructions.npz" for d in partition_dirs]
    if any(path.exists() for path in recon):
        merge_npz([p for p in recon if p.exists()], out / "reconstructions.npz")
    write_results(out / "results.json", merged, indent=2)
    shutil.copy2(coordinator_dir / "trace.sqlite", out / "trace.sqlite")
    return out


def _summed(parts: list[dict], key: str) -> dict:
    total: dict = {}
    for part in parts:
        for name, value in (part.get(key) or {}).items():
            total[name] = total.get(name, 0) + value
    return dict(sorted(total.items()))


def _merged_document(scenario: LoadedScenario, coordinator: dict, parts: list[dict]) -> dict:
    order = scenario.device_ids()
    first = parts[0]
    merged = dict(first)
    for name in COUNTERS:
        merged[name] = sum(part.get(name) or 0 for part in parts)
    merged["aborted"] = coordinator.get("aborted") or next(
        (p["aborted"] for p in parts if p.get("aborted")), None
    )
    merged["warnings"] = [w for p in parts for w in p.get("warnings") or []]  # each partition's
    merged["rejections_by_field"] = _summed(parts, "rejections_by_field")
    merged["rejections_by_reason"] = _summed(parts, "rejections_by_reason")
    handled = [p["hostile_handled"] for p in parts if p.get("hostile_handled") is not None]
    merged["hostile_handled"] = all(handled) if handled else None
    merged["budget_refusals"] = dict(
        sorted(kv for p in parts for kv in (p.get("budget_refusals") or {}).items())
    )
    merged["device_rejections"] = dict(
        sorted(kv for p in parts for kv in (p.get("device_rejections") or {}).items())
    )
    merged["missing_batches"] = {
        d: s for p in parts for d, s in (p.get("missing_batches") or {}).items()
    }
    per_device = {d: e for p in parts for d, e in p["per_device"].items()}
    estimates = {d: v for p in parts for d, v in p["mean_estimates"].items()}
    merged["per_device"] = {d: per_device[d] for d in order if d in per_device}
    merged["mean_estimates"] = {d: estimates[d] for d in order if d in estimates}
    config = scenario.stream_config(coordinator["run"])
    merged["stream"] = stream_entry(config, merged)
    merged["stages"] = _merged_stages(coordinator, parts, merged)
    merged["reconstruction"] = _merged_recon(parts)
    merged["delivery"] = _merged_delivery(parts, merged)
    merged["trace"] = _merged_trace(coordinator, parts)
    merged["trace_complete"] = coordinator["trace"]["complete"] and all(
        p.get("trace_complete") for p in parts
    )
    merged["peak_rss_mb"] = round(
        coordinator["peak_rss_mb"] + sum(p.get("peak_rss_mb") or 0 for p in parts), 1
    )
    merged["seconds"] = coordinator["seconds"]
    merged["secure_sum"] = coordinator.get("secure_sum")
    if coordinator.get("secure_sum_stage"):
        merged["stages"]["secure_sum"] = coordinator["secure_sum_stage"]
    merged["gcdp"] = coordinator.get("gcdp")  # the coordinator releases
    merged["fleet_status"] = coordinator.get("fleet_status")  # the coordinator reads them
    merged["collector_ledger"] = coordinator.get("collector_ledger")
    if coordinator.get("gcdp_stage"):
        merged["stages"]["gcdp"] = coordinator["gcdp_stage"]
    merged["partitions"] = {
        "count": len(parts),
        "devices": [p["partition"]["devices"] for p in parts],
        "close_reason": coordinator.get("close_reason"),
        "messages_refused": coordinator.get("partition_messages_refused"),
        "coordinator_peak_rss_mb": coordinator["peak_rss_mb"],
        "peak_rss_mb": [p.get("peak_rss_mb") for p in parts],
    }
    return merged


def _merged_stages(coordinator: dict, parts: list[dict], merged: dict) -> dict:
    stages = dict(parts[0]["stages"])
    seconds = [p["stages"]["stream"]["seconds"] for p in parts if p["partition"]["devices"]]
    stages["stream"] = {
        **stages["stream"],
        "status": "complete"
        if merged["reports_lost"] == 0 and not merged.get("devices_rejected")
        else "incomplete",
        "seconds": max((s for s in seconds if s is not None), default=None),
        "close_reason": coordinator.get("close_reason"),
    }
    recon = [p["stages"]["reconstruct"]["seconds"] for p in parts if "reconstruct" in p["stages"]]
    if recon:
        stages["reconstruct"] = {"status": "ok", "seconds": max(recon)}
    return stages


def _merged_recon(parts: list[dict]) -> dict | None:
    entries = [p["reconstruction"] for p in parts if p.get("reconstruction")]
    if not entries:
        return None
    return {
        **entries[0],
        "streams": sum(e["streams"] for e in entries),
        "during_stage": sum(e.get("during_stage", 0) for e in entries),
        "seconds": max(e["seconds"] for e in entries),
    }


def _merged_delivery(parts: list[dict], merged: dict) -> dict:
    deliveries = [p["delivery"] for p in parts]
    summed = ("collector_reconnects", "recorder_reconnects", "collector_republished")
    return {
        **deliveries[0],
        **{key: sum(d.get(key) or 0 for d in deliveries) for key in summed},
        "reports_duplicate": merged["reports_duplicate"],
        "reports_lost": merged["reports_lost"],
        "collector_peak_pending": max(d.get("collector_peak_pending") or 0 for d in deliveries),
    }


def _merged_trace(coordinator: dict, parts: list[dict]) -> dict:
    missing = [p["trace"].get("missing_reports") for p in parts]
    return {
        "path": "trace.sqlite",
        "public_key": coordinator["trace"]["public_key"],
        "messages": coordinator["trace"]["messages"] + sum(p["trace"]["messages"] for p in parts),
        "by_kind": _summed([p["trace"] for p in parts], "by_kind"),
        "missing_reports": None if None in missing else sum(missing),
        "partitions": [
            {
                "path": f"trace-p{p['partition']['index']}.sqlite",
                "public_key": p["trace"]["public_key"],
                "messages": p["trace"]["messages"],
            }
            for p in parts
        ],
    }
