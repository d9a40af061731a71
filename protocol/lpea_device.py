"""The device side of per-message private LPEA between the broker and ``LpeaNode`` —
theory of operation.

``protocol.lpea.LpeaNode`` negotiates kept edges with the neighbours; it requires that a
round's broadcast reach it before any peer message of that round, and it refuses a message
of any other round. The broker does not keep that order: a neighbour that got round ``r``'s
broadcast first may already be talking round ``r``. :class:`LpeaDevice` is the sans-I/O
machine between a device's deliveries and its node, so that the pump
(``devices.lpea_agent``) only pumps: decode, ``receive``, publish the outbox.

Inputs (``receive(topic, message, now)``, already decoded)

- Admission first (``protocol.lpea.admit_agent_delivery``): only this run's collector
  paces rounds, on ``ctl/lpea_round``; round control on a peer inbox is refused.
- ``LpeaRound(finished=True)``: LPEA is over; ``finished`` is set and nothing else happens.
- ``LpeaRound(r)``: rounds only go forward. ``r`` not above the node's round is refused
  (``field="round"``, ``code="stale_round"``). Otherwise the node starts round ``r`` and the
  buffer is replayed in arrival order: a message of a round below ``r`` is refused (that
  round was skipped: ``code="skipped_round"``), one of round ``r`` goes to the node, one
  still ahead goes back into the buffer (and is counted in ``buffered_total`` again).
- A peer message of a round the node has not started (an LPEA message whose ``round`` is
  above the node's, or any before the first round) is BUFFERED; when the buffer holds
  ``buffer_cap`` messages it is refused instead (``code="buffer_full"``). Anything else
  goes to the node, which refuses what the protocol forbids (its own fields).

The cap is ``4 * neighbours + 4``: a neighbour sends at most four messages per round
(request, answer, establish, confirm), and the pacer opens round ``r + 1`` only after every
device reported round ``r``, so a peer is at most one round ahead of this node.

Outputs. The node's messages, in order, after every input; then, for each
``RoundFinished(r)`` the node emitted during that input, ``LpeaDone(r, added)`` on
``up/lpea_done`` (the pacer's report). Every refusal — admission, the machine's own, the
node's, and what the pump could not decode (``refuse``) — is counted in ``refused`` and
emitted as a :class:`Refused` event naming what was refused and the
``RemoteProtocolError``; the machine carries on with its state unchanged. The node's own
misuse (a round that opens while the node's round is unfinished: the pacer's bug) raises
``LocalProtocolError`` as ``LpeaNode.start_round`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Event, Machine
from ldpfleet.protocol.lpea import (
    LPEA_MESSAGES,
    LpeaDone,
    LpeaNode,
    LpeaRound,
    RoundFinished,
    admit_agent_delivery,
)
from ldpfleet.protocol.messages import MAX_STEPS, Message

__all__ = ["LpeaDevice", "Refused"]


@dataclass(frozen=True, slots=True)
class Refused(Event):
    """An input was refused (counted in ``LpeaDevice.refused``, never used): ``what`` is
    its topic (``"lpea_round"`` for an out-of-order broadcast), ``error`` says why."""

    what: str
    error: RemoteProtocolError


class LpeaDevice(Machine):
    """One device's LPEA input ordering and round reports around its ``LpeaNode``
    (module docstring)."""

    def __init__(self, node: LpeaNode, run: str) -> None:
        super().__init__()
        if node.run != run:
            raise ParameterError(
                f"node belongs to run {node.run!r}, not {run!r}",
                field="run",
                limit=f"the node's run {node.run!r}",
                value=run,
            )
        self.node = node
        self.run = run
        self.buffer_cap = 4 * len(node.codes) + 4
        self.refused = 0
        self.rounds = 0
        self.buffered_total = 0  # peer messages that arrived before their round
        self.finished = False
        self._buffer: list[tuple[topics.Topic, Message]] = []
        self._seq = 0

    # ---- inputs ---------------------------------------------------------------------------

    def receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        """Consume one decoded delivery (module docstring); a refusal is counted and
        emitted, never raised."""
        try:
            message = admit_agent_delivery(topic, message, self.run)
        except RemoteProtocolError as error:
            self.refuse(topic.text, error)
            return
        if isinstance(message, LpeaRound):
            if message.finished:
                self.finished = True
                return
            self._on_round(message.round, now)
        else:
            self._on_peer(topic, message, now)
        self._collect()

    def refuse(self, what: str, error: RemoteProtocolError) -> None:
        """Count and emit one refusal (also for deliveries the pump could not decode)."""
        self.refused += 1
        self._emit(Refused(what, error))

    # ---- steps ----------------------------------------------------------------------------

    def _deliver(self, topic: topics.Topic, message: Message, now: float) -> None:
        try:
            self.node.receive(topic, message, now)
        except RemoteProtocolError as error:
            self.refuse(topic.text, error)

    def _on_peer(self, topic: topics.Topic, message: Message, now: float) -> None:
        current = self.node.round
        ahead = isinstance(message, LPEA_MESSAGES) and (current is None or message.round > current)
        if not ahead:
            self._deliver(topic, message, now)
        elif len(self._buffer) >= self.buffer_cap:
            error = RemoteProtocolError(
                "early-message buffer is full", field="round", code="buffer_full"
            )
            self.refuse(topic.text, error)
        else:
            self._buffer.append((topic, message))
            self.buffered_total += 1

    def _on_round(self, r: int, now: float) -> None:
        node = self.node
        if node.round is not None and r <= node.round:
            reason = f"round {r} does not follow {node.round}"
            self.refuse(
                "lpea_round", RemoteProtocolError(reason, field="round", code="stale_round")
            )
            return
        node.start_round(r, now)
        self.rounds += 1
        early, self._buffer = self._buffer, []
        for topic, message in early:
            if message.round < r:  # type: ignore[attr-defined]
                error = RemoteProtocolError(
                    "message of a round that was skipped", field="round", code="skipped_round"
                )
                self.refuse(topic.text, error)
            else:
                self._on_peer(topic, message, now)  # this round's, or still ahead

    # ---- outputs --------------------------------------------------------------------------

    def _collect(self) -> None:
        """The node's messages of this input, then a report per round it finished."""
        self._outbound.extend(self.node.pop_outbound())
        for event in self.node.pop_events():
            if isinstance(event, RoundFinished):
                self._seq += 1
                report = LpeaDone(
                    run=self.run,
                    sender=self.node.device,
                    seq=min(self._seq, MAX_STEPS),
                    round=event.round,
                    added=event.added,
                )
                self._send(topics.up(self.run, self.node.device, "lpea_done"), report)
