"""Partition workers and the coordinator over the broker: thin pumps around
``protocol.partition_link`` and ``protocol.partition_coordinator`` (which say why and
decide; ``protocol.partition`` says what travels).

``PartitionLink`` is what a worker's ``CollectorService`` (``partition = p``) carries: the
``PartitionLinkMachine`` of its conversation with the coordinator (the service drives it,
inside a ``PartitionWorker``, with its stream machine), and the two pumps of what a worker
says after its service ended: ``repeat_closed`` (the ``closed`` summary again until the run
closes, on a connection of its own) and ``serve_empty`` (a partition without devices).

``coordinate_stream`` is the coordinator's stream stage: it decodes the status topic, feeds
a ``StreamCoordinator`` on the loop's clock, drives its checks, awaits ``on_ready`` (the run
announcement: the fleet may start) when the machine says every worker is ready, publishes
its stage messages and hands its progress and abort to the callbacks. With a
``FleetStatusReader`` (``fleet``) it also subscribes the fleet shards' status topics
(``protocol.fleet_done``) and hands each status to the machine, which closes the stage once
every shard said its devices are done. It returns the tally; the caller says ``run closed``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from ldpfleet.broker.pump import (
    background,
    changed_unless_failed,
    drive_timers,
    publish_outbound,
    unless_failed,
)
from ldpfleet.broker.transport import Connection, ConnectionLost, Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.fleet_done import FleetStatusReader, fleet_done_filter
from ldpfleet.protocol.partition import PartitionStatus, PartitionTally, status_topic
from ldpfleet.protocol.partition_coordinator import (
    Progress,
    StageAborted,
    StreamCoordinator,
    WorkersGone,
    WorkersReady,
)
from ldpfleet.protocol.partition_link import (
    PROGRESS_EVERY,
    READY_EVERY,
    PartitionLinkMachine,
)

__all__ = [
    "PROGRESS_EVERY",
    "READY_EVERY",
    "PartitionLink",
    "WorkersMissing",
    "coordinate_stream",
]


class PartitionLink:
    """A worker's side of the coordinator conversation (module docstring)."""

    def __init__(self, run: str, partition: int, partitions: int) -> None:
        self.machine = PartitionLinkMachine(run, partition, partitions)

    @property
    def opened(self) -> bool:
        """The coordinator's ``stream open`` was heard."""
        return self.machine.opened

    @property
    def close_detail(self) -> str | None:
        """What the coordinator said when it closed the stage (None: it did not)."""
        return self.machine.close_detail

    @property
    def closed_status(self) -> PartitionStatus | None:
        """The ``closed`` summary, once said."""
        return self.machine.closed_status

    async def serve_empty(self, conn: Connection, until: asyncio.Event) -> None:
        """A partition without devices: a complete ``closed`` status, repeated until
        ``until`` (the run closed)."""
        self.machine.close_empty(asyncio.get_running_loop().time())
        await self._repeat(conn, until)

    async def repeat_closed(self, conn: Connection, until: asyncio.Event) -> None:
        """Say the ``closed`` status at once and again every ``READY_EVERY`` seconds until
        ``until`` (the run closed), on ``conn`` (the service's session has ended)."""
        self.machine.say_closed_again(asyncio.get_running_loop().time())
        await self._repeat(conn, until)

    async def _repeat(self, conn: Connection, until: asyncio.Event) -> None:
        """Publish what the machine says, at its times, until ``until`` (then nothing)."""
        machine = self.machine

        async def after_timer() -> None:
            if until.is_set():
                machine.pop_outbound()
            else:
                await publish_outbound(conn, machine)

        await after_timer()
        async with background(drive_timers(machine, after_timer)) as timer_task:
            await unless_failed(until.wait(), timer_task)  # its timers' error at once


