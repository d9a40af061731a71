"""MQTT 3.1.1 packets as bytes and back: a sans-I/O codec for ``broker.mqtt_client``.

Theory of operation. An MQTT control packet is a fixed header (type in the high nibble of
the first byte, flags in the low nibble, then the remaining length as a base-128 varint of
1-4 bytes) followed by that many bytes (OASIS MQTT 3.1.1, section 2.2). ``encode_*``
build the packets a client sends; ``PacketReader.feed`` takes whatever bytes arrived and
returns the complete packets among them, keeping a partial one for the next call. Nothing
here does I/O or keeps time, so it is tested by feeding bytes directly, split anywhere.

Only what a client of this framework needs: CONNECT/CONNACK, PUBLISH at QoS 0-2 with
PUBACK (and the QoS 2 handshake a broker could start), SUBSCRIBE/SUBACK, PINGREQ/PINGRESP
and DISCONNECT. A packet a client must never receive, or a malformed one, raises
``MqttProtocolError`` (the broker broke the protocol; the connection is closed).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

CONNECT, CONNACK, PUBLISH, PUBACK, PUBREC, PUBREL, PUBCOMP = 1, 2, 3, 4, 5, 6, 7
SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK, PINGREQ, PINGRESP, DISCONNECT = range(8, 15)

MAX_REMAINING_LENGTH = 268_435_455  # four varint bytes (section 2.2.3)
MAX_PACKET_ID = 65_535

PINGREQ_PACKET = bytes((PINGREQ << 4, 0))
DISCONNECT_PACKET = bytes((DISCONNECT << 4, 0))

# CONNACK return codes (section 3.2.2.3)
CONNACK_REASONS = {
    1: "unacceptable protocol version",
    2: "identifier rejected",
    3: "server unavailable",
    4: "bad user name or password",
    5: "not authorised",
}

# CONNACK codes that refuse the login itself (3.1.1: 4 bad user name or password, 5 not
# authorised; MQTT 5's 0x86 and 0x87): another attempt with the same login won't help
CREDENTIAL_REFUSALS = frozenset((4, 5, 0x86, 0x87))
SUBACK_FAILURE = 0x80  # a SUBACK return code from this value refuses the filter

_U16 = struct.Struct("!H")


class MqttProtocolError(ValueError):
    """Bytes from the peer that break MQTT 3.1.1 (says which packet and what is wrong).
    ``decoded``: the valid packets that arrived before the bad one."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.decoded: list[Packet] = []


@dataclass(frozen=True, slots=True)
class Connack:
    session_present: bool
    return_code: int


@dataclass(frozen=True, slots=True)
class Publish:
    topic: str
    payload: bytes
    qos: int
    packet_id: int | None
    dup: bool = False
    retain: bool = False


@dataclass(frozen=True, slots=True)
class Ack:
    """PUBACK, PUBREC, PUBREL, PUBCOMP or UNSUBACK: a packet type and a packet id."""

    kind: int
    packet_id: int


@dataclass(frozen=True, slots=True)
class Suback:
    packet_id: int
    return_codes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Pingresp:
    pass


Packet = Connack | Publish | Ack | Suback | Pingresp


def _remaining_length(n: int) -> bytes:
    if not 0 <= n <= MAX_REMAINING_LENGTH:
        raise ValueError(f"packet body of {n} bytes exceeds MQTT's {MAX_REMAINING_LENGTH}")
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | 0x80 if n else byte)
        if not n:
            return bytes(out)


