"""The single CADR collector's DSR stage (``protocol.cadr_dsr_stage.DsrStage``) and the
admission of last wills (``protocol.cadr_admission``, ``Departed``), on a fake clock
(plain floats, no asyncio): which wills count, when the stage is complete, its deadline
and the failure sentence — the decisions ``collector/cadr_fleet.py``'s pump took itself.

Planted bugs checked (each made a test here fail): the deadline not armed
(``_deadline`` left None: the timeout tests), departures ignored (``depart`` returning
before recording: the departure tests), a repeated will overwriting the first one's stage.
"""

from __future__ import annotations

import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_admission import CadrAdmission, Departed
from ldpfleet.protocol.cadr_collect import DsrIntake
from ldpfleet.protocol.cadr_dsr_stage import DsrStage, ReleasesFailed, ReleasesGathered
from ldpfleet.protocol.cadr_messages import DsrReport
from ldpfleet.protocol.errors import LocalProtocolError
from ldpfleet.protocol.events import Rejected
from ldpfleet.protocol.messages import BudgetRefused
from ldpfleet.protocol.secagg.messages import SaAbort

RUN = "kd"
MEMBERS = ["n0", "n1", "n2"]
THETA, EPS = 5, 2.7
TIMEOUT = 40.0


def up(device: str, kind: str) -> topics.Topic:
    return topics.parse(topics.up(RUN, device, kind))


def release(stage: DsrStage, device: str, now: float = 0.0) -> None:
    """``device``'s release through the intake, then told to the stage (as the pump)."""
    assert stage.intake is not None
    report = DsrReport(run=RUN, sender=device, seq=1, value=2.0, theta=THETA, eps=EPS)
    stage.intake.receive(up(device, "dsr"), report, now)
    stage.intake_changed()


def refuse(stage: DsrStage, device: str) -> None:
    assert stage.intake is not None
    refusal = BudgetRefused(
        run=RUN, sender=device, account="node", request="dsr", requested=0.5, remaining=0.1
    )
    stage.intake.receive(up(device, "budget_refused"), refusal, 0.0)
    stage.intake_changed()


def opened() -> DsrStage:
    stage = DsrStage(MEMBERS)
    stage.open(DsrIntake(RUN, MEMBERS, THETA, EPS))
    return stage


def will(device: str, sender: str | None = None, run: str = RUN) -> SaAbort:
    return SaAbort(
        run=run, sender=sender or device, session="theta-buckets", stage="after_shares",
        reason="connection lost (last will)",
    )  # fmt: skip


def test_the_wait_ends_when_every_member_released():
    stage = opened()
    stage.await_releases(10.0, TIMEOUT)
    assert stage.next_timer() == 10.0 + TIMEOUT
    release(stage, "n0")
    release(stage, "n1")
    assert stage.pop_events() == []
    release(stage, "n2")
    assert stage.pop_events() == [ReleasesGathered()]
    assert stage.next_timer() is None


def test_a_silent_member_fails_the_wait_at_exactly_the_deadline_with_the_sentence():
    stage = opened()
    stage.await_releases(10.0, TIMEOUT)
    release(stage, "n0")
    refuse(stage, "n2")
    stage.handle_timer(10.0 + TIMEOUT - 1e-9)
    assert stage.pop_events() == []  # not before
    stage.handle_timer(10.0 + TIMEOUT)
    assert stage.pop_events() == [ReleasesFailed("1 release(s) missing after 40 s: ['n1']")]
    assert stage.next_timer() is None and not stage.waiting


def test_a_departed_member_is_not_awaited_before_or_after_the_wait_began():
    stage = DsrStage(MEMBERS)
    assert stage.depart("n1", "after_shares")  # before θ: recorded, nothing to end
    stage.open(DsrIntake(RUN, MEMBERS, THETA, EPS))
    release(stage, "n0")
    stage.await_releases(0.0, TIMEOUT)
    assert stage.pop_events() == []
    release(stage, "n2")
    assert stage.pop_events() == [ReleasesGathered()]
    later = opened()
    later.await_releases(0.0, TIMEOUT)
    release(later, "n0")
    release(later, "n1")
    assert later.depart("n2", "")  # during the wait: it ends at once
    assert later.pop_events() == [ReleasesGathered()]
    assert later.departed == {"n2": "unknown"}  # a will naming no stage


def test_a_wait_already_complete_ends_at_once():
    stage = opened()
    for device in MEMBERS:
        release(stage, device)
    stage.await_releases(0.0, TIMEOUT)
    assert stage.pop_events() == [ReleasesGathered()]


def test_a_second_will_changes_nothing_and_a_non_member_is_not_recorded():
    stage = opened()
    assert stage.depart("n1", "after_shares")
    assert not stage.depart("n1", "during_unmask")
    assert stage.departed == {"n1": "after_shares"}
    with pytest.raises(LocalProtocolError):
        stage.depart("intruder", "after_shares")
    assert stage.departed == {"n1": "after_shares"}


def test_misuse_is_a_local_error():
    with pytest.raises(LocalProtocolError, match="θ is not known"):
        DsrStage(MEMBERS).await_releases(0.0, TIMEOUT)
    stage = opened()
    with pytest.raises(LocalProtocolError, match="already open"):
        stage.open(DsrIntake(RUN, MEMBERS, THETA, EPS))
    stage.await_releases(0.0, TIMEOUT)
    with pytest.raises(LocalProtocolError, match="awaited already"):
        stage.await_releases(0.0, TIMEOUT)


def test_the_admission_admits_a_members_will_at_any_stage():
    gate = CadrAdmission(RUN, MEMBERS)
    gate.receive(up("n1", "sa_abort"), will("n1"), 0.0)  # before θ
    gate.open_intake()
    gate.receive(up("n2", "sa_abort"), will("n2"), 0.0)
    assert gate.pop_events() == [Departed("n1", "after_shares"), Departed("n2", "after_shares")]
    assert gate.rejected == 0


@pytest.mark.parametrize(
    ("topic", "message", "field"),
    [
        (up("intruder", "sa_abort"), will("intruder"), "sender"),  # not a member
        (up("n1", "sa_abort"), will("n1", sender="n0"), "sender"),  # another's will
        (up("n1", "sa_abort"), will("n1", run="other"), "run"),  # another run's
    ],
)
def test_the_admission_refuses_and_counts_other_wills(topic, message, field):
    gate = CadrAdmission(RUN, MEMBERS)
    gate.receive(topic, message, 0.0)
    (event,) = gate.pop_events()
    assert isinstance(event, Rejected) and event.field == field
    assert gate.rejected == 1
