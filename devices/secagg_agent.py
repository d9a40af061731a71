"""The device-side pump of secure aggregation: one ``SecAggClient`` over a connection.

It subscribes to the device's inbox from the collector, feeds the client, publishes what
it answers, and stops when the client is finished. Byte counters (``bytes_up``,
``bytes_down``) feed the benchmark. ``dropout`` simulates a device that disappears at a
stage (the pump returns without sending that stage's message):

- ``before_keys``: never advertises its keys;
- ``after_keys``: advertised, never sends its shares;
- ``after_shares``: sent its shares, never sends its masked input;
- ``after_masked``: sent its masked input and leaves at once;
- ``during_unmask``: receives the unmask request and leaves without answering.

With ``announce_dropout`` the departing device publishes an ``SaAbort`` on its way out —
what an MQTT broker does with a crashed client's *last will* — so the collector counts it
as dropped at once instead of waiting for the stage deadline. Without it the collector
learns of the dropout only when the deadline passes (both paths are tested).

Across processes (``ldpfleet fleet`` beside ``ldpfleet collector``) the collector cannot
see when an agent listens: with ``ready`` the agent publishes one ``DeviceReady``
(``protocol.readiness``) on its own ``up/ready`` topic once subscribed, which the
collector's barrier counts before it starts the session. ``heard`` is called on every
delivery (a fleet shard's silence deadline, ``protocol.liveness``).

A collector that dies mid-session must not hold its devices forever: once the session's
``SaSetup`` arrived, an agent that hears nothing from the collector for ``give_up_after``
seconds (default ``collector_silence_limit``: the longest the server can hold a stage,
``DEFAULT_PATIENCE`` x ``stage_timeout``, plus one ``stage_timeout``, and at least a
minute) stops and returns, with ``gave_up`` saying why (it publishes nothing: the
collector, if alive, counts it out at its deadline). Before the setup it waits as long as
it is run: when the session starts is the caller's business. (Held-out QA, helper T: with
the collector task cancelled after 5 ms, every agent of the docs/secagg.md example still
waited after 5 s, and forever.) Those rules are the machine
``protocol.secagg.silence.SessionSilence``'s (``silence``); this pump only tells it each
delivery and wakes it at its deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
from collections.abc import AsyncIterator, Callable

from ldpfleet.broker.transport import Connection, Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.readiness import ready_announcement
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.messages import SaAbort, SaAdvertise, SaMasked, SaShares, SaUnmask
from ldpfleet.protocol.secagg.silence import (
    SILENCE_FLOOR,
    CollectorSilent,
    SessionSilence,
    collector_silence_limit,
)

__all__ = [
    "DROPOUT_STAGES",
    "SILENCE_FLOOR",
    "WITHHELD_AT",
    "SecAggAgent",
    "collector_silence_limit",
]  # SILENCE_FLOOR, collector_silence_limit: protocol.secagg.silence's, re-exported

log = logging.getLogger(__name__)

DROPOUT_STAGES = ("before_keys", "after_keys", "after_shares", "after_masked", "during_unmask")
# the message a device that drops at the stage never sends (``after_masked``: none, it
# leaves once its masked input is out; devices.cadr_agent drops out the same way)
WITHHELD_AT = {
    "before_keys": SaAdvertise,
    "after_keys": SaShares,
    "after_shares": SaMasked,
    "during_unmask": SaUnmask,
}


class SecAggAgent:
    """One device's part in one secure-aggregation session."""

    def __init__(
        self,
        transport: Transport,
        client: SecAggClient,
        *,
        dropout: str | None = None,
        announce_dropout: bool = False,
        connect_gate: asyncio.Semaphore | None = None,
        ready: bool = False,
        heard: Callable[[], None] | None = None,
        give_up_after: float | None = None,
    ) -> None:
        if dropout is not None and dropout not in DROPOUT_STAGES:
            close = difflib.get_close_matches(str(dropout), DROPOUT_STAGES, n=1)
            raise ParameterError(  # a ValueError too, as it was
                f"{dropout!r} is not one of {', '.join(DROPOUT_STAGES)}"
                + (f" (did you mean {close[0]!r}?)" if close else ""),
                field="dropout",
                limit=f"None or one of {', '.join(DROPOUT_STAGES)}",
                value=dropout,
            )
        # the collector's silence this device accepts (refuses a bad give_up_after)
        self.silence = SessionSilence(client, give_up_after)
        self.give_up_after = give_up_after
        self.gave_up: str | None = None  # why the agent stopped waiting for its collector
        self.transport = transport
        self.client = client
        self.dropout = dropout
        self.announce_dropout = announce_dropout
        self.connect_gate = connect_gate
        self.ready = ready
        self.heard = heard
        self.bytes_up = 0
        self.bytes_down = 0
        self.messages_up = 0
        self.messages_down = 0
        self.refused = 0
        self.dropped = False
        self.subscribed = asyncio.Event()

    async def _publish(self, conn: Connection) -> bool:
        """Publish the client's outbox; False if the simulated dropout happens now."""
        for item in self.client.pop_outbound():
            withheld = WITHHELD_AT.get(self.dropout or "")
            if withheld is not None and isinstance(item.message, withheld):
                await self._leave(conn)
                return False
            payload = codec.encode(item.message)
            await conn.publish(item.topic, payload)
            self.bytes_up += len(payload)
            self.messages_up += 1
            if self.dropout == "after_masked" and isinstance(item.message, SaMasked):
                await self._leave(conn)
                return False
        return True

    async def _leave(self, conn: Connection) -> None:
        self.dropped = True
        if not self.announce_dropout:
            return
        client = self.client
        farewell = SaAbort(
            run=client.run,
            sender=client.device,
            session=client.session,
            round=client.setup.round if client.setup is not None else 0,
            stage=self.dropout or "",
            reason="connection lost (last will)",
        )
        await conn.publish(topics.up(client.run, client.device, "sa_abort"), codec.encode(farewell))

    async def _announce_ready(self, conn: Connection) -> None:
        """Publish this device's one ``DeviceReady`` (it listens to its inbox now)."""
        item = ready_announcement(self.client.run, self.client.device)
        await conn.publish(item.topic, codec.encode(item.message))

    async def _deliveries(self, deliveries: AsyncIterator) -> AsyncIterator:
        """The connection's deliveries, each one told to ``silence`` once the caller took
        it, until the connection ends or ``silence`` says the collector went quiet (then
        ``gave_up`` says so). The next delivery is awaited in a task of its own, never
        cancelled by a deadline: a wake-up a hair early (a loop's clock resolution) asks
        the machine, which waits on, and no delivery is lost to a cancellation (CPython
        gh-86296)."""
        loop = asyncio.get_running_loop()
        silence = self.silence
        silence.start(loop.time())
        pending: asyncio.Task | None = None
        try:
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(anext(deliveries))
                deadline = silence.next_timer()
                wait = None if deadline is None else max(0.0, deadline - loop.time())
                done, _ = await asyncio.wait((pending,), timeout=wait)
                if not done:
                    silence.handle_timer(loop.time())
                    if self._gave_up():
                        return
                    continue
                task, pending = pending, None
                try:
                    delivery = task.result()
                except StopAsyncIteration:
                    return
                yield delivery
                silence.heard(loop.time())
        finally:
            silence.stop()
            if pending is not None:
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await pending

    def _gave_up(self) -> bool:
        """Whether ``silence`` went silent (``gave_up`` then holds its sentence)."""
        for event in self.silence.pop_events():
            if isinstance(event, CollectorSilent):
                self.gave_up = event.sentence
                log.warning("%s: %s", self.client.device, self.gave_up)
        return self.gave_up is not None

    async def run(self) -> SecAggClient:
        """Take part until the session ends for this device (or it drops out)."""
        client = self.client
        gate = self.connect_gate or contextlib.nullcontext()
        loop = asyncio.get_running_loop()
        async with contextlib.AsyncExitStack() as stack:
            async with gate:
                conn = await stack.enter_async_context(
                    self.transport.connect(f"{client.run}-{client.device}-sa")
                )
                await conn.subscribe(topics.inbox(client.run, client.device, topics.COLLECTOR_ID))
            if self.ready:
                await self._announce_ready(conn)
            self.subscribed.set()
            deliveries = await stack.enter_async_context(contextlib.aclosing(conn.messages()))
            inbox = await stack.enter_async_context(
                contextlib.aclosing(self._deliveries(deliveries))
            )
            async for delivery in inbox:
                self.bytes_down += len(delivery.payload)
                self.messages_down += 1
                if self.heard is not None:
                    self.heard()
                try:
                    topic = topics.parse(delivery.topic)
                    client.receive(topic, codec.decode(delivery.payload), loop.time())
                except RemoteProtocolError as error:
                    self.refused += 1
                    log.debug("%s refused %s: %s", client.device, delivery.topic, error)
                if not await self._publish(conn) or client.finished:
                    break
        return client
