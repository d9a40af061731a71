"""The durations a CADR-LDP run reports are on the loop's clock, the one its deadlines
read (issue 20, brief T item 4): ``collector.secure_sum``'s stage seconds, the θ search's
query seconds and ``CadrOutcome.stage_seconds``. They were ``time.perf_counter()`` while
the deadlines used ``loop.time()``, so a run on virtual time reported the machine's real
durations beside virtual deadlines. Here, on ``tests/virtual_time.py``, a reply delayed by
30 virtual seconds shows as 30 s (the real run takes a fraction of a second: the old
code reported that)."""

from __future__ import annotations

import asyncio
import contextlib

import numpy as np
import pytest
from ldpfleet.app.bench_secagg import bench_secagg
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.cadr_fleet import CadrFailed
from ldpfleet.collector.secure_sum import secure_sum
from ldpfleet.devices.graphs import generate
from ldpfleet.devices.secagg_agent import SecAggAgent
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.scenarios.cadr_run import run_cadr_fleet

from tests.virtual_time import VirtualTimeLoop

DELAY = 30.0  # virtual seconds; far above any real duration of these small runs
SLOW_DEVICES = [f"d{i:02d}" for i in range(20)]


def test_a_secure_sums_stage_seconds_are_the_deadlines_seconds():
    """One device drops before advertising, silently: the advertise stage lasts exactly
    its deadline, ``stage_timeout`` after the last reply (all at virtual time 0)."""
    result = VirtualTimeLoop.run(
        bench_secagg(
            12,
            5,
            neighbors=7,
            dropout=1 / 12,
            dropout_stage="before_keys",
            broker="memory",
            stage_timeout=DELAY,
            silent_dropouts=True,
            seed=3,
        )
    )
    assert result["aborted"] is None and result["dropped_devices"] == 1
    stages = result["seconds_per_stage"]
    assert stages["advertise"] == pytest.approx(DELAY, abs=1e-3)
    # nothing else waits on a timer: the other stages take no virtual time
    assert all(stages[s] == pytest.approx(0.0, abs=1e-3) for s in stages if s != "advertise")


def test_a_cadr_runs_theta_stage_reports_virtual_seconds():
    """n0001's ``SaAdvertise`` reaches the collector 30 virtual seconds late: the θ
    search's secure sum, its advertise stage and the run's θ stage each show 30 s; the
    later stages wait on no timer and show ~0 s."""
    graph = generate("barabasi_albert", 40, seed=5, m=3)

    def late_advertise(topic: str, payload: bytes, client: str) -> float:
        return DELAY if topic.endswith("/n0001/up/sa_advertise") else 0.0

    result = VirtualTimeLoop.run(
        run_cadr_fleet(
            graph, broker=MemoryTransport(delay=late_advertise), theta="auto-dev", seed=3
        )
    )
    (query,) = result["theta_queries"]
    assert query["survivors"] == graph.n  # late, not dropped: the stage waited for it
    assert query["stage_seconds"]["advertise"] == pytest.approx(DELAY, abs=1e-3)
    assert query["seconds"] == pytest.approx(DELAY, abs=1e-3)
    # the timeline: the requests left at once, the replies came from 0 to 30 s
    advertise = query["timeline"]["advertise"]
    assert advertise["requests_out"] == pytest.approx(0.0, abs=1e-3)
    assert advertise["deliveries"] == graph.n and advertise["first"] == pytest.approx(0.0)
    assert advertise["last"] == pytest.approx(DELAY, abs=1e-3)
    stages = result["stage_seconds"]
    assert stages["theta"] == pytest.approx(DELAY, abs=1e-3)
    # NDOE, LPEA and DSR: their deadlines never pass, so no virtual time goes by
    assert stages["ndoe"] + stages["lpea"] + stages["dsr"] < 1.0


def test_an_aborted_theta_search_says_when_the_requests_left_and_the_replies_came():
    """Every ``SaMasked`` is lost: the masked stage closes at its deadline with none, and
    ``CadrFailed`` says so with the stages' timeline (sent at once, no delivery), which
    tells a collector slow to send from devices slow (or unable) to answer."""
    graph = generate("barabasi_albert", 40, seed=5, m=3)

    def lose_masked(topic: str, payload: bytes, client: str) -> bool:
        return topic.endswith("/up/sa_masked")

    with pytest.raises(CadrFailed) as failed:
        VirtualTimeLoop.run(
            run_cadr_fleet(graph, broker=MemoryTransport(drop=lose_masked), theta="auto-dev")
        )
    reason = str(failed.value)
    assert "masked stage: only 0 of 40 devices" in reason, reason
    assert "advertise: requests out 0, 40 deliveries from 0 to 0" in reason, reason
    assert "masked: requests out 0, 0 deliveries)" in reason, reason


