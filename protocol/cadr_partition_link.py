"""A CADR-LDP partition worker's and coordinator's timing decisions, without I/O — theory
of operation.

DESIGN.md "Scale" (issue 23, "With CADR-LDP the coordinator keeps the plan, the θ search
...; each worker runs the DSR intake of its devices"), ``protocol.partition`` (what travels:
``PartitionStatus``, ``CadrReleases``), ``protocol.partition_control`` (what the coordinator
admits of its workers' messages, ``ReleaseGathering``). The pumps of
``collector/cadr_partition.py`` decode, drive the timers (``broker.pump.drive_timers``) on
the loop's clock and publish the outbox; what is said when, and how long the coordinator
waits, is decided here on an injected clock (``now``):

* ``CadrPartitionLink`` is a worker's side: it says ``ready`` (its devices counted) at
  ``start`` and again every ``READY_EVERY`` seconds until the pump tells it θ was heard
  (``theta_heard``: the coordinator listens, and its ``ctl/cadr_theta`` came; statuses are
  not retained, so a worker that starts before the coordinator listens is heard at its
  next ready). Once its ``DsrIntake`` is complete (every device of the partition released
  or refused; ``intake_changed``), it sends the intake's values and refusals once, in
  ``CadrReleases`` chunks of ``RELEASES_CHUNK`` items, the last one ``final`` with the
  worker's counts of rejected and duplicate messages.
* ``ReleaseGatheringMachine`` is the coordinator's: ``ReleaseGathering`` (what it admits)
  with its two waits. ``await_ready(now, timeout)`` ends with ``WorkersListening`` once
  every partition said anything, or ``WorkersNotReady`` naming the missing partitions at
  exactly ``now + timeout``; ``await_final(now, timeout, theta)`` ends with
  ``ReleasesGathered`` once every partition sent its final chunk with the run's θ, or
  ``ReleasesFailed`` with the sentence: partitions missing at the deadline, or (every final
  chunk in) a θ that is not the run's. A wait already satisfied ends at once; a message
  the gathering refuses can still end it (a refused chunk's partition counts as ready).
"""

from __future__ import annotations

from dataclasses import dataclass

from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_collect import DsrIntake
from ldpfleet.protocol.events import Event, Machine
from ldpfleet.protocol.partition import RELEASES_CHUNK, CadrRefusal, CadrReleases, status_topic
from ldpfleet.protocol.partition_control import ReleaseGathering
from ldpfleet.protocol.partition_link import READY_EVERY, WorkerCounts, partition_status

__all__ = [
    "READY_EVERY",
    "CadrPartitionLink",
    "ReleaseGatheringMachine",
    "ReleasesFailed",
    "ReleasesGathered",
    "WorkersListening",
    "WorkersNotReady",
]

SAYING_READY, LISTENING = "ready", "listening"  # a worker link's phases after ``start``


class CadrPartitionLink(Machine):
    """A CADR worker's statuses and release chunks to the coordinator (module docstring):
    pure, told the time."""

    def __init__(
        self,
        run: str,
        partition: int,
        partitions: int,
        devices: int,
        *,
        ready_every: float = READY_EVERY,
        chunk_size: int = RELEASES_CHUNK,
    ) -> None:
        super().__init__()
        self.run, self.partition, self.partitions = run, partition, partitions
        self.devices, self.ready_every, self.chunk_size = devices, ready_every, chunk_size
        self.phase: str | None = None  # None (not started), SAYING_READY, LISTENING
        self.sent = 0  # release chunks sent
        self.done = False  # the releases are sent
        self._next: float | None = None

    def _say_ready(self, now: float) -> None:
        counts = WorkerCounts(devices=self.devices)
        status = partition_status(self.run, self.partition, self.partitions, "ready", counts)
        self._send(status_topic(self.run), status)
        self._next = now + self.ready_every

    def start(self, now: float) -> None:
        """Say ``ready`` now and every ``ready_every`` seconds until θ is heard (nothing if
        θ was heard already)."""
        if self.phase is None:
            self.phase = SAYING_READY
            self._say_ready(now)

    def theta_heard(self, now: float) -> None:
        """The coordinator's θ came: no more ready statuses."""
        del now  # the link stops at once, whatever the time
        self.phase, self._next = LISTENING, None

    def intake_changed(self, intake: DsrIntake, *, rejected: int, duplicates: int) -> None:
        """The worker's intake took a message: once it is complete, its values and refusals
        in chunks (module docstring), once; ``rejected`` and ``duplicates`` are the worker's
        counts, carried by the final chunk."""
        if self.done or not intake.complete:
            return
        self.done = True
        items: list = sorted(intake.values.items()) + [
            CadrRefusal(device=d, **e) for d, e in sorted(intake.refusals.items())
        ]
        size = self.chunk_size
        chunks = [items[i : i + size] for i in range(0, len(items), size)] or [[]]
        for i, chunk in enumerate(chunks):
            final = i == len(chunks) - 1
            released = [item for item in chunk if isinstance(item, tuple)]
            self._send(
                status_topic(self.run),
                CadrReleases(
                    run=self.run,
                    sender=topics.COLLECTOR_ID,
                    partition=self.partition,
                    partitions=self.partitions,
                    theta=intake.theta,
                    devices=[d for d, _ in released],
                    values=[v for _, v in released],
                    refusals=[item for item in chunk if isinstance(item, CadrRefusal)],
                    final=final,
                    rejected=rejected if final else 0,
                    duplicates=duplicates if final else 0,
                ),
            )
            self.sent += 1

    def next_timer(self) -> float | None:
        """When the next ready status is due (None once θ is heard)."""
        return self._next

    def handle_timer(self, now: float) -> None:
        """Say ready again if it is due."""
        if self.phase == SAYING_READY and self._next is not None and now >= self._next:
            self._say_ready(now)


