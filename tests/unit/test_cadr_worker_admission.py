"""A CADR partition worker's admission (``protocol.cadr_admission.CadrWorkerAdmission``),
driven directly, without asyncio: what reaches the worker before θ (the first refusal
and the first release of each member, held in arrival order), the topic kind, and its
control topics (only this run's coordinator's θ and run close) — the decisions
``collector/cadr_partition.py``'s ``_Worker`` and ``_control`` took themselves. Every
refusal is counted, emitted as ``Rejected`` and published on ``svc/collector/reject``."""

from __future__ import annotations

import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_admission import (
    CadrWorkerAdmission,
    ForIntake,
    HeldDuplicate,
    RunClosed,
    ThetaHeard,
)
from ldpfleet.protocol.cadr_messages import CadrTheta, DsrReport
from ldpfleet.protocol.events import Rejected
from ldpfleet.protocol.messages import BudgetRefused, Reject, Stage
from ldpfleet.protocol.partition import PartitionStatus
from ldpfleet.protocol.peer_relay import RELAY_ID, PhaseReport

RUN = "cw"
MEMBERS = ["n0", "n1", "n2"]
THETA_TOPIC = topics.parse(topics.ctl(RUN, "cadr_theta"))
STAGE_TOPIC = topics.parse(topics.ctl(RUN, "stage"))


def up(device: str, kind: str) -> topics.Topic:
    return topics.parse(topics.up(RUN, device, kind))


def refusal(device: str, request: str = "cadr_plan") -> BudgetRefused:
    return BudgetRefused(run=RUN, sender=device, account="node", request=request,
                         requested=0.5, remaining=0.1)  # fmt: skip


def release(device: str, value: float = 2.0, theta: int = 5) -> DsrReport:
    return DsrReport(run=RUN, sender=device, seq=1, value=value, theta=theta, eps=2.7)


def theta(value: int = 5, *, sender: str = topics.COLLECTOR_ID, run: str = RUN) -> CadrTheta:
    return CadrTheta(run=run, sender=sender, theta=value)


def run_closed(*, sender: str = topics.COLLECTOR_ID, run: str = RUN) -> Stage:
    return Stage(run=run, sender=sender, stage="run", state="closed")


def refused_once(gate: CadrWorkerAdmission, topic: topics.Topic, message) -> Rejected:
    """Feed one message that must be refused; its ``Rejected`` event."""
    before = gate.rejected
    gate.receive(topic, message, 0.0)
    assert gate.rejected == before + 1
    (event,) = gate.pop_events()
    assert isinstance(event, Rejected)
    (out,) = gate.pop_outbound()
    assert out.topic == topics.svc(RUN, topics.COLLECTOR_ID, "reject")
    assert isinstance(out.message, Reject) and out.message.field == event.field
    return event


# ---- the control topics --------------------------------------------------------------------


def test_the_coordinators_first_theta_is_heard_once_and_its_run_close_stops_the_worker():
    gate = CadrWorkerAdmission(RUN, MEMBERS)
    gate.receive(THETA_TOPIC, theta(5), 0.0)
    assert gate.pop_events() == [ThetaHeard(5)] and gate.theta == 5
    gate.receive(THETA_TOPIC, theta(5), 0.0)  # the coordinator's retransmission
    gate.receive(THETA_TOPIC, theta(6), 0.0)  # θ is heard once
    # the coordinator's other stage messages are its ordinary traffic
    gate.receive(STAGE_TOPIC, Stage(run=RUN, sender=topics.COLLECTOR_ID, stage="dsr",
                                    state="open"), 0.0)  # fmt: skip
    assert gate.pop_events() == [] and gate.theta == 5
    gate.receive(STAGE_TOPIC, run_closed(), 0.0)
    assert gate.pop_events() == [RunClosed()]
    assert gate.rejected == 0 and gate.pop_outbound() == []


def test_no_theta_is_heard_once_the_intake_is_open():
    gate = CadrWorkerAdmission(RUN, MEMBERS)
    gate.open_intake()
    gate.receive(THETA_TOPIC, theta(), 0.0)
    assert gate.pop_events() == [] and gate.theta is None


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (theta(sender="n0"), "sender"),
        (theta(run="other"), "run"),
        (run_closed(sender="n1"), "sender"),
        (run_closed(run="other"), "run"),
        (release("n0"), "type"),
        (PartitionStatus(run=RUN, sender=topics.COLLECTOR_ID, partition=0, partitions=1,
                         state="ready"), "type"),
    ],
    ids=["theta sender", "theta run", "close sender", "close run", "release", "status"],
)  # fmt: skip
def test_a_control_message_not_from_this_runs_coordinator_is_refused_and_not_obeyed(message, field):
    """Before helper B's fix the pump obeyed another run's θ or close; since then it
    counted them in ``worker.rejected`` without a notice: now also a ``Reject``."""
    gate = CadrWorkerAdmission(RUN, MEMBERS)
    event = refused_once(gate, STAGE_TOPIC, message)
    assert (event.field, event.code) == (field, "schema")
    assert gate.theta is None and not gate.is_open


