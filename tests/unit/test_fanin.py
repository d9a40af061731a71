"""``broker.fanin.fan_in``: devices' topics spread over connections, merged into one stream."""

from __future__ import annotations

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
