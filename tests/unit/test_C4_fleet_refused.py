"""``protocol.fleet_done``: a fleet shard that refused the run says so (``FleetRefused``,
its own terms), and the collector side's ``FleetStatus`` counts it as done with its whole
slice stopped, names the first term that differs with both values, and refuses a refusal
that is not one (the collector's own terms, a wrong sender, after parts of a status)."""

from __future__ import annotations

import pytest
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.fleet_done import (
    FleetEnded,
    FleetRefused,
    FleetStatus,
    FleetStatusReader,
    fleet_done_status,
    fleet_done_statuses,
    fleet_refused_status,
)
from ldpfleet.protocol.rendezvous import RunTerms

RUN = "c4ref"
DEVICES = [f"d{i:02d}" for i in range(7)]  # shard 0 of 2: d00 d02 d04 d06; shard 1: d01 d03 d05
OURS = RunTerms("stream", "quickstart", 7, 7, "0123456789abcdef")


def refused(shard: int, shards: int, **change):
    fields = {"kind": "stream", "scenario": "quickstart", "seed": 7, "devices": 7,
              "digest": "0123456789abcdef"} | change  # fmt: skip
    out = fleet_refused_status(RUN, (shard, shards), RunTerms(**fields))
    decoded = codec.decode(codec.encode(out.message))  # what the collector reads
    return topics.parse(out.topic), decoded


def done(shard: int, shards: int, finished: int, **lists):
    out = fleet_done_status(RUN, (shard, shards), finished, lists.get("gone", ()),
                            lists.get("stopped", ()))  # fmt: skip
    return topics.parse(out.topic), out.message


def test_a_refusal_ends_a_one_shard_fleet_naming_the_field_and_both_values():
    machine = FleetStatus(RUN, DEVICES, OURS)
    topic, message = refused(0, 1, seed=2)
    assert isinstance(message, FleetRefused) and topic.kind == "fleet_done"
    machine.receive(topic, message, now=1.0)
    [ended] = machine.pop_events()
    assert isinstance(ended, FleetEnded)
    assert (ended.finished, ended.gone, ended.stopped) == (0, (), tuple(DEVICES))
    assert ended.refusal == ("seed", 7, 2)
    assert ended.sentence == (
        f"fleet shard 0 of 1 refused run {RUN}: the collector runs seed 7, the fleet seed 2; "
        "start both sides with the same scenario and seed"
    )
    summary = machine.summary()
    assert summary["said_done"] == {0: True}
    assert summary["terms_refused"] == {0: {"field": "seed", "collector": 7, "fleet": 2}}
    machine.receive(*refused(0, 1, seed=2), now=2.0)  # QoS 1 redelivery: once
    assert machine.duplicates == 1 and machine.pop_events() == []


@pytest.mark.parametrize(
    ("change", "field", "ours", "theirs"),
    [
        ({"kind": "secure_sum"}, "kind", "stream", "secure_sum"),
        ({"scenario": "other"}, "scenario", "quickstart", "other"),
        ({"devices": 9, "digest": "f" * 16}, "devices", 7, 9),  # the first that differs
        ({"digest": "f" * 16}, "digest", "0123456789abcdef", "f" * 16),
    ],
)
def test_every_term_is_named_the_same_way(change, field, ours, theirs):
    machine = FleetStatus(RUN, DEVICES, OURS)
    machine.receive(*refused(0, 1, **change), now=1.0)
    [ended] = machine.pop_events()
    assert ended.refusal == (field, ours, theirs)
    assert f"the collector runs {field} {ours!r}, the fleet {field} {theirs!r}" in ended.sentence


def test_one_refusing_shard_of_two_waits_for_the_other():
    """Shard 1 runs (the collector's terms) and says done; shard 0 refused: its devices
    count as stopped, and the fleet ends with the refusal's sentence once both spoke."""
    machine = FleetStatus(RUN, DEVICES, OURS)
    machine.receive(*refused(0, 2, seed=3), now=1.0)
    assert machine.pop_events() == [] and machine.summary()["said_done"] == {0: True, 1: False}
    assert machine.refusal_sentence().startswith(f"fleet shard 0 of 2 refused run {RUN}")
    machine.receive(*done(1, 2, 3), now=2.0)
    [ended] = machine.pop_events()
    assert (ended.finished, ended.stopped) == (3, ("d00", "d02", "d04", "d06"))
    assert ended.refusal == ("seed", 7, 3) and "seed 7, the fleet seed 3" in ended.sentence


