"""Run rendezvous: a collector and a fleet that may start in either order — theory of
operation.

The collector side and the device side of a run can be separate programs on separate hosts
(``ldpfleet collector`` and ``ldpfleet fleet``), started in any order. They meet on one
topic, ``ldp/{run}/ctl/run``:

* the collector (``RunHost``) publishes a **retained** ``RunOpen`` there: the run's terms
  (``RunTerms``: kind, scenario name and digest, seed, number of devices) and its
  ``epoch``, the incarnation of the collector (a restarted collector announces a larger
  one). A broker hands a retained message to every later subscriber at once, so a fleet
  that starts after the collector meets it immediately and one that starts before meets it
  when it is published. At the end the collector replaces it with a retained ``RunClosed``
  of the same epoch.
* the fleet (``RunWaiter``) subscribes, then waits. An announcement whose terms equal its
  own opens the run (``RunOpened``: its devices start); one whose terms differ refuses it
  (``RunRefused``, naming the first field that differs, both values); nothing by the
  deadline ends the wait (``RunWaitTimedOut``: "no collector announced run fbx within
  60 s").

Broker clusters. Some clustered brokers keep a retained message only on the node it was
published to (RabbitMQ 3.10's MQTT plugin: seen), so a fleet subscribing on another node
after the announcement never gets it. With ``repeat_every`` the host publishes its
``RunOpen`` again at that interval while the run is open (``handle_timer``): a waiter
subscribed on any node receives the next repeat live, and a repeat the waiter has already
decided on is ignored. Off by default (``[broker] announce_every``).

Lost and reordered messages. A retained message is only lost with the broker's state (a
restart without persistence) or a subscription that did not take; the waiter therefore
asks its pump to subscribe again every ``resubscribe_every`` seconds (``Resubscribe``), and
the broker sends the retained announcement again. Announcements carry the epoch: one older
than an epoch already seen is stale and ignored, wherever it arrives in the order. A
``RunClosed`` ends the wait only when it closes the epoch the waiter was opened by (a run
that ended while this fleet was waiting for it): a retained ``RunClosed`` left by an
*earlier* collector of the same run id is remembered, not obeyed, because a new collector
may still announce (its ``RunOpen`` replaces it); past the deadline the timeout says the
run was closed.

Another release. A fleet and a collector of different ldpfleet releases cannot talk (the
codec refuses another message schema version, ``unsupported_version``). The pump hands
the waiter what the codec refused on the run's announcement topic
(``receive_undecodable``): only the collector publishes there, so another version refuses
the run at once, with a sentence saying to install the same release on both sides, instead
of a wait for the whole timeout.

The machines do no I/O: the pump publishes ``Outbound`` items (``retain=True`` for both
announcements), subscribes on ``Resubscribe``, and calls ``receive`` / ``handle_timer``
with the time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import astuple, dataclass, fields
from typing import Annotated

from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Event, Machine
from ldpfleet.protocol.messages import SCHEMA_VERSION, Ident, Message, Reason
from msgspec import Meta

__all__ = [
    "ANNOUNCE_KIND",
    "RENDEZVOUS_MESSAGES",
    "Resubscribe",
    "RunClosed",
    "RunEnded",
    "RunHost",
    "RunOpen",
    "RunOpened",
    "RunRefused",
    "RunTerms",
    "RunWaitTimedOut",
    "RunWaiter",
    "scenario_digest",
]

ANNOUNCE_KIND = "run"  # ldp/{run}/ctl/run
Epoch = Annotated[int, Meta(ge=0, le=2**62)]
Digest = Annotated[str, Meta(pattern=r"^[0-9a-f]{16,64}\Z")]
ScenarioName = Annotated[str, Meta(min_length=1, max_length=200)]


class RunOpen(Message, tag="run_open", kw_only=True):
    """Collector -> everyone (retained on ``ctl/run``): the run is open on these terms."""

    epoch: Epoch
    kind: Ident
    scenario: ScenarioName
    digest: Digest
    seed: Annotated[int, Meta(ge=0, le=2**63 - 1)]
    devices: Annotated[int, Meta(ge=1, le=10_000_000)]


class RunClosed(Message, tag="run_closed", kw_only=True):
    """Collector -> everyone (retained on ``ctl/run``): the run of ``epoch`` is over."""

    epoch: Epoch
    reason: Reason = ""


RENDEZVOUS_MESSAGES = (RunOpen, RunClosed)


def scenario_digest(document: object) -> str:
    """A short stable digest of a scenario's validated content (any JSON-able value): the
    collector and the fleet compare it to be sure they run the same scenario."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class RunTerms:
    """What both sides of a run must agree on (compared field by field, in this order)."""

    kind: str  # "stream", "secure_sum", "cadr"
    scenario: str
    seed: int
    devices: int
    digest: str

    def first_difference(self, other: RunTerms) -> tuple[str, object, object] | None:
        """(field, mine, theirs) of the first field that differs, or None."""
        for spec, mine, theirs in zip(fields(self), astuple(self), astuple(other), strict=True):
            if mine != theirs:
                return spec.name, mine, theirs
        return None

    @classmethod
    def of(cls, message: RunOpen) -> RunTerms:
        return cls(message.kind, message.scenario, message.seed, message.devices, message.digest)


