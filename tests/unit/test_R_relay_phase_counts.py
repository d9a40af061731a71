"""The relay counts its refusals by phase as well as by reason (helper R): the phase it was
running when the refused message came (``NO_PHASE`` outside any), in the machine
(``PeerRelay.rejections_by_phase``), the pump's ``RelayOutcome`` and its closing log line.
The counts are the message layer's own: the collector's ``PhaseReport`` is the same message,
byte for byte, with or without the refusals (``protocol.peer_relay``, "Trust"). The machine
tests drive ``PeerRelay`` directly; the pump test runs ``run_peer_relay`` on the in-memory
transport on virtual time."""

from __future__ import annotations

import asyncio
import logging

import pytest
from ldpfleet.broker.relay import RelayOutcome, run_peer_relay
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.messages import Stage
from ldpfleet.protocol.peer_relay import (
    NO_PHASE,
    PeerBatch,
    PeerItem,
    PeerRelay,
    PhaseReport,
    RelayPhase,
)

from tests.virtual_time import VirtualTimeLoop

RUN = "rp"
DEVICES = ("a", "b", "c")


def batch(sender, phase, items=(), *, done=True):
    message = PeerBatch(run=RUN, sender=sender, phase=phase, round=0, step=0,
                        items=[PeerItem(*item) for item in items], done=done)  # fmt: skip
    return topics.parse(topics.up(RUN, sender, "peer_batch")), message


def _two_phases(bad: bool, outside: int = 0) -> tuple[PeerRelay, list[bytes]]:
    """One ndoe round, then one lpea round, every device quiet and done; ``bad``: one
    batch refused in each phase (an item addressed to its own sender); ``outside``: that
    many refused batches between the phases. Returns the relay and its phase reports."""
    relay = PeerRelay(RUN, DEVICES)
    reports = []
    for phase in ("ndoe", "lpea"):
        relay.start_phase(phase, 0.0)
        if bad:
            relay.receive(*batch("a", phase, [("a", "code", 1)]), 0.1)
        for device in DEVICES:
            relay.receive(*batch(device, phase), 0.1)
        out = relay.pop_outbound()
        reports += [codec.encode(o.message) for o in out if isinstance(o.message, PhaseReport)]
        assert relay.phase is None  # the phase ended
        for _ in range(outside if phase == "ndoe" else 0):
            relay.receive(*batch("b", "ndoe"), 0.2)
    return relay, reports


def test_a_bad_batch_in_each_phase_is_counted_under_that_phase():
    relay, _ = _two_phases(bad=True)
    assert relay.rejected == 2
    assert dict(relay.rejections_by_reason) == {"invalid_field": 2}
    assert dict(relay.rejections_by_phase) == {"ndoe": 1, "lpea": 1}


def test_a_refusal_outside_any_phase_is_counted_under_no_phase():
    relay, _ = _two_phases(bad=True, outside=2)
    assert dict(relay.rejections_by_phase) == {"ndoe": 1, NO_PHASE: 2, "lpea": 1}
    assert sum(relay.rejections_by_phase.values()) == relay.rejected == 4
    with pytest.raises(ParameterError):  # no phase name can be it
        topics.check_ident(NO_PHASE, "phase")


def test_the_collectors_phase_reports_are_byte_identical_with_or_without_refusals():
    clean_relay, clean = _two_phases(bad=False)
    attacked_relay, attacked = _two_phases(bad=True, outside=1)
    assert len(clean) == 2 and attacked == clean
    assert clean_relay.rejected == 0 and dict(clean_relay.rejections_by_phase) == {}
    assert attacked_relay.rejected == 3


async def _pump_with_refusals() -> RelayOutcome:
    """``run_peer_relay``: a hostile control message outside any phase, an ndoe phase with
    one bad batch, then the collector's close."""
    broker = MemoryTransport()
    ready = asyncio.Event()
    collector = topics.COLLECTOR_ID
    async with broker.connect(f"{RUN}-ctl") as ctl:
        task = asyncio.create_task(run_peer_relay(broker, RUN, DEVICES, ready=ready))
        await ready.wait()
        hostile = RelayPhase(run=RUN, sender="b", phase="ndoe")
        await ctl.publish(topics.ctl(RUN, "relay_phase"), codec.encode(hostile))
        start = RelayPhase(run=RUN, sender=collector, phase="ndoe")
        await ctl.publish(topics.ctl(RUN, "relay_phase"), codec.encode(start))
        await asyncio.sleep(1.0)  # virtual: the phase runs
        topic, message = batch("a", "ndoe", [("a", "code", 1)])
        await ctl.publish(topic.text, codec.encode(message))
        for device in DEVICES:
            topic, message = batch(device, "ndoe")
            await ctl.publish(topic.text, codec.encode(message))
        await asyncio.sleep(1.0)
        close = Stage(run=RUN, sender=collector, stage="run", state="closed")
        await ctl.publish(topics.ctl(RUN, "stage"), codec.encode(close))
        return await asyncio.wait_for(task, 10.0)


def test_the_pump_returns_and_logs_the_counts_by_phase(caplog):
    with caplog.at_level(logging.WARNING, logger="ldpfleet.broker.relay"):
        outcome = VirtualTimeLoop.run(_pump_with_refusals())
    assert [p.phase for p in outcome.phases] == ["ndoe"]
    assert outcome.rejected == 2
    assert outcome.rejections_by_reason == {"invalid_field": 1, "wrong_sender": 1}
    assert outcome.rejections_by_phase == {NO_PHASE: 1, "ndoe": 1}
    (line,) = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert "2 message(s)" in line and f"by phase: {NO_PHASE}: 1, ndoe: 1" in line


def test_a_refusal_while_a_phase_is_held_to_its_deadline_counts_under_that_phase():
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase("ndoe", 0.0, deadline=10.0)
    for device in DEVICES:
        relay.receive(*batch(device, "ndoe"), 0.1)  # the work ends; held until 10.0
    relay.receive(*batch("a", "ndoe"), 1.0)  # no device is expected any more
    relay.handle_timer(10.0)  # released: the phase ends
    relay.receive(*batch("a", "ndoe"), 11.0)
    assert dict(relay.rejections_by_phase) == {"ndoe": 1, NO_PHASE: 1}
