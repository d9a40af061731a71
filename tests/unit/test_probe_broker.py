"""``broker.mqtt.probe_broker`` on a busy machine (tiny asyncio servers, no broker).

The probe gave a broker ``timeout`` (3 s) for the whole CONNECT/CONNACK exchange, so a
starved client (or broker) that answered late was reported as "no MQTT broker answers".
Now ``timeout`` bounds only the TCP connect: once the connection is accepted something
listens, and the probe waits up to ``patience`` (``PROBE_PATIENCE``) for the CONNACK. A
refused TCP connect is still reported at once (no wait at all).

The tests of a late CONNACK give the probe a 0.2 s ``timeout`` for what comes before it:
the address lookup (``loop.getaddrinfo``, in a thread), the TCP connect and, over TLS,
the handshake with the test's server in the same process. On the real clock a starved
machine could spend more than 0.2 s there, and the probe said "no MQTT broker answers"
(a resolver thread made 0.3 s slow reproduces it); they run on virtual time
(``tests/virtual_time.py``: the clock stands still while the loop has work or a thread
runs), with the resolver made 0.3 s slow to show it.
"""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from ldpfleet.broker.mqtt import PROBE_PATIENCE, BrokerAddress, broker_reachable, probe_broker
from ldpfleet.broker.mqtt_wire import CONNACK

from tests.virtual_time import VirtualTimeLoop

CONNACK_OK = bytes((CONNACK << 4, 2, 0, 0))
CONNACK_NOT_AUTHORISED = bytes((CONNACK << 4, 2, 0, 5))


def _free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _server(answer, delay: float = 0.0, ssl_context=None):
    """A listener that reads the CONNECT, waits ``delay`` seconds, then writes ``answer``
    (None: says nothing and keeps the connection open; b"": closes it). The address and
    the list of CONNECT packets it received."""
    connects: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connects.append(await reader.read(4096))
        await asyncio.sleep(delay)
        if answer is None:
            await reader.read()  # until the probe hangs up
        elif answer:
            writer.write(answer)
            await writer.drain()
            await reader.read()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=ssl_context)
    port = server.sockets[0].getsockname()[1]
    return server, BrokerAddress("127.0.0.1", port), connects


async def test_a_refused_connect_is_reported_at_once():
    address = BrokerAddress("127.0.0.1", _free_port())
    # timeout and patience of ten minutes: a probe that waited on a refused connect would
    # meet the guard (60 s; a refused loopback connect answers in microseconds)
    async with asyncio.timeout(60):
        problem = await probe_broker(address, timeout=600, patience=600)
        reachable = await broker_reachable(address, timeout=600)
    assert problem is not None and problem.startswith("no MQTT broker answers at 127.0.0.1:")
    assert not reachable


@pytest.fixture
def slow_resolver(monkeypatch):
    """``socket.getaddrinfo`` (run in the loop's executor thread) takes 0.3 s, more than
    the probes' 0.2 s ``timeout``: a starved machine's thread."""
    lookup = socket.getaddrinfo

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return lookup(*args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)


def test_a_connack_later_than_the_connect_timeout_is_still_an_answer(slow_resolver):
    """The old probe gave up after ``timeout`` (0.2 s here) without a CONNACK; the server
    answers 1 s after the CONNECT, well within ``PROBE_PATIENCE``."""
    assert PROBE_PATIENCE >= 30

    async def probes():
        server, address, connects = await _server(CONNACK_OK, delay=1.0)
        async with server:
            answers = (
                await probe_broker(address, timeout=0.2),
                await broker_reachable(address, timeout=0.2),
            )
        return answers, connects

    (problem, reachable), connects = VirtualTimeLoop.run(probes())
    assert problem is None and reachable
    assert connects and all(c[:1] == b"\x10" for c in connects)  # real CONNECT packets


async def test_a_connack_refusing_the_credentials_is_an_answer():
    server, address, _ = await _server(CONNACK_NOT_AUTHORISED)
    async with server:
        assert await probe_broker(address) is None


async def test_a_listener_that_never_answers_is_not_a_broker_after_patience():
    server, address, _ = await _server(None)
    async with server:
        problem = await probe_broker(address, timeout=0.2, patience=0.3, explain=False)
    assert problem is not None and problem.startswith("no MQTT broker answers")


async def test_a_listener_that_hangs_up_is_not_a_broker():
    server, address, _ = await _server(b"")
    async with server, asyncio.timeout(60):  # hung up: no wait for patience
        problem = await probe_broker(address, timeout=600, patience=600, explain=False)
    assert problem is not None and problem.startswith("no MQTT broker answers")


def test_over_tls_a_late_connack_is_an_answer_too(tmp_path, slow_resolver):
    """The TLS probe gave the handshake and the CONNACK ``timeout`` together; now the
    CONNACK after the handshake gets ``patience``, as on a plain port."""
    import ssl

    from ldpfleet.app.certs import write_test_certificates
    from ldpfleet.broker.tls import TlsSettings

    paths = write_test_certificates(tmp_path, ["127.0.0.1"])
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(paths["server"], paths["server_key"])

    async def probe():
        server, plain, connects = await _server(CONNACK_OK, delay=1.0, ssl_context=context)
        address = BrokerAddress(plain.host, plain.port, tls=TlsSettings(ca=str(paths["ca"])))
        async with server:
            return await probe_broker(address, timeout=0.2), connects

    problem, connects = VirtualTimeLoop.run(probe())
    assert problem is None
    assert connects and connects[0][:1] == b"\x10"
