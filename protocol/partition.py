"""Collector partitions: what a partition worker tells the coordinator — theory of operation.

DESIGN.md "Scale" (issue 23). With ``[collector] partitions = P > 1`` every device belongs
to partition ``topics.partition_of(device, P)`` (SHA-256 of its id, mod P) and talks only to
that partition's worker, under ``ldp/{run}/p{p}/dev/...``. The coordinator keeps what is
global: it opens and closes the stream stage on ``ctl/stage`` (a worker never broadcasts)
and closes the run. Workers report to it on ``ldp/{run}/svc/collector/partition`` with
``PartitionStatus``:

* ``ready`` once subscribed (repeated until the coordinator's ``stream open`` is heard: a
  worker may start before the coordinator listens);
* ``progress`` (at most one a second while the stage is open: persisted, expected, joined);
* ``closed`` once its stage closed and every acknowledgement is published, with its
  counters (``COUNTERS``) and the close reason. Published on the worker's collector
  session after its last acks, so the broker has routed those acks before the summary,
  and the coordinator's ``run closed`` after all summaries (the workers' recorders stop on
  it and miss nothing of their partition).

* ``GcdpWindowMeans`` (a ``[gcdp]`` run): once the worker's devices completed window k, their
  window means (in [0, 1] units, at most ``MEANS_CHUNK`` nodes a message), on the same
  topic, so they reach the coordinator before the worker's ``closed``. The coordinator
  holds the global GC-DP release (docs/gcdp-fleet.md, Algorithm 4): it releases window k
  once it has every node's mean, exactly as one collector does from the steps (the same
  means, the same ledger charge, the same noise draws in window order).

* ``CadrReleases`` (a CADR-LDP run): the worker's ``DsrIntake`` accepts, persists and acks
  its devices' DSR releases (the devices keep the unpartitioned CADR topics); once every
  device of the partition released or refused, the worker sends the values and refusals
  (at most ``RELEASES_CHUNK`` devices a message, the last one ``final`` with its counts).
  The coordinator keeps the plan, the θ search (its secure sums), the relay phases and the
  release, computed from the united values exactly as one collector computes it.

The coordinator's traffic is O(P) messages per second and per stage, whatever the number
of reports; with ``[gcdp]`` it also receives, once, each node's mean of each window: what
the release publishes anyway (one value per node and window, not per report).
When a worker says what, and what the coordinator does with it, are the machines of
``protocol.partition_link`` and ``protocol.partition_coordinator``.
``PartitionTally`` (pure, no I/O) counts the statuses: each partition once per state, a
status for a partition outside 0..P-1 or of another run refused; it answers whether all are
ready or closed, the summed counters, and the stage's close reason (the one reason when
every partition completed, else the first incomplete partition's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

import msgspec
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import Ident, Message, Reason, Seq, Window
from msgspec import Meta

STATUS_KIND = "partition"  # ldp/{run}/svc/collector/partition
COMPLETE_REASON = "every device delivered every report"  # protocol.stream's close reason
# the summable counters of a partition's stream stage (StreamCollector.summary)
COUNTERS = (
    "devices",
    "devices_complete",
    "reports_expected",
    "reports_received",
    "reports_duplicate",
    "messages_after_close",
    "reports_rejected",
    "reports_refused",
    "reports_lost",
    "devices_rejected",
    "reports_withdrawn",
)
Count = Annotated[int, Meta(ge=0, le=2**53)]


class PartitionStatus(Message, tag="partition_status", kw_only=True):
    """Partition worker -> coordinator (``svc/collector/partition``): ready, progress, closed."""

    partition: Annotated[int, Meta(ge=0, lt=topics.MAX_PARTITIONS)]
    partitions: Annotated[int, Meta(ge=1, le=topics.MAX_PARTITIONS)]
    state: Literal["ready", "progress", "closed"]
    persisted: Count = 0
    expected: Count = 0
    joined: Count = 0
    devices: Count = 0
    complete: bool = False
    detail: Reason = ""
    counters: Annotated[list[Count], Meta(max_length=len(COUNTERS))] = msgspec.field(
        default_factory=list
    )  # in COUNTERS order


MEANS_CHUNK = 4096  # nodes per GcdpWindowMeans (well inside codec.MAX_PAYLOAD)


class GcdpWindowMeans(Message, tag="gcdp_window_means", kw_only=True):
    """Partition worker -> coordinator (``svc/collector/partition``): ``means[i]`` is device
    ``nodes[i]``'s mean over window ``window`` (steps ``t0 .. t0 + steps - 1``)."""

    partition: Annotated[int, Meta(ge=0, lt=topics.MAX_PARTITIONS)]
    partitions: Annotated[int, Meta(ge=1, le=topics.MAX_PARTITIONS)]
    window: Seq
    t0: Seq
    steps: Window
    nodes: Annotated[list[Ident], Meta(min_length=1, max_length=MEANS_CHUNK)]
    means: Annotated[
        list[Annotated[float, Meta(ge=0.0, le=1.0)]], Meta(min_length=1, max_length=MEANS_CHUNK)
    ]

    def __post_init__(self) -> None:
        if len(self.means) != len(self.nodes):
            raise msgspec.ValidationError(
                f"means must have one value per node ({len(self.nodes)}), got {len(self.means)}"
            )


