"""Batched peer exchange through a relay, in lock-step supersteps — theory of operation.

Why. CADR-LDP devices talk to their graph neighbours (seed 004, §3: NDOE codes, the LPEA
negotiation). On ego-Facebook that is 176k directed neighbour pairs, and one LPEA run
exchanges about a million peer messages. One MQTT message per peer message is minutes of
client CPU; and delivery order would change the result (a Warner answer depends on the
answering node's reservations at that moment). So peer messages travel *batched* through a
relay, in the bulk-synchronous style (Valiant 1990), as SecAgg's shares travel through its
server (Bonawitz et al. 2017, star topology):

- a *phase* (``"ndoe"``, ``"lpea"``) runs in *rounds*, a round in *supersteps*;
- the relay opens round ``r`` with one broadcast ``PeerStep(phase, round=r)``; every device
  answers with ONE ``PeerBatch(step=0)`` holding its items ``(recipient, kind, value)``;
- when every device expected at step ``k`` has sent its batch, the relay regroups the items
  by recipient — in sender order, then each sender's emission order — and sends each
  recipient ONE ``PeerDelivery(step=k+1)`` whose items name the sender instead; only those
  recipients are expected at step ``k+1`` (each answers with one batch, maybe empty);
- a step whose batches hold no item ends the round: every message of the round has been
  delivered and answered. Every device must have said ``done`` by then (its own part of the
  round ended, ``protocol.lpea.RoundFinished``); ``added`` sums what the round added;
- a phase with ``until_quiet`` stops after a round that added nothing (or ``max_rounds``);
  otherwise after one round. The relay then broadcasts ``PeerStep(finished=True)`` and
  reports a ``PhaseFinished`` event. A *padded* phase (below) always runs ``max_rounds``.

Because a device sees its inputs in an order fixed by the barrier (not by the network), and
draws its randomness in that order, a phase's result is a function of the seeds alone: the
same on the in-memory transport, the embedded broker and Mosquitto. Message economy: two
MQTT messages per active device and step, instead of one per peer message.

Trust. The relay sees who talks to whom (the graph) and the items (Warner answers and NDOE
codes are ε-LDP outputs; establish/confirm items reveal the projected graph). That is
exactly what the MQTT broker sees of direct per-neighbour topics, so the relay belongs to
the *message layer* (the broker operator), with the broker's trust, never to the
collector: it runs under its own identity ``relay``. The collector learns only that a
phase ended and whether normally (``PhaseReport``: the phase, ``ok``, the public round count
it asked for); the relay's counts — rounds, supersteps, items, batches, edges added per
round, all functions of every device's adjacency list — stay in ``PhaseFinished``, the
relay's own event (logged by the message layer, ``broker.relay``).

Padding (issue 20: the LPEA phase's length as a channel to the collector). Without it the
collector could count the ``ctl/peer_step`` broadcasts (one per round) and time the report:
both tell how many rounds the negotiation needed, a function of every adjacency list.
(Since the deadline step the collector's identity may not read ``ctl/peer_step`` at all:
``broker.auth.DENIED``; devices, the relay's audience, and operators still do.)
``RelayPhase(padded=True)`` (with
``until_quiet``) makes the phase run EXACTLY ``max_rounds`` rounds, a public number: the
negotiation runs until a round adds nothing (or the count is reached: it is then cut, as
by any cap); after that quiet round the relay adds one step in which every device gets
``PeerDelivery(pad=True)`` on its private inbox and answers an empty ``done`` batch, and
every later round is *padding*: the same broadcast as a real round, every device answers
it with one empty ``done`` batch (a batch with items is refused), the round ends. So the
broadcasts (their ``seq`` counts broadcasts only, never deliveries) and the
``PhaseReport`` are the same message sequence, byte for byte, whatever the data (tested:
``tests/unit/test_peer_relay.py``, ``tests/unit/test_cadr_device.py``).

Deadline (issue 20: the phase's wall-clock DURATION). A real round with its many
supersteps takes longer than a padding round, and an NDOE round's length grows with the
number of codes, so without more the time the phase ends depends on the data. Opt-in,
``RelayPhase.deadline`` = D seconds (``[cadr] peer_deadline_seconds``; absent = none, and
then every message is byte-identical to the relay's before the option): the relay does not
END the phase before ``started + D`` (``started``: the ``now`` it was asked at). When the
work ends earlier, the phase is *held*: no device is expected any more (a batch is
refused), and at ``started + D`` (``next_timer``; the pump only sleeps until it) the relay
sends the finished broadcast — on which devices release their DSR values to the
collector — and the ``PhaseReport`` with ``overran=False``. When the work ends after the
deadline, both go out at once, the report with ``overran=True``, and the relay's own
``PhaseFinished.overrun`` holds the seconds (the message layer logs it); the collector's
privacy claim then says the timing part is NOT covered for that run. So under a held
deadline everything of the phase the collector can see — the report, and the releases the
finished broadcast starts — happens at ``started + D``, a public time. Cost: every relay
phase (``ndoe`` and ``lpea``) lasts at least D, so D must exceed the slowest phase
(on ego-Facebook LPEA takes 57-97 s: the deadline is off by default). Not held: an
aborted phase (``ok=False``; the run then releases nothing).

Control. Only this run's collector steers the relay: ``receive`` also takes the control
topics ``ctl/relay_phase`` and ``ctl/stage``. A ``RelayPhase`` starts its phase
(``start_phase``; asked while another runs, the relay keeps its phase and emits
``PhaseRefused``: the collector's own slip, not a peer's bad input, so it is reported, not
counted); a ``Stage`` closed ends the relay's service (``CollectorClosed``: the pump
leaves); the collector's other stage messages are its ordinary traffic and are ignored.
A control message whose sender is not the collector or whose run is not this run is
refused like a bad batch (below; reason ``wrong_sender`` / ``wrong_run``).

Validation. ``receive`` refuses (counted, published on ``svc/relay/reject``, never used): a
batch of another phase, round or step, from a device not expected at that step or twice, an
item addressed to an unknown device or to its sender, too many items; a control message
not from this run's collector. Each refusal is counted by reason and by the phase the relay
was running when the message came (``rejections_by_phase``; ``NO_PHASE`` outside any,
a key no phase name can take): the message layer's own counts, like ``PhaseFinished``'s,
never in a ``PhaseReport``. A step whose batches
do not all arrive within ``step_timeout`` aborts the phase (``PhaseAborted`` names the
missing devices); dropout tolerance is the secure-sum stage's job, not this relay's.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal

import msgspec
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import (
    LocalProtocolError,
    ParameterError,
    ProtocolError,
    RemoteProtocolError,
)
from ldpfleet.protocol.events import Event, PeerFacingMachine
from ldpfleet.protocol.messages import MAX_STEPS, Ident, Message, Stage
from msgspec import UNSET, Meta, UnsetType

__all__ = [
    "MAX_PEER_ITEMS",
    "NO_PHASE",
    "PEER_MESSAGES",
    "RELAY_ID",
    "CollectorClosed",
    "PeerBatch",
    "PeerDelivery",
    "PeerItem",
    "PeerRelay",
    "PeerStep",
    "PhaseAborted",
    "PhaseFinished",
    "PhaseRefused",
    "PhaseReport",
    "RelayPhase",
]

RELAY_ID = "relay"
MAX_PEER_ITEMS = 100_000  # per batch: 4 kinds x the largest degree of our datasets, x 20
PeerKind = Literal["code", "req", "ans", "est", "conf"]
Count = Annotated[int, Meta(ge=0, le=MAX_STEPS)]
MAX_DEADLINE = 86_400.0  # seconds: a public per-phase deadline of at most one day
Deadline = Annotated[float, Meta(gt=0, le=MAX_DEADLINE)]
# the ``rejections_by_phase`` key of a refusal outside any phase: not an ``Ident`` (no
# parentheses), so no phase name can take it
NO_PHASE = "(none)"


# A peer id on the wire: bounded like ``Ident`` but without its regex. Whoever reads an
# item judges ``peer`` by membership — the relay: another device of the run; a device: one
# of its neighbours — and both sets hold checked ``Ident``s, so that test is stricter than
# the pattern, and it refuses the item with its index (``items[i]``). The pattern cost ~4 µs
# per item in msgspec (a Python ``re`` call), 4.6x the rest of an item's decoding, and an
# ego-Facebook LPEA phase decodes ~1.2 million items twice
# (tests/unit/test_peer_item_membership.py).
PeerId = Annotated[str, Meta(min_length=1, max_length=64)]


class PeerItem(msgspec.Struct, array_like=True, frozen=True, forbid_unknown_fields=True):
    """One peer message, compact: ``[peer, kind, value]``. ``peer`` is the recipient in a
    ``PeerBatch`` and the sender in a ``PeerDelivery``; the codec only bounds it (1-64
    characters), its reader checks membership (``PeerId``)."""

    peer: PeerId
    kind: PeerKind
    value: Annotated[int, Meta(ge=-(2**31), le=2**31)] = 0


Items = Annotated[list[PeerItem], Meta(max_length=MAX_PEER_ITEMS)]


class PeerStep(Message, tag="peer_step", kw_only=True):
    """Relay -> all devices (``ctl/peer_step``): round ``round`` of ``phase`` starts, or
    (``finished``) the phase is over."""

    phase: Ident
    round: Count
    finished: bool = False


class PeerBatch(Message, tag="peer_batch", kw_only=True):
    """Device -> relay (``up/peer_batch``): everything it sends at ``step``; ``done``: its
    own part of the round ended, ``added`` edges with it (LPEA)."""

    phase: Ident
    round: Count
    step: Count
    items: Items = msgspec.field(default_factory=list)
    done: bool = False
    added: Count = 0


class PeerDelivery(Message, tag="peer_delivery", kw_only=True):
    """Relay -> device inbox (``in/relay``): the items of step ``step - 1`` addressed to it.
    ``pad`` (padded phases only, no items, once, at the end of the round that went quiet):
    the negotiation is over; answer this and every later round with an empty ``done``
    batch (module docstring, "Padding")."""

    phase: Ident
    round: Count
    step: Count
    items: Items
    pad: bool = False


class RelayPhase(Message, tag="relay_phase", kw_only=True):
    """Collector -> relay (``ctl/relay_phase``): run ``phase``; ``until_quiet``: rounds
    until one adds nothing (at most ``max_rounds``), else a single round; ``padded`` (with
    ``until_quiet``): always exactly ``max_rounds`` rounds, those after the quiet one
    padding (module docstring, "Padding")."""

    phase: Ident
    until_quiet: bool = False
    max_rounds: Annotated[int, Meta(ge=1, le=10_000)] = 1
    padded: bool = False
    # the public wall-clock deadline in seconds (module docstring, "Deadline"); absent
    # (UNSET, not encoded: the message is byte-identical to one without the option) = none
    deadline: Deadline | UnsetType = UNSET


class PhaseReport(Message, tag="phase_report", kw_only=True):
    """Relay -> collector (``svc/relay/phase``): that a phase ended, and whether it ended
    normally. Only public, data-independent facts: the phase, ``ok``, the public round
    count it ran under (``max_rounds``, the collector's own request; a padded phase runs
    exactly that many) and, when it failed, why
    (which devices went missing: liveness, not data). ``overran`` (a phase run under a
    public ``deadline`` only; absent otherwise, so the message is byte-identical to one
    without the option): False = the report was held until the deadline, True = the
    phase ended after it (module docstring, "Deadline"). The relay's counts — rounds,
    supersteps, items, batches, edges added per round — depend on every device's list and
    stay with the relay (``PhaseFinished``, the message layer's own log), never the
    collector's (module docstring, Trust)."""

    phase: Ident
    ok: bool
    max_rounds: Annotated[int, Meta(ge=1, le=10_000)] = 1
    detail: Annotated[str, Meta(max_length=500)] = ""
    overran: bool | UnsetType = UNSET


PEER_MESSAGES = (PeerStep, PeerBatch, PeerDelivery, RelayPhase, PhaseReport)


@dataclass(frozen=True, slots=True)
class PhaseFinished(Event):
    """The phase ended normally."""

    phase: str
    rounds: int
    added_per_round: tuple[int, ...]
    supersteps: int
    items: int
    batches: int
    padding: int = 0  # of ``rounds``, how many were padding (padded phases)
    deadline: float = 0.0  # the phase's public deadline in seconds (0: none)
    overrun: float = 0.0  # seconds the phase's work ended after its deadline (0: held)


@dataclass(frozen=True, slots=True)
class PhaseAborted(Event):
    """The phase cannot go on (a step's batches did not all arrive, or a round ended with a
    device that never finished its part)."""

    phase: str
    reason: str
    missing: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PhaseRefused(Event):
    """The collector asked for ``phase`` and the relay could not start it (``reason``:
    e.g. another phase is still running); nothing changed (module docstring, "Control")."""

    phase: str
    reason: str


@dataclass(frozen=True, slots=True)
class CollectorClosed(Event):
    """This run's collector closed ``stage`` (in a CADR-LDP run: ``run``): the relay's
    service ends, the pump leaves (module docstring, "Control")."""

    stage: str


class PeerRelay(PeerFacingMachine):
    """The relay's sans-I/O machine (module docstring). One phase at a time."""

    def __init__(
        self,
        run: str,
        devices: Iterable[str],
        *,
        step_timeout: float = 60.0,
        max_items: int = MAX_PEER_ITEMS,
    ) -> None:
        super().__init__(run, service=RELAY_ID)
        self.run = topics.check_ident(run, "run")
        self.devices = frozenset(topics.check_ident(d, "devices") for d in devices)
        if not self.devices:
            raise ParameterError(
                "must name at least one device",
                field="devices",
                limit="at least one device",
                value=self.devices,
            )
        if not step_timeout > 0:
            raise ParameterError(
                f"must be > 0, got {step_timeout!r}",
                field="step_timeout",
                limit="> 0",
                value=step_timeout,
            )
        self.step_timeout = float(step_timeout)
        self.max_items = max_items
        self.phase: str | None = None
        self.supersteps = 0
        self.items = 0
        self.batches = 0
        self._seq = 0  # private deliveries
        self._broadcast_seq = 0  # the public broadcasts: counts rounds, never deliveries
        self._report_seq = 0
        self._deadline: float | None = None  # the current step's timeout
        self._release_at: float | None = None  # a finished phase held to its deadline
        # refusals by the phase running when they came (module docstring, "Validation")
        self.rejections_by_phase: Counter[str] = Counter()

    # ---- control ---------------------------------------------------------------------------

    def start_phase(
        self,
        phase: str,
        now: float,
        *,
        until_quiet: bool = False,
        max_rounds: int = 1,
        padded: bool = False,
        deadline: float = 0.0,
    ) -> None:
        """Open round 0 of ``phase``; ``padded`` (with ``until_quiet``): run exactly
        ``max_rounds`` rounds (module docstring, "Padding"); ``deadline`` > 0: no end of
        the phase before ``now + deadline`` (module docstring, "Deadline")."""
        if self.phase is not None:
            raise LocalProtocolError(f"phase {self.phase!r} is still running")
        topics.check_ident(phase, "phase")
        if max_rounds < 1:
            raise ParameterError(
                f"must be >= 1, got {max_rounds}",
                field="max_rounds",
                limit=">= 1",
                value=max_rounds,
            )
        if not (
            isinstance(deadline, int | float)
            and math.isfinite(deadline)
            and 0 <= deadline <= MAX_DEADLINE
        ):
            raise ParameterError(
                f"must be a finite number of seconds in 0..{MAX_DEADLINE:g}, got {deadline!r}",
                field="deadline",
                limit=f"a finite number of seconds in 0..{MAX_DEADLINE:g}",
                value=deadline,
            )
        self.phase = phase
        self._started = now
        self._phase_deadline = float(deadline)
        self._until_quiet = until_quiet
        self._max_rounds = max_rounds if until_quiet else 1
        self._padded = bool(padded and until_quiet)
        self._quiet = False  # padded: the negotiation went quiet, the rest is padding
        self._notified = False  # padded: every device was told (``PeerDelivery.pad``)
        self._padding = 0
        self._added_per_round: list[int] = []
        self.supersteps = self.items = self.batches = 0
        self._start_round(0, now)

    def _start_round(self, r: int, now: float) -> None:
        self.round = r
        self.step = 0
        self._expected: set[str] = set(self.devices)
        self._received: dict[str, PeerBatch] = {}
        self._done: set[str] = set()
        self._added = 0
        self._padding += self._quiet
        self._broadcast(PeerStep, phase=self.phase, round=r)
        self._deadline = now + self.step_timeout

    def _broadcast(self, message_type: type[Message], **fields: object) -> None:
        self._broadcast_seq += 1
        message = message_type(
            run=self.run, sender=RELAY_ID, seq=min(self._broadcast_seq, MAX_STEPS), **fields
        )
        self._send(topics.ctl(self.run, "peer_step"), message)

    def _deliver(self, recipient: str, step: int, items: list[PeerItem], pad: bool = False) -> None:
        self._seq += 1
        self._send(
            topics.inbox(self.run, recipient, RELAY_ID),
            PeerDelivery(
                run=self.run,
                sender=RELAY_ID,
                seq=min(self._seq, MAX_STEPS),
                phase=self.phase,
                round=self.round,
                step=step,
                items=items,
                pad=pad,
            ),
        )

    # ---- input -----------------------------------------------------------------------------

    def reject(
        self,
        topic: topics.Topic | str,
        kind: str,
        error: ProtocolError,
        message: Message | None = None,
    ) -> None:
        """Refuse a message (``PeerFacingMachine.reject``: counted by reason, published on
        ``svc/relay/reject``), and count it under the phase running now (``NO_PHASE``:
        none; a phase held to its deadline is still running)."""
        self.rejections_by_phase[self.phase or NO_PHASE] += 1
        super().reject(topic, kind, error, message)

    def _receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        if topic.family == "ctl":
            self._on_control(topic, message, now)
            return
        self._check_upstream(topic, message)
        if not isinstance(message, PeerBatch):
            raise RemoteProtocolError(f"unexpected {message.type_name()} message", field="type")
        sender = message.sender
        if self.phase is None or message.phase != self.phase:
            raise RemoteProtocolError(f"phase {message.phase!r} is not running", field="phase")
        if message.round != self.round:
            raise RemoteProtocolError(
                f"round {message.round} is not the current round {self.round}", field="round"
            )
        if message.step != self.step:
            raise RemoteProtocolError(
                f"step {message.step} is not the current step {self.step}", field="step"
            )
        if sender not in self._expected:
            raise RemoteProtocolError(f"{sender} is not expected at this step", field="sender")
        if sender in self._received:
            raise RemoteProtocolError(f"second batch from {sender} at this step", field="step")
        if (self._quiet or self._notified) and message.items:
            raise RemoteProtocolError("items in a padding round", field="items")
        if len(message.items) > self.max_items:
            raise RemoteProtocolError(
                f"{len(message.items)} items exceeds the limit of {self.max_items}", field="items"
            )
        for index, item in enumerate(message.items):
            if item.peer == sender or item.peer not in self.devices:
                raise RemoteProtocolError(
                    f"{item.peer!r} is not another device of this run", field=f"items[{index}]"
                )
        if message.done and sender in self._done and message.added:
            # checked before anything changes: a refused batch is neither forwarded nor
            # counted as the step's answer
            raise RemoteProtocolError("added reported twice in a round", field="added")
        self._received[sender] = message
        self.batches += 1
        if message.done:
            self._done.add(sender)
            self._added += message.added
        if len(self._received) == len(self._expected):
            self._close_step(now)

    def _on_control(self, topic: topics.Topic, message: Message, now: float) -> None:
        """A message on a control topic: only this run's collector steers the relay
        (module docstring, "Control")."""
        if message.sender != topics.COLLECTOR_ID:
            raise RemoteProtocolError(
                f"sender {message.sender!r} is not the collector: only this run's collector "
                "steers the relay",
                field="sender",
                code="wrong_sender",
            )
        if message.run != self.run or topic.run != self.run:
            raise RemoteProtocolError(f"run {message.run!r} is not {self.run!r}", field="run")
        if isinstance(message, Stage) and message.state == "closed":
            self._emit(CollectorClosed(message.stage))
        elif isinstance(message, RelayPhase):
            self._on_phase_request(message, now)

    def _on_phase_request(self, request: RelayPhase, now: float) -> None:
        """Start the phase the collector asks for, or report why not (``PhaseRefused``)."""
        try:
            self.start_phase(
                request.phase,
                now,
                until_quiet=request.until_quiet,
                max_rounds=request.max_rounds,
                padded=request.padded,
                deadline=0.0 if request.deadline is UNSET else request.deadline,
            )
        except ProtocolError as error:  # e.g. asked again while a phase runs
            self._emit(PhaseRefused(request.phase, str(error)))

    def _close_step(self, now: float) -> None:
        by_recipient: dict[str, list[PeerItem]] = defaultdict(list)
        count = 0
        for sender in sorted(self._received):
            for item in self._received[sender].items:
                by_recipient[item.peer].append(PeerItem(sender, item.kind, item.value))
                count += 1
        self.items += count
        self.supersteps += 1
        if not count:
            self._end_round(now)
            return
        self.step += 1
        for recipient in sorted(by_recipient):
            self._deliver(recipient, self.step, by_recipient[recipient])
        self._expected = set(by_recipient)
        self._received = {}
        self._deadline = now + self.step_timeout

    def _end_round(self, now: float) -> None:
        unfinished = self.devices - self._done
        if unfinished:
            self._abort("the round went quiet with devices that never finished", unfinished)
            return
        rounds_left = self._max_rounds - len(self._added_per_round) - 1
        if self._padded and not self._notified and self._added == 0 and rounds_left > 0:
            self._notify_padding(now)  # the negotiation went quiet, padding rounds follow
            return
        self._added_per_round.append(self._added)
        if self._until_quiet and self._added == 0:
            self._quiet = True
        last = len(self._added_per_round) >= self._max_rounds or (self._quiet and not self._padded)
        if not last:
            self._start_round(self.round + 1, now)
            return
        phase = self.phase
        assert phase is not None
        release_at = self._started + self._phase_deadline
        overrun = max(0.0, now - release_at) if self._phase_deadline else 0.0
        self._emit(
            PhaseFinished(
                phase,
                len(self._added_per_round),
                tuple(self._added_per_round),
                self.supersteps,
                self.items,
                self.batches,
                self._padding,
                self._phase_deadline,
                overrun,
            )
        )
        if self._phase_deadline and now < release_at:
            # held (module docstring, "Deadline"): no device is expected any more, and
            # nothing of this phase goes out before its public deadline
            self._expected = set()
            self._received = {}
            self._deadline = None
            self._release_at = release_at
            return
        self._finish(overran=now > release_at if self._phase_deadline else UNSET)

    def _finish(self, *, overran: bool | UnsetType) -> None:
        """End the phase: the finished broadcast (devices then release: DSR) and the
        report (``overran``: UNSET without a deadline)."""
        phase = self.phase
        assert phase is not None
        self._broadcast(PeerStep, phase=phase, round=self.round + 1, finished=True)
        self._report(ok=True, overran=overran)
        self.phase = None
        self._deadline = None
        self._release_at = None

    def _notify_padding(self, now: float) -> None:
        """The round went quiet in a padded phase: one more step, in which every device
        gets ``PeerDelivery(pad=True)`` and answers an empty ``done`` batch (module
        docstring, "Padding"); its close ends the round."""
        self._notified = True
        self.step += 1
        for device in sorted(self.devices):
            self._deliver(device, self.step, [], pad=True)
        self._expected = set(self.devices)
        self._received = {}
        self._deadline = now + self.step_timeout

    def _abort(self, reason: str, missing: Iterable[str]) -> None:
        phase = self.phase
        assert phase is not None
        absent = tuple(sorted(missing))
        self._broadcast(PeerStep, phase=phase, round=self.round, finished=True)
        self._emit(PhaseAborted(phase, reason, absent))
        shown = ", ".join(absent[:10]) + (" ..." if len(absent) > 10 else "")
        self._report(ok=False, detail=f"{reason}: {len(absent)} device(s): {shown}"[:500])
        self.phase = None
        self._deadline = None

    def _report(self, *, ok: bool, detail: str = "", overran: bool | UnsetType = UNSET) -> None:
        # a sequence of its own: the broadcasts' seq counts the rounds (module docstring)
        self._report_seq += 1
        self._send(
            topics.svc(self.run, RELAY_ID, "phase"),
            PhaseReport(
                run=self.run,
                sender=RELAY_ID,
                seq=self._report_seq,
                phase=self.phase or "",
                ok=ok,
                max_rounds=self._max_rounds,
                detail=detail,
                overran=overran,
            ),
        )

    # ---- time ------------------------------------------------------------------------------

    def next_timer(self) -> float | None:
        return self._release_at if self._release_at is not None else self._deadline

    def handle_timer(self, now: float) -> None:
        if self._release_at is not None:
            if now >= self._release_at:
                self._finish(overran=False)  # held to the deadline
            return
        if self._deadline is None or now < self._deadline or self.phase is None:
            return
        missing = self._expected - self._received.keys()
        self._abort(f"no batch within {self.step_timeout:g} s at step {self.step}", missing)