def _string(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    if len(data) > MAX_PACKET_ID:
        raise ValueError(f"MQTT string of {len(data)} bytes exceeds 65,535")
    return _U16.pack(len(data)) + data


def _packet(first_byte: int, body: bytes) -> bytes:
    return bytes((first_byte,)) + _remaining_length(len(body)) + body


def encode_connect(
    client_id: str,
    *,
    clean_session: bool = True,
    keepalive: int = 60,
    username: str | None = None,
    password: str | None = None,
) -> bytes:
    """CONNECT (section 3.1), protocol level 4 (MQTT 3.1.1)."""
    if not 0 <= keepalive <= MAX_PACKET_ID:
        raise ValueError(f"keepalive {keepalive} must be 0-65535 seconds")
    if password is not None and username is None:
        raise ValueError("MQTT 3.1.1 allows a password only with a user name")
    flags = 0x02 if clean_session else 0
    payload = _string(client_id)
    if username is not None:
        flags |= 0x80
        payload += _string(username)
    if password is not None:
        flags |= 0x40
        payload += _string(password)
    header = _string("MQTT") + bytes((4, flags)) + _U16.pack(keepalive)
    return _packet(CONNECT << 4, header + payload)


def encode_publish(
    topic: str,
    payload: bytes,
    qos: int = 0,
    packet_id: int | None = None,
    *,
    dup: bool = False,
    retain: bool = False,
) -> bytes:
    """PUBLISH (section 3.3); ``packet_id`` is required for QoS 1 and 2."""
    if qos not in (0, 1, 2):
        raise ValueError(f"qos {qos} must be 0, 1 or 2")
    first = PUBLISH << 4 | qos << 1 | (0x08 if dup else 0) | (0x01 if retain else 0)
    body = _string(topic)
    if qos:
        if packet_id is None or not 1 <= packet_id <= MAX_PACKET_ID:
            raise ValueError(f"QoS {qos} PUBLISH needs a packet id 1-65535, got {packet_id}")
        body += _U16.pack(packet_id)
    return _packet(first, body + payload)


def encode_ack(kind: int, packet_id: int) -> bytes:
    """PUBACK, PUBREC, PUBREL (flags 0010) or PUBCOMP for ``packet_id``."""
    return bytes((kind << 4 | (0x02 if kind == PUBREL else 0), 2)) + _U16.pack(packet_id)


def encode_subscribe(packet_id: int, filters: Iterable[tuple[str, int]]) -> bytes:
    """SUBSCRIBE (section 3.8): one packet for all (filter, max QoS) pairs."""
    body = _U16.pack(packet_id)
    count = 0
    for pattern, qos in filters:
        body += _string(pattern) + bytes((qos,))
        count += 1
    if not count:
        raise ValueError("SUBSCRIBE needs at least one topic filter")
    return _packet(SUBSCRIBE << 4 | 0x02, body)


def keepalive_action(
    now: float, last_sent: float, last_received: float, keepalive: float
) -> str | None:
    """What a client's keepalive check (run every ``keepalive / 2`` seconds) does:
    ``"dead"`` when nothing has arrived for more than 1.5 × keepalive (the limit a broker
    applies to its clients, section 3.1.2.10), ``"ping"`` (PINGREQ) when nothing was sent
    or nothing arrived for keepalive / 2 — the broker's PINGRESP then proves it alive
    even to a client that only publishes at QoS 0 — else None."""
    if now - last_received > 1.5 * keepalive:
        return "dead"
    if now - last_sent >= keepalive / 2 or now - last_received >= keepalive / 2:
        return "ping"
    return None


class PacketReader:
    """Incremental decoder of the packets a client receives."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def buffered(self) -> int:
        """Bytes of an incomplete packet waiting for the rest."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Packet]:
        """Every complete packet in what has arrived so far, in order."""
        buffer = self._buffer
        buffer += data
        packets: list[Packet] = []
        position, end = 0, len(buffer)
        try:
            while end - position >= 2:
                first = buffer[position]
                length, index, header_done = 0, position + 1, False
                for count in range(4):
                    if index >= end:
                        break
                    byte = buffer[index]
                    index += 1
                    length |= (byte & 0x7F) << (7 * count)
                    if not byte & 0x80:
                        header_done = True
                        break
                if not header_done:
                    if index - position > 4:
                        raise MqttProtocolError("remaining length longer than four bytes")
                    break  # the length itself is incomplete
                if index + length > end:
                    break  # the body is incomplete
                packets.append(_decode(first, bytes(buffer[index : index + length])))
                position = index + length
        except MqttProtocolError as error:
            error.decoded = packets  # the valid packets before the bad one
            raise
        if position:
            del buffer[:position]
        return packets


def _decode(first: int, body: bytes) -> Packet:
    kind, flags = first >> 4, first & 0x0F
    if kind == PUBLISH:
        qos = (flags >> 1) & 0x03
        if qos == 3:
            raise MqttProtocolError("PUBLISH with QoS 3")
        if len(body) < 2:
            raise MqttProtocolError("PUBLISH shorter than its topic length")
        (topic_length,) = _U16.unpack_from(body)
        start = 2 + topic_length
        if qos:
            if len(body) < start + 2:
                raise MqttProtocolError("PUBLISH shorter than its topic and packet id")
            (packet_id,) = _U16.unpack_from(body, start)
            payload_start = start + 2
        else:
            if len(body) < start:
                raise MqttProtocolError("PUBLISH shorter than its topic")
            packet_id, payload_start = None, start
        try:
            topic = body[2:start].decode()
        except UnicodeDecodeError as error:
            raise MqttProtocolError(f"PUBLISH topic is not UTF-8: {error}") from None
        return Publish(
            topic, body[payload_start:], qos, packet_id, bool(flags & 0x08), bool(flags & 0x01)
        )
    if kind in (PUBACK, PUBREC, PUBREL, PUBCOMP, UNSUBACK):
        if len(body) != 2:
            raise MqttProtocolError(f"packet type {kind} must have a 2-byte body")
        return Ack(kind, _U16.unpack(body)[0])
    if kind == CONNACK:
        if len(body) != 2:
            raise MqttProtocolError("CONNACK must have a 2-byte body")
        return Connack(bool(body[0] & 0x01), body[1])
    if kind == SUBACK:
        if len(body) < 3:
            raise MqttProtocolError("SUBACK needs a packet id and a return code")
        return Suback(_U16.unpack_from(body)[0], tuple(body[2:]))
    if kind == PINGRESP:
        return Pingresp()
    raise MqttProtocolError(f"packet type {kind} is not one a broker sends to a client")
