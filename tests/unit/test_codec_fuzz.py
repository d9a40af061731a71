"""Property-based fuzzing of the codec (hypothesis), for EVERY message type it decodes.

The types come from ``codec.WIRE_TYPES`` (the decoder's own union), and the strategies are
derived from each type's msgspec fields and constraints (``msgspec.inspect``), so a new
message type is fuzzed without touching this file. Properties:

- round trip: a valid message encodes and decodes to an equal message;
- hostile bytes: arbitrary bytes, truncated or mutated valid payloads, wrong JSON types,
  huge numbers, NaN/inf, deep nesting, oversize payloads — ``decode`` raises only
  ``RemoteProtocolError`` with a field and a reason key from ``codec.DECODE_REASONS``.

``derandomize=True``: CI runs the same examples every time.
"""

from __future__ import annotations

import json
import math
import re

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ldpfleet.protocol import codec
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import SCHEMA_VERSION, GcdpRelease

EXAMPLES = 500
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TYPES = codec.WIRE_TYPES
IDS = [t.__struct_config__.tag for t in TYPES]
MAX_LIST = 4  # list lengths drawn (within the declared limits)
MAX_TEXT = 12
INT64 = (-(2**63), 2**63 - 1)
_IDENT_PATTERN = re.compile(r"^\^\[([^\]]+)\]\{(\d+),(\d+)\}(\\Z|\$)$")


# ---- strategies from msgspec type info ------------------------------------------------------


def _ints(info: msgspec.inspect.IntType) -> st.SearchStrategy[int]:
    low = info.ge if info.ge is not None else (info.gt + 1 if info.gt is not None else INT64[0])
    high = info.le if info.le is not None else (info.lt - 1 if info.lt is not None else INT64[1])
    return st.integers(low, high)


def _floats(info: msgspec.inspect.FloatType) -> st.SearchStrategy[float]:
    low = info.ge if info.ge is not None else info.gt
    high = info.le if info.le is not None else info.lt
    return st.floats(
        min_value=low,
        max_value=high,
        exclude_min=info.gt is not None,
        exclude_max=info.lt is not None,
        allow_nan=False,
        allow_infinity=False,
    )


def _text(info: msgspec.inspect.StrType) -> st.SearchStrategy[str]:
    if info.pattern is not None:
        match = _IDENT_PATTERN.match(info.pattern)
        if match:  # an identifier class: draw from the class directly (fast)
            alphabet = "".join(
                chr(c)
                for c in range(32, 127)
                if re.fullmatch(f"[{match.group(1)}]", chr(c)) is not None
            )
            low, high = int(match.group(2)), int(match.group(3))
            return st.text(alphabet, min_size=low, max_size=max(low, min(high, MAX_TEXT)))
        return st.from_regex(info.pattern, fullmatch=True)
    high = MAX_TEXT if info.max_length is None else min(info.max_length, MAX_TEXT)
    return st.text(min_size=info.min_length or 0, max_size=high)


def _sized(info) -> tuple[int, int]:
    low = info.min_length or 0
    high = low + MAX_LIST if info.max_length is None else min(info.max_length, low + MAX_LIST)
    return low, high


def strategy(info: msgspec.inspect.Type) -> st.SearchStrategy:
    """A strategy of valid values of a msgspec type (constraints respected)."""
    i = msgspec.inspect
    if isinstance(info, i.BoolType):
        return st.booleans()
    if isinstance(info, i.IntType):
        return _ints(info)
    if isinstance(info, i.FloatType):
        return _floats(info)
    if isinstance(info, i.StrType):
        return _text(info)
    if isinstance(info, i.BytesType):
        low, high = info.min_length or 0, info.max_length
        return st.binary(min_size=low, max_size=low + 64 if high is None else min(high, low + 64))
    if isinstance(info, i.LiteralType):
        return st.sampled_from(info.values)
    if isinstance(info, i.NoneType):
        return st.none()
    if isinstance(info, i.UnionType):
        return st.one_of([strategy(t) for t in info.types])
    if isinstance(info, i.ListType):
        low, high = _sized(info)
        return st.lists(strategy(info.item_type), min_size=low, max_size=high)
    if isinstance(info, i.TupleType):
        return st.tuples(*(strategy(t) for t in info.item_types))
    if isinstance(info, i.StructType):
        return _struct(info)
    raise NotImplementedError(f"no strategy for {info!r}: extend tests/unit/test_codec_fuzz.py")


