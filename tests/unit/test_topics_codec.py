"""Tier-1 tests of the wire layer: topics (protocol/topics.py), messages and the codec
(protocol/messages.py, protocol/codec.py). Pure functions, no broker."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.messages import (
    MAX_BATCH,
    MAX_STEPS,
    SCHEMA_VERSION,
    Ack,
    Hello,
    Progress,
    Reject,
    Stage,
    SwReport,
)

IDENT_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
idents = st.text(alphabet=IDENT_CHARS, min_size=1, max_size=64)

# --- topics: build and parse ---------------------------------------------------------------


def test_up_topic_builds_and_parses():
    text = topics.up("run1", "dev-7", "sw_report")
    assert text == "ldp/run1/dev/dev-7/up/sw_report"
    parsed = topics.parse(text)
    assert parsed == topics.Topic("run1", "up", "sw_report", "dev-7", "collector")
    assert parsed.device == "dev-7"


def test_inbox_topic_builds_and_parses():
    text = topics.inbox("run1", "dev-7", "collector")
    assert text == "ldp/run1/dev/dev-7/in/collector"
    parsed = topics.parse(text)
    assert parsed == topics.Topic("run1", "in", "inbox", "collector", "dev-7")
    assert parsed.device == "dev-7"
    peer = topics.parse(topics.inbox("run1", "a", "b"))
    assert (peer.sender, peer.recipient, peer.device) == ("b", "a", "a")


@pytest.mark.parametrize("family", ["ctl", "rel"])
def test_broadcast_topics_build_and_parse(family):
    builder = getattr(topics, family)
    text = builder("run1", "stage")
    assert text == f"ldp/run1/{family}/stage"
    parsed = topics.parse(text)
    assert parsed == topics.Topic("run1", family, "stage", "collector", None)
    assert parsed.device is None


def test_parse_is_memoized_and_refusals_are_not():
    """``parse`` caches: the same string gives the same (immutable) ``Topic``, equal to a
    fresh parse; a refused topic raises every time (nothing cached for it)."""
    text = topics.inbox("run-memo", "a", "relay")
    first = topics.parse(text)
    assert topics.parse(text) is first
    assert first == topics.parse.__wrapped__(text) and first.text == text
    with pytest.raises(AttributeError):
        first.sender = "b"  # frozen: a cached Topic cannot be changed by one caller
    for _ in range(2):
        with pytest.raises(RemoteProtocolError):
            topics.parse("ldp/run-memo/dev/a/in/re lay")


def test_svc_topic_builds_and_parses():
    text = topics.svc("run1", "recorder", "progress")
    assert text == "ldp/run1/svc/recorder/progress"
    parsed = topics.parse(text)
    assert parsed == topics.Topic("run1", "svc", "progress", "recorder", None)
    assert parsed.device is None


@given(run=idents, a=idents, b=idents, kind=idents)
@settings(max_examples=200, deadline=None)
def test_every_built_topic_parses_back(run, a, b, kind):
    assert topics.parse(topics.up(run, a, kind)) == topics.Topic(run, "up", kind, a, "collector")
    assert topics.parse(topics.inbox(run, a, b)) == topics.Topic(run, "in", "inbox", b, a)
    assert topics.parse(topics.ctl(run, kind)) == topics.Topic(run, "ctl", kind, "collector", None)
    assert topics.parse(topics.rel(run, kind)) == topics.Topic(run, "rel", kind, "collector", None)
    assert topics.parse(topics.svc(run, a, kind)) == topics.Topic(run, "svc", kind, a, None)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ldp",
        "ldp/r",
        "ldp/r/ctl",
        "xyz/r/ctl/stage",
        "LDP/r/ctl/stage",
        "/ldp/r/ctl/stage",
        "ldp/r/ctl/stage/",
        "ldp//ctl/stage",
        "ldp/r/ctl/+",
        "ldp/r/ctl/#",
        "ldp/+/ctl/stage",
        "ldp/r/ctl/st age",
        "ldp/r/ctl/stagé",
        "ldp/r/ctl/" + "k" * 65,
        "ldp/r/ctl/stage/extra",
        "ldp/r/rel",
        "ldp/r/svc/collector",
        "ldp/r/svc/collector/reject/x",
        "ldp/r/dev/d/up",
        "ldp/r/dev/d/side/x",
        "ldp/r/dev/d/up/k/extra",
        "ldp/r/dev/d/in",
        "ldp/r/other/kind",
        "ldp/r/dev/d",
    ],
)
def test_parse_refuses_non_topics(text):
    with pytest.raises(RemoteProtocolError) as info:
        topics.parse(text)
    assert info.value.field == "topic"


def test_identifier_boundaries():
    assert topics.check_ident("a", "run") == "a"
    assert topics.check_ident("x" * 64, "run") == "x" * 64
    assert topics.check_ident("A-z_0.9", "device") == "A-z_0.9"
    topics.parse(topics.ctl("x" * 64, "k" * 64))


@pytest.mark.parametrize(
    "value", ["", "x" * 65, "a/b", "a+b", "#", "+", "é", "a b", "a\n", "$SYS", None, 5, b"ab"]
)
def test_identifier_refusals_name_the_field(value):
    with pytest.raises(ParameterError) as info:
        topics.check_ident(value, "device")
    assert info.value.field == "device"


# --- topics: MQTT filter semantics ---------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("a/b", "a/b", True),
        ("a/b", "a/c", False),
        ("a/b", "a/b/c", False),
        ("a/b/c", "a/b", False),
        ("a/+", "a/b", True),
        ("a/+", "a", False),
        ("a/+", "a/b/c", False),
        ("a/+", "a/", True),  # an empty level is a level
        ("+/+", "a", False),
        ("+/b", "a/b", True),
        ("a/+/c", "a/x/c", True),
        ("a/+/c", "a/x/d", False),
        ("a/#", "a", True),  # '#' also matches the parent level
        ("a/#", "a/b", True),
        ("a/#", "a/b/c/d", True),
        ("a/#", "b/a", False),
        ("a/b/#", "a", False),
        ("a/+/#", "a/b", True),
        ("a/+/#", "a", False),
        ("#", "a", True),
        ("#", "a/b/c", True),
        ("#", "/", True),
        ("+", "a", True),
        ("+", "a/b", False),
        ("#", "$SYS/broker/load", False),  # '$' topics are not matched by leading wildcards
        ("+/broker/load", "$SYS/broker/load", False),
        ("+/#", "$SYS/x", False),
        ("#", "$SYS", False),
        ("$SYS/#", "$SYS/broker/load", True),
        ("$SYS/+/load", "$SYS/broker/load", True),
        ("a/#", "a/$x", True),  # only the first level is special
    ],
)
def test_matches_follows_mqtt(pattern, topic, expected):
    assert topics.matches(pattern, topic) is expected


def test_subscription_filters_select_their_family():
    run = "r1"
    up = topics.up(run, "d1", "sw_report")
    inbox = topics.inbox(run, "d1", "collector")
    other_inbox = topics.inbox(run, "d2", "collector")
    ctl = topics.ctl(run, "stage")
    rel = topics.rel(run, "means")
    svc = topics.svc(run, "collector", "reject")
    other_run = topics.up("r2", "d1", "sw_report")
    every = [up, inbox, other_inbox, ctl, rel, svc, other_run]

    def selected(pattern):
        return {t for t in every if topics.matches(pattern, t)}

    assert selected(topics.all_of_run(run)) == set(every) - {other_run}
    assert selected(topics.all_up(run)) == {up}
    assert selected(topics.inbox_filter(run, "d1")) == {inbox}
    assert selected(topics.ctl_filter(run)) == {ctl}
    assert selected(topics.svc_filter(run)) == {svc}
    assert selected(topics.svc_filter(run, "recorder")) == set()
    assert selected(topics.svc_filter(run, "collector")) == {svc}


# --- codec: round trips --------------------------------------------------------------------

MESSAGES = [
    Hello(
        run="r1",
        sender="d1",
        mechanism="sw",
        eps=2.0,
        w=4,
        eps0=0.5,
        steps=23,
        batch_steps=5,
        lo=-10.5,
        hi=40.0,
    ),
    SwReport(
        run="r1",
        sender="d1",
        seq=3,
        t0=15,
        mechanism="sw01",
        eps0=0.25,
        w=8,
        values=[0.0, 1.0, 0.123456789012345, -0.0],
    ),
    Ack(run="r1", sender="collector"),
    Ack(run="r1", sender="collector", seq=7, credit=10),
    Reject(
        run="r1",
        sender="collector",
        seq=2,
        device="d1",
        topic="ldp/r1/dev/d1/up/sw_report",
        kind="sw_report",
        field="values[3]",
        reason="outside the domain",
    ),
    Stage(run="r1", sender="collector", stage="stream", state="closed", detail="done"),
    Stage(run="r1", sender="collector", stage="stream", state="open"),
    Progress(run="r1", sender="recorder", count=12345),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.type_name())
def test_every_message_round_trips(message):
    payload = codec.encode(message)
    assert isinstance(payload, bytes)
    obj = json.loads(payload)
    assert obj["type"] == message.type_name()
    assert obj["v"] == SCHEMA_VERSION
    decoded = codec.decode(payload)
    assert type(decoded) is type(message)
    assert decoded == message


def test_type_names_are_the_wire_tags():
    names = {m.type_name() for m in MESSAGES}
    assert names == {"hello", "sw_report", "ack", "reject", "stage", "progress"}


# --- codec: malformed input ----------------------------------------------------------------

VALID_REPORT = {
    "type": "sw_report",
    "v": 1,
    "run": "r1",
    "sender": "d1",
    "seq": 0,
    "t0": 0,
    "mechanism": "sw",
    "eps0": 0.5,
    "w": 4,
    "values": [0.1, 0.2, 0.3],
}
VALID_HELLO = json.loads(codec.encode(MESSAGES[0]))
VALID_ACK = {"type": "ack", "v": 1, "run": "r1", "sender": "collector", "seq": 1, "credit": 3}


def _raw(obj) -> bytes:
    return json.dumps(obj, allow_nan=True).encode()


def _with(base: dict, **changes) -> bytes:
    obj = dict(base)
    for key, value in changes.items():
        if value is _DELETE:
            del obj[key]
        else:
            obj[key] = value
    return _raw(obj)


_DELETE = object()


def _with_raw(base: dict, key: str, raw_json: str) -> bytes:
    """``base`` with ``key`` set to literal JSON text (numbers Python's json cannot write)."""
    obj = dict(base)
    obj[key] = "__RAW__"
    return _raw(obj).replace(b'"__RAW__"', raw_json.encode())


def test_valid_baselines_decode():
    # the malformed cases below differ from these in exactly one field
    assert isinstance(codec.decode(_raw(VALID_REPORT)), SwReport)
    assert isinstance(codec.decode(_raw(VALID_HELLO)), Hello)
    assert isinstance(codec.decode(_raw(VALID_ACK)), Ack)


BAD = [
    # NaN / null / overflowing numbers in values
    ("null-in-values", _with(VALID_REPORT, values=[0.1, None, 0.3]), "values[1]"),
    ("string-in-values", _with(VALID_REPORT, values=[0.1, 0.2, "x"]), "values[2]"),
    ("overflow-in-values", _with_raw(VALID_REPORT, "values", "[0.5, 1e999]"), "values[1]"),
    ("nan-in-values", _with(VALID_REPORT, values=[math.nan]), "payload"),  # NaN is not JSON
    ("empty-values", _with(VALID_REPORT, values=[]), "values"),
    ("too-many-values", _with(VALID_REPORT, values=[0.5] * (MAX_BATCH + 1)), "values"),
    ("values-not-list", _with(VALID_REPORT, values=0.5), "values"),
    # type tag
    ("unknown-tag", _with(VALID_REPORT, type="sw_reportx"), "type"),
    ("missing-tag", _with(VALID_REPORT, type=_DELETE), "type"),
    ("numeric-tag", _with(VALID_REPORT, type=3), "type"),
    # unknown / missing fields
    ("unknown-field", _with(VALID_REPORT, extra=1), "extra"),
    ("unknown-field-ack", _with(VALID_ACK, values=[1.0]), "values"),
    ("missing-values", _with(VALID_REPORT, values=_DELETE), "values"),
    ("missing-run", _with(VALID_REPORT, run=_DELETE), "run"),
    ("missing-sender", _with(VALID_ACK, sender=_DELETE), "sender"),
    ("missing-eps", _with(VALID_HELLO, eps=_DELETE), "eps"),
    # wrong types
    ("seq-as-string", _with(VALID_REPORT, seq="0"), "seq"),
    ("seq-as-float", _with(VALID_REPORT, seq=1.5), "seq"),
    ("seq-as-bool", _with(VALID_REPORT, seq=True), "seq"),
    ("eps0-as-string", _with(VALID_REPORT, eps0="0.5"), "eps0"),
    ("w-as-float", _with(VALID_REPORT, w=4.5), "w"),
    # any well-formed name decodes (plugins); the collector compares it with the run's
    ("mechanism-malformed", _with(VALID_REPORT, mechanism="not a name"), "mechanism"),
    ("mechanism-too-long", _with(VALID_REPORT, mechanism="m" * 121), "mechanism"),
    ("run-as-number", _with(VALID_REPORT, run=7), "run"),
    (
        "stage-state",
        _with({**VALID_ACK, "type": "stage"}, credit=_DELETE, seq=0, stage="s", state="half"),
        "state",
    ),
    # ranges
    ("seq-negative", _with(VALID_REPORT, seq=-1), "seq"),
    ("seq-too-big", _with(VALID_REPORT, seq=MAX_STEPS + 1), "seq"),
    ("t0-negative", _with(VALID_REPORT, t0=-1), "t0"),
    ("eps0-zero", _with(VALID_REPORT, eps0=0.0), "eps0"),
    ("eps0-negative", _with(VALID_REPORT, eps0=-0.5), "eps0"),
    ("eps0-too-big", _with(VALID_REPORT, eps0=50.000001), "eps0"),
    ("eps0-inf", _with(VALID_REPORT, eps0=math.inf), "payload"),  # Infinity is not JSON
    ("eps0-overflow", _with_raw(VALID_REPORT, "eps0", "1e999"), "eps0"),
    ("w-zero", _with(VALID_REPORT, w=0), "w"),
    ("w-too-big", _with(VALID_REPORT, w=100_001), "w"),
    ("ack-seq-below-minus-one", _with(VALID_ACK, seq=-2), "seq"),
    ("ack-credit-negative", _with(VALID_ACK, credit=-1), "credit"),
    ("hello-eps-zero", _with(VALID_HELLO, eps=0), "eps"),
    ("hello-steps-zero", _with(VALID_HELLO, steps=0), "steps"),
    ("hello-batch-too-big", _with(VALID_HELLO, batch_steps=MAX_BATCH + 1), "batch_steps"),
    ("hello-lo-overflow", _with_raw(VALID_HELLO, "lo", "-1e999"), "lo"),
    ("hello-hi-overflow", _with_raw(VALID_HELLO, "hi", "1e999"), "hi"),
    ("hello-lo-null", _with(VALID_HELLO, lo=None), "lo"),
    # identifiers
    ("run-slash", _with(VALID_REPORT, run="a/b"), "run"),
    ("run-empty", _with(VALID_REPORT, run=""), "run"),
    ("run-wildcard", _with(VALID_REPORT, run="#"), "run"),
    ("run-too-long", _with(VALID_REPORT, run="r" * 65), "run"),
    ("sender-plus", _with(VALID_REPORT, sender="+"), "sender"),
    ("sender-unicode", _with(VALID_REPORT, sender="dé"), "sender"),
    ("sender-space", _with(VALID_ACK, sender="col lector"), "sender"),
    # schema version
    ("v-two", _with(VALID_REPORT, v=2), "v"),
    ("v-zero", _with(VALID_REPORT, v=0), "v"),
    ("v-string", _with(VALID_REPORT, v="1"), "v"),
    ("v-bool", _with(VALID_REPORT, v=True), "v"),
    ("v-huge", _with(VALID_REPORT, v=10**30), "v"),
    # not JSON / not an object
    ("empty", b"", "payload"),
    ("truncated", _raw(VALID_REPORT)[:-1], "payload"),
    ("trailing-garbage", _raw(VALID_REPORT) + b" x", "payload"),
    ("not-utf8", b"\xff\xfe{}", "payload"),
    ("bare-word", b"hello", "payload"),
    ("array", b"[1, 2, 3]", "payload"),
    ("string", b'"sw_report"', "payload"),
    ("number", b"42", "payload"),
    ("null", b"null", "payload"),
    ("true", b"true", "payload"),
]


@pytest.mark.parametrize(("payload", "field"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_malformed_input_names_the_field(payload, field):
    with pytest.raises(RemoteProtocolError) as info:
        codec.decode(payload)
    assert info.value.field == field, info.value.reason


def test_oversize_payload_is_refused_before_parsing():
    # even a valid message is refused when it is over the limit: exactly at the limit passes
    payload = _raw(VALID_ACK)
    assert codec.decode(payload, max_size=len(payload)) == codec.decode(payload)
    with pytest.raises(RemoteProtocolError) as info:
        codec.decode(payload, max_size=len(payload) - 1)
    assert info.value.field == "payload"
    big = b" " * (codec.MAX_PAYLOAD + 1 - len(payload)) + payload
    assert len(big) == codec.MAX_PAYLOAD + 1
    with pytest.raises(RemoteProtocolError) as info:
        codec.decode(big)
    assert info.value.field == "payload"
    assert str(codec.MAX_PAYLOAD) in info.value.reason


def test_largest_legitimate_batch_fits_the_payload_limit():
    # MAX_BATCH values of the longest shortest-repr float of the SW output domain [-b, 1+b]
    # (a typical random batch of 4096 values is ~80 KB; this is the worst case)
    values = [-2.2250738585072014e-308] * MAX_BATCH
    report = SwReport(
        run="r" * 64,
        sender="d" * 64,
        seq=MAX_STEPS,
        t0=MAX_STEPS,
        mechanism="sw01",
        eps0=1.2345678901234567e-05,
        w=100_000,
        values=values,
    )
    payload = codec.encode(report)
    assert len(payload) > 100_000
    assert codec.decode(payload) == report


@pytest.mark.parametrize("depth", [2_000, 20_000])
def test_deep_nesting_is_a_remote_protocol_error(depth):
    # an unknown field before the tag makes msgspec buffer it; deep nesting there must not
    # escape as RecursionError (that would crash the collector's pump)
    nested = b"[" * depth + b"]" * depth
    payload = b'{"x":' + nested + b',"type":"ack","run":"r1","sender":"collector"}'
    assert len(payload) <= codec.MAX_PAYLOAD
    with pytest.raises(RemoteProtocolError) as info:
        codec.decode(payload)
    assert info.value.field in ("payload", "x")
    objects = b'{"a":' * depth + b"1" + b"}" * depth
    with pytest.raises(RemoteProtocolError):
        codec.decode(b'{"x":' + objects + b',"type":"ack","run":"r1","sender":"collector"}')


# --- codec: properties ---------------------------------------------------------------------


def _decode_or_refuse(payload: bytes) -> None:
    try:
        message = codec.decode(payload)
    except RemoteProtocolError as error:
        assert isinstance(error.field, str)
        assert error.field
    else:
        assert message.v == SCHEMA_VERSION


@given(st.binary(max_size=2_000))
@settings(max_examples=500, deadline=None)
def test_decode_of_arbitrary_bytes_raises_only_remote_protocol_error(payload):
    _decode_or_refuse(payload)


FIELD_NAMES = sorted(
    {name for m in MESSAGES for name in type(m).__struct_fields__} | {"type", "x", "values[0]", ""}
)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["sw", "sw01", "r1", "d1", "collector", "stream", "open", "closed"])
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
bases = st.sampled_from(
    [json.loads(codec.encode(m)) for m in MESSAGES] + [VALID_REPORT, VALID_ACK, {}]
)


@given(
    base=bases,
    overrides=st.dictionaries(
        st.sampled_from(FIELD_NAMES) | st.text(max_size=8), json_values, max_size=5
    ),
    drop=st.lists(st.sampled_from(FIELD_NAMES), max_size=3),
)
@settings(max_examples=500, deadline=None)
def test_decode_of_arbitrary_json_objects_raises_only_remote_protocol_error(base, overrides, drop):
    obj = {k: v for k, v in base.items() if k not in drop}
    obj.update(overrides)
    _decode_or_refuse(json.dumps(obj).encode())


@given(json_values)
@settings(max_examples=200, deadline=None)
def test_decode_of_arbitrary_json_values_raises_only_remote_protocol_error(value):
    _decode_or_refuse(json.dumps(value).encode())


finite = st.floats(allow_nan=False, allow_infinity=False)
epsilons = st.floats(min_value=0.0, max_value=50.0, exclude_min=True)
seqs = st.integers(min_value=0, max_value=MAX_STEPS)
windows = st.integers(min_value=1, max_value=100_000)
mechanisms = st.sampled_from(["sw", "sw01"])

reports = st.builds(
    SwReport,
    run=idents,
    sender=idents,
    seq=seqs,
    t0=seqs,
    mechanism=mechanisms,
    eps0=epsilons,
    w=windows,
    values=st.lists(finite, min_size=1, max_size=50),
)
acks = st.builds(
    Ack,
    run=idents,
    sender=idents,
    seq=st.integers(min_value=-1, max_value=MAX_STEPS),
    credit=st.integers(min_value=0, max_value=MAX_STEPS),
)
hellos = st.builds(
    Hello,
    run=idents,
    sender=idents,
    seq=seqs,
    mechanism=mechanisms,
    eps=epsilons,
    w=windows,
    eps0=epsilons,
    steps=st.integers(min_value=1, max_value=MAX_STEPS),
    batch_steps=st.integers(min_value=1, max_value=MAX_BATCH),
    lo=finite,
    hi=finite,
)


@given(reports | acks | hellos)
@settings(max_examples=500, deadline=None)
def test_valid_messages_round_trip(message):
    decoded = codec.decode(codec.encode(message))
    assert type(decoded) is type(message)
    assert decoded == message
    for name in type(message).__struct_fields__:
        got, want = getattr(decoded, name), getattr(message, name)
        if isinstance(want, float):
            assert math.copysign(1.0, got) == math.copysign(1.0, want)  # even -0.0 survives
