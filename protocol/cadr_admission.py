"""What the CADR-LDP collector admits, and where it goes — theory of operation.

The collector's pump (``collector.cadr_fleet``) listens to every device's ``up/dsr`` and
``up/budget_refused`` and to the relay's ``svc/relay/phase``. It parses and decodes each
delivery and hands it to ``CadrAdmission.receive``, which decides, without I/O, what
becomes of it; the pump only acts on the answer:

- a ``PhaseReport`` (or anything on a ``svc`` topic) is admitted only as the relay's own:
  a ``PhaseReport`` on a topic of the ``relay`` service whose payload names the relay as
  sender and this run (``PhaseReported``: the pump queues it for the stage waiting on
  it). Anything else there is refused (``topic``): a report on a device's topic, a report
  signed by a device, another run's report;
- a device's message must travel on its own kind of topic: a ``DsrReport`` on ``up/dsr``,
  a ``BudgetRefused`` on ``up/budget_refused`` (``topic``; the DSR intake reads the type,
  never the topic's kind);
- a device's last will (``SaAbort`` on its ``up/sa_abort``: it crashed for good, docs/cadr.md
  "Dropouts") is admitted at any stage (``Departed``; ``protocol.cadr_dsr_stage`` keeps
  the first of each device and no longer awaits its release) if it is this run's, signed
  by the topic's device (``run``, ``sender``: the ``PeerFacingMachine``'s upstream check)
  and that device is a member (``sender``, ``unknown_sender``); an ``SaAbort`` on any other
  topic goes the way of every device message below;
- before the DSR intake is open (θ is not known yet, ``open_intake`` not called), a
  device message cannot be a valid release (``type``, reason ``out_of_order``), a
  refusal's sender must be a member of the run (``sender``, ``unknown_sender``), and the
  FIRST refusal of each member is held — one a device, so that no device's repeats can
  crowd out another's; its later ones are ignored, as the intake ignores a device's
  repeated refusal. ``open_intake`` hands the held refusals on, in arrival order;
- once the intake is open, every other device message goes to it (``ForIntake``): the
  intake (``protocol.cadr_collect.DsrIntake``) judges sender, membership, θ, ε and the
  value itself, and the pump persists what it accepts before acknowledging.

Every refusal is the ``PeerFacingMachine``'s: counted (``rejected``, by field and reason),
emitted as ``Rejected`` and published on ``svc/collector/reject`` with its own sequence
numbers (the intake's rejections keep theirs); the state is unchanged.

With partition workers running the DSR intake (``collector.cadr_partition``) the
collector listens to no device topic and never opens its intake: only phase reports
reach this machine.

A partition worker (``collector.cadr_partition``) runs ``CadrWorkerAdmission``, the same
decisions with two differences. Its control topics (``ctl/cadr_theta``, ``ctl/stage``)
come to it too: only this run's coordinator's ``CadrTheta`` and ``Stage`` are taken
(``protocol.partition_control.check_from_coordinator``, reason ``schema``); the first θ
emits ``ThetaHeard`` (the pump creates the DSR intake and calls ``open_intake``), a
repeated θ is the coordinator's retransmission and is ignored, a ``run closed`` emits
``RunClosed``, the coordinator's other stage messages are ignored. And it holds releases
before θ as well: its control connection and its device subscriptions are separate
sessions, so a worker that the machine's load stalled may read a device's release before
the θ broadcast the device acted on. The first release of each member is held with its
first refusal (arrival order, one of each a device, so no device's repeats crowd out
another's); an identical release again is a duplicate (``HeldDuplicate``: counted, not
refused, acknowledged once with the held one), a different one is refused (``seq``), a
message that is neither a release nor a refusal is refused (``type``), and a message on
any other family of topic (``topic``). A release sent before the broadcast with a guessed
θ is thus judged by the intake (and refused unless the θ is right) rather than refused
outright.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_messages import CadrTheta, DsrReport
from ldpfleet.protocol.errors import LocalProtocolError, RemoteProtocolError
from ldpfleet.protocol.events import Event, PeerFacingMachine
from ldpfleet.protocol.messages import BudgetRefused, Message, Stage
from ldpfleet.protocol.partition_control import check_from_coordinator
from ldpfleet.protocol.peer_relay import RELAY_ID, PhaseReport
from ldpfleet.protocol.secagg.messages import SaAbort

__all__ = [
    "KIND_OF",
    "CadrAdmission",
    "CadrWorkerAdmission",
    "Departed",
    "ForIntake",
    "HeldDuplicate",
    "PhaseReported",
    "RunClosed",
    "ThetaHeard",
    "check_kind",
]

# the kind of ``up`` topic each device message travels on (the collector's subscriptions)
KIND_OF = {DsrReport: "dsr", BudgetRefused: "budget_refused"}


@dataclass(frozen=True, slots=True)
class PhaseReported(Event):
    """The relay's report of a phase, admitted: the stage waiting for it gets it."""

    report: PhaseReport


@dataclass(frozen=True, slots=True)
class ForIntake(Event):
    """A device message for the DSR intake to judge (the intake is open)."""

    topic: topics.Topic
    message: Message


@dataclass(frozen=True, slots=True)
class Departed(Event):
    """A member's last will, admitted: ``stage`` is the one it named (may be empty)."""

    device: str
    stage: str


