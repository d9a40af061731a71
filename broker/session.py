"""``Session``: one pump's logical connection to the broker, across connection losses.

A broker restart or a network failure breaks a connection. A pump (device agent,
collector, trace recorder) should not care: its ``Session`` reconnects with exponential
backoff and jitter, subscribes again to the same filters, and keeps going. What the pump
publishes goes through an ordered outbox: a message is removed only once the broker
acknowledged it (QoS 1), so messages published while the connection is down, or whose
acknowledgement was lost with the connection, are published again after the reconnect —
at least once. Protocols deduplicate (the collector by (device, seq); devices ignore stale
acks), so at-least-once gives an exactly-once effect. Identical queued messages (a batch
retransmitted by its timer while the broker is down) are queued once. A retained publish
keeps its flag in the outbox, so it is republished retained after a reconnect (in order
with the rest).

The session gives up (``ConnectionLost``) only after ``give_up_after`` seconds without a
connection; a refused login (``ConnectionRefused``) is never retried. ``reconnects`` and
``republished`` count what happened, for results.json (docs/reliability.md, "Delivery").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator

from ldpfleet.broker.transport import (
    Connection,
    ConnectionLost,
    ConnectionRefused,
    Delivery,
    Transport,
    TransportError,
    open_subscribed,
)

log = logging.getLogger(__name__)

FIRST_BACKOFF = 0.05  # seconds before the first reconnection attempt (then doubled)
MAX_BACKOFF = 2.0


class Session:
    """A connection that comes back (it is itself a ``Connection``: publish, subscribe,
    ``messages()``, ``pending()``). Use as ``async with Session(...) as session``."""

    def __init__(
        self,
        transport: Transport,
        client_id: str,
        filters: tuple[str, ...] = (),
        *,
        clean_session: bool = True,
        give_up_after: float | None = 60.0,
    ) -> None:
        self.transport = transport
        self.client_id = client_id
        self.filters = filters
        self.clean_session = clean_session
        self.give_up_after = give_up_after
        self.reconnects = 0  # connections re-established after a loss
        self.republished = 0  # messages published again after a loss
        self._context: contextlib.AbstractAsyncContextManager[Connection] | None = None
        self._conn: Connection | None = None
        # ordered, de-duplicated outbox: (topic, payload, retain) -> None
        self._unsent: dict[tuple[str, bytes, bool], None] = {}
        self._lock = asyncio.Lock()  # one flush at a time keeps the publish order
        self._reconnecting: asyncio.Task | None = None
        self._inflight: asyncio.Future | None = None  # the publish in progress
        self._watcher: asyncio.Task | None = None  # notices a dead connection (wait_lost)
        self._closed = False

    async def __aenter__(self) -> Session:
        await self._open()
        return self

    async def __aexit__(self, *exc_info) -> None:
        self._closed = True
        if self._reconnecting is not None:
            self._reconnecting.cancel()
            with contextlib.suppress(BaseException):
                await self._reconnecting
        await self._close_connection()

    @property
    def connected(self) -> bool:
        """A connection is open (as far as we know)."""
        return self._conn is not None

    async def _open(self) -> None:
        context, conn = await open_subscribed(
            self.transport, self.client_id, self.filters, clean_session=self.clean_session
        )
        self._context, self._conn = context, conn
        wait_lost = getattr(conn, "wait_lost", None)  # transports whose publish can hang
        if wait_lost is not None:
            self._watcher = asyncio.ensure_future(self._watch(conn, wait_lost))

    async def _watch(self, conn: Connection, wait_lost) -> None:
        await wait_lost()
        if not self._closed:
            log.warning("%s: connection lost; reconnecting", self.client_id)
            self._lost(conn)

    async def _close_connection(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None
        context, self._context, self._conn = self._context, None, None
        if context is not None:
            with contextlib.suppress(Exception):
                await context.__aexit__(None, None, None)

    async def _reconnect(self) -> None:
        """Reconnect with exponential backoff and jitter until ``give_up_after``."""
        await self._close_connection()
        loop = asyncio.get_running_loop()
        started = loop.time()
        delay = FIRST_BACKOFF
        while not self._closed:
            await asyncio.sleep(delay * (1 + random.random()))
            try:
                await self._open()
            except ConnectionRefused:
                raise
            except TransportError as error:
                waited = loop.time() - started
                if self.give_up_after is not None and waited >= self.give_up_after:
                    raise ConnectionLost(
                        f"{self.client_id}: no connection for {waited:.1f} s "
                        f"(give_up_after {self.give_up_after:g} s): {error}"
                    ) from error
                delay = min(delay * 2, MAX_BACKOFF)
                continue
            self.reconnects += 1
            log.info("%s: reconnected (%d)", self.client_id, self.reconnects)
            return

    async def _ensure_connected(self) -> Connection:
        """The open connection, reconnecting first if it was lost (one reconnection at a
        time, shared by every task of the pump)."""
        while self._conn is None:
            if self._closed:
                raise ConnectionLost(f"{self.client_id}: session closed")
            if self._reconnecting is None or self._reconnecting.done():
                self._reconnecting = asyncio.ensure_future(self._reconnect())
            await asyncio.shield(self._reconnecting)
        return self._conn

    def _lost(self, conn: Connection) -> None:
        """``conn`` broke: start reconnecting now (closing it ends its iteration, too)."""
        if self._conn is conn:
            self._conn = None
            if self._inflight is not None:
                self._inflight.cancel()
            if not self._closed and (self._reconnecting is None or self._reconnecting.done()):
                self._reconnecting = asyncio.ensure_future(self._reconnect())

    async def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False) -> None:
        """Queue one message (retained if ``retain``) and publish the queue (see
        ``flush``). A machine's outbox goes through
        ``broker.pump.publish_outbound(session, machine)`` like any connection's."""
        self._unsent.setdefault((topic, payload, retain), None)
        await self.flush()

    async def publish_many(self, items, qos: int = 1) -> None:
        """Queue several messages and publish the queue."""
        for topic, payload in items:
            self._unsent.setdefault((topic, bytes(payload), False), None)
        await self.flush()

    async def subscribe(self, *filters: str, qos: int = 1) -> None:
        """Subscribe now, and again after every reconnect."""
        self.filters = (*self.filters, *filters)
        conn = await self._ensure_connected()
        await conn.subscribe(*filters, qos=qos)

    async def flush(self) -> None:
        """Publish queued messages in order; each leaves the queue once acknowledged. While
        the connection is down this returns at once (the messages wait for the reconnect,
        which the consuming loop drives)."""
        async with self._lock:
            while self._unsent and self._conn is not None:
                conn = self._conn
                batch = _next_batch(self._unsent)
                # a task of its own, so that a loss noticed elsewhere (``_lost``) can stop
                # it: aiomqtt leaves a QoS 1 publish waiting for its PUBACK on a dead
                # connection until its 30 s timeout (measured: a 30 s stall per restart)
                self._inflight = asyncio.ensure_future(_publish_batch(conn, batch))
                try:
                    await self._inflight
                except TransportError as error:
                    log.info("%s: publish failed, kept: %s", self.client_id, error)
                    self._lost(conn)
                    return
                except asyncio.CancelledError:
                    current = asyncio.current_task()
                    if current is not None and current.cancelling():
                        raise  # we are being cancelled, not just the publish
                    return  # the connection was lost: the batch waits for the reconnect
                finally:
                    self._inflight = None
                for key in batch:
                    self._unsent.pop(key, None)

    async def messages(self) -> AsyncIterator[Delivery]:
        """Every delivery, across reconnections (raises ``ConnectionLost`` once the session
        gives up). After each reconnect the queued messages are published first."""
        while True:
            conn = await self._ensure_connected()
            if self._unsent:
                self.republished += len(self._unsent)
                await self.flush()
            try:
                async for delivery in conn.messages():
                    yield delivery
            except ConnectionLost as error:
                said = str(error)  # the transports' own sentence may name the client already
                if not said.startswith(f"{self.client_id}:"):
                    said = f"{self.client_id}: {said}"
                log.warning("%s; reconnecting", said)
                self._lost(conn)
                continue
            if self._conn is conn or self._closed:
                return  # closed without an error: a session takeover, or we are done
            # else a reconnect replaced the connection (a publish had failed): go on

    def pending(self) -> int:
        """Deliveries buffered and not yet consumed (0 while disconnected)."""
        return self._conn.pending() if self._conn is not None else 0

    def unsent(self) -> int:
        """Messages waiting for the broker's acknowledgement."""
        return len(self._unsent)


