"""No CADR collector wait judges a reply that already arrived as missing (helper D).

The single collector's DSR stage (``protocol.cadr_dsr_stage.DsrStage``) and relay phase
wait (``protocol.cadr_relay_wait.RelayPhaseWait``) hold a passed deadline while
deliveries sit in the collector's inbound buffer (``broker.pump.InputHold`` handed to
``drive_timers``), as the secure sum's stages do: a release or phase report that reached
the collector in time is fed before the machine judges it. A starved collector (CI on a
shared host) is played on virtual time (tests/virtual_time.py) by a collector connection
whose every publish waits ``RTT`` virtual seconds for its acknowledgement, as QoS 1 over a
busy broker: while the pump publishes it reads nothing, and what arrives meanwhile queues.

Planted bug checked: ``_answer`` without the hold (``inputs_queued``/``inputs_drained``
not passed) made both hold tests fail with the deadline's sentences ("8 release(s)
missing after 20 s", "relay: no report of phase ndoe"); the pin passes with and without
it (nothing is queued at its deadline). The hold is bounded (``max_hold``: one stage
timeout past the deadline; tests/unit/test_D_held_waits.py)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.cadr_fleet import CadrFailed
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol import topics
from ldpfleet.protocol.peer_relay import RELAY_ID
from ldpfleet.scenarios.cadr_run import device_names, run_cadr_fleet

from tests.virtual_time import VirtualTimeLoop

GRAPH = generate("erdos_renyi", 30, seed=4, p=0.2)
NAMES = device_names(GRAPH)
RUN = "d-held"
RTT = 1.0  # virtual seconds the slow collector waits for each acknowledgement


class _SlowCollector(MemoryTransport):
    """The memory broker, but the CADR collector's own connection waits ``RTT`` for the
    acknowledgement of each publish (the message is delivered at once)."""

    def __init__(self, **rules) -> None:
        super().__init__(**rules)
        self.collector_id = f"{RUN}-collector-cadr"

    @contextlib.asynccontextmanager
    async def connect(self, client_id: str, **options):
        async with super().connect(client_id, **options) as conn:
            yield _Acknowledged(conn) if client_id == self.collector_id else conn


class _Acknowledged:
    def __init__(self, conn) -> None:
        self._conn = conn

    def __getattr__(self, name):
        return getattr(self._conn, name)

    async def publish(self, topic: str, payload: bytes, **options) -> None:
        await self._conn.publish(topic, payload, **options)
        await asyncio.sleep(RTT)

    async def publish_many(self, items, qos: int = 1) -> None:
        await self._conn.publish_many(items, qos)
        await asyncio.sleep(RTT)


def test_pin_a_silent_device_still_fails_the_dsr_stage_at_its_deadline():
    """The slow collector, one device's releases lost: once the others' releases are fed
    (nothing queued), the stage fails naming only it, about ``stage_timeout`` after θ
    (the hold never keeps a wait open for a reply that did not come)."""
    silent = NAMES[7]

    def lose(topic: str, payload: bytes, client: str) -> bool:
        return topic == topics.up(RUN, silent, "dsr")

    async def session() -> str:
        with pytest.raises(CadrFailed) as failed:
            await run_cadr_fleet(
                GRAPH, broker=_SlowCollector(drop=lose), method="clip", theta=5,
                stage_timeout=60.0, run=RUN,
            )  # fmt: skip
        return str(failed.value)

    assert VirtualTimeLoop.run(session()) == f"1 release(s) missing after 60 s: ['{silent}']"


def test_releases_queued_when_the_dsr_deadline_passes_are_counted():
    """30 devices release at once when θ goes out; the collector acknowledges each release
    before it reads the next (1 s each), so when the 20 s deadline passes 8 releases that
    arrived at t = 0 still sit in its buffer. Held, they are fed and counted: every device
    is released. Without the hold: "8 release(s) missing after 20 s"."""
    result = VirtualTimeLoop.run(
        run_cadr_fleet(
            GRAPH, broker=_SlowCollector(), method="clip", theta=5, stage_timeout=20.0, run=RUN
        )
    )
    assert sorted(result["released"]) == sorted(NAMES)
    # the stage outlived its deadline by the collector's own slowness, within the bound
    assert 20.0 < result["stage_seconds"]["dsr"] < 40.0


def test_a_relay_report_queued_when_its_deadline_passes_is_counted():
    """The NDOE phase's report reaches the collector 0.5 s before the wait's deadline, while
    the collector is busy refusing three undecodable messages (each refusal's notice takes
    1 s to be acknowledged); when the deadline passes the report sits in its buffer. Held,
    it is fed: the run completes. Without the hold: "relay: no report of phase ndoe"."""
    timeout = 20.0 * 10  # phase_timeout(stage_timeout=20, peer_deadline=0)
    requested: list[float] = []

    def note_request(topic: str, payload: bytes, client: str) -> float:
        now = asyncio.get_running_loop().time()
        if topic == topics.ctl(RUN, "relay_phase") and not requested:
            requested.append(now)
        if topic == topics.svc(RUN, RELAY_ID, "phase") and len(requested) == 1:
            # the wait's deadline: the request's acknowledgement (RTT) plus the timeout
            return requested[0] + RTT + timeout - 0.5 - now
        return 0.0

    async def junk() -> None:
        while not requested:
            await asyncio.sleep(0.1)
        await asyncio.sleep(requested[0] + RTT + timeout - 0.9 - asyncio.get_running_loop().time())
        async with transport.connect("d-junk") as conn:
            for _ in range(3):
                await conn.publish(topics.up(RUN, NAMES[0], "dsr"), b"\x00 not a message")

    transport = _SlowCollector(delay=note_request)

    async def session() -> dict:
        sender = asyncio.create_task(junk())
        try:
            return await run_cadr_fleet(
                GRAPH, broker=transport, method="ll", theta=5, stage_timeout=20.0, run=RUN
            )
        finally:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)

    result = VirtualTimeLoop.run(session())
    assert sorted(result["released"]) == sorted(NAMES)
    assert result["rejected_by_collector"] == 3
    assert result["stage_seconds"]["ndoe"] > timeout  # held past its deadline