class _SlowCollectorTransport(MemoryTransport):
    """The memory broker, but the secure-sum collector's own connection waits ``rtt``
    virtual seconds for its acknowledgements, like QoS 1 over a busy broker: once per
    ``publish``, once per ``publish_many`` (acknowledgements awaited together)."""

    def __init__(self, collector_id: str, rtt: float) -> None:
        super().__init__()
        self.collector_id, self.rtt = collector_id, rtt

    @contextlib.asynccontextmanager
    async def connect(self, client_id: str, **options):
        async with super().connect(client_id, **options) as conn:
            if client_id == self.collector_id:
                conn = _Acknowledged(conn, self.rtt)
            yield conn


class _Acknowledged:
    def __init__(self, conn, rtt: float) -> None:
        self._conn, self._rtt = conn, rtt

    def __getattr__(self, name):
        return getattr(self._conn, name)

    async def publish(self, topic: str, payload: bytes, **options) -> None:
        await self._conn.publish(topic, payload, **options)
        await asyncio.sleep(self._rtt)

    async def publish_many(self, items, qos: int = 1) -> None:
        await self._conn.publish_many(items, qos)
        await asyncio.sleep(self._rtt)


def test_a_stages_requests_leave_in_one_round_trip():
    """The collector's requests of a stage (one per device) go out pipelined: one
    acknowledgement wait per stage, not one per device, during which the pump reads
    nothing (the old flush: ``requests_out`` = 20 devices x 1 s here)."""
    devices = [f"d{i:02d}" for i in range(20)]
    rtt = 1.0

    async def session():
        transport = _SlowCollectorTransport("r1-collector-sa-s0", rtt)
        rng = np.random.default_rng(4)
        inputs = {d: rng.uniform(-1, 1, 3) for d in devices}
        agents = [SecAggAgent(transport, SecAggClient("r1", "s0", d, inputs[d])) for d in devices]
        tasks = [asyncio.create_task(agent.run()) for agent in agents]
        await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
        try:
            fp = FixedPoint(-1.0, 1.0, 2.0**16)
            result = await secure_sum(transport, "r1", "s0", devices, 3, fp, stage_timeout=5.0)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return result, sum(inputs.values())

    result, expected = VirtualTimeLoop.run(session())
    assert result.aborted is None and len(result.survivors) == len(devices)
    assert np.allclose(result.total, expected, atol=1e-3)
    for stage in ("advertise", "share", "masked", "unmask"):
        assert result.timeline[stage]["requests_out"] == pytest.approx(rtt), stage
    assert result.seconds == pytest.approx(4 * rtt)


def test_replies_that_arrive_while_the_collector_sends_are_not_judged_late():
    """Liveness, not speed: the collector's connection takes 1 s to get its requests
    acknowledged, longer than the 0.5 s stage timeout; the devices answer at once, their
    replies wait in the collector's buffer while its pump is still sending, and the passed
    deadline is held until they are fed (``drive_timers(inputs_queued=…)``): every device
    survives every stage. Without the hold the advertise stage closed at 0.5 s with
    nothing read ("only 0 of 20 devices advertised keys")."""
    result = VirtualTimeLoop.run(_slow_collector_session(dropout=None))
    assert result.aborted is None and result.dropped == ()
    assert len(result.survivors) == len(SLOW_DEVICES)
    assert np.allclose(result.total, [len(SLOW_DEVICES)] * 2, atol=1e-3)
    for stage in ("advertise", "share", "masked", "unmask"):
        # every stage outlived its 0.5 s deadline by the collector's own sending
        assert result.stage_seconds[stage] >= 1.0, stage


def test_a_device_that_really_dropped_is_still_excluded_by_a_held_deadline():
    """The same slow collector; d07 sends its shares and then nothing (no last will):
    the masked stage closes at its deadline once the queued replies are fed, without
    d07, whose input is left out of the sum."""
    result = VirtualTimeLoop.run(_slow_collector_session(dropout="d07"))
    assert result.aborted is None and result.dropped == ("d07",)
    assert "d07" not in result.survivors and len(result.survivors) == len(SLOW_DEVICES) - 1
    assert np.allclose(result.total, [len(SLOW_DEVICES) - 1] * 2, atol=1e-3)


async def _slow_collector_session(dropout: str | None):
    """20 devices with input (1, 1), a collector whose acknowledgement waits take 1 s,
    stage timeout 0.5 s; ``dropout`` drops silently after its shares."""
    devices = SLOW_DEVICES
    transport = _SlowCollectorTransport("r1-collector-sa-s0", 1.0)
    agents = [
        SecAggAgent(
            transport,
            SecAggClient("r1", "s0", d, np.ones(2)),
            dropout="after_shares" if d == dropout else None,
        )
        for d in devices
    ]
    tasks = [asyncio.create_task(agent.run()) for agent in agents]
    await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
    try:
        fp = FixedPoint(-1.0, 1.0, 2.0**16)
        return await secure_sum(transport, "r1", "s0", devices, 2, fp, stage_timeout=0.5)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
