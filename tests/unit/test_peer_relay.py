"""The batching relay's superstep barrier (``protocol.peer_relay``), driven directly."""

from __future__ import annotations

import math

import msgspec
import pytest
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError
from ldpfleet.protocol.peer_relay import (
    RELAY_ID,
    PeerBatch,
    PeerDelivery,
    PeerItem,
    PeerRelay,
    PeerStep,
    PhaseAborted,
    PhaseFinished,
    PhaseReport,
    RelayPhase,
)
from msgspec import UNSET

RUN = "r1"
DEVICES = ("a", "b", "c")


def batch(sender, step, items=(), *, round=0, phase="lpea", done=False, added=0):
    message = PeerBatch(
        run=RUN,
        sender=sender,
        phase=phase,
        round=round,
        step=step,
        items=[PeerItem(*item) for item in items],
        done=done,
        added=added,
    )
    return topics.parse(topics.up(RUN, sender, "peer_batch")), message


def deliveries(relay):
    out = {}
    for item in relay.pop_outbound():
        if isinstance(item.message, PeerDelivery):
            out[topics.parse(item.topic).recipient] = item.message
    return out


def test_a_step_closes_only_when_every_expected_batch_is_in_and_regroups_by_recipient():
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase("lpea", 0.0, until_quiet=True, max_rounds=5)
    (start,) = relay.pop_outbound()
    assert start.topic == topics.ctl(RUN, "peer_step") and start.message.round == 0
    relay.receive(*batch("c", 0, [("a", "req", 0)]), 0.1)
    relay.receive(*batch("a", 0, [("c", "req", 0), ("b", "req", 0)]), 0.1)
    assert relay.pop_outbound() == []  # b has not sent its batch yet
    relay.receive(*batch("b", 0, [("a", "req", 0)]), 0.1)
    out = deliveries(relay)
    assert set(out) == {"a", "b", "c"}
    # items name the sender now, in sender order
    assert [(i.peer, i.kind) for i in out["a"].items] == [("b", "req"), ("c", "req")]
    assert out["a"].step == 1 and out["b"].items == [PeerItem("a", "req", 0)]
    # step 1 expects exactly the recipients; a quiet step ends the round
    for device in ("a", "b"):
        relay.receive(*batch(device, 1, done=True), 0.2)
    relay.receive(*batch("c", 1, done=True, added=0), 0.2)
    ends = relay.pop_outbound()
    assert isinstance(ends[0].message, PeerStep) and ends[0].message.finished
    assert isinstance(ends[1].message, PhaseReport) and ends[1].message.ok
    (finished,) = relay.pop_events()
    assert finished == PhaseFinished("lpea", 1, (0,), 2, 4, 6)


def test_rounds_repeat_until_one_adds_nothing():
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase("lpea", 0.0, until_quiet=True, max_rounds=5)
    relay.pop_outbound()
    for r, added in ((0, 2), (1, 0)):
        for device in DEVICES:
            relay.receive(*batch(device, 0, round=r, done=True, added=added), 0.0)
        steps = [o.message for o in relay.pop_outbound() if isinstance(o.message, PeerStep)]
        assert steps[-1].round == r + 1
    assert steps[-1].finished
    assert relay.pop_events()[0].added_per_round == (6, 0)


@pytest.mark.parametrize(
    ("sender", "step", "items", "field"),
    [
        ("a", 1, (), "step"),  # not the current step
        ("a", 0, [("a", "req", 0)], "items[0]"),  # to itself
        ("a", 0, [("zz", "req", 0)], "items[0]"),  # to a stranger
    ],
)
def test_bad_batches_are_rejected_counted_and_change_nothing(sender, step, items, field):
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase("lpea", 0.0)
    relay.pop_outbound()
    relay.receive(*batch(sender, step, items), 0.0)
    assert relay.rejected == 1 and relay.rejections_by_field[field] == 1
    (reject,) = relay.pop_outbound()
    assert reject.topic == topics.svc(RUN, RELAY_ID, "reject")
    # the honest batch still goes through afterwards
    for device in DEVICES:
        relay.receive(*batch(device, 0, done=True), 0.0)
    assert isinstance(relay.pop_events()[-1], PhaseFinished)


