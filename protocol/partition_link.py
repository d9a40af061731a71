"""A stream partition worker's side of the coordinator conversation, without I/O — theory
of operation.

DESIGN.md "Scale" (issue 23), ``protocol.partition`` (what travels), ``protocol.
partition_control`` (how a worker reads the coordinator's stage messages). The pumps of
``collector/service.py`` and ``collector/partition.py`` deliver, drive the timers and publish
the outbox; every decision of the conversation is taken here, on an injected clock (``now``,
the pump's ``loop.time()``):

* ``PartitionLinkMachine`` says ``ready`` at ``start`` and again every ``READY_EVERY``
  seconds until the coordinator's ``stream open`` is heard (a worker may start before the
  coordinator listens); then ``progress`` at once and every ``PROGRESS_EVERY`` seconds, but
  only when the status differs from the last one sent; ``stream closed`` or ``run closed``
  keep the coordinator's detail (``close_detail``) and hand back the order (the worker's
  stage closes). Once the pump says the stage is done (``stage_done``: its last
  acknowledgements are published), one ``closed`` summary, repeated every ``READY_EVERY``
  seconds (``say_closed_again`` says it at once on a new connection): the coordinator may
  not have listened when the first one went out (a stage whose deadline passed at once
  closes before the coordinator subscribed, and statuses are not retained); its tally
  takes each partition's first ``closed`` only. A partition without devices says a
  complete ``closed`` at once (``close_empty``).
* The statuses count what the worker's ``StreamCollector`` holds (``worker_counts``):
  reports persisted, reports expected (devices x batches), devices joined (said hello),
  devices.
* ``PartitionWorker`` is what a worker's pump drives: its ``StreamCollector`` and its link
  as one machine. A worker never broadcasts: its collector's ``ctl/`` messages (the stage
  ``open`` and ``closed`` it announces when it serves alone) are dropped from the outbox,
  the coordinator speaks on ``ctl/`` for every partition. The coordinator's messages on
  ``ctl/stage`` go to ``control``: refused ones (``partition_control.link_order``) are
  counted, noticed and stored as the collector's other refusals; a close order closes the
  collector's stage with the coordinator's reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import ProtocolError, RemoteProtocolError
from ldpfleet.protocol.events import Machine, Outbound
from ldpfleet.protocol.messages import Message
from ldpfleet.protocol.partition import COMPLETE_REASON, COUNTERS, PartitionStatus, status_topic
from ldpfleet.protocol.partition_control import OPEN, LinkOrder, link_order
from ldpfleet.protocol.stream import StreamCollector

__all__ = [
    "PROGRESS_EVERY",
    "READY_EVERY",
    "PartitionLinkMachine",
    "PartitionWorker",
    "WorkerCounts",
    "partition_status",
    "worker_counts",
]

PROGRESS_EVERY = 1.0  # seconds between two progress statuses of a worker
READY_EVERY = 1.0  # seconds between two ready (later: closed) statuses

READY, OPEN_PHASE, CLOSED = "ready", "open", "closed"  # a link's phases, in order


class WorkerCounts(NamedTuple):
    """What a status says of the worker's stage."""

    persisted: int = 0
    expected: int = 0
    joined: int = 0
    devices: int = 0


def worker_counts(collector: StreamCollector | None) -> WorkerCounts:
    """The counts of ``collector``'s stage (all zero without one).

    Returns:
        reports persisted, reports expected (devices x batches), devices that said hello,
        devices.
    """
    if collector is None:
        return WorkerCounts()
    states = collector.devices.values()
    devices = len(collector.devices)
    return WorkerCounts(
        persisted=sum(len(s.persisted) for s in states),
        expected=devices * collector.config.n_batches,
        joined=sum(s.hello for s in states),
        devices=devices,
    )


