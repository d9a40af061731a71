"""The readiness barrier: the collector starts a run's stages once every device listens —
theory of operation.

A CADR-LDP run broadcasts its plan once, and every stage after it needs every device (the
relay's supersteps wait for each device's batch, NDOE needs every neighbour's code). A
device that subscribes after the plan went out misses it, so the collector must not start
before all devices listen. In one process the runner could see that; across processes (the
collector side and ``k`` fleet shards, possibly on other hosts) it cannot, so each device
says so on the wire:

* a device, once subscribed to everything of the run it must hear, publishes ONE
  ``DeviceReady`` on its own ``ldp/{run}/dev/{me}/up/ready`` (the ACL lets a device publish
  only under its own id, so no shard speaks for devices it does not hold the connection
  of); ``ready_announcement`` builds it;
* the collector's ``ReadinessBarrier`` knows the expected device ids and a join deadline
  (``timeout`` after ``start``). It counts each expected device once; when the last one
  joins it emits ``AllReady``, and at the deadline ``JoinDeadlinePassed`` with the missing
  ids and one sentence ("3 of 4039 devices did not join run fbx within 60 s").

Lost, duplicated and foreign messages. ``DeviceReady`` goes at QoS 1 and the collector
subscribes (and announces the run) before any device can start, so a message is only lost
with the broker's state; a lost one leaves its device missing and the run stops at the
deadline, naming how many. Duplicates (QoS 1 redelivery, a device restarted) count once
(``duplicates``). A message whose topic names a device that is not expected, whose
``sender`` differs from the topic's device level, of another run, or of another type is
refused (``refused``) and changes nothing. Input after the decision is ignored.

CADR-LDP does not tolerate a device that never joined: its neighbours wait for its NDOE
code and the relay for its batches, so the collector stops (``collector.cadr_fleet`` has
no dropout path before the plan). The machine does no I/O: the pump subscribes, calls
``start`` / ``receive`` / ``handle_timer`` with the time, and acts on the events.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError
from ldpfleet.protocol.events import Event, Machine, Outbound
from ldpfleet.protocol.messages import Message

__all__ = [
    "READINESS_MESSAGES",
    "READY_KIND",
    "AllReady",
    "DeviceReady",
    "JoinDeadlinePassed",
    "ReadinessBarrier",
    "ready_announcement",
]

READY_KIND = "ready"  # ldp/{run}/dev/{device}/up/ready


class DeviceReady(Message, tag="device_ready", kw_only=True):
    """Device -> collector (``up/ready``): subscribed to everything of the run."""


READINESS_MESSAGES = (DeviceReady,)


def ready_announcement(run: str, device: str) -> Outbound:
    """The device's one ``DeviceReady`` on its own ``up/ready`` topic."""
    return Outbound(topics.up(run, device, READY_KIND), DeviceReady(run=run, sender=device))


@dataclass(frozen=True, slots=True)
class AllReady(Event):
    """Every expected device has joined: the stages may start."""

    devices: int


@dataclass(frozen=True, slots=True)
class JoinDeadlinePassed(Event):
    """The deadline passed with devices missing (sorted ids) — the run cannot start."""

    missing: tuple[str, ...]
    sentence: str


class ReadinessBarrier(Machine):
    """The collector's count of joined devices (module docstring)."""

    def __init__(self, run: str, expected: Iterable[str], *, timeout: float) -> None:
        super().__init__()
        # finite: a deadline that never comes also holds the pump's input hold forever
        # (``broker.pump.drive_timers(max_hold=timeout)``; helper R's review, 2026-12-07)
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ParameterError(
                f"must be a finite number of seconds > 0, got {timeout!r}",
                field="timeout",
                limit="a finite number of seconds > 0",
                value=timeout,
            )
        self.run = topics.check_ident(run, "run")
        self.expected = frozenset(expected)
        if not self.expected:
            raise ParameterError(
                "at least one device must be expected",
                field="expected",
                limit="at least one expected device",
                value=self.expected,
            )
        self.timeout = timeout
        self.joined: set[str] = set()
        self.duplicates = 0
        self.refused = 0
        self.state = "new"  # new -> waiting -> ready | expired
        self._deadline: float | None = None

    def start(self, now: float) -> None:
        """Begin counting (the pump has subscribed); the deadline is ``now + timeout``."""
        if self.state != "new":
            raise LocalProtocolError(f"the barrier is already {self.state}")
        self.state = "waiting"
        self._deadline = now + self.timeout

    def receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        """One message from ``up/ready``; anything not a valid join is refused."""
        if self.state == "new":
            raise LocalProtocolError("start the barrier before feeding it")
        if self.state != "waiting":
            return  # decided: late or repeated joins change nothing
        device = topic.sender
        if (
            not isinstance(message, DeviceReady)
            or topic.family != "up"
            or topic.kind != READY_KIND
            or message.run != self.run
            or topic.run != self.run
            or message.sender != device
            or device not in self.expected
        ):
            self.refused += 1
            return
        if device in self.joined:
            self.duplicates += 1
            return
        self.joined.add(device)
        if len(self.joined) == len(self.expected):
            self.state = "ready"
            self._deadline = None
            self._emit(AllReady(len(self.joined)))

    def missing(self) -> list[str]:
        """The expected devices that have not joined (sorted)."""
        return sorted(self.expected - self.joined)

    def next_timer(self) -> float | None:
        return self._deadline if self.state == "waiting" else None

    def handle_timer(self, now: float) -> None:
        if self.state != "waiting" or self._deadline is None or now < self._deadline:
            return
        self.state = "expired"
        self._deadline = None
        missing = tuple(self.missing())
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        sentence = (
            f"{len(missing)} of {len(self.expected)} devices did not join run {self.run} "
            f"within {self.timeout:g} s ({shown})"
        )
        self._emit(JoinDeadlinePassed(missing, sentence))
