"""A final rejection stops the device that sent the rejected message, and only that device.

Tier-1: the machines of protocol/stream.py driven directly (``Fleet`` of
test_stream_machines: fake clock, seeded generators, every message through the codec).
Before: the collector published its ``Reject`` on ``svc/`` only, the device never saw it
and retransmitted the refused message until the stage deadline (600 s by default)."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import Reject, SwReport, Withdraw
from ldpfleet.protocol.stream import (
    DeviceWithdrawn,
    ReportAccepted,
    StageClosed,
    StreamCollector,
    StreamRejected,
)

from tests.unit.bad_mechanisms import STRICT_BOUND
from tests.unit.test_stream_machines import RUN, Fleet, deliver, make_config

COLLECTOR = topics.COLLECTOR_ID


def mismatched_fleet(n: int = 3) -> Fleet:
    """Devices configured with eps = 2, a collector with eps = 1 (a parameter mismatch)."""
    fleet = Fleet(n)
    fleet.collector = StreamCollector(make_config(eps=1.0), fleet.names)
    return fleet


def test_a_parameter_mismatch_stops_every_device_and_closes_the_stage_at_once():
    fleet = mismatched_fleet()
    fleet.start()
    fleet.run()
    assert fleet.now == 0.0  # no timer fired: closed without waiting for any deadline
    for name, reporter in fleet.reporters.items():
        assert reporter.state == "rejected" and reporter.finished
        assert reporter.rejection is not None
        assert reporter.rejection["kind"] == "hello" and reporter.rejection["field"] == "eps"
        assert "declared 2.0, this run uses 1.0" in reporter.rejection["reason"]
        assert [type(e) for e in fleet.device_events[name]] == [StreamRejected]
        assert reporter.next_timer() is None
    [closed] = fleet.events(StageClosed)
    assert not closed.complete and "3 withdrew" in closed.reason
    assert {e.device for e in fleet.events(DeviceWithdrawn)} == set(fleet.names)
    summary = fleet.collector.summary()
    assert summary["devices_rejected"] == 3 and summary["reports_withdrawn"] == 15
    assert summary["reports_lost"] == 0 and summary["reports_received"] == 0
    assert summary["device_rejections"]["d1"]["field"] == "eps"
    # nothing is ever retransmitted: a minute of timers moves no message
    fleet.tick(60.0)
    assert all(not r.pop_outbound() for r in fleet.reporters.values())
    assert all(r.retransmissions == 0 for r in fleet.reporters.values())


def test_a_report_outside_the_collectors_domain_is_final_and_never_stored():
    """The plugin's collector-side ``in_domain`` is narrower than the devices' (a version
    mismatch): each device whose batch leaves it stops at that batch; the others finish."""
    config = make_config(mechanism="tests.unit.bad_mechanisms:StricterOnCollector", steps=40)
    fleet = Fleet(6, config=config)
    fleet.start()
    fleet.finish()
    states = {n: r.state for n, r in fleet.reporters.items()}
    rejected = [n for n, s in states.items() if s == "rejected"]
    # seeded: the generators of Fleet are fixed, so this split is fixed too
    assert rejected and len(rejected) < 6 and set(states.values()) == {"done", "rejected"}
    for name in rejected:
        rejection = fleet.reporters[name].rejection
        assert rejection["kind"] == "sw_report" and rejection["field"].startswith("values[")
        assert "outside the tests.unit.bad_mechanisms:StricterOnCollector" in rejection["reason"]
    for event in fleet.events(ReportAccepted):
        assert np.all(np.abs(event.values) < STRICT_BOUND)  # nothing rejected is stored
    summary = fleet.collector.summary()
    assert sorted(summary["device_rejections"]) == rejected
    assert summary["devices_complete"] + summary["devices_rejected"] == 6
    assert summary["reports_lost"] == 0
    assert fleet.collector.state == "closed"


def _first_report(fleet: Fleet, name: str) -> SwReport:
    reporter = fleet.reporters[name]
    return reporter._report(0)


def test_an_impostors_message_on_a_devices_topic_does_not_stop_it():
    """A changed copy of d0's batch 0 (out of domain) published on d0's topic: the collector
    refuses it and tells d0, whose digest check finds it never sent that message."""
    fleet = Fleet(2)
    fleet.start()
    fleet.step()  # hellos
    fleet.step()  # batch 0 of each device reaches the collector
    genuine = _first_report(fleet, "d0")
    forged = SwReport(**{**{f: getattr(genuine, f) for f in genuine.__struct_fields__},
                         "values": [99.0] * len(genuine.values)})  # fmt: skip
    topic = topics.up(RUN, "d0", "sw_report")
    fleet.collector.receive(topics.parse(topic), codec.decode(codec.encode(forged)), fleet.now)
    notices = [o for o in fleet.collector.pop_outbound() if isinstance(o.message, Reject)]
    inbox = topics.inbox(RUN, "d0", COLLECTOR)
    assert sorted(o.topic for o in notices) == sorted([inbox, topics.svc(RUN, COLLECTOR, "reject")])
    deliver([o for o in notices if o.topic == inbox], to=fleet.reporters["d0"])
    assert fleet.reporters["d0"].state == "streaming"
    assert fleet.reporters["d0"].rejects_ignored == 1
    fleet.finish()
    assert all(r.state == "done" for r in fleet.reporters.values())
    assert fleet.events(StageClosed)[0].complete


@pytest.mark.parametrize(
    "change",
    [
        {"device": "d1"},  # names another device
        {"code": "no_credit"},  # a reason a retransmission can fix
        {"message_seq": 3},  # a batch d0 never sent
        {"digest": "0" * 64},  # not what d0 sent
        {"kind": "ack"},  # not a kind d0 sends
    ],
)
def test_a_reject_that_does_not_name_a_message_the_device_sent_is_ignored(change):
    fleet = Fleet(1)
    fleet.start()
    fleet.step()
    fleet.step()
    reporter = fleet.reporters["d0"]
    genuine = _first_report(fleet, "d0")
    fields = {
        "run": RUN,
        "sender": COLLECTOR,
        "device": "d0",
        "topic": topics.up(RUN, "d0", "sw_report"),
        "kind": "sw_report",
        "field": "values[0]",
        "reason": "outside",
        "code": "out_of_range",
        "message_seq": 0,
        "digest": codec.message_digest(genuine),
    }
    notice = Reject(**{**fields, **change})
    reporter.receive(topics.parse(topics.inbox(RUN, "d0", COLLECTOR)), notice, 0.0)
    assert reporter.state == "streaming" and reporter.rejects_ignored == 1
    # the same notice unchanged is final: the test's notice is a valid one but for `change`
    reporter.receive(topics.parse(topics.inbox(RUN, "d0", COLLECTOR)), Reject(**fields), 0.0)
    assert reporter.state == "rejected"


def test_a_reject_from_anyone_but_the_collector_is_refused():
    fleet = Fleet(1)
    fleet.start()
    fleet.step()
    reporter = fleet.reporters["d0"]
    notice = Reject(run=RUN, sender="d1", device="d0", topic="t", kind="hello",
                    reason="x", code="parameter_mismatch", message_seq=0,
                    digest=codec.message_digest(reporter._hello()))  # fmt: skip
    with pytest.raises(RemoteProtocolError, match="only from the collector"):
        reporter.receive(topics.parse(topics.inbox(RUN, "d0", "d1")), notice, 0.0)
    assert reporter.state != "rejected"


def test_the_collector_refuses_a_withdrawal_without_a_final_reason_or_after_completion():
    fleet = Fleet(1)
    topic = topics.parse(topics.up(RUN, "d0", "withdraw"))
    bad = Withdraw(run=RUN, sender="d0", kind="sw_report", message_seq=0, digest="",
                   code="no_credit")  # fmt: skip
    fleet.collector.receive(topic, bad, 0.0)
    assert fleet.collector.rejected == 1 and fleet.collector.withdrawn_devices == 0
    fleet.start()
    fleet.finish()
    late = Withdraw(run=RUN, sender="d0", kind="sw_report", message_seq=0, digest="",
                    code="out_of_range")  # fmt: skip
    fleet.collector.state = "open"  # as if the stage were still open
    fleet.collector.receive(topic, late, 0.0)
    assert fleet.collector.rejected == 2 and fleet.collector.withdrawn_devices == 0


def test_a_restarted_collector_hears_the_withdrawal_again():
    fleet = mismatched_fleet(2)
    fleet.start()
    fleet.run()
    restarted = StreamCollector(make_config(eps=1.0), fleet.names)
    fleet.collector = restarted
    restarted.open()
    fleet.run()
    assert restarted.state == "closed" and restarted.withdrawn_devices == 2
    # the same withdrawal twice is counted once
    again = fleet.reporters["d0"].withdrawal
    restarted.state = "open"
    restarted.receive(topics.parse(topics.up(RUN, "d0", "withdraw")), again, 1.0)
    assert restarted.withdrawn_devices == 2 and restarted.rejected == 0
