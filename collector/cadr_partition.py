"""CADR-LDP with collector partitions: a worker's DSR intake and the coordinator's gathering.

DESIGN.md "Scale" (issue 23); ``protocol.partition`` (``CadrReleases``) says what travels.
The devices keep the unpartitioned CADR topics. The coordinator runs what is global
(``collector.cadr_fleet.run_cadr_collector``: the plan, the θ search and its secure sums,
θ, the relay phases, the release and its post-processing); a worker ``p`` of ``P`` only
runs the per-device DSR stage of its devices (``topics.partition_of``):

* ``serve_cadr_partition`` subscribes per device (as ``broker.fanin`` does) to its devices'
  ``up/dsr`` and ``up/budget_refused`` and to ``ctl/cadr_theta`` and ``ctl/stage``; says
  ``ready`` (``PartitionStatus``) on the status topic until θ is heard; then runs a
  ``protocol.cadr_collect.DsrIntake`` for its devices with the broadcast θ and the
  scenario's ``eps_dsr``, persists each accepted release before acknowledging it, and once
  every device of the partition released or refused sends the coordinator its values and
  refusals (``CadrReleases``, chunked, the last ``final`` with its counts). It stops on the
  coordinator's ``run closed``. What reaches it before θ (refusals, and releases: its
  control connection and its device subscriptions are separate sessions, so a worker
  that the machine's load stalled may read a device's release before the θ broadcast the
  device acted on) is held, the first refusal and the first release of each device (so
  no device's repeats crowd out another's), and judged once θ is heard (these decisions,
  the topic kind and the control topics' are ``protocol.cadr_admission.CadrWorkerAdmission``'s;
  the pump acts on its answers, counts its refusals and publishes their notices);
  one collector creates its intake before it broadcasts θ, so nothing of an honest
  device reaches it early. A release sent before the broadcast with a guessed θ is thus
  judged (and refused unless the θ is right) rather than refused outright.
  When it says ready and when it sends its chunks (and how they are cut) are its
  ``protocol.cadr_partition_link.CadrPartitionLink``'s decisions: the pump starts it,
  tells it θ was heard and the intake moved, drives its timer and publishes what it says.
* ``ReleaseGatherer`` (the coordinator's) counts the workers' ``ready``, unites their
  chunks (``protocol.partition_control.ReleaseGathering``: a malformed one is refused with
  a typed error and counted: another run, a partition outside ``0..P-1``, a device given
  twice, a chunk after the partition's final one) and waits for every worker's ready
  (``wait_ready``, before the run is announced) and, as the ``releases`` hook of
  ``run_cadr_collector``, for every partition's final chunk (``CadrFailed`` naming the
  partitions missing at the deadline, or a θ that is not the run's). Both waits and
  their deadlines are ``protocol.cadr_partition_link.ReleaseGatheringMachine``'s: the pump
  drives its timer on the loop's clock, holding a passed deadline while statuses wait in
  the buffer ``listen_to_workers`` reads (``broker.pump.InputHold``), and awaits its answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path

from ldpfleet.broker.fanin import fan_in
from ldpfleet.broker.pump import InputHold, answer_of, drive_timers, publish_outbound
from ldpfleet.broker.transport import Connection, Transport
from ldpfleet.collector.cadr_fleet import CadrFailed, GatheredReleases
from ldpfleet.collector.store import ReportStore
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_admission import (
    CadrWorkerAdmission,
    ForIntake,
    HeldDuplicate,
    RunClosed,
    ThetaHeard,
)
from ldpfleet.protocol.cadr_collect import DsrAccepted, DsrIntake
from ldpfleet.protocol.cadr_partition_link import (
    CadrPartitionLink,
    ReleaseGatheringMachine,
    ReleasesFailed,
    WorkersNotReady,
)
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.events import Event, Rejected
from ldpfleet.protocol.partition import RELEASES_CHUNK

__all__ = ["ReleaseGatherer", "listen_to_workers", "serve_cadr_partition"]


class ReleaseGatherer(ReleaseGatheringMachine):
    """The coordinator's pump of its workers' DSR stage (module docstring): what it admits
    and how long it waits are ``protocol.cadr_partition_link.ReleaseGatheringMachine``'s
    decisions; this drives its deadline on the loop's clock and awaits its answer."""

    def __init__(self, run: str, partitions: int) -> None:
        super().__init__(run, partitions)
        self.changed = asyncio.Event()
        # the status topic's buffer while ``listen_to_workers`` reads it: a passed
        # deadline is held while statuses wait there (``_answer``)
        self.hold: InputHold | None = None

    def receive(self, message: object) -> None:
        """One message of the status topic; ``RemoteProtocolError`` (counted) if refused."""
        try:
            super().receive(message)
        finally:
            self.changed.set()

    async def wait_ready(self, timeout: float) -> list[int]:
        """Wait for every worker's ready; the partitions still missing after ``timeout``."""
        self.await_ready(asyncio.get_running_loop().time(), timeout)
        answer = await self._answer()
        return list(answer.missing) if isinstance(answer, WorkersNotReady) else []

    async def gathered(self, theta: int, eps_dsr: float, timeout: float) -> GatheredReleases:
        """The ``releases`` hook of ``run_cadr_collector`` (module docstring)."""
        del eps_dsr  # the workers checked each release's ε against the scenario's
        self.await_final(asyncio.get_running_loop().time(), timeout, theta)
        answer = await self._answer()
        if isinstance(answer, ReleasesFailed):
            raise CadrFailed(answer.sentence)
        return GatheredReleases(
            dict(self.values), dict(self.refusals), self.rejected, self.duplicates
        )

    async def _answer(self) -> Event:
        """The machine's answer to the pending wait: a message ended it, or its deadline."""

        # at most one timeout late (the wait's: set before this is called)
        return await answer_of(self, self.changed, lambda: self.hold, self.timeout)


