"""``drive_timers(inputs_drained=...)``: a passed deadline held while inputs are queued
waits for the buffer's "drained" event instead of re-checking every 10 ms, with the same
outcome (it fires once the pump has fed them); ``fan_in``'s ``MergedDeliveries.drained``
is that event. On virtual time (tests/virtual_time.py): the results do not depend on the
machine's speed."""

from __future__ import annotations

import asyncio

from ldpfleet.broker.fanin import fan_in
from ldpfleet.broker.pump import drive_timers
from ldpfleet.broker.transport import MemoryTransport

from tests.virtual_time import VirtualTimeLoop


class _Machine:
    """A deadline at t = 1 s; records the queue when it fired, the time, and how often
    the pump asked for the deadline."""

    def __init__(self, queue: list[str]) -> None:
        self.queue = queue
        self.fired_with: list[list[str]] = []
        self.fired_at: list[float] = []
        self.asked = 0

    def next_timer(self) -> float | None:
        self.asked += 1
        return None if self.fired_with else 1.0

    def handle_timer(self, now: float) -> None:
        self.fired_with.append(list(self.queue))
        self.fired_at.append(now)


async def _held(with_event: bool) -> _Machine:
    """Three inputs queued from t = 0; the pump reads them from t = 1.5 s, one per loop
    turn, and signals "drained" when it comes back with the queue empty."""
    queue = ["reply"] * 3
    machine = _Machine(queue)
    fired = asyncio.Event()
    loop = asyncio.get_running_loop()
    drain_waiters: list[asyncio.Future] = []

    async def drained() -> None:
        if not queue:
            return
        future = loop.create_future()
        drain_waiters.append(future)
        await future

    async def after_timer() -> None:
        fired.set()

    async def pump() -> None:
        await asyncio.sleep(1.5)
        while queue:
            queue.pop()
            await asyncio.sleep(0)
        for future in drain_waiters:
            future.set_result(None)

    timers = drive_timers(
        machine,
        after_timer,
        inputs_queued=lambda: len(queue),
        inputs_drained=drained if with_event else None,
    )
    tasks = [asyncio.ensure_future(timers), asyncio.ensure_future(pump())]
    await fired.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return machine


def test_the_held_deadline_waits_for_the_drained_event_not_a_poll():
    machine = VirtualTimeLoop.run(_held(with_event=True))
    assert machine.fired_with == [[]]  # fed first, as with the poll
    assert machine.fired_at == [1.5]  # the moment the pump drained, not a poll tick
    # before the deadline, at it (held), after the drain: no wake-up in between
    assert machine.asked <= 6  # (+2: the sockets are read before a passed deadline fires)


def test_the_control_without_the_event_polls():
    """The fallback (a buffer that has no ``drained``): the same outcome, by ~50 polls
    of 10 ms over the 0.5 s hold (the count the event saves)."""
    machine = VirtualTimeLoop.run(_held(with_event=False))
    assert machine.fired_with == [[]]
    assert machine.asked >= 40


async def _fan_in_hold() -> tuple[list[int], int, float]:
    """Four replies reach a fan-in before a deadline at t = 1 s; its consumer is busy
    until t = 2 s, then feeds one reply per loop turn. Returns how many were fed when the
    deadline fired, how often the pump asked for the deadline, and when it fired."""
    transport = MemoryTransport()
    topics_by_device = [[f"ldp/r/dev/d{i}/up/a"] for i in range(4)]
    fed: list[int] = []
    machine = _Machine(fed)  # type: ignore[arg-type]
    fired = asyncio.Event()

    async def after_timer() -> None:
        fired.set()

    async with (
        fan_in(transport, "svc", topics_by_device, per_connection=2) as inbound,
        transport.connect("pub") as pub,
    ):
        for (topic,) in topics_by_device:
            await pub.publish(topic, b"x")

        async def consume() -> None:
            await asyncio.sleep(2.0)
            async for _ in inbound:
                fed.append(1)
                await asyncio.sleep(0)

        timers = drive_timers(
            machine,
            after_timer,
            inputs_queued=inbound.pending,
            inputs_drained=inbound.drained,
        )
        tasks = [asyncio.ensure_future(timers), asyncio.ensure_future(consume())]
        await fired.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return machine.fired_with[0], machine.asked, machine.fired_at[0]


def test_fan_in_drained_holds_the_deadline_until_its_consumer_fed_everything():
    fed_when_fired, asked, fired_at = VirtualTimeLoop.run(_fan_in_hold())
    assert len(fed_when_fired) == 4
    assert fired_at == 2.0
    assert asked <= 6


async def test_drained_returns_at_once_when_nothing_is_pending_and_on_the_streams_end():
    transport = MemoryTransport()
    async with fan_in(transport, "svc", [["ldp/r/dev/d0/up/a"]]) as inbound:
        await asyncio.wait_for(inbound.drained(), 1)  # nothing pending
        async with transport.connect("pub") as pub:
            await pub.publish("ldp/r/dev/d0/up/a", b"x")
        waiting = asyncio.ensure_future(inbound.drained())
        await asyncio.sleep(0)
        assert not waiting.done()
        assert (await anext(inbound)).payload == b"x"
        assert not waiting.done()  # taken, but the consumer has not come back yet
        consumer = asyncio.ensure_future(anext(inbound))
        await asyncio.wait_for(waiting, 1)  # it came back for more: drained
        consumer.cancel()
        async with transport.connect("pub") as pub:
            await pub.publish("ldp/r/dev/d0/up/a", b"y")  # nobody will consume it
        late = asyncio.ensure_future(inbound.drained())
        await asyncio.sleep(0)
        assert not late.done()
    # the block ended (connections closed): nobody is left waiting
    await asyncio.wait_for(late, 1)
