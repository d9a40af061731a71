"""Tier 1 (pure): what the bulk collector does with each decoded delivery is
``protocol.bulk.BulkCollector.route``'s decision, not its pump's — the gateway a topic
names (spelled as that gateway's own uplink, of this partition), the message's kind
matching the topic's, and the stage closed only by this run's runner on ``ctl/stage``;
anything else is refused whole (``schema``), and a stage message that closes nothing is
counted."""

from __future__ import annotations

import pytest
from ldpfleet.protocol.bulk import (
    BulkAck,
    BulkCollector,
    BulkHello,
    BulkPlan,
    BulkReport,
    gateway_up,
    stage_topic,
)
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import Stage

RUN = "t"


def plan_of(partitions: int = 1) -> BulkPlan:
    return BulkPlan(
        run=RUN, devices=230, steps=20, batch_steps=5, eps=2.0, w=5,
        gateway_devices=100, partitions=partitions,
    )  # fmt: skip


def hello(gateway: int = 1) -> BulkHello:
    return BulkHello(
        run=RUN, sender=f"g{gateway}", gateway=gateway, first=100 * gateway, count=100,
        mechanism="sw", eps=2.0, w=5, eps0=0.4, steps=20, batch_steps=5, lo=-1.5, hi=1.5,
    )  # fmt: skip


def report(gateway: int = 1) -> BulkReport:
    return BulkReport(
        run=RUN, sender=f"g{gateway}", seq=0, mechanism="sw", w=5, batch_steps=5, entries=b""
    )


def stage(state: str = "closed", *, run: str = RUN, sender: str = "collector") -> Stage:
    return Stage(run=run, sender=sender, stage="stream", state=state)


def uplink(gateway: int, kind: str, collector: BulkCollector) -> str:
    level = collector.plan.partition_level_of(collector.partition)
    return gateway_up(RUN, gateway, kind, level)


@pytest.fixture(params=[1, 3], ids=["one partition", "partitioned"])
def collector(request) -> BulkCollector:
    return BulkCollector(plan_of(request.param), request.param - 1)


def test_a_hello_and_a_report_on_their_gateway_s_own_uplink_go_to_that_gateway(collector):
    route = collector.route(uplink(1, "hello", collector), hello(1))
    assert (route.action, route.gateway) == ("hello", 1)
    route = collector.route(uplink(2, "bulk", collector), report(2))
    assert (route.action, route.gateway) == ("report", 2)
    assert collector.counters.hellos == 0 and collector.counters.messages == 0  # nothing done


@pytest.mark.parametrize(
    ("topic", "field", "words"),
    [
        (f"ldp/{RUN}/gw/g01/up/hello", "topic", "is not gateway 1's hello uplink"),
        (f"ldp/{RUN}/gw/g+1/up/hello", "topic", "is not gateway 1's hello uplink"),
        (f"ldp/{RUN}/gw/g1/up/bulk", "topic", "is not gateway 1's hello uplink"),
        (f"ldp/{RUN}/gw/gx/up/hello", "topic", "not a gateway uplink"),
        (f"ldp/{RUN}/gw/g-1/up/hello", "topic", "is not gateway -1's"),
        ("ldp/other/gw/g1/up/hello", "topic", "is not gateway 1's hello uplink"),
        (f"ldp/{RUN}/p9/gw/g1/up/hello", "topic", "is not gateway 1's hello uplink"),
        (stage_topic(RUN), "topic", "not a gateway uplink"),
    ],
)
def test_a_hello_on_any_other_topic_is_refused_whole(topic, field, words):
    collector = BulkCollector(plan_of())
    with pytest.raises(RemoteProtocolError) as refused:
        collector.route(topic, hello(1))
    assert (refused.value.field, refused.value.code) == (field, "schema")
    assert words in refused.value.reason


def test_a_message_not_of_its_topic_s_kind_is_refused_as_a_type(collector):
    ack = BulkAck(
        run=RUN, sender="g1", seq=0, partition=0, devices=b"", acked=b"",
        rejected_devices=b"", rejected_seqs=b"", rejected_codes=b"",
    )  # fmt: skip
    with pytest.raises(RemoteProtocolError) as refused:
        collector.route(uplink(1, "bulk", collector), ack)
    assert (refused.value.field, refused.value.code) == ("type", "schema")
    with pytest.raises(RemoteProtocolError) as refused:  # a report on the hello uplink
        collector.route(uplink(1, "hello", collector), report(1))
    assert (refused.value.field, refused.value.code) == ("topic", "schema")


def test_only_this_run_s_runner_closes_the_stage_on_ctl_stage(collector):
    closing = stage("closed")
    route = collector.route(stage_topic(RUN), closing)
    assert route.action == "close" and route.stage is closing
    refusals = [
        (uplink(1, "bulk", collector), stage("closed", sender="g1"), "topic"),
        (stage_topic(RUN), stage("closed", sender="g1"), "sender"),
        (stage_topic(RUN), stage("closed", run="other"), "sender"),
    ]
    for topic, message, field in refusals:
        with pytest.raises(RemoteProtocolError) as refused:
            collector.route(topic, message)
        assert (refused.value.field, refused.value.code) == (field, "schema")
    assert collector.counters.stage_messages_ignored == 0


def test_a_stage_message_that_closes_nothing_is_counted_not_dropped_silently(collector):
    route = collector.route(stage_topic(RUN), stage("open"))
    assert route.action == "ignore"
    assert collector.counters.stage_messages_ignored == 1
    assert collector.summary()["stage_messages_ignored"] == 1
