"""``Gateway``: one MQTT connection carrying many devices, like a real IoT gateway.

``[fleet] connection = "gateway"`` groups the devices, ``gateway_devices`` per gateway; each
gateway is a ``Transport`` for its devices. A device "connects" to its gateway exactly as it
would to a broker (same client id, same credentials) and gets a ``GatewayChannel``, a
``Connection`` whose publishes and subscriptions travel over the gateway's one broker
connection (client id ``{run}-gateway-{k}``, the ``gateway`` role). Topics are unchanged,
so the collector cannot tell the difference and results are identical.

ACL per device identity at the gateway: the broker trusts the gateway for all its devices,
so the gateway applies each device's own rules, with the same policy the brokers use
(``broker.auth.AccessPolicy``): it authenticates the device's login, refuses a
subscription the device may not make, drops (and records in ``denied``) a publish the
device may not make, and delivers a message to a device only if the device may receive it.

Deliveries are demultiplexed by a topic trie (one lookup per message, whatever the number
of devices). When the broker connection breaks, every channel breaks with it
(``ConnectionLost``); the devices' sessions reconnect, and the first one re-opens the
gateway's connection and re-subscribes every filter still in use.

Retained messages: a device's ``retain`` goes to the broker as is. The broker hands the
retained messages a filter matches to the gateway when the gateway subscribes it upstream,
i.e. for the first device that subscribes that filter; a later device subscribing the same
filter does not get them again (known limit: the rendezvous on ``ctl/run``,
``devices/rendezvous.py``, waits on a connection of its own, not through a gateway).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable

from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.transport import (
    LOST,
    AccessGuard,
    Connection,
    ConnectionLost,
    Delivery,
    TopicTrie,
    Transport,
    TransportError,
    open_subscribed,
    queued_deliveries,
)

log = logging.getLogger(__name__)


class Gateway:
    """A transport for many devices over one broker connection."""

    def __init__(
        self,
        transport: Transport,
        client_id: str,
        *,
        credentials: Credentials | None = None,
    ) -> None:
        self.transport = transport
        self.client_id = client_id
        self.name = f"gateway {client_id} over {transport.name}"
        self.credentials = credentials
        self._guard = AccessGuard(credentials, client_id)
        self.denied = self._guard.denied  # (device client id, action, topic)
        self.reconnects = 0
        self._trie = TopicTrie()
        self._filters: dict[str, int] = {}  # filter -> channels using it
        self._channels: dict[str, GatewayChannel] = {}
        self._context: contextlib.AbstractAsyncContextManager[Connection] | None = None
        self._conn: Connection | None = None
        self._pump: asyncio.Task | None = None
        self._lock = asyncio.Lock()
        self._opened = 0

    # the broker connection ------------------------------------------------------------

    async def _upstream(self) -> Connection:
        """The gateway's broker connection, opened (again) if needed."""
        if self._conn is not None:
            return self._conn
        async with self._lock:
            if self._conn is None:
                context, conn = await open_subscribed(self.transport, self.client_id, self._filters)
                self._context, self._conn = context, conn
                self._pump = asyncio.ensure_future(self._demultiplex(conn))
                self._opened += 1
                self.reconnects = self._opened - 1
        return self._conn

    async def _demultiplex(self, conn: Connection) -> None:
        """Hand each delivery to the channels whose subscriptions match it."""
        try:
            async for delivery in conn.messages():
                for client_id in self._trie.match(delivery.topic):
                    channel = self._channels.get(client_id)
                    if channel is not None and self._may(channel, "receive", delivery.topic):
                        channel._queue.put_nowait(delivery)
        except TransportError as error:
            log.warning("%s: %s", self.client_id, error)
        finally:
            await self._broken(conn)

    async def _broken(self, conn: Connection) -> None:
        if self._conn is not conn:
            return
        context, self._conn, self._context = self._context, None, None
        for channel in list(self._channels.values()):
            channel._queue.put_nowait(LOST)
        self._channels.clear()
        self._trie = TopicTrie()
        self._filters.clear()
        if context is not None:
            with contextlib.suppress(Exception):
                await context.__aexit__(None, None, None)

    async def close(self) -> None:
        """Close the broker connection (the fleet does at the end)."""
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(BaseException):
                await self._pump
        conn = self._conn
        if conn is not None:
            await self._broken(conn)

    # the devices' side -----------------------------------------------------------------

    def _may(self, channel: GatewayChannel, action: str, topic: str) -> bool:
        return self._guard.allows(channel.username, channel.client_id, action, topic)

    @contextlib.asynccontextmanager
    async def connect(
        self,
        client_id: str,
        *,
        clean_session: bool = True,
        username: str | None = None,
        password: str | None = None,
    ) -> AsyncIterator[GatewayChannel]:
        """A device's connection through this gateway (clean sessions only)."""
        user = self._guard.login(client_id, username, password)
        upstream = await self._upstream()
        old = self._channels.get(client_id)
        if old is not None:  # a second connection with the same id takes over, as MQTT
            old._queue.put_nowait(None)
            self._drop(old)
        channel = GatewayChannel(self, client_id, user, upstream)
        self._channels[client_id] = channel
        try:
            yield channel
        finally:
            if self._channels.get(client_id) is channel:
                self._drop(channel)

    def _drop(self, channel: GatewayChannel) -> None:
        self._channels.pop(channel.client_id, None)
        self._trie.remove_client(channel.client_id)
        for pattern in channel._filters:
            self._filters[pattern] = self._filters.get(pattern, 1) - 1
            if self._filters[pattern] <= 0:
                self._filters.pop(pattern, None)  # the broker subscription stays (harmless)

    async def _subscribe(self, channel: GatewayChannel, filters: tuple[str, ...]) -> None:
        refused = [p for p in filters if not self._may(channel, "subscribe", p)]
        if refused:
            raise TransportError(f"{channel.client_id}: the gateway refused subscription {refused}")
        new = [p for p in filters if p not in self._filters]
        for pattern in filters:
            self._trie.add(pattern, channel.client_id)
            self._filters[pattern] = self._filters.get(pattern, 0) + 1
            channel._filters.append(pattern)
        if new:
            await channel._upstream.subscribe(*new)


