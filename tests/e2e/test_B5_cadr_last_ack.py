"""The single CADR collector acknowledges the last release before it leaves (helper B5).

The same race as ``tests/unit/test_L_coordinator_says_closed.py`` (the partition
coordinator's lost ``stream closed``), in ``collector.cadr_fleet``: the reader
(``_CadrRun.consume``) hands the last release to the DSR intake, which queues its ``Ack``,
and publishes it; while that publish is in progress the DSR stage's deadline passes and
the timer path answers "gathered" (the intake is complete, ``DsrStage.handle_timer``), the
main task's wait ends, and leaving ``background(consume)`` cancelled the reader — the last
device never heard its ``Ack`` (it re-sends its release to nobody until its shard's
timeout). Here the collector's publishes to the late device's inbox wait ``RTT`` virtual
seconds before they reach the broker (a busy broker), and the late device's release
arrives ``1`` s before the deadline, which makes that order certain on virtual time.

Without the fix (a publish lock shared by the reader, and ``_CadrRun.flush`` under it
after the wait) the late device is never acknowledged and ``run_cadr_fleet`` raises
``TimeoutError`` (its shard never ends: checked, 2026-12-07).
"""

from __future__ import annotations

import asyncio
import contextlib

from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol import codec, topics
from ldpfleet.scenarios.cadr_run import device_names, run_cadr_fleet

from tests.virtual_time import VirtualTimeLoop

GRAPH = generate("erdos_renyi", 30, seed=4, p=0.2)
NAMES = device_names(GRAPH)
LATE = NAMES[11]  # the device whose release arrives just before the DSR deadline
TIMEOUT = 40.0  # virtual seconds: the DSR stage's deadline after θ
RTT = 3.0  # virtual seconds a collector's publish to LATE takes before it reaches the broker
RUN = "b5-last-ack"


class _Watched(MemoryTransport):
    """The memory broker: LATE's first release is delayed to ``TIMEOUT - 1`` after θ, its
    re-sends come later still; the collector's publishes to LATE's inbox are slow; what
    reached LATE's inbox from the collector is recorded (``acked``)."""

    def __init__(self) -> None:
        super().__init__(delay=self._delay)
        self.theta_at: float | None = None
        self.acked: list[float] = []

    def _delay(self, topic: str, payload: bytes, client: str) -> float:
        now = asyncio.get_running_loop().time()
        if topic == topics.ctl(RUN, "cadr_theta") and self.theta_at is None:
            self.theta_at = now
        if topic == topics.up(RUN, LATE, "dsr"):
            assert self.theta_at is not None
            return max(self.theta_at + TIMEOUT - 1.0 - now, 0.0) + 10.0 * (now > self.theta_at)
        to_late = topic == topics.inbox(RUN, LATE, topics.COLLECTOR_ID)
        if to_late and codec.decode(payload).type_name() == "ack":
            self.acked.append(now)
        return 0.0

    @contextlib.asynccontextmanager
    async def connect(self, client_id: str, **options):
        async with super().connect(client_id, **options) as conn:
            yield _SlowToLate(conn) if client_id == f"{RUN}-collector-cadr" else conn


class _SlowToLate:
    def __init__(self, conn) -> None:
        self._conn = conn

    def __getattr__(self, name):
        return getattr(self._conn, name)

    async def publish(self, topic: str, payload: bytes, **options) -> None:
        if topic == topics.inbox(RUN, LATE, topics.COLLECTOR_ID):
            await asyncio.sleep(RTT)  # the broker takes its time
        await self._conn.publish(topic, payload, **options)

    async def publish_many(self, items, qos: int = 1) -> None:
        items = list(items)
        if any(topic == topics.inbox(RUN, LATE, topics.COLLECTOR_ID) for topic, _ in items):
            await asyncio.sleep(RTT)
        await self._conn.publish_many(items, qos)


def test_the_last_release_is_acknowledged_before_the_collector_leaves():
    transport = _Watched()

    async def session() -> tuple[dict, float]:
        result = await run_cadr_fleet(
            GRAPH, broker=transport, method="clip", theta=5, stage_timeout=TIMEOUT, run=RUN
        )
        return result, asyncio.get_running_loop().time()

    result, ended = VirtualTimeLoop.run(session())
    assert transport.theta_at is not None
    assert sorted(result["released"]) == sorted(NAMES)
    # the deadline passed while the Ack was on its way (the order this test makes certain)
    assert result["stage_seconds"]["dsr"] >= TIMEOUT
    # LATE heard its Ack, once: TIMEOUT - 1 + RTT after θ
    assert len(transport.acked) == 1
    assert abs(transport.acked[0] - (transport.theta_at + TIMEOUT - 1.0 + RTT)) < 0.5
    # and the run did not wait for LATE's shard to time out
    assert ended - transport.theta_at < TIMEOUT + 2 * RTT
