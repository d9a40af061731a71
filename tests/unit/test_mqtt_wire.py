"""The sans-I/O MQTT 3.1.1 codec: exact bytes, every split of a stream, malformed input."""

from __future__ import annotations

import pytest
from ldpfleet.broker.mqtt_wire import (
    PUBACK,
    PUBREL,
    UNSUBACK,
    Ack,
    Connack,
    MqttProtocolError,
    PacketReader,
    Pingresp,
    Publish,
    Suback,
    _remaining_length,
    encode_ack,
    encode_connect,
    encode_publish,
    encode_subscribe,
)


def test_connect_bytes_match_the_specification_layout():
    packet = encode_connect("d1", keepalive=60, username="u", password="p")
    assert packet == (
        b"\x10\x14"  # CONNECT, remaining length 20
        b"\x00\x04MQTT\x04"  # protocol name, level 4
        b"\xc2"  # user name + password + clean session
        b"\x00\x3c"  # keepalive 60
        b"\x00\x02d1\x00\x01u\x00\x01p"
    )
    persistent = encode_connect("d1", clean_session=False, keepalive=0)
    assert persistent[9] == 0x00 and persistent[10:12] == b"\x00\x00"


def test_connect_refuses_invalid_parameters():
    with pytest.raises(ValueError, match="password only with a user name"):
        encode_connect("d1", password="p")
    with pytest.raises(ValueError, match="keepalive 70000"):
        encode_connect("d1", keepalive=70_000)


@pytest.mark.parametrize(
    ("length", "encoded"),
    [
        (0, b"\x00"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (16_383, b"\xff\x7f"),
        (16_384, b"\x80\x80\x01"),
        (2_097_151, b"\xff\xff\x7f"),
        (2_097_152, b"\x80\x80\x80\x01"),
        (268_435_455, b"\xff\xff\xff\x7f"),
    ],
)
def test_remaining_length_at_every_varint_boundary(length, encoded):
    """The examples of section 2.2.3, both sides of every byte-count boundary."""
    assert _remaining_length(length) == encoded


def test_remaining_length_above_the_maximum_is_refused():
    with pytest.raises(ValueError, match="exceeds MQTT"):
        _remaining_length(268_435_456)


def test_publish_and_acks_bytes():
    assert encode_publish("a/b", b"xy") == b"\x30\x07\x00\x03a/bxy"
    assert encode_publish("a/b", b"xy", 1, 10) == b"\x32\x09\x00\x03a/b\x00\x0axy"
    assert encode_publish("t", b"", 1, 1, dup=True, retain=True)[0] == 0x3B
    assert encode_ack(PUBACK, 258) == b"\x40\x02\x01\x02"
    assert encode_ack(PUBREL, 1) == b"\x62\x02\x00\x01"  # PUBREL's flags are 0010
    with pytest.raises(ValueError, match="needs a packet id"):
        encode_publish("t", b"", 1)
    with pytest.raises(ValueError, match="qos 3"):
        encode_publish("t", b"", 3, 1)


def test_subscribe_puts_every_filter_in_one_packet():
    packet = encode_subscribe(7, [("a/+", 1), ("b/#", 0)])
    assert packet == b"\x82\x0e\x00\x07\x00\x03a/+\x01\x00\x03b/#\x00"
    with pytest.raises(ValueError, match="at least one"):
        encode_subscribe(1, [])


def broker_stream() -> tuple[bytes, list]:
    """Bytes a broker could send, and the packets they are."""
    big = bytes(range(256)) * 80  # 20,480 bytes: a three-byte remaining length
    packets = [
        Connack(True, 0),
        Suback(1, (1, 0x80)),
        Publish("devices/d1/ack", b"\x01\x02", 1, 5),
        Publish("t", big, 0, None, retain=True),
        Ack(PUBACK, 65_535),
        Ack(UNSUBACK, 3),
        Pingresp(),
        Publish("x", b"", 1, 6, dup=True),
    ]
    data = (
        b"\x20\x02\x01\x00"
        + b"\x90\x04\x00\x01\x01\x80"
        + encode_publish("devices/d1/ack", b"\x01\x02", 1, 5)
        + encode_publish("t", big, retain=True)
        + encode_ack(PUBACK, 65_535)
        + encode_ack(UNSUBACK, 3)
        + b"\xd0\x00"
        + encode_publish("x", b"", 1, 6, dup=True)
    )
    return data, packets


def test_reader_decodes_a_stream_fed_whole():
    data, packets = broker_stream()
    reader = PacketReader()
    assert reader.feed(data) == packets
    assert reader.buffered() == 0


def test_reader_decodes_the_same_whatever_the_split():
    """Every split point, and byte by byte: TCP may deliver any fragmentation."""
    data, packets = broker_stream()
    for cut in range(len(data) + 1):
        reader = PacketReader()
        assert reader.feed(data[:cut]) + reader.feed(data[cut:]) == packets, cut
    reader = PacketReader()
    assert [p for i in range(len(data)) for p in reader.feed(data[i : i + 1])] == packets


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x30\xff\xff\xff\xff\x01", "longer than four bytes"),
        (b"\x36\x05\x00\x01t\x00\x01", "QoS 3"),
        (b"\x10\x00", "packet type 1 is not one a broker sends"),
        (b"\x40\x03\x00\x01\x00", "2-byte body"),
        (b"\x20\x01\x00", "CONNACK must have a 2-byte body"),
        (b"\x90\x02\x00\x01", "SUBACK needs"),
        (b"\x32\x04\x00\x02ab", "topic and packet id"),
        (b"\x30\x03\x00\x05a", "shorter than its topic"),
        (b"\x30\x04\x00\x02\xff\xfe", "not UTF-8"),
    ],
)
def test_reader_names_what_is_malformed(data, message):
    with pytest.raises(MqttProtocolError, match=message):
        PacketReader().feed(data)


def test_reader_keeps_an_incomplete_length_for_the_next_feed():
    reader = PacketReader()
    header = b"\x30\x80"  # the length continues in the next byte
    assert reader.feed(header) == [] and reader.buffered() == 2
    body = b"\x00\x01t" + b"p" * 125
    assert reader.feed(b"\x01" + body) == [Publish("t", b"p" * 125, 0, None)]


def test_a_malformed_packet_keeps_the_valid_ones_before_it():
    with pytest.raises(MqttProtocolError) as bad:
        PacketReader().feed(b"\x20\x02\x00\x00" + b"\xd0\x00" + b"\x10\x00")
    assert bad.value.decoded == [Connack(False, 0), Pingresp()]


def test_keepalive_at_its_exact_boundaries():
    from ldpfleet.broker.mqtt_wire import keepalive_action

    k = 60.0
    assert keepalive_action(100.0, 100.0, 100.0, k) is None
    # a ping after keepalive / 2 of silence in either direction
    assert keepalive_action(129.999, 100.0, 100.0, k) is None
    assert keepalive_action(130.0, 100.0, 129.0, k) == "ping"  # nothing sent
    assert keepalive_action(130.0, 129.0, 100.0, k) == "ping"  # nothing received
    # dead only strictly beyond 1.5 x keepalive without a packet from the broker
    assert keepalive_action(190.0, 189.0, 100.0, k) == "ping"
    assert keepalive_action(190.001, 189.0, 100.0, k) == "dead"
