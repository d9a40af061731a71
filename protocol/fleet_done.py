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

* a shard whose devices have all ended publishes ONE ``FleetDone`` (``fleet_done_status``)
  on ``ldp/{run}/dev/fleet-{i}-of-{k}/up/fleet_done`` (QoS 1, not retained): its shard
  ``i`` of ``k``, how many of its devices finished, and which are gone for good or stopped
  otherwise. The topic is an ``up`` topic whose device level is the shard's name, which the
  run's ACL lets the fleet's ``gateway`` identity publish and the collector read (its
  stream subscription ``dev/+/up/#`` already covers it); a device may publish only under its
  own id, so a device of the run named like a shard makes the status refused (below);
* the collector side's ``FleetStatus`` knows the run's device ids. It accepts a status
  only if its topic and payload agree (run, sender = the topic's name = ``fleet-i-of-k``,
  not a device of the run), ``k`` is the one every earlier status named, and its lists
  name devices of shard ``i``'s slice (device ``n`` is in shard ``n % k``:
  ``devices.fleet.Fleet``), disjoint, with ``finished`` making up the rest of the slice.
  Anything else raises ``RemoteProtocolError`` (the pump rejects it like any bad input:
  counted in ``rejections_by_reason``, published on ``svc/collector/reject``, traced). The
  same shard's status again counts once (``duplicates``: QoS 1 redelivery, a restarted
  shard);
* when every shard ``0..k-1`` has said so, it emits ``FleetEnded`` once, with one
  sentence: the pump closes the stream stage as the one-process runner does (missing
  batches count as lost) and the run goes on to its next stage.

A lost, late or never-sent status (a shard killed before its devices ended) changes
nothing: the stage closes on its own deadlines, as before. No I/O and no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Event, Machine, Outbound
from ldpfleet.protocol.messages import MAX_FLEET_SHARDS, MAX_LISTED_DEVICES, FleetDone, Message

__all__ = [
    "FLEET_DONE_KIND",
    "FleetEnded",
    "FleetStatus",
    "fleet_done_status",
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


def fleet_done_status(
    run: str,
    shard: tuple[int, int],
    finished: int,
    gone: Iterable[str],
    stopped: Iterable[str],
) -> Outbound | None:
    """Shard ``shard`` = ``(i, k)``'s status once every device of its slice has ended.

    Returns:
        The ``FleetDone`` to publish on its ``up/fleet_done`` topic, or None when more than
        ``MAX_LISTED_DEVICES`` devices are gone or stopped (the status cannot list them: the
        collector's stage then closes on its deadlines, as without a status).

    Raises:
        ParameterError: a bad run id, shard or ``finished`` count."""
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
    gone, stopped = sorted(gone), sorted(stopped)
    if max(len(gone), len(stopped)) > MAX_LISTED_DEVICES:
        return None
    message = FleetDone(
        run=run,
        sender=sender,
        shard=index,
        shards=count,
        finished=finished,
        gone=gone,
        stopped=stopped,
    )
    return Outbound(topics.up(run, sender, FLEET_DONE_KIND), message)


@dataclass(frozen=True, slots=True)
class FleetEnded(Event):
    """Every shard said its devices are done: nothing more can arrive. ``gone`` and
    ``stopped`` are sorted device ids; ``sentence`` is the stage's close reason."""

    shards: int
    finished: int
    gone: tuple[str, ...]
    stopped: tuple[str, ...]
    sentence: str


class FleetStatus(Machine):
    """The collector side's count of the shards that said their devices are done (module
    docstring). Raises ``ParameterError`` for a bad run id or no devices."""

    def __init__(self, run: str, devices: Sequence[str]) -> None:
        super().__init__()
        self.run = topics.check_ident(run, "run")
        self.devices = tuple(devices)
        if not self.devices:
            raise ParameterError(
                "a fleet has at least one device",
                field="devices",
                limit="at least one device",
                value=self.devices,
            )
        self._known = frozenset(self.devices)
        self.shards: int | None = None  # k, from the first accepted status
        self.heard: dict[int, FleetDone] = {}
        self.duplicates = 0
        self.ended: FleetEnded | None = None

    def receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        """One message from a shard's ``up/fleet_done``.

        Raises:
            RemoteProtocolError: not a valid status (``field`` names what is wrong); the
                machine's state is unchanged."""
        status = self._checked(topic, message)
        if status.shard in self.heard:
            self.duplicates += 1
            return
        self.shards = status.shards
        self.heard[status.shard] = status
        if len(self.heard) == status.shards and self.ended is None:
            self.ended = self._ended(status.shards)
            self._emit(self.ended)

    def _checked(self, topic: topics.Topic, message: Message) -> FleetDone:
        """``message`` as a valid status, or ``RemoteProtocolError``."""
        if topic.family != "up" or topic.kind != FLEET_DONE_KIND:
            raise RemoteProtocolError(f"{topic.text[:120]!r} is no status topic", field="topic")
        if not isinstance(message, FleetDone):
            raise RemoteProtocolError(
                f"a {message.type_name()} message on a fleet_done topic", field="type"
            )
        if topic.run != self.run or message.run != self.run:
            raise RemoteProtocolError(f"run {message.run!r} is not {self.run!r}", field="run")
        name = _SHARD_NAME.match(topic.sender)
        if (
            message.sender != topic.sender
            or name is None
            or topic.sender in self._known
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
        self._check_slice(message)
        return message

    def _check_slice(self, message: FleetDone) -> None:
        """The lists name devices of the shard's slice, once each, and ``finished`` is the
        rest of it."""
        mine = set(self.devices[message.shard :: message.shards])
        listed = [*message.gone, *message.stopped]
        strangers = [d for d in listed if d not in mine]
        if strangers:
            raise RemoteProtocolError(
                f"{strangers[0]!r} is not a device of fleet shard {message.shard} of "
                f"{message.shards} in run {self.run}",
                field="gone" if strangers[0] in message.gone else "stopped",
            )
        if len(set(listed)) != len(listed):
            raise RemoteProtocolError("a device is listed twice", field="stopped")
        if message.finished + len(listed) != len(mine):
            raise RemoteProtocolError(
                f"{message.finished} finished + {len(listed)} listed is not the "
                f"{len(mine)} devices of fleet shard {message.shard} of {message.shards}",
                field="finished",
            )

    def _ended(self, shards: int) -> FleetEnded:
        statuses = self.heard.values()
        gone = tuple(sorted(d for s in statuses for d in s.gone))
        stopped = tuple(sorted(d for s in statuses for d in s.stopped))
        finished = sum(s.finished for s in statuses)
        sentence = (
            f"every fleet shard ({shards}) said its devices are done: {finished} finished, "
            f"{len(gone)} gone for good, {len(stopped)} stopped otherwise; nothing more can "
            "arrive"
        )
        return FleetEnded(shards, finished, gone, stopped, sentence)

    def summary(self) -> dict:
        """Returns which shards said done (``said_done``: shard index -> bool, None before
        any status), the devices they named and the duplicates (results.json)."""
        k = self.shards
        return {
            "shards": k,
            "said_done": None if k is None else {i: i in self.heard for i in range(k)},
            "ended": self.ended is not None,
            "gone": sorted(d for s in self.heard.values() for d in s.gone),
            "stopped": sorted(d for s in self.heard.values() for d in s.stopped),
            "duplicates": self.duplicates,
        }
