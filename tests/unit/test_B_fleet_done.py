"""``protocol.fleet_done``: a split run's shards say their devices are done; the collector
side's ``FleetStatus`` decides when the whole fleet has ended (every shard said so), and
refuses every status that is not one of its shards' (wrong topic, run, sender, shard count,
devices of another slice, counts that do not add up), state unchanged. The collector
service routes the statuses to it only on a split run's collector side: in one process a
``fleet_done`` message is refused as before (an unknown sender)."""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.service import CollectorService
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.fleet_done import (
    FLEET_DONE_KIND,
    FleetEnded,
    FleetStatus,
    fleet_done_status,
    shard_name,
)
from ldpfleet.protocol.messages import MAX_LISTED_DEVICES, FleetDone, Stage
from ldpfleet.protocol.stream import StreamConfig

RUN = "bdone"
DEVICES = [f"d{i:02d}" for i in range(7)]  # shard 0 of 2: d00 d02 d04 d06; shard 1: d01 d03 d05


def status(shard: int, shards: int, finished: int, gone=(), stopped=(), run: str = RUN):
    out = fleet_done_status(run, (shard, shards), finished, gone, stopped)
    assert out is not None
    return topics.parse(out.topic), out.message


def test_the_fleet_ends_once_every_shard_said_so():
    machine = FleetStatus(RUN, DEVICES)
    machine.receive(*status(1, 2, 2, gone=["d03"]), now=1.0)
    assert machine.pop_events() == [] and machine.ended is None  # shard 0 not yet
    machine.receive(*status(1, 2, 2, gone=["d03"]), now=2.0)  # QoS 1 redelivery
    assert machine.duplicates == 1 and machine.pop_events() == []
    machine.receive(*status(0, 2, 3, stopped=["d04"]), now=3.0)
    [ended] = machine.pop_events()
    assert isinstance(ended, FleetEnded)
    assert (ended.shards, ended.finished, ended.gone, ended.stopped) == (2, 5, ("d03",), ("d04",))
    assert ended.sentence.startswith("every fleet shard (2) said its devices are done")
    machine.receive(*status(0, 2, 3, stopped=["d04"]), now=4.0)  # decided: once
    assert machine.pop_events() == []
    summary = machine.summary()
    assert summary["said_done"] == {0: True, 1: True} and summary["gone"] == ["d03"]


def test_a_shard_that_never_says_done_leaves_the_stage_to_its_deadlines():
    """Lost or never sent (a shard killed): no decision, nothing to wait on here."""
    machine = FleetStatus(RUN, DEVICES)
    machine.receive(*status(0, 3, 3), now=1.0)
    machine.receive(*status(2, 3, 2), now=1.0)
    assert machine.pop_events() == [] and machine.next_timer() is None
    assert machine.summary()["said_done"] == {0: True, 1: False, 2: True}
    assert FleetStatus(RUN, DEVICES).summary()["said_done"] is None


def _forged(**fields) -> FleetDone:
    base = {"run": RUN, "sender": shard_name(0, 2), "shard": 0, "shards": 2, "finished": 4}
    return FleetDone(**(base | fields))


