"""The embedded broker: amqtt started in-process on a free loopback port (never 1883).

``async with EmbeddedBroker() as broker: broker.url`` gives ``mqtt://127.0.0.1:<port>``.
Nothing to install; fine for small fleets. amqtt matches each message against every
subscription in turn, so large fleets (1,000+ per-device inbox subscriptions) should use
Mosquitto: see docs/brokers.md. ``EmbeddedBroker(tls=TlsServerSettings(cert, key[, ca]))``
listens with TLS instead (``mqtts://``; with ``ca`` every client must present a
certificate signed by it): ``ldpfleet broker --tls-cert --tls-key [--tls-ca]``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import errno
import json
import logging
import signal
import socket
import sys
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from amqtt.broker import Broker
from amqtt.contexts import Action
from amqtt.errors import AMQTTError, MQTTError, NoDataError
from amqtt.mqtt.connack import NOT_AUTHORIZED, ConnackPacket
from amqtt.mqtt.protocol.broker_handler import BrokerProtocolHandler
from amqtt.plugins.base import BaseAuthPlugin, BaseTopicPlugin
from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.mqtt import BrokerAddress
from ldpfleet.broker.tls import TlsError, TlsServerSettings, TlsSettings

# Authentication and ACL plugins ---------------------------------------------------------
#
# amqtt 0.12 loads plugins named in the config's ``plugins`` section by dotted path; each
# gets its ``Config`` data class filled from that section (dacite, strict). An auth plugin's
# ``authenticate(session=)`` returns True/False (None: abstain; all non-None answers must
# be True); a topic plugin's ``topic_filtering(session=, topic=, action=)`` is asked on
# every PUBLISH (``Action.PUBLISH``, the topic), SUBSCRIBE (``Action.SUBSCRIBE``, the
# filter: 0x80 in the SUBACK if False) and delivery (``Action.RECEIVE``). amqtt's own
# ``TopicAccessControlListPlugin`` has per-username topic lists without ``%u``/``%c``
# substitution and no filter-containment check, so these two call ``broker.auth`` instead:
# the same decision as the in-memory transport and the generated Mosquitto ACL.


# how long a clean-session reconnect waits for the previous connection's routing
ROUTE_BEFORE_DELETE_TIMEOUT = 10.0


@dataclass
class _PolicyConfig:
    """Plugin configuration: a run's credentials as ``Credentials.to_dict()``."""

    credentials: dict[str, Any] = field(default_factory=dict)


class LdpAuthPlugin(BaseAuthPlugin):
    """Log in only with a run identity's password and a client id of that identity
    (``Credentials.authenticate``); anonymous connections are refused."""

    Config = _PolicyConfig

    def __init__(self, context) -> None:
        super().__init__(context)
        self.credentials = Credentials.from_dict(self.config.credentials)

    async def authenticate(self, *, session) -> bool:
        if session is None:
            return False
        return self.credentials.authenticate(session.username, session.password, session.client_id)


class LdpTopicPlugin(BaseTopicPlugin):
    """Publish, subscribe and receive only what ``AccessPolicy.allowed`` grants."""

    Config = _PolicyConfig

    def __init__(self, context) -> None:
        super().__init__(context)
        self.policy = Credentials.from_dict(self.config.credentials).policy

    async def topic_filtering(self, *, session=None, topic=None, action=None) -> bool:
        if session is None or topic is None or action is None:
            return False
        return self.policy.allowed(session.username, session.client_id, str(action), topic)


@dataclass
class _NoConfig:
    """A plugin without settings."""


class ClientCertificatePlugin(BaseAuthPlugin):
    """Refuse (CONNACK "not authorised") a TLS client that presented no certificate.

    amqtt's TLS listener verifies a presented client certificate against its ``cafile``
    but lets a client without one in (``CERT_OPTIONAL``); with a client CA configured the
    embedded broker requires one, as Mosquitto's ``require_certificate``."""

    Config = _NoConfig

    async def authenticate(self, *, session) -> bool:
        ssl_object = getattr(session, "ssl_object", None) if session is not None else None
        return bool(ssl_object is not None and ssl_object.getpeercert())


