"""What protocol machines emit: ``Outbound`` messages to publish and ``Event``s for the pump.

Machines never do I/O. After each input (``start``, ``receive``, ``handle_timer``, ...) the
pump drains ``pop_outbound()`` and publishes it, and ``pop_events()`` and acts on them
(persist, count, finish). ``next_timer()`` says when ``handle_timer`` must next be called.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import ProtocolError, RemoteProtocolError
from ldpfleet.protocol.messages import MAX_STEPS, Message, Reject


class Outbound(NamedTuple):
    """A message the pump must publish on ``topic``, as an MQTT retained message if
    ``retain`` (the broker keeps the topic's last one and hands it to every later
    subscriber: the run announcement, ``protocol.rendezvous``). (A named tuple: machines
    create one per message sent, and a frozen dataclass costs 3x more to build — measured
    5 s of 1.4M sends in a CADR-LDP fleet run.)"""

    topic: str
    message: Message
    retain: bool = False


class Event:
    """Base class of machine events."""

    __slots__ = ()


class Machine:
    """Outbox / event-queue plumbing shared by every protocol machine."""

    def __init__(self) -> None:
        self._outbound: list[Outbound] = []
        self._events: list[Event] = []

    def _send(self, topic: str, message: Message, retain: bool = False) -> None:
        self._outbound.append(Outbound(topic, message, retain))

    def _emit(self, event: Event) -> None:
        self._events.append(event)

    @property
    def has_outbound(self) -> bool:
        """Whether the outbox holds anything to publish."""
        return bool(self._outbound)

    def pop_outbound(self) -> list[Outbound]:
        """Messages to publish, oldest first; the outbox is emptied."""
        out, self._outbound = self._outbound, []
        return out

    def pop_events(self) -> list[Event]:
        """Events since the last call, oldest first."""
        events, self._events = self._events, []
        return events

    def next_timer(self) -> float | None:
        """When ``handle_timer`` must next be called (None: no deadline pending)."""
        return None

    def handle_timer(self, now: float) -> None:
        """Fire every deadline that is due at ``now``."""


# Reason keys of a rejection by field, when the error did not set one (``reason_key``).
_FIELD_REASONS = {
    "payload": "undecodable",
    "sender": "wrong_sender",
    "topic": "bad_topic",
    "run": "wrong_run",
    "type": "unexpected_type",
    "signature": "bad_signature",
}


def reason_key(error: ProtocolError) -> str:
    """The stable reason key of a rejection: the error's ``code``, else one derived from
    its field (``sender`` -> ``wrong_sender``, ...; any other field: ``invalid_field``)."""
    if error.code:
        return error.code
    return _FIELD_REASONS.get(error.field or "", "invalid_field")


@dataclass(frozen=True, slots=True)
class Rejected(Event):
    """A message was refused: never used, counted, and its reason published."""

    device: str
    topic: str
    kind: str
    field: str
    reason: str
    code: str = ""


class PeerFacingMachine(Machine):
    """A server-side machine facing many peers (the collector's stages).

    One peer's bad message must not stop the service: ``receive`` turns the subclass's
    ``RemoteProtocolError`` into a rejection — counted per field and per reason key
    (``reason_key``), emitted as ``Rejected``,
    published on ``ldp/{run}/svc/{service}/reject`` (``collector`` unless told) — and the
    state stays as it was.
    Subclasses implement ``_receive``.
    """

    def __init__(self, run: str, *, service: str = topics.COLLECTOR_ID) -> None:
        super().__init__()
        self._reject_run = run
        self._reject_service = service
        self.rejected = 0
        self.rejections_by_field: Counter[str] = Counter()
        self.rejections_by_reason: Counter[str] = Counter()

    def _receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        raise NotImplementedError

    def _check_upstream(self, topic: topics.Topic, message: Message) -> None:
        """What every upstream message must satisfy first: an ``up`` topic of this run, and
        the sender named in the payload is the topic's device (no impersonation)."""
        run = self._reject_run
        if topic.family != "up":
            raise RemoteProtocolError(
                f"{topic.family} topics are not for the collector", field="topic"
            )
        if topic.run != run or message.run != run:
            raise RemoteProtocolError(f"run {message.run!r} is not {run!r}", field="run")
        if message.sender != topic.sender:
            raise RemoteProtocolError(
                f"sender {message.sender!r} does not match topic device {topic.sender!r}",
                field="sender",
                code="wrong_sender",
            )

    def receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        """Consume one decoded upstream message; bad ones are rejected, never raised."""
        try:
            self._receive(topic, message, now)
        except RemoteProtocolError as error:
            self.reject(topic, message.type_name(), error, message)

    def _final_notice(self, topic: topics.Topic, message: Message, code: str) -> str | None:
        """The inbox topic that must also get the ``Reject`` of ``message`` (refused for
        ``code``): set by machines whose peers act on a final rejection (the stream
        collector); None (the default): the notice goes to the service topic only."""
        return None

    def reject(
        self,
        topic: topics.Topic | str,
        kind: str,
        error: ProtocolError,
        message: Message | None = None,
    ) -> None:
        """Count a refused message and publish the reason (also for undecodable payloads);
        a final rejection of a device's own decoded ``message`` also goes to its inbox
        (``_final_notice``), naming the message by seq and digest."""
        self.rejected += 1
        field_name = error.field or ""
        code = reason_key(error)
        self.rejections_by_field[field_name] += 1
        self.rejections_by_reason[code] += 1
        if isinstance(topic, topics.Topic):
            device, topic_text = topic.sender, topic.text
        else:
            device, topic_text = "", topic
        self._emit(Rejected(device, topic_text, kind, field_name, error.reason, code))
        inbox = None
        if message is not None and isinstance(topic, topics.Topic):
            inbox = self._final_notice(topic, message, code)
        notice = Reject(
            run=self._reject_run,
            sender=self._reject_service,
            seq=min(self.rejected, MAX_STEPS),
            device=device[:64],
            topic=topic_text[:300],
            kind=kind[:64],
            field=field_name[:100],
            reason=error.reason[:500],
            code=code[:32],
            message_seq=-1 if message is None else max(-1, min(message.seq, MAX_STEPS)),
            digest="" if inbox is None else _digest(message),
        )
        self._send(topics.svc(self._reject_run, self._reject_service, "reject"), notice)
        if inbox is not None:
            self._send(inbox, notice)


def _digest(message: Message | None) -> str:
    # imported here: the codec imports the machines' message modules, which import this one
    from ldpfleet.protocol.codec import message_digest

    return "" if message is None else message_digest(message)
