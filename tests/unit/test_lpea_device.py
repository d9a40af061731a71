"""``protocol.lpea_device.LpeaDevice``: the device side of private LPEA between the broker
and the ``LpeaNode`` — admission, round order, the early-message buffer, replay, the
``LpeaDone`` reports. Tier 1: no asyncio, no broker, time is a number the test passes."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError, RemoteProtocolError
from ldpfleet.protocol.lpea import (
    LpeaAnswer,
    LpeaConfirm,
    LpeaDone,
    LpeaNode,
    LpeaRequest,
    LpeaRound,
)
from ldpfleet.protocol.lpea_device import LpeaDevice, Refused

RUN = "r1"
ME = "a"
NEIGHBOURS = ("b", "c", "d")
CONTROL = topics.parse(topics.ctl(RUN, "lpea_round"))
NOW = 12.5  # the machine never reads the clock; any number will do


def device(theta: int = 0) -> LpeaDevice:
    """``a`` with neighbours b, c, d. ``theta=0``: every round ends at once."""
    node = LpeaNode(RUN, ME, dict.fromkeys(NEIGHBOURS, 1), theta, 50.0, np.random.default_rng(5))
    return LpeaDevice(node, RUN)


def inbox(src: str) -> topics.Topic:
    return topics.parse(topics.inbox(RUN, ME, src))


def open_round(machine: LpeaDevice, r: int, *, finished: bool = False) -> None:
    message = LpeaRound(run=RUN, sender=topics.COLLECTOR_ID, seq=1, round=r, finished=finished)
    machine.receive(CONTROL, message, NOW)


def request(machine: LpeaDevice, src: str, r: int, seq: int = 1) -> None:
    machine.receive(inbox(src), LpeaRequest(run=RUN, sender=src, seq=seq, round=r), NOW)


def refusals(machine: LpeaDevice) -> list[Refused]:
    return [e for e in machine.pop_events() if isinstance(e, Refused)]


def sent(machine: LpeaDevice) -> list[tuple[str, str, int]]:
    return [(o.topic, o.message.type_name(), o.message.round) for o in machine.pop_outbound()]


def test_the_buffer_cap_is_four_messages_per_neighbour_plus_four():
    assert device().buffer_cap == 4 * len(NEIGHBOURS) + 4


def test_a_node_of_another_run_is_a_parameter_error():
    node = LpeaNode("r2", ME, {"b": 1}, 1, 1.0, np.random.default_rng(0))
    with pytest.raises(ParameterError, match="node belongs to run") as error:
        LpeaDevice(node, RUN)
    assert error.value.field == "run"


def test_a_message_before_its_round_is_buffered_and_delivered_right_after_it_opens():
    machine = device(theta=3)
    request(machine, "b", 0)
    assert machine.buffered_total == 1 and machine.node.round is None
    assert sent(machine) == [] and refusals(machine) == []
    open_round(machine, 0)
    out = sent(machine)
    # the round's own requests first (start_round), then the answer to the buffered one
    assert out[:3] == [(topics.inbox(RUN, n, ME), "lpea_request", 0) for n in NEIGHBOURS]
    assert out[3] == (topics.inbox(RUN, "b", ME), "lpea_answer", 0)
    assert len(out) == 4 and machine.rounds == 1 and machine.refused == 0


def test_a_message_still_ahead_when_a_round_opens_is_buffered_again():
    machine = device()
    request(machine, "b", 2)
    open_round(machine, 0)
    assert machine.buffered_total == 2  # counted again: it went back into the buffer
    open_round(machine, 2)
    assert (topics.inbox(RUN, "b", ME), "lpea_answer", 2) in sent(machine)
    assert machine.refused == 0


def test_the_full_buffer_refuses_naming_round_and_code():
    machine = device()
    cap = machine.buffer_cap
    for seq in range(cap):
        request(machine, "b", 1, seq=seq)
    assert refusals(machine) == []
    request(machine, "c", 1)
    (refused,) = refusals(machine)
    assert refused.what == topics.inbox(RUN, ME, "c")
    assert refused.error.reason == "early-message buffer is full"
    assert (refused.error.field, refused.error.code) == ("round", "buffer_full")
    assert machine.refused == 1 and machine.buffered_total == cap


def test_a_broadcast_that_does_not_follow_the_round_is_refused():
    machine = device()
    open_round(machine, 2)
    machine.pop_outbound()
    open_round(machine, 2)
    open_round(machine, 1)
    got = [(r.what, r.error.reason, r.error.field, r.error.code) for r in refusals(machine)]
    assert got == [
        ("lpea_round", "round 2 does not follow 2", "round", "stale_round"),
        ("lpea_round", "round 1 does not follow 2", "round", "stale_round"),
    ]
    assert machine.node.round == 2 and machine.rounds == 1 and sent(machine) == []


def test_a_buffered_message_of_a_skipped_round_is_refused_when_a_later_round_opens():
    machine = device()
    request(machine, "b", 1)
    request(machine, "c", 3)
    open_round(machine, 2)
    (refused,) = refusals(machine)
    assert refused.what == topics.inbox(RUN, ME, "b")
    assert refused.error.reason == "message of a round that was skipped"
    assert (refused.error.field, refused.error.code) == ("round", "skipped_round")
    assert machine.buffered_total == 3  # b1, c3, and c3 again (still ahead of round 2)


def test_the_nodes_own_refusals_are_counted_with_its_field():
    machine = device()
    open_round(machine, 0)
    machine.receive(inbox("b"), LpeaAnswer(run=RUN, sender="b", round=0, yes=True), NOW)
    (refused,) = refusals(machine)
    assert refused.error.field == "type" and "without a pending request" in refused.error.reason
    assert machine.refused == 1 and machine.node.rejected == 1


def test_replayed_messages_the_node_refuses_are_each_counted():
    machine = device()
    for seq in range(3):
        request(machine, "b", 0, seq=seq)
    open_round(machine, 0)
    reasons = [r.error.reason for r in refusals(machine)]
    assert reasons == ["second lpea_request from b this round"] * 2
    assert machine.refused == 2


@pytest.mark.parametrize(
    ("topic", "message", "field"),
    [
        (inbox("b"), LpeaDone(run=RUN, sender="b", round=0, added=0), "type"),
        (CONTROL, LpeaRound(run=RUN, sender="b", round=0), "sender"),
        (CONTROL, LpeaRequest(run=RUN, sender=topics.COLLECTOR_ID, round=0), "type"),
    ],
)
def test_admission_refusals_reach_neither_node_nor_buffer(topic, message, field):
    machine = device()
    machine.receive(topic, message, NOW)
    (refused,) = refusals(machine)
    assert refused.what == topic.text and refused.error.field == field
    assert machine.refused == 1 and machine.buffered_total == 0 and machine.rounds == 0
    assert machine.node.round is None and sent(machine) == []


def test_refuse_counts_what_the_pump_could_not_decode():
    machine = device()
    machine.refuse("ldp/r1/x", RemoteProtocolError("bad json", field="payload"))
    (refused,) = refusals(machine)
    assert (refused.what, refused.error.field) == ("ldp/r1/x", "payload")
    assert machine.refused == 1


def test_each_finished_round_is_reported_after_the_nodes_messages_of_that_input():
    machine = device()
    request(machine, "b", 0)
    open_round(machine, 0)
    open_round(machine, 1)
    out = machine.pop_outbound()
    assert [(o.topic, o.message.type_name(), o.message.round) for o in out] == [
        (topics.inbox(RUN, "b", ME), "lpea_answer", 0),
        (topics.up(RUN, ME, "lpea_done"), "lpea_done", 0),
        (topics.up(RUN, ME, "lpea_done"), "lpea_done", 1),
    ]
    reports = [o.message for o in out if isinstance(o.message, LpeaDone)]
    assert [(m.run, m.sender, m.seq, m.added) for m in reports] == [
        (RUN, ME, 1, 0),
        (RUN, ME, 2, 0),
    ]


def test_a_report_carries_the_edges_the_round_added():
    machine = device(theta=1)
    open_round(machine, 0)  # asks b, c, d
    machine.pop_outbound()
    for n in NEIGHBOURS:
        answer = LpeaAnswer(run=RUN, sender=n, round=0, yes=(n == "b"))
        machine.receive(inbox(n), answer, NOW)
    assert [(o.topic, o.message.type_name()) for o in machine.pop_outbound()] == [
        (topics.inbox(RUN, "b", ME), "lpea_establish")
    ]
    machine.receive(inbox("b"), LpeaConfirm(run=RUN, sender="b", round=0, accepted=True), NOW)
    (report,) = [o.message for o in machine.pop_outbound()]
    assert isinstance(report, LpeaDone) and (report.round, report.added) == (0, 1)
    assert machine.node.kept == {"b"} and machine.refused == 0


def test_the_end_of_lpea_finishes_the_machine_and_touches_nothing_else():
    machine = device()
    open_round(machine, 0)
    machine.pop_outbound()
    open_round(machine, 0, finished=True)
    assert machine.finished and machine.rounds == 1 and machine.refused == 0
    assert sent(machine) == []


def test_a_round_that_opens_while_the_node_is_busy_is_a_local_error():
    """The pacer must wait for every report: the node raises, the machine does not hide it."""
    machine = device(theta=1)
    open_round(machine, 0)  # requests outstanding
    with pytest.raises(LocalProtocolError):
        open_round(machine, 1)
