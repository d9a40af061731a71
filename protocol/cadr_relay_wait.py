"""The CADR-LDP collector's wait for the relay's phase reports, without I/O — theory of
operation.

Seed 004 Alg. 3-5 (NDOE and LPEA run by the peer relay, ``protocol.peer_relay``); the
collector (``collector.cadr_fleet``, module docstring stage 4) asks the relay for a phase
on ``ctl/relay_phase`` and waits for its ``PhaseReport``. The pump lets
``protocol.cadr_admission.CadrAdmission`` admit each report (the relay's own, of this
run), hands it to ``report``, drives this machine's timer (``broker.pump.drive_timers``)
on the loop's clock and acts on its answer; what the answer is, and when, is decided here
on an injected clock (``now``):

* Admitted reports queue in arrival order; a wait takes the oldest.
* ``await_report(phase, now, timeout)`` ends with ``PhaseDone`` when the report taken is
  of ``phase`` and ``ok``; with ``PhaseFailed("relay phase P failed: <detail>")`` when it
  is another phase's or not ok; or with ``PhaseFailed("relay: no report of phase P")`` at
  exactly ``now + timeout`` (``next_timer``/``handle_timer``).
* ``phase_timeout(stage_timeout, peer_deadline)`` is that timeout: ten stage timeouts
  (a phase runs many rounds) plus the public deadline the relay ends no phase before.

The shape of ``protocol.cadr_dsr_stage.DsrStage`` (the DSR stage's wait) and of the
partitioned path's ``protocol.cadr_partition_link.ReleaseGatheringMachine``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ldpfleet.protocol.errors import LocalProtocolError
from ldpfleet.protocol.events import Event, Machine
from ldpfleet.protocol.peer_relay import PhaseReport

__all__ = ["PhaseDone", "PhaseFailed", "RelayPhaseWait", "phase_timeout"]

STAGE_TIMEOUTS_PER_PHASE = 10


def phase_timeout(stage_timeout: float, peer_deadline: float) -> float:
    """How long the collector waits for a phase's report (module docstring).

    Returns:
        ``stage_timeout * 10 + peer_deadline`` seconds.
    """
    return stage_timeout * STAGE_TIMEOUTS_PER_PHASE + peer_deadline


@dataclass(frozen=True, slots=True)
class PhaseDone(Event):
    """The awaited phase ended normally: its report."""

    report: PhaseReport


@dataclass(frozen=True, slots=True)
class PhaseFailed(Event):
    """The awaited phase failed or was not reported in time: ``sentence`` says which."""

    sentence: str


class RelayPhaseWait(Machine):
    """The collector's waits for the relay's phase reports (module docstring): reports and
    time in, one event per wait out."""

    def __init__(self) -> None:
        super().__init__()
        self.phase: str | None = None  # the phase awaited, None when no wait is pending
        self._reports: deque[PhaseReport] = deque()
        self._deadline: float | None = None

    @property
    def queued(self) -> int:
        """How many admitted reports wait for a wait to take them."""
        return len(self._reports)

    def report(self, report: PhaseReport) -> None:
        """An admitted report of the relay: it may end the pending wait."""
        self._reports.append(report)
        self._decide()

    def await_report(self, phase: str, now: float, timeout: float) -> None:
        """Wait for the report of ``phase``, at most ``timeout`` seconds from ``now``.

        Raises:
            LocalProtocolError: a wait is pending already.
        """
        if self.phase is not None:
            raise LocalProtocolError(f"the report of phase {self.phase} is awaited already")
        self.phase, self._deadline = phase, now + timeout
        self._decide()

    def _decide(self) -> None:
        """End the pending wait with the oldest report, if one came."""
        phase = self.phase
        if phase is None or not self._reports:
            return
        report = self._reports.popleft()
        if report.phase != phase or not report.ok:
            self._end(PhaseFailed(f"relay phase {phase} failed: {report.detail}"))
        else:
            self._end(PhaseDone(report))

    def _end(self, event: PhaseDone | PhaseFailed) -> None:
        self.phase, self._deadline = None, None
        self._emit(event)

    def next_timer(self) -> float | None:
        """The pending wait's deadline (None: no wait pending)."""
        return self._deadline

    def handle_timer(self, now: float) -> None:
        """At the deadline, end the wait: no report of the phase came."""
        if self._deadline is None or now < self._deadline:
            return
        self._end(PhaseFailed(f"relay: no report of phase {self.phase}"))
