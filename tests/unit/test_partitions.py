"""Collector partitions (issue 23): the stable hash assignment, the partitioned topic layout
(build, parse, P = 1 unchanged), the per-partition ACL, the coordinator's tally, the machines'
topics and the kinds that refuse P > 1."""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import pytest
from ldpfleet.broker.auth import AccessPolicy, Credentials, mosquitto_acl_text
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.partition import (
    COMPLETE_REASON,
    COUNTERS,
    PartitionStatus,
    PartitionTally,
    status_topic,
)
from ldpfleet.protocol.stream import StreamCollector, StreamConfig, StreamReporter
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import ROOT

RUN = "part1"


def test_the_assignment_is_sha256_of_the_id_mod_p_and_pinned():
    for device in ("d0000", "d0001", "n4038", "x"):
        digest = hashlib.sha256(device.encode()).digest()
        for count in (1, 2, 3, 4, 7, 1024):
            expected = int.from_bytes(digest[:8], "big") % count
            assert topics.partition_of(device, count) == expected
    # pinned values: a change of the hash would move every device of a running fleet
    pinned = [topics.partition_of(f"d{i:04d}", 4) for i in range(8)]
    assert pinned == [
        int.from_bytes(hashlib.sha256(f"d{i:04d}".encode()).digest()[:8], "big") % 4
        for i in range(8)
    ]
    assert topics.partition_of("d0001", 1) == 0
    assert topics.device_partition("d0001", 1) is None


def test_the_assignment_spreads_10000_devices_evenly():
    # Deterministic (fixed ids), so it cannot flake. Were SHA-256 a random function, each
    # count would be Binomial(10000, 1/4): sd = sqrt(10000 * 0.25 * 0.75) = 43.3, and the
    # bound 2500 +- 260 is 6.0 sd: P(outside) < 2e-9 per partition.
    counts = Counter(topics.partition_of(f"d{i:05d}", 4) for i in range(10_000))
    assert set(counts) == {0, 1, 2, 3}
    assert all(abs(c - 2500) <= 260 for c in counts.values()), counts


@pytest.mark.parametrize("bad", [0, -1, 1025, 2.0, "2", None])
def test_a_bad_partition_count_is_a_typed_error_naming_the_field(bad):
    with pytest.raises(ParameterError) as caught:
        topics.partition_of("d0001", bad)
    assert caught.value.field == "partitions"


def test_partitioned_topics_build_and_parse():
    assert topics.up(RUN, "d0001", "hello") == f"ldp/{RUN}/dev/d0001/up/hello"
    assert topics.up(RUN, "d0001", "hello", 3) == f"ldp/{RUN}/p3/dev/d0001/up/hello"
    assert topics.inbox(RUN, "d0001", "collector", 0) == f"ldp/{RUN}/p0/dev/d0001/in/collector"
    assert topics.all_up(RUN) == f"ldp/{RUN}/dev/+/up/#"
    assert topics.all_up(RUN, 2) == f"ldp/{RUN}/p2/dev/+/up/#"
    assert topics.all_up(RUN, topics.ANY_PARTITION) == f"ldp/{RUN}/+/dev/+/up/#"
    assert topics.partition_filter(RUN, 1) == f"ldp/{RUN}/p1/#"
    up = topics.parse(topics.up(RUN, "d0001", "sw_report", 3))
    assert (up.family, up.kind, up.sender, up.partition) == ("up", "sw_report", "d0001", 3)
    inbox = topics.parse(topics.inbox(RUN, "d0001", "collector", 12))
    assert (inbox.family, inbox.recipient, inbox.sender, inbox.partition) == (
        "in",
        "d0001",
        "collector",
        12,
    )
    assert topics.parse(topics.up(RUN, "d0001", "hello")).partition is None
    assert topics.matches(topics.all_up(RUN, 3), topics.up(RUN, "d9", "hello", 3))
    assert not topics.matches(topics.all_up(RUN, 3), topics.up(RUN, "d9", "hello", 2))
    assert not topics.matches(topics.all_up(RUN, 3), topics.up(RUN, "d9", "hello"))


@pytest.mark.parametrize(
    "text",
    [
        f"ldp/{RUN}/p01/dev/d1/up/hello",  # no leading zeros: one spelling per partition
        f"ldp/{RUN}/p-1/dev/d1/up/hello",
        f"ldp/{RUN}/p3/ctl/stage",  # broadcasts are global
        f"ldp/{RUN}/p3/dev/d1/up",
        f"ldp/{RUN}/q3/dev/d1/up/hello",
    ],
)
def test_malformed_partition_levels_are_refused(text):
    with pytest.raises(RemoteProtocolError):
        topics.parse(text)


