"""The collector service leaves its stream stage with nothing unsent (helper B5).

``CollectorService._pump`` leaves ``background(self._consume(conn))`` when the stage
closed; the reader may then be inside a publish, and cancelling it cancels the session's
publish in flight. ``broker.session.Session`` keeps such a message queued (it leaves the
queue only once acknowledged) and sends it with the session's next publish — but when the
stage's own last word (``stage stream closed``) is already out, nothing else may be
published on that session: a run with ``[secure_sum]`` (``final_stage = False``, no
``run closed`` from the service), without GC-DP and not a partition worker reaches
``_stage_results`` and closes the session with the message still queued.

Played here on virtual time: the stage's deadline closes it (the timer task publishes
``stream closed``, which takes ``RTT`` before it reaches the broker), and a bad message
lands in the loop turn after that publish completed — the reader takes it before the
main task runs and starts publishing its ``Reject`` notice; the main task, woken by the
timer task, cancels it. Without the final ``conn.flush()`` of ``_pump`` the notice is
never published (checked, 2026-12-07).
"""

from __future__ import annotations

import asyncio
import contextlib

from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.service import CollectorService
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.messages import Reject, Stage
from ldpfleet.protocol.stream import StreamConfig

from tests.virtual_time import VirtualTimeLoop

RUN = "b5unsent"
RTT = 1.0  # virtual seconds a publish of the collector takes before it reaches the broker
DEADLINE = 10.0  # the stream stage's deadline (virtual seconds)


class _Broker(MemoryTransport):
    """The memory broker; the collector's publishes are slow, and when its ``stream
    closed`` has reached the broker a bad message is published in the next loop turn."""

    @contextlib.asynccontextmanager
    async def connect(self, client_id: str, **options):
        async with super().connect(client_id, **options) as conn:
            yield _Slow(self, conn) if client_id == f"{RUN}-collector" else conn

    def bad_message(self) -> None:
        self._route(topics.up(RUN, "d0001", "hello"), b"\xff not a message")


class _Slow:
    def __init__(self, broker: _Broker, conn) -> None:
        self._broker = broker
        self._conn = conn

    def __getattr__(self, name):
        return getattr(self._conn, name)

    async def publish(self, topic: str, payload: bytes, **options) -> None:
        await self.publish_many([(topic, payload)])

    async def publish_many(self, items, qos: int = 1) -> None:
        items = list(items)
        await asyncio.sleep(RTT)  # the broker takes its time
        await self._conn.publish_many(items, qos)
        if any(topic == topics.ctl(RUN, "stage") and b'"closed"' in p for topic, p in items):
            asyncio.get_running_loop().call_soon(self._broker.bad_message)


def test_a_notice_queued_as_the_stage_closes_is_published_before_the_service_ends(tmp_path):
    transport = _Broker()
    config = StreamConfig(RUN, "sw", 2.0, 2, 4, 2, 0.0, 1.0)
    service = CollectorService(transport, config, ["d0001"], tmp_path / "c.sqlite",
                               stage_timeout=DEADLINE, idle_timeout=600.0)  # fmt: skip
    service.final_stage = False  # a [secure_sum] run: the secure-sum stage closes the run

    async def session() -> tuple[dict, list[object]]:
        heard: list[object] = []
        async with transport.connect("listener") as conn:
            await conn.subscribe(
                topics.ctl(RUN, "stage"), topics.svc(RUN, topics.COLLECTOR_ID, "reject")
            )

            async def listen() -> None:
                async for delivery in conn.messages():
                    heard.append(codec.decode(delivery.payload))

            listener = asyncio.create_task(listen())
            results = await service.run()
            await asyncio.sleep(5 * RTT)  # deliveries of what was published
            listener.cancel()
        return results, heard

    results, heard = VirtualTimeLoop.run(session())
    assert results["stage_state"] == "closed"
    assert results["reports_rejected"] == 1
    assert [m.state for m in heard if isinstance(m, Stage)] == ["open", "closed"]
    notices = [m for m in heard if isinstance(m, Reject)]
    assert len({n.seq for n in notices}) == 1, heard  # the bad message's notice went out
