"""Partition workers and the coordinator over the broker (``protocol.partition`` says why).

``PartitionLink`` is what a worker's ``CollectorService`` (``partition = p``) uses to talk to
the coordinator: it repeats ``ready`` until the coordinator's ``stream open`` is heard,
sends ``progress`` at most every ``PROGRESS_EVERY`` seconds, closes the stage when the
coordinator says ``stream closed`` (a deadline, no fleet) and sends the ``closed`` summary
after the worker's last acknowledgements.

``coordinate_stream`` is the coordinator's stream stage: wait for every worker's ``ready``,
call ``on_ready`` (the run announcement: the fleet may start), say ``stream open`` (again
when a restarted worker says ready), pass
the summed progress on, close the stage on a silent fleet, and once every partition closed
say ``stream closed`` with the stage's reason. It returns the tally; the caller says
``run closed``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ldpfleet.broker.transport import Connection, Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import Stage
from ldpfleet.protocol.partition import (
    COMPLETE_REASON,
    COUNTERS,
    PartitionStatus,
    PartitionTally,
    status_topic,
)
from ldpfleet.protocol.partition_control import OPEN, link_order
from ldpfleet.protocol.stream import STAGE

if TYPE_CHECKING:
    from ldpfleet.collector.service import CollectorService

PROGRESS_EVERY = 1.0  # seconds between two progress statuses of a worker
READY_EVERY = 1.0  # seconds between two ready statuses until the stage opens


class PartitionLink:
    """A worker's side of the coordinator conversation (module docstring)."""

    def __init__(self, run: str, partition: int, partitions: int) -> None:
        self.run, self.partition, self.partitions = run, partition, partitions
        self.opened = asyncio.Event()
        self.close_detail: str | None = None  # the coordinator closed the stage
        self.closed_status: bytes | None = None  # the ``closed`` summary, once sent

    def _status(self, service: CollectorService | None, state: str, **extra) -> bytes:
        machine = service.machine if service is not None else None
        states = machine.devices.values() if machine is not None else ()
        devices = len(service.devices) if service is not None else 0
        n_batches = service.config.n_batches if service is not None else 0
        return codec.encode(
            PartitionStatus(
                run=self.run,
                sender=topics.COLLECTOR_ID,
                partition=self.partition,
                partitions=self.partitions,
                state=state,
                persisted=sum(len(s.persisted) for s in states),
                expected=devices * n_batches,
                joined=sum(s.hello for s in states),
                devices=devices,
                **extra,
            )
        )

    def control(self, service: CollectorService, payload: bytes) -> None:
        """A coordinator message on ``ctl/stage``: ``stream open`` (stop repeating ready),
        ``stream closed`` or ``run closed`` (close this partition's stage now), as
        ``protocol.partition_control.link_order`` reads it. Anything
        else (undecodable, not a ``Stage``, a stage of another run or sender) is refused as
        the worker's other intake refuses: counted by reason in ``reports_rejected`` (so in
        the ``closed`` status), noticed on ``svc/collector/reject`` and stored."""
        topic = topics.ctl(self.run, "stage")
        message = None
        try:
            message = codec.decode(payload)
            order = link_order(message, self.run)
        except RemoteProtocolError as error:
            kind = message.type_name() if message is not None else "stage"
            service.machine.reject(topic, kind, error)
            return
        if order is None:  # the coordinator's other stage messages
            return
        if order.action == OPEN:
            self.opened.set()
        else:
            self.close_detail = order.detail
            service.request_close(order.reason)

    async def report(self, service: CollectorService, conn: Connection) -> None:
        """Ready until the stage opens, then progress (runs in the background)."""
        topic = status_topic(self.run)
        while not self.opened.is_set():
            await conn.publish(topic, self._status(service, "ready"))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(READY_EVERY):
                    await self.opened.wait()
        last = None
        while True:
            status = self._status(service, "progress")
            if status != last:
                await conn.publish(topic, status)
                last = status
            await asyncio.sleep(PROGRESS_EVERY)

    async def closed(self, service: CollectorService, conn: Connection) -> None:
        """The summary, after the worker's last acknowledgements (same session); kept in
        ``closed_status`` for ``repeat_closed``."""
        summary = service.machine.summary()
        complete = summary["stage_state"] == "closed" and summary["reports_lost"] == 0
        self.closed_status = self._status(
            service,
            "closed",
            complete=complete,
            detail=summary["close_reason"][:500],
            counters=[int(summary[name]) for name in COUNTERS],
        )
        await conn.publish(status_topic(self.run), self.closed_status)

    async def serve_empty(self, conn: Connection, until: asyncio.Event) -> None:
        """A partition without devices: a complete ``closed`` status, repeated until
        ``until`` (``repeat_closed``)."""
        counters = [0] * len(COUNTERS)
        self.closed_status = self._status(
            None, "closed", complete=True, detail=COMPLETE_REASON, counters=counters
        )
        await self.repeat_closed(conn, until)

    async def repeat_closed(self, conn: Connection, until: asyncio.Event) -> None:
        """Say the ``closed`` status again every ``READY_EVERY`` seconds until ``until``
        (the run closed). The coordinator may not listen yet when the first one goes out:
        a stage whose deadline passed at once (a worker's deadline counts from its own
        start) closes before the coordinator subscribed, and the status is not retained;
        the coordinator's tally takes each partition's first ``closed`` only."""
        assert self.closed_status is not None, "repeat_closed before closed"
        while not until.is_set():
            await conn.publish(status_topic(self.run), self.closed_status)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(READY_EVERY):
                    await until.wait()