HOSTILE = {
    "another slice's device": (shard_name(0, 2), _forged(finished=3, gone=["d01"]), "gone"),
    "a stranger": (shard_name(0, 2), _forged(finished=3, stopped=["zz"]), "stopped"),
    "listed twice": (
        shard_name(0, 2),
        _forged(finished=2, gone=["d02"], stopped=["d02"]),
        "stopped",
    ),
    "too many finished": (shard_name(0, 2), _forged(finished=5), "finished"),
    "too few finished": (shard_name(0, 2), _forged(finished=3), "finished"),
    "a device's id as sender": ("d00", _forged(sender="d00"), "sender"),
    "sender is not the topic": (shard_name(0, 2), _forged(sender=shard_name(1, 2)), "sender"),
    "name says another shard": (
        shard_name(1, 2),
        _forged(sender=shard_name(1, 2), shard=0, shards=2),
        "sender",
    ),
    "another run": (shard_name(0, 2), _forged(run="other"), "run"),
    "another message": (
        shard_name(0, 2),
        Stage(run=RUN, sender=shard_name(0, 2), stage="s", state="open"),
        "type",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_status_that_is_not_a_shards_is_refused_and_changes_nothing(case):
    sender, message, field = HOSTILE[case]
    machine = FleetStatus(RUN, DEVICES)
    machine.receive(*status(1, 2, 3), now=1.0)
    topic = topics.parse(topics.up(RUN, sender, FLEET_DONE_KIND))
    with pytest.raises(RemoteProtocolError) as refused:
        machine.receive(topic, message, now=2.0)
    assert refused.value.field == field
    assert machine.heard.keys() == {1} and machine.shards == 2 and machine.pop_events() == []
    machine.receive(*status(0, 2, 4), now=3.0)  # the real shard 0 still ends the fleet
    assert [type(e) for e in machine.pop_events()] == [FleetEnded]


def test_statuses_must_agree_on_the_shard_count():
    machine = FleetStatus(RUN, DEVICES)
    machine.receive(*status(0, 2, 4), now=1.0)
    with pytest.raises(RemoteProtocolError) as refused:
        machine.receive(*status(1, 3, 2), now=2.0)
    assert refused.value.field == "shards"
    assert machine.pop_events() == []


def test_a_device_named_like_a_shard_cannot_speak_for_it():
    """The ACL lets a device publish under its own id: one called ``fleet-0-of-1`` could
    otherwise end the stage for everyone."""
    machine = FleetStatus(RUN, ["fleet-0-of-1", "d1"])
    with pytest.raises(RemoteProtocolError) as refused:
        machine.receive(*status(0, 1, 2), now=1.0)
    assert refused.value.field == "sender"


def test_a_status_on_a_partition_level_or_other_topic_is_refused():
    machine = FleetStatus(RUN, DEVICES)
    _, message = status(0, 2, 4)
    for text in (
        topics.up(RUN, shard_name(0, 2), FLEET_DONE_KIND, partition=1),
        topics.up(RUN, shard_name(0, 2), "hello"),
        topics.ctl(RUN, FLEET_DONE_KIND),
    ):
        with pytest.raises(RemoteProtocolError):
            machine.receive(topics.parse(text), message, now=1.0)
    assert machine.heard == {}


def test_the_status_builder_lists_sorted_and_refuses_bad_parameters():
    out = fleet_done_status(RUN, (1, 2), 1, ["d05", "d03"], ["d01"])
    assert out.topic == f"ldp/{RUN}/dev/fleet-1-of-2/up/fleet_done" and not out.retain
    assert out.message.gone == ["d03", "d05"] and out.message.stopped == ["d01"]
    assert codec.decode(codec.encode(out.message)) == out.message
    too_many = [f"x{i}" for i in range(MAX_LISTED_DEVICES + 1)]
    assert fleet_done_status(RUN, (0, 1), 0, too_many, []) is None
    for shard, finished, field in (((2, 2), 0, "shard"), ((0, 1), -1, "finished")):
        with pytest.raises(ParameterError) as refused:
            fleet_done_status(RUN, shard, finished, [], [])
        assert refused.value.field == field and refused.value.limit
    with pytest.raises(ParameterError) as refused:
        FleetStatus(RUN, [])
    assert refused.value.field == "devices"


def test_the_codec_refuses_a_shard_beyond_the_count():
    payload = codec.encode(_forged()).replace(b'"shard":0', b'"shard":2')
    with pytest.raises(RemoteProtocolError) as refused:
        codec.decode(payload)
    assert refused.value.field == "shard" and refused.value.code == "out_of_range"


def _service(tmp_path, *, split: bool) -> CollectorService:
    config = StreamConfig(
        run=RUN, mechanism="sw", eps=1.0, w=5, steps=10, batch_steps=5, lo=0.0, hi=1.0
    )
    service = CollectorService(MemoryTransport(), config, DEVICES, tmp_path / "c.sqlite")
    service._open_machine(0.0)
    service._wake = asyncio.Event()
    if split:
        service.fleet_status = FleetStatus(RUN, DEVICES)
    return service


def _deliver(service: CollectorService, shard: int, shards: int, finished: int, **lists) -> None:
    out = fleet_done_status(RUN, (shard, shards), finished, lists.get("gone", ()), ())
    service._handle(out.topic, codec.encode(out.message), 1.0)
    service._take_events()


def test_the_split_collector_service_closes_the_stage_when_every_shard_is_done(tmp_path):
    service = _service(tmp_path, split=True)
    _deliver(service, 0, 2, 4)
    assert service.machine.state == "open"
    _deliver(service, 0, 2, 5)  # hostile: rejected like any bad input, counted
    assert service.machine.rejections_by_reason == {"invalid_field": 1}
    _deliver(service, 1, 2, 2, gone=["d03"])
    assert service.machine.state == "closed" and service._closed
    assert service.machine.close_reason.startswith("every fleet shard (2) said")
    assert service.machine.missing() != {}  # nothing was reported: all lost


def test_in_one_process_a_status_is_refused_as_before(tmp_path):
    """No ``fleet_status`` (the one-process runner closes the stage itself): the stream
    machine refuses the message, as on main (an unknown sender)."""
    service = _service(tmp_path, split=False)
    _deliver(service, 0, 1, 7)
    assert service.machine.state == "open"
    assert service.machine.rejected == 1
    assert dict(service.machine.rejections_by_reason) == {"unknown_sender": 1}
    [rejection] = service._rejections  # persisted with the others (the store, the trace)
    assert rejection[3] == FLEET_DONE_KIND and rejection[4] == "sender"
