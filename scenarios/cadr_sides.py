"""A CADR-LDP scenario as separate programs: the collector side and ``k`` fleet shards.

    python -m ldpfleet.scenarios.cadr_sides collector SCENARIO --broker URL --run RUN
        --out DIR [--seed S] [--credentials PATH] [--fleet-timeout SECONDS]
    python -m ldpfleet.scenarios.cadr_sides fleet SCENARIO --broker URL --run RUN
        [--shard i/k] --out DIR [--seed S] [--credentials PATH] [--wait-timeout SECONDS]

Both join an existing broker and may start in any order:

* ``cadr_collector_side`` runs the trace recorder, the relay, the readiness barrier and the
  collector (``scenarios.cadr_run.collect_cadr``, the same code ``ldpfleet run`` runs), and
  announces the run (retained ``RunOpen`` on ``ctl/run``, ``collector.rendezvous``) as soon
  as all of them listen. The stages start when every device has joined
  (``protocol.readiness``); after ``fleet_timeout`` seconds without all of them it closes the
  run and stops: "3 of 4039 devices did not join run fbx within 60 s" — CADR-LDP has no
  dropout path before the plan (a missing node's neighbours wait for its NDOE code). A
  fleet shard that refused the announcement (other terms: ``RunTermsDiffer``) says so on
  its status topic (``protocol.fleet_done.FleetRefused``) and the collector side stops at
  once, as a stream run's does: the sentence names the term and both values, and
  ``results.json`` holds only ``aborted`` (reason ``terms_differ``). At the
  end it replaces the announcement with ``RunClosed`` (reason ``released``, or the
  failure's sentence) and writes ``results.json`` (the release, scored against the
  simulator's true degrees: everything ``ldpfleet run`` writes but what only the devices
  know), ``collector.sqlite`` and ``trace.sqlite``.
* ``cadr_fleet_side`` waits for the announcement on the same terms (``RunTerms``: kind,
  scenario, seed, devices, digest; ``devices.rendezvous.wait_for_run``), runs the devices
  ``i ≡ shard (mod k)`` until each release is acknowledged and writes ``outcomes.json``
  (per device what ``DeviceStats`` holds but the ledger) and ``ledger.json``. It stops
  with one sentence when the collector closes the run on a failure, or when its devices
  hear nothing for ``[cadr] stage_timeout`` seconds (``protocol.liveness``: a collector
  killed mid-run) — before the first instruction it allows ``wait_timeout +
  stage_timeout``, the time other shards may take to join.

``merge_cadr_outputs`` joins the collector's results with the shards' outcomes into the
results.json and ledger.json of ``ldpfleet run`` (``complete_results``). The module entry
prints one line on success and one sentence on stderr with exit status 1 when a side stops
(2 for bad arguments).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TypeVar

from ldpfleet.broker.recorder import stamp_public_key
from ldpfleet.broker.select import open_broker
from ldpfleet.broker.transport import Transport
from ldpfleet.collector.cadr_fleet import CadrFailed
from ldpfleet.collector.readiness import DevicesMissing
from ldpfleet.devices.graphs import Graph
from ldpfleet.devices.rendezvous import RunTermsDiffer, wait_for_run
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_budget import restate_device_noise
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.fleet_done import FleetStatus, fleet_done_filter
from ldpfleet.protocol.liveness import SilenceWatch
from ldpfleet.protocol.rendezvous import ANNOUNCE_KIND, RunClosed, RunTerms, scenario_digest
from ldpfleet.protocol.secagg.server import DEFAULT_PATIENCE
from ldpfleet.scenarios.cadr_run import (
    CadrSettings,
    DeviceStats,
    ShardStopped,
    collect_cadr,
    collector_results,
    complete_results,
    device_names,
    fresh_outputs,
    ledger_document,
    load_scenario_graph,
    run_device_shard,
    scenario_header,
    write_cadr_results,
)
from ldpfleet.scenarios.jsonout import write_results
from ldpfleet.scenarios.sides import (
    fleet_client_id,
    run_announcer,
    say_refused,
    shards_device_noise,
    terms_document,
    terms_refused,
)

__all__ = [
    "RELEASED",
    "CadrSideStopped",
    "cadr_collector_side",
    "cadr_fleet_side",
    "cadr_terms",
    "collect_unless_refused",
    "main",
    "merge_cadr_outputs",
]

RELEASED = "released"  # the reason of the RunClosed of a run that completed
# how long a refusing fleet shard tries to say so (``sides.say_refused``): best effort
REFUSAL_GRACE = 10.0

log = logging.getLogger(__name__)
T = TypeVar("T")


class CadrSideStopped(RuntimeError):
    """A side stopped before the run completed; the message is one sentence saying why."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


