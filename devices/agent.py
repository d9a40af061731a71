"""``DeviceAgent``: the thin asyncio pump of one simulated device.

It connects with its own client id, subscribes to its inbox and to ``ctl/``, starts its
``StreamReporter``, feeds it the sensor readings (all at once, or one per
``step_seconds`` when paced like a real sensor), and moves messages between the
connection and the machine until the machine is finished. Deliveries that fail to decode,
or that the machine refuses, are counted; a protocol violation by the collector ends the
agent with ``state == "error"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import numpy as np

from broker.pump import background, drive_timers, publish_outbound
from broker.transport import Connection, Transport
from protocol import codec, topics
from protocol.errors import RemoteProtocolError
from protocol.stream import StreamReporter

log = logging.getLogger(__name__)


class DeviceAgent:
    """One device: a connection, a ``StreamReporter`` and its readings."""

    def __init__(
        self,
        transport: Transport,
        reporter: StreamReporter,
        readings: np.ndarray,
        *,
        step_seconds: float = 0.0,
        connect_gate: asyncio.Semaphore | None = None,
        silence_timeout: float | None = None,
    ) -> None:
        self.transport = transport
        self.reporter = reporter
        self.readings = np.asarray(readings, dtype=float)
        self.step_seconds = step_seconds
        self.connect_gate = connect_gate
        self.refused_messages = 0
        self.error: str | None = None
        self.connected_at: float | None = None
        # give up after this many seconds without a message from the collector (None:
        # never): a collector that is gone must not keep a device retransmitting forever
        self.silence_timeout = silence_timeout
        self.gave_up: str | None = None  # why the agent stopped before its stream finished

    @property
    def device(self) -> str:
        """The device id."""
        return self.reporter.device

    async def _feed_paced(self, conn: Connection) -> None:
        loop = asyncio.get_running_loop()
        for value in self.readings:
            if self.reporter.finished:
                return
            self.reporter.add_readings([value], loop.time())
            await publish_outbound(conn, self.reporter)
            await asyncio.sleep(self.step_seconds)

    async def _connect(self):
        run = self.reporter.config.run
        client_id = f"{run}-{self.device}"
        if self.connect_gate is None:
            return await self._enter(client_id)
        async with self.connect_gate:
            return await self._enter(client_id)

    async def _enter(self, client_id: str):
        context = self.transport.connect(client_id)
        conn = await context.__aenter__()
        try:
            run, device = self.reporter.config.run, self.device
            # Exact inbox topics, not ``in/+``: brokers such as amqtt match wildcard filters
            # one by one, while exact filters cost a string comparison (DESIGN.md, facts).
            await conn.subscribe(
                topics.inbox(run, device, topics.COLLECTOR_ID), topics.ctl_filter(run)
            )
        except BaseException:
            await context.__aexit__(None, None, None)
            raise
        return context, conn

    async def run(self) -> None:
        """Report the whole stream; returns when the machine is finished."""
        loop = asyncio.get_running_loop()
        context, conn = await self._connect()
        try:
            self.connected_at = loop.time()
            self.reporter.start(loop.time())
            if self.step_seconds <= 0:
                self.reporter.add_readings(self.readings, loop.time())
            await publish_outbound(conn, self.reporter)

            async def after_timer() -> None:
                await publish_outbound(conn, self.reporter)

            feeder = self._feed_paced(conn) if self.step_seconds > 0 else asyncio.sleep(0)
            async with (
                background(drive_timers(self.reporter, after_timer)),
                background(feeder),
                contextlib.aclosing(conn.messages()) as deliveries,
            ):
                silence = self.silence_timeout
                try:
                    async with asyncio.timeout_at(
                        None if silence is None else loop.time() + silence
                    ) as quiet:
                        async for delivery in deliveries:
                            self._handle(delivery.topic, delivery.payload, loop.time())
                            await publish_outbound(conn, self.reporter)
                            if self.reporter.finished:
                                break
                            if silence is not None:
                                quiet.reschedule(loop.time() + silence)
                except TimeoutError:
                    self.gave_up = (
                        f"no message from the collector for {silence:g} s "
                        f"(state {self.reporter.state}, {self.reporter.retransmissions} "
                        "retransmissions)"
                    )
                    log.warning("%s: gave up: %s", self.device, self.gave_up)
        finally:
            await context.__aexit__(None, None, None)

    def _handle(self, topic_text: str, payload: bytes, now: float) -> None:
        try:
            topic = topics.parse(topic_text)
            message = codec.decode(payload)
            self.reporter.receive(topic, message, now)
        except RemoteProtocolError as error:
            self.refused_messages += 1
            if self.reporter.state == "error":
                self.error = str(error)
                log.warning("%s: collector violated the protocol: %s", self.device, error)
            else:
                log.debug("%s: refused %s: %s", self.device, topic_text, error)
