"""The ``Transport`` interface every pump talks through, and its in-memory implementation.

A transport hands out connections (``async with transport.connect(client_id) as conn``);
a connection publishes, subscribes, and yields deliveries from one async iterator
(``conn.messages()``), the aiomqtt shape. Two implementations share this interface:

- ``MemoryTransport`` (here): an in-process broker with MQTT wildcard semantics (a topic
  trie, so matching costs O(levels), not O(subscriptions)), retained messages, and
  injectable drop / delay rules for fault experiments; fast Monte-Carlo runs use it.
- ``MqttTransport`` (``broker.mqtt``): aiomqtt against any MQTT 3.1.1 broker.

Results for a given seed are identical on both: no protocol decision depends on timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ldpfleet.protocol import topics

if TYPE_CHECKING:
    from ldpfleet.broker.auth import Credentials

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One received message."""

    topic: str
    payload: bytes


class TransportError(ConnectionError):
    """The transport could not connect, publish or subscribe (says which and why)."""


class ConnectionRefused(TransportError):
    """The broker refused the login (bad credentials, not authorised): retrying won't help."""


class ConnectionLost(TransportError):
    """An open connection broke (the broker went away, the network failed)."""


class Connection(Protocol):
    """One client's session with a broker."""

    client_id: str

    async def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False) -> None:
        """Publish one message (for QoS 1, returns once the broker acknowledged it). With
        ``retain`` the broker also keeps it as the topic's retained message, handed to
        every later subscription that matches the topic (an empty payload deletes it)."""

    async def publish_many(self, items: Iterable[tuple[str, bytes]], qos: int = 1) -> None:
        """Publish several messages concurrently and wait for all acknowledgements."""

    async def subscribe(self, *filters: str, qos: int = 1) -> None:
        """Subscribe to topic filters (MQTT wildcards); the broker then delivers the
        retained messages the filters match (again on every subscribe)."""

    def messages(self) -> AsyncIterator[Delivery]:
        """The one way to consume: every delivery, in arrival order."""

    def pending(self) -> int:
        """How many received deliveries are buffered and not yet consumed."""


class Transport(Protocol):
    """Something that can open connections: a broker URL or the in-memory broker."""

    name: str

    def connect(
        self,
        client_id: str,
        *,
        clean_session: bool = True,
        username: str | None = None,
        password: str | None = None,
    ) -> contextlib.AbstractAsyncContextManager[Connection]:
        """Open a connection; closed when the context exits."""


class AsUser:
    """A transport whose connections all log in as one identity (e.g. a run's ``admin``
    for an attack experiment that models what gets past the broker's ACL)."""

    def __init__(self, transport: Transport, username: str, password: str) -> None:
        self.transport = transport
        self.name = transport.name
        self.username = username
        self._password = password

    def connect(
        self,
        client_id: str,
        *,
        clean_session: bool = True,
        username: str | None = None,
        password: str | None = None,
    ) -> contextlib.AbstractAsyncContextManager[Connection]:
        """Connect as ``client_id`` with this identity (unless told another)."""
        if username is None:
            username, password = self.username, self._password
        return self.transport.connect(
            client_id, clean_session=clean_session, username=username, password=password
        )