class CadrAdmission(PeerFacingMachine):
    """The CADR-LDP collector's admission of its inbound messages (module docstring)."""

    def __init__(self, run: str, devices: Iterable[str]) -> None:
        super().__init__(run)
        self.run = run
        self.devices = frozenset(devices)
        self._open = False
        # before the intake opens, arrival order: the first budget refusal of each member
        # (and a worker's first release of each member), keyed by (device, message type)
        self._held: dict[tuple[str, type], tuple[topics.Topic, Message]] = {}

    @property
    def is_open(self) -> bool:
        """Whether the DSR intake is open (device messages go to it)."""
        return self._open

    @property
    def held(self) -> int:
        """How many messages wait for the intake to open (at most one refusal a device, and
        for a worker one release)."""
        return len(self._held)

    def open_intake(self) -> None:
        """The DSR intake is open (θ is known): emit the held messages as ``ForIntake``,
        in arrival order, and from now on pass every device message to it."""
        if self._open:
            raise LocalProtocolError("the DSR intake is already open")
        self._open = True
        held, self._held = self._held, {}
        for topic, message in held.values():
            self._emit(ForIntake(topic, message))

    def _receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        if isinstance(message, PhaseReport) or topic.family == "svc":
            self._admit_phase_report(topic, message)
            return
        if isinstance(message, SaAbort) and topic.family == "up" and topic.kind == "sa_abort":
            self._check_upstream(topic, message)
            self._check_member(topic)
            self._emit(Departed(topic.sender, message.stage))
            return
        check_kind(topic, message)
        if not self._open:
            self._hold(topic, message)
            return
        self._emit(ForIntake(topic, message))

    def _admit_phase_report(self, topic: topics.Topic, message: Message) -> None:
        """A phase report only from the relay, of this run, on its service topic."""
        if (
            not isinstance(message, PhaseReport)
            or topic.family != "svc"
            or topic.sender != RELAY_ID
            or message.sender != RELAY_ID
            or message.run != self.run
        ):
            raise RemoteProtocolError(
                f"a {message.type_name()} from {message.sender!r} on {topic.text[:120]!r}: "
                f"phase reports come from the relay on {topics.svc(self.run, RELAY_ID, 'phase')!r}",
                field="topic",
            )
        self._emit(PhaseReported(message))

    def _check_member(self, topic: topics.Topic) -> None:
        """Refuse (``unknown_sender``) a message whose topic names no device of this run."""
        if topic.sender not in self.devices:
            raise RemoteProtocolError(
                f"{topic.sender} is not a device of this run", field="sender", code="unknown_sender"
            )

    def _hold(self, topic: topics.Topic, message: Message) -> None:
        """Before the intake opens: hold a member's first refusal, refuse the rest."""
        if not isinstance(message, BudgetRefused):
            raise RemoteProtocolError(
                f"a {message.type_name()} before θ exists cannot be valid",
                field="type",
                code="out_of_order",
            )
        self._check_member(topic)
        # a device's later refusals: the intake, too, keeps only its first
        self._held.setdefault((topic.sender, BudgetRefused), (topic, message))


@dataclass(frozen=True, slots=True)
class ThetaHeard(Event):
    """A partition worker heard the coordinator's θ (the first time): create the DSR
    intake, then ``open_intake``."""

    theta: int


@dataclass(frozen=True, slots=True)
class RunClosed(Event):
    """The coordinator closed the run: the partition worker stops."""


@dataclass(frozen=True, slots=True)
class HeldDuplicate(Event):
    """Before θ, a member's release identical to its held one: counted as a duplicate."""

    device: str


class CadrWorkerAdmission(CadrAdmission):
    """A CADR partition worker's admission: its control topics, and releases held before
    θ too (module docstring)."""

    def __init__(self, run: str, devices: Iterable[str]) -> None:
        super().__init__(run, devices)
        self.theta: int | None = None  # the coordinator's θ, once heard

    def _receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        if topic.family == "ctl":
            self._control(message)
            return
        if topic.family != "up":
            raise RemoteProtocolError(
                f"a {message.type_name()} on {topic.text[:120]!r}: a partition worker takes "
                "its devices' up topics and the coordinator's control topics",
                field="topic",
            )
        super()._receive(topic, message, now)

    def _control(self, message: Message) -> None:
        """Only this run's coordinator's θ and stage messages; the first θ, a run closed."""
        check_from_coordinator(
            message,
            self.run,
            (CadrTheta, Stage),
            what="θ or stage message",
            where="control topics",
        )
        if isinstance(message, CadrTheta):
            if self.theta is None and not self.is_open:
                self.theta = message.theta
                self._emit(ThetaHeard(message.theta))
        elif message.stage == "run" and message.state == "closed":
            self._emit(RunClosed())

    def _hold(self, topic: topics.Topic, message: Message) -> None:
        """Before θ: a member's first refusal and first release (module docstring)."""
        if not isinstance(message, DsrReport):
            if not isinstance(message, BudgetRefused):
                raise RemoteProtocolError(
                    f"a {message.type_name()} is neither a DSR release nor a budget refusal",
                    field="type",
                )
            super()._hold(topic, message)
            return
        self._check_member(topic)
        key = (topic.sender, DsrReport)
        held = self._held.get(key)
        if held is None:
            self._held[key] = (topic, message)
        elif held == (topic, message):
            self._emit(HeldDuplicate(topic.sender))
        else:
            raise RemoteProtocolError(
                f"{topic.sender} already sent a different release before θ", field="seq"
            )


def check_kind(topic: topics.Topic, message: Message) -> None:
    """A device's message must travel on its own kind of topic: a release on
    ``up/dsr``, a refusal on ``up/budget_refused`` (the intake reads the type only);
    ``RemoteProtocolError`` (``topic``) if not. Also a partition worker's check
    (``collector.cadr_partition``)."""
    kind = KIND_OF.get(type(message))
    if topic.family == "up" and kind is not None and topic.kind != kind:
        raise RemoteProtocolError(
            f"a {message.type_name()} on a {topic.kind!r} topic (it goes on {kind!r})",
            field="topic",
        )