@dataclass(frozen=True, slots=True)
class RunOpened(Event):
    """The collector announced this run on our terms: start the devices."""

    epoch: int


@dataclass(frozen=True, slots=True)
class RunRefused(Event):
    """The collector announced this run on other terms: the devices must not start."""

    field: str
    ours: object
    theirs: object
    sentence: str


@dataclass(frozen=True, slots=True)
class RunWaitTimedOut(Event):
    """No usable announcement came before the deadline."""

    sentence: str


@dataclass(frozen=True, slots=True)
class RunEnded(Event):
    """The collector closed the run this waiter was opened by."""

    epoch: int
    reason: str


@dataclass(frozen=True, slots=True)
class Resubscribe(Event):
    """Subscribe to ``ctl/run`` again (the broker resends the retained announcement)."""

    topic: str


class RunHost(Machine):
    """The collector's side: announce the run (retained), then close it."""

    def __init__(
        self, run: str, terms: RunTerms, epoch: int, *, repeat_every: float | None = None
    ) -> None:
        super().__init__()
        if repeat_every is not None and not (
            isinstance(repeat_every, int | float) and repeat_every > 0
        ):
            raise ParameterError(
                f"must be > 0 seconds or None, got {repeat_every!r}",
                field="repeat_every",
                limit="> 0 seconds or None",
                value=repeat_every,
            )
        self.run = topics.check_ident(run, "run")
        self.terms = terms
        self.epoch = epoch
        self.repeat_every = repeat_every
        self.state = "new"  # new -> open -> closed
        self.repeats = 0  # announcements published again (repeat_every)
        self._repeat_at: float | None = None
        self._closing: RunClosed | None = None  # what ``close`` published

    @property
    def topic(self) -> str:
        """``ldp/{run}/ctl/run``: publish what this machine sends there with retain."""
        return topics.ctl(self.run, ANNOUNCE_KIND)

    def open(self, now: float = 0.0) -> None:
        """Announce the run (publish retained); with ``repeat_every``, again from
        ``now + repeat_every`` on (``handle_timer``)."""
        if self.state != "new":
            raise LocalProtocolError(f"the run was already {self.state}")
        self._announce()
        self.state = "open"
        if self.repeat_every is not None:
            self._repeat_at = now + self.repeat_every

    def _announce(self) -> None:
        t = self.terms
        self._send(
            self.topic,
            RunOpen(
                run=self.run,
                sender=topics.COLLECTOR_ID,
                epoch=self.epoch,
                kind=t.kind,
                scenario=t.scenario,
                digest=t.digest,
                seed=t.seed,
                devices=t.devices,
            ),
            retain=True,
        )

    def next_timer(self) -> float | None:
        return self._repeat_at if self.state == "open" else None

    def handle_timer(self, now: float) -> None:
        """Publish the announcement again when its repeat is due (open runs only)."""
        if self.state != "open" or self._repeat_at is None or now < self._repeat_at:
            return
        self._announce()
        self.repeats += 1
        self._repeat_at = now + self.repeat_every

    def close(self, reason: str = "") -> None:
        """Replace the announcement with the end of the run (publish retained)."""
        if self.state == "closed":
            return
        self._closing = RunClosed(
            run=self.run, sender=topics.COLLECTOR_ID, epoch=self.epoch, reason=reason[:500]
        )
        self._send(self.topic, self._closing, retain=True)
        self.state = "closed"

    def resend_close(self) -> None:
        """The ``RunClosed`` of ``close`` once more (retained), for a pump whose connection
        broke while publishing it: the machine cannot know whether the broker kept it, and
        publishing it twice changes nothing. Nothing before ``close``."""
        if self._closing is not None:
            self._send(self.topic, self._closing, retain=True)