@pytest.mark.parametrize("bad", [-1, 1024, "1", 1.0])
def test_a_bad_partition_level_is_a_typed_error(bad):
    with pytest.raises(ParameterError) as caught:
        topics.up(RUN, "d0001", "hello", bad)
    assert caught.value.field == "partition"


def _config(partitions: int) -> StreamConfig:
    return StreamConfig(RUN, "sw", 2.0, 5, 10, 5, 0.0, 1.0, partitions=partitions)


def test_the_machines_use_the_partition_of_each_device_and_p1_is_unchanged():
    for partitions in (1, 4):
        config = _config(partitions)
        reporter = StreamReporter(config, "d0003", np.random.default_rng(0))
        reporter.start(0.0)
        (hello,) = reporter.pop_outbound()
        level = topics.device_partition("d0003", partitions)
        assert hello.topic == topics.up(RUN, "d0003", "hello", level)
        collector = StreamCollector(config, ["d0003"])
        collector.receive(topics.parse(hello.topic), hello.message, 0.0)
        acks = [o.topic for o in collector.pop_outbound()]
        assert acks == [topics.inbox(RUN, "d0003", "collector", level)]
    unpartitioned = topics.up(RUN, "d0003", "hello", _config(1).partition("d0003"))
    assert unpartitioned == f"ldp/{RUN}/dev/d0003/up/hello"


def test_the_collector_refuses_a_device_on_another_partitions_level():
    config = _config(4)
    reporter = StreamReporter(config, "d0003", np.random.default_rng(0))
    reporter.start(0.0)
    (hello,) = reporter.pop_outbound()
    mine = topics.partition_of("d0003", 4)
    wrong = topics.up(RUN, "d0003", "hello", (mine + 1) % 4)
    collector = StreamCollector(config, ["d0003"])
    collector.receive(topics.parse(wrong), hello.message, 0.0)
    assert collector.rejected == 1 and collector.rejections_by_reason == {"unknown_sender": 1}


def test_a_device_may_publish_and_read_only_its_own_partitions_subtree():
    policy = AccessPolicy(RUN, frozenset({"d0001", "d0002"}), partitions=4)
    mine = topics.partition_of("d0001", 4)
    other = (mine + 1) % 4
    me = f"{RUN}-d0001"
    assert policy.allowed("d0001", me, "publish", topics.up(RUN, "d0001", "hello", mine))
    assert not policy.allowed("d0001", me, "publish", topics.up(RUN, "d0001", "hello", other))
    assert not policy.allowed("d0001", me, "publish", topics.up(RUN, "d0002", "hello", mine))
    inbox = topics.inbox_filter(RUN, "d0001", mine)
    assert policy.allowed("d0001", me, "subscribe", inbox)
    assert not policy.allowed("d0001", me, "subscribe", topics.inbox_filter(RUN, "d0001", other))
    assert not policy.allowed("d0001", me, "subscribe", f"ldp/{RUN}/+/dev/d0001/in/+")
    assert not policy.allowed("d0001", me, "subscribe", topics.partition_filter(RUN, mine))
    # every worker and the coordinator log in as the collector
    worker = f"{RUN}-collector-p{mine}"
    assert policy.allowed("collector", worker, "subscribe", topics.all_up(RUN, mine))
    ack = topics.inbox(RUN, "d0001", "collector", mine)
    assert policy.allowed("collector", worker, "publish", ack)
    assert policy.allowed(
        "collector", f"{RUN}-collector-coordinator", "subscribe", status_topic(RUN)
    )
    assert policy.allowed("collector", worker, "publish", status_topic(RUN))
    assert not policy.allowed("d0001", me, "publish", status_topic(RUN))
    gateway = f"{RUN}-gateway-0"
    assert policy.allowed("gateway", gateway, "publish", topics.up(RUN, "d0002", "hello", other))
    assert policy.allowed("recorder", f"{RUN}-recorder-p{mine}", "subscribe",
                          topics.partition_filter(RUN, mine))  # fmt: skip