async def listen_to_workers(conn: Connection, gatherer: ReleaseGatherer) -> None:
    """Feed the status topic's messages to ``gatherer`` (subscribe ``conn`` first); while
    this reads, the gatherer's deadlines are held on ``conn``'s buffer (a worker's status
    that arrived in time is not judged missing because the coordinator was busy)."""
    reader = asyncio.current_task()
    assert reader is not None
    # kept when this ends: a stopped reader holds nothing (``InputHold``), and one that
    # failed (its connection lost) fails the gatherer's waits at once (``answer_of``),
    # also those that begin after it failed
    gatherer.hold = InputHold(conn, reader)
    async for delivery in conn.messages():
        try:
            message = codec.decode(delivery.payload)
        except RemoteProtocolError:
            gatherer.refuse_undecodable()
            continue
        with contextlib.suppress(RemoteProtocolError):  # counted by the gatherer
            gatherer.receive(message)


class _Worker:
    """One partition's DSR intake (``serve_cadr_partition``). What becomes of each inbound
    message (held before θ, refused, for the intake; θ and the run's close on the control
    topics) is ``protocol.cadr_admission.CadrWorkerAdmission``'s decision (``gate``); its
    refusals are counted in ``rejected`` (the worker's counts, its final chunk and so the
    run's ``rejected_by_collector``) and published on ``svc/collector/reject``."""

    def __init__(self, run, partition: tuple[int, int], devices, eps_dsr, store) -> None:
        self.run, self.devices = run, list(devices)
        self.partition, self.partitions = partition
        self.eps_dsr, self.store = eps_dsr, store
        self.intake: DsrIntake | None = None
        self.gate = CadrWorkerAdmission(run, self.devices)
        self.link = CadrPartitionLink(
            run, self.partition, self.partitions, len(self.devices), chunk_size=RELEASES_CHUNK
        )
        self.rejected = self.duplicates = 0
        self.closed = asyncio.Event()
        self.wake = asyncio.Event()  # the link's deadline moved: its timer driver re-reads it

    @property
    def sent(self) -> int:
        """Release chunks sent to the coordinator."""
        return self.link.sent

    @property
    def done(self) -> bool:
        """The releases are sent."""
        return self.link.done

    async def handle(self, conn: Connection, topic: topics.Topic, message: object) -> None:
        """One decoded inbound message: to the admission machine, then act on its answer."""
        self.gate.receive(topic, message, time.monotonic())  # type: ignore[arg-type]
        await self.act(conn)

    async def refuse(self, conn: Connection, topic: str, error: RemoteProtocolError) -> None:
        """A delivery that did not parse or decode: refused by the admission machine."""
        self.gate.reject(topic[:300], "invalid", error)
        await self.act(conn)

    async def act(self, conn: Connection) -> None:
        """Do what the admission machine decided: count, start on θ, stop on the run's
        close, hand device messages to the intake; publish its notices."""
        for event in self.gate.pop_events():
            if isinstance(event, Rejected):
                self.rejected += 1
            elif isinstance(event, HeldDuplicate):
                self.duplicates += 1
            elif isinstance(event, ThetaHeard):
                await self.start(conn, event.theta)
            elif isinstance(event, RunClosed):
                self.closed.set()
            elif isinstance(event, ForIntake):
                await self._to_intake(conn, event.topic, event.message)
        await publish_outbound(conn, self.gate)

    async def _to_intake(self, conn: Connection, topic: topics.Topic, message) -> None:
        """A DSR release or refusal: persist accepted releases, then ack (as one collector)."""
        intake = self.intake
        assert intake is not None
        intake.receive(topic, message, time.monotonic())
        accepted = [e for e in intake.pop_events() if isinstance(e, DsrAccepted)]
        if self.store is not None and accepted:
            self.store.persist(
                (e.device, e.seq, 0, [e.value], time.time()) for e in accepted if not e.duplicate
            )
        for event in accepted:
            self.duplicates += event.duplicate
            intake.ack(event.device, event.seq)
        await publish_outbound(conn, intake)

    async def start(self, conn: Connection, theta: int) -> None:
        """θ heard: the intake, then the held refusals and releases; the link stops
        saying ready."""
        self.intake = DsrIntake(self.run, self.devices, theta, self.eps_dsr)
        self.gate.open_intake()
        await self.act(conn)
        self.link.theta_heard(asyncio.get_running_loop().time())
        self.wake.set()


