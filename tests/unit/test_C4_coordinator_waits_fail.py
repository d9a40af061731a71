"""The partition coordinator's waits fail at once when their reader or timers fail.

``coordinate_stream`` (collector/partition.py) waited on its ``changed`` event only: when
its timer task died (a ``StreamCoordinator.handle_timer`` raising) or its reader did (an
``on_message`` raising something other than a refusal), nothing set the event again, and
the wait ran into whatever outer timeout there was (here 1 hour of virtual time; in a run,
the coordinator's process until it was stopped). A worker's ``PartitionLink`` repeat
(``serve_empty``, ``repeat_closed``) waited on the run's end the same way. Now each of
these waits raises the task's error at the virtual instant it happened
(``broker.pump.changed_unless_failed`` / ``unless_failed``). On virtual time
(tests/virtual_time.py): the outcome does not depend on how busy the machine is.
"""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.partition import PartitionLink, coordinate_stream
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.messages import Stage
from ldpfleet.protocol.partition import PartitionStatus, status_topic
from ldpfleet.protocol.partition_coordinator import CHECK_EVERY, StreamCoordinator
from ldpfleet.protocol.partition_link import READY_EVERY, PartitionLinkMachine

from tests.virtual_time import VirtualTimeLoop

RUN = "c4wait"
OUTER = 3600.0  # virtual seconds: what ended the wait before (an outer timeout)
WORKERS_TIMEOUT = 5.0


class PlantedBug(Exception):
    """The error a planted machine bug raises."""


def _ready(partition: int) -> bytes:
    return codec.encode(
        PartitionStatus(run=RUN, sender=topics.COLLECTOR_ID, partition=partition,
                        partitions=2, state="ready")
    )  # fmt: skip


async def _coordinate(transport, *, say_ready: bool, on_message=None) -> float:
    """Run ``coordinate_stream`` for two partitions (both workers say ready when
    ``say_ready``) under the outer timeout; return the virtual time it raised
    ``PlantedBug`` at."""
    loop = asyncio.get_running_loop()
    opened: list[float] = []

    async def on_ready() -> None:
        opened.append(loop.time())

    async def workers() -> None:
        async with transport.connect(f"{RUN}-workers") as conn:
            await conn.publish_many((status_topic(RUN), _ready(p)) for p in (0, 1))
            await asyncio.Event().wait()

    task = asyncio.create_task(workers()) if say_ready else None
    try:
        with pytest.raises(PlantedBug, match="planted"):
            async with asyncio.timeout(OUTER):
                await coordinate_stream(transport, RUN, 2, on_ready=on_ready,
                                        workers_timeout=WORKERS_TIMEOUT,
                                        on_message=on_message)  # fmt: skip
    finally:
        if task is not None:
            task.cancel()
    assert opened == ([0.0] if say_ready else [])
    return loop.time()


def _planted_timer(monkeypatch, phase: str) -> None:
    """``StreamCoordinator.handle_timer`` raises once the machine is in ``phase``."""
    real = StreamCoordinator.handle_timer

    def handle_timer(self, now: float) -> None:
        if self.phase == phase:
            raise PlantedBug("planted handle_timer bug")
        real(self, now)

    monkeypatch.setattr(StreamCoordinator, "handle_timer", handle_timer)


def test_a_failing_timer_fails_the_wait_for_the_workers_at_once(monkeypatch):
    """No worker says ready: the machine's deadline (workers_timeout) raises, and the
    wait fails then, not at the outer timeout."""
    _planted_timer(monkeypatch, "waiting")
    at = VirtualTimeLoop.run(_coordinate(MemoryTransport(), say_ready=False))
    assert at == pytest.approx(WORKERS_TIMEOUT)


def test_a_failing_timer_fails_the_open_stage_at_once(monkeypatch):
    """Both workers ready, the stage opens at 0; its first check (CHECK_EVERY later)
    raises, and the wait for the workers' closed statuses fails then."""
    _planted_timer(monkeypatch, "open")
    at = VirtualTimeLoop.run(_coordinate(MemoryTransport(), say_ready=True))
    assert at == pytest.approx(CHECK_EVERY)