def _fix(cls: type, kwargs: dict) -> dict:
    """Cross-field rules of ``__post_init__`` that independent draws rarely satisfy."""
    if "mechanism" in kwargs and "eps0" in kwargs:  # Hello, SwReport: eps0 = 0 iff raw
        if kwargs["mechanism"] == "raw":
            kwargs["eps0"] = 0.0
        elif not kwargs["eps0"] > 0:
            kwargs["eps0"] = 0.5
    if cls is GcdpRelease:  # one entry per value; edges i < j < d; budgets within eps_rel
        d = len(kwargs["values"])
        for name in ("budgets", "scales", "bounds", "nodes"):
            kwargs[name] = (kwargs[name] * (d // max(1, len(kwargs[name])) + 1))[:d] or None
            if kwargs[name] is None:
                kwargs[name] = {"budgets": [0.5], "scales": [1.0], "bounds": [1.0],
                                "nodes": ["n0"]}[name] * d  # fmt: skip
        kwargs["edges"] = [(min(a, b) % d, max(a, b) % d) for a, b in kwargs["edges"]]
        kwargs["edges"] = [(a, b) for a, b in kwargs["edges"] if a < b]
        kwargs["eps_rel"] = min(50.0, max(kwargs["eps_rel"], math.fsum(kwargs["budgets"]) * 1.01))
        if math.fsum(kwargs["budgets"]) > kwargs["eps_rel"]:
            kwargs["budgets"] = [kwargs["eps_rel"] / (2 * d)] * d
    return kwargs


def _struct(info: msgspec.inspect.StructType) -> st.SearchStrategy:
    fields = {f.name: strategy(f.type) for f in info.fields}
    if "v" in fields:
        fields["v"] = st.just(SCHEMA_VERSION)

    @st.composite
    def build(draw):
        kwargs = _fix(info.cls, {name: draw(s) for name, s in fields.items()})
        try:
            return info.cls(**kwargs)
        except (ValueError, TypeError):
            assume(False)

    return build()


STRATEGIES = {t: strategy(msgspec.inspect.type_info(t)) for t in TYPES}


def assert_refused_cleanly(payload: bytes) -> None:
    """``decode`` either accepts (a valid message) or raises exactly RemoteProtocolError."""
    try:
        message = codec.decode(payload)
    except RemoteProtocolError as error:
        assert error.field, error
        assert error.code in codec.DECODE_REASONS, (error.code, error)
        assert error.reason
    else:
        assert type(message) in TYPES


# ---- the enumeration itself ---------------------------------------------------------------


def test_every_message_class_of_the_protocol_is_fuzzed():
    """WIRE_TYPES is the decoder's union; every concrete Message subclass of every module in
    protocol/ is in it (a message the codec cannot decode would be a bug too)."""
    import importlib
    import pkgutil

    from ldpfleet.protocol.messages import Message

    from ldpfleet import protocol

    for module in pkgutil.walk_packages(protocol.__path__, "ldpfleet.protocol."):
        importlib.import_module(module.name)

    def leaves(cls: type) -> set[type]:
        subclasses = cls.__subclasses__()
        return {cls} if not subclasses else set().union(*(leaves(c) for c in subclasses))

    defined = {c for c in leaves(Message) if c.__module__.startswith("ldpfleet.protocol.")}
    assert defined <= set(TYPES), sorted(t.__name__ for t in defined - set(TYPES))
    assert len(TYPES) == len(set(IDS)) >= 35


# ---- (b) hostile payloads -------------------------------------------------------------------

JSON_JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
NASTY_TOKENS = [
    *(b"NaN", b"-Infinity", b"Infinity", b"1e999", b"-1e999", b"1" + b"0" * 400, b"-0"),
    *(b"1e-400", b"true", b"null", b'"\\ud800"', b"[]", b"{}", b'"x"', b"[" * 5000),
    *(b"9" * 30, b"-9223372036854775809", b"18446744073709551616"),
]


def mutate(draw, payload: bytes) -> bytes:
    """A valid payload, broken one way."""
    how = draw(st.sampled_from(["truncate", "flip", "insert", "field", "drop", "extra",
                                "token", "nest", "version", "tag"]))  # fmt: skip
    if how == "truncate":
        return payload[: draw(st.integers(0, max(0, len(payload) - 1)))]
    if how == "flip":
        index = draw(st.integers(0, len(payload) - 1))
        return payload[:index] + bytes([draw(st.integers(0, 255))]) + payload[index + 1 :]
    if how == "insert":
        index = draw(st.integers(0, len(payload)))
        return payload[:index] + draw(st.binary(min_size=1, max_size=8)) + payload[index:]
    body = json.loads(payload)
    names = sorted(k for k in body if k != "type") or ["type"]
    name = draw(st.sampled_from(names))
    if how == "field":  # a wrong JSON type or value, huge numbers included
        body[name] = draw(JSON_JUNK)
    elif how == "drop":
        body.pop(name, None)
    elif how == "extra":
        body[draw(st.text(min_size=1, max_size=8))] = draw(JSON_JUNK)
    elif how == "version":
        body["v"] = draw(st.integers(-5, 5) | st.integers(-(2**70), 2**70))
    elif how == "tag":
        body["type"] = draw(st.sampled_from([*IDS, "teleport", "", "HELLO"]) | st.text(max_size=8))
    elif how == "nest":
        depth = draw(st.integers(100, 3000))
        body[name] = json.loads("[" * min(depth, 900) + "]" * min(depth, 900))
        if depth > 900:  # beyond what json.dumps recurses: splice the text in directly
            text = json.dumps({k: v for k, v in body.items() if k != name})
            return (text[:-1] + f', "{name}": ' + "[" * depth + "]" * depth + "}").encode()
    text = json.dumps(body).encode()
    if how == "token":  # a literal JSON forbids or cannot hold, in place of a field's value
        token = draw(st.sampled_from(NASTY_TOKENS))
        body[name] = "@@TOKEN@@"
        text = json.dumps(body).encode().replace(b'"@@TOKEN@@"', token)
    return text


@pytest.mark.parametrize("message_type", TYPES, ids=IDS)
def test_round_trip_and_broken_payloads(message_type):
    """(a) a valid message round-trips; (b) the same payload broken one way (truncated,
    bytes flipped or inserted, a field with a wrong type / huge number / NaN / inf / deep
    nesting, a field dropped or added, a bad version or tag) raises only the declared
    error. One example checks both (500 per message type, fast enough for CI)."""

    @FUZZ
    @given(STRATEGIES[message_type], st.data())
    def check(message, data):
        payload = codec.encode(message)
        decoded = codec.decode(payload)
        assert type(decoded) is message_type
        assert decoded == message
        assert codec.encode(decoded) == payload
        assert_refused_cleanly(mutate(data.draw, payload))

    check()


@FUZZ
@given(st.binary(max_size=512) | JSON_JUNK.map(lambda x: json.dumps(x).encode()))
def test_arbitrary_bytes_and_json_raise_only_the_declared_error(payload):
    assert_refused_cleanly(payload)


@pytest.mark.parametrize("size", [codec.MAX_PAYLOAD + 1, 2 * codec.MAX_PAYLOAD])
def test_oversize_payloads_are_refused_before_parsing(size):
    valid = b'{"type":"ack","run":"r","sender":"collector"}'
    assert codec.decode(valid).type_name() == "ack"
    with pytest.raises(RemoteProtocolError) as caught:
        codec.decode(valid + b" " * (size - len(valid)))
    assert (caught.value.field, caught.value.code) == ("payload", "oversize")
    with pytest.raises(RemoteProtocolError) as caught:
        codec.decode(b"{}", max_size=1)
    assert caught.value.code == "oversize"


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b'{"type":"sw_report","values":[NaN]}', "non_finite"),
        (b'{"type":"ack","run":"r","sender":"s","seq":Infinity}', "non_finite"),
        (b'{"type":"ack","run":"r","sender":"s","seq":1e999}', "non_finite"),
        (b"[" * 100_000, "schema"),  # typed decoding: "expected an object" at once
        (b'{"type":"ack","run":' + b"[" * 100_000, "schema"),
        (b"\xff\xfe", "undecodable"),
        (b'{"type":"ack","run":"r","sender":"s","seq":-2}', "out_of_range"),
        (b'{"type":"teleport","run":"r","sender":"s"}', "schema"),
        (b'{"type":"ack","run":"r\\n","sender":"s"}', "schema"),  # trailing newline: no Ident
        (b'{"type":"ack","v":2,"run":"r","sender":"s"}', "unsupported_version"),
    ],
    ids=lambda value: value[:40].decode("latin-1") if isinstance(value, bytes) else value,
)
def test_reason_keys_of_typical_hostile_payloads(payload, code):
    """Each reason key is produced by what it names (results.json counts these)."""
    with pytest.raises(RemoteProtocolError) as caught:
        codec.decode(payload)
    assert caught.value.code == code