async def serve_cadr_partition(
    transport: Transport,
    run: str,
    partition: tuple[int, int],
    devices: Sequence[str],
    *,
    eps_dsr: float,
    store_path: str | Path | None = None,
) -> dict:
    """Worker ``partition = (p, P)`` of a CADR-LDP run (module docstring) until the run
    closes; returns its counts."""
    p, count = partition
    store = ReportStore(store_path) if store_path is not None else None
    worker = _Worker(run, (p, count), devices, eps_dsr, store)
    upstream = [[topics.up(run, d, "dsr"), topics.up(run, d, "budget_refused")] for d in devices]
    try:
        async with (
            transport.connect(f"{run}-collector-p{p}") as conn,
            fan_in(transport, f"{run}-collector-p{p}-in", upstream) as inbound,
        ):
            await conn.subscribe(topics.ctl(run, "cadr_theta"), topics.ctl(run, "stage"))
            tasks = [
                asyncio.create_task(_control(worker, conn)),
                asyncio.create_task(_intake(worker, conn, inbound)),
                asyncio.create_task(_say_ready(worker, conn)),
            ]
            try:
                await worker.closed.wait()
            finally:
                for task in tasks:
                    task.cancel()
                results = await asyncio.gather(*tasks, return_exceptions=True)
            for result in results:
                if isinstance(result, Exception):
                    raise result
    finally:
        if store is not None:
            store.close()
    intake = worker.intake
    return {
        "devices": len(worker.devices),
        "theta": intake.theta if intake else None,
        "released": len(intake.values) if intake else 0,
        "refusals": len(intake.refusals) if intake else 0,
        "rejected": worker.rejected + (intake.rejected if intake else 0),
        "duplicates": worker.duplicates,
        "sent": worker.sent,
        "complete": worker.done,
    }


async def _say_ready(worker: _Worker, conn: Connection) -> None:
    """Start the worker's link and publish its statuses at the times it sets (ready now and
    every ``READY_EVERY`` s until θ is heard: ``CadrPartitionLink``)."""
    worker.link.start(asyncio.get_running_loop().time())
    await _publish_link(worker, conn)
    await drive_timers(worker.link, lambda: _publish_link(worker, conn), wake=worker.wake)


async def _publish_link(worker: _Worker, conn: Connection) -> None:
    """What the worker's link says, in order, one message a publish."""
    for outbound in worker.link.pop_outbound():
        await conn.publish(outbound.topic, codec.encode(outbound.message))


async def _control(worker: _Worker, conn: Connection) -> None:
    """The control topics' deliveries to the worker's admission machine: θ starts the
    intake, ``run closed`` stops the worker (``CadrWorkerAdmission``: anything else,
    undecodable, of another sender or run, of another type, is refused, counted in
    ``worker.rejected`` and never acted on; a repeated θ is ignored)."""
    async for delivery in conn.messages():
        try:
            topic = topics.parse(delivery.topic)
            message = codec.decode(delivery.payload)
        except RemoteProtocolError as error:
            await worker.refuse(conn, delivery.topic, error)
        else:
            await worker.handle(conn, topic, message)
            await _send_if_complete(worker, conn)
        if worker.closed.is_set():
            return


async def _intake(worker: _Worker, conn: Connection, inbound) -> None:
    async for delivery in inbound:
        try:
            topic = topics.parse(delivery.topic)
            message = codec.decode(delivery.payload)
        except RemoteProtocolError as error:
            await worker.refuse(conn, delivery.topic, error)
            continue
        await worker.handle(conn, topic, message)
        await _send_if_complete(worker, conn)


async def _send_if_complete(worker: _Worker, conn: Connection) -> None:
    """Hand the intake's state to the link, which sends the chunks to the coordinator once
    every device of the partition released or refused."""
    intake = worker.intake
    if intake is None:
        return
    rejected = worker.rejected + intake.rejected
    worker.link.intake_changed(intake, rejected=rejected, duplicates=worker.duplicates)
    await _publish_link(worker, conn)
