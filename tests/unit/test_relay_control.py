"""The relay's control input (``ctl/relay_phase``, ``ctl/stage``) is judged by its machine
(``protocol.peer_relay.PeerRelay``), not by its pump (``broker.relay``): only this run's
collector steers the relay. A control message from another sender or another run was
dropped by the pump without a count or a trace; now the machine refuses it — counted
(``rejected``, ``rejections_by_reason``), a ``Reject`` on ``svc/relay/reject`` (the trace
recorder keeps it) — and the pump's outcome (``RelayOutcome``) and its closing log line
carry the count. The machine tests drive ``PeerRelay`` directly; the pump test runs
``run_peer_relay`` on the in-memory transport on virtual time."""

from __future__ import annotations

import asyncio
import logging

from ldpfleet.broker.relay import RelayOutcome, run_peer_relay
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.events import Rejected
from ldpfleet.protocol.messages import Reject, Stage
from ldpfleet.protocol.peer_relay import (
    RELAY_ID,
    CollectorClosed,
    PeerRelay,
    PeerStep,
    PhaseRefused,
    RelayPhase,
)

from tests.virtual_time import VirtualTimeLoop

RUN = "rc"
DEVICES = ["n0", "n1", "n2"]
PHASE_TOPIC = topics.parse(topics.ctl(RUN, "relay_phase"))
STAGE_TOPIC = topics.parse(topics.ctl(RUN, "stage"))
REJECT_TOPIC = topics.svc(RUN, RELAY_ID, "reject")


def relay_phase(**fields) -> RelayPhase:
    return RelayPhase(**{"run": RUN, "sender": topics.COLLECTOR_ID, "phase": "ndoe"} | fields)


def closed(**fields) -> Stage:
    return Stage(**{"run": RUN, "sender": topics.COLLECTOR_ID, "stage": "run"} | fields,
                 state="closed")  # fmt: skip


def test_the_collectors_phase_request_starts_the_phase():
    relay = PeerRelay(RUN, DEVICES)
    relay.receive(PHASE_TOPIC, relay_phase(), 0.0)
    assert relay.phase == "ndoe" and relay.rejected == 0
    (out,) = relay.pop_outbound()
    assert isinstance(out.message, PeerStep) and out.topic == topics.ctl(RUN, "peer_step")
    assert relay.pop_events() == []


def test_a_phase_request_from_another_sender_or_run_is_refused_counted_and_noticed():
    relay = PeerRelay(RUN, DEVICES)
    relay.receive(PHASE_TOPIC, relay_phase(sender="n1"), 0.0)
    relay.receive(PHASE_TOPIC, relay_phase(run="other"), 0.0)
    assert relay.phase is None  # nothing started
    assert relay.rejected == 2
    assert relay.rejections_by_reason == {"wrong_sender": 1, "wrong_run": 1}
    assert relay.rejections_by_field == {"sender": 1, "run": 1}
    notices = [o.message for o in relay.pop_outbound()]
    assert [o.field for o in notices] == ["sender", "run"]
    assert all(isinstance(o, Reject) and o.sender == RELAY_ID for o in notices)
    assert all(isinstance(e, Rejected) for e in relay.pop_events())
    # the collector's own request still starts the phase
    relay.receive(PHASE_TOPIC, relay_phase(), 0.0)
    assert relay.phase == "ndoe"


def test_a_close_from_another_sender_or_run_is_refused_and_does_not_end_the_relay():
    relay = PeerRelay(RUN, DEVICES)
    relay.receive(STAGE_TOPIC, closed(sender="n2"), 0.0)
    relay.receive(STAGE_TOPIC, closed(run="other"), 0.0)
    events = relay.pop_events()
    assert not any(isinstance(e, CollectorClosed) for e in events)
    assert relay.rejections_by_reason == {"wrong_sender": 1, "wrong_run": 1}
    relay.receive(STAGE_TOPIC, closed(), 0.0)
    assert relay.pop_events() == [CollectorClosed("run")]
    assert relay.rejected == 2


def test_the_collectors_other_stage_messages_are_neither_refused_nor_acted_on():
    """An open stage (e.g. the secure sum's) on ``ctl/stage`` is the collector's ordinary
    traffic: no count, no event, no output (as the pump did)."""
    relay = PeerRelay(RUN, DEVICES)
    relay.receive(STAGE_TOPIC, Stage(run=RUN, sender="collector", stage="x", state="open"), 0.0)
    assert relay.rejected == 0 and relay.pop_events() == [] and relay.pop_outbound() == []


def test_a_second_phase_request_while_one_runs_is_reported_not_counted():
    """The collector asking again while a phase runs is not a peer's bad input: the
    relay keeps its phase and reports ``PhaseRefused`` (the pump logs it, as before)."""
    relay = PeerRelay(RUN, DEVICES)
    relay.receive(PHASE_TOPIC, relay_phase(), 0.0)
    relay.pop_outbound()
    relay.receive(PHASE_TOPIC, relay_phase(phase="lpea"), 1.0)
    (event,) = relay.pop_events()
    assert isinstance(event, PhaseRefused) and event.phase == "lpea"
    assert "still running" in event.reason
    assert relay.phase == "ndoe" and relay.rejected == 0 and relay.pop_outbound() == []


async def _pump_with_hostile_control() -> tuple[RelayOutcome, list[Reject]]:
    """``run_peer_relay`` gets two hostile control messages, then the collector's close."""
    broker = MemoryTransport()
    ready = asyncio.Event()
    async with broker.connect(f"{RUN}-watch") as watch, broker.connect(f"{RUN}-ctl") as ctl:
        await watch.subscribe(REJECT_TOPIC)
        task = asyncio.create_task(run_peer_relay(broker, RUN, DEVICES, ready=ready))
        await ready.wait()
        await ctl.publish(topics.ctl(RUN, "relay_phase"), codec.encode(relay_phase(sender="n1")))
        await ctl.publish(topics.ctl(RUN, "stage"), codec.encode(closed(run="other")))
        await asyncio.sleep(1.0)  # virtual: the relay has handled both and is still running
        assert not task.done()
        await ctl.publish(topics.ctl(RUN, "stage"), codec.encode(closed()))
        outcome = await asyncio.wait_for(task, 10.0)
        notices = []
        async for delivery in watch.messages():
            notices.append(codec.decode(delivery.payload))
            if len(notices) == 2:
                break
    return outcome, notices


def test_the_pump_counts_hostile_control_messages_in_its_outcome_and_log(caplog):
    with caplog.at_level(logging.WARNING, logger="ldpfleet.broker.relay"):
        outcome, notices = VirtualTimeLoop.run(_pump_with_hostile_control())
    assert outcome.phases == []
    assert outcome.rejected == 2
    assert outcome.rejections_by_reason == {"wrong_sender": 1, "wrong_run": 1}
    assert [n.field for n in notices] == ["sender", "run"]
    (line,) = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert "2 message(s)" in line and "wrong_sender: 1" in line and "wrong_run: 1" in line
