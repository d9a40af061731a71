"""Tier 1: the one opening rule of the ``[secure_sum]`` stage (``protocol.stage_opening``),
driven directly with a fake clock, and its pump (``collector.stage_opening``) on the
in-memory broker under virtual time."""

from __future__ import annotations

import asyncio
import random

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.stage_opening import open_stage
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError
from ldpfleet.protocol.messages import Stage
from ldpfleet.protocol.readiness import DeviceReady, ready_announcement
from ldpfleet.protocol.stage_opening import (
    SECURE_SUM_STAGE,
    SessionOpens,
    StageAbandoned,
    StageOpening,
)

from tests.virtual_time import VirtualTimeLoop

RUN = "ssopen"
DEVICES = [f"d{i:04d}" for i in range(6)]


def join(opening: StageOpening, device: str, now: float, *, run: str = RUN) -> None:
    """Deliver a device's ``DeviceReady`` through the codec, as the pump does."""
    out = ready_announcement(run, device)
    opening.receive(topics.parse(out.topic), codec.decode(codec.encode(out.message)), now)


def opened(stage_timeout: float = 1.0, **options) -> StageOpening:
    opening = StageOpening(RUN, DEVICES, stage_timeout=stage_timeout, **options)
    opening.start(0.0)
    return opening


def test_start_publishes_the_stage_opening_on_ctl_stage():
    opening = opened()
    [out] = opening.pop_outbound()
    assert out.topic == topics.ctl(RUN, "stage")
    assert out.message == Stage(
        run=RUN, sender=topics.COLLECTOR_ID, stage=SECURE_SUM_STAGE, state="open"
    )
    assert opening.next_timer() == 1.0 and opening.pop_events() == []


def test_every_device_joining_in_any_order_opens_the_session_once():
    for seed in range(20):
        opening = opened()
        order = DEVICES * 2  # duplicates (QoS 1 redelivery)
        random.Random(seed).shuffle(order)
        events = []
        for device in order:
            join(opening, device, 0.5)
            events += opening.pop_events()
        assert events == [SessionOpens(tuple(DEVICES), (), None)]
        assert opening.state == "opened" and opening.next_timer() is None


def test_the_deadline_counts_the_absent_out_and_the_session_keeps_them_as_members():
    opening = opened(stage_timeout=1.0)
    for device in DEVICES[:4]:
        join(opening, device, 0.25)
    # stage_timeout after the latest join (0.25)
    assert opening.next_timer() == 1.25
    opening.handle_timer(1.249)
    assert opening.pop_events() == []
    opening.handle_timer(1.25)
    [event] = opening.pop_events()
    assert isinstance(event, SessionOpens)
    assert event.members == tuple(DEVICES) and event.absent == tuple(DEVICES[4:])
    assert event.sentence == (
        f"2 of 6 devices did not join the secure_sum stage of run {RUN} "
        "within 1.25 s (d0004, d0005)"
    )
    join(opening, DEVICES[4], 1.5)  # late: changes nothing
    assert opening.pop_events() == [] and opening.state == "opened"


def test_each_join_moves_the_deadline_to_stage_timeout_after_it_up_to_patience():
    opening = opened(stage_timeout=1.0, patience=4.0)
    for now, device in zip((0.9, 1.8, 2.7, 3.6), DEVICES, strict=False):
        join(opening, device, now)
        assert opening.next_timer() == pytest.approx(min(now + 1.0, 4.0))
    join(opening, DEVICES[4], 3.95)
    assert opening.next_timer() == 4.0  # the cap: patience x stage_timeout
    opening.handle_timer(4.0)
    [event] = opening.pop_events()
    assert event.absent == (DEVICES[5],) and "within 4 s" in event.sentence


def test_nobody_joining_abandons_the_stage_with_one_sentence():
    opening = opened(stage_timeout=2.0)
    opening.handle_timer(2.0)
    [event] = opening.pop_events()
    assert isinstance(event, StageAbandoned)
    expected = f"6 of 6 devices did not join the secure_sum stage of run {RUN} within 2 s"
    assert event.sentence.startswith(expected)
    assert opening.state == "abandoned" and opening.next_timer() is None


def test_foreign_and_malformed_joins_are_refused_and_move_no_deadline():
    opening = opened(stage_timeout=1.0)
    stranger = ready_announcement(RUN, "d9999")
    opening.receive(topics.parse(stranger.topic), stranger.message, 0.5)
    join(opening, DEVICES[0], 0.5, run="other")  # another run's topic and message
    forged = DeviceReady(run=RUN, sender=DEVICES[1])  # on another device's topic
    opening.receive(topics.parse(topics.up(RUN, DEVICES[2], "ready")), forged, 0.5)
    wrong_kind = Stage(run=RUN, sender=DEVICES[3], stage="x", state="open")
    opening.receive(topics.parse(topics.up(RUN, DEVICES[3], "ready")), wrong_kind, 0.5)
    assert opening.barrier.refused == 4 and not opening.barrier.joined
    assert opening.next_timer() == 1.0


