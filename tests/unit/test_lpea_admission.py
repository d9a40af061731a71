"""The LPEA pumps' admission decisions (``protocol.lpea.admit_agent_delivery`` and
``admit_round_report``): pure, no broker. Each refusal names its field."""

from __future__ import annotations

import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.lpea import (
    LpeaDone,
    LpeaRequest,
    LpeaRound,
    admit_agent_delivery,
    admit_round_report,
)

RUN = "r1"
COLLECTOR = topics.COLLECTOR_ID
CONTROL = topics.parse(topics.ctl(RUN, "lpea_round"))
OTHER_CONTROL = topics.parse(topics.ctl(RUN, "stage"))
INBOX = topics.parse(topics.inbox(RUN, "a", "b"))


def round_msg(sender: str = COLLECTOR, run: str = RUN) -> LpeaRound:
    return LpeaRound(run=run, sender=sender, seq=1, round=0)


def done(sender: str = "a", run: str = RUN, round: int = 0) -> LpeaDone:
    return LpeaDone(run=run, sender=sender, seq=1, round=round, added=1)


def test_agent_admits_the_collectors_round_and_peer_messages():
    start = round_msg()
    assert admit_agent_delivery(CONTROL, start, RUN) is start
    request = LpeaRequest(run=RUN, sender="b", seq=1, round=0)
    assert admit_agent_delivery(INBOX, request, RUN) is request


@pytest.mark.parametrize(
    ("topic", "message", "field"),
    [
        (CONTROL, LpeaRequest(run=RUN, sender=COLLECTOR, seq=1, round=0), "type"),
        (OTHER_CONTROL, round_msg(), "type"),
        (CONTROL, round_msg(sender="b"), "sender"),
        (CONTROL, round_msg(run="r2"), "sender"),
        (INBOX, round_msg(sender="b"), "type"),
        (INBOX, LpeaDone(run=RUN, sender="b", seq=1, round=0, added=0), "type"),
    ],
)
def test_agent_refuses_naming_the_field(topic, message, field):
    with pytest.raises(RemoteProtocolError) as refused:
        admit_agent_delivery(topic, message, RUN)
    assert refused.value.field == field


def report_topic(device: str = "a", run: str = RUN) -> topics.Topic:
    return topics.parse(topics.up(run, device, "lpea_done"))


def test_pacer_admits_an_awaited_report_of_this_round():
    report = done()
    assert admit_round_report(report_topic(), report, RUN, 0, {"a", "b"}) is report


@pytest.mark.parametrize(
    ("topic", "message", "waiting", "field"),
    [
        (report_topic(), round_msg(sender="a"), {"a"}, "type"),
        (report_topic(), done(run="r2"), {"a"}, "run"),
        (report_topic(run="r2"), done(), {"a"}, "run"),
        (report_topic("b"), done("a"), {"a", "b"}, "sender"),
        (report_topic(), done(round=1), {"a"}, "round"),  # stale or ahead
        (report_topic(), done(), {"b"}, "sender"),  # duplicate: no longer awaited
    ],
)
def test_pacer_refuses_naming_the_field(topic, message, waiting, field):
    with pytest.raises(RemoteProtocolError) as refused:
        admit_round_report(topic, message, RUN, 0, waiting)
    assert refused.value.field == field
