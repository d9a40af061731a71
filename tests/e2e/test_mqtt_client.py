"""The lean MQTT client (``broker.mqtt_client``) against real brokers and a misbehaving one.

Real brokers (embedded amqtt, Mosquitto): QoS 0/1 round trips in order, one SUBSCRIBE for
many filters, a lost broker failing waiting publishes at once and ending ``messages()``
with ``ConnectionLost`` after what was buffered. A fake broker (a bare asyncio server)
plays what real ones rarely do: malformed bytes, CONNACK refusals, silence (keepalive),
and a flood the client does not consume (reading pauses; nothing is lost).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

import pytest
from ldpfleet.broker.mqtt import MqttTransport
from ldpfleet.broker.mqtt_client import QUICKACK, ConnectRefused, open_connection
from ldpfleet.broker.mqtt_wire import (
    PUBACK,
    Ack,
    PacketReader,
    Publish,
    encode_ack,
    encode_publish,
)
from ldpfleet.broker.transport import ConnectionLost, ConnectionRefused, TransportError

from tests.conftest import MOSQUITTO, SESSION_SUFFIX, broker_for, free_port
from tests.mosquitto_process import MosquittoProcess

# client ids and topics of this test session on the shared Mosquitto (tests/conftest.py)
WIRE, UV = f"wire-test-{SESSION_SUFFIX}", f"wire-uv-{SESSION_SUFFIX}"


@pytest.fixture(params=["embedded", MOSQUITTO])
async def broker_url(request, embedded_url):
    return embedded_url if request.param == "embedded" else broker_for(request)


@pytest.mark.parametrize("client", ["wire", "aiomqtt"])
async def test_round_trip_in_order_at_qos_0_and_1(broker_url, client, monkeypatch):
    """Both clients ``MqttTransport`` can use (``LDPFLEET_MQTT_CLIENT``)."""
    monkeypatch.setenv("LDPFLEET_MQTT_CLIENT", client)
    transport = MqttTransport(broker_url)
    async with (
        transport.connect(f"{WIRE}-sub") as sub,
        transport.connect(f"{WIRE}-pub") as pub,
    ):
        await sub.subscribe(f"{WIRE}/a/#", f"{WIRE}/b")
        sent = [(f"{WIRE}/a/{i % 3}", i.to_bytes(4, "big")) for i in range(500)]
        await pub.publish_many(sent[:250])
        for topic, payload in sent[250:]:
            await pub.publish(topic, payload, qos=0)
        await pub.publish(f"{WIRE}/b", b"last")
        received = []
        async with contextlib.aclosing(sub.messages()) as deliveries:
            async for delivery in deliveries:
                received.append((delivery.topic, delivery.payload))
                if delivery.payload == b"last":
                    break
        # MQTT orders messages per QoS level only: Mosquitto sends QoS 0 ahead of QoS 1
        # ones queued behind its in-flight limit
        qos1 = [*sent[:250], (f"{WIRE}/b", b"last")]
        assert [m for m in received if m in qos1] == qos1
        assert [m for m in received if m not in qos1] == sent[250:]
        assert sub.pending() == 0
        assert type(sub).__name__ == {"wire": "WireConnection", "aiomqtt": "MqttConnection"}[client]


@pytest.mark.mosquitto
async def test_a_lost_broker_fails_publishes_at_once_and_ends_messages(tmp_path):
    port = free_port()
    conf = tmp_path / "mosquitto.conf"
    conf.write_text(
        f"listener {port} 127.0.0.1\nallow_anonymous true\nlog_dest stderr\nlog_type information\n"
    )
    async with MosquittoProcess(conf) as broker:
        conn = await open_connection("127.0.0.1", port, "wire-lost", keepalive=60)
        await conn.subscribe("lost/#")
        await conn.publish("lost/1", b"kept")
        deliveries = conn.messages()
        assert (await anext(deliveries)).payload == b"kept"
        await conn.publish("lost/2", b"buffered")
        while conn.pending() == 0:  # the broker's copy arrives after its PUBACK
            await asyncio.sleep(0)
        await broker.stop()
        await asyncio.wait_for(conn.wait_lost(), 60)
        with pytest.raises(ConnectionLost, match="wire-lost"):
            await conn.publish("lost/3", b"too late")
        assert (await anext(deliveries)).payload == b"buffered"  # what arrived is kept
        with pytest.raises(ConnectionLost):
            await anext(deliveries)


class FakeBroker:
    """An asyncio server that answers CONNECT with ``connack`` then runs ``script``."""

    def __init__(self, connack: bytes = b"\x20\x02\x00\x00", script=None) -> None:
        self.connack = connack
        self.script = script
        self.connects = 0
        self.received = bytearray()
        self.port = free_port()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.handlers.add(asyncio.current_task())
        self.connects += 1
        try:
            header = await reader.readexactly(2)  # CONNECT (under 128 bytes here)
            await reader.readexactly(header[1])
            writer.write(self.connack)
            await writer.drain()
            if self.script is not None:
                await self.script(reader, writer)
            self.received += await reader.read()  # until the client goes
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> FakeBroker:
        self.handlers: set[asyncio.Task] = set()
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc_info) -> None:
        self.server.close()
        for handler in self.handlers:
            handler.cancel()
        await asyncio.gather(*self.handlers, return_exceptions=True)


async def test_malformed_bytes_from_the_broker_end_the_connection():
    async def garbage(reader, writer):
        writer.write(b"\x10\x00")  # a CONNECT: never sent by a broker
        await writer.drain()

    async with FakeBroker(script=garbage) as fake:
        conn = await open_connection("127.0.0.1", fake.port, "wire-garbage")
        await asyncio.wait_for(conn.wait_lost(), 60)
        with pytest.raises(ConnectionLost, match="protocol error from broker: packet type 1"):
            await conn.publish("t", b"x")


async def test_credential_refusals_are_final_and_other_refusals_are_retried():
    async with FakeBroker(connack=b"\x20\x02\x00\x05") as fake:
        transport = MqttTransport(f"mqtt://127.0.0.1:{fake.port}", connect_attempts=3)
        with pytest.raises(ConnectionRefused, match="refused the connection"):
            async with transport.connect("wire-refused"):
                pass
        assert fake.connects == 1  # not retried
    async with FakeBroker(connack=b"\x20\x02\x00\x03") as fake:
        transport = MqttTransport(f"mqtt://127.0.0.1:{fake.port}", connect_attempts=3)
        with pytest.raises(TransportError, match=r"after 3 attempts: .*server unavailable"):
            async with transport.connect("wire-unavailable"):
                pass
        assert fake.connects == 3
    async with FakeBroker(connack=b"\x20\x02\x00\x02") as fake:
        with pytest.raises(ConnectRefused) as refused:
            await open_connection("127.0.0.1", fake.port, "wire-rejected")
        assert refused.value.return_code == 2


async def test_a_silent_broker_is_detected_by_the_keepalive():
    """keepalive 1 s: a PINGREQ after 0.5 s of silence, the connection declared lost once
    nothing has arrived for 1.5 s (the client's check runs every 0.5 s)."""

    async with FakeBroker() as fake:  # reads the PINGREQs, answers nothing
        conn = await open_connection("127.0.0.1", fake.port, "wire-silent", keepalive=1)
        await asyncio.wait_for(conn.wait_lost(), 60)
        with pytest.raises(ConnectionLost, match="keepalive"):
            await conn.publish("t", b"x")


async def test_publishing_works_while_a_flood_waits_unconsumed():
    """A consumer that publishes (the collector acknowledging reports) needs the PUBACKs
    behind every delivery it has not consumed yet: reading must go on (a client that
    paused reading at 10,000 buffered deliveries deadlocked a 100,000-device run)."""
    count = 50_000
    flood = b"".join(encode_publish("f", i.to_bytes(4, "big")) for i in range(count))

    async def flood_then_acknowledge(reader, writer):
        writer.write(flood)
        await writer.drain()
        header = await reader.readexactly(2)  # the client's QoS 1 PUBLISH ...
        body = await reader.readexactly(header[1])
        writer.write(b"\x40\x02" + body[5:7])  # ... acknowledged (topic "ack", then its id)

    async with FakeBroker(script=flood_then_acknowledge) as fake:
        conn = await open_connection("127.0.0.1", fake.port, "wire-flood")

        async def all_buffered() -> None:
            while conn.pending() < count:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(all_buffered(), 60)
        await asyncio.wait_for(conn.publish("ack", b"!"), 60)
        got = []
        async for delivery in conn.messages():
            got.append(int.from_bytes(delivery.payload, "big"))
            if len(got) == count:
                break
        assert got == list(range(count))
        await conn.close()


@pytest.mark.mosquitto
def test_round_trip_on_uvloop(mosquitto_url):
    """``ldpfleet`` commands run on uvloop when installed (scenarios/loop.py): its
    transports are not ``asyncio.Transport`` subclasses, and the client must not care."""
    import uvloop

    async def round_trip() -> list[bytes]:
        transport = MqttTransport(mosquitto_url)
        async with transport.connect(f"{UV}-sub") as sub, transport.connect(f"{UV}-pub") as pub:
            await sub.subscribe(f"{UV}/#")
            await pub.publish_many([(f"{UV}/x", bytes([i])) for i in range(100)])
            stream = sub.messages()
            return [(await anext(stream)).payload for _ in range(100)]

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(round_trip()) == [bytes([i]) for i in range(100)]


def test_an_unknown_client_name_is_refused(monkeypatch):
    from ldpfleet.broker.mqtt import BrokerUrlError, mqtt_client_name

    monkeypatch.setenv("LDPFLEET_MQTT_CLIENT", "paho")
    with pytest.raises(
        BrokerUrlError, match="LDPFLEET_MQTT_CLIENT='paho' must be 'wire' or 'aiomqtt'"
    ):
        mqtt_client_name()


async def test_publishers_wait_while_the_broker_does_not_read():
    """Flow control on the way out: when the socket's write buffer fills (a broker that
    stops reading), publishers wait instead of buffering without bound, and go on once
    the broker reads again."""
    reading, all_read = asyncio.Event(), asyncio.Event()
    total = 64 * 1024 * 1024
    got = 0

    async def read_late(reader, writer):
        nonlocal got
        await reading.wait()
        while got < total:
            chunk = await reader.read(1 << 20)
            if not chunk:
                break
            got += len(chunk)
        all_read.set()

    async with FakeBroker(script=read_late) as fake:
        conn = await open_connection("127.0.0.1", fake.port, "wire-backpressure")
        payload = bytes(1 << 20)

        async def publish_all() -> None:
            for _ in range(64):
                await conn.publish("big", payload, qos=0)

        publisher = asyncio.create_task(publish_all())

        async def paused() -> None:
            while conn._writable.is_set():
                await asyncio.sleep(0.01)

        await asyncio.wait_for(paused(), 60)
        assert not publisher.done()
        # asyncio's high-water mark is 64 KiB: what waits in the buffer is a few payloads
        assert conn._transport.get_write_buffer_size() < 8 * len(payload)
        reading.set()
        await asyncio.wait_for(publisher, 30)
        await asyncio.wait_for(all_read.wait(), 30)
        await conn.close()
    assert got >= total  # everything arrived (the 64 PUBLISH headers on top)


async def test_a_freed_window_slot_goes_to_the_first_waiting_publisher(monkeypatch):
    """Window of 2: a1 and a2 in flight, a3 waits. When a1's PUBACK arrives, the slot is
    a3's even if another publish (b1) starts before a3's task runs — the order on the
    wire stays a1, a2, a3, b1 (a newcomer used to take the freed slot first)."""
    monkeypatch.setattr("ldpfleet.broker.mqtt_client.WINDOW", 2)
    seen: list[bytes] = []

    async def record(reader, writer):
        packets = PacketReader()  # client PUBLISHes have the broker's layout
        while data := await reader.read(4096):
            seen.extend(p.payload for p in packets.feed(data) if isinstance(p, Publish))

    async def until(count: int) -> None:
        while len(seen) < count:
            await asyncio.sleep(0.005)

    async with FakeBroker(script=record) as fake:
        conn = await open_connection("127.0.0.1", fake.port, "wire-fifo")
        first = asyncio.create_task(conn.publish_many([("t", b"a1"), ("t", b"a2"), ("t", b"a3")]))
        await asyncio.wait_for(until(2), 60)

        async def broker_answers() -> list[bytes]:
            await until(3)
            order = list(seen)
            conn._on_ack(Ack(PUBACK, 2))
            await until(4)
            for packet_id in (3, 4):
                conn._on_ack(Ack(PUBACK, packet_id))
            return order

        answers = asyncio.create_task(broker_answers())
        conn._on_ack(Ack(PUBACK, 1))  # a1 acknowledged: a3's waiter is woken ...
        async with asyncio.timeout(60):  # (no task: b1 starts before a3's task runs)
            await conn.publish("t", b"b1")
            assert await answers == [b"a1", b"a2", b"a3"]
            await first
        assert seen == [b"a1", b"a2", b"a3", b"b1"]
        assert conn._in_flight == 0
        await conn.close()


def _question_when(go: asyncio.Event):
    """A FakeBroker script: once ``go`` is set, one QoS 1 PUBLISH ("in", b"question", id 7)."""

    async def deliver(reader, writer):
        await go.wait()
        writer.write(encode_publish("in", b"question", 1, 7))
        await writer.drain()

    return deliver


async def test_the_puback_and_the_readers_answer_leave_in_one_write():
    """A QoS 1 delivery's PUBACK is queued after the reader is woken, so what the reader
    publishes in answer in its step goes out in the same ``transport.write`` (one send()
    per delivery answered, not two), PUBACK first."""
    go = asyncio.Event()
    deliver = _question_when(go)

    async with FakeBroker(script=deliver) as fake:
        conn = await open_connection("127.0.0.1", fake.port, "wire-coalesce")
        writes: list[bytes] = []
        write = conn._transport.write
        conn._transport.write = lambda data: (writes.append(bytes(data)), write(data))[1]

        async def answer() -> None:
            async for delivery in conn.messages():
                assert delivery.payload == b"question"
                await conn.publish("out", b"answer", qos=0)
                return

        reader = asyncio.create_task(answer())
        while conn._inbox_waiter is None:  # the reader waits before the delivery comes
            await asyncio.sleep(0)
        go.set()
        await asyncio.wait_for(reader, 60)
        await asyncio.sleep(0)  # the scheduled flush
        await conn.close()
    puback = encode_ack(PUBACK, 7)
    answered = encode_publish("out", b"answer", 0)
    assert [w for w in writes if puback in w] == [puback + answered]


@pytest.mark.skipif(QUICKACK is None, reason="the OS has no TCP_QUICKACK")
async def test_every_read_asks_the_kernel_to_acknowledge_at_once():
    """``TCP_QUICKACK`` is set again after every read (the kernel clears it): Mosquitto's
    Nagle otherwise holds its next small packet until our 40 ms delayed ACK
    (``broker.mqtt_client.QUICKACK``; docs/cadr.md). The bytes received are unchanged."""
    go = asyncio.Event()
    deliver = _question_when(go)

    async with FakeBroker(script=deliver) as fake:
        conn = await open_connection("127.0.0.1", fake.port, "wire-quickack")
        assert conn._quickack is not None  # set on the real socket at connect
        calls: list[tuple] = []

        class Recorder:
            def setsockopt(self, *args) -> None:
                calls.append(args)

        conn._quickack = Recorder()
        go.set()
        delivery = await asyncio.wait_for(anext(conn.messages()), 60)
        assert delivery.payload == b"question"
        assert (socket.IPPROTO_TCP, QUICKACK, 1) in calls
        await conn.close()
