"""The readiness barrier's join deadline (``collector.readiness.pump_until_decided``) is
held while devices' hellos sit in the inbound buffer (``broker.pump.InputHold``), as the
CADR collector's waits are: a hello that arrived in time is not judged missing because
the collector was busy. On virtual time (tests/virtual_time.py).

Planted bug checked: ``pump_until_decided`` without the hold made the queued-hellos test
fail (``JoinDeadlinePassed(missing=('d2',))`` at 2.5 s); the pin passes either way."""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.readiness import pump_until_decided
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.readiness import (
    READY_KIND,
    AllReady,
    JoinDeadlinePassed,
    ReadinessBarrier,
    ready_announcement,
)

from tests.virtual_time import VirtualTimeLoop

RUN = "d-ready"
DEVICES = ["d0", "d1", "d2"]


class _Busy:
    """A connection read by a reader busy 1 s before it takes each delivery: what arrived
    meanwhile stays in the buffer (``pending`` counts it; no ``drained``: the hold polls)."""

    def __init__(self, conn) -> None:
        self._conn = conn

    def pending(self) -> int:
        return self._conn.pending()

    async def __aiter__(self):
        deliveries = self._conn.messages()
        while True:
            await asyncio.sleep(1.0)
            yield await anext(deliveries)


async def _join(joining: list[str]):
    """``joining``'s hellos at t = 0; the barrier's deadline at 2.5 s; the decision and
    when it came."""
    transport = MemoryTransport()
    barrier = ReadinessBarrier(RUN, DEVICES, timeout=2.5)
    async with transport.connect("collector") as conn, transport.connect("fleet") as fleet:
        await conn.subscribe(*(topics.up(RUN, d, READY_KIND) for d in DEVICES))
        for device in joining:
            out = ready_announcement(RUN, device)
            await fleet.publish(out.topic, codec.encode(out.message))
        barrier.start(asyncio.get_running_loop().time())
        decision = await pump_until_decided(
            _Busy(conn), barrier, (AllReady, JoinDeadlinePassed), run=RUN, counted_in=barrier,
            max_hold=2.5,  # as await_devices passes its timeout
        )  # fmt: skip
    return decision, asyncio.get_running_loop().time()


def test_pin_a_device_that_never_said_hello_is_missing_at_exactly_the_deadline():
    decision, at = VirtualTimeLoop.run(_join(DEVICES[:2]))
    assert isinstance(decision, JoinDeadlinePassed) and decision.missing == ("d2",)
    assert at == pytest.approx(2.5)


def test_hellos_queued_when_the_join_deadline_passes_are_counted():
    decision, at = VirtualTimeLoop.run(_join(DEVICES))
    assert decision == AllReady(devices=3)
    assert at == pytest.approx(3.0)
