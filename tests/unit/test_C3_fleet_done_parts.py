"""A fleet shard's "my devices are done" status in parts, and a partitioned run's
coordinator reading the statuses (helper C, 2026-12-07; ``protocol.fleet_done``,
``protocol.partition_coordinator``).

A shard with more gone or stopped devices than one ``FleetDone`` lists sends ``J`` parts;
``FleetStatus`` takes the shard as done once every part arrived, with the same checks as for
one message (slice of k, sender not a device, repeats counted once, a refused part changes
nothing) plus the parts' own (same ``finished`` and ``J``, no device in two parts, the lists
add up once the last part is in). The coordinator's ``StreamCoordinator`` with a
``FleetStatusReader`` says ``stream closed`` with the reader's sentence when every shard
said done and a device did not finish; refused statuses are counted and noticed.
"""

from __future__ import annotations

import pytest
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Outbound
from ldpfleet.protocol.fleet_done import (
    FLEET_DONE_KIND,
    FleetEnded,
    FleetStatus,
    FleetStatusReader,
    fleet_done_status,
    fleet_done_statuses,
    shard_name,
)
from ldpfleet.protocol.messages import (
    MAX_FLEET_DONE_PARTS,
    MAX_LISTED_DEVICES,
    FleetDone,
    Reject,
    Stage,
)
from ldpfleet.protocol.partition import COMPLETE_REASON, COUNTERS, PartitionStatus
from ldpfleet.protocol.partition_coordinator import StreamCoordinator, WorkersReady
from ldpfleet.protocol.stream import STAGE

RUN = "cparts"
DEVICES = [f"d{i:02d}" for i in range(11)]  # shard 0 of 2: d00 d02 .. d10 (6); shard 1: 5
SHARD0 = DEVICES[0::2]


def _in(outbound: Outbound) -> tuple[topics.Topic, FleetDone]:
    return topics.parse(outbound.topic), outbound.message


def _parts(shard=(0, 2), finished=1, gone=SHARD0[:3], stopped=SHARD0[3:5], limit=1):
    return [_in(o) for o in fleet_done_statuses(RUN, shard, finished, gone, stopped, limit=limit)]


# ---- the builder --------------------------------------------------------------------------


def test_a_long_status_is_split_into_parts_each_listing_its_share():
    gone, stopped = ["d10", "d00", "d04", "d02", "d06"], ["d08"]
    parts = fleet_done_statuses(RUN, (0, 2), 0, gone, stopped, limit=2)
    assert [(o.message.part, o.message.parts) for o in parts] == [(0, 3), (1, 3), (2, 3)]
    assert [o.message.gone for o in parts] == [["d00", "d02"], ["d04", "d06"], ["d10"]]
    assert [o.message.stopped for o in parts] == [["d08"], [], []]
    assert {o.topic for o in parts} == {topics.up(RUN, shard_name(0, 2), FLEET_DONE_KIND)}
    assert all(o.message.finished == 0 and not o.retain for o in parts)
    for o in parts:
        assert codec.decode(codec.encode(o.message)) == o.message
    # what fits is one part, the one-message status
    [whole] = fleet_done_statuses(RUN, (0, 2), 0, gone, stopped)
    assert whole == fleet_done_status(RUN, (0, 2), 0, gone, stopped)
    assert (whole.message.part, whole.message.parts) == (0, 1)


def test_the_builder_refuses_a_bad_limit_or_too_many_parts():
    for limit in (0, MAX_LISTED_DEVICES + 1, 1.5):
        with pytest.raises(ParameterError) as refused:
            fleet_done_statuses(RUN, (0, 1), 0, [], [], limit=limit)
        assert refused.value.field == "limit" and refused.value.limit
    many = [f"x{i}" for i in range(MAX_FLEET_DONE_PARTS + 1)]
    with pytest.raises(ParameterError) as refused:
        fleet_done_statuses(RUN, (0, 1), 0, many, [], limit=1)
    assert refused.value.field == "limit" and str(MAX_FLEET_DONE_PARTS) in refused.value.limit
    assert len(fleet_done_statuses(RUN, (0, 1), 0, many[:-1], [], limit=1)) == MAX_FLEET_DONE_PARTS


def test_the_shape_before_parts_decodes_as_one_part_and_the_codec_checks_the_part():
    """A payload without ``part`` and ``parts`` (helper B's shape, a shard of the version
    before) is a whole status."""
    message = FleetDone(run=RUN, sender=shard_name(0, 1), shard=0, shards=1, finished=11)
    payload = codec.encode(message)
    assert payload.endswith(b',"part":0,"parts":1}')
    before = payload.replace(b',"part":0,"parts":1}', b"}")
    assert codec.decode(before) == message
    two = FleetDone(run=RUN, sender=shard_name(0, 1), shard=0, shards=1, finished=11, parts=2)
    beyond = codec.encode(two).replace(b'"parts":2', b'"parts":2,"part":2')
    with pytest.raises(RemoteProtocolError) as refused:
        codec.decode(beyond)
    assert refused.value.field == "part"