def cadr_terms(scenario, graph: Graph, seed: int) -> RunTerms:
    """What the collector side and every fleet shard must agree on."""
    return RunTerms(
        kind="cadr",
        scenario=scenario.name,
        seed=seed,
        devices=graph.n,
        digest=scenario_digest(terms_document(scenario)),
    )


def _joinable(broker: str | Transport) -> str | Transport:
    """A side joins an existing broker: a URL or a ready ``Transport`` object."""
    if broker in ("embedded", "memory"):
        raise ValueError(
            f"--broker {broker}: a collector or fleet side joins an existing broker; pass its "
            "mqtt:// URL (start one with `ldpfleet broker` or Mosquitto)"
        )
    return broker


async def cadr_collector_side(
    scenario,
    broker: str | Transport,
    run: str,
    out_dir: str | Path,
    *,
    seed: int | None = None,
    credentials=None,
    fleet_timeout: float = 60.0,
) -> dict:
    """Announce the run, run recorder + relay + CADR collector until the release, write
    ``OUT/results.json``, ``OUT/collector.sqlite`` and ``OUT/trace.sqlite``; return the
    results. Raises ``CadrSideStopped`` (one sentence) when devices do not join within
    ``fleet_timeout`` seconds of the announcement, a stage fails, or a fleet shard refused
    the run's terms (at once; then ``OUT/results.json`` holds ``aborted``, reason
    ``terms_differ``: tests/e2e/test_B5_cadr_terms_refused.py)."""
    settings = CadrSettings.of_scenario(scenario, seed)
    graph, _ = load_scenario_graph(scenario)
    out = fresh_outputs(out_dir)
    announcer = run_announcer(scenario, run, cadr_terms(scenario, graph, settings.seed))
    async with (
        open_broker(_joinable(broker), credentials=credentials) as (transport, info),
        transport.connect(f"{run}-collector-announce") as conn,
    ):

        async def announce() -> None:
            await announcer.open(conn)
            log.info("announced run %s (epoch %d)", run, announcer.epoch)

        async def closing(reason: str) -> None:
            await announcer.close(conn, reason)

        try:
            collected = await collect_unless_refused(
                transport,
                scenario,
                graph,
                settings.seed,
                run,
                out,
                collect_cadr(
                    transport,
                    graph,
                    settings,
                    run,
                    listening=announce,
                    join_timeout=fleet_timeout,
                    store_path=out / "collector.sqlite",
                    trace_path=out / "trace.sqlite",
                    closing=closing,
                ),
                closing,
            )
        except (DevicesMissing, CadrFailed) as error:
            raise CadrSideStopped(str(error)) from None
        finally:
            await announcer.stop_repeating()  # a failed run may not have closed it
    results = collector_results(  # the devices' noise source is theirs to say (the merge)
        graph, settings, collected, broker=info.kind, run=run, processes=None,
        device_noise=None,
    )  # fmt: skip
    written = write_cadr_results(out, {"scenario": scenario_header(scenario), **results})
    return stamp_public_key(out, written)  # trace.public_key: trace verify's anchor


