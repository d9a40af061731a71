"""MQTT transport, and broker URLs (``mqtt://[user:pass@]host:port``).

Connections use the lean asyncio client ``broker.mqtt_client`` (MQTT 3.1.1 over the
sans-I/O codec ``broker.mqtt_wire``) by default: paho + aiomqtt measured 2.8× slower end
to end on a 10,000-device gateway run (docs/scaling.md). ``LDPFLEET_MQTT_CLIENT=aiomqtt``
selects aiomqtt instead (``MqttConnection`` here), e.g. to compare; ``probe_broker`` and
``broker_reachable`` send their one CONNECT themselves. Either way TCP_NODELAY is set (a
delayed-ACK stall otherwise slows request/acknowledge exchanges several-fold), publishing
at QoS 1 waits for the broker's PUBACK, and ``publish_many`` overlaps those waits.

``mqtts://[user:pass@]host[:port][?ca=PATH&cert=PATH&key=PATH]`` speaks TLS (default port
8883; ``broker.tls``): ``ca`` is the CA file that signed the broker's certificate (default:
the system's trust store), ``cert`` and ``key`` a client certificate; each query value
defaults to ``LDPFLEET_TLS_CA`` / ``LDPFLEET_TLS_CERT`` / ``LDPFLEET_TLS_KEY``. The
broker's certificate and host name are always verified; a failed verification is one
sentence (``TlsRefused``) and is not retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import os
import random
import socket
import ssl
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, unquote, urlsplit

import aiomqtt
from ldpfleet.broker.mqtt_client import (
    ConnectRefused,
    WireConnection,
    check_suback,
    open_connection,
)
from ldpfleet.broker.mqtt_wire import (
    CREDENTIAL_REFUSALS,
    DISCONNECT_PACKET,
    Connack,
    MqttProtocolError,
    PacketReader,
    encode_connect,
)
from ldpfleet.broker.tls import TlsError, TlsSettings, client_context, tls_failure, tls_settings
from ldpfleet.broker.transport import ConnectionLost, ConnectionRefused, Delivery, TransportError

if TYPE_CHECKING:
    from ldpfleet.broker.auth import Credentials

DEFAULT_MQTT_PORT = 1883
DEFAULT_MQTTS_PORT = 8883


# QoS 1 messages a client may have sent and not yet had acknowledged (paho's default is
# 20). The collector's acknowledgements all leave through one connection, one PUBACK
# round trip per INFLIGHT messages (docs/scaling.md, "Where the bottleneck is").
INFLIGHT = 20


class BrokerUrlError(ValueError):
    """A broker URL that cannot be used; the message says what form is expected."""


class TlsRefused(ConnectionRefused):
    """A TLS handshake with the broker failed (a certificate that does not verify, a
    client certificate the broker refused); the message is one sentence saying why."""


@dataclass(frozen=True)
class BrokerAddress:
    """Where an MQTT broker listens, optional credentials, and ``tls`` (``mqtts://``)."""

    host: str
    port: int
    username: str | None = None
    password: str | None = None
    tls: TlsSettings | None = None

    @property
    def url(self) -> str:
        """The URL without the password (with the TLS files, so that a process started
        with it connects the same way)."""
        user = f"{self.username}@" if self.username else ""
        if self.tls is None:
            return f"mqtt://{user}{self.host}:{self.port}"
        return f"mqtts://{user}{self.host}:{self.port}{self.tls.query()}"

    @property
    def where(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"


TLS_PARAMETERS = ("ca", "cert", "key")


def parse_broker_url(url: str) -> BrokerAddress:
    """Parse ``mqtt://[user:pass@]host[:port]`` or ``mqtts://...[?ca=&cert=&key=]`` (module
    docstring); ``BrokerUrlError`` names what is wrong (a TLS file that does not exist
    too)."""
    try:
        parts = urlsplit(url)
        parts.hostname  # noqa: B018 - a bad [IPv6] host raises here or in urlsplit
    except ValueError as error:  # 'mqtt://[::1' (urllib: "Invalid IPv6 URL")
        raise BrokerUrlError(
            f"broker URL {url!r} cannot be parsed ({error}; an IPv6 host is written "
            "mqtt://[::1]:1883)"
        ) from None
    if parts.scheme not in ("mqtt", "mqtts"):
        close = difflib.get_close_matches(url, ("embedded", "memory", "mqtt://", "mqtts://"), 1)
        raise BrokerUrlError(
            f"broker URL {url!r} must start with mqtt:// (e.g. mqtt://127.0.0.1:1883) or "
            "mqtts:// (TLS), or be 'embedded' or 'memory'"
            + (f" (did you mean {close[0]!r}?)" if close else "")
        )
    if not parts.hostname:
        raise BrokerUrlError(f"broker URL {url!r} has no host (e.g. mqtt://127.0.0.1:1883)")
    secure = parts.scheme == "mqtts"
    try:
        port = parts.port or (DEFAULT_MQTTS_PORT if secure else DEFAULT_MQTT_PORT)
    except ValueError:
        raise BrokerUrlError(f"broker URL {url!r} has an invalid port (1-65535)") from None
    if parts.path not in ("", "/"):
        raise BrokerUrlError(f"broker URL {url!r} must not have a path")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(query) - set(TLS_PARAMETERS))
    if unknown:
        raise BrokerUrlError(
            f"broker URL {url!r}: unknown parameter {unknown[0]!r} (allowed: ca, cert, key)"
        )
    if query and not secure:
        raise BrokerUrlError(f"broker URL {url!r}: ca, cert and key are TLS settings; use mqtts://")
    tls = None
    if secure:
        try:
            tls = tls_settings(*(query.get(name) or None for name in TLS_PARAMETERS))
        except TlsError as error:
            raise BrokerUrlError(f"broker URL {url!r}: {error}") from None
    return BrokerAddress(
        host=parts.hostname,
        port=port,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        tls=tls,
    )


def ssl_context(address: BrokerAddress) -> ssl.SSLContext | None:
    """The client TLS context for ``address`` (None for plain MQTT); ``BrokerUrlError`` if
    a TLS file cannot be loaded."""
    if address.tls is None:
        return None
    try:
        return client_context(address.tls)
    except TlsError as error:
        raise BrokerUrlError(f"broker {address.url}: {error}") from None


PROBE_PATIENCE = 30.0  # seconds a probe waits for the CONNACK once TCP connected


async def broker_reachable(
    address: BrokerAddress, timeout: float = 3.0, *, patience: float = PROBE_PATIENCE
) -> bool:
    """True if an MQTT broker answers a CONNECT at ``address`` (over TLS for ``mqtts://``).

    A real MQTT handshake rather than a bare TCP probe (amqtt logs a bare connection as an
    error and leaks its transport). A broker that answers but refuses the credentials
    counts as reachable: the real connection then reports the refusal. ``timeout`` and
    ``patience`` as for ``probe_broker``."""
    return await probe_broker(address, timeout, explain=False, patience=patience) is None


async def probe_broker(
    address: BrokerAddress,
    timeout: float = 3.0,
    *,
    explain: bool = True,
    patience: float = PROBE_PATIENCE,
) -> str | None:
    """None if an MQTT broker answers a CONNECT at ``address``, else one sentence saying
    why not: a TLS failure (``broker.tls.tls_failure``), a plain ``mqtt://`` URL for a TLS
    listener (with ``explain``: a second, TLS-only probe tells), or nothing listening.

    ``timeout`` bounds the TCP connect: a refused connect is reported at once, a host that
    does not answer after ``timeout``. Once the connection is accepted something listens,
    and the probe waits up to ``patience`` seconds for the CONNACK (over TLS after a
    handshake of at most ``timeout``), so a starved machine's broker (or probe) that
    answers late is not reported absent; a listener that hangs up without a CONNACK is
    reported at once."""
    context = ssl_context(address)
    if context is not None:
        return await _probe_tls(address, context, timeout, patience)
    answered = await _connack(address, timeout, patience)
    if answered:
        return None
    if answered is False and explain and await _speaks_tls(address, timeout):
        return (
            f"the broker at {address.where} expects TLS on that port: use "
            f"mqtts://{address.host}:{address.port}?ca=PATH (the CA that signed its "
            "certificate)"
        )
    if answered is False:  # something listens there, but not an MQTT broker
        return (
            f"no MQTT broker answers at {address.where}: something listens there but "
            f"sent no CONNACK to a CONNECT (it hung up, or stayed silent for {patience:g} "
            "s): is that port another program's (a web server, a database)? Mosquitto's is "
            "usually 1883; or use --broker embedded (broker='embedded' from Python)"
        )
    return _not_answering(address)


async def _connack(
    address: BrokerAddress,
    timeout: float,
    patience: float,
    context: ssl.SSLContext | None = None,
) -> bool | None:
    """Whether an MQTT CONNECT at ``address`` (over TLS with ``context``) is answered with a
    CONNACK (any return code: a refusal of the credentials is an answer): None when the
    TCP connect fails or takes over ``timeout`` seconds, False when the connection is
    accepted but closed without a CONNACK, or none arrives within ``patience`` seconds
    (over TLS: after a handshake of at most ``timeout`` seconds; a TLS client on a plain
    port never completes one). Over TLS, a failed handshake or the broker's alert after
    it raises ``ssl.SSLError``."""
    try:
        async with asyncio.timeout(timeout):
            sock = await _tcp_connect(address.host, address.port)
    except (OSError, TimeoutError):
        return None
    answered = False
    writer = None
    try:
        tls = {"ssl": context, "server_hostname": address.host} if context else {}
        # the TLS handshake: ``timeout`` (a TLS client on a plain port never completes one)
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(sock=sock, **tls)
        async with asyncio.timeout(patience):
            writer.write(
                encode_connect(
                    f"ldpfleet-probe-{random.getrandbits(48):012x}",
                    keepalive=60,
                    username=address.username,
                    password=address.password,
                )
            )
            packets = PacketReader()
            while True:
                data = await reader.read(4096)
                if not data:
                    break  # hung up without a CONNACK: not an MQTT broker
                received = packets.feed(data)
                if received:
                    answered = isinstance(received[0], Connack)
                    break
        if answered:
            writer.write(DISCONNECT_PACKET)
    except ssl.SSLError:
        raise
    except (OSError, TimeoutError, MqttProtocolError):
        pass
    finally:
        if writer is None:
            sock.close()
        else:
            writer.close()
            with contextlib.suppress(OSError, TimeoutError):
                async with asyncio.timeout(timeout):
                    await writer.wait_closed()
    return answered


async def _tcp_connect(host: str, port: int) -> socket.socket:
    """A connected non-blocking TCP socket to ``host:port`` (each address in turn); the
    last ``OSError`` if none accepts."""
    loop = asyncio.get_running_loop()
    error: OSError = OSError(f"no address for {host}")
    for family, kind, proto, _, where in await loop.getaddrinfo(
        host, port, type=socket.SOCK_STREAM
    ):
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, where)
        except OSError as failed:
            sock.close()
            error = failed
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    raise error