def test_a_failing_reader_fails_the_open_stage_at_once():
    """A message ``on_message`` cannot take and does not refuse (a bug, not a
    ``RemoteProtocolError``) kills the reader at 1 s: the wait fails then (before, the
    checks went on every 0.5 s and the wait hung until the outer timeout)."""
    transport = MemoryTransport()

    async def on_message(message) -> None:
        raise PlantedBug("planted on_message bug")

    async def session() -> float:
        async def stray() -> None:
            await asyncio.sleep(1.0)
            async with transport.connect(f"{RUN}-stray") as conn:
                stage = Stage(run=RUN, sender=topics.COLLECTOR_ID, stage="x", state="open")
                await conn.publish(status_topic(RUN), codec.encode(stage))

        task = asyncio.create_task(stray())
        try:
            return await _coordinate(transport, say_ready=True, on_message=on_message)
        finally:
            task.cancel()

    assert VirtualTimeLoop.run(session()) == pytest.approx(1.0)


def test_a_failing_timer_fails_an_empty_partitions_repeat_at_once(monkeypatch):
    """A worker without devices repeats its closed status until the run closes: its
    repeat's timer (READY_EVERY after the first) raising fails ``serve_empty`` then."""
    real = PartitionLinkMachine.handle_timer

    def handle_timer(self, now: float) -> None:
        if self.closed_status is not None:
            raise PlantedBug("planted link timer bug")
        real(self, now)

    monkeypatch.setattr(PartitionLinkMachine, "handle_timer", handle_timer)

    async def session() -> float:
        transport = MemoryTransport()
        link = PartitionLink(RUN, 0, 2)
        with pytest.raises(PlantedBug, match="planted"):
            async with asyncio.timeout(OUTER), transport.connect(f"{RUN}-p0") as conn:
                await link.serve_empty(conn, asyncio.Event())  # the run never closes
        return asyncio.get_running_loop().time()

    assert VirtualTimeLoop.run(session()) == pytest.approx(READY_EVERY)


def test_a_worker_that_ends_cleanly_wakes_the_wait_once_and_is_not_watched_again():
    """``changed_unless_failed``: a worker's clean end sets ``changed`` once (the caller
    re-checks); the next wait does not return because of it (no busy loop: on virtual
    time a spin would never let the clock reach the 5 s that sets ``changed``)."""
    from ldpfleet.broker.pump import changed_unless_failed

    async def session() -> list[float]:
        loop = asyncio.get_running_loop()
        changed = asyncio.Event()
        worker = asyncio.ensure_future(asyncio.sleep(1.0))
        woke = []
        await changed_unless_failed(changed, worker)  # the worker's end
        woke.append(loop.time())
        changed.clear()
        loop.call_later(4.0, changed.set)
        await changed_unless_failed(changed, worker)  # only ``changed``
        woke.append(loop.time())
        return woke

    assert VirtualTimeLoop.run(session()) == [1.0, 5.0]


def test_a_reader_whose_session_was_taken_over_fails_the_open_stage_at_once():
    """Helper R2's review: a client connecting with the coordinator's id at 1 s ends its
    reader WITHOUT an error (the memory broker's takeover, as ``broker.session`` does);
    the open stage has no deadline once devices joined, so the wait hung. Now it fails
    then, naming the ended subscription."""
    from ldpfleet.broker.transport import ConnectionLost

    transport = MemoryTransport()

    async def session() -> float:
        loop = asyncio.get_running_loop()

        async def workers() -> None:
            async with transport.connect(f"{RUN}-workers") as conn:
                await conn.publish_many((status_topic(RUN), _ready(p)) for p in (0, 1))
                await asyncio.Event().wait()

        async def intruder() -> None:
            await asyncio.sleep(1.0)
            async with transport.connect(f"{RUN}-collector-coordinator"):
                await asyncio.Event().wait()

        tasks = [asyncio.create_task(workers()), asyncio.create_task(intruder())]
        try:
            with pytest.raises(ConnectionLost, match="subscription ended"):
                async with asyncio.timeout(OUTER):
                    await coordinate_stream(transport, RUN, 2, workers_timeout=WORKERS_TIMEOUT)
            return loop.time()
        finally:
            for task in tasks:
                task.cancel()

    assert VirtualTimeLoop.run(session()) == pytest.approx(1.0)