class AccessGuard:
    """The run's ACL applied by an in-process broker (``MemoryTransport``) or a gateway
    (``devices.gateway``): logins checked against the run's credentials, actions against
    its policy, refused actions recorded in ``denied``. Without credentials everything
    is allowed."""

    def __init__(self, credentials: Credentials | None, name: str) -> None:
        self.credentials = credentials
        self.name = name  # who refuses, for the error message
        self.denied: list[tuple[str, str, str]] = []  # (client id, action, topic)

    def login(self, client_id: str, username: str | None, password: str | None) -> str | None:
        """The username a connection as ``client_id`` logs in with (explicit, or the
        identity its client id belongs to); ``ConnectionRefused`` if refused."""
        if self.credentials is None:
            return username
        if username is None:
            found = self.credentials.for_client(client_id)
            username, password = found if found is not None else (None, None)
        if not self.credentials.authenticate(username, password, client_id):
            raise ConnectionRefused(
                f"{client_id}: {self.name} refused the connection (user {username!r}): "
                "not authorised"
            )
        return username

    def allows(self, username: str | None, client_id: str, action: str, topic: str) -> bool:
        """May this identity do ``action`` on ``topic``? A refusal is recorded (each
        time)."""
        if self.credentials is None:
            return True
        # the policy remembers its decisions, as many as the run needs (auth.DECISIONS_*)
        decision = self.credentials.allowed(username, client_id, action, topic)
        if decision:
            return True
        self.denied.append((client_id, action, topic))
        return False


LOST = object()  # queued for an in-process connection whose link broke


async def queued_deliveries(
    queue: asyncio.Queue, client_id: str, lost: str
) -> AsyncIterator[Delivery]:
    """The deliveries an in-process broker queued for one connection: ``None`` ends them
    (taken over or closed), ``LOST`` raises ``ConnectionLost`` (``lost`` says why)."""
    while True:
        delivery = await queue.get()
        if delivery is None:
            return
        if delivery is LOST:
            raise ConnectionLost(f"{client_id}: {lost}")
        yield delivery


async def open_subscribed(
    transport: Transport, client_id: str, filters: Iterable[str], *, clean_session: bool = True
) -> tuple[contextlib.AbstractAsyncContextManager[Connection], Connection]:
    """Enter ``transport.connect(client_id)`` and subscribe to ``filters``; the caller
    exits the returned context when done (it is exited here if subscribing fails)."""
    context = transport.connect(client_id, clean_session=clean_session)
    conn = await context.__aenter__()
    try:
        filters = tuple(filters)
        if filters:
            await conn.subscribe(*filters)
    except BaseException:
        with contextlib.suppress(Exception):
            await context.__aexit__(None, None, None)
        raise
    return context, conn


# In-memory transport -------------------------------------------------------------------

DropRule = Callable[[str, bytes, str], bool]  # (topic, payload, recipient) -> drop?
DelayRule = Callable[[str, bytes, str], float]  # (topic, payload, recipient) -> seconds


@dataclass
class _TrieNode:
    children: dict[str, _TrieNode] = field(default_factory=dict)
    subscribers: set[str] = field(default_factory=set)


class TopicTrie:
    """Subscription index with MQTT semantics (``+`` one level, ``#`` this level and below).

    Besides the trie it keeps, per client, the filters it subscribed to, so that
    ``remove_client`` costs O(own subscriptions x levels) instead of a walk over the whole
    trie (which made N disconnects O(N^2): 1.6 s of a 1,000-device session), and prunes
    the nodes left without subscribers or children so the trie does not grow with every
    client that ever connected.
    """

    def __init__(self) -> None:
        self._root = _TrieNode()
        self._filters: dict[str, set[str]] = {}  # client -> its subscribed filters

    def add(self, pattern: str, client_id: str) -> None:
        """Register ``client_id`` under ``pattern``."""
        node = self._root
        for level in pattern.split("/"):
            node = node.children.setdefault(level, _TrieNode())
        node.subscribers.add(client_id)
        self._filters.setdefault(client_id, set()).add(pattern)

    def remove_client(self, client_id: str) -> None:
        """Drop every subscription of ``client_id``."""
        for pattern in self._filters.pop(client_id, ()):
            levels = pattern.split("/")
            path = [self._root]  # a subscribed filter's nodes are never pruned: all exist
            for level in levels:
                path.append(path[-1].children[level])
            path[-1].subscribers.discard(client_id)
            # prune bottom-up while a node has neither subscribers nor children
            for depth in range(len(levels), 0, -1):
                node = path[depth]
                if node.subscribers or node.children:
                    break
                del path[depth - 1].children[levels[depth - 1]]

    def match(self, topic: str) -> set[str]:
        """Every client with a subscription matching ``topic``."""
        levels = topic.split("/")
        found: set[str] = set()
        skip_wildcards_at_root = topic.startswith("$")

        def visit(node: _TrieNode, index: int) -> None:
            wildcards_allowed = not (index == 0 and skip_wildcards_at_root)
            if wildcards_allowed and "#" in node.children:
                found.update(node.children["#"].subscribers)
            if index == len(levels):
                found.update(node.subscribers)
                return
            child = node.children.get(levels[index])
            if child is not None:
                visit(child, index + 1)
            if wildcards_allowed and "+" in node.children:
                visit(node.children["+"], index + 1)

        visit(self._root, 0)
        return found