@dataclass(frozen=True, slots=True)
class WorkersListening(Event):
    """Every worker said something on the status topic: the run may be announced."""


@dataclass(frozen=True, slots=True)
class WorkersNotReady(Event):
    """Not every worker said anything within the ready wait's timeout."""

    missing: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ReleasesGathered(Event):
    """Every worker's final chunk is in, with the run's θ."""


@dataclass(frozen=True, slots=True)
class ReleasesFailed(Event):
    """The release wait failed: ``sentence`` names the missing partitions or the θ."""

    sentence: str


READY_WAIT, FINAL_WAIT = "ready", "final"  # what a ``ReleaseGatheringMachine`` waits for


class ReleaseGatheringMachine(ReleaseGathering, Machine):
    """The CADR coordinator's gathering with its deadlines (module docstring): messages
    and time in, one event per wait out."""

    def __init__(self, run: str, partitions: int) -> None:
        ReleaseGathering.__init__(self, run, partitions)
        Machine.__init__(self)
        self.waiting: str | None = None  # READY_WAIT, FINAL_WAIT or None
        self.timeout = 0.0
        self.theta: int | None = None  # the run's θ, once the final wait began
        self._deadline: float | None = None

    def _missing(self, heard: set[int]) -> tuple[int, ...]:
        return tuple(sorted(set(range(self.partitions)) - heard))

    def await_ready(self, now: float, timeout: float) -> None:
        """Wait until every worker said anything, at most ``timeout`` seconds from ``now``."""
        self._wait(READY_WAIT, now, timeout)

    def await_final(self, now: float, timeout: float, theta: int) -> None:
        """Wait until every worker sent its final chunk, at most ``timeout`` seconds from
        ``now``; ``theta`` is the run's."""
        self.theta = theta
        self._wait(FINAL_WAIT, now, timeout)

    def _wait(self, what: str, now: float, timeout: float) -> None:
        self.waiting, self.timeout, self._deadline = what, timeout, now + timeout
        self._decide()

    def receive(self, message: object) -> None:
        """One decoded message of the status topic (``ReleaseGathering.receive``); it may
        end the wait, even when refused.

        Raises:
            RemoteProtocolError: the gathering refused it (counted).
        """
        try:
            super().receive(message)
        finally:
            self._decide()

    def _decide(self) -> None:
        """End the wait if what it waits for is there."""
        if self.waiting == READY_WAIT and self.all_ready:
            self._end(WorkersListening())
        elif self.waiting == FINAL_WAIT and self.all_final:
            wrong = sorted(self.thetas - {self.theta})
            if wrong:
                self._end(ReleasesFailed(f"a partition used θ {wrong}, not {self.theta}"))
            else:
                self._end(ReleasesGathered())

    def _end(self, event: Event) -> None:
        self.waiting, self._deadline = None, None
        self._emit(event)

    def next_timer(self) -> float | None:
        """The pending wait's deadline (None: no wait pending)."""
        return self._deadline

    def handle_timer(self, now: float) -> None:
        """At the deadline, end the wait naming the partitions still missing."""
        if self._deadline is None or now < self._deadline:
            return
        if self.waiting == READY_WAIT:
            self._end(WorkersNotReady(self._missing(self.ready)))
        else:
            missing = self._missing(self.final)
            self._end(
                ReleasesFailed(
                    f"{len(missing)} partition(s) sent no releases within {self.timeout:g} s: "
                    f"{list(missing[:10])}"
                )
            )
