"""Tier 1: the run rendezvous (protocol/rendezvous.py) driven directly, with a fake clock,
lost, repeated and reordered announcements, and both start orders."""

from __future__ import annotations

import itertools

import msgspec
import pytest
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError, RemoteProtocolError
from ldpfleet.protocol.rendezvous import (
    Resubscribe,
    RunClosed,
    RunEnded,
    RunHost,
    RunOpen,
    RunOpened,
    RunRefused,
    RunTerms,
    RunWaiter,
    RunWaitTimedOut,
    scenario_digest,
)

RUN = "fbx"
TERMS = RunTerms("cadr", "facebook-degrees", 7, 4039, scenario_digest({"a": 1}))


def announcements(host: RunHost) -> list:
    """What the host published, through the codec (as a subscriber receives it)."""
    out = host.pop_outbound()
    assert all(o.topic == topics.ctl(RUN, "run") for o in out)
    return [codec.decode(codec.encode(o.message)) for o in out]


def waiter(**options) -> RunWaiter:
    machine = RunWaiter(RUN, TERMS, timeout=60.0, **options)
    machine.start(0.0)
    return machine


def test_collector_first_then_fleet_meets_the_retained_announcement():
    host = RunHost(RUN, TERMS, epoch=100)
    host.open()
    retained = announcements(host)[-1]
    fleet = waiter()
    fleet.receive(retained, 0.5)  # delivered on subscribe
    assert fleet.pop_events() == [RunOpened(100)]
    assert fleet.state == "open" and fleet.next_timer() is None


def test_fleet_first_waits_and_resubscribes_until_the_collector_comes():
    fleet = waiter(resubscribe_every=5.0)
    assert fleet.next_timer() == 5.0
    fleet.handle_timer(5.0)
    assert fleet.pop_events() == [Resubscribe(topics.ctl(RUN, "run"))]
    assert fleet.next_timer() == 10.0
    fleet.handle_timer(7.0)  # early wake-up: nothing
    assert fleet.pop_events() == []
    host = RunHost(RUN, TERMS, epoch=1)
    host.open()
    fleet.receive(announcements(host)[0], 8.0)
    assert fleet.pop_events() == [RunOpened(1)]


def test_no_collector_gives_one_sentence_at_the_deadline_never_earlier():
    fleet = waiter()
    for now in range(5, 60, 5):
        fleet.handle_timer(float(now))
        assert fleet.state == "waiting"
    fleet.pop_events()
    fleet.handle_timer(60.0)
    assert fleet.pop_events() == [RunWaitTimedOut("no collector announced run fbx within 60 s")]
    assert fleet.state == "timed_out" and fleet.next_timer() is None
    host = RunHost(RUN, TERMS, epoch=1)
    host.open()
    fleet.receive(announcements(host)[0], 61.0)  # too late: the decision stands
    assert fleet.pop_events() == [] and fleet.state == "timed_out"


@pytest.mark.parametrize(
    ("field", "value"),
    [("kind", "stream"), ("scenario", "other"), ("seed", 8), ("devices", 10), ("digest", "b" * 32)],
)
def test_other_terms_refuse_the_run_naming_the_field_and_both_values(field, value):
    theirs = RunTerms(**{**TERMS.__dict__, field: value})
    host = RunHost(RUN, theirs, epoch=3)
    host.open()
    fleet = waiter()
    fleet.receive(announcements(host)[0], 1.0)
    (event,) = fleet.pop_events()
    assert isinstance(event, RunRefused) and event.field == field
    assert event.theirs == value and event.ours == getattr(TERMS, field)
    assert f"runs {field} {value!r}" in event.sentence
    assert f"this fleet {field} {getattr(TERMS, field)!r}" in event.sentence
    assert fleet.state == "refused" and fleet.next_timer() is None


def test_a_stale_closed_run_of_an_earlier_collector_does_not_end_the_wait():
    old = RunHost(RUN, TERMS, epoch=10)
    old.open()
    old.close("done")
    stale = announcements(old)[-1]
    assert isinstance(stale, RunClosed)
    fleet = waiter()
    fleet.receive(stale, 0.1)  # the retained message left by the earlier run
    assert fleet.pop_events() == [] and fleet.state == "waiting"
    new = RunHost(RUN, TERMS, epoch=11)
    new.open()
    fleet.receive(announcements(new)[0], 2.0)
    assert fleet.pop_events() == [RunOpened(11)]


