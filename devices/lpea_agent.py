"""The device-side pump of private LPEA: one ``protocol.lpea_device.LpeaDevice`` (around
the device's ``LpeaNode``) over a connection.

It subscribes to exactly its neighbours' inbox topics (``topics.inbox(run, device, nbr)``)
and to the collector's ``lpea_round`` broadcast (``collector.lpea_rounds``), decodes each
delivery, feeds it to the machine, logs the machine's refusals and publishes its outbox
(peer messages, and the ``LpeaDone`` report of each round the node finished). It leaves
when the machine has seen ``LpeaRound(finished=True)``. Every decision — admission, round
order, buffering peer messages that arrive before their round and replaying them, what is
refused and why — is the machine's; a delivery that does not decode is refused through it
too (``refused`` counts everything). The pump carries on after a refusal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from ldpfleet.broker.pump import publish_outbound
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.lpea import LpeaNode
from ldpfleet.protocol.lpea_device import LpeaDevice, Refused

log = logging.getLogger(__name__)


class LpeaAgent:
    """One device's part in an LPEA run."""

    def __init__(self, transport: Transport, node: LpeaNode, run: str) -> None:
        self.transport = transport
        self.machine = LpeaDevice(node, run)
        self.node = node
        self.run_id = run
        self.messages_up = 0
        self.messages_down = 0
        self.subscribed = asyncio.Event()

    @property
    def refused(self) -> int:
        """Deliveries refused (undecodable, or refused by the machine or its node)."""
        return self.machine.refused

    @property
    def rounds(self) -> int:
        """Rounds the node started."""
        return self.machine.rounds

    @property
    def buffered_total(self) -> int:
        """Peer messages put into the early-message buffer (again if still ahead)."""
        return self.machine.buffered_total

    @property
    def finished(self) -> bool:
        """Whether the collector announced the end of LPEA."""
        return self.machine.finished

    def _log_refusals(self) -> None:
        for event in self.machine.pop_events():
            if isinstance(event, Refused):
                log.debug("%s refused %s: %s", self.node.device, event.what, event.error)

    async def run(self) -> LpeaNode:
        """Take part until the collector announces the end of LPEA."""
        machine, node, run = self.machine, self.node, self.run_id
        loop = asyncio.get_running_loop()
        async with self.transport.connect(f"{run}-{node.device}-lpea") as conn:
            inboxes = [topics.inbox(run, node.device, nbr) for nbr in sorted(node.codes)]
            await conn.subscribe(*inboxes, topics.ctl(run, "lpea_round"))
            self.subscribed.set()
            async with contextlib.aclosing(conn.messages()) as deliveries:
                async for delivery in deliveries:
                    self.messages_down += 1
                    try:
                        topic = topics.parse(delivery.topic)
                        message = codec.decode(delivery.payload)
                    except RemoteProtocolError as error:
                        machine.refuse(delivery.topic[:300], error)
                    else:
                        machine.receive(topic, message, loop.time())
                    self._log_refusals()
                    if machine.finished:
                        break
                    self.messages_up += await publish_outbound(conn, machine)
        return node