def test_second_batch_wrong_phase_and_wrong_round_are_rejected():
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase("lpea", 0.0)
    relay.receive(*batch("a", 0), 0.0)
    relay.receive(*batch("a", 0), 0.0)
    relay.receive(*batch("b", 0, phase="ndoe"), 0.0)
    relay.receive(*batch("b", 0, round=3), 0.0)
    assert dict(relay.rejections_by_field) == {"step": 1, "phase": 1, "round": 1}


def test_a_missing_batch_aborts_the_phase_at_the_deadline():
    relay = PeerRelay(RUN, DEVICES, step_timeout=5.0)
    relay.start_phase("ndoe", 0.0)
    relay.receive(*batch("a", 0, phase="ndoe", done=True), 1.0)
    assert relay.next_timer() == 5.0
    relay.handle_timer(4.9)
    assert relay.pop_events() == []
    relay.handle_timer(5.0)
    (aborted,) = relay.pop_events()
    assert isinstance(aborted, PhaseAborted) and aborted.missing == ("b", "c")
    report = [o.message for o in relay.pop_outbound() if isinstance(o.message, PhaseReport)]
    assert not report[0].ok and "b, c" in report[0].detail
    assert relay.phase is None and relay.next_timer() is None


def test_a_round_that_goes_quiet_with_an_unfinished_device_aborts():
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase("lpea", 0.0)
    relay.receive(*batch("a", 0, done=True), 0.0)
    relay.receive(*batch("b", 0, done=True), 0.0)
    relay.receive(*batch("c", 0, done=False), 0.0)
    (aborted,) = relay.pop_events()
    assert isinstance(aborted, PhaseAborted) and aborted.missing == ("c",)


def test_one_phase_at_a_time_and_wire_round_trip():
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase("lpea", 0.0)
    with pytest.raises(LocalProtocolError):
        relay.start_phase("ndoe", 0.0)
    _, message = batch("a", 0, [("b", "ans", 1)], done=True, added=2)
    assert codec.decode(codec.encode(message)) == message
    assert b'["b","ans",1]' in codec.encode(message)  # compact items on the wire


def _lpea_report(added_in_rounds):
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase("lpea", 0.0, until_quiet=True, max_rounds=9)
    relay.pop_outbound()
    for r, added in enumerate(added_in_rounds):
        for device in DEVICES:
            relay.receive(*batch(device, 0, round=r, done=True, added=added), 0.0)
    out = relay.pop_outbound()
    (report,) = [o.message for o in out if isinstance(o.message, PhaseReport)]
    (finished,) = relay.pop_events()
    return report, finished


def test_the_collectors_phase_report_holds_no_data_dependent_count():
    # Only public facts reach the collector (protocol.peer_relay, Trust): a field added
    # back to PhaseReport (rounds, supersteps, items, added per round...) fails here.
    # overran: whether the phase kept its public deadline (absent without one)
    public = {"v", "run", "sender", "seq", "phase", "ok", "max_rounds", "detail", "overran"}
    assert set(PhaseReport.__struct_fields__) == public
    # one round or four, many edges or none: the collector's report is the same message,
    # sequence number included; the relay keeps the counts (PhaseFinished)
    short, short_counts = _lpea_report([0])
    long, long_counts = _lpea_report([5, 3, 1, 0])
    assert codec.encode(short) == codec.encode(long)
    assert short.max_rounds == 9 and short.ok
    assert (short_counts.rounds, long_counts.rounds) == (1, 4)
    assert long_counts.added_per_round == (15, 9, 3, 0)


def _padded_view(added_in_rounds, rounds=6):
    """Drive a padded LPEA phase whose negotiation adds ``added_in_rounds`` (its last entry
    0: the quiet round); every device answers what the relay sends. Returns the encoded
    messages on the topics the collector can read (``ctl/``, ``svc/``) in order, and the
    relay's own counts."""
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase("lpea", 0.0, until_quiet=True, max_rounds=rounds, padded=True)
    seen, padded_rounds, notices = [], 0, 0
    while True:
        out = relay.pop_outbound()
        seen += [(o.topic, codec.encode(o.message)) for o in out if "/in/" not in o.topic]
        steps = [o.message for o in out if isinstance(o.message, PeerStep)]
        notes = [o for o in out if isinstance(o.message, PeerDelivery)]
        if steps and steps[0].finished:
            break
        if notes:  # the one padding notice, after the quiet round
            assert all(n.message.pad and not n.message.items for n in notes)
            assert {topics.parse(n.topic).recipient for n in notes} == set(DEVICES)
            notices += 1
            for n in notes:
                relay.receive(*batch(topics.parse(n.topic).recipient, n.message.step,
                                     round=n.message.round, done=True), 0.0)  # fmt: skip
            continue
        (step,) = steps
        r = step.round
        added = added_in_rounds[r] if r < len(added_in_rounds) else 0
        padded_rounds += r >= len(added_in_rounds)
        for device in DEVICES:
            relay.receive(*batch(device, 0, round=r, done=True, added=added), 0.0)
    (finished,) = relay.pop_events()
    return seen, finished, padded_rounds, notices