def test_misuse_is_a_typed_error():
    with pytest.raises(ParameterError) as error:
        StageOpening(RUN, DEVICES, stage_timeout=0)
    assert error.value.field == "timeout"
    with pytest.raises(ParameterError) as error:
        StageOpening(RUN, DEVICES, stage_timeout=1, patience=0.5)
    assert (error.value.field, error.value.value) == ("patience", 0.5)
    with pytest.raises(ParameterError) as error:
        StageOpening(RUN, [], stage_timeout=1)
    assert error.value.field == "expected"
    fresh = StageOpening(RUN, DEVICES, stage_timeout=1)
    with pytest.raises(LocalProtocolError):
        join(fresh, DEVICES[0], 0.0)
    fresh.start(0.0)
    with pytest.raises(LocalProtocolError):
        fresh.start(0.0)


def test_the_pump_opens_the_stage_and_decides_at_the_deadline_on_virtual_time():
    """Over the in-memory broker: a watcher hears the opening, four devices announce
    themselves after it, two never do; the decision comes at the deadline, 3 s after the
    latest join (virtual seconds: the outcome does not depend on the machine's speed)."""

    async def scenario() -> tuple:
        transport = MemoryTransport()
        opening = StageOpening(RUN, DEVICES, stage_timeout=3.0)
        loop = asyncio.get_running_loop()
        heard: list = []
        async with transport.connect("watcher") as watcher:
            await watcher.subscribe(topics.ctl(RUN, "stage"))
            listening = asyncio.Event()
            deciding = asyncio.create_task(open_stage(transport, opening, listening=listening))
            await listening.wait()
            async with asyncio.timeout(10):
                async for delivery in watcher.messages():
                    heard.append(codec.decode(delivery.payload))
                    break
            async with transport.connect("devices") as conn:
                for device in DEVICES[:4]:
                    await asyncio.sleep(0.5)
                    out = ready_announcement(RUN, device)
                    await conn.publish(out.topic, codec.encode(out.message))
            started = loop.time()
            decision = await deciding
            return heard, decision, loop.time() - started

    heard, decision, waited = VirtualTimeLoop.run(scenario())
    assert [(m.stage, m.state) for m in heard] == [(SECURE_SUM_STAGE, "open")]
    assert isinstance(decision, SessionOpens) and decision.absent == tuple(DEVICES[4:])
    assert waited == pytest.approx(3.0, abs=0.01)


SMALL = """
[scenario]
name = "opening"
seed = 3

[fleet]
devices = 4

[stream]
steps = 10
eps = 1.0
w = 2
mechanism = "sw"

[source]
kind = "synthetic"
shape = "sine"
period = [4, 6]
bounds = [0.0, 1.0]

[secure_sum]
dim = 2
stage_timeout = 5.0
"""


def test_a_stage_nobody_joins_has_no_session_and_says_so_on_both_paths():
    """``collect_secure_sum`` (what ``ldpfleet run`` and the split collector side both
    call): no device listening, the stage is abandoned at the join deadline (5 virtual
    seconds) with ``secure_sum_entry``'s keys."""
    from ldpfleet.scenarios.schema import parse_scenario
    from ldpfleet.scenarios.secure_sum_stage import collect_secure_sum

    scenario = parse_scenario(SMALL)

    async def run() -> tuple[dict, float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        entry = await collect_secure_sum(scenario, MemoryTransport(), "nobody", "sum0")
        return entry, loop.time() - started

    entry, waited = VirtualTimeLoop.run(run())
    assert waited == pytest.approx(5.0, abs=0.01)
    assert entry["aborted"].startswith(
        "4 of 4 devices did not join the secure_sum stage of run nobody within 5 s"
    )
    assert entry["survivors"] == 0 and entry["dropped_devices"] == scenario.device_ids()
    assert set(entry) >= {"dim", "graph", "devices", "seconds", "seconds_per_stage"}


def test_devices_that_crashed_for_good_run_no_agent():
    from types import SimpleNamespace

    from ldpfleet.devices.faults import Crash
    from ldpfleet.scenarios.secure_sum_stage import secure_sum_participants

    fleet = SimpleNamespace(
        agents=[SimpleNamespace(device=d) for d in DEVICES[:4]],
        crashes={
            DEVICES[1]: Crash(DEVICES[1], 3, returns=True),
            DEVICES[2]: Crash(DEVICES[2], 5, returns=False),
            DEVICES[5]: Crash(DEVICES[5], 5, returns=False),  # another shard's
        },
    )
    assert secure_sum_participants(fleet) == [DEVICES[0], DEVICES[1], DEVICES[3]]