class RunWaiter(Machine):
    """The fleet's side: wait for the collector's announcement of ``run`` on ``terms``."""

    def __init__(
        self,
        run: str,
        terms: RunTerms,
        *,
        timeout: float,
        resubscribe_every: float = 5.0,
    ) -> None:
        super().__init__()
        if not timeout > 0:
            raise ParameterError(
                f"must be > 0 seconds, got {timeout!r}",
                field="timeout",
                limit="> 0 seconds",
                value=timeout,
            )
        if not resubscribe_every > 0:
            raise ParameterError(
                f"must be > 0 seconds, got {resubscribe_every!r}",
                field="resubscribe_every",
                limit="> 0 seconds",
                value=resubscribe_every,
            )
        self.run = topics.check_ident(run, "run")
        self.terms = terms
        self.timeout = timeout
        self.resubscribe_every = resubscribe_every
        self.state = "new"  # new -> waiting -> open | refused | timed_out; open -> ended
        self.epoch: int | None = None  # the epoch that opened the run
        self._newest = -1  # the newest epoch seen in any announcement
        self._closed_epoch: int | None = None  # a RunClosed seen while waiting
        self._deadline = 0.0
        self._resubscribe_at = 0.0

    @property
    def topic(self) -> str:
        return topics.ctl(self.run, ANNOUNCE_KIND)

    def start(self, now: float) -> None:
        """Begin waiting (the pump has subscribed to ``topic``)."""
        if self.state != "new":
            raise LocalProtocolError(f"already {self.state}")
        self.state = "waiting"
        self._deadline = now + self.timeout
        self._resubscribe_at = now + self.resubscribe_every

    def receive(self, message: Message, now: float) -> None:
        """An announcement arrived on ``ctl/run`` (anything else is not ours: ignored)."""
        if message.run != self.run or message.sender != topics.COLLECTOR_ID:
            return
        if isinstance(message, RunOpen):
            self._on_open(message)
        elif isinstance(message, RunClosed):
            self._on_closed(message)

    def receive_undecodable(self, error: RemoteProtocolError, now: float) -> None:
        """A payload on the run's announcement topic that the codec refused. Only the
        collector publishes there, so ``unsupported_version`` means the collector runs
        another ldpfleet release: refuse the run at once (before: the fleet waited for the
        whole rendezvous timeout, then said no collector had announced). Anything else is
        ignored, as before (a later valid announcement may still come)."""
        if error.code != "unsupported_version" or self.state != "waiting":
            return
        self.state = "refused"
        sentence = (
            f"the collector of run {self.run} speaks another message schema ({error}); "
            f"install the same ldpfleet release on both sides"
        )
        self._emit(RunRefused("schema_version", SCHEMA_VERSION, str(error), sentence))

    def _on_open(self, message: RunOpen) -> None:
        if message.epoch < self._newest:
            return  # stale: a newer collector has spoken
        self._newest = message.epoch
        if self.state != "waiting":
            return  # decided already (a restarted collector is the stage machines' business)
        difference = self.terms.first_difference(RunTerms.of(message))
        if difference is not None:
            name, ours, theirs = difference
            self.state = "refused"
            sentence = (
                f"the collector of run {self.run} runs {name} {theirs!r}, this fleet "
                f"{name} {ours!r}: start both with the same scenario and seed"
            )
            self._emit(RunRefused(name, ours, theirs, sentence))
            return
        self.state = "open"
        self.epoch = message.epoch
        self._emit(RunOpened(message.epoch))

    def _on_closed(self, message: RunClosed) -> None:
        if message.epoch < self._newest:
            return
        self._newest = message.epoch
        if self.state == "open" and message.epoch == self.epoch:
            self.state = "ended"
            self._emit(RunEnded(message.epoch, message.reason))
        elif self.state == "waiting":
            self._closed_epoch = message.epoch  # an earlier collector's: a new one may come

    def next_timer(self) -> float | None:
        if self.state != "waiting":
            return None
        return min(self._deadline, self._resubscribe_at)

    def handle_timer(self, now: float) -> None:
        if self.state != "waiting":
            return
        if now >= self._deadline:
            self.state = "timed_out"
            self._emit(RunWaitTimedOut(self._timeout_sentence()))
        elif now >= self._resubscribe_at:
            self._resubscribe_at = now + self.resubscribe_every
            self._emit(Resubscribe(self.topic))

    def _timeout_sentence(self) -> str:
        waited = f"{self.timeout:g} s"
        if self._closed_epoch is not None:
            return (
                f"run {self.run} was closed by its collector and no collector announced it "
                f"again within {waited}"
            )
        return f"no collector announced run {self.run} within {waited}"