def _closed_after_handshake(address: BrokerAddress) -> str:
    """A TLS broker that closed the connection without a word about why."""
    assert address.tls is not None
    if address.tls.cert is not None:
        return (
            f"the broker at {address.where} closed the TLS connection: it does not accept "
            f"the client certificate {address.tls.cert} (signed by a CA it does not trust?)"
        )
    return (
        f"the broker at {address.where} closed the TLS connection before answering: it may "
        "require a client certificate (?cert=PATH&key=PATH)"
    )


def _not_answering(address: BrokerAddress) -> str:
    return (
        f"no MQTT broker answers at {address.where}; start one "
        "(e.g. `mosquitto -d -c /etc/mosquitto/mosquitto.conf`) or use --broker embedded "
        "(broker='embedded' from Python)"
    )


async def _probe_tls(
    address: BrokerAddress, context: ssl.SSLContext, timeout: float, patience: float
) -> str | None:
    assert address.tls is not None
    try:
        answered = await _connack(address, timeout, patience, context)
    except ssl.SSLError as error:
        return tls_failure(error, address.where, address.tls)
    if answered:
        return None
    if answered is None:  # nothing accepted the TCP connection
        return _not_answering(address)
    plain = BrokerAddress(address.host, address.port, address.username, address.password)
    if await probe_broker(plain, timeout, explain=False, patience=patience) is None:
        return (
            f"the broker at {address.where} does not speak TLS on that port: use "
            f"mqtt://{address.where}, or the port of its TLS listener"
        )
    if await _speaks_tls(address, timeout):
        return _closed_after_handshake(address)
    return _not_answering(address)


