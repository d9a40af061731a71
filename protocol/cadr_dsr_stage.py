"""The single CADR-LDP collector's DSR stage, without I/O — theory of operation.

Seed 004 Alg. 6 (the DSR release) as ``collector.cadr_fleet`` waits for it when it runs the
DSR intake itself (no partition workers); docs/cadr.md, "Dropouts". The pump decodes, lets
``protocol.cadr_admission.CadrAdmission`` admit each message, drives this machine's timer
(``broker.pump.drive_timers``) on the loop's clock and publishes; what counts and when the
stage ends is decided here, on an injected clock (``now``):

* ``depart(device, stage)``: an admitted last will (``Departed``: an ``SaAbort`` on a
  member's ``up/sa_abort``; the admission refuses and counts the others). The first will
  of each member is recorded (``departed``: device -> the stage it named, ``unknown`` when
  it named none) and its release is no longer awaited; a later will of the same device
  changes nothing. A will may come at any stage, before θ too.
* ``open(intake)``: θ exists and the ``protocol.cadr_collect.DsrIntake`` takes releases;
  the pump calls ``intake_changed()`` after each message it handed the intake.
* The stage is ``complete`` once every member released, refused to spend
  (``BudgetRefused``) or departed.
* ``await_releases(now, timeout)`` ends with ``ReleasesGathered`` once the stage is
  complete (at once if it already is, or at the deadline if the pump had not yet said
  that the intake took the last release), or with ``ReleasesFailed`` at exactly
  ``now + timeout`` (``next_timer``/``handle_timer``) with the sentence "N release(s)
  missing after T s: [...]" naming (the first ten of) the intake's missing devices,
  followed by "; M departed (last will): [...]" when devices that departed released
  nothing (they are not awaited, so not missing; they were listed among the missing).
  The pump holds a passed deadline while deliveries wait in its inbound buffer
  (``broker.pump.InputHold``), so ``handle_timer`` judges only what was read.

The same shape and events as the partitioned path's coordinator
(``protocol.cadr_partition_link.ReleaseGatheringMachine``, which waits for partitions'
final chunks instead of devices' releases).
"""

from __future__ import annotations

from collections.abc import Iterable

from ldpfleet.protocol.cadr_collect import DsrIntake
from ldpfleet.protocol.cadr_partition_link import ReleasesFailed, ReleasesGathered
from ldpfleet.protocol.errors import LocalProtocolError
from ldpfleet.protocol.events import Machine

__all__ = ["DsrStage", "ReleasesFailed", "ReleasesGathered"]

UNKNOWN_STAGE = "unknown"  # a will that names no stage


class DsrStage(Machine):
    """The local DSR stage's departures, completion and deadline (module docstring):
    messages and time in, one event for the wait out."""

    def __init__(self, members: Iterable[str]) -> None:
        super().__init__()
        self.members = frozenset(members)
        self.departed: dict[str, str] = {}
        self.intake: DsrIntake | None = None
        self.waiting = False
        self.timeout = 0.0
        self._deadline: float | None = None

    def depart(self, device: str, stage: str) -> bool:
        """A member's admitted last will: no release of it is awaited any more.

        Returns:
            Whether it is the device's first will (a later one changes nothing).

        Raises:
            LocalProtocolError: ``device`` is not a member (the admission refuses those).
        """
        if device not in self.members:
            raise LocalProtocolError(f"{device!r} is not a member of the run")
        if device in self.departed:
            return False
        self.departed[device] = stage or UNKNOWN_STAGE
        self._decide()
        return True

    def open(self, intake: DsrIntake) -> None:
        """θ exists: ``intake`` takes the releases from now on.

        Raises:
            LocalProtocolError: an intake is open already.
        """
        if self.intake is not None:
            raise LocalProtocolError("the DSR intake is already open")
        self.intake = intake
        self._decide()

    def intake_changed(self) -> None:
        """The intake took a message (a release, a refusal): the stage may be complete."""
        self._decide()

    @property
    def complete(self) -> bool:
        """Every member released, refused or departed (False before the intake opens)."""
        intake = self.intake
        if intake is None:
            return False
        # asked after every release: the sorted list of the missing was O(n log n) a time,
        # O(n^2 log n) a stage (a 20,000-node graph's DSR stage took 476 s); while more
        # devices are missing than have departed, they cannot all have departed, and
        # otherwise the intake looks for a missing device that did not depart, stopping at
        # the first (at most the missing devices, never the whole fleet, never sorted)
        if intake.missing_count > len(self.departed):
            return False
        return intake.missing_outside(self.departed) is None

    def await_releases(self, now: float, timeout: float) -> None:
        """Wait until the stage is complete, at most ``timeout`` seconds from ``now``.

        Raises:
            LocalProtocolError: the intake is not open, or a wait is pending already.
        """
        if self.intake is None:
            raise LocalProtocolError("no DSR intake is open: θ is not known yet")
        if self.waiting:
            raise LocalProtocolError("the DSR stage is awaited already")
        self.waiting, self.timeout, self._deadline = True, timeout, now + timeout
        self._decide()

    def _decide(self) -> None:
        """End the wait once the stage is complete."""
        if self.waiting and self.complete:
            self._end(ReleasesGathered())

    def _end(self, event: ReleasesGathered | ReleasesFailed) -> None:
        self.waiting, self._deadline = False, None
        self._emit(event)

    def next_timer(self) -> float | None:
        """The pending wait's deadline (None: no wait pending)."""
        return self._deadline

    def handle_timer(self, now: float) -> None:
        """At the deadline, end the wait: gathered if the stage is complete (the intake
        took the last release and the pump has not yet said so: ``intake_changed`` comes
        after the release's acknowledgement is published), else failed naming the devices
        whose release is missing apart from those that departed."""
        if self._deadline is None or now < self._deadline:
            return
        if self.complete:
            self._end(ReleasesGathered())
            return
        assert self.intake is not None  # a wait needs the intake
        self._end(ReleasesFailed(self._missing_sentence(self.intake.missing())))

    def _missing_sentence(self, unreleased: list[str]) -> str:
        """ "N release(s) missing after T s: [...]", then "; M departed (last will): [...]"
        when some of the unreleased devices departed (their release is not awaited: they
        are not missing); the first ten of each."""
        missing = [d for d in unreleased if d not in self.departed]
        departed = [d for d in unreleased if d in self.departed]
        sentence = f"{len(missing)} release(s) missing after {self.timeout:g} s: {missing[:10]}"
        if departed:
            sentence += f"; {len(departed)} departed (last will): {departed[:10]}"
        return sentence
