"""The stream coordinator's decisions over its partition workers, without I/O — theory of
operation.

DESIGN.md "Scale" (issue 23), ``protocol.partition`` (what travels, ``PartitionTally``).
``collector.partition.coordinate_stream`` is the pump: it decodes the status topic, drives
the timers on the loop's clock, runs the run announcement when told and publishes the
outbox. ``StreamCoordinator`` decides, on an injected clock:

* waiting (from ``start``): statuses go to the tally; once every partition said anything
  (``PartitionTally.all_ready``) it emits ``WorkersReady`` (the pump announces the run, the
  fleet may start, then calls ``open``); if they are not all ready ``workers_timeout``
  seconds after ``start`` it emits ``WorkersGone`` with the sentence naming how many and
  which (the stage never opens);
* ``open`` says ``stream open`` on ``ctl/stage`` and checks every ``CHECK_EVERY`` seconds
  from then on: a worker that said ``ready`` after the opening (it restarted) is told
  ``stream open`` again at the next check; each check emits ``Progress`` (the summed counts);
  a check more than ``fleet_timeout`` seconds after the opening that finds no device joined
  closes the stage (``StageAborted`` with the sentence, then ``stream closed`` with it);
* with a ``FleetStatusReader`` (``fleet``: a split run's fleet shards say when their
  devices are done, ``protocol.fleet_done``) the statuses on the shards' topics go to
  ``fleet_done``; once every shard said so (``FleetEnded``, emitted for the pump) and a
  device did not finish (gone for good or stopped otherwise) the open stage closes:
  ``stream closed`` with the reader's sentence, which every worker takes as its close
  order (``partition_control.link_order``) and closes its stage with, missing batches
  counting as lost, as an unpartitioned collector side does on the same statuses. A fleet
  whose every device finished needs no order: a finished device's reports are all
  persisted and acknowledged, so every worker's stage completes on its own and the tally
  closes the stage with its reason, whichever of the shards' and the workers' statuses
  arrives first (an order there would only change the stage's closing words, at the
  mercy of that race). The fleet ending before ``open`` (the shards ran while the run was
  being announced) closes the stage as soon as it opens. A refused status is the reader's
  rejection (counted, noticed on ``svc/collector/reject``: this machine's outbox);
* the status that makes every partition closed runs one last check, then (unless a check
  or the fleet's end closed it already) ``stream closed`` with the tally's reason, and the
  coordinator is ``done``. Every worker closed before the opening: ``open`` says ``open``
  then at once ``closed``.

What is refused is counted in the tally's ``refused`` (``receive`` raises the typed error;
``refuse`` counts a payload that did not decode or that another receiver did not take).
"""

from __future__ import annotations

from dataclasses import dataclass

from ldpfleet.protocol import topics
from ldpfleet.protocol.events import Event, Machine
from ldpfleet.protocol.fleet_done import FleetEnded, FleetStatusReader
from ldpfleet.protocol.messages import Message, Stage
from ldpfleet.protocol.partition import PartitionStatus, PartitionTally
from ldpfleet.protocol.stream import STAGE

__all__ = [
    "CHECK_EVERY",
    "Progress",
    "StageAborted",
    "StreamCoordinator",
    "WorkersGone",
    "WorkersReady",
]

CHECK_EVERY = 0.5  # seconds between two checks of the open stage

WAITING, READY, OPEN, DONE, MISSING = "waiting", "ready", "open", "done", "missing"


@dataclass(frozen=True, slots=True)
class WorkersReady(Event):
    """Every worker listens: announce the run, then ``open``."""


@dataclass(frozen=True, slots=True)
class WorkersGone(Event):
    """Not every worker said ready within ``workers_timeout``."""

    sentence: str


@dataclass(frozen=True, slots=True)
class Progress(Event):
    """The summed counts of the workers' latest statuses at a check."""

    persisted: int
    expected: int
    joined: int
    devices: int


@dataclass(frozen=True, slots=True)
class StageAborted(Event):
    """The stage closed because no device joined within ``fleet_timeout``."""

    sentence: str


