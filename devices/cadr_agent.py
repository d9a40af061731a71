"""The device-side pump of CADR-LDP: one ``protocol.cadr_device.CadrDevice`` over one
connection.

It subscribes to the device's inbox (secure-aggregation setup and acks from the
collector, peer deliveries from the relay) and to the four broadcasts it takes part in
(``cadr_plan``, ``cadr_query``, ``cadr_theta``, ``peer_step``), feeds the machine, publishes
its outbox, fires its retransmission timer, and leaves once its release is acknowledged.
Once subscribed it publishes its one ``DeviceReady`` (``protocol.readiness``) on its own
``up/ready``: the collector starts the run when every device has.
Refused input is counted (``refused``) and logged; the pump carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from ldpfleet.broker.pump import background, drive_timers, publish_outbound
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.peer_relay import RELAY_ID
from ldpfleet.protocol.readiness import ready_announcement

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
    ) -> None:
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
        """Take part until the collector acknowledged this device's release."""
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
                self.messages_up += await publish_outbound(conn, machine)

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
                if machine.finished:
                    break
                if not timers_running and machine.next_timer() is not None:
                    # only the release has a deadline: thousands of idle timer loops would
                    # cost more than they do (one wake-up per device per second)
                    await stack.enter_async_context(background(drive_timers(machine, flush)))
                    timers_running = True
        return machine