# ---- FleetStatus with parts ---------------------------------------------------------------


def test_a_shard_is_done_once_every_part_arrived_in_any_order():
    machine = FleetStatus(RUN, DEVICES)
    machine.receive(*status_whole(1, finished=5), now=0.0)
    first, second, third = _parts()
    machine.receive(*third, now=1.0)
    machine.receive(*first, now=2.0)
    assert machine.pop_events() == [] and machine.ended is None
    assert machine.summary()["said_done"] == {0: False, 1: True}
    assert machine.summary()["parts_missing"] == {0: 1}
    machine.receive(*first, now=2.5)  # QoS 1 redelivery of a part: counted once
    assert machine.duplicates == 1 and machine.pop_events() == []
    machine.receive(*second, now=3.0)
    [ended] = machine.pop_events()
    assert isinstance(ended, FleetEnded)
    assert ended.gone == tuple(SHARD0[:3]) and ended.stopped == tuple(SHARD0[3:5])
    assert ended.finished == 1 + 5 and ended.sentence.startswith("every fleet shard (2) said")
    machine.receive(*second, now=4.0)  # after the end: a repeat, nothing more
    assert machine.duplicates == 2 and machine.pop_events() == []
    assert machine.summary()["parts_missing"] == {}


def status_whole(shard: int, finished: int, gone=(), stopped=()):
    return _in(fleet_done_status(RUN, (shard, 2), finished, gone, stopped))


def _part(part: int, parts: int = 3, finished: int = 1, gone=(), stopped=(), **fields):
    name = shard_name(0, 2)
    message = FleetDone(
        run=RUN, sender=name, shard=0, shards=2, finished=finished, gone=list(gone),
        stopped=list(stopped), part=part, parts=parts, **fields,
    )  # fmt: skip
    return topics.parse(topics.up(RUN, name, FLEET_DONE_KIND)), message


HOSTILE_PARTS = {
    # another part count than part 0 said
    "parts disagree": (_part(1, parts=2, gone=["d04"]), "parts"),
    # another finished count than part 0 said
    "finished disagrees": (_part(1, finished=2, gone=["d04"]), "finished"),
    # a device part 0 listed already (the field names the list that repeats it)
    "listed in two parts": (_part(1, gone=["d00"]), "gone"),
    "listed in two parts, as stopped": (_part(1, stopped=["d06"]), "stopped"),
    # a device of shard 1's slice
    "another slice's device": (_part(1, gone=["d01"]), "gone"),
    # more devices than the slice holds, before the last part
    "outgrows the slice": (_part(1, stopped=["d02", "d04", "d08", "d10"]), "finished"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_PARTS))
def test_a_part_that_does_not_fit_the_others_is_refused_and_changes_nothing(case):
    (topic, message), field = HOSTILE_PARTS[case]
    machine = FleetStatus(RUN, DEVICES)
    machine.receive(*status_whole(1, finished=5), now=0.0)
    first, second, third = _parts()  # gone d00 | d02 | d04, stopped d06 | d08 | -
    machine.receive(*first, now=1.0)
    with pytest.raises(RemoteProtocolError) as refused:
        machine.receive(topic, message, now=2.0)
    assert refused.value.field == field
    assert machine.summary()["parts_missing"] == {0: 2} and machine.duplicates == 0
    machine.receive(*second, now=3.0)  # the real parts still end the fleet
    machine.receive(*third, now=4.0)
    assert [type(e) for e in machine.pop_events()] == [FleetEnded]


def test_a_last_part_that_does_not_add_up_is_refused():
    machine = FleetStatus(RUN, DEVICES)
    machine.receive(*_part(0, parts=2, finished=1, gone=["d00", "d02"]), now=0.0)
    with pytest.raises(RemoteProtocolError) as refused:  # 1 + 3 listed is not 6
        machine.receive(*_part(1, parts=2, finished=1, gone=["d04"]), now=1.0)
    assert refused.value.field == "finished"
    assert machine.summary()["parts_missing"] == {0: 1} and 0 not in machine.heard
    machine.receive(*_part(1, parts=2, finished=1, gone=["d04"], stopped=["d06", "d08"]), 2.0)
    assert 0 in machine.heard and machine.heard[0].gone == ("d00", "d02", "d04")


# ---- the partitioned run's coordinator ----------------------------------------------------


def _status(partition: int, state: str, **fields) -> PartitionStatus:
    return PartitionStatus(run=RUN, sender=topics.COLLECTOR_ID, partition=partition,
                           partitions=2, state=state, **fields)  # fmt: skip


def _closed(partition: int, complete: bool, detail: str) -> PartitionStatus:
    return _status(partition, "closed", complete=complete, detail=detail,
                   counters=[1] * len(COUNTERS), joined=1)  # fmt: skip


