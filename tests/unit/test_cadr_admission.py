"""The CADR-LDP collector's admission of what reaches it (``protocol.cadr_admission``),
driven directly, without asyncio: the relay's phase reports, the kind of topic a device
message travels on, and what arrives before the DSR intake is open (θ unknown) — the
decisions ``collector/cadr_fleet.py``'s pump used to take itself. Every refusal is
counted, emitted as ``Rejected`` and published on ``svc/collector/reject``, naming the
field."""

from __future__ import annotations

import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_admission import CadrAdmission, ForIntake, PhaseReported
from ldpfleet.protocol.cadr_messages import DsrReport
from ldpfleet.protocol.events import Rejected
from ldpfleet.protocol.messages import BudgetRefused, Reject, Stage
from ldpfleet.protocol.peer_relay import RELAY_ID, PhaseReport

RUN = "ca"
MEMBERS = ["n0", "n1", "n2"]
REPORT_TOPIC = topics.parse(topics.svc(RUN, RELAY_ID, "phase"))


def up(device: str, kind: str) -> topics.Topic:
    return topics.parse(topics.up(RUN, device, kind))


def report(**fields) -> PhaseReport:
    return PhaseReport(**{"run": RUN, "sender": RELAY_ID, "phase": "ndoe", "ok": True} | fields)


def refusal(device: str, request: str = "cadr_plan") -> BudgetRefused:
    return BudgetRefused(run=RUN, sender=device, account="node", request=request,
                         requested=0.5, remaining=0.1)  # fmt: skip


def release(device: str, value: float = 2.0) -> DsrReport:
    return DsrReport(run=RUN, sender=device, seq=1, value=value, theta=5, eps=2.7)


def refused_once(gate: CadrAdmission, topic: topics.Topic, message) -> Rejected:
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


def test_the_relays_phase_report_is_admitted_before_and_after_the_intake_opens():
    gate = CadrAdmission(RUN, MEMBERS)
    gate.receive(REPORT_TOPIC, report(), 0.0)
    assert gate.pop_events() == [PhaseReported(report())]
    gate.open_intake()
    gate.receive(REPORT_TOPIC, report(phase="lpea"), 0.0)
    assert gate.pop_events() == [PhaseReported(report(phase="lpea"))]
    assert gate.rejected == 0 and gate.pop_outbound() == []


@pytest.mark.parametrize(
    ("topic", "message"),
    [
        (up("n0", "dsr"), report()),  # a report on a device's topic
        (REPORT_TOPIC, report(sender="n0")),  # not the relay's
        (REPORT_TOPIC, report(run="other")),  # another run's
        (topics.parse(topics.svc(RUN, "n0", "phase")), report()),  # another service's topic
        (REPORT_TOPIC, Stage(run=RUN, sender=RELAY_ID, stage="x", state="open")),  # not one
    ],
    ids=["device topic", "sender", "run", "service", "type"],
)
def test_a_phase_report_from_anywhere_but_the_relay_is_refused(topic, message):
    event = refused_once(CadrAdmission(RUN, MEMBERS), topic, message)
    assert event.field == "topic" and event.reason.startswith("a ")


@pytest.mark.parametrize("opened", [False, True])
def test_a_device_message_on_the_other_kind_of_topic_is_refused(opened):
    gate = CadrAdmission(RUN, MEMBERS)
    if opened:
        gate.open_intake()
    assert refused_once(gate, up("n0", "budget_refused"), release("n0")).field == "topic"
    assert refused_once(gate, up("n1", "dsr"), refusal("n1")).field == "topic"
    assert gate.rejections_by_reason == {"bad_topic": 2}


def test_before_the_intake_opens_only_a_members_budget_refusal_is_held():
    gate = CadrAdmission(RUN, MEMBERS)
    event = refused_once(gate, up("n0", "dsr"), release("n0"))
    assert (event.field, event.code) == ("type", "out_of_order")
    event = refused_once(gate, up("intruder", "budget_refused"), refusal("intruder"))
    assert (event.field, event.code) == ("sender", "unknown_sender")
    gate.receive(up("n1", "budget_refused"), refusal("n1"), 0.0)
    assert gate.pop_events() == [] and gate.held == 1


def test_one_refusal_a_device_is_held_the_first_in_arrival_order():
    """A device repeating its refusal cannot crowd out another's (the intake, too, keeps
    one refusal a device); the repeats are neither held nor refused."""
    gate = CadrAdmission(RUN, MEMBERS)
    for _ in range(50):
        gate.receive(up("n2", "budget_refused"), refusal("n2", "ndoe"), 0.0)
    gate.receive(up("n0", "budget_refused"), refusal("n0"), 0.0)
    gate.receive(up("n2", "budget_refused"), refusal("n2", "lpea"), 0.0)
    assert gate.held == 2 and gate.rejected == 0 and gate.pop_events() == []
    gate.open_intake()
    assert gate.pop_events() == [
        ForIntake(up("n2", "budget_refused"), refusal("n2", "ndoe")),
        ForIntake(up("n0", "budget_refused"), refusal("n0")),
    ]
    assert gate.held == 0 and gate.is_open


def test_once_open_every_device_message_on_its_own_topic_goes_to_the_intake():
    """The intake judges sender, membership and values itself (``DsrIntake``)."""
    gate = CadrAdmission(RUN, MEMBERS)
    gate.open_intake()
    assert gate.pop_events() == []
    messages = [
        (up("n0", "dsr"), release("n0")),
        (up("intruder", "dsr"), release("intruder")),
        (up("n1", "budget_refused"), refusal("n1")),
    ]
    for topic, message in messages:
        gate.receive(topic, message, 0.0)
    assert gate.pop_events() == [ForIntake(t, m) for t, m in messages]
    assert gate.rejected == 0


def test_opening_twice_is_a_local_error():
    from ldpfleet.protocol.errors import LocalProtocolError

    gate = CadrAdmission(RUN, MEMBERS)
    gate.open_intake()
    with pytest.raises(LocalProtocolError):
        gate.open_intake()
