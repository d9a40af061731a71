"""The partition coordinator says ``stream closed`` before it returns, whatever wakes it.

Found by the clean-clone CI (2026-12-07): in ``tests/e2e/test_partitions.py`` the P = 4
run's traces lacked the coordinator's ``stage stream closed`` (the one row the comparison
named). ``StreamCoordinator`` is done as soon as it takes the last worker's ``closed``
(inside ``receive``), while the reader is still publishing the outbox that holds the
close; a wake left by the previous status ended the main task's wait during that publish,
and leaving ``coordinate_stream`` cancelled the reader. Here the outbox's publish takes
0.1 virtual seconds (a busy broker), which makes that order certain.
"""

from __future__ import annotations

import asyncio

from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector import partition as partition_module
from ldpfleet.collector.partition import coordinate_stream
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.partition import PartitionStatus, status_topic

from tests.virtual_time import VirtualTimeLoop

RUN = "lclosed"


def _status(partition: int, state: str) -> bytes:
    return codec.encode(
        PartitionStatus(run=RUN, sender=topics.COLLECTOR_ID, partition=partition,
                        partitions=2, state=state, persisted=4, expected=4, joined=2,
                        devices=2, complete=state == "closed",
                        detail="every device delivered every report" if state == "closed" else "")
    )  # fmt: skip


def test_stream_closed_is_published_before_the_coordinator_returns(monkeypatch):
    real = partition_module.publish_outbound

    async def slow_publish(conn, machine):
        await asyncio.sleep(0.1)  # a broker that takes its time
        return await real(conn, machine)

    monkeypatch.setattr(partition_module, "publish_outbound", slow_publish)
    transport = MemoryTransport()

    async def session() -> list[tuple[str, str]]:
        said: list[tuple[str, str]] = []
        started = asyncio.Event()

        async def listen() -> None:
            async with transport.connect(f"{RUN}-listener") as conn:
                await conn.subscribe(topics.ctl(RUN, "stage"))
                started.set()
                async for delivery in conn.messages():
                    stage = codec.decode(delivery.payload)
                    said.append((stage.stage, stage.state))

        async def workers() -> None:
            async with transport.connect(f"{RUN}-workers") as conn:
                await conn.publish_many((status_topic(RUN), _status(p, "ready")) for p in (0, 1))
                await asyncio.sleep(1.0)
                await conn.publish_many((status_topic(RUN), _status(p, "closed")) for p in (0, 1))
                await asyncio.Event().wait()

        listener = asyncio.create_task(listen())
        await started.wait()
        worker_task = asyncio.create_task(workers())
        try:
            async with asyncio.timeout(60):
                await coordinate_stream(transport, RUN, 2, workers_timeout=5.0)
            await asyncio.sleep(1.0)  # deliveries of what was published
        finally:
            worker_task.cancel()
            listener.cancel()
        return said

    assert VirtualTimeLoop.run(session()) == [("stream", "open"), ("stream", "closed")]