class GatewayChannel:
    """One device's ``Connection`` through a ``Gateway``."""

    def __init__(
        self, gateway: Gateway, client_id: str, username: str | None, upstream: Connection
    ) -> None:
        self._gateway = gateway
        self.client_id = client_id
        self.username = username
        self._upstream = upstream
        self._queue: asyncio.Queue = asyncio.Queue()
        self._filters: list[str] = []

    def _check(self) -> None:
        if self._gateway._channels.get(self.client_id) is not self:
            raise ConnectionLost(f"{self.client_id}: the gateway connection is gone")

    async def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False) -> None:
        """Publish as this device (dropped and recorded if its ACL forbids the topic);
        ``retain`` is passed to the broker."""
        self._check()
        if self._gateway._may(self, "publish", topic):
            await self._upstream.publish(topic, payload, qos, retain)

    async def publish_many(self, items: Iterable[tuple[str, bytes]], qos: int = 1) -> None:
        """Publish several messages as this device."""
        self._check()
        allowed = [(t, p) for t, p in items if self._gateway._may(self, "publish", t)]
        if allowed:
            await self._upstream.publish_many(allowed, qos)

    async def subscribe(self, *filters: str, qos: int = 1) -> None:
        """Subscribe this device (``TransportError`` if its ACL refuses a filter)."""
        self._check()
        await self._gateway._subscribe(self, filters)

    async def messages(self) -> AsyncIterator[Delivery]:
        """This device's deliveries until its channel or the gateway connection closes."""
        async for delivery in queued_deliveries(
            self._queue, self.client_id, "the gateway's broker connection broke"
        ):
            yield delivery

    def pending(self) -> int:
        """Deliveries buffered for this device."""
        return self._queue.qsize()
