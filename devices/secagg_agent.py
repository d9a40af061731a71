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
waited after 5 s, and forever.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable

from ldpfleet.broker.transport import Connection, Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.readiness import ready_announcement
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.messages import SaAbort, SaAdvertise, SaMasked, SaShares, SaUnmask
from ldpfleet.protocol.secagg.server import DEFAULT_PATIENCE

log = logging.getLogger(__name__)

DROPOUT_STAGES = ("before_keys", "after_keys", "after_shares", "after_masked", "during_unmask")
# the message a device that drops at the stage never sends
_WITHHELD = {
    "before_keys": SaAdvertise,
    "after_keys": SaShares,
    "after_shares": SaMasked,
    "during_unmask": SaUnmask,
}
SILENCE_FLOOR = 60.0  # seconds: a device never gives up on its collector sooner


def collector_silence_limit(stage_timeout: float) -> float:
    """How long a device waits for its collector's next message once the session started:
    a stage lasts at most ``DEFAULT_PATIENCE`` x ``stage_timeout`` after it opened (the
    server's cap), one more ``stage_timeout`` covers the server's own work between stages,
    and never less than ``SILENCE_FLOOR`` (a loaded machine, a large fleet)."""
    return max(SILENCE_FLOOR, (DEFAULT_PATIENCE + 1) * stage_timeout)


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
            raise ValueError(f"dropout: {dropout!r} is not one of {', '.join(DROPOUT_STAGES)}")
        if give_up_after is not None and (
            isinstance(give_up_after, bool)
            or not isinstance(give_up_after, int | float)
            or not give_up_after > 0  # NaN fails too; math.inf: never give up
        ):
            raise ParameterError(
                f"must be None (the session's own limit) or > 0 seconds, got {give_up_after!r}",
                field="give_up_after",
                limit="None or > 0 seconds",
                value=give_up_after,
            )
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
            withheld = _WITHHELD.get(self.dropout or "")
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

    def _silence_limit(self) -> float | None:
        """Seconds of the collector's silence this agent accepts now (None: no limit
        before the session's setup arrived)."""
        setup = self.client.setup
        if setup is None:
            return None
        if self.give_up_after is not None:
            return None if math.isinf(self.give_up_after) else float(self.give_up_after)
        return collector_silence_limit(setup.stage_timeout)

    async def _next(self, deliveries):
        """The next delivery, or None when the connection ended or the collector has been
        silent past ``_silence_limit`` (then ``gave_up`` says so)."""
        limit = self._silence_limit()
        try:
            if limit is None:
                return await anext(deliveries)
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
            # that lands as a delivery arrives (CPython gh-86296)
            async with asyncio.timeout(limit):
                return await anext(deliveries)
        except StopAsyncIteration:
            return None
        except TimeoutError:
            self.gave_up = (
                f"the collector was silent for {limit:g} s in the session's {self.client.state} "
                "state: this device stopped waiting (give_up_after)"
            )
            log.warning("%s: %s", self.client.device, self.gave_up)
            return None

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
            while True:
                delivery = await self._next(deliveries)
                if delivery is None:
                    break
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
