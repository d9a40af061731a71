"""A split run's fleet shards tell the collector side that their devices are done —
theory of operation.

In one process (``scenarios.runner``) the runner sees its fleet task end: every device has
finished, failed, or crashed for good (``[faults] never_return``), so nothing more can
arrive and it closes the stream stage at once (``CollectorService.request_close``), then
opens the next stage (``[secure_sum]``, ``protocol.stage_opening``). Split across processes
(the collector side and ``k`` fleet shards: ``scenarios.sides``, docs/separate-processes.md)
the collector cannot see that: a device that crashed for good is silent, as a slow one is,
and the stream stage waited for it until ``[collector] stage_timeout`` (600 s by default)
while the shards, done, gave up waiting for the next stage. So each shard says it on the
wire (DESIGN.md "Messages and topics"; the stream stage of paper Section 4 ends when no
report can come any more):

* a shard whose devices have all ended publishes ONE ``FleetDone`` (``fleet_done_statuses``)
  on ``ldp/{run}/dev/fleet-{i}-of-{k}/up/fleet_done`` (QoS 1, not retained): its shard
  ``i`` of ``k``, how many of its devices finished, and which are gone for good or stopped
  otherwise. The topic is an ``up`` topic whose device level is the shard's name, which the
  run's ACL lets the fleet's ``gateway`` identity publish and the collector read (its
  stream subscription ``dev/+/up/#`` already covers it); a device may publish only under its
  own id, so a device of the run named like a shard makes the status refused (below);
* a shard with more gone or stopped devices than one message may list
  (``MAX_LISTED_DEVICES`` of each) sends its status in ``J`` parts, part ``j`` of ``J``
  listing the ``j``-th ``MAX_LISTED_DEVICES`` of each sorted list and repeating
  ``finished``; the machine takes the shard as done once every part arrived. (Parts, not a
  count plus a digest: the collector side then still names every gone device in its
  results and still checks that each one is a device of the shard's slice, listed once —
  a digest of lists it never sees would leave it nothing to check and nothing to report.
  A part holds the one-message status's limits, so no payload grows past what a one-part
  status may already be (at most 2 x 15,000 ids of 64 characters, ~2.01 MB, under the
  codec's 2 MiB); a 100,000,000-device slice needs 6,667 parts at most,
  ``MAX_FLEET_DONE_PARTS``);
* the collector side's ``FleetStatus`` knows the run's device ids. It accepts a status
  only if its topic and payload agree (run, sender = the topic's name = ``fleet-i-of-k``,
  not a device of the run), ``k`` is the one every earlier status named, and its lists
  name devices of shard ``i``'s slice (device ``n`` is in shard ``n % k``:
  ``devices.fleet.Fleet``), disjoint, with ``finished`` making up the rest of the slice
  (for parts: every part names the same ``finished`` and ``J``, no device is listed in two
  parts, the lists never outgrow the slice, and the last part to arrive makes them add up).
  Anything else raises ``RemoteProtocolError`` (the pump rejects it like any bad input:
  counted in ``rejections_by_reason``, published on ``svc/collector/reject``, traced). The
  same shard's status (part) again counts once (``duplicates``: QoS 1 redelivery, a
  restarted shard);
* when every shard ``0..k-1`` has said so, it emits ``FleetEnded`` once, with one
  sentence: the pump closes the stream stage as the one-process runner does (missing
  batches count as lost) and the run goes on to its next stage.

Who reads the statuses: an unpartitioned collector side's ``CollectorService`` (its stream
subscription carries them; its stream machine rejects the bad ones). With ``[collector]
partitions = P > 1`` the coordinator does (``FleetStatusReader``, inside
``protocol.partition_coordinator.StreamCoordinator``): the statuses name devices of every
partition, the coordinator knows the whole fleet and already orders every worker's stage
closed on ``ctl/stage``, so the workers need nothing new; a refused status is counted by
reason, noticed on ``svc/collector/reject`` and recorded in the coordinator's trace, as the
unpartitioned collector's refusals are.

A shard that refused the run (the collector announced other terms: another seed,
scenario, device count or kind; ``protocol.rendezvous``) starts none of its devices, and
says so on the same topic with ONE ``FleetRefused`` carrying its own terms
(``fleet_refused_status``): the collector side, which otherwise heard nothing and waited
``--fleet-timeout`` (60 s) before saying "no fleet joined", counts the shard as done with
every device of its slice stopped, names the first term that differs with both values
(``FleetStatus.refusals``: field, the collector's value, the fleet's) and, once every
shard said done or refused, ends the stage with a sentence that says so
("fleet shard 0 of 1 refused run r: the collector runs seed 1, the fleet seed 2; start
both sides with the same scenario and seed"). A ``FleetRefused`` whose terms are the
collector's own (nothing to refuse) is refused itself (field ``terms``). A shard restarted
with the collector's terms before the fleet ended (the user followed the sentence while
other shards ran) replaces its refusal with its done status; once the fleet ended, the
refusal stands and a later status is a duplicate.

A lost, late or never-sent status (a shard killed before its devices ended) changes
nothing: the stage closes on its own deadlines, as before. No I/O and no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Annotated

from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Event, Machine, Outbound, PeerFacingMachine
from ldpfleet.protocol.messages import (
    MAX_FLEET_DONE_PARTS,
    MAX_FLEET_SHARDS,
    MAX_LISTED_DEVICES,
    FleetDone,
    Ident,
    Message,
)
from ldpfleet.protocol.rendezvous import Digest, RunTerms, ScenarioName
from msgspec import Meta

__all__ = [
    "FLEET_DONE_KIND",
    "FLEET_MESSAGES",
    "FleetEnded",
    "FleetRefused",
    "FleetStatus",
    "FleetStatusReader",
    "ShardDone",
    "fleet_done_filter",
    "fleet_done_status",
    "fleet_done_statuses",
    "fleet_refused_status",
    "shard_name",
]

FLEET_DONE_KIND = "fleet_done"  # ldp/{run}/dev/fleet-{i}-of-{k}/up/fleet_done
_SHARD_NAME = re.compile(r"fleet-(0|[1-9][0-9]{0,3})-of-([1-9][0-9]{0,3})\Z")


def shard_name(shard: int, shards: int) -> str:
    """The device level of shard ``shard`` of ``shards``'s status topic.

    Returns:
        ``fleet-{shard}-of-{shards}``.

    Raises:
        ParameterError: not ``0 <= shard < shards <= MAX_FLEET_SHARDS``."""
    if not (
        isinstance(shard, int)
        and isinstance(shards, int)
        and 0 <= shard < shards <= MAX_FLEET_SHARDS
    ):
        raise ParameterError(
            f"shard {shard!r} of {shards!r} is not 0 <= shard < shards <= {MAX_FLEET_SHARDS}",
            field="shard",
            limit=f"0 <= shard < shards <= {MAX_FLEET_SHARDS}",
            value=(shard, shards),
        )
    return f"fleet-{shard}-of-{shards}"


def fleet_done_filter(run: str) -> str:
    """Every shard's status topic of ``run`` (a partitioned run's coordinator subscribes it:
    the statuses keep the unpartitioned ``dev/`` layout)."""
    return topics.up(run, "+", FLEET_DONE_KIND)


class FleetRefused(Message, tag="fleet_refused", kw_only=True):
    """Fleet shard ``shard`` of ``shards`` -> collector (the shard's ``up/fleet_done`` topic,
    as ``FleetDone``): the collector announced this run on other terms than mine, so none
    of my devices started; these are MY terms (``protocol.rendezvous.RunTerms``: kind,
    scenario, seed, devices, digest), for the collector to name what differs."""

    shard: Annotated[int, Meta(ge=0, lt=MAX_FLEET_SHARDS)]
    shards: Annotated[int, Meta(ge=1, le=MAX_FLEET_SHARDS)]
    kind: Ident
    scenario: ScenarioName
    digest: Digest
    seed: Annotated[int, Meta(ge=0, le=2**63 - 1)]
    devices: Annotated[int, Meta(ge=1, le=10_000_000)]

    def __post_init__(self) -> None:
        if not self.shard < self.shards:
            raise ValueError(f"field `shard` must be < shards ({self.shards}), got {self.shard}")

    def terms(self) -> RunTerms:
        """The shard's terms."""
        return RunTerms(self.kind, self.scenario, self.seed, self.devices, self.digest)