class MemoryTransport:
    """An in-process broker. ``drop`` and ``delay`` rules apply per delivery.

    With ``credentials`` it enforces the run's ACL like a real broker does
    (``broker.auth``): a connection must log in (explicit username/password, or the
    identity its client id belongs to), a refused subscription raises ``TransportError``
    (the MQTT transport raises on a SUBACK refusal too), and an unauthorised publish is
    dropped and recorded in ``denied`` (brokers drop them silently; MQTT 3.1.1 has no
    error for it), so a topic mistake shows up in tests on memory too.

    Retained messages as MQTT 3.1.1 (section 3.3.1.3): a publish with ``retain`` is routed
    as usual and kept in ``retained`` (topic -> payload; an empty payload deletes the
    topic's), and every ``subscribe`` delivers at once the retained messages its new
    filters match (once per message, through the same drop / delay rules; an unauthorised
    publish is neither routed nor kept). They survive ``sever`` and ``outage``, as on a
    broker with persistence."""

    name = "memory"

    def __init__(
        self,
        *,
        drop: DropRule | None = None,
        delay: DelayRule | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self.drop = drop
        self.delay = delay
        self.credentials = credentials
        self._guard = AccessGuard(credentials, "memory broker")
        self._trie = TopicTrie()
        self._queues: dict[str, asyncio.Queue[Delivery | object | None]] = {}
        self.published = 0
        self.dropped = 0
        self.denied = self._guard.denied  # (client id, action, topic)
        self.retained: dict[str, bytes] = {}  # topic -> its retained payload
        self.down = False  # a simulated outage: connections are refused (``outage``)

    def sever(self, client_ids: Iterable[str] | None = None) -> int:
        """Break open connections (all, or those named) as a network failure would: their
        ``messages()`` raise ``ConnectionLost`` and they can no longer publish. Returns how
        many were broken. (A fault-injection hook for tests and the faults scenario.)"""
        chosen = list(self._queues) if client_ids is None else list(client_ids)
        broken = 0
        for client_id in chosen:
            queue = self._queues.pop(client_id, None)
            if queue is None:
                continue
            self._trie.remove_client(client_id)
            queue.put_nowait(LOST)
            broken += 1
        return broken

    @contextlib.contextmanager
    def outage(self):
        """A broker restart: every connection breaks, and connecting fails until the
        block ends."""
        self.down = True
        self.sever()
        try:
            yield
        finally:
            self.down = False

    @contextlib.asynccontextmanager
    async def connect(
        self,
        client_id: str,
        *,
        clean_session: bool = True,
        username: str | None = None,
        password: str | None = None,
    ) -> AsyncIterator[MemoryConnection]:
        """Open an in-memory connection (a second one with the same id takes over, as MQTT)."""
        if self.down:
            raise TransportError(f"{client_id}: memory broker is down (connection refused)")
        user = self._guard.login(client_id, username, password)
        old = self._queues.get(client_id)
        if old is not None:
            old.put_nowait(None)  # the broker disconnects the older session
            self._trie.remove_client(client_id)
        queue: asyncio.Queue[Delivery | object | None] = asyncio.Queue()
        self._queues[client_id] = queue
        try:
            yield MemoryConnection(self, client_id, queue, user)
        finally:
            if self._queues.get(client_id) is queue:
                del self._queues[client_id]
                self._trie.remove_client(client_id)

    def _permitted(self, connection: MemoryConnection, action: str, topic: str) -> bool:
        if self._guard.allows(connection.username, connection.client_id, action, topic):
            return True
        log.warning("%s: not authorised to %s %s", connection.client_id, action, topic[:200])
        return False

    def _route(self, topic: str, payload: bytes, retain: bool = False) -> None:
        self.published += 1
        if retain:
            if payload:
                self.retained[topic] = payload
            else:
                self.retained.pop(topic, None)  # a zero-byte retained message deletes
        loop = asyncio.get_running_loop()
        for client_id in self._trie.match(topic):
            self._deliver(loop, client_id, topic, payload)

    def _deliver(
        self, loop: asyncio.AbstractEventLoop, client_id: str, topic: str, payload: bytes
    ) -> None:
        queue = self._queues.get(client_id)
        if queue is None:
            return
        if self.drop is not None and self.drop(topic, payload, client_id):
            self.dropped += 1
            return
        delivery = Delivery(topic, payload)
        seconds = self.delay(topic, payload, client_id) if self.delay is not None else 0.0
        if seconds > 0:
            loop.call_later(seconds, queue.put_nowait, delivery)
        else:
            queue.put_nowait(delivery)

    def _send_retained(self, client_id: str, filters: Iterable[str]) -> None:
        """Deliver to ``client_id`` the retained messages ``filters`` match (each once)."""
        if not self.retained:
            return
        loop = asyncio.get_running_loop()
        for topic, payload in list(self.retained.items()):
            if any(topics.matches(pattern, topic) for pattern in filters):
                self._deliver(loop, client_id, topic, payload)


class MemoryConnection:
    """A client of ``MemoryTransport``."""

    def __init__(
        self,
        broker: MemoryTransport,
        client_id: str,
        queue: asyncio.Queue[Delivery | object | None],
        username: str | None = None,
    ) -> None:
        self._broker = broker
        self.client_id = client_id
        self.username = username
        self._queue = queue

    def _check_open(self) -> None:
        if self._broker._queues.get(self.client_id) is not self._queue:
            raise ConnectionLost(f"{self.client_id}: publish on a closed connection")

    async def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False) -> None:
        """Route a message to every matching subscriber (and keep it, with ``retain``)."""
        self._check_open()
        if self._broker._permitted(self, "publish", topic):
            self._broker._route(topic, bytes(payload), retain)
        await asyncio.sleep(0)  # a publish is a scheduling point, as on a socket

    async def publish_many(self, items: Iterable[tuple[str, bytes]], qos: int = 1) -> None:
        """Route several messages."""
        self._check_open()
        for topic, payload in items:
            if self._broker._permitted(self, "publish", topic):
                self._broker._route(topic, bytes(payload))
        await asyncio.sleep(0)

    async def subscribe(self, *filters: str, qos: int = 1) -> None:
        """Add subscriptions (``TransportError`` if the ACL refuses one; none is added),
        then receive the retained messages they match."""
        refused = [p for p in filters if not self._broker._permitted(self, "subscribe", p)]
        if refused:
            raise TransportError(f"{self.client_id}: the broker refused subscription {refused}")
        for pattern in filters:
            self._broker._trie.add(pattern, self.client_id)
        self._broker._send_retained(self.client_id, filters)

    async def messages(self) -> AsyncIterator[Delivery]:
        """Deliveries until the connection is taken over or closed."""
        async for delivery in queued_deliveries(
            self._queue, self.client_id, "connection lost (severed)"
        ):
            yield delivery

    def pending(self) -> int:
        """Buffered deliveries."""
        return self._queue.qsize()
