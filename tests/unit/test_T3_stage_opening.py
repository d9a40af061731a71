"""Gaps found by helper T3's planted-bug hunt (round 3) in ``protocol.stage_opening``: each
test names the mutant it kills."""

from __future__ import annotations

from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.readiness import ready_announcement
from ldpfleet.protocol.stage_opening import SessionOpens, StageAbandoned, StageOpening

RUN = "t3open"
DEVICES = [f"d{i:04d}" for i in range(7)]


def _join(opening: StageOpening, device: str, now: float) -> None:
    out = ready_announcement(RUN, device)
    opening.receive(topics.parse(out.topic), codec.decode(codec.encode(out.message)), now)


def test_a_patience_of_one_is_accepted_and_caps_the_wait_at_one_stage_timeout():
    """Kills SO1 (``patience > 1``): the docstring's bound is ``patience`` not below 1, so
    1 (no extension: the join deadline is the first ``stage_timeout``) is legal."""
    opening = StageOpening(RUN, DEVICES, stage_timeout=2.0, patience=1)
    opening.start(0.0)
    _join(opening, DEVICES[0], 1.5)
    assert opening.next_timer() == 2.0


def test_one_join_is_enough_to_open_the_session():
    """Kills SO6 (abandoning the stage when all but one member are absent): the session
    opens with whoever joined; only nobody joining abandons it. The sentence names the
    first five absent devices and elides the rest."""
    opening = StageOpening(RUN, DEVICES, stage_timeout=1.0)
    opening.start(0.0)
    _join(opening, DEVICES[0], 0.5)
    opening.handle_timer(1.5)
    [event] = opening.pop_events()
    assert isinstance(event, SessionOpens) and not isinstance(event, StageAbandoned)
    assert event.absent == tuple(DEVICES[1:])
    assert event.sentence.endswith("(d0001, d0002, d0003, d0004, d0005, ...)")