def partition_status(
    run: str,
    partition: int,
    partitions: int,
    state: str,
    counts: WorkerCounts | None = None,
    *,
    complete: bool = False,
    detail: str = "",
    counters: Sequence[int] = (),
) -> PartitionStatus:
    """The one builder of a worker's ``PartitionStatus`` (the stream link's, the CADR
    link's, the bulk collector's): ``state`` (ready, progress, closed) of ``partition`` of
    ``partitions``, saying ``counts`` (all zero if None), and for a ``closed`` summary whether it is
    ``complete``, its ``detail`` and its ``counters`` (``COUNTERS`` order).

    Returns:
        the status, from the coordinator's collector id (``topics.COLLECTOR_ID``).
    """
    counts = counts if counts is not None else WorkerCounts()
    return PartitionStatus(
        run=run,
        sender=topics.COLLECTOR_ID,
        partition=partition,
        partitions=partitions,
        state=state,  # type: ignore[arg-type]  # the message's Literal checks it on decode
        persisted=counts.persisted,
        expected=counts.expected,
        joined=counts.joined,
        devices=counts.devices,
        complete=complete,
        detail=detail,
        counters=list(counters),
    )


class PartitionLinkMachine(Machine):
    """A worker's statuses to the coordinator (module docstring): pure, told the time."""

    def __init__(
        self,
        run: str,
        partition: int,
        partitions: int,
        *,
        ready_every: float = READY_EVERY,
        progress_every: float = PROGRESS_EVERY,
    ) -> None:
        super().__init__()
        self.run, self.partition, self.partitions = run, partition, partitions
        self.ready_every, self.progress_every = ready_every, progress_every
        self.collector: StreamCollector | None = None  # what the statuses count
        self.phase: str | None = None  # None (not started), READY, OPEN_PHASE, CLOSED
        self.close_detail: str | None = None  # the coordinator closed the stage
        self.closed_status: PartitionStatus | None = None  # the summary, once said
        self._last_progress: PartitionStatus | None = None
        self._next: float | None = None

    @property
    def opened(self) -> bool:
        """The coordinator's ``stream open`` was heard (or the stage is over)."""
        return self.phase in (OPEN_PHASE, CLOSED)

    def _status(self, state: str, **extra) -> PartitionStatus:
        counts = worker_counts(self.collector)
        return partition_status(self.run, self.partition, self.partitions, state, counts, **extra)

    def _say(self, status: PartitionStatus) -> None:
        self._send(status_topic(self.run), status)

    def start(self, now: float, collector: StreamCollector | None = None) -> None:
        """Say ``ready`` (counting ``collector``'s stage), again every ``ready_every`` until
        the stage opens."""
        self.collector = collector
        self.phase = READY
        self._say(self._status("ready"))
        self._next = now + self.ready_every

    def take(self, message: Message, now: float) -> LinkOrder | None:
        """A coordinator message on ``ctl/stage`` (``partition_control.link_order``): on
        ``OPEN`` stop saying ready and say the progress; on ``CLOSE`` keep the detail.

        Returns:
            the order for the caller (None: the coordinator's other stage traffic).

        Raises:
            RemoteProtocolError: not this run's coordinator's ``Stage`` (nothing changes).
        """
        order = link_order(message, self.run)
        if order is None:
            return None
        if order.action == OPEN:
            if self.phase == READY:
                self.phase = OPEN_PHASE
                self._progress(now)
        else:
            self.close_detail = order.detail
        return order

    def _progress(self, now: float) -> None:
        status = self._status("progress")
        if status != self._last_progress:
            self._say(status)
            self._last_progress = status
        self._next = now + self.progress_every

    def stage_done(self, now: float, summary: dict) -> None:
        """The worker's stage closed and its last acknowledgements are out: say the
        ``closed`` summary (``StreamCollector.summary``), complete when the stage closed
        with no report lost; then repeat it (``handle_timer``)."""
        complete = summary["stage_state"] == "closed" and summary["reports_lost"] == 0
        self._close(
            now,
            self._status(
                "closed",
                complete=complete,
                detail=summary["close_reason"][:500],
                counters=[int(summary[name]) for name in COUNTERS],
            ),
        )

    def close_empty(self, now: float) -> None:
        """A partition without devices: a complete ``closed`` at once, then repeated."""
        self.collector = None
        self._close(
            now,
            self._status(
                "closed", complete=True, detail=COMPLETE_REASON, counters=[0] * len(COUNTERS)
            ),
        )

    def _close(self, now: float, status: PartitionStatus) -> None:
        self.phase = CLOSED
        self.closed_status = status
        self.say_closed_again(now)

    def say_closed_again(self, now: float) -> None:
        """Say the ``closed`` summary now (a new connection), then every ``ready_every``."""
        assert self.closed_status is not None, "say_closed_again before the summary"
        self._say(self.closed_status)
        self._next = now + self.ready_every

    def next_timer(self) -> float | None:
        """When the next ready, progress or repeated closed status is due."""
        return self._next

    def handle_timer(self, now: float) -> None:
        """Say what is due: ready again, the progress (if changed) or closed again."""
        if self._next is None or now < self._next:
            return
        if self.phase == READY:
            self._say(self._status("ready"))
            self._next = now + self.ready_every
        elif self.phase == OPEN_PHASE:
            self._progress(now)
        elif self.phase == CLOSED:
            self.say_closed_again(now)


