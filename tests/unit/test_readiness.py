"""Tier 1: the readiness barrier (``protocol.readiness``) and the silence deadline
(``protocol.liveness``) driven directly, with a fake clock — lost, duplicated, reordered,
foreign and malformed joins."""

from __future__ import annotations

import random

import pytest
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError
from ldpfleet.protocol.liveness import CollectorSilent, SilenceWatch
from ldpfleet.protocol.readiness import (
    AllReady,
    DeviceReady,
    JoinDeadlinePassed,
    ReadinessBarrier,
    ready_announcement,
)
from ldpfleet.protocol.rendezvous import RunClosed

RUN = "fbx"
DEVICES = [f"n{i:04d}" for i in range(6)]


def join(barrier: ReadinessBarrier, device: str, now: float = 1.0, *, run: str = RUN) -> None:
    """Deliver a device's announcement through the codec, as the pump does."""
    out = ready_announcement(run, device)
    barrier.receive(topics.parse(out.topic), codec.decode(codec.encode(out.message)), now)


def started(timeout: float = 60.0) -> ReadinessBarrier:
    barrier = ReadinessBarrier(RUN, DEVICES, timeout=timeout)
    barrier.start(0.0)
    return barrier


def test_every_device_joining_in_any_order_once_makes_the_barrier_ready():
    for seed in range(20):
        barrier = started()
        order = DEVICES * 2  # every join duplicated (QoS 1 redelivery)
        random.Random(seed).shuffle(order)
        events, seen, repeats = [], set(), 0
        for device in order:
            if barrier.state == "waiting":
                repeats += device in seen
                seen.add(device)
            join(barrier, device)
            events += barrier.pop_events()
        assert events == [AllReady(len(DEVICES))]  # once, whatever came after
        assert barrier.state == "ready" and barrier.next_timer() is None
        assert barrier.duplicates == repeats and barrier.refused == 0


def test_a_lost_join_stops_the_run_at_the_deadline_naming_how_many():
    barrier = started(timeout=60)
    for device in DEVICES[:-2]:  # the last two announcements are lost
        join(barrier, device)
    assert barrier.next_timer() == 60.0
    barrier.handle_timer(59.9)
    assert barrier.pop_events() == []
    barrier.handle_timer(60.0)
    (event,) = barrier.pop_events()
    assert isinstance(event, JoinDeadlinePassed)
    assert event.missing == ("n0004", "n0005")
    assert event.sentence == "2 of 6 devices did not join run fbx within 60 s (n0004, n0005)"
    join(barrier, "n0004", 61.0)  # too late: decided
    assert barrier.pop_events() == [] and barrier.state == "expired"


def test_unknown_senders_forged_topics_other_runs_and_other_types_are_refused():
    barrier = started()
    join(barrier, "n9999")  # not a device of this run
    join(barrier, DEVICES[0], run="other")  # another run's topic and message
    forged = DeviceReady(run=RUN, sender=DEVICES[1])  # published on n0002's topic
    barrier.receive(topics.parse(topics.up(RUN, DEVICES[2], "ready")), forged, 1.0)
    wrong_kind = topics.parse(topics.up(RUN, DEVICES[3], "dsr"))
    barrier.receive(wrong_kind, DeviceReady(run=RUN, sender=DEVICES[3]), 1.0)
    closed = RunClosed(run=RUN, sender=DEVICES[4], epoch=1)
    barrier.receive(topics.parse(topics.up(RUN, DEVICES[4], "ready")), closed, 1.0)
    assert barrier.refused == 5 and barrier.joined == set()
    for device in DEVICES:
        join(barrier, device)
    assert barrier.pop_events() == [AllReady(6)]


def test_the_barrier_refuses_misuse():
    with pytest.raises(ParameterError):
        ReadinessBarrier(RUN, DEVICES, timeout=0)
    with pytest.raises(ParameterError):
        ReadinessBarrier(RUN, [], timeout=1)
    barrier = ReadinessBarrier(RUN, DEVICES, timeout=1)
    with pytest.raises(LocalProtocolError):
        join(barrier, DEVICES[0])  # before start
    barrier.start(0.0)
    with pytest.raises(LocalProtocolError):
        barrier.start(0.0)


def test_silence_after_the_first_instruction_ends_the_watch_after_timeout():
    watch = SilenceWatch(RUN, 4.0, first_timeout=100.0)
    watch.start(0.0)
    assert watch.next_timer() == 100.0
    watch.heard(10.0)
    assert watch.next_timer() == 14.0
    watch.heard(13.0)
    watch.handle_timer(16.9)
    assert watch.pop_events() == []
    watch.handle_timer(17.0)
    assert watch.pop_events() == [
        CollectorSilent(
            "the collector of run fbx sent nothing for 4 s (it stopped or is unreachable)", True
        )
    ]
    watch.heard(18.0)  # decided
    assert watch.next_timer() is None


def test_a_run_that_never_starts_and_a_stopped_watch():
    watch = SilenceWatch(RUN, 4.0, first_timeout=70.0)
    watch.start(0.0)
    watch.handle_timer(70.0)
    (event,) = watch.pop_events()
    assert not event.started and "did not start the run within 70 s" in event.sentence
    done = SilenceWatch(RUN, 4.0)
    done.start(0.0)
    done.stop()
    done.handle_timer(1e9)
    assert done.pop_events() == [] and done.next_timer() is None
    with pytest.raises(ParameterError):
        SilenceWatch(RUN, 0.0)
