"""The collector service: a thin pump around ``StreamCollector``.

It subscribes to every device's upstream topics, decodes and hands each delivery to the
machine, persists accepted reports (and rejections) in SQLite, and only then lets the
machine acknowledge them. Acknowledgements carry credit, which is the fleet's flow
control. At the end of the stage it computes the stream analytics from the *persisted*
reports and publishes the final ``run closed`` stage message.

With a GC-DP stage (``collector.gcdp_stage``, a ``[gcdp]`` scenario) every committed batch
is also handed to the stage, which releases each complete window on ``rel/gcdp``; the
stage finishes (releasing what is complete) before ``run closed``.

Partitions (DESIGN.md "Scale"): a worker of partition ``p`` is this service with
``partition = p`` and its devices only; it subscribes ``ldp/{run}/p{p}/dev/+/up/#`` as
``{run}-collector-p{p}``. With a ``link`` (``collector.partition.PartitionLink``) it also
subscribes ``ctl/stage`` and drives its stream machine and the link's machine as one
``protocol.partition_link.PartitionWorker``, which decides what a worker says: never a
broadcast (the stream machine's ``ctl/`` messages leave its outbox), ready, progress and,
once the pump says the last acknowledgements are published, the closed summary; the
coordinator's messages on ``ctl/stage`` are decoded here and taken (or refused) there.
Without a partition, a partitioned layout (P > 1, one process) is served whole through the
``+`` level.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ldpfleet.broker.pump import background, drive_timers, publish_outbound
from ldpfleet.broker.session import Session, end_persistent_session
from ldpfleet.broker.transport import Transport
from ldpfleet.collector.analytics import (
    PARALLEL_FROM,
    IncrementalReconstructor,
    reconstruct_streams,
    save_reconstructions,
    sw_mean_estimates,
)
from ldpfleet.collector.announce import announce_run_closed
from ldpfleet.collector.cpr import CprConfig
from ldpfleet.collector.reconstruct import Reconstruction
from ldpfleet.collector.store import ReportStore
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.events import Machine, Rejected
from ldpfleet.protocol.fleet_done import FLEET_DONE_KIND, FleetEnded, FleetStatus
from ldpfleet.protocol.partition_link import PartitionWorker
from ldpfleet.protocol.stream import (
    DeviceComplete,
    ReportAccepted,
    StageClosed,
    StreamCollector,
    StreamConfig,
)

if TYPE_CHECKING:
    from ldpfleet.collector.gcdp_stage import GcdpStage
    from ldpfleet.collector.partition import PartitionLink

PERSIST_BATCH = 512  # reports per transaction at most


class CollectorService:
    """Run the stream stage of one run on the collector side."""

    def __init__(
        self,
        transport: Transport,
        config: StreamConfig,
        devices: list[str],
        store_path: str | Path,
        *,
        max_in_flight: int = 256,
        credit_window: int = 2,
        stage_timeout: float = 600.0,
        idle_timeout: float = 30.0,
        reconstruct: str = "none",
        cpr: CprConfig | None = None,
        final_stage: bool = True,
        gcdp: GcdpStage | None = None,
        process_delay: float = 0.0,
        reconstruct_during_stage: bool | None = None,
    ) -> None:
        self.transport = transport
        self.config = config
        self.devices = devices
        self.store = ReportStore(store_path)
        self.max_in_flight = max_in_flight
        self.credit_window = credit_window
        self.stage_timeout = stage_timeout
        self.idle_timeout = idle_timeout
        self.reconstruct = reconstruct
        self.cpr = cpr
        self.final_stage = final_stage  # publish "run closed" when done (ends the trace)
        self.gcdp = gcdp  # central release of persisted raw readings
        self.reconstructions: dict[str, Reconstruction] = {}
        # reconstruct each device's stream as soon as it is complete (None: from
        # PARALLEL_FROM devices on, where a process pool pays)
        if reconstruct_during_stage is None:
            reconstruct_during_stage = len(devices) >= PARALLEL_FROM
        self._early: IncrementalReconstructor | None = (
            IncrementalReconstructor(config, reconstruct, cpr=cpr)
            if reconstruct != "none" and reconstruct_during_stage
            else None
        )
        self._completed: list[str] = []  # complete devices not yet handed to ``_early``
        self.machine: StreamCollector | None = None
        self.subscribed = asyncio.Event()
        self.stage_seconds = 0.0  # set when the stage closes (``seconds_so_far`` before)
        self._stage_started: float | None = None  # time.monotonic() when the stage opened
        self._accepted: list[tuple[str, int, int, list[float], float]] = []
        self._rejections: list[tuple[float, str, str, str, str, str]] = []
        self._closed = False
        self.session: Session | None = None
        # fault injection: seconds of extra work per delivery (a slow disk)
        self.process_delay = process_delay
        self.peak_pending = 0  # most deliveries ever buffered unconsumed (memory bound)
        self.partition: int | None = None  # a partition worker's partition
        self.link: PartitionLink | None = None  # a partition worker's coordinator link
        self.worker: PartitionWorker | None = None  # the machine and the link's (with a link)
        # a split run's collector side: the shards' "my devices are done" statuses
        # (protocol.fleet_done); every shard said so: the stage closes (``_on_fleet_status``)
        self.fleet_status: FleetStatus | None = None

    def seconds_so_far(self) -> float:
        """The stream stage's duration: ``stage_seconds`` once it closed, the time since it
        opened while it is still open (a run aborted by run_timeout), 0 before it opened."""
        if self.stage_seconds or self._stage_started is None:
            return self.stage_seconds
        return time.monotonic() - self._stage_started

    def _filters(self) -> tuple[str, ...]:
        run, partitions = self.config.run, self.config.partitions
        level = self.partition if self.partition is not None else None
        if level is None and partitions > 1:
            level = topics.ANY_PARTITION  # one collector serving every partition
        control = (topics.ctl(run, "stage"),) if self.link is not None else ()
        return (topics.all_up(run, level), *control)

    def _client_id(self) -> str:
        run = self.config.run
        return (
            f"{run}-collector" if self.partition is None else f"{run}-collector-p{self.partition}"
        )

    def _outbox(self) -> Machine:
        """The machine whose outbox is published and whose timers are driven: the stream
        machine, or a coordinated worker's ``PartitionWorker``."""
        return self.worker if self.worker is not None else self.machine

    def _take_events(self) -> None:
        assert self.machine is not None
        now = time.time()
        for event in self.machine.pop_events():
            if isinstance(event, ReportAccepted):
                self._accepted.append((event.device, event.seq, event.t0, event.values, now))
            elif isinstance(event, Rejected):
                self._rejections.append(
                    (now, event.device, event.topic, event.kind, event.field, event.reason)
                )
            elif isinstance(event, DeviceComplete):
                if self._early is not None:
                    self._completed.append(event.device)
            elif isinstance(event, StageClosed):
                self._closed = True

    async def _persist_and_ack(self, conn: Session) -> None:
        assert self.machine is not None
        if self._accepted or self._rejections:
            accepted, self._accepted = self._accepted, []
            rejections, self._rejections = self._rejections, []
            self.store.persist(accepted, rejections)  # commit BEFORE acknowledging
            self.machine.confirm_persisted((device, seq) for device, seq, *_ in accepted)
            self._take_events()
            if self.gcdp is not None and accepted:
                self.gcdp.on_persisted(accepted)  # release only what is committed
            self._reconstruct_completed()
        await publish_outbound(conn, self._outbox())
        if self.gcdp is not None:
            await self.gcdp.flush(conn)

    def _handle(self, topic_text: str, payload: bytes, now: float) -> None:
        assert self.machine is not None
        try:
            topic = topics.parse(topic_text)
        except RemoteProtocolError as error:
            self.machine.reject(topic_text[:300], "invalid", error)
            return
        control = topic.family == "ctl" and self.worker is not None
        try:
            message = codec.decode(payload)
        except RemoteProtocolError as error:
            if control:
                self.worker.refuse_control(error)
            else:
                self.machine.reject(topic, topic.kind, error)
            return
        if control:
            self.worker.control(message, now)  # the coordinator's stage messages
        elif (
            self.fleet_status is not None and topic.kind == FLEET_DONE_KIND and topic.family == "up"
        ):
            self._on_fleet_status(topic, message, now)
        else:
            self.machine.receive(topic, message, now)

    def _on_fleet_status(self, topic: topics.Topic, message, now: float) -> None:
        """A fleet shard's ``FleetDone``: a bad one is rejected like any bad input; once
        every shard said its devices are done, the stage closes (``FleetStatus`` decides;
        missing batches count as lost, as when the one-process runner's fleet ends)."""
        assert self.machine is not None and self.fleet_status is not None
        try:
            self.fleet_status.receive(topic, message, now)
        except RemoteProtocolError as error:
            self.machine.reject(topic, message.type_name(), error, message)
            return
        for event in self.fleet_status.pop_events():
            if isinstance(event, FleetEnded):
                self.machine.close(event.sentence)  # a closed stage stays as it is

    def hold_stage(self, name: str) -> None:
        """Keep the stream stage open once complete until ``release_stage(name)``
        (``StreamCollector.hold_open``)."""
        assert self.machine is not None, "the stage is not open yet (wait for subscribed)"
        self.machine.hold_open(name)

    def release_stage(self, name: str) -> None:
        """Drop a hold; a complete stage closes now."""
        if self.machine is not None:
            self.machine.release(name)
            self._take_events()
            if self._closed:
                self._wake.set()

    def request_close(self, reason: str) -> None:
        """Close the stage now (e.g. the in-process fleet has ended); missing = lost."""
        if self.machine is not None:
            self.machine.close(reason)
            self._take_events()
            self._wake.set()

    async def _consume(self, conn: Session) -> None:
        assert self.machine is not None
        loop = asyncio.get_running_loop()
        try:
            async with contextlib.aclosing(conn.messages()) as deliveries:
                async for delivery in deliveries:
                    self.peak_pending = max(self.peak_pending, conn.pending() + 1)
                    if self.process_delay:
                        await asyncio.sleep(self.process_delay)
                    self._handle(delivery.topic, delivery.payload, loop.time())
                    self._take_events()
                    if conn.pending() == 0 or len(self._accepted) >= PERSIST_BATCH:
                        await self._persist_and_ack(conn)
                    if self._closed:
                        break
        finally:
            self._wake.set()

    def _reconstruct_completed(self) -> None:
        """Hand the persisted streams of newly complete devices to the pool, a chunk at a
        time (reading them back costs one indexed query per chunk)."""
        if self._early is None or len(self._completed) < self._early.chunk:
            return
        devices, self._completed = self._completed, []
        self._early.add(self.store.device_values(devices))

    async def _reconstruct(self, streams: dict) -> dict:
        """Reconstruct every received stream (in worker processes, off the event loop) and
        save them next to the store as reconstructions.npz. With reconstruction during the
        stage, only the streams not reconstructed yet are left; ``seconds`` is the time
        this step adds after the stage either way."""
        started = time.perf_counter()
        during = 0
        if self._early is not None:
            # handed to the pool while the stage ran; the rest (complete devices short of a
            # chunk among them) is in ``streams`` already, read once for the whole run
            during = self._early.during_stage
            self.reconstructions = await asyncio.to_thread(self._early.finish, streams)
        else:
            self.reconstructions = await asyncio.to_thread(
                reconstruct_streams, self.config, streams, self.reconstruct, cpr=self.cpr
            )
        path = self.store.path.parent / "reconstructions.npz"
        await asyncio.to_thread(save_reconstructions, path, self.config, self.reconstructions)
        return {
            "method": self.reconstruct,
            "streams": len(self.reconstructions),
            "during_stage": during,
            "seconds": time.perf_counter() - started,
            "path": path.name,
            "per_device": {
                device: {"period_hat": r.period, "period_confidence": r.confidence}
                for device, r in self.reconstructions.items()
            },
        }

    async def run(self) -> dict:
        """Serve until every device delivered everything or the stage deadline passes."""
        try:
            return await self._serve()
        finally:
            if self._early is not None:
                self._early.close()  # a failed run leaves no pool behind

    async def _serve(self) -> dict:
        """One stage on a persistent session: open the machine, pump deliveries, timers and
        acks until the stage closes, then the results (analytics on the persisted reports,
        reconstructions, the GC-DP release, ``run closed``)."""
        loop = asyncio.get_running_loop()
        run = self.config.run
        self._wake = asyncio.Event()
        # a persistent session (the broker queues reports while the collector is away) that
        # reconnects after a broker restart until the stage deadline
        async with Session(
            self.transport,
            self._client_id(),
            self._filters(),
            clean_session=False,
            give_up_after=self.stage_timeout,
        ) as conn:
            self.session = conn
            started = loop.time()
            self._open_machine(started)
            await publish_outbound(conn, self._outbox())
            self.subscribed.set()
            await self._pump(conn)
            self.stage_seconds = loop.time() - started
            results = await self._stage_results(conn, run)
        # everything is stored: a restart would have nothing to resume
        await end_persistent_session(self.transport, self._client_id())
        self.store.close()
        return results

    def _open_machine(self, started: float) -> None:
        """The stage's machine, its deadline ``stage_timeout`` after ``started`` (loop
        time), resumed from what the store holds, and opened."""
        self._stage_started = time.monotonic()
        self.machine = StreamCollector(
            self.config,
            self.devices,
            max_in_flight=self.max_in_flight,
            credit_window=self.credit_window,
            deadline=started + self.stage_timeout,
            idle_timeout=self.idle_timeout,
        )
        # A restarted collector resumes: what is stored counts, and is not re-asked.
        self.machine.restore(self.store.persisted_keys())
        self.machine.open()
        self._take_events()
        if self.link is not None:  # a coordinated worker: ready from now on
            self.worker = PartitionWorker(self.machine, self.link.machine)
            self.worker.start(started)

    async def _pump(self, conn: Session) -> None:
        """Consume deliveries and drive the machine's timers (a coordinated worker's link's
        too) until the stage closes; persist and acknowledge the rest; then tell a worker
        its last acks are out (it says its closed summary, on the same session)."""

        async def after_timer() -> None:
            self._take_events()
            await self._persist_and_ack(conn)
            if self._closed:
                self._wake.set()

        async with background(drive_timers(self._outbox(), after_timer)):
            if not self._closed:
                async with background(self._consume(conn)):
                    await self._wake.wait()
            await self._persist_and_ack(conn)
        # Leaving cancelled the reader (and the timers) possibly inside a publish: the
        # session keeps that message queued until acknowledged, but only a later publish
        # sends it, and when the stage's ``stream closed`` is out already there may be
        # none (a [secure_sum] run without GC-DP, not a partition worker: no ``run
        # closed`` from here). tests/unit/test_B5_service_leaves_nothing_unsent.py
        await conn.flush()
        if self.worker is not None:  # after the last acks, on the same session
            self.worker.stage_done(asyncio.get_running_loop().time())
            await publish_outbound(conn, self.worker)

    async def _stage_results(self, conn: Session, run: str) -> dict:
        """The closed stage's results from the persisted reports: the machine's summary,
        missing batches, mean estimates, reconstructions and the GC-DP release (flushed on
        ``conn``); a final stage announces ``run closed``."""
        streams = self.store.device_values()
        mean_warnings: list[str] = []  # results.json ``warnings`` (scenarios.runner)
        results = {
            **self.machine.summary(),
            "missing_batches": {
                device: seqs for device, seqs in self.machine.missing().items() if seqs
            },
            "mean_estimates": sw_mean_estimates(self.config, streams, mean_warnings),
            "mean_estimate_warnings": mean_warnings,
            "stream_seconds": self.stage_seconds,
            "peak_pending": self.peak_pending,
        }
        if self.reconstruct != "none":
            results["reconstruction"] = await self._reconstruct(streams)
        if self.gcdp is not None:
            self.gcdp.finish()
            await self.gcdp.flush(conn)
            results["gcdp"] = self.gcdp.summary()
        if self.final_stage:
            await announce_run_closed(conn, run)
        return results
