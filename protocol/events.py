"""What protocol machines emit: ``Outbound`` messages to publish and ``Event``s for the pump.

Machines never do I/O. After each input (``start``, ``receive``, ``handle_timer``, ...) the
pump drains ``pop_outbound()`` and publishes it, and ``pop_events()`` and acts on them
(persist, count, finish). ``next_timer()`` says when ``handle_timer`` must next be called.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.messages import Message


@dataclass(frozen=True, slots=True)
class Outbound:
    """A message the pump must publish on ``topic``."""

    topic: str
    message: Message


class Event:
    """Base class of machine events."""

    __slots__ = ()


class Machine:
    """Outbox / event-queue plumbing shared by every protocol machine."""

    def __init__(self) -> None:
        self._outbound: list[Outbound] = []
        self._events: list[Event] = []

    def _send(self, topic: str, message: Message) -> None:
        self._outbound.append(Outbound(topic, message))

    def _emit(self, event: Event) -> None:
        self._events.append(event)

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