async def _speaks_tls(address: BrokerAddress, timeout: float) -> bool:
    """True if a TLS handshake (no verification: this only asks what the port speaks)
    succeeds at ``address``."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(address.host, address.port, ssl=context)
    except (OSError, TimeoutError, ssl.SSLError):
        return False
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError):
        await writer.wait_closed()
    return True


def _definitive(error: BaseException) -> bool:
    """A TLS failure another attempt would meet again (a certificate that does not
    verify, a wrong protocol, a refused client certificate), unlike a handshake cut by
    an overloaded broker."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return True
    reason = str(getattr(error, "reason", "") or "").upper()
    return isinstance(error, ssl.SSLError) and reason in (
        "WRONG_VERSION_NUMBER",
        "TLSV13_ALERT_CERTIFICATE_REQUIRED",
        "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
        "TLSV1_ALERT_UNKNOWN_CA",
        "SSLV3_ALERT_BAD_CERTIFICATE",
        "SSLV3_ALERT_HANDSHAKE_FAILURE",
        "TLSV1_ALERT_PROTOCOL_VERSION",
    )


class MqttTransport:
    """Connections to one MQTT broker.

    With ``credentials`` (a run's ``broker.auth.Credentials``) every connection logs in as
    the identity its client id belongs to (``{run}-d0007`` as ``d0007``, ``{run}-collector-*``
    as ``collector``, ...); explicit ``username``/``password`` arguments win, and the URL's
    user and password are used for client ids of no identity. Without ``credentials`` the
    ambient ones of a run (``broker.auth.ambient``: a device shard's) apply, if any."""

    def __init__(
        self,
        address: BrokerAddress | str,
        *,
        connect_attempts: int = 6,
        keepalive: int = 60,
        credentials: Credentials | None = None,
    ) -> None:
        self.address = parse_broker_url(address) if isinstance(address, str) else address
        self.name = self.address.url
        # one TLS context for every connection (loading the CA per connection would cost)
        self.ssl_context = ssl_context(self.address)
        self.connect_attempts = connect_attempts
        self.keepalive = keepalive
        if credentials is None:
            from ldpfleet.broker.auth import ambient

            credentials = ambient()
        self.credentials = credentials

    def login(
        self, client_id: str, username: str | None, password: str | None
    ) -> tuple[str | None, str | None]:
        """The (username, password) a connection as ``client_id`` presents."""
        if username is not None:
            return username, password
        if self.credentials is not None:
            found = self.credentials.for_client(client_id)
            if found is not None:
                return found
        return self.address.username, self.address.password

    @contextlib.asynccontextmanager
    async def connect(
        self,
        client_id: str,
        *,
        clean_session: bool = True,
        username: str | None = None,
        password: str | None = None,
    ) -> AsyncIterator[MqttConnection | WireConnection]:
        """Connect with retries (exponential backoff with jitter) and yield the connection:
        ``broker.mqtt_client`` by default, aiomqtt with ``LDPFLEET_MQTT_CLIENT=aiomqtt``."""
        username, password = self.login(client_id, username, password)
        opener = self._open_aiomqtt if mqtt_client_name() == "aiomqtt" else self._open_wire
        delay = 0.05
        for attempt in range(1, self.connect_attempts + 1):
            try:
                connection = await opener(client_id, clean_session, username, password)
                break
            except _Retryable as failure:
                if attempt == self.connect_attempts:
                    raise TransportError(
                        f"{client_id}: cannot connect to {self.name} after {attempt} "
                        f"attempts: {self._explain(failure.__cause__)}"
                    ) from failure.__cause__
                await asyncio.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 2.0)
        try:
            yield connection
        finally:
            with contextlib.suppress(aiomqtt.MqttError, TransportError, asyncio.CancelledError):
                await connection.close()

    def _explain(self, error: BaseException | None) -> str:
        """The cause of a failed attempt, as a TLS sentence where it is one; a plain
        connection the broker closed before answering may have met a TLS listener."""
        if error is not None and self.address.tls is not None:
            sentence = tls_failure(error, self.address.where, self.address.tls)
            if sentence is not None:
                return sentence
        if self.address.tls is None and not isinstance(error, ConnectionRefusedError):
            return f"{error} (if that port is a TLS listener, use mqtts://)"
        if self.address.tls is not None and isinstance(
            error, ConnectionLost | ConnectionResetError | BrokenPipeError
        ):
            return f"{error}; {_closed_after_handshake(self.address)}"
        return str(error)

    def _tls_refusal(self, client_id: str, error: BaseException) -> Exception:
        assert self.address.tls is not None
        sentence = tls_failure(error, self.address.where, self.address.tls)
        return TlsRefused(f"{client_id}: {sentence}")

    def _refusal(self, client_id: str, username: str | None, error: Exception) -> Exception:
        tls = self.address.tls
        hint = (
            " (a TLS broker may require a client certificate: ?cert=PATH&key=PATH)"
            if tls is not None and tls.cert is None
            else ""
        )
        if username is None:  # no login given to a broker that wants one
            hint += (
                " (the broker wants a login: give the run's --credentials, as written by "
                "`ldpfleet mosquitto-config`; docs/reliability.md)"
            )
        return ConnectionRefused(
            f"{client_id}: {self.name} refused the connection (user {username!r}): {error}{hint}"
        )

    async def _open_wire(
        self, client_id: str, clean_session: bool, username: str | None, password: str | None
    ) -> WireConnection:
        try:
            return await open_connection(
                self.address.host,
                self.address.port,
                client_id,
                clean_session=clean_session,
                keepalive=self.keepalive,
                username=username,
                password=password,
                timeout=30,
                ssl_context=self.ssl_context,
            )
        except ConnectRefused as error:
            # bad credentials or not authorised: retrying won't help
            if error.return_code in CREDENTIAL_REFUSALS:
                raise self._refusal(client_id, username, error) from error
            raise _Retryable() from error
        except ssl.SSLError as error:
            if _definitive(error):
                raise self._tls_refusal(client_id, error) from None
            raise _Retryable() from error
        except (OSError, TimeoutError, TransportError) as error:
            raise _Retryable() from error

    async def _open_aiomqtt(
        self, client_id: str, clean_session: bool, username: str | None, password: str | None
    ) -> MqttConnection:
        client = aiomqtt.Client(
            self.address.host,
            self.address.port,
            identifier=client_id,
            username=username,
            password=password,
            clean_session=clean_session,
            keepalive=self.keepalive,
            max_inflight_messages=int(os.environ.get("LDPFLEET_MQTT_INFLIGHT", INFLIGHT)),
            timeout=30,
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            tls_context=self.ssl_context,
        )
        # Overlapping QoS 1 publishes is intended (publish_many); aiomqtt would log a
        # warning per call above this threshold.
        client.pending_calls_threshold = 1_000_000
        try:
            await client.__aenter__()
        except aiomqtt.MqttError as error:
            if isinstance(error, aiomqtt.MqttCodeError) and _refused(error):
                raise self._refusal(client_id, username, error) from error
            cause = _ssl_cause(error)
            if cause is not None and _definitive(cause):
                raise self._tls_refusal(client_id, cause) from None
            raise _Retryable() from (cause or error)
        except ssl.SSLError as error:
            if _definitive(error):
                raise self._tls_refusal(client_id, error) from None
            raise _Retryable() from error
        return MqttConnection(client, client_id)


