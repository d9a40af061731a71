"""What partition workers and their coordinator take from each other — theory of operation.

DESIGN.md "Scale" (issue 23), ``protocol.partition`` (what travels). The pumps of
``collector/partition.py`` and ``collector/cadr_partition.py`` parse and decode; what they
do with a decoded message is decided here, without I/O:

* A worker takes instructions on its control topics (``ctl/stage``; a CADR worker also
  ``ctl/cadr_theta``) from this run's coordinator only: ``check_from_coordinator`` refuses
  a message of a type the worker does not take there (``type``), of another sender than
  the coordinator (``sender``) or of another run (``run``), all with reason ``schema``. The
  caller counts the refusal where its other refusals are counted and publishes the
  ``Reject`` (``PeerFacingMachine.reject``); a refused message changes nothing.
* A stream worker's link (``protocol.partition_link.PartitionLinkMachine.take``) then acts
  on ``link_order``: ``stream open`` stops its ready statuses (``OPEN``); ``stream closed``
  and ``run closed`` close its stage (``CLOSE``, with the coordinator's detail, or a
  default sentence when it gave none); the coordinator's other stage messages are its
  ordinary traffic (None: nothing to do).
* The CADR coordinator's ``ReleaseGathering`` counts the workers' ``ready`` statuses and
  unites their ``CadrReleases`` chunks. It refuses, counted in ``refused`` and raised as a
  typed ``RemoteProtocolError`` naming the field: what is not a partition message of this
  run (``type``), a partition outside ``0..P-1`` or a count of partitions that is not the
  run's (``partition``), a chunk after the partition's final one (``final``), a device
  given twice, in one chunk or across chunks (``devices``). A refused chunk adds no value
  (its partition, well placed, still counts as ready: the worker listens). The workers'
  final chunks carry their counts of rejected and duplicate messages, summed here.
"""

from __future__ import annotations

from typing import NamedTuple

from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import Message, Stage
from ldpfleet.protocol.partition import CadrReleases, PartitionStatus
from ldpfleet.protocol.stream import STAGE

__all__ = [
    "CLOSE",
    "OPEN",
    "REFUSAL_FIELDS",
    "LinkOrder",
    "ReleaseGathering",
    "check_from_coordinator",
    "link_order",
]

# what a worker's ``CadrRefusal`` carries of a ``DsrIntake`` refusal entry
REFUSAL_FIELDS = ("request", "round", "requested", "remaining", "reason")


def check_from_coordinator(
    message: Message,
    run: str,
    accepted: tuple[type, ...],
    *,
    what: str = "stage message",
    where: str = "stage topic",
) -> None:
    """Refuse (``RemoteProtocolError``, reason ``schema``) a control message that is not one
    of ``accepted`` (``type``), not the coordinator's (``sender``) or of another run
    (``run``). ``what`` names the accepted messages and ``where`` the topic(s) in the
    reason."""
    if not isinstance(message, accepted):
        raise RemoteProtocolError(
            f"{message.type_name()!r} on the {where}, not a {what}", field="type", code="schema"
        )
    if message.sender != topics.COLLECTOR_ID:
        raise RemoteProtocolError(
            f"a {what} from {message.sender!r}: only the coordinator "
            f"({topics.COLLECTOR_ID!r}) speaks on the {where}",
            field="sender",
            code="schema",
        )
    if message.run != run:
        raise RemoteProtocolError(
            f"a {what} of run {message.run!r} on run {run!r}'s {where}",
            field="run",
            code="schema",
        )


OPEN, CLOSE = "open", "close"  # a ``LinkOrder``'s actions


class LinkOrder(NamedTuple):
    """What a stream worker's link does with the coordinator's stage message: ``OPEN``
    (stop saying ready) or ``CLOSE`` (close the stage for ``reason``; ``detail`` is what
    the coordinator said, kept as the link's ``close_detail``)."""

    action: str
    detail: str = ""
    reason: str = ""


def link_order(message: Message, run: str) -> LinkOrder | None:
    """A stream worker's reading of a message on ``ctl/stage`` (module docstring):
    ``RemoteProtocolError`` if it is not this run's coordinator's ``Stage``; None for the
    coordinator's other stage messages."""
    check_from_coordinator(message, run, (Stage,))
    assert isinstance(message, Stage)
    if message.stage == STAGE and message.state == "open":
        return LinkOrder(OPEN)
    if message.stage == STAGE and message.state == "closed":
        reason = message.detail or "the coordinator closed the stage"
        return LinkOrder(CLOSE, message.detail, reason)
    if message.stage == "run" and message.state == "closed":  # it gave up (no workers)
        reason = message.detail or "the coordinator closed the run"
        return LinkOrder(CLOSE, reason, reason)
    return None


class ReleaseGathering:
    """The CADR coordinator's view of its workers' DSR stage (module docstring): pure,
    messages in, counts and united values out."""

    def __init__(self, run: str, partitions: int) -> None:
        self.run, self.partitions = run, partitions
        self.ready: set[int] = set()
        self.final: set[int] = set()
        self.values: dict[str, float] = {}
        self.refusals: dict[str, dict] = {}
        self.thetas: set[int] = set()
        self.rejected = self.duplicates = 0
        self.refused = 0  # malformed or misplaced worker messages

    def _refuse(self, sentence: str, field: str) -> None:
        self.refused += 1
        raise RemoteProtocolError(sentence, field=field)

    def refuse_undecodable(self) -> None:
        """A payload on the status topic that did not decode: counted like a malformed
        message (there are no notices on that topic)."""
        self.refused += 1

    def receive(self, message: object) -> None:
        """One decoded message of the status topic; ``RemoteProtocolError`` (counted) if
        refused."""
        if not isinstance(message, PartitionStatus | CadrReleases) or message.run != self.run:
            self._refuse("not a CADR partition message of this run", "type")
        if message.partitions != self.partitions or message.partition >= self.partitions:
            self._refuse(
                f"partition {message.partition} of {message.partitions}, this run has "
                f"{self.partitions}",
                "partition",
            )
        self.ready.add(message.partition)  # a worker that sends anything listens
        if isinstance(message, CadrReleases):
            self._check_releases(message)
            self._unite(message)

    def _check_releases(self, message: CadrReleases) -> None:
        if message.partition in self.final:
            self._refuse(f"partition {message.partition} already sent its final chunk", "final")
        names = [*message.devices, *(r.device for r in message.refusals)]
        twice = [d for d in names if d in self.values or d in self.refusals]
        if twice or len(set(names)) != len(names):
            self._refuse(f"devices given twice: {(twice or names)[:5]}", "devices")

    def _unite(self, message: CadrReleases) -> None:
        self.thetas.add(message.theta)
        self.values.update(zip(message.devices, message.values, strict=True))
        for refusal in message.refusals:
            entry = {k: getattr(refusal, k) for k in REFUSAL_FIELDS}
            self.refusals[refusal.device] = entry
        if message.final:
            self.final.add(message.partition)
            self.rejected += message.rejected
            self.duplicates += message.duplicates

    @property
    def all_ready(self) -> bool:
        """Every worker listens."""
        return len(self.ready) == self.partitions

    @property
    def all_final(self) -> bool:
        """Every worker sent its final chunk."""
        return len(self.final) == self.partitions
