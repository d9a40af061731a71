"""The one codec: bytes <-> typed messages, with size, schema and field validation.

``decode`` never lets a malformed payload through and never raises anything but
``RemoteProtocolError`` (whose ``field`` names the bad field and whose ``code`` is one of
``DECODE_REASONS``). ``encode`` is msgspec JSON. Every message type the decoder accepts is
in ``WIRE_TYPES`` (the property-based tests enumerate it).

Reason keys (``code``): ``oversize`` (more than ``max_size`` bytes), ``undecodable`` (not
JSON, not UTF-8, nested too deeply), ``non_finite`` (a ``NaN``/``Infinity`` literal, or a
number that overflows float64 — JSON has no infinity, msgspec refuses both), ``out_of_range``
(a declared range or length limit), ``schema`` (unknown type tag, missing or unknown field,
wrong JSON type, identifier pattern), ``unsupported_version``.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import re
from typing import Union

import msgspec
from ldpfleet.protocol.bulk import BULK_MESSAGES
from ldpfleet.protocol.cadr_messages import CADR_MESSAGES
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.fleet_done import FLEET_MESSAGES
from ldpfleet.protocol.lpea import LPEA_CONTROL, LPEA_MESSAGES
from ldpfleet.protocol.messages import MAX_MECHANISM_NAME, SCHEMA_VERSION, AnyMessage, Message
from ldpfleet.protocol.partition import PARTITION_MESSAGES
from ldpfleet.protocol.peer_relay import PEER_MESSAGES
from ldpfleet.protocol.readiness import READINESS_MESSAGES
from ldpfleet.protocol.rendezvous import RENDEZVOUS_MESSAGES
from ldpfleet.protocol.secagg.messages import SA_MESSAGES

# bytes. The largest legitimate messages are secure-aggregation masked vectors: 8 bytes per
# entry, base64 in JSON (x 4/3), so 2 MiB holds vectors of ~190,000 entries; a 4096-value SW
# batch is at most ~100 KiB.
MAX_PAYLOAD = 2 * 1024 * 1024

_encoder = msgspec.json.Encoder()
_PROTOCOL_MESSAGES = (
    *SA_MESSAGES,
    *LPEA_MESSAGES,
    *LPEA_CONTROL,
    *CADR_MESSAGES,
    *PEER_MESSAGES,
    *RENDEZVOUS_MESSAGES,
    *READINESS_MESSAGES,
    *PARTITION_MESSAGES,
    *FLEET_MESSAGES,
    *BULK_MESSAGES,
)
WireMessage = AnyMessage | Union[_PROTOCOL_MESSAGES]  # noqa: UP007 (a runtime union of a tuple)
_decoder = msgspec.json.Decoder(WireMessage)
_AT_PATH = re.compile(r"- at `\$\.?([^`]*)`")
_NAMED_FIELD = re.compile(r"field `([^`]*)`")
# msgspec's constraint messages: "Expected `int` >= 0", "Expected `array` of length <= 4096";
# ``__post_init__`` checks say "must be ..." / "sums to more than ..."
_NON_FINITE = re.compile(rb"(?<![A-Za-z\"])-?(NaN|Infinity|inf)(?![A-Za-z\"])")
_RANGE = re.compile(r"Expected `[^`]*` (of length )?[<>]=? |must be |must have |needs |sums to ")
# fields whose pattern error deserves a sentence before msgspec's regex
_PATTERN_HINTS = {
    "mechanism": "a mechanism name is a built-in, 'package.module:Class' or an entry-point "
    "name: letters, digits, '_', '.', '-', at most one ':', at most "
    f"{MAX_MECHANISM_NAME} characters",
}
DECODE_REASONS = (
    "oversize",
    "undecodable",
    "non_finite",
    "out_of_range",
    "schema",
    "unsupported_version",
)


def _members(union: object) -> tuple[type[Message], ...]:
    args = getattr(union, "__args__", None)
    if args is None:
        return (union,)  # type: ignore[return-value]
    return tuple(t for arg in args for t in _members(arg))


WIRE_TYPES: tuple[type[Message], ...] = tuple(dict.fromkeys(_members(WireMessage)))
"""Every message type ``decode`` accepts, in union order (no duplicates)."""

WIRE_KINDS: frozenset[str] = frozenset(t.__struct_config__.tag for t in WIRE_TYPES)
"""Every message kind (payload ``type`` tag) ``decode`` accepts (``trace show --kind``)."""


def encode(message: Message) -> bytes:
    """Serialise a message to JSON bytes."""
    return _encoder.encode(message)


def message_digest(message: Message) -> str:
    """Hex SHA-256 of ``message``'s canonical encoding (encoded after one decode, so a
    message as built by its sender and as decoded by its receiver digest alike: an int
    given for a float field is encoded as that float). A final ``Reject`` carries the
    digest of the message it refused; the sender compares it with what it sent."""
    encoded = _encoder.encode(message)
    # a message that is not valid on the wire (built in memory, e.g. with inf) cannot have
    # been sent by anyone: its plain encoding names it
    with contextlib.suppress(msgspec.MsgspecError):
        encoded = _encoder.encode(_decoder.decode(encoded))
    return hashlib.sha256(encoded).hexdigest()


class _VersionOnly(msgspec.Struct):
    """Any JSON object's ``v`` (other fields ignored): read only when a payload failed."""

    v: int = SCHEMA_VERSION