def _stage(run: str, state: str, detail: str = "") -> bytes:
    return codec.encode(
        Stage(run=run, sender=topics.COLLECTOR_ID, stage=STAGE, state=state, detail=detail)
    )


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
) -> PartitionTally:
    """The coordinator's stream stage (module docstring). ``WorkersMissing`` when not every
    worker is ready within ``workers_timeout``; ``aborted(sentence)`` hears a stage closed
    because no device joined within ``fleet_timeout`` of the opening. ``on_message`` gets
    every other message of the status topic (a ``[gcdp]`` run's window means), in order:
    those of a worker before its ``closed``, so all of them before this returns; it raises
    ``RemoteProtocolError`` for a message it does not take. What is refused (undecodable,
    not taken, not a status of this run) is counted in the tally's ``refused``."""
    tally = PartitionTally(run, partitions)
    changed = asyncio.Event()
    reopen = asyncio.Event()  # a (restarted) worker said ready after the opening
    opened_at: list[float] = []
    async with transport.connect(f"{run}-collector-coordinator") as conn:
        await conn.subscribe(status_topic(run))
        listener = asyncio.create_task(_listen(conn, tally, changed, reopen, opened_at, on_message))
        try:
            await _until(changed, lambda: tally.all_ready, workers_timeout)
            if not tally.all_ready:
                missing = sorted(set(range(partitions)) - tally.ready)
                raise WorkersMissing(
                    f"{len(missing)} of {partitions} partition workers of run {run} did not "
                    f"say ready within {workers_timeout:g} s (partitions {missing[:10]})"
                )
            if on_ready is not None:
                await on_ready()
            await _open_until_closed(
                conn, run, tally, changed, reopen, opened_at, progress, fleet_timeout, aborted
            )
        finally:
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)
    return tally


async def _listen(
    conn,
    tally: PartitionTally,
    changed: asyncio.Event,
    reopen: asyncio.Event,
    opened_at: list[float],
    on_message: Callable[[object], Awaitable[None]] | None,
) -> None:
    """The coordinator's listener: each message of the status topic to ``on_message``
    (other than a ``PartitionStatus``) or the tally (``changed`` set; ``reopen`` set by a
    worker saying ready after the opening); what is refused counted in ``tally.refused``."""
    async for delivery in conn.messages():
        try:
            status = codec.decode(delivery.payload)
            if on_message is not None and not isinstance(status, PartitionStatus):
                await on_message(status)
                continue
        except RemoteProtocolError:
            tally.refused += 1  # undecodable, or not taken by ``on_message``
            continue
        with contextlib.suppress(RemoteProtocolError):  # counted by the tally
            tally.receive(status)
            changed.set()
            if opened_at and status.state == "ready":
                reopen.set()


async def _open_until_closed(
    conn,
    run: str,
    tally: PartitionTally,
    changed: asyncio.Event,
    reopen: asyncio.Event,
    opened_at: list[float],
    progress: Callable[..., None] | None,
    fleet_timeout: float,
    aborted: Callable[[str], None] | None,
) -> None:
    """Open the stage and wait until every worker closed: say "open" again for a worker
    that restarted, report ``progress``, and close the stage (``aborted`` hears why) when
    no device joined within ``fleet_timeout``; then close it with the tally's reason."""
    await conn.publish(topics.ctl(run, "stage"), _stage(run, "open"))
    clock = asyncio.get_running_loop().time  # asyncio's timers' clock (virtual in tests)
    opened = clock()
    opened_at.append(opened)
    closing = False
    while not tally.all_closed:
        await _until(changed, lambda: tally.all_closed, 0.5)
        if reopen.is_set():  # say it again for a worker that restarted
            reopen.clear()
            await conn.publish(topics.ctl(run, "stage"), _stage(run, "open"))
        if progress is not None:
            progress(*tally.progress())
        silent = tally.progress()[2] == 0
        if not closing and silent and clock() - opened > fleet_timeout:
            sentence = f"no fleet joined run {run} within {fleet_timeout:g} s"
            closing = True
            if aborted is not None:
                aborted(sentence)
            await conn.publish(topics.ctl(run, "stage"), _stage(run, "closed", sentence))
    if not closing:
        await conn.publish(topics.ctl(run, "stage"), _stage(run, "closed", tally.close_reason()))


async def _until(changed: asyncio.Event, done: Callable[[], bool], timeout: float) -> None:
    """Wait until ``done()`` (re-checked on each change) or ``timeout`` seconds."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while not done():
                changed.clear()
                await changed.wait()
