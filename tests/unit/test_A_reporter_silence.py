"""Tier 1: a stream device's deadline on its collector's silence is the reporter's own
(``protocol.stream.StreamReporter.listen`` / ``heard`` / ``next_timer`` /
``handle_timer``, ``ReporterSilence``), driven directly with a float clock.

The rules: at ``now >= last word + silence_timeout`` exactly the reporter gives up
(``gave_up`` holds "no message from the collector for S s (state ..., N
retransmissions)", one ``CollectorSilent`` is emitted, nothing more is sent or
retransmitted), and not a hair before; every delivery moves the deadline; a finished
reporter never gives up; ``None`` and ``math.inf`` never; ``listen`` again (a restored
reporter, a new pump) forgets an earlier deadline and give-up. Its ``state`` and
``finished`` stay the stream's.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError
from ldpfleet.protocol.liveness import CollectorSilent
from ldpfleet.protocol.messages import Ack, Stage
from ldpfleet.protocol.stream import (
    STAGE,
    StreamConfig,
    StreamReporter,
    check_silence_timeout,
)

RUN = "r1"
DEVICE = "d0001"
RETRANSMIT = 5.0  # the hello is due again after 5, 10, 20, 40, 40, ... s


def make_reporter(steps: int = 10, batch_steps: int = 5) -> StreamReporter:
    config = StreamConfig(
        run=RUN,
        mechanism="sw",
        eps=2.0,
        w=4,
        steps=steps,
        batch_steps=batch_steps,
        lo=0.0,
        hi=1.0,
        retransmit_after=RETRANSMIT,
    )
    return StreamReporter(config, DEVICE, np.random.default_rng(7))


def inbox_topic() -> topics.Topic:
    return topics.parse(topics.inbox(RUN, DEVICE, topics.COLLECTOR_ID))


def ack(seq: int = -1, credit: int = 0) -> Ack:
    return Ack(run=RUN, sender=topics.COLLECTOR_ID, seq=seq, credit=credit)


def started(silence_timeout: float | None, *, at: float = 0.0) -> StreamReporter:
    """A reporter that said hello at ``at`` and listens from then on."""
    reporter = make_reporter()
    reporter.start(at)
    reporter.listen(at, silence_timeout)
    reporter.pop_outbound()
    return reporter


def kinds(reporter: StreamReporter) -> list[str]:
    return [topics.parse(o.topic).kind for o in reporter.pop_outbound()]


def test_gives_up_exactly_at_the_deadline_and_not_before():
    reporter = started(30.0)
    # the hello's retransmissions come first (5, 15), both before the silence deadline
    assert reporter.next_timer() == 5.0
    reporter.handle_timer(5.0)
    assert reporter.next_timer() == 15.0
    reporter.handle_timer(15.0)
    assert reporter.next_timer() == 30.0  # the silence (the hello would be due at 35)
    reporter.handle_timer(math.nextafter(30.0, 0.0))  # a hair early: nothing happens
    assert reporter.gave_up is None and reporter.next_timer() == 30.0
    kinds(reporter)
    reporter.handle_timer(30.0)
    assert reporter.gave_up == (
        "no message from the collector for 30 s (state hello, 2 retransmissions)"
    )
    events = reporter.pop_events()
    assert events == [CollectorSilent(reporter.gave_up, started=False)]
    assert kinds(reporter) == []  # no retransmission with the give-up
    assert reporter.next_timer() is None
    assert reporter.stopped and not reporter.finished and reporter.state == "hello"
    reporter.handle_timer(1000.0)  # given up: no more retransmissions, no second event
    assert kinds(reporter) == [] and reporter.pop_events() == []


def test_a_late_timer_gives_up_instead_of_retransmitting():
    # the timer fires long after both the hello's and the silence's deadlines: give up only
    reporter = started(30.0)
    reporter.handle_timer(100.0)
    assert reporter.gave_up is not None and kinds(reporter) == []
    assert reporter.retransmissions == 0


def test_every_delivery_moves_the_deadline():
    reporter = started(30.0)
    reporter.receive(inbox_topic(), ack(), 20.0)  # "please wait": state waiting
    assert reporter.state == "waiting"
    assert reporter.next_timer() == 30.0  # the keep-alive hello (6 x 5 s after the hello)
    reporter.handle_timer(30.0)
    assert reporter.gave_up is None and kinds(reporter) == ["hello"]
    assert reporter.next_timer() == 50.0  # 20 + 30: the silence, before the next keep-alive
    # a message the device ignores is a word too (a stage it does not take part in)
    other = Stage(run=RUN, sender="collector", stage="x", state="open")
    reporter.receive(inbox_topic(), other, 45.0)
    reporter.handle_timer(60.0)  # the keep-alive hello, not the silence (45 + 30 = 75)
    assert reporter.gave_up is None and kinds(reporter) == ["hello"]
    reporter.heard(70.0)  # what the pump could not decode counts as well
    reporter.handle_timer(math.nextafter(100.0, 0.0))
    assert reporter.gave_up is None
    reporter.handle_timer(100.0)
    assert reporter.gave_up == (
        "no message from the collector for 30 s (state waiting, 3 retransmissions)"
    )
    assert reporter.pop_events()[-1] == CollectorSilent(reporter.gave_up, started=True)


def test_a_finished_reporter_never_gives_up():
    reporter = started(30.0)
    reporter.add_readings(np.full(10, 0.5), 0.0)
    reporter.receive(inbox_topic(), ack(credit=2), 1.0)
    reporter.receive(inbox_topic(), ack(seq=1, credit=2), 2.0)
    assert reporter.finished and reporter.state == "done"
    assert reporter.next_timer() is None
    reporter.handle_timer(1e9)
    assert reporter.gave_up is None and not any(
        isinstance(e, CollectorSilent) for e in reporter.pop_events()
    )


@pytest.mark.parametrize("never", [None, math.inf])
def test_none_or_infinity_never_gives_up(never):
    reporter = started(never)
    for _ in range(20):  # the hello's retransmissions go on, backing off to 40 s
        deadline = reporter.next_timer()
        assert deadline is not None
        reporter.handle_timer(deadline)
    assert reporter.gave_up is None and reporter.retransmissions == 20
    assert reporter.next_timer() == reporter._retransmit_deadline()


def test_without_listen_there_is_no_silence_deadline():
    # a reporter no pump listens for (the machine tests, an old pickled one) never gives up
    reporter = make_reporter()
    reporter.start(0.0)
    reporter.handle_timer(1e6)
    assert reporter.gave_up is None and reporter.retransmissions == 1


def test_listen_again_forgets_the_old_deadline_and_give_up():
    reporter = started(30.0)
    reporter.handle_timer(30.0)
    assert reporter.gave_up is not None
    with pytest.raises(LocalProtocolError, match="after giving up"):
        reporter.add_readings([0.5], 30.0)
    reporter.receive(inbox_topic(), ack(), 31.0)  # given up: not consumed
    assert reporter.state == "hello"
    restored = pickle.loads(pickle.dumps(reporter))  # a device's storage
    restored.listen(1000.0, 30.0)  # a new pump, on another clock
    assert restored.gave_up is None and not restored.stopped
    assert restored.next_timer() == 5.0  # its hello, overdue on the new clock: sent at once
    restored.handle_timer(math.nextafter(1030.0, 0.0))
    assert restored.gave_up is None
    restored.handle_timer(1030.0)
    assert restored.gave_up is not None


def test_a_reporter_pickled_before_the_silence_existed_still_loads():
    # a state file written by the previous version: no ``gave_up`` / ``_silence`` fields
    reporter = make_reporter()
    state = reporter.__dict__.copy()
    del state["gave_up"], state["_silence"]
    old = StreamReporter.__new__(StreamReporter)
    old.__dict__.update(state)
    assert old.gave_up is None and not old.stopped and old.next_timer() is None
    old.listen(0.0, 10.0)
    old.start(0.0)
    old.handle_timer(10.0)
    assert old.gave_up is not None


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, True, "30", -math.inf])
def test_a_bad_silence_timeout_is_refused_naming_it(bad):
    with pytest.raises(ParameterError) as caught:
        check_silence_timeout(bad)
    assert caught.value.field == "silence_timeout"
    assert caught.value.limit == "None or > 0 seconds"
    reporter = make_reporter()
    with pytest.raises(ParameterError):
        reporter.listen(0.0, bad)


def test_the_silence_sentence_survives_the_codec_path():
    # deliveries through the codec, as the pump feeds them: the stage's own announcement
    reporter = started(12.5)
    opened = Stage(run=RUN, sender="collector", stage=STAGE, state="open")
    message = codec.decode(codec.encode(opened))
    reporter.receive(topics.parse(topics.ctl(RUN, "stage")), message, 3.0)
    reporter.handle_timer(15.5)
    assert reporter.gave_up is not None
    assert reporter.gave_up.startswith("no message from the collector for 12.5 s (state hello")


def test_the_agent_refuses_a_bad_silence_timeout_when_built():
    from ldpfleet.broker.transport import MemoryTransport
    from ldpfleet.devices.agent import DeviceAgent

    with pytest.raises(ParameterError) as caught:
        DeviceAgent(MemoryTransport(), make_reporter(), np.zeros(10), silence_timeout=0)
    assert caught.value.field == "silence_timeout" and caught.value.value == 0
    agent = DeviceAgent(MemoryTransport(), make_reporter(), np.zeros(10), silence_timeout=None)
    assert agent.silence_timeout is None and agent.gave_up is None
