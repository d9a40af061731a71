"""``collector.readiness.await_devices`` over the in-memory transport: the join count heard
by ``join_listener`` as devices join (the CLI's "n / N joined" status line)."""

from __future__ import annotations

import asyncio

from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.readiness import await_devices, join_listener
from ldpfleet.protocol import codec
from ldpfleet.protocol.readiness import ready_announcement


async def test_the_listener_hears_each_new_join_once_and_the_last_one():
    transport = MemoryTransport()
    devices = [f"d{i}" for i in range(5)]
    heard: list[tuple[int, int]] = []
    listening = asyncio.Event()
    token = join_listener.set(lambda joined, expected: heard.append((joined, expected)))
    try:
        waiting = asyncio.create_task(
            await_devices(transport, "r1", devices, timeout=60, listening=listening)
        )
        await listening.wait()
        async with transport.connect("fleet") as fleet:
            for device in [*devices[:3], devices[0], *devices[3:]]:  # d0 joins twice
                out = ready_announcement("r1", device)
                await fleet.publish(out.topic, codec.encode(out.message))
        barrier = await waiting
    finally:
        join_listener.reset(token)
    assert barrier.joined == set(devices)
    assert heard == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]  # the duplicate says nothing