class PartitionWorker(Machine):
    """A partition worker's ``StreamCollector`` and link as one machine (module docstring).

    Inputs other than the coordinator's go to ``collector`` itself (``receive``,
    ``confirm_persisted``, ...); this machine merges the two outboxes (the collector's
    first, without its ``ctl/`` broadcasts) and the two timers."""

    def __init__(self, collector: StreamCollector, link: PartitionLinkMachine) -> None:
        super().__init__()
        self.collector, self.link = collector, link
        self._broadcasts = topics.ctl(link.run, "")  # the prefix a worker never publishes
        self._control_topic = topics.ctl(link.run, "stage")

    def start(self, now: float) -> None:
        """The link says ``ready`` (the collector is open already)."""
        self.link.start(now, self.collector)

    def control(self, message: Message, now: float) -> None:
        """The coordinator's decoded message on ``ctl/stage``: refused (counted and noticed
        by the collector, ``PeerFacingMachine.reject``) unless it is this run's
        coordinator's ``Stage``; a close order closes the collector's stage."""
        try:
            order = self.link.take(message, now)
        except RemoteProtocolError as error:
            self.collector.reject(self._control_topic, message.type_name(), error)
            return
        if order is not None and order.action != OPEN:
            self.collector.close(order.reason)

    def refuse_control(self, error: ProtocolError) -> None:
        """A payload on ``ctl/stage`` that did not decode: refused as ``control`` refuses."""
        self.collector.reject(self._control_topic, "stage", error)

    def stage_done(self, now: float) -> None:
        """The stage closed and its last acknowledgements are published: the summary."""
        self.link.stage_done(now, self.collector.summary())

    @property
    def has_outbound(self) -> bool:
        """Whether either outbox holds anything."""
        return self.collector.has_outbound or self.link.has_outbound

    def pop_outbound(self) -> list[Outbound]:
        """The collector's messages without its ``ctl/`` broadcasts, then the link's.

        Returns:
            the messages to publish, in order.
        """
        outbound = [
            o for o in self.collector.pop_outbound() if not o.topic.startswith(self._broadcasts)
        ]
        outbound.extend(self.link.pop_outbound())
        return outbound

    def next_timer(self) -> float | None:
        """The earlier of the collector's and the link's deadlines."""
        timers = [t for t in (self.collector.next_timer(), self.link.next_timer()) if t is not None]
        return min(timers) if timers else None

    def handle_timer(self, now: float) -> None:
        """Fire whichever of the two is due."""
        due = self.collector.next_timer()
        if due is not None and due <= now:
            self.collector.handle_timer(now)
        self.link.handle_timer(now)
