"""The device-side pump of private LPEA: one ``LpeaNode`` over a connection.

It subscribes to exactly its neighbours' inbox topics (``topics.inbox(run, device, nbr)``)
and to the collector's ``lpea_round`` broadcast (``collector.lpea_rounds``). A round
broadcast starts the node's round (rounds only ever go forward); a peer message is fed to
the node, except one of a round the node has not started yet (the peer got the broadcast
first): it is BUFFERED and delivered right after that round starts, as ``protocol.lpea``
requires. The node's outbox is published after every input; when the node emits
``RoundFinished(r)`` the agent reports ``LpeaDone(r, added)`` to the pacer. It
leaves on ``LpeaRound(finished=True)``.

Anything refused (bad topic or payload, a message the node refuses, a stale round, a full
buffer) is counted in ``refused`` and logged; the pump carries on. The buffer holds at most
``4 * neighbours + 4`` messages (a neighbour sends at most four messages per round and a
peer can be at most one round ahead of this node).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from ldpfleet.broker.pump import publish_outbound
from ldpfleet.broker.transport import Connection, Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.lpea import (
    LPEA_MESSAGES,
    LpeaDone,
    LpeaNode,
    LpeaRound,
    RoundFinished,
    admit_agent_delivery,
)
from ldpfleet.protocol.messages import Message

log = logging.getLogger(__name__)


class LpeaAgent:
    """One device's part in an LPEA run."""

    def __init__(self, transport: Transport, node: LpeaNode, run: str) -> None:
        if node.run != run:
            raise ValueError(f"node belongs to run {node.run!r}, not {run!r}")
        self.transport = transport
        self.node = node
        self.run_id = run
        self.refused = 0
        self.rounds = 0
        self.messages_up = 0
        self.messages_down = 0
        self.buffered_total = 0  # peer messages that arrived before their round
        self.finished = False
        self.subscribed = asyncio.Event()
        self._buffer: list[tuple[topics.Topic, Message]] = []
        self._max_buffer = 4 * len(node.codes) + 4
        self._done: list[LpeaDone] = []
        self._seq = 0

    # ---- inputs ---------------------------------------------------------------------------

    def _refuse(self, what: str, error: object) -> None:
        self.refused += 1
        log.debug("%s refused %s: %s", self.node.device, what, error)

    def _deliver(self, topic: topics.Topic, message: Message, now: float) -> None:
        try:
            self.node.receive(topic, message, now)
        except RemoteProtocolError as error:
            self._refuse(topic.text, error)
        self._take_events()

    def _take_events(self) -> None:
        for event in self.node.pop_events():
            if isinstance(event, RoundFinished):
                self._seq += 1
                self._done.append(
                    LpeaDone(
                        run=self.run_id,
                        sender=self.node.device,
                        seq=self._seq,
                        round=event.round,
                        added=event.added,
                    )
                )

    def _on_peer(self, topic: topics.Topic, message: Message, now: float) -> None:
        current = self.node.round
        ahead = isinstance(message, LPEA_MESSAGES) and (current is None or message.round > current)
        if not ahead:
            self._deliver(topic, message, now)
        elif len(self._buffer) >= self._max_buffer:
            self._refuse(topic.text, "early-message buffer is full")
        else:
            self._buffer.append((topic, message))
            self.buffered_total += 1

    def _on_round(self, message: LpeaRound, now: float) -> None:
        node = self.node
        if node.round is not None and message.round <= node.round:
            self._refuse("lpea_round", f"round {message.round} does not follow {node.round}")
            return
        node.start_round(message.round, now)
        self.rounds += 1
        self._take_events()
        early, self._buffer = self._buffer, []
        for topic, peer_message in early:
            if peer_message.round < message.round:  # type: ignore[attr-defined]
                self._refuse(topic.text, "message of a round that was skipped")
            else:
                self._on_peer(topic, peer_message, now)  # this round's, or still ahead

    # ---- outputs --------------------------------------------------------------------------

    async def _flush(self, conn: Connection) -> None:
        self.messages_up += await publish_outbound(conn, self.node)
        done, self._done = self._done, []
        for report in done:
            await conn.publish(
                topics.up(self.run_id, self.node.device, "lpea_done"), codec.encode(report)
            )
            self.messages_up += 1

    # ---- the pump -------------------------------------------------------------------------

    async def run(self) -> LpeaNode:
        """Take part until the collector announces the end of LPEA."""
        node, run = self.node, self.run_id
        loop = asyncio.get_running_loop()
        control = topics.ctl(run, "lpea_round")
        async with self.transport.connect(f"{run}-{node.device}-lpea") as conn:
            inboxes = [topics.inbox(run, node.device, nbr) for nbr in sorted(node.codes)]
            await conn.subscribe(*inboxes, control)
            self.subscribed.set()
            async with contextlib.aclosing(conn.messages()) as deliveries:
                async for delivery in deliveries:
                    self.messages_down += 1
                    now = loop.time()
                    try:
                        topic = topics.parse(delivery.topic)
                        message = admit_agent_delivery(topic, codec.decode(delivery.payload), run)
                    except RemoteProtocolError as error:
                        self._refuse(delivery.topic[:300], error)
                        continue
                    if isinstance(message, LpeaRound):
                        if message.finished:
                            self.finished = True
                            break
                        self._on_round(message, now)
                    else:
                        self._on_peer(topic, message, now)
                    await self._flush(conn)
        return node