def test_a_padded_phase_shows_the_collector_the_same_messages_whatever_the_negotiation():
    # Issue 20 (timing channel): the collector-visible messages of a padded phase — the
    # round broadcasts (with their sequence numbers) and the report — are the same for a
    # negotiation of one round and one of four; the relay pads to the public count.
    short, short_counts, short_pads, short_notes = _padded_view([0])
    long, long_counts, long_pads, long_notes = _padded_view([5, 3, 1, 0])
    assert short == long
    assert len(short) == 6 + 2  # 6 round broadcasts, the finish, the report
    assert (short_counts.rounds, long_counts.rounds) == (6, 6)
    assert (short_counts.padding, long_counts.padding) == (5, 2) == (short_pads, long_pads)
    assert short_notes == long_notes == 1
    # a negotiation that never goes quiet is cut at the public count, same messages again
    cut, cut_counts, cut_pads, cut_notes = _padded_view([1] * 9)
    assert cut == short and cut_counts.rounds == 6 and (cut_pads, cut_notes) == (0, 0)
    # without padding the broadcasts show the negotiation's length
    assert len(_lpea_broadcasts([0])) != len(_lpea_broadcasts([5, 3, 1, 0]))


def _lpea_broadcasts(added_in_rounds):
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase("lpea", 0.0, until_quiet=True, max_rounds=6)
    seen = [o for o in relay.pop_outbound() if isinstance(o.message, PeerStep)]
    for r, added in enumerate(added_in_rounds):
        for device in DEVICES:
            relay.receive(*batch(device, 0, round=r, done=True, added=added), 0.0)
        seen += [o for o in relay.pop_outbound() if isinstance(o.message, PeerStep)]
    return seen


def test_items_in_a_padding_round_are_refused():
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase("lpea", 0.0, until_quiet=True, max_rounds=3, padded=True)
    for device in DEVICES:
        relay.receive(*batch(device, 0, done=True), 0.0)  # quiet at once: notices follow
    relay.pop_outbound()
    relay.receive(*batch("a", 1, [("b", "req", 0)], done=True), 0.0)
    assert relay.rejections_by_field["items"] == 1


# ---- the public wall-clock deadline (issue 20; protocol.peer_relay, "Deadline") ----------


def _timed_view(added_in_rounds, *, deadline, start=100.0, work=0.5, rounds=6):
    """A padded LPEA phase started at ``start`` under ``deadline``, every round's batches
    arriving ``work`` seconds after its broadcast (a fake clock). Returns what the
    collector can read (``ctl/``, ``svc/``) as (time, topic, bytes), the relay's events,
    and the late batch's fate while the phase is held."""
    relay = PeerRelay(RUN, DEVICES)
    relay.start_phase(
        "lpea", start, until_quiet=True, max_rounds=rounds, padded=True, deadline=deadline
    )
    now, seen, rejected = start, [], None
    while True:
        out = relay.pop_outbound()
        seen += [(now, o.topic, codec.encode(o.message)) for o in out if "/in/" not in o.topic]
        if any(isinstance(o.message, PhaseReport) for o in out):
            break
        steps = [o.message for o in out if isinstance(o.message, PeerStep)]
        notes = [o for o in out if isinstance(o.message, PeerDelivery)]
        if not steps and not notes:  # the work is over, the end is held: wait for it
            assert relay.next_timer() == start + deadline
            relay.handle_timer(math.nextafter(start + deadline, 0.0))  # not yet
            assert relay.pop_outbound() == []
            before = relay.rejections_by_field.get("sender", 0)
            relay.receive(*batch("a", 0, round=rounds - 1, done=True), now)
            rejected = relay.rejections_by_field.get("sender", 0) - before
            relay.pop_outbound()  # the rejection notice (svc/relay/reject)
            now = relay.next_timer()
            relay.handle_timer(now)
            continue
        now += work
        if notes:
            for n in notes:
                relay.receive(*batch(topics.parse(n.topic).recipient, n.message.step,
                                     round=n.message.round, done=True), now)  # fmt: skip
            continue
        (step,) = steps
        r = step.round
        added = added_in_rounds[r] if r < len(added_in_rounds) else 0
        for device in DEVICES:
            relay.receive(*batch(device, 0, round=r, done=True, added=added), now)
    return seen, [e for e in relay.pop_events() if isinstance(e, PhaseFinished)], rejected