class StreamCoordinator(Machine):
    """The coordinator's stream stage (module docstring): statuses and time in, stage
    messages and events out."""

    def __init__(
        self,
        run: str,
        partitions: int,
        *,
        workers_timeout: float = 60.0,
        fleet_timeout: float = 60.0,
        check_every: float = CHECK_EVERY,
        fleet: FleetStatusReader | None = None,
    ) -> None:
        super().__init__()
        self.run, self.partitions = run, partitions
        self.workers_timeout, self.fleet_timeout = workers_timeout, fleet_timeout
        self.check_every = check_every
        self.tally = PartitionTally(run, partitions)
        self.phase = WAITING
        self.opened_at: float | None = None
        self._next: float | None = None
        self._reopen = False  # a (restarted) worker said ready after the opening
        self._closing = False  # a check (no fleet) or the fleet's end closed the stage
        self._closed_detail = ""  # ... and the sentence it was closed with
        self.fleet = fleet  # the fleet shards' statuses (None: nobody reads them)
        self._fleet_ended: FleetEnded | None = None  # every shard said so

    @property
    def done(self) -> bool:
        """Every worker closed and the stage's ``closed`` is said."""
        return self.phase == DONE

    def _stage(self, state: str, detail: str = "") -> None:
        self._send(
            topics.ctl(self.run, "stage"),
            Stage(
                run=self.run, sender=topics.COLLECTOR_ID, stage=STAGE, state=state, detail=detail
            ),
        )

    def start(self, now: float) -> None:
        """Listening from ``now``: the workers have ``workers_timeout`` seconds to be ready."""
        self._next = now + self.workers_timeout

    def refuse(self) -> None:
        """Count a message of the status topic that did not decode, or that the caller's
        other receiver did not take."""
        self.tally.refused += 1

    def receive(self, message: object, now: float) -> None:
        """One decoded message of the status topic (module docstring).

        Raises:
            RemoteProtocolError: not a status of this run's partitions (counted).
        """
        self.tally.receive(message)
        assert isinstance(message, PartitionStatus)
        if self.phase == WAITING and self.tally.all_ready:
            self.phase, self._next = READY, None
            self._emit(WorkersReady())
        elif self.phase == OPEN:
            if message.state == "ready":
                self._reopen = True
            if self.tally.all_closed:
                self._check(now)
                self._finish()

    def open(self, now: float) -> None:
        """Say ``stream open`` (after ``WorkersReady``); checks from now on."""
        assert self.phase == READY, f"open in phase {self.phase}"
        self._stage("open")
        self.phase, self.opened_at = OPEN, now
        if self._fleet_ended is not None:  # the fleet ended while the run was announced
            self._close_for_fleet(self._fleet_ended)
        if self.tally.all_closed:
            self._finish()
        else:
            self._next = now + self.check_every

    def fleet_done(self, topic: topics.Topic, message: Message, now: float) -> None:
        """One decoded message of a fleet shard's status topic, to the reader (a refused
        one is its rejection: counted, noticed); every shard said done: the open stage
        closes (module docstring). Without a reader: nothing."""
        if self.fleet is None:
            return
        self.fleet.receive(topic, message, now)
        self._take_fleet()

    def refuse_fleet_done(self, topic: str, error) -> None:
        """A payload on a shard's status topic that did not decode: the reader's
        rejection (counted, noticed). Without a reader: nothing."""
        if self.fleet is None:
            return
        self.fleet.reject(topic, "fleet_done", error)
        self._take_fleet()

    def _take_fleet(self) -> None:
        """The reader's notices into this outbox; its ``FleetEnded`` decides."""
        assert self.fleet is not None
        self._outbound.extend(self.fleet.pop_outbound())
        for event in self.fleet.pop_events():
            if not isinstance(event, FleetEnded):
                continue  # Rejected: counted by the reader, its notice is out
            self._emit(event)
            if event.gone or event.stopped:  # else every stage completes on its own
                self._fleet_ended = event
                if self.phase == OPEN:
                    self._close_for_fleet(event)

    def _close_for_fleet(self, ended: FleetEnded) -> None:
        if not self._closing:
            self._close_early(ended.sentence)

    def _close_early(self, sentence: str) -> None:
        """Close the open stage before every worker closed (no fleet, or the fleet ended
        with devices that did not finish); the sentence is said again to a restarted worker."""
        self._closing, self._closed_detail = True, sentence
        self._stage("closed", sentence)

    def _check(self, now: float) -> None:
        if self._reopen:  # say it again for a worker that restarted: its stage's state
            self._reopen = False
            if self._closing:  # closed early: "open" would keep it waiting its stage_timeout
                self._stage("closed", self._closed_detail)
            else:
                self._stage("open")
        self._emit(Progress(*self.tally.progress()))
        silent = self.tally.progress()[2] == 0
        assert self.opened_at is not None
        if not self._closing and silent and now - self.opened_at > self.fleet_timeout:
            sentence = f"no fleet joined run {self.run} within {self.fleet_timeout:g} s"
            self._emit(StageAborted(sentence))
            self._close_early(sentence)

    def _finish(self) -> None:
        if not self._closing:
            self._stage("closed", self.tally.close_reason())
        self.phase, self._next = DONE, None

    def next_timer(self) -> float | None:
        """The workers' deadline while waiting, the next check while open."""
        return self._next

    def handle_timer(self, now: float) -> None:
        """Give up on missing workers at their deadline; check the open stage."""
        if self._next is None or now < self._next:
            return
        if self.phase == WAITING:
            missing = sorted(set(range(self.partitions)) - self.tally.ready)
            self.phase, self._next = MISSING, None
            self._emit(
                WorkersGone(
                    f"{len(missing)} of {self.partitions} partition workers of run {self.run} "
                    f"did not say ready within {self.workers_timeout:g} s "
                    f"(partitions {missing[:10]})"
                )
            )
        elif self.phase == OPEN:
            self._check(now)
            self._next = now + self.check_every