RELEASES_CHUNK = 4096  # devices per CadrReleases (values and refusals together)


class CadrRefusal(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One device's ``BudgetRefused`` as the worker's ``DsrIntake`` recorded it."""

    device: Ident
    request: Annotated[str, Meta(max_length=64)]
    round: Annotated[int, Meta(ge=0, le=2**31)] = 0
    requested: Annotated[float, Meta(ge=0.0)] = 0.0
    remaining: float = 0.0
    reason: Reason = ""


class CadrReleases(Message, tag="cadr_releases", kw_only=True):
    """Partition worker -> coordinator (``svc/collector/partition``): a CADR-LDP run's DSR
    releases of the worker's devices (``values[i]`` is ``devices[i]``'s), its devices'
    budget refusals, in chunks of at most ``RELEASES_CHUNK``; the chunk with ``final`` set
    comes last and carries the worker's counts (releases rejected, duplicates acked)."""

    partition: Annotated[int, Meta(ge=0, lt=topics.MAX_PARTITIONS)]
    partitions: Annotated[int, Meta(ge=1, le=topics.MAX_PARTITIONS)]
    theta: Annotated[int, Meta(ge=1, le=2**31)]
    devices: Annotated[list[Ident], Meta(max_length=RELEASES_CHUNK)] = msgspec.field(
        default_factory=list
    )
    values: Annotated[list[float], Meta(max_length=RELEASES_CHUNK)] = msgspec.field(
        default_factory=list
    )
    refusals: Annotated[list[CadrRefusal], Meta(max_length=RELEASES_CHUNK)] = msgspec.field(
        default_factory=list
    )
    final: bool = False
    rejected: Count = 0
    duplicates: Count = 0

    def __post_init__(self) -> None:
        if len(self.values) != len(self.devices):
            raise msgspec.ValidationError(
                f"values must have one value per device ({len(self.devices)}), "
                f"got {len(self.values)}"
            )
        if not all(math.isfinite(v) for v in self.values):
            raise msgspec.ValidationError("values must be finite")


PARTITION_MESSAGES = (PartitionStatus, GcdpWindowMeans, CadrReleases)


def status_topic(run: str) -> str:
    """Where workers report to the coordinator."""
    return topics.svc(run, topics.COLLECTOR_ID, STATUS_KIND)


@dataclass
class PartitionTally:
    """The coordinator's view of its P workers (pure: statuses in, answers out)."""

    run: str
    partitions: int
    ready: set[int] = field(default_factory=set)
    closed: dict[int, PartitionStatus] = field(default_factory=dict)
    latest: dict[int, PartitionStatus] = field(default_factory=dict)
    refused: int = 0

    def receive(self, status: object) -> None:
        """Count one status; refuse (``RemoteProtocolError``) anything else."""
        if not isinstance(status, PartitionStatus) or status.run != self.run:
            self.refused += 1
            raise RemoteProtocolError("not a partition status of this run", field="type")
        if status.partitions != self.partitions or status.partition >= self.partitions:
            self.refused += 1
            raise RemoteProtocolError(
                f"partition {status.partition} of {status.partitions}, this run has "
                f"{self.partitions}",
                field="partition",
            )
        self.ready.add(status.partition)
        if status.partition not in self.closed:
            self.latest[status.partition] = status
        if status.state == "closed":
            self.closed.setdefault(status.partition, status)

    @property
    def all_ready(self) -> bool:
        """Every partition's worker listens."""
        return len(self.ready) == self.partitions

    @property
    def all_closed(self) -> bool:
        """Every partition's stage closed."""
        return len(self.closed) == self.partitions

    def progress(self) -> tuple[int, int, int, int]:
        """(persisted, expected, joined, devices) summed over the latest statuses."""
        latest = self.latest.values()
        return (
            sum(s.persisted for s in latest),
            sum(s.expected for s in latest),
            sum(s.joined for s in latest),
            sum(s.devices for s in latest),
        )

    def counters(self) -> dict[str, int]:
        """The closed partitions' counters, summed."""
        totals = dict.fromkeys(COUNTERS, 0)
        for status in self.closed.values():
            for name, value in zip(COUNTERS, status.counters, strict=False):
                totals[name] += value
        return totals

    def close_reason(self) -> str:
        """The stage's close reason: the complete one, or the first incomplete partition's."""
        for partition in sorted(self.closed):
            status = self.closed[partition]
            if not status.complete:
                return status.detail
        return COMPLETE_REASON if self.closed else ""

    @property
    def complete(self) -> bool:
        """Every partition closed complete."""
        return self.all_closed and all(s.complete for s in self.closed.values())