class WorkersMissing(RuntimeError):
    """Not every partition worker said ready in time; ``sentence`` names how many."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


async def coordinate_stream(
    transport: Transport,
    run: str,
    partitions: int,
    *,
    on_ready: Callable[[], object] | None = None,
    progress: Callable[..., None] | None = None,
    workers_timeout: float = 60.0,
    fleet_timeout: float = 60.0,
    aborted: Callable[[str], None] | None = None,
    on_message: Callable[[object], Awaitable[None]] | None = None,
    fleet: FleetStatusReader | None = None,
) -> PartitionTally:
    """The coordinator's stream stage (module docstring, ``StreamCoordinator``).

    ``aborted(sentence)`` hears a stage closed because no device joined within
    ``fleet_timeout`` of the opening; ``progress(persisted, expected, joined, devices)``
    hears each check. ``on_message`` gets every other message of the status topic (a
    ``[gcdp]`` run's window means), in order: those of a worker before its ``closed``, so
    all of them before this returns; it raises ``RemoteProtocolError`` for a message it
    does not take. What is refused (undecodable, not taken, not a status of this run) is
    counted in the tally's ``refused``. ``fleet`` reads the fleet shards' statuses (its
    ``summary`` says what it heard and refused).

    Returns:
        the workers' tally once every worker closed and ``stream closed`` is published.

    Raises:
        WorkersMissing: not every worker said ready within ``workers_timeout``.
    """
    loop = asyncio.get_running_loop()
    machine = StreamCoordinator(
        run, partitions, workers_timeout=workers_timeout, fleet_timeout=fleet_timeout,
        fleet=fleet,
    )  # fmt: skip
    changed = asyncio.Event()  # the machine moved: the main task re-reads its phase
    wake = asyncio.Event()  # its deadline may have moved: the timer driver re-reads it
    lock = asyncio.Lock()  # one publisher at a time: the outbox goes out in order
    gone: list[str] = []
    async with transport.connect(f"{run}-collector-coordinator") as conn:
        await conn.subscribe(status_topic(run))
        if fleet is not None:
            await conn.subscribe(fleet_done_filter(run))

        async def moved() -> None:
            for event in machine.pop_events():
                if isinstance(event, Progress) and progress is not None:
                    progress(event.persisted, event.expected, event.joined, event.devices)
                elif isinstance(event, StageAborted) and aborted is not None:
                    aborted(event.sentence)
                elif isinstance(event, WorkersGone):
                    gone.append(event.sentence)
                elif isinstance(event, WorkersReady):
                    pass  # the main task reads the phase
            async with lock:
                await publish_outbound(conn, machine)
            changed.set()
            wake.set()

        machine.start(loop.time())
        listening = _listen(conn, machine, on_message, moved)
        timers = drive_timers(machine, moved, wake=wake)
        async with background(listening) as reader, background(timers) as timer_task:
            # a failing reader or timer task (a machine's handle_timer raising) fails the
            # wait at once with its error, instead of when an outer timeout ends it
            await _until(changed, lambda: machine.phase != "waiting", reader, timer_task)
            if gone:
                raise WorkersMissing(gone[0])
            if on_ready is not None:
                await on_ready()
            machine.open(loop.time())
            await moved()
            await _until(changed, lambda: machine.done, reader, timer_task)
            # ``done`` turns true inside ``receive``, before the reader's ``moved`` has
            # published the outbox (``stream closed``): a wake from an earlier change
            # ended this wait while the reader was publishing, and leaving cancelled it —
            # the close was never said (CI, 2026-12-07: P = 4's traces lacked it). What
            # is left goes out here, after any publish in progress (the lock).
            async with lock:
                await publish_outbound(conn, machine)
    return machine.tally


async def _listen(
    conn: Connection,
    machine: StreamCoordinator,
    on_message: Callable[[object], Awaitable[None]] | None,
    moved: Callable[[], Awaitable[None]],
) -> None:
    """Each message of the status topic to ``on_message`` (other than a
    ``PartitionStatus``) or the machine, each of a fleet shard's status topic to the
    machine's ``fleet_done``; what is refused counted by the machine."""
    loop = asyncio.get_running_loop()
    statuses = status_topic(machine.run)
    async for delivery in conn.messages():
        if delivery.topic != statuses:
            _fleet_done(machine, delivery, loop.time())
            await moved()
            continue
        try:
            message = codec.decode(delivery.payload)
            if on_message is not None and not isinstance(message, PartitionStatus):
                await on_message(message)
                continue
        except RemoteProtocolError:
            machine.refuse()  # undecodable, or not taken by ``on_message``
            continue
        with contextlib.suppress(RemoteProtocolError):  # counted by the machine
            machine.receive(message, loop.time())
        await moved()


def _fleet_done(machine: StreamCoordinator, delivery, now: float) -> None:
    """A delivery of a fleet shard's status topic to the machine (refused there when its
    topic or payload does not parse: counted and noticed)."""
    try:
        topic = topics.parse(delivery.topic)
        message = codec.decode(delivery.payload)
    except RemoteProtocolError as error:
        machine.refuse_fleet_done(delivery.topic[:300], error)
        return
    machine.fleet_done(topic, message, now)


async def _until(
    changed: asyncio.Event, done: Callable[[], bool], reader: asyncio.Future, *workers
) -> None:
    """Wait until ``done()``, re-checked on each change; the error of the pump's ``reader``
    or of any of ``workers`` (its timers) that fails meanwhile is raised at once, and so is
    the reader's end without an error (its session ended: a client that took over the
    coordinator's id), which the open stage has no deadline for (helper R2's review)."""
    while not done():
        changed.clear()
        await changed_unless_failed(changed, reader, *workers)
        if reader.done() and not reader.cancelled() and not done():
            raise ConnectionLost(
                "the coordinator's status subscription ended before the stage closed "
                "(another client connected with its client id?)"
            )
