"""``broker.fanin.fan_in``: devices' topics spread over connections, merged into one stream."""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.broker.fanin import fan_in
from ldpfleet.broker.transport import MemoryTransport


async def test_devices_are_spread_over_connections_and_everything_is_merged():
    transport = MemoryTransport()
    topics_by_device = [[f"ldp/r/dev/d{i}/up/a", f"ldp/r/dev/d{i}/up/b"] for i in range(7)]
    async with fan_in(transport, "svc", topics_by_device, per_connection=3) as inbound:
        # 7 devices, 3 per connection: 3 connections, the last with one device
        assert sorted(transport._queues) == ["svc-0", "svc-1", "svc-2"]
        async with transport.connect("pub") as pub:
            for device in topics_by_device:
                for topic in device:
                    await pub.publish(topic, topic.encode())
            await pub.publish("ldp/r/dev/zz/up/a", b"not subscribed")
        received = []
        async for delivery in inbound:
            received.append(delivery.topic)
            if len(received) == 14:
                break
        assert sorted(received) == sorted(t for device in topics_by_device for t in device)
    assert sorted(transport._queues) == []  # every connection closed with the block


async def test_per_connection_must_be_positive():
    with pytest.raises(ValueError, match="per_connection"):
        async with fan_in(MemoryTransport(), "svc", [["t"]], per_connection=0):
            pass


async def test_a_burst_keeps_each_connections_order_and_a_waiting_consumer_wakes():
    """Deliveries that pile up while the consumer is away come out in each connection's
    order; a consumer waiting on an empty stream is woken by the next one."""
    transport = MemoryTransport()
    topics_by_device = [[f"ldp/r/dev/d{i}/up/a"] for i in range(4)]
    async with (
        fan_in(transport, "svc", topics_by_device, per_connection=2) as inbound,
        transport.connect("pub") as pub,
    ):
        for n in range(50):
            for (topic,) in topics_by_device:
                await pub.publish(topic, str(n).encode())
        received: dict[str, list[int]] = {}
        async for delivery in inbound:
            received.setdefault(delivery.topic, []).append(int(delivery.payload))
            if sum(map(len, received.values())) == 200:
                break
        assert all(values == list(range(50)) for values in received.values())
        assert len(received) == 4
        consumer = asyncio.ensure_future(anext(inbound))
        await asyncio.sleep(0)  # now waiting on an empty stream
        await pub.publish(topics_by_device[3][0], b"late")
        assert (await asyncio.wait_for(consumer, 5)).payload == b"late"


async def test_pending_counts_what_is_received_and_not_yet_consumed():
    """``pending`` (the secure-sum pump holds a passed deadline while it is > 0) counts the
    deliveries in the connections' buffers and in the merged queue alike."""
    transport = MemoryTransport()
    topics_by_device = [[f"ldp/r/dev/d{i}/up/a"] for i in range(4)]
    async with fan_in(transport, "svc", topics_by_device, per_connection=2) as inbound:
        assert inbound.pending() == 0
        async with transport.connect("pub") as pub:
            for (topic,) in topics_by_device:
                await pub.publish(topic, b"x")
        assert inbound.pending() == 4  # whether or not a puller has moved them yet
        for _ in range(10):
            await asyncio.sleep(0)  # the pullers move them to the merged queue
        assert inbound.pending() == 4
        await anext(inbound)
        assert inbound.pending() == 3