# ---- before θ: held -----------------------------------------------------------------------


def test_before_theta_a_members_first_refusal_and_first_release_are_held_in_arrival_order():
    """The same device's refusal and release both reach the intake, in the order they
    came (the intake then judges: a release after a refusal is refused)."""
    gate = CadrWorkerAdmission(RUN, MEMBERS)
    arrivals = [
        (up("n1", "dsr"), release("n1")),
        (up("n0", "budget_refused"), refusal("n0")),
        (up("n0", "dsr"), release("n0", theta=6)),  # a θ that will not be the run's
        (up("n1", "budget_refused"), refusal("n1", "dsr")),
    ]
    for topic, message in arrivals:
        gate.receive(topic, message, 0.0)
    assert gate.pop_events() == [] and gate.held == 4 and gate.rejected == 0
    gate.open_intake()
    assert gate.pop_events() == [ForIntake(t, m) for t, m in arrivals]
    assert gate.held == 0


def test_one_devices_repeats_before_theta_are_counted_not_held():
    """Helper W's flood at a partition: a repeated refusal is ignored (the intake keeps one),
    an identical release a duplicate, a different one refused; the other devices' first
    messages are still held."""
    gate = CadrWorkerAdmission(RUN, MEMBERS)
    for _ in range(20):
        gate.receive(up("n1", "budget_refused"), refusal("n1"), 0.0)
    gate.receive(up("n1", "dsr"), release("n1", 1.0), 0.0)
    assert gate.pop_events() == []
    for i in range(1, 20):
        event = refused_once(gate, up("n1", "dsr"), release("n1", 1.0 + i / 8))
        assert event.field == "seq"
    for _ in range(3):
        gate.receive(up("n1", "dsr"), release("n1", 1.0), 0.0)
    assert gate.pop_events() == [HeldDuplicate("n1")] * 3
    gate.receive(up("n2", "budget_refused"), refusal("n2", "ndoe"), 0.0)
    gate.receive(up("n0", "dsr"), release("n0", 1.5), 0.0)
    assert gate.held == 4 and gate.rejected == 19
    gate.open_intake()
    held = [event.message for event in gate.pop_events()]
    assert held == [refusal("n1"), release("n1", 1.0), refusal("n2", "ndoe"), release("n0", 1.5)]


@pytest.mark.parametrize(
    ("topic", "message", "field", "code"),
    [
        (up("intruder", "dsr"), release("intruder"), "sender", "unknown_sender"),
        (up("intruder", "budget_refused"), refusal("intruder"), "sender", "unknown_sender"),
        (up("n0", "dsr"), Stage(run=RUN, sender="n0", stage="x", state="open"), "type",
         "unexpected_type"),
        (up("n0", "budget_refused"), release("n0"), "topic", "bad_topic"),
        (up("n0", "dsr"), refusal("n0"), "topic", "bad_topic"),
        (up("n0", "dsr"), PhaseReport(run=RUN, sender="n0", phase="ndoe", ok=True), "topic",
         "bad_topic"),
        (topics.parse(topics.svc(RUN, RELAY_ID, "phase")),
         PhaseReport(run=RUN, sender=RELAY_ID, phase="ndoe", ok=True), "topic", "bad_topic"),
        (topics.parse(topics.inbox(RUN, "n0", topics.COLLECTOR_ID)), release("n0"), "topic",
         "bad_topic"),
    ],
    ids=["release of a non-member", "refusal of a non-member", "another type",
         "release on budget_refused", "refusal on dsr", "phase report on a device topic",
         "the relay's phase report", "an inbox topic"],
)  # fmt: skip
def test_before_theta_anything_else_is_refused_not_held(topic, message, field, code):
    gate = CadrWorkerAdmission(RUN, MEMBERS)
    event = refused_once(gate, topic, message)
    assert (event.field, event.code) == (field, code)
    assert gate.held == 0


def test_after_theta_device_messages_on_their_own_topic_go_to_the_intake():
    """The intake judges sender, membership, θ and the value; the topic kind is checked
    here, after θ as before."""
    gate = CadrWorkerAdmission(RUN, MEMBERS)
    gate.open_intake()
    messages = [(up("n0", "dsr"), release("n0")), (up("intruder", "dsr"), release("intruder")),
                (up("n1", "budget_refused"), refusal("n1"))]  # fmt: skip
    for topic, message in messages:
        gate.receive(topic, message, 0.0)
    assert gate.pop_events() == [ForIntake(t, m) for t, m in messages]
    assert refused_once(gate, up("n2", "budget_refused"), release("n2")).field == "topic"
