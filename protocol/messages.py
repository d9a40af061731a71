"""Every wire message of ldpfleet, as typed msgspec Structs in one tagged union.

Each message carries ``type`` (the tag), ``v`` (schema version), ``run``, ``sender`` and
``seq``. Structural limits (identifier shape, ranges, list lengths) are declared here with
``msgspec.Meta`` so decoding validates them; semantic checks that depend on the scenario
(the declared ε matches the collector's expectation, values inside the SW output domain)
live in the protocol machines. The wire format is JSON, readable in traces and with
``mosquitto_sub``.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

SCHEMA_VERSION = 1
MAX_BATCH = 4096  # values per report message
MAX_STEPS = 10_000_000

Ident = Annotated[str, Meta(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
Seq = Annotated[int, Meta(ge=0, le=MAX_STEPS)]
Epsilon = Annotated[float, Meta(gt=0.0, le=50.0)]
Window = Annotated[int, Meta(ge=1, le=100_000)]
Mechanism = Literal["sw", "sw01", "laplace"]
Reason = Annotated[str, Meta(max_length=500)]


class Message(
    msgspec.Struct, tag_field="type", forbid_unknown_fields=True, frozen=True, kw_only=True
):
    """Fields common to every message."""

    v: int = SCHEMA_VERSION
    run: Ident
    sender: Ident
    seq: Seq = 0

    def type_name(self) -> str:
        """The wire tag (``"sw_report"``, ``"ack"``, ...)."""
        return type(self).__struct_config__.tag


class Hello(Message, tag="hello", kw_only=True):
    """Device -> collector: I am here, and this is the stream I will report."""

    mechanism: Mechanism
    eps: Epsilon
    w: Window
    eps0: Epsilon
    steps: Annotated[int, Meta(ge=1, le=MAX_STEPS)]
    batch_steps: Annotated[int, Meta(ge=1, le=MAX_BATCH)]
    lo: float
    hi: float


class SwReport(Message, tag="sw_report", kw_only=True):
    """Device -> collector: Square Wave outputs for steps ``t0 .. t0+len(values)-1``.

    ``seq`` is the batch number (0, 1, ...); each value was privatised with ``mechanism``
    at ``eps0`` = ε/w, so any ``w`` consecutive steps spend ε (w-event LDP).
    """

    t0: Seq
    mechanism: Mechanism
    eps0: Epsilon
    w: Window
    values: Annotated[list[float], Meta(min_length=1, max_length=MAX_BATCH)]


class Ack(Message, tag="ack", kw_only=True):
    """Collector -> device inbox: reports up to ``seq`` are persisted (``seq`` = -1 before
    any); the device may send batches with number < ``credit`` (flow control)."""

    seq: Annotated[int, Meta(ge=-1, le=MAX_STEPS)] = -1
    credit: Annotated[int, Meta(ge=0, le=MAX_STEPS)] = 0


class Reject(Message, tag="reject", kw_only=True):
    """Collector -> service topic: a message was refused, with the field and the reason."""

    device: str
    topic: Annotated[str, Meta(max_length=300)]
    kind: Annotated[str, Meta(max_length=64)]
    field: Annotated[str, Meta(max_length=100)] = ""
    reason: Reason


class Stage(Message, tag="stage", kw_only=True):
    """Collector -> all devices: a stage opens or closes."""

    stage: Ident
    state: Literal["open", "closed"]
    detail: Reason = ""


class Progress(Message, tag="progress", kw_only=True):
    """A service's progress counter (the recorder's messages recorded, for flow control)."""

    count: Annotated[int, Meta(ge=0)]


AnyMessage = Hello | SwReport | Ack | Reject | Stage | Progress
