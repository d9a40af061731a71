"""When the collector opens the ``[secure_sum]`` stage, and with whom — theory of operation.

One rule for every way a run is laid out (``ldpfleet run`` in one process, the collector
side and ``k`` fleet shards of ``ldpfleet collector`` / ``ldpfleet fleet``), so the same
scenario opens its secure-sum session under the same condition:

* the session's members are every device of the fleet (``members``): the collector cannot
  know which devices are gone (a device that crashed for good is silent, nothing more);
* ``start`` sends ``Stage(stage=..., state="open")`` on ``ctl/stage`` (the shards start
  their SecAgg agents on it); the pump must have subscribed every member's ``up/ready``
  first, so no ``DeviceReady`` passes unheard;
* each member's ``DeviceReady`` counts once (``protocol.readiness.ReadinessBarrier``: the
  same refusals of foreign, duplicated and late messages);
* the session opens (``SessionOpens``) as soon as every member joined, or at the join
  deadline with those that did: the absent stay members and the session's first deadline
  counts them out (the session's threshold is the one its member count gives, whoever
  joined). The join deadline is the SecAgg server's own stage rule
  (``protocol.secagg.server``): ``stage_timeout`` after the opening, moved to
  ``stage_timeout`` after the latest join, never past ``patience`` x ``stage_timeout``
  after the opening: a busy machine whose devices keep joining is waited for, a device
  that is really gone costs at most ``stage_timeout`` after the last join, and a shard's
  silence deadline (``DEFAULT_PATIENCE`` x ``stage_timeout`` + ``finish_grace``) is never
  reached while the collector waits;
* no member joined by the deadline: no session (``StageAbandoned``, one sentence).

No I/O and no clock: the pump (``collector.stage_opening``) calls ``start`` / ``receive``
/ ``handle_timer`` with the time, publishes the outbox and acts on the one decision.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError
from ldpfleet.protocol.events import Event, Machine
from ldpfleet.protocol.messages import Message, Stage
from ldpfleet.protocol.readiness import AllReady, ReadinessBarrier
from ldpfleet.protocol.secagg.server import DEFAULT_PATIENCE

__all__ = [
    "SECURE_SUM_STAGE",
    "SessionOpens",
    "StageAbandoned",
    "StageOpening",
]

SECURE_SUM_STAGE = "secure_sum"  # Stage(stage=..., state="open") on ctl/stage


@dataclass(frozen=True, slots=True)
class SessionOpens(Event):
    """Start the session over ``members`` (every expected device, sorted); ``absent``
    (sorted) had not joined by the deadline, ``sentence`` says so (None: all joined)."""

    members: tuple[str, ...]
    absent: tuple[str, ...]
    sentence: str | None


@dataclass(frozen=True, slots=True)
class StageAbandoned(Event):
    """No member joined by the deadline: no session."""

    sentence: str


class StageOpening(Machine):
    """The collector's opening of one stage that needs its devices listening (the module
    docstring). Raises ``ParameterError`` for a ``stage_timeout`` not > 0, a ``patience``
    below 1 or no ``members``."""

    def __init__(
        self,
        run: str,
        members: Iterable[str],
        *,
        stage_timeout: float,
        patience: float = DEFAULT_PATIENCE,
        stage: str = SECURE_SUM_STAGE,
    ) -> None:
        super().__init__()
        if not (isinstance(patience, int | float) and patience >= 1):
            raise ParameterError(
                f"must be >= 1, got {patience!r}", field="patience", limit=">= 1", value=patience
            )
        # the barrier checks run, members and stage_timeout (> 0); its own deadline is the
        # cap, never reached before ours
        self.barrier = ReadinessBarrier(run, members, timeout=patience * stage_timeout)
        self.run = self.barrier.run
        self.stage = topics.check_ident(stage, "stage")
        self.stage_timeout = float(stage_timeout)
        self.patience = float(patience)
        self.state = "new"  # new -> joining -> opened | abandoned
        self.opened_at: float | None = None
        self._deadline: float | None = None
        self._latest: float | None = None

    @property
    def members(self) -> tuple[str, ...]:
        """Returns every expected device, sorted."""
        return tuple(sorted(self.barrier.expected))

    def start(self, now: float) -> None:
        """Open the stage at ``now``: the ``Stage`` open message goes to the outbox, the
        join deadline starts. Raises ``LocalProtocolError`` if already started."""
        if self.state != "new":
            raise LocalProtocolError(f"the stage opening is already {self.state}")
        self.barrier.start(now)
        self.state = "joining"
        self.opened_at = now
        self._deadline = now + self.stage_timeout
        self._latest = now + self.patience * self.stage_timeout
        opening = Stage(run=self.run, sender=topics.COLLECTOR_ID, stage=self.stage, state="open")
        self._send(topics.ctl(self.run, "stage"), opening)

    def receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        """One message from a member's ``up/ready``; a new join moves the deadline.
        Raises ``LocalProtocolError`` before ``start``."""
        if self.state == "new":
            raise LocalProtocolError("start the stage opening before feeding it")
        if self.state != "joining":
            return  # decided: late or repeated joins change nothing
        before = len(self.barrier.joined)
        self.barrier.receive(topic, message, now)
        if any(isinstance(e, AllReady) for e in self.barrier.pop_events()):
            self._decide((), now)
        elif len(self.barrier.joined) > before:
            assert self._deadline is not None and self._latest is not None
            self._deadline = min(self._latest, max(self._deadline, now + self.stage_timeout))

    def next_timer(self) -> float | None:
        return self._deadline if self.state == "joining" else None

    def handle_timer(self, now: float) -> None:
        if self.state != "joining" or self._deadline is None or now < self._deadline:
            return
        self._decide(tuple(self.barrier.missing()), now)

    def _decide(self, absent: tuple[str, ...], now: float) -> None:
        """The one decision: the session opens (with ``absent`` counted out), or none."""
        self._deadline = None
        if not absent:
            self.state = "opened"
            self._emit(SessionOpens(self.members, (), None))
            return
        waited = self.seconds(now)
        shown = ", ".join(absent[:5]) + (", ..." if len(absent) > 5 else "")
        sentence = (
            f"{len(absent)} of {len(self.barrier.expected)} devices did not join the "
            f"{self.stage} stage of run {self.run} within {waited:g} s ({shown})"
        )
        if len(absent) == len(self.barrier.expected):
            self.state = "abandoned"
            self._emit(StageAbandoned(sentence))
        else:
            self.state = "opened"
            self._emit(SessionOpens(self.members, absent, sentence))

    def seconds(self, now: float) -> float:
        """Returns the seconds from the opening to ``now`` (0 before ``start``)."""
        return 0.0 if self.opened_at is None else now - self.opened_at