def test_p1_grants_no_partitioned_topic_and_credentials_carry_p():
    policy = AccessPolicy(RUN, frozenset({"d0001"}))
    me = f"{RUN}-d0001"
    assert not policy.allowed("d0001", me, "publish", topics.up(RUN, "d0001", "hello", 0))
    assert policy.allowed("d0001", me, "publish", topics.up(RUN, "d0001", "hello"))
    creds = Credentials.generate(RUN, ["d0001"], partitions=4)
    assert Credentials.from_dict(creds.to_dict()).policy.partitions == 4
    assert Credentials.from_dict({**creds.to_dict(), "partitions": None} | {"partitions": 1})
    assert "/+/dev/%u/up/#" in mosquitto_acl_text(RUN, 4)
    assert "/+/dev/" not in mosquitto_acl_text(RUN)


def _status(partition: int, state: str, **extra) -> PartitionStatus:
    return PartitionStatus(
        run=RUN, sender="collector", partition=partition, partitions=3, state=state, **extra
    )


def test_the_tally_counts_each_partition_once_and_sums_the_counters():
    tally = PartitionTally(RUN, 3)
    for p in range(3):
        tally.receive(_status(p, "ready"))
        tally.receive(_status(p, "ready"))
    assert tally.all_ready and not tally.all_closed
    tally.receive(_status(0, "progress", persisted=4, expected=10, joined=2, devices=2))
    assert tally.progress() == (4, 10, 2, 2)
    counters = list(range(len(COUNTERS)))
    for p in range(3):
        tally.receive(
            _status(p, "closed", complete=True, detail=COMPLETE_REASON, counters=counters)
        )
    tally.receive(_status(1, "closed", complete=False, detail="late duplicate"))
    assert tally.all_closed and tally.complete
    assert tally.counters() == {name: 3 * i for i, name in enumerate(COUNTERS)}
    assert tally.close_reason() == COMPLETE_REASON


def test_the_tally_names_the_first_incomplete_partition_and_refuses_strangers():
    tally = PartitionTally(RUN, 3)
    tally.receive(_status(2, "closed", complete=False, detail="stage deadline passed"))
    tally.receive(_status(0, "closed", complete=True, detail=COMPLETE_REASON))
    assert tally.close_reason() == "stage deadline passed" and not tally.complete
    with pytest.raises(RemoteProtocolError):
        tally.receive(PartitionStatus(run=RUN, sender="collector", partition=3, partitions=4,
                                      state="ready"))  # fmt: skip
    with pytest.raises(RemoteProtocolError):
        stranger = PartitionStatus(
            run="other", sender="collector", partition=0, partitions=3, state="ready"
        )
        tally.receive(stranger)
    assert tally.refused == 2


def test_the_status_travels_through_the_codec():
    status = _status(1, "closed", counters=[1] * len(COUNTERS), detail="x")
    assert codec.decode(codec.encode(status)) == status
    with pytest.raises(RemoteProtocolError):
        codec.decode(codec.encode(status).replace(b'"partition":1', b'"partition":-1'))


QUICK = (ROOT / "scenarios" / "quickstart.toml").read_text()


def with_partitions(text: str, count: int) -> str:
    assert "[collector]" not in text
    return f"{text}\n[collector]\npartitions = {count}\n"


def test_every_kind_of_scenario_takes_partitions():
    assert parse_scenario(with_partitions(QUICK, 4)).stream_config("r").partitions == 4
    # an external broker with mosquitto-config's files (which carry the partition count)
    authed = parse_scenario(with_partitions(QUICK + "\n[broker]\nauth = true\n", 2))
    assert authed.spec.collector.partitions == 2
    # a secure sum: the coordinator keeps it, the workers the streams (scenarios.coordinator)
    secure = QUICK + "\n[secure_sum]\ndim = 4\nclip = [5.0, 35.0]\n"
    assert parse_scenario(with_partitions(secure, 2)).spec.collector.partitions == 2
    # a GC-DP release: the coordinator releases from the workers' window means
    release = (ROOT / "scenarios" / "occupancy-release.toml").read_text()
    parsed = parse_scenario(with_partitions(release, 2), ROOT / "scenarios" / "x.toml")
    assert parsed.spec.collector.partitions == 2
    # CADR-LDP: the coordinator keeps the θ search and the release, the workers the DSR
    # intake of their devices (scenarios.cadr_partition)
    degrees = (ROOT / "scenarios" / "facebook-degrees.toml").read_text()
    parsed = parse_scenario(with_partitions(degrees, 4), ROOT / "scenarios" / "x.toml")
    assert parsed.spec.collector.partitions == 4