def auth_plugins(credentials: Credentials) -> dict[str, dict]:
    """The ``plugins`` section of an amqtt config that enforces ``credentials``."""
    section = {"credentials": credentials.to_dict()}
    return {
        f"{__name__}.LdpAuthPlugin": section,
        f"{__name__}.LdpTopicPlugin": dict(section),
    }


class _IndexedSubscriptions(dict):
    """amqtt's ``filter -> subscribers`` dict, with a shortcut for its broadcast loop.

    amqtt 0.12's ``Broker._run_broadcast`` takes a message off ``_broadcast_queue`` and
    scans EVERY subscription filter with ``_matches`` (formatting a debug f-string for each
    one that does not match): O(filters) per message. A CADR-LDP fleet of 4,039 devices has
    ~50,000 distinct exact filters (every device's inbox, the fan-in subscriptions), which
    made one broadcast cost tens of milliseconds — the embedded broker could not move the
    secure-sum setup to 4,039 devices within two minutes (measured). While a broadcast is
    being dispatched, ``items()`` therefore returns only the filters that can match its
    topic: the exact filter equal to it, and every wildcard filter (amqtt still checks them
    with ``_matches``). Everything else uses the plain dict."""

    def __init__(self) -> None:
        super().__init__()
        self.wildcards: set[str] = set()
        self.topic_hint: str | None = None
        self.connecting: object | None = None  # see ``__iter__``

    def __iter__(self):
        """amqtt 0.12 loops over EVERY client's filters when a client connects ("publish
        any topic retained messages" to a pre-existing session) and sends the new client
        the retained messages matching any of them — a device received the retained run
        announcement through the recorder's ``ldp/{run}/#`` (found by the separate-process
        tests) — and the loop, awaiting inside, raised "dictionary changed size during
        iteration" while others subscribed. ``_ClosingBroker`` names the connecting session
        just before that loop: it then iterates a snapshot of that session's own filters
        (none for a new session)."""
        session, self.connecting = self.connecting, None
        if session is None:
            return super().__iter__()
        if not getattr(session, "parent", 0):
            return iter(())  # a new session has no subscriptions yet
        own = [key for key, subs in super().items() if any(s is session for s, _ in subs)]
        return iter(own)

    def __setitem__(self, key: str, value: list) -> None:
        if "+" in key or "#" in key:
            self.wildcards.add(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.wildcards.discard(key)
        super().__delitem__(key)

    def clear(self) -> None:
        self.wildcards.clear()
        super().clear()

    def items(self):  # type: ignore[override]
        topic, self.topic_hint = self.topic_hint, None
        if topic is None:
            return super().items()
        keys = [k for k in self.wildcards if k in self]
        if topic in self and topic not in self.wildcards:
            keys.append(topic)
        return [(k, self[k]) for k in keys]


class _HintingQueue(asyncio.Queue):
    """amqtt's broadcast queue: tells the subscriptions which topic is dispatched next."""

    def __init__(self, subscriptions: _IndexedSubscriptions) -> None:
        super().__init__()
        self._subscriptions = subscriptions

    async def get(self):
        item = await super().get()
        self._subscriptions.topic_hint = item.get("topic") if isinstance(item, dict) else None
        return item


class _ClosingBroker(Broker):
    """amqtt's broker, closing each client socket when its session handler returns (amqtt
    0.12 leaves some open, e.g. after a failed CONNECT, until garbage collection), with an
    indexed subscription lookup (``_IndexedSubscriptions``).

    With ``authenticate_first`` (auth on) a CONNECT is authenticated before amqtt touches
    the session table: amqtt 0.12 deletes the existing session of a clean-session CONNECT's
    client id, and takes over a connected one, *before* it checks the credentials, so any
    client could otherwise knock a device off by connecting with its client id. A refused
    CONNECT gets CONNACK 5 (not authorised) and changes nothing. Deliveries are not
    re-checked per message (``Action.RECEIVE``): every subscription was checked when it was
    made, a filter is only granted if ALL topics it matches may be received, the rules do
    not change while the broker runs, and a client id belongs to one username, so a
    resumed session is always its owner's."""

    def __init__(self, *args, authenticate_first: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._authenticate_first = authenticate_first
        subscriptions = _IndexedSubscriptions()
        for key, value in self._subscriptions.items():
            subscriptions[key] = value  # through __setitem__: wildcards are indexed
        self._subscriptions = subscriptions
        self._broadcast_queue = _HintingQueue(subscriptions)
        # client id -> set once its message loop has routed what it received and ended
        self._loops_done: dict[str, asyncio.Event] = {}

    async def stream_connected(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, listener_name: str
    ) -> None:
        try:
            await super().stream_connected(reader, writer, listener_name)
        finally:
            if not writer.is_closing():
                writer.close()

    async def _initialize_client_session(self, reader, writer, remote_address, remote_port):
        if not self._authenticate_first:
            return await super()._initialize_client_session(
                reader, writer, remote_address, remote_port
            )
        try:
            handler, session = await BrokerProtocolHandler.init_from_connect(
                reader, writer, self.plugins_manager
            )
        except (AMQTTError, NoDataError) as exc:
            raise AMQTTError(exc) from exc
        except MQTTError as exc:
            await writer.close()
            raise MQTTError(exc) from exc
        if not await self._authenticate(session, None):
            await ConnackPacket.build(0, NOT_AUTHORIZED).to_stream(writer)
            await writer.close()
            raise AMQTTError(f"client {session.client_id!r}: not authorised")
        # amqtt's own continuation (broker.py 0.12, after init_from_connect), unchanged
        if session.clean_session:
            await self._delete_session(session.client_id)
            session.parent = 0
        elif session.client_id in self._sessions:
            existing, _ = self._sessions[session.client_id]
            existing.will_flag = session.will_flag
            existing.will_message = session.will_message
            existing.will_topic = session.will_topic
            existing.will_qos = session.will_qos
            existing.keep_alive = session.keep_alive
            existing.username = session.username
            existing.password = session.password
            session = existing
            session.parent = 1
        else:
            session.parent = 0
        timeout_disconnect_delay = self.config.get("timeout-disconnect-delay", 0)
        if session.keep_alive > 0 and isinstance(timeout_disconnect_delay, int):
            session.keep_alive += timeout_disconnect_delay
        return handler, session

    async def _publish_session_retained_messages(self, session) -> None:
        await super()._publish_session_retained_messages(session)
        # amqtt's next statement iterates the subscriptions for this session (no await in
        # between): see _IndexedSubscriptions.__iter__
        self._subscriptions.connecting = session

    async def _client_message_loop(self, client_session, handler) -> None:
        """amqtt 0.12's per-client loop, with one change: when the client disconnects, the
        messages it had already published are routed first, in order. amqtt ends the
        session as soon as the disconnect is seen and cancels the rest of the session's
        queue of received PUBLISHes, although QoS 1 ones were already acknowledged to the
        publisher: a collector that publishes its last acks and closes the stage, then
        disconnects, lost some of them (seen with auth on, where each publish awaits the
        topic check: 5 runs in 8 hung with devices waiting for acks)."""

        loop_done = asyncio.Event()
        self._loops_done[client_session.client_id] = loop_done

        def next_message():
            return asyncio.ensure_future(handler.mqtt_deliver_next_message())

        disconnect = asyncio.ensure_future(handler.wait_disconnect())
        subscribe = asyncio.ensure_future(handler.get_next_pending_subscription())
        unsubscribe = asyncio.ensure_future(handler.get_next_pending_unsubscription())
        deliver = next_message()
        try:
            while True:
                done, _ = await asyncio.wait(
                    [disconnect, subscribe, unsubscribe, deliver],
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if subscribe in done:
                    await self._handle_subscription(client_session, handler, subscribe)
                    subscribe = asyncio.ensure_future(handler.get_next_pending_subscription())
                if unsubscribe in done:
                    await self._handle_unsubscription(client_session, handler, unsubscribe)
                    unsubscribe = asyncio.ensure_future(handler.get_next_pending_unsubscription())
                if disconnect in done:
                    await self._route_before_disconnect(client_session, handler, deliver)
                    await self._handle_disconnect(client_session, handler, disconnect)
                    break
                if deliver in done:
                    if not await self._handle_message_delivery(client_session, handler, deliver):
                        break
                    deliver = next_message()
        except asyncio.CancelledError:
            pass
        finally:
            waiters = [disconnect, subscribe, unsubscribe, deliver]
            for waiter in waiters:
                waiter.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)
            loop_done.set()
            if self._loops_done.get(client_session.client_id) is loop_done:
                del self._loops_done[client_session.client_id]

    async def _delete_session(self, client_id: str) -> None:
        """amqtt's, after the client id's previous connection has routed what it received:
        a reconnect with clean session (``broker.session.end_persistent_session`` right
        after a collector's last acks) cleared that connection's queue of received
        PUBLISHes while it was still being routed, losing acknowledged QoS 1 messages."""
        previous = self._loops_done.get(client_id)
        if previous is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(previous.wait(), ROUTE_BEFORE_DELETE_TIMEOUT)
        await super()._delete_session(client_id)

    async def _route_before_disconnect(self, client_session, handler, deliver) -> None:
        """Route, in order, what the client published before it disconnected: the message
        the delivery waiter may already hold (it can finish in the same loop cycle as the
        disconnect, after ``asyncio.wait`` returned), then the rest of the session's queue.
        A waiter still blocked in ``Queue.get`` is cancelled first, which leaves its item
        in the queue, so nothing is taken out of order while this drains."""
        if not deliver.done():
            deliver.cancel()
            await asyncio.gather(deliver, return_exceptions=True)
        held = not deliver.cancelled() and deliver.result() is not None
        if held and not await self._handle_message_delivery(client_session, handler, deliver):
            return
        queue = client_session.delivered_message_queue
        while not queue.empty():
            pending = asyncio.get_running_loop().create_future()
            pending.set_result(queue.get_nowait())
            if not await self._handle_message_delivery(client_session, handler, pending):
                return

    async def _topic_filtering(self, session, topic: str, action: Action) -> bool:
        if self._authenticate_first and action == Action.RECEIVE:
            return True  # checked at SUBSCRIBE (see the class doc)
        return await super()._topic_filtering(session, topic, action)


class EmbeddedBrokerError(RuntimeError):
    """The embedded broker could not start (for example, the port is in use)."""


class EmbeddedBroker:
    """An amqtt broker bound to ``host:port`` (port 0 picks a free one). With
    ``credentials`` it refuses anonymous clients and enforces the run's ACL (the
    ``LdpAuthPlugin`` and ``LdpTopicPlugin`` above); without, anyone may do anything."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        credentials: Credentials | None = None,
        tls: TlsServerSettings | None = None,
    ) -> None:
        if port == 1883:
            raise EmbeddedBrokerError(
                "port 1883 is reserved for the system's Mosquitto; choose another or 0 (free)"
            )
        self.host = host
        self.requested_port = port
        self.credentials = credentials
        self.tls = tls
        self.port: int | None = None
        self._broker: Broker | None = None

    @property
    def address(self) -> BrokerAddress:
        """Where the running broker listens (``mqtts://`` with ``tls``: a client adds the
        CA that signed the broker's certificate, ``address.url + "?ca=PATH"``)."""
        if self.port is None:
            raise EmbeddedBrokerError("the embedded broker is not running")
        return BrokerAddress(self.host, self.port, tls=TlsSettings() if self.tls else None)

    @property
    def url(self) -> str:
        """``mqtt://host:port`` (``mqtts://`` with TLS) of the running broker."""
        return self.address.url

    def _listener(self) -> dict[str, Any]:
        """amqtt's listener section: TCP, with ``ssl``/``certfile``/``keyfile``/``cafile``
        for a TLS listener."""
        listener: dict[str, Any] = {"type": "tcp", "bind": f"{self.host}:{self.requested_port}"}
        if self.tls is not None:
            try:
                tls = self.tls.checked()
            except TlsError as error:
                raise EmbeddedBrokerError(f"the embedded broker cannot listen: {error}") from None
            listener |= {"ssl": True, "certfile": tls.cert, "keyfile": tls.key}
            if tls.ca is not None:
                listener["cafile"] = tls.ca
        return listener

    async def start(self) -> None:
        """Start listening."""
        for name in ("amqtt", "transitions"):
            # at most WARNING: a caller's quieter level stays (``ldpfleet broker`` without
            # --verbose sets CRITICAL, else amqtt's startup traceback precedes our one line)
            logger = logging.getLogger(name)
            logger.setLevel(max(logger.level, logging.WARNING))
        if self.credentials is None:
            plugins = {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}
            }
        else:
            plugins = auth_plugins(self.credentials)
        if self.tls is not None and self.tls.ca is not None:
            plugins[f"{__name__}.ClientCertificatePlugin"] = {}
        config = {"listeners": {"default": self._listener()}, "plugins": plugins}
        broker = _ClosingBroker(config, authenticate_first=self.credentials is not None)
        try:
            await broker.start()
        except Exception as error:
            cause = error.__cause__ or error
            if isinstance(cause, socket.gaierror):
                hint = f"no such host {self.host!r}: give an address of this machine"
            elif getattr(cause, "errno", None) == errno.EADDRNOTAVAIL:
                hint = f"{self.host} is not an address of this machine"
            else:
                hint = "is the port in use? use port 0 for a free one"
            raise EmbeddedBrokerError(
                f"cannot start the embedded broker on {self.host}:{self.requested_port}: "
                f"{cause} ({hint})"
            ) from error
        server = broker._servers["default"].instance
        self.port = server.sockets[0].getsockname()[1]
        self._broker = broker

    async def stop(self) -> None:
        """Disconnect every client and close the listener."""
        if self._broker is not None:
            broker, self._broker = self._broker, None
            await broker.shutdown()
        self.port = None

    async def __aenter__(self) -> EmbeddedBroker:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


STDERR_TAIL_LINES = 200  # the child's last stderr lines kept (EmbeddedBrokerProcess)
# the longest wait for the child's URL: only a hang guard. The child imports amqtt (about
# 1 s of CPU); a fixed 20 s failed runs on a starved machine before they began
START_GUARD_SECONDS = 300.0


class EmbeddedBrokerProcess:
    """The embedded broker in a child process, so it gets a core of its own.

    ``ldpfleet run`` uses this: the broker, the fleet and the collector otherwise share one
    Python thread, and amqtt's routing then halves the fleet's message rate (measured:
    docs/brokers.md). The child prints its URL on its first line and stops on SIGTERM.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        start_timeout: float = START_GUARD_SECONDS,
        *,
        credentials: Credentials | None = None,
    ):
        if port == 1883:
            raise EmbeddedBrokerError(
                "port 1883 is reserved for the system's Mosquitto; choose another or 0 (free)"
            )
        self.host = host
        self.requested_port = port
        self.start_timeout = start_timeout
        self.credentials = credentials
        self.address: BrokerAddress | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._stderr_drain: asyncio.Task | None = None
        # the child's last stderr lines (amqtt's errors), kept for diagnostics
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)

    def _command(self) -> list[str]:
        """The child's argv: ``python -m ldpfleet.broker.embedded ...``."""
        return [
            sys.executable,
            "-m",
            "ldpfleet.broker.embedded",
            "--host",
            self.host,
            "--port",
            str(self.requested_port),
            *(["--credentials-stdin"] if self.credentials is not None else []),
        ]

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        """Read the child's stderr for as long as it serves. Undrained, the pipe filled up
        under load (amqtt logs every PUBACK timeout with a traceback at ERROR level) and
        the broker blocked in a write to it, serving no one: ``bench fleet --devices 1000``
        hung with 1.5 MB queued and 1,002 clients stuck connecting."""
        while line := await stream.readline():
            self.stderr_tail.append(line.decode(errors="replace").rstrip())

    @property
    def url(self) -> str:
        """``mqtt://host:port`` of the running broker."""
        if self.address is None:
            raise EmbeddedBrokerError("the embedded broker is not running")
        return self.address.url

    async def __aenter__(self) -> EmbeddedBrokerProcess:
        self._process = await asyncio.create_subprocess_exec(
            *self._command(),
            stdin=asyncio.subprocess.PIPE if self.credentials is not None else None,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert self._process.stdout is not None and self._process.stderr is not None
        if self.credentials is not None:  # the secret goes through a pipe, never argv
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(self.credentials.to_dict()).encode() + b"\n")
            await self._process.stdin.drain()
            self._process.stdin.close()
        process = self._process
        try:
            line = await asyncio.wait_for(process.stdout.readline(), self.start_timeout)
        except TimeoutError:
            line = b""
        text = line.decode().strip()
        if not text.startswith("mqtt://"):
            await self._stop()  # forgets the child: read its stderr through ``process``
            detail = (await process.stderr.read()).decode().strip().splitlines()
            raise EmbeddedBrokerError(
                f"the embedded broker did not start: {detail[-1] if detail else 'no output'}"
            )
        port = int(text.rsplit(":", 1)[1])
        self.address = BrokerAddress(self.host, port)
        self._stderr_drain = asyncio.create_task(self._drain_stderr(self._process.stderr))
        return self

    async def _stop(self) -> None:
        process, self._process = self._process, None
        drain, self._stderr_drain = self._stderr_drain, None
        try:
            if process is None or process.returncode is not None:
                return
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()
        finally:
            if drain is not None:
                drain.cancel()
                await asyncio.gather(drain, return_exceptions=True)

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stop()
        self.address = None


async def _serve(host: str, port: int, credentials: Credentials | None = None) -> None:
    """The child of ``EmbeddedBrokerProcess``: serve until SIGTERM, which its parent sends
    when the run ends. SIGINT is ignored: a terminal's Ctrl-C reaches the whole process
    group, and a broker that stopped at once left the run's devices to log a "connection
    lost; reconnecting" warning each while the parent was still stopping them."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    async with EmbeddedBroker(host, port, credentials=credentials) as broker:
        # refused clients are logged as amqtt warnings: keep stderr to errors (the parent
        # drains it, EmbeddedBrokerProcess._drain_stderr, and keeps only its tail)
        logging.getLogger("amqtt").setLevel(logging.ERROR)
        print(broker.url, flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    """``python -m ldpfleet.broker.embedded [--host H] [--port P] [--credentials-stdin |
    --credentials FILE]``: serve until SIGTERM, not Ctrl-C (with a run's credentials: auth
    and ACLs). ``ldpfleet broker`` is the standalone broker that Ctrl-C stops."""
    parser = argparse.ArgumentParser(description="ldpfleet embedded amqtt broker")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--credentials", help="a run's credentials.json: enforce its ACL")
    parser.add_argument(
        "--credentials-stdin", action="store_true", help="read the credentials from stdin"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    credentials = None
    if args.credentials_stdin:
        credentials = Credentials.from_dict(json.loads(sys.stdin.readline()))
    elif args.credentials:
        credentials = Credentials.load(args.credentials)
    try:
        asyncio.run(_serve(args.host, args.port, credentials))
    except EmbeddedBrokerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