def _coordinator(*, opened: bool = True) -> StreamCoordinator:
    machine = StreamCoordinator(RUN, 2, fleet=FleetStatusReader(RUN, DEVICES))
    machine.start(0.0)
    machine.receive(_status(0, "ready"), 0.1)
    machine.receive(_status(1, "ready"), 0.2)
    assert machine.pop_events() == [WorkersReady()]
    if opened:
        machine.open(0.3)
        assert [m.state for m in _stages(machine)] == ["open"]
    return machine


def _stages(machine) -> list[Stage]:
    return [o.message for o in machine.pop_outbound() if isinstance(o.message, Stage)]


def test_the_coordinator_closes_every_workers_stage_when_the_fleet_ended_short():
    machine = _coordinator()
    machine.fleet_done(*status_whole(1, finished=5), now=1.0)
    assert _stages(machine) == [] and machine.pop_events() == []
    first, second, third = _parts()
    for part in (first, second):
        machine.fleet_done(*part, now=2.0)
    assert _stages(machine) == []
    machine.fleet_done(*third, now=3.0)
    [ended] = machine.pop_events()
    assert isinstance(ended, FleetEnded)
    [closing] = _stages(machine)
    assert (closing.stage, closing.state, closing.detail) == (STAGE, "closed", ended.sentence)
    machine.fleet_done(*third, now=3.5)  # a repeat: nothing more
    assert _stages(machine) == [] and machine.pop_events() == []
    machine.receive(_closed(0, True, COMPLETE_REASON), 4.0)
    machine.receive(_closed(1, False, ended.sentence), 4.1)
    assert machine.done and _stages(machine) == []  # no second ``closed``
    assert machine.tally.close_reason() == ended.sentence


def test_a_fleet_whose_every_device_finished_orders_nothing():
    """The workers complete on their own; the tally's reason closes the stage, whichever
    status came first."""
    machine = _coordinator()
    machine.fleet_done(*status_whole(0, finished=6), now=1.0)
    machine.fleet_done(*status_whole(1, finished=5), now=1.1)
    assert [type(e) for e in machine.pop_events()] == [FleetEnded] and _stages(machine) == []
    machine.receive(_closed(0, True, COMPLETE_REASON), 2.0)
    machine.receive(_closed(1, True, COMPLETE_REASON), 2.1)
    assert [(s.state, s.detail) for s in _stages(machine)] == [("closed", COMPLETE_REASON)]


def test_a_fleet_that_ended_before_the_opening_closes_the_stage_as_it_opens():
    machine = _coordinator(opened=False)
    machine.fleet_done(*status_whole(0, finished=5, gone=["d00"]), now=0.4)
    machine.fleet_done(*status_whole(1, finished=5), now=0.5)
    assert [type(e) for e in machine.pop_events()] == [FleetEnded]
    assert _stages(machine) == []  # not open yet: nothing to close
    machine.open(0.6)
    assert [s.state for s in _stages(machine)] == ["open", "closed"]


def test_the_coordinator_refuses_a_bad_status_counts_and_notices_it():
    machine = _coordinator()
    machine.fleet_done(*status_whole(0, finished=7), now=1.0)  # 7 of a 6-device slice
    machine.refuse_fleet_done(
        topics.up(RUN, shard_name(0, 2), FLEET_DONE_KIND), RemoteProtocolError("x", field="payload")
    )
    notices = [o for o in machine.pop_outbound() if isinstance(o.message, Reject)]
    assert [n.topic for n in notices] == [topics.svc(RUN, topics.COLLECTOR_ID, "reject")] * 2
    assert [n.message.code for n in notices] == ["invalid_field", "undecodable"]
    summary = machine.fleet.summary()
    assert summary["refused"] == 2 and summary["said_done"] is None
    assert summary["refused_by_reason"] == {"invalid_field": 1, "undecodable": 1}


def test_without_a_reader_the_coordinator_ignores_statuses():
    machine = StreamCoordinator(RUN, 2)
    machine.fleet_done(*status_whole(0, finished=6), now=1.0)
    machine.refuse_fleet_done("t", RemoteProtocolError("x", field="payload"))
    assert machine.pop_outbound() == [] and machine.pop_events() == []


def test_a_worker_restarted_after_the_fleet_close_is_told_closed_again():
    """Helper R's review: after the fleet's close order a restarted worker's "ready" made
    the next check say "open" to every worker, and no "closed" followed (the restarted
    worker then waited for its own stage_timeout)."""
    machine = _coordinator()
    machine.fleet_done(*status_whole(1, finished=5), now=1.0)
    for part in _parts():
        machine.fleet_done(*part, now=2.0)
    machine.pop_events()
    assert [s.state for s in _stages(machine)] == ["closed"]
    machine.receive(_status(0, "ready"), 3.0)  # worker 0 restarted
    machine.handle_timer(10.0)  # the next check
    said = [s.state for s in _stages(machine)]
    assert said[-1:] in ([], ["closed"]), said  # the last word stays "closed"