FLEET_MESSAGES = (FleetRefused,)  # the codec's (``FleetDone`` is protocol.messages')


def fleet_refused_status(run: str, shard: tuple[int, int], terms: RunTerms) -> Outbound:
    """Shard ``shard`` = ``(i, k)``'s refusal of ``run`` (module docstring), on its
    ``up/fleet_done`` topic, saying its own ``terms``.

    Raises:
        ParameterError: a bad run id or shard."""
    index, count = shard
    sender = shard_name(index, count)
    topics.check_ident(run, "run")
    return Outbound(
        topics.up(run, sender, FLEET_DONE_KIND),
        FleetRefused(
            run=run, sender=sender, shard=index, shards=count, kind=terms.kind,
            scenario=terms.scenario, digest=terms.digest, seed=terms.seed,
            devices=terms.devices,
        ),
    )  # fmt: skip


def fleet_done_statuses(
    run: str,
    shard: tuple[int, int],
    finished: int,
    gone: Iterable[str],
    stopped: Iterable[str],
    *,
    limit: int = MAX_LISTED_DEVICES,
) -> list[Outbound]:
    """Shard ``shard`` = ``(i, k)``'s status once every device of its slice has ended, in
    as many parts as its lists need (module docstring): part ``j`` lists the ``j``-th
    ``limit`` ids of each sorted list. One part when both lists fit.

    Returns:
        The ``FleetDone`` parts to publish on its ``up/fleet_done`` topic, in part order.

    Raises:
        ParameterError: a bad run id, shard, ``finished`` count or ``limit`` (1 ..
            ``MAX_LISTED_DEVICES``), or more parts than ``MAX_FLEET_DONE_PARTS``."""
    index, count = shard
    sender = shard_name(index, count)
    topics.check_ident(run, "run")
    if not (isinstance(finished, int) and finished >= 0):
        raise ParameterError(
            f"must be an integer >= 0, got {finished!r}",
            field="finished",
            limit="an integer >= 0",
            value=finished,
        )
    if not (isinstance(limit, int) and 1 <= limit <= MAX_LISTED_DEVICES):
        raise ParameterError(
            f"must be an integer in 1 .. {MAX_LISTED_DEVICES}, got {limit!r}",
            field="limit",
            limit=f"1 .. {MAX_LISTED_DEVICES}",
            value=limit,
        )
    gone, stopped = sorted(gone), sorted(stopped)
    parts = max(1, -(-len(gone) // limit), -(-len(stopped) // limit))
    if parts > MAX_FLEET_DONE_PARTS:
        raise ParameterError(
            f"{len(gone)} gone and {len(stopped)} stopped devices need {parts} parts of "
            f"{limit}; a status has at most {MAX_FLEET_DONE_PARTS}",
            field="limit",
            limit=f"at most {MAX_FLEET_DONE_PARTS} parts",
            value=limit,
        )
    topic = topics.up(run, sender, FLEET_DONE_KIND)
    return [
        Outbound(
            topic,
            FleetDone(
                run=run,
                sender=sender,
                shard=index,
                shards=count,
                finished=finished,
                gone=gone[j * limit : (j + 1) * limit],
                stopped=stopped[j * limit : (j + 1) * limit],
                part=j,
                parts=parts,
            ),
        )
        for j in range(parts)
    ]


def fleet_done_status(
    run: str,
    shard: tuple[int, int],
    finished: int,
    gone: Iterable[str],
    stopped: Iterable[str],
) -> Outbound | None:
    """Shard ``shard``'s status as ONE message (``fleet_done_statuses`` with one part).

    Returns:
        The ``FleetDone``, or None when more than ``MAX_LISTED_DEVICES`` devices are gone
        or stopped (it needs parts: ``fleet_done_statuses``).

    Raises:
        ParameterError: a bad run id, shard or ``finished`` count."""
    statuses = fleet_done_statuses(run, shard, finished, gone, stopped)
    return statuses[0] if len(statuses) == 1 else None


@dataclass(frozen=True, slots=True)
class ShardDone:
    """What one shard said once every part of its status arrived: sorted device ids."""

    finished: int
    gone: tuple[str, ...]
    stopped: tuple[str, ...]
    parts: int = 1


@dataclass(frozen=True, slots=True)
class FleetEnded(Event):
    """Every shard said its devices are done: nothing more can arrive. ``gone`` and
    ``stopped`` are sorted device ids; ``sentence`` is the stage's close reason."""

    shards: int
    finished: int
    gone: tuple[str, ...]
    stopped: tuple[str, ...]
    sentence: str
    # a shard refused the run: (field, the collector's value, the fleet's) of the first
    # refusal (lowest shard); its devices are among ``stopped``
    refusal: tuple[str, object, object] | None = None


@dataclass
class _Partial:
    """A shard's status while some of its parts are missing."""

    finished: int
    parts: int
    heard: dict[int, FleetDone]
    listed: set[str]


class FleetStatus(Machine):
    """The collector side's count of the shards that said their devices are done (module
    docstring). ``terms``: the collector's own run terms, which a shard's ``FleetRefused``
    is compared with (None: a refusal names no field, ``terms``). Raises
    ``ParameterError`` for a bad run id or no devices."""

    def __init__(self, run: str, devices: Sequence[str], terms: RunTerms | None = None) -> None:
        super().__init__()
        self.run = topics.check_ident(run, "run")
        self.terms = terms
        # shard -> (field, the collector's value, the fleet's): shards that refused the run
        self.refusals: dict[int, tuple[str, object, object]] = {}
        self.devices = tuple(devices)
        if not self.devices:
            raise ParameterError(
                "a fleet has at least one device",
                field="devices",
                limit="at least one device",
                value=self.devices,
            )
        self._index = {d: n for n, d in enumerate(self.devices)}  # device -> fleet position
        self.shards: int | None = None  # k, from the first accepted status
        self.heard: dict[int, ShardDone] = {}  # shards whose every part arrived
        self._partial: dict[int, _Partial] = {}  # shards with parts still missing
        self.duplicates = 0
        self.ended: FleetEnded | None = None

    def receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        """One message from a shard's ``up/fleet_done`` (a whole status or one part).

        Raises:
            RemoteProtocolError: not a valid status (``field`` names what is wrong); the
                machine's state is unchanged."""
        if isinstance(message, FleetRefused):
            self._refused(topic, message)
            return
        status = self._checked(topic, message)
        shard = status.shard
        partial = self._partial.get(shard)
        # a shard that refused and was restarted with the collector's terms before the fleet
        # ended: its done status replaces its refusal (helper R2's review, 2026-12-07)
        heard = shard in self.heard and not self._replaces_refusal(shard)
        if heard or (partial is not None and status.part in partial.heard):
            self.duplicates += 1
            return
        listed = [*status.gone, *status.stopped]
        if partial is not None:
            self._check_against_parts(status, partial, listed)
        size = self._slice_size(status)
        so_far = len(listed) + (len(partial.listed) if partial is not None else 0)
        last = (len(partial.heard) if partial is not None else 0) + 1 == status.parts
        if status.finished + so_far > size or (last and status.finished + so_far != size):
            raise RemoteProtocolError(
                f"{status.finished} finished + {so_far} listed is not the {size} devices of "
                f"fleet shard {shard} of {status.shards}",
                field="finished",
            )
        if self._replaces_refusal(shard):  # valid: the refusal goes, the status counts
            del self.heard[shard], self.refusals[shard]
        self.shards = status.shards
        if partial is None:
            partial = _Partial(status.finished, status.parts, {}, set())
        partial.heard[status.part] = status
        partial.listed.update(listed)
        if not last:
            self._partial[shard] = partial
            return
        self._partial.pop(shard, None)
        parts = [partial.heard[j] for j in range(status.parts)]
        self.heard[shard] = ShardDone(
            status.finished,
            tuple(sorted(d for p in parts for d in p.gone)),
            tuple(sorted(d for p in parts for d in p.stopped)),
            status.parts,
        )
        self._maybe_ended(status.shards)

    def _replaces_refusal(self, shard: int) -> bool:
        """A status of ``shard`` now takes the place of its refusal: the fleet has not ended
        (once it ended, the refusal's sentence stands and a later status is a duplicate)."""
        return shard in self.refusals and self.ended is None

    def _maybe_ended(self, shards: int) -> None:
        """Every shard said done (or refused): ``FleetEnded``, once."""
        if len(self.heard) == shards and self.ended is None:
            self.ended = self._ended(shards)
            self._emit(self.ended)

    def _refused(self, topic: topics.Topic, message: FleetRefused) -> None:
        """A shard refused the run: it counts as done, every device of its slice stopped
        (none started); the first term that differs is noted (module docstring)."""
        self._check_sender(topic, message)
        shard = message.shard
        if shard in self.heard:  # its refusal again (QoS 1), or after its done status
            self.duplicates += 1
            return
        if shard in self._partial:
            raise RemoteProtocolError(
                f"fleet shard {shard} refused run {self.run} after parts of its done status",
                field="type",
            )
        if self.terms is None:
            refusal: tuple[str, object, object] = ("terms", None, message.terms())
        else:
            difference = self.terms.first_difference(message.terms())
            if difference is None:
                raise RemoteProtocolError(
                    f"fleet shard {shard} of {message.shards} refused run {self.run} on the "
                    "collector's own terms",
                    field="terms",
                )
            refusal = difference
        self.shards = message.shards
        devices = self.devices[shard :: message.shards]
        self.heard[shard] = ShardDone(0, (), tuple(sorted(devices)))
        self.refusals[shard] = refusal
        self._maybe_ended(message.shards)

    def _check_sender(self, topic: topics.Topic, message: FleetDone | FleetRefused) -> None:
        """Topic, run, the shard's name and the shard count, as every status needs them."""
        if topic.family != "up" or topic.kind != FLEET_DONE_KIND:
            raise RemoteProtocolError(f"{topic.text[:120]!r} is no status topic", field="topic")
        if topic.run != self.run or message.run != self.run:
            raise RemoteProtocolError(f"run {message.run!r} is not {self.run!r}", field="run")
        name = _SHARD_NAME.match(topic.sender)
        if (
            message.sender != topic.sender
            or name is None
            or topic.sender in self._index
            or topic.partition is not None
            or (int(name.group(1)), int(name.group(2))) != (message.shard, message.shards)
        ):
            raise RemoteProtocolError(
                f"sender {message.sender!r} on {topic.text[:120]!r} is not fleet shard "
                f"{message.shard} of {message.shards}'s name",
                field="sender",
                code="wrong_sender",
            )
        if self.shards is not None and message.shards != self.shards:
            raise RemoteProtocolError(
                f"shard {message.shard} says the fleet has {message.shards} shards; earlier "
                f"statuses said {self.shards}",
                field="shards",
            )

    def _checked(self, topic: topics.Topic, message: Message) -> FleetDone:
        """``message`` as a valid status (part) on its own, or ``RemoteProtocolError``."""
        if topic.family != "up" or topic.kind != FLEET_DONE_KIND:
            raise RemoteProtocolError(f"{topic.text[:120]!r} is no status topic", field="topic")
        if not isinstance(message, FleetDone):
            raise RemoteProtocolError(
                f"a {message.type_name()} message on a fleet_done topic", field="type"
            )
        self._check_sender(topic, message)
        self._check_agreement(message)
        self._check_slice(message)
        return message

    def _check_agreement(self, message: FleetDone) -> None:
        """A part names the ``finished`` and part count its shard's earlier parts or its
        whole status named (a later status that disagrees with a shard heard in full is
        refused, as a whole status that disagreed always was)."""
        said = self._partial.get(message.shard)
        if message.shard not in self.refusals:  # a refusal said no count: nothing to agree
            said = self.heard.get(message.shard) or said
        if said is None:
            return
        if message.parts != said.parts:
            raise RemoteProtocolError(
                f"shard {message.shard}'s status comes in {message.parts} parts; its earlier "
                f"parts said {said.parts}",
                field="parts",
            )
        if message.finished != said.finished:
            raise RemoteProtocolError(
                f"shard {message.shard} says {message.finished} finished; its earlier parts "
                f"said {said.finished}",
                field="finished",
            )

    def _slice_size(self, message: FleetDone) -> int:
        """How many devices fleet shard ``message.shard`` of ``message.shards`` runs."""
        return len(range(message.shard, len(self.devices), message.shards))

    def _check_slice(self, message: FleetDone) -> None:
        """The lists name devices of the shard's slice, once each."""
        listed = [*message.gone, *message.stopped]
        for device in listed:
            n = self._index.get(device)
            if n is None or n % message.shards != message.shard:
                raise RemoteProtocolError(
                    f"{device!r} is not a device of fleet shard {message.shard} of "
                    f"{message.shards} in run {self.run}",
                    field="gone" if device in message.gone else "stopped",
                )
        if len(set(listed)) != len(listed):
            raise RemoteProtocolError("a device is listed twice", field="stopped")

    def _check_against_parts(self, status: FleetDone, partial: _Partial, listed) -> None:
        """A new part lists no device an earlier part of its shard listed."""
        again = next((d for d in listed if d in partial.listed), None)
        if again is not None:
            raise RemoteProtocolError(
                f"{again!r} is listed in two parts of fleet shard {status.shard}'s status",
                field="gone" if again in status.gone else "stopped",
            )

    def _ended(self, shards: int) -> FleetEnded:
        statuses = self.heard.values()
        gone = tuple(sorted(d for s in statuses for d in s.gone))
        stopped = tuple(sorted(d for s in statuses for d in s.stopped))
        finished = sum(s.finished for s in statuses)
        if self.refusals:
            return FleetEnded(
                shards, finished, gone, stopped, self.refusal_sentence(),
                refusal=self.refusals[min(self.refusals)],
            )  # fmt: skip
        sentence = (
            f"every fleet shard ({shards}) said its devices are done: {finished} finished, "
            f"{len(gone)} gone for good, {len(stopped)} stopped otherwise; nothing more can "
            "arrive"
        )
        return FleetEnded(shards, finished, gone, stopped, sentence)

    def refusal_sentence(self) -> str:
        """What shards that refused the run said (the stage's close reason once every
        shard said done or refused): the first refusal's field and both values (the
        lowest shard's; how many refused). Only once a shard refused."""
        assert self.refusals and self.shards is not None, "no shard refused"
        shards, first = self.shards, min(self.refusals)
        field, ours, theirs = self.refusals[first]
        who = (
            f"fleet shard {first} of {shards}"
            if len(self.refusals) == 1
            else f"{len(self.refusals)} of {shards} fleet shards (first: shard {first})"
        )
        if field == "terms":  # the collector's terms were not given to this machine
            return f"{who} refused run {self.run}: its terms are {theirs}"
        return (
            f"{who} refused run {self.run}: the collector runs {field} {ours!r}, the fleet "
            f"{field} {theirs!r}; start both sides with the same scenario and seed"
        )

    def summary(self) -> dict:
        """Returns which shards said done (``said_done``: shard index -> bool, None before
        any status; a shard with parts missing has not), the devices they named, the
        duplicates and the parts still missing by shard (results.json)."""
        k = self.shards
        return {
            "shards": k,
            "said_done": None if k is None else {i: i in self.heard for i in range(k)},
            "ended": self.ended is not None,
            "gone": sorted(d for s in self.heard.values() for d in s.gone),
            "stopped": sorted(d for s in self.heard.values() for d in s.stopped),
            "duplicates": self.duplicates,
            "parts_missing": {i: p.parts - len(p.heard) for i, p in sorted(self._partial.items())},
            # shards that refused the run: the first term that differs, both values
            "terms_refused": {
                i: {"field": f, "collector": _plain(ours), "fleet": _plain(theirs)}
                for i, (f, ours, theirs) in sorted(self.refusals.items())
            },
        }


def _plain(value: object) -> object:
    """A term's value for results.json (``RunTerms`` as its fields)."""
    return asdict(value) if isinstance(value, RunTerms) else value


class FleetStatusReader(PeerFacingMachine):
    """``FleetStatus`` for a reader without a stream machine of its own to refuse with (a
    partitioned run's coordinator): a refused status is counted by field and reason,
    noticed on ``svc/collector/reject`` (``Reject``) and emitted as ``Rejected``;
    ``FleetEnded`` is emitted once, as ``FleetStatus`` emits it."""

    def __init__(self, run: str, devices: Sequence[str], terms: RunTerms | None = None) -> None:
        super().__init__(run)
        self.status = FleetStatus(run, devices, terms)

    def _receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        self.status.receive(topic, message, now)
        for event in self.status.pop_events():
            self._emit(event)

    @property
    def ended(self) -> FleetEnded | None:
        """The fleet's end, once every shard said so."""
        return self.status.ended

    def summary(self) -> dict:
        """``FleetStatus.summary`` with the refusals (``refused``, ``refused_by_reason``)."""
        return {
            **self.status.summary(),
            "refused": self.rejected,
            "refused_by_reason": dict(sorted(self.rejections_by_reason.items())),
        }
