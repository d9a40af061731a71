"""The CADR collector's wait for the relay's phase reports
(``protocol.cadr_relay_wait.RelayPhaseWait``) on a fake clock: the report ends the wait,
a failed or another phase's report fails it with its sentence, and no report fails it at
exactly the deadline — the decisions ``collector/cadr_fleet.py``'s ``run_phase`` took
itself. Planted bugs checked (each made a test here fail): the deadline not armed, the
phase of the report not compared."""

from __future__ import annotations

import pytest
from ldpfleet.protocol.cadr_relay_wait import (
    PhaseDone,
    PhaseFailed,
    RelayPhaseWait,
    phase_timeout,
)
from ldpfleet.protocol.errors import LocalProtocolError
from ldpfleet.protocol.peer_relay import RELAY_ID, PhaseReport

RUN = "kr"


def report(phase: str = "ndoe", ok: bool = True, detail: str = "") -> PhaseReport:
    return PhaseReport(run=RUN, sender=RELAY_ID, phase=phase, ok=ok, detail=detail)


def test_the_report_of_the_phase_ends_the_wait():
    wait = RelayPhaseWait()
    wait.await_report("ndoe", 5.0, 43.0)
    assert wait.next_timer() == 48.0
    assert wait.pop_events() == []
    ndoe = report()
    wait.report(ndoe)
    assert wait.pop_events() == [PhaseDone(ndoe)]
    assert wait.next_timer() is None and wait.phase is None


def test_a_report_before_the_wait_is_taken_by_it():
    wait = RelayPhaseWait()
    early = report("lpea")
    wait.report(early)
    assert wait.pop_events() == []
    wait.await_report("lpea", 0.0, 10.0)
    assert wait.pop_events() == [PhaseDone(early)]


@pytest.mark.parametrize(
    "received", [report(ok=False, detail="aborted: x"), report("lpea", detail="aborted: x")]
)
def test_a_failed_or_another_phases_report_fails_the_wait(received):
    wait = RelayPhaseWait()
    wait.await_report("ndoe", 0.0, 10.0)
    wait.report(received)
    assert wait.pop_events() == [PhaseFailed("relay phase ndoe failed: aborted: x")]


def test_no_report_fails_the_wait_at_exactly_its_deadline():
    wait = RelayPhaseWait()
    wait.await_report("ndoe", 5.0, phase_timeout(4.0, 3.0))
    wait.handle_timer(5.0 + 43.0 - 1e-9)
    assert wait.pop_events() == []
    wait.handle_timer(5.0 + 43.0)
    assert wait.pop_events() == [PhaseFailed("relay: no report of phase ndoe")]
    assert wait.next_timer() is None
    wait.report(report())  # a late report waits for the next wait
    assert wait.pop_events() == [] and wait.queued == 1


def test_the_timeout_and_misuse():
    assert phase_timeout(120.0, 0.0) == 1200.0 and phase_timeout(4.0, 3.0) == 43.0
    wait = RelayPhaseWait()
    wait.await_report("ndoe", 0.0, 1.0)
    with pytest.raises(LocalProtocolError, match="awaited already"):
        wait.await_report("lpea", 0.0, 1.0)
