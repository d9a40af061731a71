"""A scenario's collector side and fleet side as separate programs (docs/separate-processes.md).

``ldpfleet collector`` runs ``collector_side`` and ``ldpfleet fleet --shard i/k`` runs
``fleet_side``, on any broker, started in either order. They meet on the run announcement
(``protocol.rendezvous``): the collector side announces the run (retained) once it listens,
each fleet shard waits for it (``devices.rendezvous.wait_for_run``) before its devices
start, and both compare the run's terms (``run_terms``: kind, scenario, seed, devices and
the scenario's digest).

Kinds of scenario:

- ``stream`` (with or without ``[gcdp]``): the collector side is the trace recorder and the
  ``CollectorService`` (GC-DP release stage, CPR as configured); each fleet shard runs its
  slice of the devices (``devices.fleet.Fleet``).
- ``secure_sum`` (a stream scenario with ``[secure_sum]``): then the secure-sum stage,
  opened under the rule ``ldpfleet run`` uses too (``scenarios.secure_sum_stage``,
  ``protocol.stage_opening``): the collector side listens for the devices' ``DeviceReady``,
  says ``stage secure_sum open`` on ``ctl/stage``, and runs ``secure_sum`` over every
  device once all joined, or at the join deadline (``stage_timeout`` after the opening or
  the latest join, at most ``DEFAULT_PATIENCE`` x ``stage_timeout``) with those that did:
  the others drop out at the session's first deadline; nobody joining means no session.
  Each shard, on that broadcast, starts the SecAgg agents of its devices (not those that
  crashed for good) with the same inputs and the same seeded dropouts as ``ldpfleet run``
  (``scenarios.runner``); a silence deadline (``protocol.liveness``) stops them with a
  sentence if the collector side vanishes.
- ``cadr``: ``scenarios.cadr_sides`` (imported lazily).

Outputs: the collector side writes ``OUT/results.json`` (what ``ldpfleet run`` writes, minus
what only the simulator knows), ``collector.sqlite``, ``trace.sqlite`` and
``collector-side.npz`` (its reconstructions and GC-DP releases, for the merge); each shard
writes ``ledger.json`` and ``outcomes.json``. ``merge_stream_outputs`` combines them into the
results.json ``ldpfleet run`` would have written (``write_merged`` also writes ledger.json and
truth_sample.npz, so ``ldpfleet report`` draws the page).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import numpy as np
from ldpfleet.broker.auth import ADMIN, Credentials
from ldpfleet.broker.pump import background, drive_timers
from ldpfleet.broker.select import open_broker
from ldpfleet.broker.transport import AsUser, Transport
from ldpfleet.collector.analytics import note_secure_sum, privacy_entry
from ldpfleet.collector.announce import say_run_closed
from ldpfleet.collector.rendezvous import RunAnnouncer
from ldpfleet.collector.service import CollectorService
from ldpfleet.devices.fleet import ClipTally, DeviceOutcome, Fleet, device_truth, parse_shard
from ldpfleet.devices.hostile import HostileClient, flood_share, hold_for_flood
from ldpfleet.devices.rendezvous import RunTermsDiffer, wait_for_run
from ldpfleet.devices.secagg_agent import SecAggAgent
from ldpfleet.devices.sources import (
    missing_entry,
    source_cycles_entry,
)
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.fleet_done import FleetStatus, fleet_done_statuses, fleet_refused_status
from ldpfleet.protocol.liveness import CollectorSilent, SilenceWatch
from ldpfleet.protocol.messages import MAX_LISTED_DEVICES, Stage
from ldpfleet.protocol.rendezvous import RunTerms, scenario_digest
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.server import DEFAULT_PATIENCE
from ldpfleet.protocol.stage_opening import SECURE_SUM_STAGE
from ldpfleet.scenarios.cadr_run import scenario_header
from ldpfleet.scenarios.clipping import add_clipping
from ldpfleet.scenarios.fleet_shard import write_shard_outputs
from ldpfleet.scenarios.jsonout import write_json, write_results
from ldpfleet.scenarios.plans import fleet_config, fleet_state_file
from ldpfleet.scenarios.runner import (
    SECURE_SUM_SESSION,
    SECURE_SUM_TOTAL_MAX,
    TRUTH_SAMPLE,
    collector_for,
    fault_report,
    latency_summary,
    ledger_document,
    partial_collector_results,
    per_device_entries,
    recorder_for,
    score_gcdp,
    score_reconstructions,
    score_secure_sum,
    secure_sum_dropouts,
    secure_sum_entry,
    secure_sum_vectors,
    stream_warnings,
    watch_progress,
)
from ldpfleet.scenarios.schema import LoadedScenario, Scenario
from ldpfleet.scenarios.secure_sum_stage import collect_secure_sum, secure_sum_participants
from ldpfleet.scenarios.shards import shards_entry
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
)

__all__ = [
    "collector_side",
    "fleet_side",
    "merge_stream_outputs",
    "run_terms",
    "scenario_kind",
    "terms_refused",
    "write_merged",
]

SIDE_FILE = "collector-side.npz"  # the collector's reconstructions and releases
log = logging.getLogger(__name__)


def scenario_kind(scenario: LoadedScenario) -> str:
    """``"cadr"``, ``"secure_sum"`` or ``"stream"`` (with or without ``[gcdp]``)."""
    if scenario.spec.cadr is not None:
        return "cadr"
    return "secure_sum" if scenario.spec.secure_sum is not None else "stream"


def _seed(scenario: LoadedScenario, seed: int | None) -> int:
    return scenario.spec.scenario.seed if seed is None else seed


def _device_count(scenario: LoadedScenario) -> int:
    if scenario.spec.cadr is None:
        return scenario.spec.fleet.devices
    from ldpfleet.scenarios.cadr_run import load_scenario_graph

    return load_scenario_graph(scenario)[0].n


def run_announcer(scenario: LoadedScenario, run: str, terms: RunTerms) -> RunAnnouncer:
    """The collector side's announcer of ``run`` on ``terms``, repeating every ``[broker]
    announce_every`` seconds when that is set."""
    return RunAnnouncer(run, terms, repeat_every=scenario.spec.broker.announce_every or None)


def run_terms(scenario: LoadedScenario, run: str, seed: int | None = None) -> RunTerms:
    """What the collector side and every fleet shard of ``run`` must agree on."""
    return RunTerms(
        kind=scenario_kind(scenario),
        scenario=scenario.name,
        seed=_seed(scenario, seed),
        devices=_device_count(scenario),
        digest=scenario_digest(terms_document(scenario)),
    )


def terms_document(scenario: LoadedScenario) -> dict:
    """The scenario the sides compare: all of it but ``[privacy]``, which only the fleet
    side reads (its devices' noise source is its own choice, devices.noise_entropy)."""
    return {k: v for k, v in scenario.to_dict().items() if k != "privacy"}


def fleet_client_id(run: str, shard: tuple[int, int], purpose: str) -> str:
    """A fleet shard's own connections (the rendezvous wait, the stage watch): client ids
    of the ``gateway`` identity, which may read ``ctl/`` like every identity."""
    return f"{run}-gateway-shard{shard[0]}of{shard[1]}-{purpose}"


async def _first(event: asyncio.Event, task: asyncio.Task) -> None:
    """Wait until ``event`` is set or ``task`` ended (its failure is raised)."""
    waiting = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiting, task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    if task.done() and not event.is_set():
        task.result()


# ---- the collector side -------------------------------------------------------------------


@dataclass
class _CollectorRun:
    """What the collector side learned, for its results.json."""

    info: object = None
    service: CollectorService | None = None
    recorder: object = None
    results: dict | None = None
    secure: dict | None = None
    aborted: dict | None = None
    trace_note: str | None = None
    auth: bool = False
    stages: dict = field(default_factory=dict)
    # [faults] hostile_messages: whether this collector handled its share of the flood
    # before its stage closed (None: no flood, or none of it was this collector's)
    hostile_handled: bool | None = None
    fleet_status: FleetStatus | None = None  # the shards' "my devices are done" statuses
    wall: float = 0.0  # time.perf_counter() when the side started (results.json seconds)


async def hold_for_hostile(
    scenario: LoadedScenario,
    service: CollectorService,
    state: _CollectorRun,
    partition: tuple[int, int] | None = None,
) -> None:
    """With ``[faults] hostile_messages``: hold ``service``'s stage open until it counted its
    share of the flood (``partition`` ``(p, P)``: the share that reaches worker ``p``;
    ``devices.hostile.hold_for_flood``); ``state.hostile_handled`` says whether it did."""
    faults = scenario.spec.faults
    if faults is None or not faults.hostile_messages:
        return
    p, count = partition if partition is not None else (None, 1)
    rejections, replays = flood_share(faults.hostile_messages, count, p)
    state.hostile_handled = await hold_for_flood(service, rejections, replays)


async def collector_side(
    scenario: LoadedScenario,
    broker: str | Transport,
    run: str,
    out_dir: str | Path,
    *,
    seed: int | None = None,
    credentials: Credentials | None = None,
    fleet_timeout: float = 60.0,
    on_listening: Callable[[str], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Run the collector side of ``run``: announce the run once listening, collect, close
    the announcement; write OUT/results.json, collector.sqlite, trace.sqlite. Returns the
    results (``aborted`` says why, e.g. no fleet joined within ``fleet_timeout``).
    ``progress(persisted, expected)`` hears the stream stage's report count."""
    scenario.refuse_bulk("the separate collector side")
    if scenario.spec.cadr is not None:
        from ldpfleet.scenarios.cadr_sides import cadr_collector_side

        return await cadr_collector_side(
            scenario,
            broker,
            run,
            out_dir,
            seed=seed,
            credentials=credentials,
            fleet_timeout=fleet_timeout,
        )
    seed = _seed(scenario, seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    wall = time.perf_counter()
    state = _CollectorRun(auth=credentials is not None, wall=wall)
    announcer = run_announcer(scenario, run, run_terms(scenario, run, seed))
    try:
        async with open_broker(broker, credentials=credentials) as (transport, info):
            state.info = info
            async with transport.connect(f"{run}-collector-run") as conn:
                try:
                    hooks = _Hooks(fleet_timeout, on_listening, progress)
                    await _collect(
                        scenario, transport, run, out, seed, state, announcer, conn, hooks
                    )
                finally:
                    reason = (state.aborted or {}).get("detail", "")
                    with contextlib.suppress(Exception):
                        await announcer.close(conn, reason)
    except asyncio.CancelledError:
        _stopped(scenario, run, state)  # what it persisted is written, then it stops
        _write_collector(scenario, run, seed, state, out, wall)
        raise
    return _write_collector(scenario, run, seed, state, out, wall)


STOPPED = "the collector side was stopped before the run closed"
BEFORE_RELEASE = "written before its last release was published"


def _stopped(
    scenario: LoadedScenario, run: str, state: _CollectorRun, detail: str = STOPPED
) -> None:
    """A collector side stopped (SIGTERM, cancelled) before the run closed: its results
    hold what it had persisted; everything else counts as lost."""
    state.aborted = state.aborted or {"reason": "stopped", "detail": detail}
    if state.results is None:
        state.results = partial_collector_results(
            state.service, scenario.stream_config(run), detail
        )


def _persist_release(scenario, run, seed, state: _CollectorRun, out: Path) -> None:
    """Before a batch of GC-DP releases is published (``GcdpStage.before_publish``):
    OUT/results.json as if the side stopped now (``_stopped``: ``aborted`` ``stopped``, the
    ``gcdp`` entry and ``collector_ledger`` holding their charges), so a collector side
    killed outright leaves on disk the account of every release it published, where the
    merge and ``trace verify`` read the collector's ledger. The run's end overwrites it; the
    side's own state is left as it was. (``coordinator._persist_release`` does the same for
    a partitioned run's coordinator; ``runner.persist_release_ledger`` for one process.)"""
    aborted, results = state.aborted, state.results
    try:
        _stopped(scenario, run, state, f"{STOPPED} ({BEFORE_RELEASE})")
        document = _collector_document(scenario, run, seed, state, time.perf_counter() - state.wall)
        write_results(out / "results.json", document, indent=2)
    finally:
        state.aborted, state.results = aborted, results


def _write_collector(scenario, run, seed, state: _CollectorRun, out: Path, wall: float) -> dict:
    results = _collector_document(scenario, run, seed, state, time.perf_counter() - wall)
    write_results(out / "results.json", results, indent=2)
    _save_side_arrays(out, state)
    return results


@dataclass(frozen=True)
class _Hooks:
    """How long the collector side waits for a fleet, and who hears of its progress."""

    fleet_timeout: float
    on_listening: Callable[[str], None] | None
    progress: Callable[[int, int], None] | None


async def _collect(scenario, transport, run, out, seed, state, announcer, conn, hooks) -> None:
    """Recorder + collector service (+ the secure-sum stage), announced once listening."""
    fleet_timeout, on_listening, progress = hooks.fleet_timeout, hooks.on_listening, hooks.progress
    grace = scenario.spec.collector.finish_grace
    state.recorder = recorder = recorder_for(scenario, transport, run, out / "trace.sqlite")
    state.service = service = collector_for(
        scenario, transport, run, out / "collector.sqlite", seed=seed
    )
    # each shard says when its devices are done; all said so: the stream stage closes
    # (protocol.fleet_done), as the one-process runner's does when its fleet task ends
    # (a shard that refused the run says so there too: its terms against ours)
    state.fleet_status = service.fleet_status = FleetStatus(
        run, scenario.device_ids(), run_terms(scenario, run, seed)
    )
    if service.gcdp is not None:  # each release's charge on disk before it is published
        service.gcdp.before_publish = lambda _stage: _persist_release(
            scenario, run, seed, state, out
        )
    async with asyncio.TaskGroup() as group:
        recording = group.create_task(recorder.run_until_closed())
        await _first(recorder.subscribed, recording)
        collecting = group.create_task(service.run())
        holding = group.create_task(hold_for_hostile(scenario, service, state))
        await _first(service.subscribed, collecting)
        watching = group.create_task(watch_progress(service, progress)) if progress else None
        await announcer.open(conn)
        if on_listening is not None:
            on_listening(state.info.url)
        await _close_without_fleet(service, collecting, run, fleet_timeout, state)
        state.results = await collecting
        state.aborted = state.aborted or terms_refused(state.fleet_status)
        await holding  # ends with the stage
        if watching is not None:
            watching.cancel()
            c = state.results
            progress(c["reports_received"], c["reports_expected"])
        if scenario.spec.secure_sum is not None:
            if state.aborted is None:
                state.secure = await _collector_secure_sum(scenario, transport, run)
                state.stages["secure_sum"] = {
                    "status": "aborted" if state.secure["aborted"] else "ok",
                    "seconds": state.secure["seconds"],
                }
            await say_run_closed(transport, conn, run, announcer)
        await asyncio.wait({recording}, timeout=grace)
        if not recording.done():
            recording.cancel()
            state.trace_note = (
                "the collector's final 'run closed' message did not reach the recorder "
                f"within finish_grace ({grace:g} s)"
            )
        await asyncio.gather(recording, return_exceptions=True)


def terms_refused(fleet: FleetStatus | None) -> dict | None:
    """results.json ``aborted`` when fleet shards refused the run (the collector announced
    other terms than theirs: ``protocol.fleet_done.FleetRefused``): reason
    ``terms_differ``, the first differing ``field`` with the ``collector``'s value and the
    ``fleet``'s, and the stage's close sentence; None when no shard refused."""
    if fleet is None or not fleet.refusals:
        return None
    first = fleet.summary()["terms_refused"][min(fleet.refusals)]
    return {
        "reason": "terms_differ",
        **first,  # field, collector, fleet
        "detail": fleet.refusal_sentence(),
    }


async def _close_without_fleet(
    service: CollectorService, collecting: asyncio.Task, run: str, timeout: float, state
) -> None:
    """If no device of the fleet has spoken ``timeout`` seconds after the announcement,
    close the stage: the run is aborted with one sentence."""
    await asyncio.wait({collecting}, timeout=timeout)
    if collecting.done() or service.machine is None:
        return
    summary = service.machine.summary()
    if len(summary["devices_silent"]) < summary["devices"]:
        return
    sentence = f"no fleet joined run {run} within {timeout:g} s"
    state.aborted = {"reason": "no_fleet", "fleet_timeout": timeout, "detail": sentence}
    service.request_close(sentence)


async def _collector_secure_sum(scenario: LoadedScenario, transport: Transport, run: str) -> dict:
    """The ``[secure_sum]`` stage across processes: open it under the rule ``ldpfleet run``
    uses too (``scenarios.secure_sum_stage``: the shards start their agents on the
    opening), then one aggregation session over every device of the fleet. The join
    deadline is the stage's own (``protocol.stage_opening``), not ``--fleet-timeout``."""
    devices = scenario.device_ids()
    result = await collect_secure_sum(scenario, transport, run, SECURE_SUM_SESSION)
    if isinstance(result, dict):  # no device joined: no session
        return result
    entry = secure_sum_entry(scenario, devices, result)
    entry["survivor_ids"] = sorted(result.survivors)
    if result.total is not None:  # whole, however long: the merge scores it against the truth
        entry["total"] = result.total.tolist()
    return entry


def _collector_document(
    scenario: LoadedScenario, run: str, seed: int, state: _CollectorRun, seconds: float
) -> dict:
    """results.json of the collector side: ``ldpfleet run``'s layout, the fleet's parts
    (outcomes, truth, accuracy) empty; ``mean_estimates`` as the collector computed them."""
    config = scenario.stream_config(run)
    c = state.results or {}
    service, recorder = state.service, state.recorder
    reconstruction = c.get("reconstruction")
    stages = {
        "stream": stream_stage_entry(c, aborted=False, fleet_seconds=None),
        **state.stages,
    }
    if reconstruction is not None:
        stages["reconstruct"] = {"status": "ok", "seconds": reconstruction["seconds"]}
    gcdp = c.get("gcdp")
    if gcdp is not None:
        stages["gcdp"] = gcdp_stage_entry(gcdp)
    estimates = c.get("mean_estimates", {})
    recon_devices = (reconstruction or {}).get("per_device", {})
    return {
        "run": run,
        "event_loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
        "scenario": scenario_header(scenario, seed),
        "broker": {
            "kind": getattr(state.info, "kind", None),
            "url": getattr(state.info, "url", None),
            "auth": state.auth,
            "shard_brokers": None,
        },
        "aborted": state.aborted,
        **collector_counts(c, devices_unfinished=None),  # the fleet knows which are unfinished
        "stream": stream_entry(config, c),
        "stages": stages,
        "fleet": None,  # the fleet shards' outcomes.json
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "accuracy": None,  # needs the simulator's truth: merge_stream_outputs
        "per_device": {
            d: {"mean_estimate": estimates.get(d), **recon_devices.get(d, {})}
            for d in scenario.device_ids()
        },
        "reconstruction": reconstruction_summary(reconstruction),
        "secure_sum": state.secure,
        "gcdp": gcdp,
        "trace": trace_entry(scenario, state.recorder, _out_dir(state)),
        "delivery": collector_delivery(scenario, c, service, recorder),
        "faults": None,
        "hostile_handled": state.hostile_handled,
        # which shards said their devices are done (the merge's fleet.shards.said_done)
        "fleet_status": state.fleet_status.summary() if state.fleet_status else None,
        "trace_complete": bool(recorder and recorder.complete),
        "trace_incomplete_reason": state.trace_note,
        "seconds": seconds,
        "mean_estimates": estimates,
        "collector_ledger": _central_ledger(state, gcdp),
        # a plugin's estimate_mean failing here (collector.analytics): results.json warnings
        "warnings": list(c.get("mean_estimate_warnings") or []),
    }


def _out_dir(state: _CollectorRun) -> Path | None:
    """The collector's output directory (where its store lives), None before it started."""
    return state.service.store.path.parent if state.service is not None else None


def _central_ledger(state: _CollectorRun, gcdp: dict | None) -> dict | None:
    """The collector's own ledger (GC-DP central releases), as ``ldpfleet run`` writes it."""
    return gcdp_ledger(state.service.gcdp if state.service is not None else None, gcdp)


def _save_side_arrays(out: Path, state: _CollectorRun) -> None:
    """OUT/collector-side.npz: the reconstructions ([0, 1] units) and GC-DP releases, exactly
    as the collector holds them (the merge scores them against the truth)."""
    service = state.service
    if service is None:
        return
    arrays = {f"recon/{d}": r.values for d, r in service.reconstructions.items()}
    if service.gcdp is not None:
        arrays |= {f"gcdp/{k}": v for k, v in service.gcdp.released_values().items()}
    np.savez_compressed(out / SIDE_FILE, **arrays)


# ---- the fleet side -----------------------------------------------------------------------


class _StageWatch:
    """A shard's connection to ``ctl/stage``: sets ``opened`` on the secure-sum stage and
    ``closed`` on the end of the run (subscribed before the shard's devices start)."""

    def __init__(self, transport: Transport, run: str, client_id: str) -> None:
        self.transport, self.run, self.client_id = transport, run, client_id
        self.opened = asyncio.Event()
        self.closed = asyncio.Event()
        self.heard: Callable[[], None] | None = None

    async def _consume(self, conn) -> None:
        async with contextlib.aclosing(conn.messages()) as deliveries:
            async for delivery in deliveries:
                try:
                    message = codec.decode(delivery.payload)
                except RemoteProtocolError:
                    continue
                if not isinstance(message, Stage) or message.sender != topics.COLLECTOR_ID:
                    continue
                if self.heard is not None:
                    self.heard()
                if message.stage == SECURE_SUM_STAGE and message.state == "open":
                    self.opened.set()
                elif message.stage == "run" and message.state == "closed":
                    self.closed.set()

    @contextlib.asynccontextmanager
    async def watching(self):
        """Subscribed for the duration of the block."""
        async with self.transport.connect(self.client_id) as conn:
            await conn.subscribe(topics.ctl(self.run, "stage"))
            async with background(self._consume(conn)):
                yield self


async def fleet_side(
    scenario: LoadedScenario,
    broker: str | Transport,
    run: str,
    shard: tuple[int, int],
    out_dir: str | Path,
    *,
    seed: int | None = None,
    credentials: Credentials | None = None,
    wait_timeout: float = 60.0,
    on_waiting: Callable[[], None] | None = None,
) -> dict:
    """Run shard ``shard`` of ``run``'s fleet once its collector announced the run: the
    stream devices, then (``[secure_sum]``) their SecAgg agents. Writes OUT/ledger.json and
    OUT/outcomes.json (also when cancelled). Raises ``RunNotAnnounced`` /
    ``RunTermsDiffer`` when the collector is missing or runs other terms. ``on_waiting``
    is called once the broker is reached, as the wait for the announcement begins."""
    if scenario.spec.cadr is not None:
        from ldpfleet.scenarios.cadr_sides import cadr_fleet_side

        return await cadr_fleet_side(
            scenario, broker, run, shard, out_dir, seed=seed, credentials=credentials,
            wait_timeout=wait_timeout,
        )  # fmt: skip
    seed = _seed(scenario, seed)
    terms = run_terms(scenario, run, seed)
    async with open_broker(broker, credentials=credentials) as (transport, info):
        if on_waiting is not None:
            on_waiting()
        try:
            epoch = await wait_for_run(
                transport,
                run,
                terms,
                client_id=fleet_client_id(run, shard, "wait"),
                timeout=wait_timeout,
            )
        except RunTermsDiffer:  # the collector side hears it at once, not at its timeout
            grace = scenario.spec.collector.finish_grace
            await say_refused(transport, run, shard, terms, grace)
            raise
        state_file = fleet_state_file(scenario, run, shard, out_dir)
        config = fleet_config(scenario, run, seed, state_file=state_file)
        fleet = Fleet(config, transport, shard=shard)
        fleet.seconds = None
        attacker = await _start_attacker(scenario, transport, run, shard, credentials)
        job = _ShardRun(scenario, transport, run, shard, seed, fleet, attacker, wait_timeout)
        try:
            outcomes = await _run_shard(job)
        except asyncio.CancelledError:
            outcomes = fleet.outcomes()
            _write_fleet(out_dir, scenario, run, shard, info.url, fleet, outcomes, epoch,
                         job.secure, attacker)  # fmt: skip
            raise
        finally:
            if attacker is not None:
                attacker[1].cancel()
                await asyncio.gather(attacker[1], return_exceptions=True)
    _write_fleet(out_dir, scenario, run, shard, info.url, fleet, outcomes, epoch, job.secure,
                 attacker)  # fmt: skip
    return {
        "shard": shard,
        "epoch": epoch,
        "outcomes": outcomes,
        "secure_sum": job.secure,
        "out": str(out_dir),
        # devices restored from the shard's state file (a killed shard started again)
        "resumed": fleet.resumed,
        "state_file": state_file,
    }


@dataclass
class _ShardRun:
    """One fleet shard's run (``fleet_side``); ``secure`` is set as soon as the secure sum
    returns (a cancellation after it still writes it)."""

    scenario: LoadedScenario
    transport: Transport
    run: str
    shard: tuple[int, int]
    seed: int
    fleet: Fleet
    attacker: tuple | None  # (HostileClient, task) of ``_start_attacker``
    wait_timeout: float
    secure: dict | None = None


async def _run_shard(job: _ShardRun) -> list[DeviceOutcome]:
    """The shard's devices (timed: ``fleet.seconds``), the attacker's end and, with
    ``[secure_sum]``, the secure sum while the stage messages are watched; returns the
    devices' outcomes."""
    scenario, fleet = job.scenario, job.fleet
    started = time.perf_counter()
    if scenario.spec.secure_sum is None:
        outcomes = await fleet.run()
        fleet.seconds = time.perf_counter() - started
        await _finish_attacker(scenario, job.attacker)
        await _say_fleet_done(job, outcomes)
        return outcomes
    watch = _StageWatch(job.transport, job.run, fleet_client_id(job.run, job.shard, "stage"))
    async with watch.watching():
        outcomes = await fleet.run()
        fleet.seconds = time.perf_counter() - started
        await _finish_attacker(scenario, job.attacker)
        await _say_fleet_done(job, outcomes)
        job.secure = await _fleet_secure_sum(
            scenario, job.transport, job.run, fleet, job.seed, watch, job.wait_timeout
        )
    return outcomes


def _fleet_done_counts(fleet: Fleet, outcomes: list[DeviceOutcome]) -> tuple[int, list, list]:
    """How the shard's devices ended: (finished, gone for good, stopped otherwise)."""
    gone = {d for d, crash in fleet.crashes.items() if not crash.returns}
    ended = [o for o in outcomes if o.unfinished]
    lost = [o.device for o in ended if o.device in gone and o.crashed]
    stopped = [o.device for o in ended if o.device not in lost]
    return len(outcomes) - len(ended), lost, stopped


# device ids one part of a shard's status lists at most (of each list; tests make it small)
FLEET_DONE_PART_LIMIT = MAX_LISTED_DEVICES


async def _say_fleet_done(job: _ShardRun, outcomes: list[DeviceOutcome]) -> None:
    """Tell the collector side that every device of this shard has ended
    (``protocol.fleet_done``): once every shard said so, it closes the stream stage (a
    partitioned run's coordinator orders every worker's closed). A status listing more
    devices than one message holds goes in parts (``fleet_done_statuses``), all on one
    connection; a status that cannot be sent is logged and the stage closes on its
    deadlines, as before."""
    scenario = job.scenario
    finished, gone, stopped = _fleet_done_counts(job.fleet, outcomes)
    try:  # more parts than a status may have (5,000) is logged too, not a failed shard
        statuses = fleet_done_statuses(
            job.run, job.shard, finished, gone, stopped, limit=FLEET_DONE_PART_LIMIT
        )
        async with asyncio.timeout(scenario.spec.collector.finish_grace):
            async with job.transport.connect(fleet_client_id(job.run, job.shard, "done")) as conn:
                for status in statuses:
                    await conn.publish(status.topic, codec.encode(status.message))
    except Exception as error:  # the collector's deadlines are the backstop
        log.warning("fleet shard %s/%s could not say it is done: %s", *job.shard, error)


async def say_refused(transport, run: str, shard, terms: RunTerms, grace: float) -> None:
    """Tell the collector side that this shard refused the run (its announcement had
    other terms) and says its own (``protocol.fleet_done.FleetRefused``): it stops naming
    the term and both values (a stream side closes its stage; a CADR-LDP side,
    ``scenarios.cadr_sides``, stops the run), instead of waiting ``--fleet-timeout`` for
    devices that will never start. Best effort, as ``_say_fleet_done``: a refusal that
    cannot be sent within ``grace`` seconds is logged, and the collector's deadlines are
    the backstop."""
    try:
        status = fleet_refused_status(run, shard, terms)
        async with asyncio.timeout(grace):
            async with transport.connect(fleet_client_id(run, shard, "done")) as conn:
                await conn.publish(status.topic, codec.encode(status.message))
    except Exception as error:
        log.warning("fleet shard %s/%s could not say it refused the run: %s", *shard, error)


async def _start_attacker(scenario, transport, run, shard, credentials):
    """``[faults] hostile_messages``: fleet shard 0 attacks (``HostileClient.over_broker``,
    as the run's ``admin`` when auth is on); returns (attacker, task) once it listens to
    what it attacks (before any device of this shard starts), else None."""
    faults = scenario.spec.faults
    if faults is None or not faults.hostile_messages or shard[0] != 0:
        return None
    attacker = HostileClient(scenario.stream_config(run), faults.hostile_messages)
    if credentials is not None:
        transport = AsUser(transport, ADMIN, credentials.password(ADMIN))
    task = asyncio.create_task(attacker.over_broker(transport, run))
    await _until_any(attacker.ready, task=task)
    if task.done():
        task.result()  # it could not subscribe: say why
    return attacker, task


async def _finish_attacker(scenario, attacker) -> None:
    """The devices are done: the flood, if still under way, gets ``finish_grace``."""
    if attacker is not None:
        await asyncio.wait({attacker[1]}, timeout=scenario.spec.collector.finish_grace)


def _write_fleet(out_dir, scenario, run, shard, url, fleet, outcomes, epoch, secure,
                 attacker=None) -> None:  # fmt: skip
    write_shard_outputs(
        Path(out_dir),
        scenario,
        run,
        shard,
        url,
        fleet,
        outcomes,
        extra={
            "epoch": epoch,
            "seed": fleet.seed,
            "fleet_seconds": fleet.seconds,
            "secure_sum": secure,
            "resumed": fleet.resumed,
            "hostile": attacker[0].summary() if attacker is not None else None,
        },
    )


async def _fleet_secure_sum(
    scenario: LoadedScenario,
    transport: Transport,
    run: str,
    fleet: Fleet,
    seed: int,
    watch: _StageWatch,
    wait_timeout: float,
) -> dict:
    """The shard's part of the secure-sum stage; returns its outcomes.json entry."""
    section = scenario.spec.secure_sum
    loop = asyncio.get_running_loop()
    silence = SilenceWatch(
        run,
        # the secure-sum server extends a stage while replies arrive (its patience)
        DEFAULT_PATIENCE * section.stage_timeout + scenario.spec.collector.finish_grace,
        first_timeout=wait_timeout + section.stage_timeout,
    )
    silent = asyncio.Event()
    stopped: list[str] = []

    async def after_timer() -> None:
        for event in silence.pop_events():
            if isinstance(event, CollectorSilent):
                stopped.append(f"secure sum stopped: {event.sentence}")
                silent.set()

    watch.heard = lambda: silence.heard(loop.time())
    silence.start(loop.time())
    agents: list[SecAggAgent] = []
    async with background(drive_timers(silence, after_timer)):
        await _until_any(watch.opened, watch.closed, silent)
        if watch.opened.is_set() and not silent.is_set():
            agents = _secagg_agents(scenario, transport, run, fleet, seed, watch.heard)
            tasks = [asyncio.create_task(agent.run()) for agent in agents]
            finished = asyncio.ensure_future(asyncio.gather(*tasks, return_exceptions=True))
            await _until_any(watch.closed, silent, task=finished)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        elif not silent.is_set():
            stopped.append("the collector closed the run without a secure sum")
    silence.stop()
    return {
        "stopped": stopped[0] if stopped else None,
        "devices": {
            a.client.device: {"state": a.client.state, "dropped": a.dropped} for a in agents
        },
    }


def _secagg_agents(scenario, transport, run, fleet: Fleet, seed: int, heard) -> list:
    """The shard's SecAgg agents: the participants, inputs and seeded dropouts of
    ``ldpfleet run`` (``scenarios.secure_sum_stage``)."""
    section = scenario.spec.secure_sum
    mine = secure_sum_participants(fleet)  # not the devices that crashed for good
    vectors = secure_sum_vectors(scenario, {d: fleet.clean[d] for d in mine})
    dropping = secure_sum_dropouts(scenario, scenario.device_ids(), seed)
    gate = asyncio.Semaphore(scenario.spec.fleet.connect_concurrency)
    return [
        SecAggAgent(
            transport,
            SecAggClient(run, SECURE_SUM_SESSION, d, vectors[d]),
            dropout=section.dropout_stage if d in dropping else None,
            announce_dropout=True,
            connect_gate=gate,
            ready=True,
            heard=heard,
        )
        for d in mine
    ]


async def _until_any(*events: asyncio.Event, task: asyncio.Future | None = None) -> None:
    """Wait until one of ``events`` is set (or ``task`` is done)."""
    waiters = {asyncio.ensure_future(e.wait()) for e in events}
    try:
        await asyncio.wait(
            waiters | ({task} if task else set()), return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        for waiter in waiters:
            waiter.cancel()


# ---- merging the pieces -------------------------------------------------------------------


@dataclass
class _Truth:
    """The simulator's truth of every device (what ``Fleet`` and ``ShardedFleet`` hold)."""

    clean: dict[str, np.ndarray]
    true_periods: dict[str, int | None]
    crashed: dict
    crashes: dict
    clipping: dict[str, ClipTally]


def _truth(scenario: LoadedScenario, run: str, seed: int, crashed: dict) -> _Truth:
    config = fleet_config(scenario, run, seed)
    clean, periods, clipping = {}, {}, {}
    for index, device in enumerate(config.device_ids):
        clean[device], periods[device], _, clipping[device] = device_truth(
            config.source, seed, index, config.stream.lo, config.stream.hi
        )
    return _Truth(clean, periods, crashed, config.crash_plan(), clipping)


def _scenario_of(document: dict) -> LoadedScenario:
    """The scenario a collector side ran, from its results.json (data paths resolve from
    the recorded scenario path)."""
    recorded = document["scenario"]
    path = Path(recorded["path"]) if recorded.get("path") else None
    if path is not None and path.exists():
        from ldpfleet.scenarios.schema import load_scenario

        return load_scenario(path)
    return LoadedScenario(msgspec.convert(recorded["spec"], Scenario), path)


def shards_device_noise(shards: list[dict]) -> str | None:
    """The fleet's noise source from its shards' outcomes.json: theirs when they agree,
    "mixed" when they do not (the seeded caveat applies), None when none said."""
    said = {s.get("device_noise") for s in shards} - {None}
    if not said:
        return None
    return said.pop() if len(said) == 1 else "mixed"


def _load_fleet_dirs(fleet_dirs) -> tuple[list[DeviceOutcome], dict, list[dict]]:
    outcomes, crashed, shards = [], {}, []
    for directory in fleet_dirs:
        data = json.loads((Path(directory) / "outcomes.json").read_text())
        outcomes += [DeviceOutcome(**entry) for entry in data["devices"]]
        crashed.update(data.get("crashed", {}))
        shards.append(data)
    return outcomes, crashed, shards


@dataclass
class _Attack:
    """``fault_report``'s view of the attack fleet shard 0 made (its outcomes.json
    ``hostile``), with whether the collector side handled it before closing."""

    injected: dict

    @classmethod
    def of(cls, shards: list[dict], handled: bool | None) -> _Attack | None:
        entry = next((s["hostile"] for s in shards if s.get("hostile")), None)
        if entry is None:
            return None
        return cls({**entry, "handled_before_close": bool(handled)})

    def summary(self) -> dict:
        return self.injected


class _Released:
    """``score_gcdp``'s view of the releases the collector side saved."""

    def __init__(self, released: dict[int, np.ndarray]) -> None:
        self._released = released

    def released_values(self) -> dict[int, np.ndarray]:
        return dict(sorted(self._released.items()))


def merge_stream_outputs(
    collector_dir: str | Path, fleet_dirs, scenario: LoadedScenario | None = None
) -> dict:
    """The results.json ``ldpfleet run`` writes, from a stream collector side's OUT and its
    fleet shards' OUTs (the truth is recomputed from the scenario and seed, as the
    simulator does). ``scenario`` defaults to the one recorded in the collector's results."""
    collector_dir = Path(collector_dir)
    c = json.loads((collector_dir / "results.json").read_text())
    scenario = scenario or _scenario_of(c)
    run, seed = c["run"], c["scenario"]["seed"]
    config = scenario.stream_config(run)
    outcomes, crashed, shards = _load_fleet_dirs(fleet_dirs)
    order = {d: i for i, d in enumerate(scenario.device_ids())}
    outcomes.sort(key=lambda o: order.get(o.device, len(order)))
    truth = _truth(scenario, run, seed, crashed)
    side = np.load(collector_dir / SIDE_FILE) if (collector_dir / SIDE_FILE).exists() else {}
    # the collector side's own entries that the merge consumes, not the run's results
    internal = ("mean_estimates", "collector_ledger", "hostile_handled", "fleet_status")
    results = {k: v for k, v in c.items() if k not in internal}
    reconstruction = _merged_reconstruction(scenario, c, side, truth, config)
    results["devices_unfinished"] = sum(1 for o in outcomes if o.unfinished)
    results["stages"]["stream"]["fleet_seconds"] = _fleet_seconds(shards)
    results["fleet"] = _fleet_entry(scenario, outcomes, shards, _said_done(c))
    results["accuracy"] = accuracy_entry(scenario, config, c["mean_estimates"], outcomes)
    results["per_device"] = per_device_entries(outcomes, c, reconstruction)
    if reconstruction is not None:
        results["reconstruction"] = {k: v for k, v in reconstruction.items() if k != "per_device"}
    results["secure_sum"] = _merged_secure_sum(scenario, c.get("secure_sum"), truth)
    if c.get("gcdp") is not None:
        results["gcdp"] = _merged_gcdp(scenario, c["gcdp"], side, truth)
    results["delivery"] = delivery_entry(c["delivery"], outcomes)
    results["faults"] = _merged_faults(scenario, c, truth, outcomes, shards)
    _add_source_entries(results, scenario, truth)
    # the claim and what the devices' ledgers spent (ledger.json, write_merged)
    noise = shards_device_noise(shards)
    results["device_noise"] = noise
    results["privacy"] = privacy_entry(_merged_ledger(c, outcomes, config), config, noise)
    results["privacy"] = note_secure_sum(results["privacy"], results.get("secure_sum"))
    return results


def _merged_gcdp(scenario, gcdp: dict, side, truth: _Truth) -> dict:
    """The collector side's GC-DP summary scored against the truth, from the releases it
    saved (``gcdp/NODE`` arrays of its side file)."""
    released = {
        int(k.split("/")[1]): side[k] for k in getattr(side, "files", []) if k.startswith("gcdp/")
    }
    return score_gcdp(
        gcdp,
        _Released(released),
        truth,
        scenario.spec.gcdp.window,
        scenario.stream_bounds(),
    )


def _merged_faults(
    scenario, c: dict, truth: _Truth, outcomes: list[DeviceOutcome], shards: list[dict]
) -> dict | None:
    """results.json ``faults`` of a merged run: what ``[faults]`` injected (the truth's
    crashes, the shards' hostile client) and how the collector side saw it."""
    merged_results = {
        "missing_batches": c["missing_batches"],
        "reports_rejected": c["reports_rejected"],
        "rejections_by_reason": c["rejections_by_reason"],
        "reports_duplicate": c["reports_duplicate"],
    }
    attacker = _Attack.of(shards, c.get("hostile_handled"))
    return fault_report(scenario.spec.faults, truth, outcomes, merged_results, attacker)


def _add_source_entries(results: dict, scenario, truth: _Truth) -> None:
    """The simulator-side entries of results.json and their warnings: what the public
    bounds clipped, the gaps the devices filled (``missing_values``) and how many times a
    short CSV source is replayed (``source_cycles``)."""
    add_clipping(results, truth.clipping)
    source = scenario.source_spec()
    entry, warnings = missing_entry(source)  # source.missing's local fill
    if entry is not None:
        results["missing_values"] = entry
        results["warnings"] += warnings
    # how many times a CSV file shorter than the stream is replayed (devices.sources)
    cycles, warnings = source_cycles_entry(source, scenario.spec.stream.steps)
    results["source_cycles"] = cycles
    results["warnings"] += warnings
    results["warnings"] += stream_warnings(
        scenario, source, results.get("trace"), results.get("gcdp")
    )


def _merged_ledger(c: dict, outcomes: list[DeviceOutcome], config) -> dict:
    """ledger.json of a merged run: the shards' device ledgers and the collector side's
    own (``c``: the collector side's results.json)."""
    return ledger_document(
        c["run"], config.eps, config.w, outcomes, collector=c.get("collector_ledger")
    )


def _merged_reconstruction(scenario, c: dict, side, truth: _Truth, config) -> dict | None:
    if c.get("reconstruction") is None:
        return None
    from ldpfleet.collector.reconstruct import Reconstruction

    summary = {**c["reconstruction"], "per_device": {}}
    reconstructions = {}
    for device, entry in c["per_device"].items():
        key = f"recon/{device}"
        if key not in getattr(side, "files", []):
            continue
        summary["per_device"][device] = {
            "period_hat": entry.get("period_hat"),
            "period_confidence": entry.get("period_confidence"),
        }
        reconstructions[device] = Reconstruction(side[key], entry.get("period_hat"))
    scored = score_reconstructions(
        summary, reconstructions, truth, config, tolerance=scenario.spec.cpr.period_tolerance
    )
    return scored


def _merged_secure_sum(scenario, entry: dict | None, truth: _Truth) -> dict | None:
    if entry is None or "survivor_ids" not in entry:
        return entry
    entry = dict(entry)
    survivors = entry.pop("survivor_ids")
    vectors = secure_sum_vectors(scenario, {d: truth.clean[d] for d in survivors})
    scored = score_secure_sum(scenario, entry, entry.get("total"), survivors, vectors)
    if scored.get("total") is not None and len(scored["total"]) > SECURE_SUM_TOTAL_MAX:
        scored["total"] = None  # results.json's rule (``secure_sum_entry``)
    return scored


def _said_done(c: dict) -> dict[int, bool] | None:
    """Which shards the collector side heard say their devices are done (its results.json
    ``fleet_status``), by shard index; None when it kept no such record."""
    status = c.get("fleet_status")
    if not isinstance(status, dict):
        return None
    said = status.get("said_done")
    return {int(i): bool(v) for i, v in said.items()} if isinstance(said, dict) else {}


def _fleet_seconds(shards: list[dict]) -> float | None:
    seconds = [s.get("fleet_seconds") for s in shards if s.get("fleet_seconds") is not None]
    return max(seconds) if seconds else None


def _fleet_entry(
    scenario, outcomes: list[DeviceOutcome], shards: list[dict], said_done: dict | None = None
) -> dict:
    connects = [s["connect_seconds"] for s in shards if s.get("connect_seconds") is not None]
    return {
        "devices_run": len(outcomes),
        "connection": scenario.fleet_connection(),
        "connect_seconds": max(connects) if connects else None,
        "unfinished_devices": {o.device: o.unfinished for o in outcomes if o.unfinished},
        "device_errors": {o.device: o.error for o in outcomes if o.error},
        "retransmissions": sum(o.retransmissions for o in outcomes),
        "refused_messages": sum(o.refused_messages for o in outcomes),
        # final-rejection notices naming no message the device sent (ignored)
        "rejects_ignored": sum(o.rejects_ignored for o in outcomes),
        "ack_latency": latency_summary(outcomes),
        "shards": _shards_entry(shards, said_done),
    }


def _shards_entry(shards: list[dict], said_done: dict | None) -> dict:
    """results.json ``fleet.shards`` of the fleet sides (``shards``: their outcomes.json),
    keyed by shard index (``scenarios.shards.shards_entry``: the runner's shape; the exit
    codes are the split run's, ``scenarios.split_run``). ``said_done``: the collector
    side's view of which shards said their devices are done."""
    parsed = [(parse_shard(str(s["shard"])), s) for s in shards]
    index = {i: s for (i, _), s in parsed}
    count = max([len(shards), *(k for (_, k), _ in parsed)])
    return shards_entry(
        count,
        {i: s.get("peak_rss_mb") for i, s in sorted(index.items())},
        secure_sum_stopped={
            i: (s.get("secure_sum") or {}).get("stopped") for i, s in sorted(index.items())
        },
        said_done=None if said_done is None else {i: said_done.get(i, False) for i in range(count)},
    )


def write_merged(collector_dir: str | Path, fleet_dirs, out_dir: str | Path) -> dict:
    """``merge_stream_outputs`` written as OUT/results.json, with OUT/ledger.json (every
    shard's devices and the collector's own ledger) and OUT/truth_sample.npz: what
    ``ldpfleet report OUT`` reads. The trace and the store stay in ``collector_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = merge_stream_outputs(collector_dir, fleet_dirs)
    collector = json.loads((Path(collector_dir) / "results.json").read_text())
    scenario = _scenario_of(collector)
    config = scenario.stream_config(results["run"])
    outcomes, crashed, _ = _load_fleet_dirs(fleet_dirs)
    write_results(out / "results.json", results, indent=2)
    write_json(out / "ledger.json", _merged_ledger(collector, outcomes, config), indent=2)
    if results.get("reconstruction"):
        truth = _truth(scenario, results["run"], results["scenario"]["seed"], crashed)
        sample = sorted(d for d, e in results["per_device"].items() if "period_hat" in e)
        np.savez_compressed(
            out / "truth_sample.npz",
            **{d: np.clip(truth.clean[d], config.lo, config.hi) for d in sample[:TRUTH_SAMPLE]},
        )
    return results