def test_two_refusing_shards_are_counted_and_the_first_named():
    machine = FleetStatus(RUN, DEVICES, OURS)
    machine.receive(*refused(1, 2, seed=5), now=1.0)
    machine.receive(*refused(0, 2, seed=4), now=1.0)
    [ended] = machine.pop_events()
    assert ended.refusal == ("seed", 7, 4)
    assert ended.sentence.startswith(f"2 of 2 fleet shards (first: shard 0) refused run {RUN}")


def test_what_is_not_a_refusal_is_refused_state_unchanged():
    machine = FleetStatus(RUN, DEVICES, OURS)
    with pytest.raises(RemoteProtocolError) as own:  # nothing differs: nothing to refuse
        machine.receive(*refused(0, 1), now=1.0)
    assert own.value.field == "terms"
    topic, message = refused(0, 2, seed=2)
    with pytest.raises(RemoteProtocolError) as sender:  # on shard 1's topic
        machine.receive(topics.parse(topics.up(RUN, "fleet-1-of-2", "fleet_done")), message, 1.0)
    assert sender.value.field == "sender"
    with pytest.raises(RemoteProtocolError) as device:  # a device of the run is no shard
        machine.receive(topics.parse(topics.up(RUN, "d00", "fleet_done")), message, 1.0)
    assert device.value.field == "sender"
    assert machine.summary()["said_done"] is None and machine.refusals == {}
    parts = fleet_done_statuses(RUN, (0, 2), 0, (), ["d00", "d02", "d04", "d06"], limit=2)
    machine.receive(topics.parse(parts[0].topic), parts[0].message, 1.0)
    with pytest.raises(RemoteProtocolError) as late:  # after part of its done status
        machine.receive(topic, message, 2.0)
    assert late.value.field == "type" and machine.refusals == {}


def test_without_the_collectors_terms_the_refusal_still_ends_the_fleet():
    machine = FleetStatus(RUN, DEVICES)
    machine.receive(*refused(0, 1, seed=2), now=1.0)
    [ended] = machine.pop_events()
    assert ended.refusal[0] == "terms" and "its terms are" in ended.sentence
    assert machine.summary()["terms_refused"][0]["fleet"]["seed"] == 2


def test_the_coordinators_reader_takes_a_refusal_as_a_status():
    reader = FleetStatusReader(RUN, DEVICES, OURS)
    reader.receive(*refused(0, 1, seed=2), now=1.0)
    [ended] = [e for e in reader.pop_events() if isinstance(e, FleetEnded)]
    assert ended.refusal == ("seed", 7, 2) and reader.summary()["refused"] == 0


def test_a_refused_shard_restarted_before_the_fleet_ended_replaces_its_refusal():
    """Helper R2's review: shard 0 refused (seed 2), the user restarted it with the right
    seed while shard 1 ran; its done status was refused ("its earlier parts said 0") and
    the fleet ended with shard 0's delivering devices counted as stopped (terms_differ)."""
    machine = FleetStatus(RUN, DEVICES, OURS)
    machine.receive(*refused(0, 2, seed=2), now=1.0)
    machine.receive(*done(0, 2, 4), now=5.0)  # restarted: all four delivered
    assert machine.pop_events() == [] and machine.duplicates == 0
    machine.receive(*done(1, 2, 3), now=6.0)
    [ended] = machine.pop_events()
    assert (ended.finished, ended.gone, ended.stopped, ended.refusal) == (7, (), (), None)
    assert machine.summary()["terms_refused"] in ({}, None)


def test_a_restarted_shard_in_parts_keeps_the_fleet_open_until_its_last_part():
    machine = FleetStatus(RUN, DEVICES, OURS)
    machine.receive(*refused(0, 2, seed=2), now=1.0)
    first, second = fleet_done_statuses(RUN, (0, 2), 0, (), ["d00", "d02", "d04", "d06"], limit=2)
    machine.receive(topics.parse(first.topic), first.message, now=2.0)
    machine.receive(*done(1, 2, 3), now=3.0)
    assert machine.pop_events() == []  # shard 0's status is not whole yet
    machine.receive(topics.parse(second.topic), second.message, now=4.0)
    [ended] = machine.pop_events()
    assert ended.stopped == ("d00", "d02", "d04", "d06") and ended.refusal is None


def test_once_the_fleet_ended_a_refusal_stands():
    machine = FleetStatus(RUN, DEVICES, OURS)
    machine.receive(*refused(0, 1, seed=2), now=1.0)
    assert machine.pop_events()[0].refusal == ("seed", 7, 2)
    machine.receive(*done(0, 1, 7), now=2.0)
    assert machine.duplicates == 1 and machine.pop_events() == []
    assert machine.summary()["terms_refused"][0]["fleet"] == 2