async def collect_unless_refused(
    transport: Transport,
    scenario,
    graph: Graph,
    seed: int,
    run: str,
    out: Path,
    collecting: Awaitable[T],
    closing: Callable[[str], Awaitable[None]],
) -> T:
    """Await ``collecting`` (a CADR-LDP collector's ``collect_cadr``) while watching the
    fleet shards' statuses: a shard that refused the run (other terms: ``FleetRefused``)
    stops it at once, as a stream run's collector side does. CADR-LDP needs every device,
    so the run cannot go on: ``collecting`` is cancelled, the announcement is replaced by
    ``RunClosed`` with the sentence (``closing``), ``OUT/results.json`` holds only
    ``aborted`` (reason ``terms_differ``: the field, both values, the sentence) and
    ``CadrSideStopped`` is raised with the sentence. The unpartitioned collector side and
    the partitioned coordinator (``scenarios.cadr_partition``) both stop this way. The
    watcher subscribes before ``collecting`` starts (so before the run is announced: a
    refusal is not retained); a watcher that fails changes nothing (the run's own
    deadlines decide). What ``collecting`` raises goes up unchanged."""
    fleet = FleetStatus(run, device_names(graph), cadr_terms(scenario, graph, seed))
    subscribed = asyncio.Event()
    refused = asyncio.ensure_future(_fleet_refused(transport, run, fleet, subscribed))
    task: asyncio.Future[T] | None = None
    try:
        listening = asyncio.ensure_future(subscribed.wait())
        try:  # a watcher that failed (``refused`` done) is not waited for
            await asyncio.wait({listening, refused}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            listening.cancel()
        task = asyncio.ensure_future(collecting)
        await asyncio.wait({task, refused}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done() and refused.done() and not refused.exception():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            aborted = terms_refused(fleet)
            assert aborted is not None  # ``_fleet_refused`` returns on a refusal
            await closing(aborted["detail"])
            write_cadr_results(
                out, {"scenario": scenario_header(scenario), "run": run, "aborted": aborted}
            )
            raise CadrSideStopped(aborted["detail"])
        if refused.done() and refused.exception() is not None:  # the watcher failed
            log.warning("run %s: the fleet status watcher failed: %r", run, refused.exception())
        return await task
    finally:
        if task is None:  # stopped before it started: never awaited
            getattr(collecting, "close", lambda: None)()
        for each in (task, refused):
            if each is not None:
                each.cancel()
        await asyncio.gather(*(t for t in (task, refused) if t is not None), return_exceptions=True)


async def _fleet_refused(
    transport: Transport, run: str, fleet: FleetStatus, subscribed: asyncio.Event
) -> None:
    """Return once a fleet shard refused the run (``protocol.fleet_done.FleetRefused``:
    the collector announced other terms than the shard's; ``fleet.refusals`` names the
    first term that differs); ``subscribed`` is set once it listens. Every other status,
    and what does not decode or is refused by ``fleet``, changes nothing here: the run's
    own stages decide."""
    async with transport.connect(f"{run}-collector-fleet") as conn:
        await conn.subscribe(fleet_done_filter(run))
        subscribed.set()
        async for delivery in conn.messages():
            try:
                topic = topics.parse(delivery.topic)
                fleet.receive(topic, codec.decode(delivery.payload), 0.0)
            except RemoteProtocolError as error:
                log.info("run %s: a fleet status refused: %s", run, error)
                continue
            if fleet.refusals:
                return
    await asyncio.Event().wait()  # the connection ended: nothing more to hear


async def _collector_stopped(transport: Transport, run: str, epoch: int, client_id: str) -> str:
    """Resolve with a sentence once the collector closes the run of ``epoch`` on a failure
    (a completed run's close is not a reason to stop: the last acks may still be coming)."""
    async with transport.connect(client_id) as conn:
        await conn.subscribe(topics.ctl(run, ANNOUNCE_KIND))
        async for delivery in conn.messages():
            if not delivery.payload:
                continue
            try:
                message = codec.decode(delivery.payload)
            except RemoteProtocolError:
                continue
            if (
                isinstance(message, RunClosed)
                and message.sender == topics.COLLECTOR_ID
                and message.epoch == epoch
                and message.reason != RELEASED
            ):
                return f"the collector stopped run {run}: {message.reason or 'no reason given'}"
    return f"the connection watching run {run} closed"


async def cadr_fleet_side(
    scenario,
    broker: str | Transport,
    run: str,
    shard: tuple[int, int],
    out_dir: str | Path,
    *,
    seed: int | None = None,
    credentials=None,
    wait_timeout: float = 60.0,
) -> dict:
    """Wait for the collector's announcement, run the devices ``i ≡ shard (mod k)`` until
    released, write ``OUT/ledger.json`` and ``OUT/outcomes.json``; return the outcomes.
    Raises ``RendezvousError`` (no collector, other terms) or ``CadrSideStopped`` (the
    collector failed or went silent; the outcomes so far are written first)."""
    index, count = shard
    settings = CadrSettings.of_scenario(scenario, seed)
    graph, _ = load_scenario_graph(scenario)
    mine = device_names(graph)[index::count]
    if not mine:
        raise ValueError(f"shard {index}/{count} of {graph.n} devices is empty")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    terms = cadr_terms(scenario, graph, settings.seed)
    noise = scenario.spec.privacy.device_noise  # this side's own choice, not a run term
    async with open_broker(_joinable(broker), credentials=credentials) as (transport, info):
        try:
            epoch = await wait_for_run(
                transport,
                run,
                terms,
                client_id=fleet_client_id(run, shard, "wait"),
                timeout=wait_timeout,
            )
        except RunTermsDiffer:  # the collector side hears it at once, not at its timeout
            await say_refused(transport, run, shard, terms, REFUSAL_GRACE)
            raise
        # the θ search's secure sums extend a stage while replies arrive (their patience);
        # a relay phase held to its public deadline is silent until it (peer_deadline)
        silence = SilenceWatch(
            run,
            DEFAULT_PATIENCE * settings.stage_timeout + settings.peer_deadline,
            first_timeout=wait_timeout + settings.stage_timeout,
        )
        # the shard's own watch connection (gateway identity): a device's client id here
        # would collide with that device's own connections
        stopped = _collector_stopped(transport, run, epoch, fleet_client_id(run, shard, "stopped"))
        try:
            stats = await run_device_shard(
                graph,
                transport,
                run,
                settings.seed,
                index,
                count,
                connect_concurrency=settings.connect_concurrency,
                silence=silence,
                stopped=stopped,
                dropout=settings.dropout,
                dropout_stage=settings.dropout_stage,
                device_noise=noise,
            )
        except ShardStopped as stop:
            _write_fleet(out, run, shard, info.url, epoch, stop.stats, stop.sentence, noise)
            raise CadrSideStopped(stop.sentence) from None
        finally:
            stopped.close()  # never awaited if the shard failed before its devices listened
    return _write_fleet(out, run, shard, info.url, epoch, stats, "done", noise)


def _write_fleet(
    out: Path,
    run: str,
    shard: tuple[int, int],
    broker: str,
    epoch: int,
    stats: dict[str, DeviceStats],
    status: str,
    device_noise: str = "seeded",
) -> dict:
    """``outcomes.json`` (per device: ``DeviceStats`` but the ledger, and the shard's
    ``device_noise``: where its devices' noise came from, never the noise) and
    ``ledger.json``."""
    devices = {}
    for name, st in sorted(stats.items()):
        fields = asdict(st)
        fields.pop("ledger")
        devices[name] = fields
    outcomes = {
        "run": run,
        "shard": f"{shard[0]}/{shard[1]}",
        "broker": broker,
        "epoch": epoch,
        "status": status,
        "device_noise": device_noise,
        "devices": devices,
    }
    ledgers = ledger_document({name: st.ledger for name, st in sorted(stats.items())}, run)
    write_results(out / "outcomes.json", outcomes, indent=2)  # atomically (scenarios.jsonout)
    write_results(out / "ledger.json", ledgers, indent=2)
    return outcomes


def merge_cadr_outputs(
    collector_dir: str | Path,
    fleet_dirs: Iterable[str | Path],
    *,
    out_dir: str | Path | None = None,
) -> dict:
    """The results.json of ``ldpfleet run`` from a collector side's results.json and the
    fleet shards' outcomes.json + ledger.json; with ``out_dir``, also write results.json and
    ledger.json there. ``ValueError`` if a device is in no shard, or in two."""
    partial = json.loads((Path(collector_dir) / "results.json").read_text())
    stats: dict[str, DeviceStats] = {}
    dirs = [Path(d) for d in fleet_dirs]
    shards = []
    for directory in dirs:
        outcomes = json.loads((directory / "outcomes.json").read_text())
        shards.append(outcomes)
        ledgers = json.loads((directory / "ledger.json").read_text())
        for name, fields in outcomes["devices"].items():
            if name in stats:
                raise ValueError(f"device {name} is in two shards ({directory})")
            stats[name] = DeviceStats(ledger=ledgers.get(name), **fields)
    partial["processes"] = len(dirs)
    noise = shards_device_noise(shards)  # the fleet side's choice: the claim says it now
    partial["device_noise"] = noise
    if "privacy_claim" in partial:
        partial["privacy_claim"] = restate_device_noise(partial["privacy_claim"], noise)
    full = complete_results(partial, stats)
    if out_dir is None:
        full.pop("ledgers")
        return full
    target = Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    return write_cadr_results(target, full)


# The module entry -----------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``python -m ldpfleet.scenarios.cadr_sides collector|fleet SCENARIO ...``: the side
    process of ``scenarios.side_process`` (the same arguments, lines and exit statuses)."""
    from ldpfleet.scenarios.side_process import main as side_main

    return side_main(argv)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