def test_a_deadline_holds_the_phase_end_until_it_whatever_the_negotiation():
    # Issue 20: with a public deadline the end of the phase — the finished broadcast
    # (devices release their DSR values to the collector on it) and the collector's report
    # — goes out at start + deadline, not when the work ended: a short and a long
    # negotiation end the same in content AND time. (The round broadcasts before it keep
    # the negotiation's pace; the collector cannot read them: broker.auth, DENIED.)
    short, (short_done,), short_late = _timed_view([0], deadline=30.0, work=0.5)
    long, (long_done,), long_late = _timed_view([5, 3, 1, 0], deadline=30.0, work=2.0)
    assert short[-2:] == long[-2:] and len(short) == len(long) == 6 + 2
    (t_finish, _, finish), (t_report, topic, report) = short[-2:]
    assert t_finish == t_report == 130.0 and topic == topics.svc(RUN, RELAY_ID, "phase")
    assert all(t < 130.0 for t, _, _ in short[:-2] + long[:-2]) and b'"finished":true' in finish
    assert [t for t, _, _ in short[:-2]] != [t for t, _, _ in long[:-2]]
    assert codec.decode(report).overran is False
    assert short_late == long_late == 1  # nothing is expected while the end is held
    assert (short_done.deadline, short_done.overrun, long_done.overrun) == (30.0, 0.0, 0.0)


def test_a_phase_that_ends_after_its_deadline_reports_at_once_flagged():
    seen, (done,), _ = _timed_view([5, 3, 1, 0], deadline=5.0, work=1.0)
    *_, (t_report, _, report) = seen
    # 6 rounds of 1 s and the padding notice's step: the work ended at 107 > 105
    assert t_report == 107.0 and codec.decode(report).overran is True
    assert done.deadline == 5.0 and math.isclose(done.overrun, 2.0)


def test_without_a_deadline_the_phase_is_byte_identical_to_before():
    # deadline 0 (the default): the end goes out when the work ends, and the messages are
    # byte for byte those of the relay before the option existed (recorded from it)
    seen, (done,), late = _timed_view([5, 3, 1, 0], deadline=0.0, work=1.0)
    *_, (t_finish, _, finish), (t_report, _, report) = seen
    assert t_finish == t_report == 107.0 and late is None and done.overrun == 0.0
    assert report == (
        b'{"type":"phase_report","v":1,"run":"r1","sender":"relay","seq":1,"phase":"lpea",'
        b'"ok":true,"max_rounds":6,"detail":""}'
    )
    assert finish == (
        b'{"type":"peer_step","v":1,"run":"r1","sender":"relay","seq":7,"phase":"lpea",'
        b'"round":6,"finished":true}'
    )
    assert codec.decode(report).overran is UNSET
    request = RelayPhase(run=RUN, sender="collector", seq=3, phase="lpea", until_quiet=True,
                         max_rounds=6, padded=True)  # fmt: skip
    assert codec.encode(request) == (
        b'{"type":"relay_phase","v":1,"run":"r1","sender":"collector","seq":3,"phase":"lpea",'
        b'"until_quiet":true,"max_rounds":6,"padded":true}'
    )
    timed = codec.decode(codec.encode(msgspec.structs.replace(request, deadline=2.5)))
    assert timed.deadline == 2.5


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, 86_400.5, "5"])
def test_a_bad_deadline_is_refused_naming_field_limit_and_value(bad):
    relay = PeerRelay(RUN, DEVICES)
    with pytest.raises(ParameterError) as refused:
        relay.start_phase("lpea", 0.0, deadline=bad)
    assert refused.value.field == "deadline"
    assert "86400" in str(refused.value) and repr(bad) in str(refused.value)
    assert relay.phase is None and relay.pop_outbound() == []