def test_a_run_closed_while_waiting_says_so_at_the_deadline():
    host = RunHost(RUN, TERMS, epoch=4)
    host.open()
    host.close()
    _, closed = announcements(host)  # the open was lost, the close arrives
    fleet = waiter()
    fleet.receive(closed, 1.0)
    fleet.handle_timer(60.0)
    assert fleet.pop_events()[-1] == RunWaitTimedOut(
        "run fbx was closed by its collector and no collector announced it again within 60 s"
    )


def test_the_end_of_the_opening_epoch_ends_the_run_and_older_messages_are_ignored():
    old = RunHost(RUN, TERMS, epoch=1)
    old.open()
    old.close()
    host = RunHost(RUN, TERMS, epoch=2)
    host.open()
    host.close("every device delivered")
    old_open, old_closed = announcements(old)
    new_open, new_closed = announcements(host)
    fleet = waiter()
    for message in (new_open, old_open, old_closed):  # reordered: the old ones come late
        fleet.receive(message, 1.0)
    assert fleet.pop_events() == [RunOpened(2)] and fleet.state == "open"
    fleet.receive(new_closed, 2.0)
    assert fleet.pop_events() == [RunEnded(2, "every device delivered")]


def test_every_order_of_duplicated_and_reordered_announcements_opens_once_never_on_a_stale_epoch():
    """Whatever the order (one message duplicated), a waiter opens at most once, never on an
    announcement older than one it has seen, and opens whenever the current collector's
    announcement reaches it while it waits."""
    old = RunHost(RUN, TERMS, epoch=5)
    old.open()
    old.close()
    current = RunHost(RUN, TERMS, epoch=6)
    current.open()
    messages = [*announcements(old), *announcements(current)]
    for order in itertools.permutations([*messages, messages[-1]]):
        fleet = waiter()
        newest_seen = -1
        for message in order:
            fleet.receive(message, 1.0)
            opened = [e for e in fleet.pop_events() if isinstance(e, RunOpened)]
            if opened:
                assert opened == [RunOpened(message.epoch)] and message.epoch >= newest_seen
            newest_seen = max(newest_seen, message.epoch)
        # opened on the old collector's run, that run may then have ended; never refused
        assert (fleet.state, fleet.epoch) in {("open", 6), ("open", 5), ("ended", 5)}, order


def test_messages_of_other_runs_or_senders_are_ignored():
    fleet = waiter()
    other_run = RunHost("other", TERMS, epoch=1)
    other_run.open()
    fleet.receive(other_run.pop_outbound()[0].message, 1.0)
    forged = RunOpen(
        run=RUN, sender="d0001", epoch=9, kind="cadr", scenario="facebook-degrees",
        digest=TERMS.digest, seed=7, devices=4039,
    )  # fmt: skip
    fleet.receive(forged, 1.0)
    assert fleet.pop_events() == [] and fleet.state == "waiting"


def test_misuse_is_a_local_error():
    host = RunHost(RUN, TERMS, epoch=1)
    host.open()
    with pytest.raises(LocalProtocolError):
        host.open()
    host.close()
    host.close()  # closing twice publishes once
    assert len(announcements(host)) == 2
    fleet = waiter()
    with pytest.raises(LocalProtocolError):
        fleet.start(1.0)
    with pytest.raises(ParameterError, match="timeout"):
        RunWaiter(RUN, TERMS, timeout=0)


def test_the_digest_is_stable_and_sensitive():
    assert scenario_digest({"b": [1, 2], "a": 1}) == scenario_digest({"a": 1, "b": [1, 2]})
    assert scenario_digest({"a": 1}) != scenario_digest({"a": 2})


def test_both_announcements_are_sent_retained():
    host = RunHost(RUN, TERMS, epoch=3)
    host.open()
    host.close("done")
    out = host.pop_outbound()
    assert [(o.topic, o.retain) for o in out] == [(topics.ctl(RUN, "run"), True)] * 2
    assert [type(o.message) for o in out] == [RunOpen, RunClosed]


