"""An aborted session's ``SaAbort`` reaches every device, however long the publish takes.

User trial (helper A, 2026-12-06) on Mosquitto: 12 devices on the full graph with t = 10,
3 leaving after their shares with a last will; the masked stage closed on the last
message with 9 inputs and aborted, and 8 of the 9 live agents waited on (30 s, until the
trial stopped them) in state ``masked``: ``secure_sum`` set ``done`` as soon as the server
emitted ``Aborted`` and cancelled its pump while that pump was still publishing the
server's ``SaAbort`` to every device (an MQTT ``publish_many`` awaits the broker; the
in-memory one had routed everything before its first await, so no test saw it). Now the
publish is shielded and ``secure_sum`` drains it before it closes the connection.

Here the collector's connections take 10 ms (virtual time) before they route a publish,
like a broker round trip, and a ring of 8 with 2 leavers aborts at the masked stage
whatever its labelling (a survivor isolated, a ring cut, or a dropped key with 1 holder).
The wait is bounded: a publish that never completes (aiomqtt holds a QoS 1 publish on a
dead connection for 30 s) delays the result by one ``stage_timeout`` at most, and is
logged; the session's outcome stands.
"""

from __future__ import annotations

import asyncio
import contextlib

import numpy as np
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.secure_sum import secure_sum
from ldpfleet.devices.secagg_agent import SecAggAgent
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.encoding import FixedPoint

from tests.virtual_time import VirtualTimeLoop

NAMES = [f"d{i}" for i in range(8)]
LEAVERS = {"d1", "d2"}


class _SlowSends:
    """A connection whose publishes wait 10 ms before they reach the broker (forever for
    an ``sa_abort`` when ``hang``)."""

    def __init__(self, conn, hang: bool = False) -> None:
        self._conn = conn
        self._hang = hang

    def __getattr__(self, name: str):
        return getattr(self._conn, name)

    async def publish(self, topic: str, payload: bytes, *args, **kwargs) -> None:
        await asyncio.sleep(0.01)
        await self._conn.publish(topic, payload, *args, **kwargs)

    async def publish_many(self, items, *args, **kwargs) -> None:
        items = list(items)
        await asyncio.sleep(0.01)
        if self._hang and any(b'"sa_abort"' in payload for _, payload in items):
            await asyncio.Event().wait()  # never acknowledged
        await self._conn.publish_many(items, *args, **kwargs)


class _SlowCollector:
    """The in-memory broker, with the collector's connections sending slowly."""

    def __init__(self, hang: bool = False) -> None:
        self.inner = MemoryTransport()
        self.name = self.inner.name
        self.hang = hang

    @contextlib.asynccontextmanager
    async def connect(self, client_id: str, **kwargs):
        async with self.inner.connect(client_id, **kwargs) as conn:
            yield _SlowSends(conn, self.hang) if "-collector-" in client_id else conn


async def _session(hang: bool = False, wait: float = 100.0):
    transport = _SlowCollector(hang)
    agents = [
        SecAggAgent(
            transport,
            SecAggClient("r", "s0", d, np.zeros(3)),
            dropout="after_shares" if d in LEAVERS else None,
            announce_dropout=True,
        )
        for d in NAMES
    ]
    tasks = [asyncio.create_task(agent.run()) for agent in agents]
    await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await secure_sum(
        transport, "r", "s0", NAMES, 3, FixedPoint(-1.0, 1.0, 2.0**16), degree=2
    )
    result.seconds = loop.time() - started  # the whole call, the drain included
    ended = loop.time()
    _done, pending = await asyncio.wait(tasks, timeout=wait)
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return result, agents, len(pending), loop.time() - ended


def test_every_live_device_hears_the_abort() -> None:
    result, agents, pending, after = VirtualTimeLoop.run(_session())
    assert result.aborted.startswith("masked stage: cannot unmask: "), result.aborted
    assert pending == 0 and after < 1.0  # before: 6 agents still waiting after 100 s
    for agent in agents:
        if agent.client.device in LEAVERS:
            assert agent.dropped and agent.messages_down == 3
        else:  # setup, neighbours, deliver, and the abort
            assert agent.client.state == "aborted" and agent.messages_down == 4
            assert agent.gave_up is None


def test_a_publish_that_never_ends_delays_the_result_one_stage_timeout(caplog) -> None:
    result, agents, pending, after = VirtualTimeLoop.run(_session(hang=True, wait=200.0))
    assert result.aborted.startswith("masked stage: cannot unmask: "), result.aborted
    # 3 stages of 10 ms publishes, then the default stage_timeout (30 s) for the drain
    assert 30.0 <= result.seconds < 30.1
    assert "publishes unsent after 30 s" in caplog.text
    # the live agents never heard the abort: they stop on their own silence limit,
    # 5 x stage_timeout = 150 s after the collector's last word (at 0.03 s)
    assert pending == 0 and 119.9 < after < 120.1
    for agent in agents:
        if agent.client.device not in LEAVERS:
            assert agent.gave_up.startswith("the collector was silent for 150 s")
