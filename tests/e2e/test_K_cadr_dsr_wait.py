"""The single CADR collector's DSR-stage wait, on virtual time (helper K's pin).

What the wait decides (``protocol.cadr_dsr_stage``): a device that never releases fails
the run at exactly ``stage_timeout`` after θ with the sentence naming it; a device whose
last will (``SaAbort`` on its ``up/sa_abort``) came is not awaited, so the stage completes
as soon as the others released; a will on a non-member's topic, or a second one from the
same device, changes nothing. Pinned on main before the decisions moved out of the pump
(these tests passed there and pass after). Every run: 30-node graph, θ given (no secure
sum), method ``clip`` (no relay phase), so the DSR stage opens at θ's broadcast."""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.cadr_fleet import CadrFailed
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.messages import Ack
from ldpfleet.protocol.peer_relay import RELAY_ID
from ldpfleet.protocol.secagg.messages import SaAbort
from ldpfleet.scenarios.cadr_run import device_names, run_cadr_fleet

from tests.virtual_time import VirtualTimeLoop

GRAPH = generate("erdos_renyi", 30, seed=4, p=0.2)
NAMES = device_names(GRAPH)
SILENT = NAMES[7]  # the device whose releases are lost
TIMEOUT = 40.0  # virtual seconds: far above any real duration of these runs
RUN = "k-dsr-wait"


class _Watched:
    """Drop rule and delay rule of a ``MemoryTransport``: loses ``SILENT``'s releases,
    records when θ went out, and sets ``lost`` once a release of ``SILENT`` was lost
    (``lost_seq``: its sequence number)."""

    def __init__(self) -> None:
        self.theta_at: float | None = None
        self.lost = asyncio.Event()
        self.lost_seq = 0

    def drop(self, topic: str, payload: bytes, client: str) -> bool:
        if topic == topics.up(RUN, SILENT, "dsr"):
            self.lost_seq = codec.decode(payload).seq
            self.lost.set()
            return True
        return False

    def delay(self, topic: str, payload: bytes, client: str) -> float:
        if topic == topics.ctl(RUN, "cadr_theta") and self.theta_at is None:
            self.theta_at = asyncio.get_running_loop().time()
        return 0.0


def _will(device: str, stage: str) -> bytes:
    will = SaAbort(run=RUN, sender=device, session="theta-buckets", stage=stage, reason="last will")
    return codec.encode(will)


async def _run_with_wills(watched: _Watched, wills: list[tuple[str, str, str]]) -> dict:
    """One run; once ``SILENT``'s first release is lost, publish ``wills`` (topic's device,
    sender, stage) on their ``up/sa_abort`` topics, in order, and then (with wills) an
    ``Ack`` of the lost release to ``SILENT``, so that its agent ends as a crashed one
    would (the collector never saw the release)."""
    transport = MemoryTransport(drop=watched.drop, delay=watched.delay)

    async def send_wills() -> None:
        await watched.lost.wait()
        async with transport.connect("k-will-sender") as conn:
            for device, sender, stage in wills:
                await conn.publish(topics.up(RUN, device, "sa_abort"), _will(sender, stage))
            if wills:
                ack = Ack(run=RUN, sender=topics.COLLECTOR_ID, seq=watched.lost_seq)
                await conn.publish(
                    topics.inbox(RUN, SILENT, topics.COLLECTOR_ID), codec.encode(ack)
                )

    sender = asyncio.create_task(send_wills())
    try:
        return await run_cadr_fleet(
            GRAPH, broker=transport, method="clip", theta=5, stage_timeout=TIMEOUT, run=RUN
        )
    finally:
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)


def test_a_device_that_never_releases_fails_the_run_at_exactly_the_stage_timeout():
    watched = _Watched()

    async def session() -> tuple[str, float]:
        loop = asyncio.get_running_loop()
        with pytest.raises(CadrFailed) as failed:
            await _run_with_wills(watched, [])
        return str(failed.value), loop.time()

    reason, failed_at = VirtualTimeLoop.run(session())
    assert reason == f"1 release(s) missing after {TIMEOUT:g} s: ['{SILENT}']"
    assert watched.theta_at is not None
    assert failed_at - watched.theta_at == pytest.approx(TIMEOUT, abs=1e-3)


def test_a_departed_device_is_not_awaited():
    """``SILENT``'s release is lost and its will comes: the stage ends at once (no
    virtual time passes), the release covers the 29 others, results name it dropped."""
    result = VirtualTimeLoop.run(_run_with_wills(_Watched(), [(SILENT, SILENT, "after_shares")]))
    assert result["stage_seconds"]["dsr"] < 1.0
    assert sorted(result["released"]) == [n for n in NAMES if n != SILENT]
    assert result["per_device"][SILENT]["dropped"] == "after_shares"
    assert result["dropped"]["devices"] == [SILENT]


def test_wills_from_a_non_member_or_a_second_one_change_nothing():
    """A will on a non-member's topic (the collector does not even listen there) and a
    second will of ``SILENT`` naming another stage: the first will's stage is kept, and
    nothing is counted as rejected."""
    wills = [
        ("intruder", "intruder", "before_keys"),
        (SILENT, SILENT, "after_shares"),
        (SILENT, SILENT, "during_unmask"),
    ]
    result = VirtualTimeLoop.run(_run_with_wills(_Watched(), wills))
    assert result["stage_seconds"]["dsr"] < 1.0
    assert result["per_device"][SILENT]["dropped"] == "after_shares"
    assert result["dropped"]["devices"] == [SILENT]
    assert "intruder" not in result["per_device"]
    assert result["rejected_by_collector"] == 0


def test_a_relay_that_never_reports_fails_the_run_at_exactly_its_deadline():
    """The relay's phase reports are lost: the NDOE phase's wait ends at exactly
    ``stage_timeout * 10 + peer_deadline`` after the request, with the sentence."""
    requested: list[float] = []

    def lose_reports(topic: str, payload: bytes, client: str) -> bool:
        return topic == topics.svc(RUN, RELAY_ID, "phase")

    def note_request(topic: str, payload: bytes, client: str) -> float:
        if topic == topics.ctl(RUN, "relay_phase"):
            requested.append(asyncio.get_running_loop().time())
        return 0.0

    async def session() -> tuple[str, float]:
        transport = MemoryTransport(drop=lose_reports, delay=note_request)
        with pytest.raises(CadrFailed) as failed:
            await run_cadr_fleet(
                GRAPH, broker=transport, method="ll", theta=5, stage_timeout=4.0,
                peer_deadline=3.0, run=RUN,
            )  # fmt: skip
        return str(failed.value), asyncio.get_running_loop().time()

    reason, failed_at = VirtualTimeLoop.run(session())
    assert reason == "relay: no report of phase ndoe"
    assert len(requested) == 1  # the first phase's request, once
    assert failed_at - requested[0] == pytest.approx(4.0 * 10 + 3.0, abs=1e-3)