def test_repeats_are_off_by_default():
    host = RunHost(RUN, TERMS, epoch=3)
    host.open(0.0)
    announcements(host)
    assert host.next_timer() is None
    host.handle_timer(1e6)
    assert host.pop_outbound() == [] and host.repeats == 0


def test_repeated_announcements_reach_a_fleet_that_missed_the_retained_one():
    """A clustered broker that keeps the retained announcement on another node: the fleet
    subscribes, gets nothing retained, and opens on the next repeat; repeats end with the
    run, and a fleet already open ignores them."""
    host = RunHost(RUN, TERMS, epoch=5, repeat_every=2.0)
    host.open(10.0)
    first = announcements(host)
    assert [type(m) for m in first] == [RunOpen] and host.next_timer() == 12.0
    fleet = waiter()  # subscribed at 0 on a node without the retained message
    host.handle_timer(11.9)  # not due
    assert host.pop_outbound() == []
    host.handle_timer(12.0)
    repeat = host.pop_outbound()
    assert [(o.topic, o.retain) for o in repeat] == [(topics.ctl(RUN, "run"), True)]
    assert codec.encode(repeat[0].message) == codec.encode(first[0])  # the same announcement
    assert host.next_timer() == 14.0 and host.repeats == 1
    fleet.receive(codec.decode(codec.encode(repeat[0].message)), 12.1)
    assert fleet.pop_events() == [RunOpened(5)]
    host.handle_timer(14.0)
    fleet.receive(announcements(host)[0], 14.1)  # already open: ignored
    assert fleet.pop_events() == [] and fleet.state == "open"
    host.close("done")
    assert [type(m) for m in announcements(host)] == [RunClosed]
    assert host.next_timer() is None
    host.handle_timer(100.0)
    assert host.pop_outbound() == [] and host.repeats == 2


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "2"])
def test_a_bad_repeat_interval_is_refused_by_name(bad):
    with pytest.raises(ParameterError) as error:
        RunHost(RUN, TERMS, epoch=1, repeat_every=bad)
    assert error.value.field == "repeat_every" and repr(bad) in str(error.value)


def test_only_another_schema_version_refuses_the_run_when_undecodable():
    fleet = waiter()
    fleet.receive_undecodable(RemoteProtocolError("bad", field="payload", code="schema"), 1.0)
    assert fleet.pop_events() == [] and fleet.state == "waiting"
    other = RemoteProtocolError("schema version 2 is not supported", field="v",
                                code="unsupported_version")  # fmt: skip
    fleet.receive_undecodable(other, 2.0)
    (event,) = fleet.pop_events()
    assert isinstance(event, RunRefused) and event.field == "schema_version"
    assert fleet.state == "refused" and fleet.next_timer() is None
    fleet.receive_undecodable(other, 3.0)  # decided: nothing more
    assert fleet.pop_events() == []


def test_the_codec_names_another_version_even_when_its_fields_differ():
    host = RunHost(RUN, TERMS, epoch=1)
    host.open()
    payload = codec.encode(host.pop_outbound()[0].message)
    future = {**msgspec.json.decode(payload), "v": 3, "new_field": 1}
    with pytest.raises(RemoteProtocolError) as raised:
        codec.decode(msgspec.json.encode(future))
    assert raised.value.code == "unsupported_version" and raised.value.field == "v"
    same = {**msgspec.json.decode(payload), "new_field": 1}  # same version: the field's error
    with pytest.raises(RemoteProtocolError) as raised:
        codec.decode(msgspec.json.encode(same))
    assert raised.value.code == "schema"


def test_the_closed_announcement_can_be_said_again_after_a_lost_connection():
    """``resend_close`` (collector.announce.say_run_closed's new connection): nothing
    before ``close``; after it the same retained ``RunClosed``, as often as asked."""
    host = RunHost(RUN, TERMS, epoch=5)
    host.resend_close()
    assert host.pop_outbound() == []
    host.open(0.0)
    host.pop_outbound()
    host.close("done")
    [first] = host.pop_outbound()
    assert first.retain and isinstance(first.message, RunClosed)
    host.close("again")  # a second close publishes nothing ...
    assert host.pop_outbound() == []
    host.resend_close()  # ... resend_close publishes the first one again
    [again] = host.pop_outbound()
    assert again == first and again.message.reason == "done"
