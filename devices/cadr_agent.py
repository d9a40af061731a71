"""The device-side pump of CADR-LDP: one ``protocol.cadr_device.CadrDevice`` over one
connection.

It subscribes to the device's inbox (secure-aggregation setup and acks from the
collector, peer deliveries from the relay) and to the four broadcasts it takes part in
(``cadr_plan``, ``cadr_query``, ``cadr_theta``, ``peer_step``), feeds the machine, publishes
its outbox, fires its retransmission timer, and leaves once its release is acknowledged.
Once subscribed it publishes its one ``DeviceReady`` (``protocol.readiness``) on its own
``up/ready``: the collector starts the run when every device has.
Refused input is counted (``refused``) and logged; the pump carries on.

``dropout`` (a stage of ``devices.secagg_agent.DROPOUT_STAGES``) simulates a device that
crashes for good in the θ search's secure sum (``[cadr] dropout``): it withholds that
stage's message (``after_masked``: leaves once its masked input is out), publishes an
``SaAbort`` on its ``up/sa_abort`` as an MQTT broker publishes a crashed client's last
will, and returns; it releases nothing afterwards. ``dropped`` then names the stage.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging

from ldpfleet.broker.pump import background, drive_timers, publish_outbound
from ldpfleet.broker.transport import Connection, Transport
from ldpfleet.devices.secagg_agent import DROPOUT_STAGES, WITHHELD_AT
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.peer_relay import RELAY_ID
from ldpfleet.protocol.readiness import ready_announcement
from ldpfleet.protocol.secagg.messages import SaAbort, SaMasked

log = logging.getLogger(__name__)

BROADCASTS = ("cadr_plan", "cadr_query", "cadr_theta", "peer_step")


class CadrAgent:
    """One device's part in a CADR-LDP run."""

    def __init__(
        self,
        transport: Transport,
        machine: CadrDevice,
        *,
        connect_gate: asyncio.Semaphore | None = None,
        dropout: str | None = None,
    ) -> None:
        if dropout is not None and dropout not in DROPOUT_STAGES:
            close = difflib.get_close_matches(str(dropout), DROPOUT_STAGES, n=1)
            raise ParameterError(
                f"{dropout!r} is not one of {', '.join(DROPOUT_STAGES)}"
                + (f" (did you mean {close[0]!r}?)" if close else ""),
                field="dropout",
                limit=f"None or one of {', '.join(DROPOUT_STAGES)}",
                value=dropout,
            )
        self.dropout = dropout
        self.dropped: str | None = None  # the stage this device crashed at (module docstring)
        self.transport = transport
        self.machine = machine
        self.connect_gate = connect_gate
        self.refused = 0
        self.messages_up = 0
        self.messages_down = 0
        self.bytes_up = 0
        self.bytes_down = 0
        self.subscribed = asyncio.Event()

    async def run(self) -> CadrDevice:
        """Take part until the collector acknowledged this device's release (or, with
        ``dropout``, until this device crashed).

        Returns:
            The device's machine (its ledger, release and counters).
        """
        machine = self.machine
        run, device = machine.run, machine.device
        loop = asyncio.get_running_loop()
        gate = self.connect_gate or contextlib.nullcontext()
        async with contextlib.AsyncExitStack() as stack:
            async with gate:
                conn = await stack.enter_async_context(self.transport.connect(f"{run}-{device}"))
                await conn.subscribe(  # exact topics: cheaper than in/+ on amqtt (DESIGN.md)
                    topics.inbox(run, device, topics.COLLECTOR_ID),
                    topics.inbox(run, device, RELAY_ID),
                    *(topics.ctl(run, k) for k in BROADCASTS),
                )
            ready = ready_announcement(run, device)
            await conn.publish(ready.topic, codec.encode(ready.message))
            self.messages_up += 1
            self.subscribed.set()

            async def flush() -> None:
                if self.dropout is None:
                    self.messages_up += await publish_outbound(conn, machine)
                else:
                    await self._publish_until_dropped(conn)

            timers_running = False
            deliveries = await stack.enter_async_context(contextlib.aclosing(conn.messages()))
            async for delivery in deliveries:
                self.messages_down += 1
                self.bytes_down += len(delivery.payload)
                try:
                    topic = topics.parse(delivery.topic)
                    machine.receive(topic, codec.decode(delivery.payload), loop.time())
                except RemoteProtocolError as error:
                    self.refused += 1
                    log.debug("%s refused %s: %s", device, delivery.topic[:200], error)
                await flush()
                if machine.finished or self.dropped is not None:
                    break
                if not timers_running and machine.next_timer() is not None:
                    # only the release has a deadline: thousands of idle timer loops would
                    # cost more than they do (one wake-up per device per second)
                    await stack.enter_async_context(background(drive_timers(machine, flush)))
                    timers_running = True
        return machine

    async def _publish_until_dropped(self, conn: Connection) -> None:
        """Publish the machine's outbox until the simulated crash (module docstring): the
        withheld message is not sent, the last will is, and nothing after it."""
        withheld = WITHHELD_AT.get(self.dropout or "")
        for item in self.machine.pop_outbound():
            if self.dropped is not None:
                return  # crashed: the rest of the outbox is lost with the device
            if withheld is not None and isinstance(item.message, withheld):
                await self._last_will(conn, item.message)
                return
            retain = {"retain": True} if item.retain else {}  # as publish_outbound
            await conn.publish(item.topic, codec.encode(item.message), **retain)
            self.messages_up += 1
            if self.dropout == "after_masked" and isinstance(item.message, SaMasked):
                await self._last_will(conn, item.message)

    async def _last_will(self, conn: Connection, message) -> None:
        """The crashed device's ``SaAbort`` for the session of ``message`` (what a broker
        publishes for a client that went away)."""
        machine = self.machine
        self.dropped = self.dropout
        will = SaAbort(
            run=machine.run,
            sender=machine.device,
            session=message.session,
            round=message.round,
            stage=self.dropout or "",
            reason="connection lost (last will)",
        )
        await conn.publish(topics.up(machine.run, machine.device, "sa_abort"), codec.encode(will))
        self.messages_up += 1