def _ssl_cause(error: BaseException) -> ssl.SSLError | None:
    """The ``ssl.SSLError`` behind an aiomqtt error, if any (paho raises it during the
    handshake; aiomqtt wraps it)."""
    seen = 0
    cause: BaseException | None = error
    while cause is not None and seen < 5:
        if isinstance(cause, ssl.SSLError):
            return cause
        cause = cause.__cause__ or cause.__context__
        seen += 1
    return None


class _Retryable(Exception):
    """A connection attempt that failed in a way another attempt may not (the cause)."""


def mqtt_client_name() -> str:
    """The MQTT client implementation in use: ``LDPFLEET_MQTT_CLIENT`` (``wire``, the
    default, or ``aiomqtt``)."""
    name = os.environ.get("LDPFLEET_MQTT_CLIENT", "wire")
    if name not in ("wire", "aiomqtt"):
        raise BrokerUrlError(f"LDPFLEET_MQTT_CLIENT={name!r} must be 'wire' or 'aiomqtt'")
    return name


def _refused(error: aiomqtt.MqttCodeError) -> bool:
    """A CONNACK refusal for credentials (``CREDENTIAL_REFUSALS``)."""
    rc = getattr(error, "rc", None)
    code = int(getattr(rc, "value", rc)) if rc is not None else -1
    return code in CREDENTIAL_REFUSALS


