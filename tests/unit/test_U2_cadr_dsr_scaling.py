"""The DSR stage's completion check on a large fleet (helper U2, a user's day).

A 20,000-node graph of the user's own (``ldpfleet run`` with ``[graph] source`` and an
integer θ, memory broker) spent 476 s in its DSR stage, 10,000 nodes 78 s, 5,000 9.7 s:
``DsrStage.complete``, asked after every release, built the intake's SORTED list of missing
devices each time (O(n log n) a release, O(n^2 log n) a stage; 15 of the 48 CPU s of an
8,000-node run). Now the list is built only when as few devices are missing as have
departed: 13.3 s, 4.9 s and 3.2 s, the same releases bit for bit. Counted here, not timed."""

from __future__ import annotations

import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_collect import DsrIntake
from ldpfleet.protocol.cadr_dsr_stage import DsrStage, ReleasesGathered
from ldpfleet.protocol.cadr_messages import DsrReport

RUN = "u2"
THETA, EPS = 5, 2.7


def _release(stage: DsrStage, device: str) -> None:
    report = DsrReport(run=RUN, sender=device, seq=1, value=2.0, theta=THETA, eps=EPS)
    stage.intake.receive(topics.parse(topics.up(RUN, device, "dsr")), report, 0.0)
    stage.intake_changed()


def _opened(members: list[str]) -> DsrStage:
    stage = DsrStage(members)
    stage.open(DsrIntake(RUN, members, THETA, EPS))
    return stage


def test_a_stage_without_departures_never_lists_the_missing(monkeypatch):
    calls = []
    listing = DsrIntake.missing
    monkeypatch.setattr(DsrIntake, "missing", lambda self: calls.append(1) or listing(self))
    members = [f"n{i:04d}" for i in range(2000)]
    stage = _opened(members)
    stage.await_releases(0.0, 60.0)
    for device in members:
        _release(stage, device)
    assert stage.pop_events() == [ReleasesGathered()]
    assert calls == []  # was one sorted list of up to 2,000 names per release


@pytest.mark.parametrize("released_first", [True, False])
def test_departures_still_end_the_stage_exactly_when_every_missing_device_left(released_first):
    members = ["n0", "n1", "n2", "n3"]
    stage = _opened(members)
    stage.await_releases(0.0, 60.0)
    if released_first:  # n0 released, then its connection dropped: its will counts too
        _release(stage, "n0")
        stage.depart("n0", "dsr")
    stage.depart("n1", "dsr")
    assert not stage.complete and stage.pop_events() == []
    if not released_first:
        _release(stage, "n0")
    _release(stage, "n2")
    assert not stage.complete  # n3 neither released nor left
    stage.depart("n3", "dsr")
    assert stage.complete and stage.pop_events() == [ReleasesGathered()]
