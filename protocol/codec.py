"""The one codec: bytes <-> typed messages, with size, schema and field validation.

``decode`` never lets a malformed payload through and never raises anything but
``RemoteProtocolError`` (whose ``field`` names the bad field). ``encode`` is msgspec JSON.
"""

from __future__ import annotations

import math
import re
from typing import Union

import msgspec

from protocol.cadr_messages import CADR_MESSAGES
from protocol.errors import RemoteProtocolError
from protocol.lpea import LPEA_CONTROL, LPEA_MESSAGES
from protocol.messages import SCHEMA_VERSION, AnyMessage, Message
from protocol.peer_relay import PEER_MESSAGES
from protocol.secagg.messages import SA_MESSAGES

# bytes. The largest legitimate messages are secure-aggregation masked vectors: 8 bytes per
# entry, base64 in JSON (x 4/3), so 2 MiB holds vectors of ~190,000 entries; a 4096-value SW
# batch is at most ~100 KiB.
MAX_PAYLOAD = 2 * 1024 * 1024

_encoder = msgspec.json.Encoder()
_PROTOCOL_MESSAGES = (*SA_MESSAGES, *LPEA_MESSAGES, *LPEA_CONTROL, *CADR_MESSAGES, *PEER_MESSAGES)
WireMessage = AnyMessage | Union[_PROTOCOL_MESSAGES]  # noqa: UP007 (a runtime union of a tuple)
_decoder = msgspec.json.Decoder(WireMessage)
_AT_PATH = re.compile(r"- at `\$\.?([^`]*)`")
_NAMED_FIELD = re.compile(r"field `([^`]*)`")


def encode(message: Message) -> bytes:
    """Serialise a message to JSON bytes."""
    return _encoder.encode(message)


def _field_of(error_text: str) -> str:
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
            f"{len(payload)} bytes exceeds the limit of {max_size}", field="payload"
        )
    try:
        message = _decoder.decode(payload)
    except msgspec.ValidationError as error:
        text = str(error)
        raise RemoteProtocolError(text, field=_field_of(text)) from None
    except msgspec.DecodeError as error:
        raise RemoteProtocolError(f"not valid JSON: {error}", field="payload") from None
    except RecursionError:
        raise RemoteProtocolError("JSON nested too deeply", field="payload") from None
    if message.v != SCHEMA_VERSION:
        raise RemoteProtocolError(
            f"schema version {message.v} is not supported (expected {SCHEMA_VERSION})", field="v"
        )
    for name in ("eps", "eps0", "eps_rel", "eps_cal", "lo", "hi", "value"):
        value = getattr(message, name, None)
        if value is not None and not math.isfinite(value):
            raise RemoteProtocolError(f"{value} is not finite", field=name)
    return message