def _next_batch(unsent: dict[tuple[str, bytes, bool], None]) -> list[tuple[str, bytes, bool]]:
    """The oldest queued messages to publish together: everything up to the first retained
    one, or that retained one alone (``publish_many`` has no retain flag)."""
    batch = []
    for key in unsent:
        if key[2]:
            return batch or [key]
        batch.append(key)
    return batch


def _publish_batch(conn: Connection, batch: list[tuple[str, bytes, bool]]):
    """Publish a batch of ``_next_batch``."""
    if len(batch) > 1:
        return conn.publish_many([(topic, payload) for topic, payload, _ in batch])
    topic, payload, retain = batch[0]
    if retain:
        return conn.publish(topic, payload, retain=True)
    return conn.publish(topic, payload)


async def end_persistent_session(transport: Transport, client_id: str) -> None:
    """Discard ``client_id``'s persistent session at the broker once its work is done.

    A broker keeps a ``clean_session=False`` session, its subscriptions and the messages
    queued for them, until the same client id connects with clean session = 1 (MQTT
    3.1.1 section 3.1.2.4): without this, every finished run would leave its collector's
    and recorder's sessions behind (on RabbitMQ, a durable queue each). Best effort: a
    broker that cannot be reached now is logged, not raised."""
    try:
        async with transport.connect(client_id, clean_session=True):
            pass
    except TransportError as error:
        log.warning("%s: could not end the persistent session: %s", client_id, error)