PUBLISH_WINDOW = int(os.environ.get("LDPFLEET_MQTT_WINDOW", 32))  # see MqttConnection


class MqttConnection:
    """One aiomqtt client behind the ``Connection`` interface."""

    def __init__(self, client: aiomqtt.Client, client_id: str) -> None:
        self._client = client
        self.client_id = client_id
        # At most PUBLISH_WINDOW publishes of this connection wait for their PUBACK at
        # once. aiomqtt scans all pending calls on every publish, so k concurrent
        # publishes cost O(k^2): 4,039 at once took 30 s of a CADR-LDP run, and a gateway
        # carrying 50,000 devices spent 55 % of its CPU in that scan (measured with
        # py-spy). paho sends at most 20 QoS 1 messages unacknowledged anyway, so the
        # window costs no throughput.
        self._window = asyncio.Semaphore(PUBLISH_WINDOW)

    async def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False) -> None:
        """Publish (retained if ``retain``) and (QoS 1) wait for the broker's
        acknowledgement."""
        async with self._window:
            try:
                await self._client.publish(topic, payload, qos=qos, retain=retain)
            except aiomqtt.MqttError as error:
                raise TransportError(
                    f"{self.client_id}: publish to {topic} failed: {error}"
                ) from error

    async def publish_many(self, items: Iterable[tuple[str, bytes]], qos: int = 1) -> None:
        """Publish several messages with their acknowledgements awaited concurrently
        (``PUBLISH_WINDOW`` at a time, see ``__init__``)."""
        await asyncio.gather(*(self.publish(topic, payload, qos) for topic, payload in items))

    async def subscribe(self, *filters: str, qos: int = 1) -> None:
        """Subscribe to all filters in one SUBSCRIBE packet; ``TransportError`` names the
        filters the broker refused (``check_suback``)."""
        try:
            granted = await self._client.subscribe([(pattern, qos) for pattern in filters])
        except aiomqtt.MqttError as error:
            raise TransportError(f"{self.client_id}: subscribe failed: {error}") from error
        check_suback(self.client_id, filters, (int(getattr(c, "value", c)) for c in granted))

    async def messages(self) -> AsyncIterator[Delivery]:
        """Every delivery until the connection closes."""
        try:
            async for message in self._client.messages:
                yield Delivery(message.topic.value, bytes(message.payload))
        except aiomqtt.MqttError as error:
            raise ConnectionLost(f"{self.client_id}: connection lost: {error}") from error

    async def wait_lost(self) -> None:
        """Return once the connection is gone. (aiomqtt leaves a QoS 1 publish waiting for
        its PUBACK on a dead connection until the client's 30 s timeout; a ``Session``
        waits on this to stop such publishes at once. aiomqtt has no public signal for it:
        its own message iterator waits on the same future.)"""
        disconnected = self._client._disconnected
        await asyncio.wait([disconnected])

    def pending(self) -> int:
        """Deliveries buffered in the client and not consumed yet."""
        return len(self._client.messages)

    async def close(self) -> None:
        """Disconnect."""
        await self._client.__aexit__(None, None, None)