_version_decoder = msgspec.json.Decoder(_VersionOnly)


def check_version(version: int) -> None:
    """``RemoteProtocolError`` (field ``v``, code ``unsupported_version``) unless
    ``version`` is ``SCHEMA_VERSION``: a decoded message's ``v`` (``decode`` and
    ``protocol.bulk.decode_bulk`` check every message)."""
    if version != SCHEMA_VERSION:
        raise RemoteProtocolError(
            f"schema version {version} is not supported (expected {SCHEMA_VERSION}): the "
            f"sender runs another ldpfleet release",
            field="v",
            code="unsupported_version",
        )


def refused_field(payload: bytes | str, error_text: str) -> str:
    """The field to name in the refusal of ``payload``, which msgspec's validation refused
    with ``error_text``: the one msgspec names (``seq``, ``w``...), ``type`` for an
    unknown tag, else ``payload``. A payload that says another schema version is refused
    for that reason instead (``check_version`` raises), whichever field differs. The one
    rule of ``decode`` and ``protocol.bulk.decode_bulk``."""
    try:
        version = _version_decoder.decode(payload).v
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        version = SCHEMA_VERSION  # no readable ``v``: the fields speak
    check_version(version)
    match = _AT_PATH.search(error_text) or _NAMED_FIELD.search(error_text)
    if match and match.group(1):
        return match.group(1)
    if "tag" in error_text.lower() or "`type`" in error_text:
        return "type"
    return "payload"


def decode(payload: bytes, *, max_size: int = MAX_PAYLOAD) -> Message:
    """Decode and validate one message; ``RemoteProtocolError`` on any problem."""
    if len(payload) > max_size:
        raise RemoteProtocolError(
            f"{len(payload)} bytes exceeds the limit of {max_size}",
            field="payload",
            code="oversize",
        )
    try:
        message = _decoder.decode(payload)
    except msgspec.ValidationError as error:
        text = str(error)
        field = refused_field(payload, text)  # another version's message: for that reason
        if text.startswith("Number out of range"):
            code = "non_finite"  # overflows float64: would be infinity
        elif _RANGE.search(text):
            code = "out_of_range"
        else:
            code = "schema"
        if field in _PATTERN_HINTS and "matching regex" in text:
            text = f"{_PATTERN_HINTS[field]} ({text})"
        raise RemoteProtocolError(text, field=field, code=code) from None
    except msgspec.DecodeError as error:
        raw = payload.encode() if isinstance(payload, str) else bytes(payload)
        code = "non_finite" if _NON_FINITE.search(raw) else "undecodable"
        raise RemoteProtocolError(f"not valid JSON: {error}", field="payload", code=code) from None
    except RecursionError:
        raise RemoteProtocolError(
            "JSON nested too deeply", field="payload", code="undecodable"
        ) from None
    check_version(message.v)
    for name in ("eps", "eps0", "eps_rel", "eps_cal", "lo", "hi", "value"):
        value = getattr(message, name, None)
        if isinstance(value, float) and not math.isfinite(value):
            raise RemoteProtocolError(f"{value} is not finite", field=name, code="non_finite")
    return message
