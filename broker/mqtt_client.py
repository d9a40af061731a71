"""A lean asyncio MQTT 3.1.1 client: the ``Connection`` of ``broker.mqtt`` by default.

Why not only aiomqtt: measurement. paho + aiomqtt cost 100-150 µs of CPU per message
(py-spy on 10,000- and 100,000-device runs: 55-65 % of every process's CPU was in paho's
packet handling, aiomqtt's futures and its pending-call bookkeeping), and the one
collector connection that receives every report and sends every acknowledgement is the
ceiling of a run (docs/scaling.md, "Where the bottleneck is"). This client is an
``asyncio.Protocol`` over the sans-I/O codec ``broker.mqtt_wire``: a received PUBLISH is
decoded, queued and acknowledged in a few microseconds, and everything written in one
event-loop iteration leaves in one ``write`` (one system call for a burst of
acknowledgements). aiomqtt stays available (``LDPFLEET_MQTT_CLIENT=aiomqtt``).

Semantics, as aiomqtt's: QoS 1 publishes return once the broker's PUBACK arrives;
received QoS 1 messages are acknowledged on arrival and buffered for ``messages()``; when
the connection breaks, waiting publishes fail with ``TransportError`` at once, and
``messages()`` yields what was buffered, then raises ``ConnectionLost``. Flow control: a
window of QoS 1 publishes awaiting a PUBACK (``LDPFLEET_MQTT_WINDOW``), and publishers
wait while the socket's write buffer is full (output is written at the end of each loop
iteration, or at once from ``FLUSH_BYTES``, so a burst meets that limit while it is
being produced). Reading never pauses, however many
deliveries wait to be consumed: the PUBACKs a consumer's own publishes wait for arrive on
the same socket (pausing deadlocked a 100,000-device collector), and the runs bound what
is in flight themselves (the collector's credit, ``[stream] max_in_flight``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import ssl
from collections import deque
from collections.abc import AsyncIterator, Iterable

from ldpfleet.broker.mqtt_wire import (
    CONNACK_REASONS,
    DISCONNECT_PACKET,
    PINGREQ_PACKET,
    PUBACK,
    PUBCOMP,
    PUBREC,
    PUBREL,
    SUBACK_FAILURE,
    Ack,
    Connack,
    MqttProtocolError,
    PacketReader,
    Publish,
    Suback,
    encode_ack,
    encode_connect,
    encode_publish,
    encode_subscribe,
    keepalive_action,
)
from ldpfleet.broker.transport import ConnectionLost, Delivery, TransportError

# QoS 1 publishes of one connection awaiting their PUBACK at once (no per-publish scan
# here, unlike aiomqtt, so the window can be wide: it only bounds memory).
WINDOW = int(os.environ.get("LDPFLEET_MQTT_WINDOW", 1024))
FLUSH_BYTES = 256 * 1024  # queued output written at once from this size (64 KiB cost 5 %
# of a 10,000-device gateway run in extra writes; 256 KiB measured no cost)


# Linux's TCP_QUICKACK, set again after every read (the kernel clears it whenever it sees
# request/answer traffic): our side acknowledges each segment at once instead of after the
# 40 ms delayed-ACK timer. Mosquitto's sockets run Nagle (``set_tcp_nodelay`` is false by
# default), so a small packet it writes while an earlier one is unacknowledged waits for our
# ACK: with delayed ACKs, ~40 ms on every LPEA relay superstep (a PUBACK burst to the relay,
# or the next delivery to a device), ~44 ms median per step with 1-9 devices (docs/cadr.md,
# "CPU of the dp fleet run"). ACK timing only: the bytes and their order are unchanged.
# ``LDPFLEET_MQTT_QUICKACK=0`` turns it off (to compare); None where the OS has no such option.
QUICKACK = (
    getattr(socket, "TCP_QUICKACK", None)
    if os.environ.get("LDPFLEET_MQTT_QUICKACK", "1") != "0"
    else None
)


def check_suback(client_id: str, filters: tuple[str, ...], codes: Iterable[int]) -> None:
    """``TransportError`` naming the filters a SUBACK refused (0x80: not authorised, or an
    invalid filter; Mosquitto 2.0 grants a filter wider than the ACL and filters at
    delivery instead). Both MQTT clients use it."""
    refused = [
        pattern for pattern, code in zip(filters, codes, strict=False) if code >= SUBACK_FAILURE
    ]
    if refused:
        raise TransportError(f"{client_id}: the broker refused subscription {refused}")


class ConnectRefused(TransportError):
    """The broker answered CONNECT with a non-zero return code (``return_code``)."""

    def __init__(self, client_id: str, return_code: int) -> None:
        reason = CONNACK_REASONS.get(return_code, "unknown return code")
        super().__init__(f"{client_id}: CONNACK {return_code} ({reason})")
        self.return_code = return_code


class WireConnection(asyncio.Protocol):
    """One MQTT connection (the ``broker.transport.Connection`` interface). Open with
    ``open_connection``."""

    def __init__(self, client_id: str, keepalive: int) -> None:
        self.client_id = client_id
        self.keepalive = keepalive
        # the broker had a session for this client id (CONNACK, clean_session=False)
        self.session_present = False
        self._loop = asyncio.get_running_loop()
        self._reader = PacketDispatcher(self)
        self._transport: asyncio.Transport | None = None
        self._quickack = None  # the socket, when TCP_QUICKACK is set after every read
        self._outgoing: list[bytes] = []
        self._outgoing_bytes = 0
        self._flush_scheduled = False
        self._writable = asyncio.Event()
        self._writable.set()
        self._in_flight = 0  # requests awaiting their answer
        self._room_waiters: deque[asyncio.Future] = deque()
        self._connack: asyncio.Future[Connack] = self._loop.create_future()
        self._waiting: dict[int, asyncio.Future] = {}  # packet id -> PUBACK/SUBACK
        self._last_id = 0
        self._inbox: deque[Delivery] = deque()
        self._inbox_waiter: asyncio.Future | None = None
        self._lost: asyncio.Future[BaseException | None] = self._loop.create_future()
        self._closed_here = False
        self._keepalive_timer: asyncio.TimerHandle | None = None
        self._last_sent = self._last_received = self._loop.time()
        # a TLS error that ended the connection (e.g. the broker's alert refusing our
        # client certificate, which TLS 1.3 delivers after the handshake)
        self.tls_error: ssl.SSLError | None = None

    # asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self._transport = transport  # an asyncio.Transport (uvloop's is not a subclass)
        sock = transport.get_extra_info("socket")
        if sock is not None:  # a delayed-ACK stall otherwise slows request/acknowledge
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if QUICKACK is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)
                    self._quickack = sock

    def data_received(self, data: bytes) -> None:
        self._last_received = self._loop.time()
        if self._quickack is not None:  # see QUICKACK: acknowledge what we read at once
            try:
                self._quickack.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)
            except OSError:
                self._quickack = None
        try:
            self._reader.feed(data)
        except MqttProtocolError as error:
            self._fail(ConnectionLost(f"{self.client_id}: protocol error from broker: {error}"))
            if self._transport is not None:
                self._transport.abort()
            return

    def connection_lost(self, exc: Exception | None) -> None:
        if isinstance(exc, ssl.SSLError):
            self.tls_error = exc
        reason = f": {exc}" if exc else ""
        self._fail(ConnectionLost(f"{self.client_id}: connection lost{reason}"))

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # packets in ------------------------------------------------------------------------

    def _on_publish(self, packet: Publish) -> None:
        self._inbox.append(Delivery(packet.topic, packet.payload))
        waiter = self._inbox_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        # the acknowledgement after waking the reader: its flush (``_send``: call_soon) then
        # runs after the reader's step, so what the reader publishes in answer (a device's
        # next batch) leaves in the same write as this PUBACK: one send() instead of two
        # per message answered. The bytes and their order on the wire are unchanged.
        if packet.qos == 1:
            self._send(encode_ack(PUBACK, packet.packet_id))
        elif packet.qos == 2:  # never requested (subscriptions ask for QoS 1); handled
            self._send(encode_ack(PUBREC, packet.packet_id))

    def _on_ack(self, packet: Ack) -> None:
        if packet.kind == PUBREC:
            self._send(encode_ack(PUBREL, packet.packet_id))
            return
        if packet.kind == PUBREL:
            self._send(encode_ack(PUBCOMP, packet.packet_id))
            return
        self._resolve(packet.packet_id, None)

    def _on_suback(self, packet: Suback) -> None:
        self._resolve(packet.packet_id, packet.return_codes)

    def _on_connack(self, packet: Connack) -> None:
        if not self._connack.done():
            self.session_present = packet.session_present
            self._connack.set_result(packet)

    def _resolve(self, packet_id: int, value: object) -> None:
        future = self._waiting.pop(packet_id, None)
        if future is None:
            return  # an answer to nothing pending (a late duplicate): ignored
        self._release_slot()
        if not future.done():
            future.set_result(value)

    # packets out -----------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        """Queue bytes; everything queued in one loop iteration is written at once, or
        as soon as ``FLUSH_BYTES`` are queued (so that the transport's flow control,
        ``pause_writing``, sees a large burst while it is being produced)."""
        self._outgoing.append(data)
        self._outgoing_bytes += len(data)
        if self._outgoing_bytes >= FLUSH_BYTES:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        self._outgoing_bytes = 0
        data, self._outgoing = self._outgoing, []
        transport = self._transport
        if transport is not None and not transport.is_closing() and data:
            transport.write(b"".join(data))
            self._last_sent = self._loop.time()

    def _next_packet_id(self) -> int:
        for _ in range(65_535):
            self._last_id = self._last_id % 65_535 + 1
            if self._last_id not in self._waiting:
                return self._last_id
        raise TransportError(f"{self.client_id}: all 65,535 packet ids are in use")

    def _check_open(self) -> None:
        if self._lost.done():
            raise ConnectionLost(str(self._lost.result()))

    def _open_request(self, *, slot_handed_over: bool = False) -> tuple[int, asyncio.Future]:
        """A fresh packet id, and the future of the broker's answer with that id (it takes
        a window slot, unless one was handed over by ``_release_slot``)."""
        packet_id = self._next_packet_id()
        future = self._loop.create_future()
        self._waiting[packet_id] = future
        if not slot_handed_over:
            self._in_flight += 1
        return packet_id, future

    async def _wait_for_room(self) -> bool:
        """Wait while the window is full (or others wait for it already) or the socket's
        write buffer is. First come, first served: a deque of waiters, O(1) each
        (asyncio.Semaphore scans its waiters on every acquire, quadratic with thousands
        of devices publishing through a gateway), and a freed slot is handed to the first
        waiter, so a newcomer cannot take it first. True if a slot was handed over."""
        while not self._lost.done():
            if not self._writable.is_set():
                await self._writable.wait()
                continue
            if self._in_flight < WINDOW and not self._room_waiters:
                return False
            waiter = self._loop.create_future()
            self._room_waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._release_slot()  # handed a slot it will not use: pass it on
                raise
            if not self._lost.done():
                return True
        return False

    def _release_slot(self) -> None:
        """A request is answered: its window slot goes to the first waiter, if any."""
        while self._room_waiters:
            waiter = self._room_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._in_flight -= 1

    # the Connection interface ----------------------------------------------------------

    async def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False) -> None:
        """Publish (with the PUBLISH retain flag if ``retain``); at QoS 1 return once the
        broker acknowledged it."""
        await self._publish(((topic, payload),), qos, retain)

    async def publish_many(self, items: Iterable[tuple[str, bytes]], qos: int = 1) -> None:
        """Publish several messages in order, their acknowledgements awaited together
        (at most ``WINDOW`` of the connection's QoS 1 publishes unacknowledged)."""
        await self._publish(items, qos, False)

    async def _publish(self, items: Iterable[tuple[str, bytes]], qos: int, retain: bool) -> None:
        acks = []
        for topic, payload in items:
            handed_over = False
            if self._in_flight >= WINDOW or self._room_waiters or not self._writable.is_set():
                handed_over = await self._wait_for_room()
            self._check_open()
            if qos:
                packet_id, ack = self._open_request(slot_handed_over=handed_over)
                self._send(encode_publish(topic, payload, qos, packet_id, retain=retain))
                acks.append(ack)
            else:
                if handed_over:
                    self._release_slot()  # QoS 0 needs no slot
                self._send(encode_publish(topic, payload, retain=retain))
        for ack in acks:
            await ack

    async def subscribe(self, *filters: str, qos: int = 1) -> None:
        """Subscribe to all filters in one SUBSCRIBE; ``TransportError`` names refused ones."""
        self._check_open()
        packet_id, answer = self._open_request()
        self._send(encode_subscribe(packet_id, [(pattern, qos) for pattern in filters]))
        check_suback(self.client_id, filters, await answer)

    async def messages(self) -> AsyncIterator[Delivery]:
        """Every delivery until the connection closes (``ConnectionLost`` if it broke)."""
        inbox = self._inbox
        while True:
            while inbox:
                yield inbox.popleft()
            if self._lost.done():
                if self._closed_here:
                    return
                raise ConnectionLost(str(self._lost.result()))
            self._inbox_waiter = self._loop.create_future()
            try:
                await self._inbox_waiter
            finally:
                self._inbox_waiter = None

    async def wait_lost(self) -> None:
        """Return once the connection is gone."""
        await asyncio.shield(self._lost)

    def pending(self) -> int:
        """Deliveries received and not consumed yet."""
        return len(self._inbox)

    # lifetime --------------------------------------------------------------------------

    def _keepalive_tick(self) -> None:
        now = self._loop.time()
        action = keepalive_action(now, self._last_sent, self._last_received, self.keepalive)
        if action == "dead":
            self._fail(
                ConnectionLost(
                    f"{self.client_id}: no packet from the broker for "
                    f"{now - self._last_received:.0f} s (keepalive)"
                )
            )
            if self._transport is not None:
                self._transport.abort()
            return
        if action == "ping":
            self._send(PINGREQ_PACKET)
        self._keepalive_timer = self._loop.call_later(self.keepalive / 2, self._keepalive_tick)

    def _fail(self, error: TransportError) -> None:
        """The connection is over: fail every waiter once."""
        if self._lost.done():
            return
        self._lost.set_result(error)
        if self._keepalive_timer is not None:
            self._keepalive_timer.cancel()
        if not self._connack.done():
            self._connack.set_exception(error)
            self._connack.exception()  # retrieved: no "never retrieved" warning
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(error)
                future.exception()
        self._waiting.clear()
        self._in_flight = 0
        self._writable.set()
        while self._room_waiters:
            waiter = self._room_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
        if self._inbox_waiter is not None and not self._inbox_waiter.done():
            self._inbox_waiter.set_result(None)

    async def close(self) -> None:
        """Send DISCONNECT and close."""
        if self._lost.done():
            return
        self._closed_here = True
        self._send(DISCONNECT_PACKET)
        self._flush()
        self._fail(ConnectionLost(f"{self.client_id}: closed by the client"))
        if self._transport is not None:
            self._transport.close()


class PacketDispatcher:
    """Feeds received bytes to the codec's ``PacketReader`` and hands each packet to its
    ``WireConnection`` handler."""

    def __init__(self, connection: WireConnection) -> None:
        self._reader = PacketReader()
        self._handlers = {
            Publish: connection._on_publish,
            Ack: connection._on_ack,
            Suback: connection._on_suback,
            Connack: connection._on_connack,
        }

    def feed(self, data: bytes) -> None:
        """Handle every packet complete in ``data``; ``MqttProtocolError`` after handling
        the valid ones before a malformed one."""
        try:
            packets = self._reader.feed(data)
        except MqttProtocolError as error:
            self._dispatch(error.decoded)
            raise
        self._dispatch(packets)

    def _dispatch(self, packets: list) -> None:
        handlers = self._handlers
        for packet in packets:
            handler = handlers.get(type(packet))
            if handler is not None:  # PINGRESP: its arrival already counted
                handler(packet)


async def open_connection(
    host: str,
    port: int,
    client_id: str,
    *,
    clean_session: bool = True,
    keepalive: int = 60,
    username: str | None = None,
    password: str | None = None,
    timeout: float = 30.0,
    ssl_context: ssl.SSLContext | None = None,
) -> WireConnection:
    """Connect (over TLS with ``ssl_context``, verifying the certificate for ``host``), log
    in and return the connection. Raises ``OSError``/``TimeoutError`` if the broker cannot
    be reached, ``ssl.SSLError`` if the TLS handshake fails (also when the broker's alert
    arrives after it, before the CONNACK), ``ConnectRefused`` if it refuses the CONNECT."""
    loop = asyncio.get_running_loop()
    tls = {"ssl": ssl_context, "server_hostname": host} if ssl_context is not None else {}
    async with asyncio.timeout(timeout):
        _, connection = await loop.create_connection(
            lambda: WireConnection(client_id, keepalive), host, port, **tls
        )
        try:
            connection._send(
                encode_connect(
                    client_id,
                    clean_session=clean_session,
                    keepalive=keepalive,
                    username=username,
                    password=password,
                )
            )
            connack = await asyncio.shield(connection._connack)
        except BaseException as error:
            connection._closed_here = True
            connection._fail(ConnectionLost(f"{client_id}: connect abandoned"))
            if connection._transport is not None:
                connection._transport.abort()
            if connection.tls_error is not None and isinstance(error, TransportError):
                raise connection.tls_error from None
            raise
    if connack.return_code:
        await connection.close()
        raise ConnectRefused(client_id, connack.return_code)
    if keepalive:
        connection._keepalive_timer = loop.call_later(keepalive / 2, connection._keepalive_tick)
    return connection
