"""The secure sum's input hold is bounded by one stage timeout (virtual time).

``collector.secure_sum`` holds a passed stage deadline while deliveries wait in its
inbound buffer (a reply that arrived in time is fed before the server judges it missing).
That hold had no ``max_hold``: a flood that keeps the buffer from ever draining kept the
deadline waiting for ever. Here the collector's connection waits ``RTT`` virtual seconds
for the acknowledgement of each publish (QoS 1 over a busy broker), so each flood message
(undecodable: refused, with a ``Reject`` notice published) costs the pump ``RTT``, and
the flood comes at two per ``RTT``: the buffer only grows.

* A flood that never stops, and no device answering: the advertise stage's deadline
  (``STAGE`` s) fires at most one stage timeout after it passed (2 x ``STAGE``), and the
  session aborts then. Before, the hold waited for a drain that never came: the session
  was still open when the test's guard (``GUARD`` s) ended it.
* Replies that arrived before the deadline but sit behind a flood in the buffer are still
  counted: the devices' advertisements arrive at 9 s, behind 18 flood messages (0-9 s),
  and the pump reaches them at about 18 s, 8 s after the 10 s deadline and within the
  bound; the session completes with every device. A hold bounded tighter (planted:
  ``max_hold`` = 1 s) aborts it with "advertise stage: only 0 of 4 devices".
"""

from __future__ import annotations

import asyncio
import contextlib

import numpy as np
import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.secure_sum import secure_sum
from ldpfleet.devices.secagg_agent import SecAggAgent
from ldpfleet.protocol import topics
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.encoding import FixedPoint

from tests.virtual_time import VirtualTimeLoop

RUN, SESSION = "c4sa", "s"
FIXED = FixedPoint(-1.0, 1.0, 2.0**16)
NAMES = [f"d{i}" for i in range(4)]
STAGE = 10.0  # stage_timeout (virtual seconds)
RTT = 1.0  # the collector's wait for each publish's acknowledgement
GUARD = 1000.0  # virtual seconds: a session still open then was held for ever
ADVERTISE_DELAY = 9.0  # the devices' advertisements reach the collector then


class _SlowCollector(MemoryTransport):
    """The memory broker; the secure sum's own connection waits ``RTT`` per publish."""

    @contextlib.asynccontextmanager
    async def connect(self, client_id: str, **options):
        async with super().connect(client_id, **options) as conn:
            slow = client_id == f"{RUN}-collector-sa-{SESSION}"
            yield _Acknowledged(conn) if slow else conn


class _Acknowledged:
    def __init__(self, conn) -> None:
        self._conn = conn

    def __getattr__(self, name):
        return getattr(self._conn, name)

    async def publish(self, topic: str, payload: bytes, **options) -> None:
        await self._conn.publish(topic, payload, **options)
        await asyncio.sleep(RTT)

    async def publish_many(self, items) -> None:
        await self._conn.publish_many(items)
        await asyncio.sleep(RTT)


async def _flood(transport, until: float | None) -> None:
    """Two undecodable messages per ``RTT`` on d0's advertise topic (until ``until``)."""
    loop = asyncio.get_running_loop()
    async with transport.connect(f"{RUN}-flooder") as conn:
        while until is None or loop.time() < until:
            await conn.publish(topics.up(RUN, "d0", "sa_advertise"), b"\xff not a message")
            await asyncio.sleep(RTT / 2)


def _session(*, devices: bool, flood_until: float | None):
    """(the result, the virtual second the session returned at)."""

    async def main():
        loop = asyncio.get_running_loop()
        transport = _SlowCollector(delay=_advertise_delay if devices else None)
        agents = [
            SecAggAgent(transport, SecAggClient(RUN, SESSION, d, np.full(3, 0.25)))
            for d in (NAMES if devices else ())
        ]
        running = [asyncio.create_task(agent.run()) for agent in agents]
        await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
        flooding = asyncio.create_task(_flood(transport, flood_until))
        try:
            async with asyncio.timeout(GUARD):
                result = await secure_sum(transport, RUN, SESSION, NAMES, 3, FIXED,
                                          stage_timeout=STAGE)  # fmt: skip
        finally:
            flooding.cancel()
            for task in running:
                task.cancel()
            await asyncio.gather(flooding, *running, return_exceptions=True)
        return result, loop.time()

    return VirtualTimeLoop.run(main())


def _advertise_delay(topic: str, payload: bytes, recipient: str) -> float:
    """A device's advertisement reaches the collector ``ADVERTISE_DELAY`` late (the
    flood's junk on the same topic is not delayed: it is not a valid message)."""
    if topic.endswith("/up/sa_advertise") and not payload.startswith(b"\xff"):
        return ADVERTISE_DELAY
    return 0.0


def test_a_flood_cannot_hold_a_passed_deadline_past_one_stage_timeout():
    result, at = _session(devices=False, flood_until=None)
    assert result.aborted is not None and result.aborted.startswith("advertise stage")
    assert result.survivors == ()
    # the deadline (STAGE) fires at STAGE + STAGE; then the pump finishes the publish
    # it was in and drains the SaAbort (each publish RTT): a few RTT past the bound
    assert 2 * STAGE <= at <= 2 * STAGE + 4 * RTT, at


def test_replies_in_the_buffer_behind_a_flood_are_still_counted():
    result, at = _session(devices=True, flood_until=ADVERTISE_DELAY)
    assert result.aborted is None, result.aborted
    assert sorted(result.survivors) == NAMES
    assert result.summary["rejected"] >= 2 * ADVERTISE_DELAY / RTT  # the flood was read
    np.testing.assert_allclose(result.total, np.full(3, 0.25 * len(NAMES)), atol=1e-3)
    assert at > STAGE  # the advertisements were fed after the deadline passed


def test_a_failing_server_timer_fails_the_session_at_once(monkeypatch):
    """A planted ``SecAggServer.handle_timer`` bug: the session fails with it at the
    advertise deadline (before, ``secure_sum`` waited on ``done`` alone, which nobody
    would set: it hung until the guard)."""
    from ldpfleet.protocol.secagg.server import SecAggServer

    class PlantedBug(Exception):
        pass

    def handle_timer(self, now: float) -> None:
        raise PlantedBug("planted server timer bug")

    monkeypatch.setattr(SecAggServer, "handle_timer", handle_timer)

    async def main() -> float:
        with pytest.raises(PlantedBug, match="planted"):
            async with asyncio.timeout(GUARD):
                await secure_sum(MemoryTransport(), RUN, SESSION, NAMES, 3, FIXED,
                                 stage_timeout=STAGE)  # fmt: skip
        return asyncio.get_running_loop().time()

    assert VirtualTimeLoop.run(main()) == pytest.approx(STAGE)
