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

# \Z, not $: "$" also matches before a trailing newline (found by fuzzing the codec)
Ident = Annotated[str, Meta(pattern=r"^[A-Za-z0-9_.-]{1,64}\Z")]
Seq = Annotated[int, Meta(ge=0, le=MAX_STEPS)]
Epsilon = Annotated[float, Meta(gt=0.0, le=50.0)]
Window = Annotated[int, Meta(ge=1, le=100_000)]
# A stream budget: > 0 for the LDP mechanisms; exactly 0 only for ``raw`` reports (central
# model, nothing spent on the device), which the stream machines check against the run.
StreamEpsilon = Annotated[float, Meta(ge=0.0, le=50.0)]
# A stream mechanism's name (``protocol.mechanisms``: a built-in, "package.module:Class" or an
# entry point); the collector compares it with the run's. A module path or entry-point name,
# then optionally ":" and a (dotted) attribute; the pattern bounds the length (80 + 1 + 39).
MECHANISM_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,79}(:[A-Za-z_][A-Za-z0-9_.]{0,38})?\Z"
MAX_MECHANISM_NAME = 120
Mechanism = Annotated[str, Meta(pattern=MECHANISM_NAME_PATTERN, max_length=MAX_MECHANISM_NAME)]
MAX_RELEASE = 4096  # coordinates of one central release
Reason = Annotated[str, Meta(max_length=500)]
# ``codec.message_digest``: hex SHA-256 of a message's canonical encoding, or "" (none)
Digest = Annotated[str, Meta(pattern=r"^([0-9a-f]{64})?\Z")]


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


def _check_eps0(mechanism: str, eps0: float) -> None:
    """``eps0`` is 0 exactly for ``raw`` reports (nothing spent on the device)."""
    if mechanism == "raw" and eps0 != 0.0:
        raise ValueError(f"field `eps0` must be 0 for a raw report (nothing is spent), got {eps0}")
    if mechanism != "raw" and not eps0 > 0.0:
        raise ValueError(f"field `eps0` must be > 0 for mechanism {mechanism!r}, got {eps0}")


class Hello(Message, tag="hello", kw_only=True):
    """Device -> collector: I am here, and this is the stream I will report.

    For ``raw`` (central model) ``eps0 = 0`` (nothing spent on the device) and ``eps`` /
    ``w`` declare the collector's central release budget and window."""

    mechanism: Mechanism
    eps: Epsilon
    w: Window
    eps0: StreamEpsilon
    steps: Annotated[int, Meta(ge=1, le=MAX_STEPS)]
    batch_steps: Annotated[int, Meta(ge=1, le=MAX_BATCH)]
    lo: float
    hi: float

    def __post_init__(self) -> None:
        _check_eps0(self.mechanism, self.eps0)


class SwReport(Message, tag="sw_report", kw_only=True):
    """Device -> collector: Square Wave outputs for steps ``t0 .. t0+len(values)-1``.

    ``seq`` is the batch number (0, 1, ...); each value was privatised with ``mechanism``
    at ``eps0`` = ε/w, so any ``w`` consecutive steps spend ε (w-event LDP). A ``raw``
    report (central model) carries clipped readings in [0, 1] in the clear with ``eps0 = 0``:
    the device spent nothing; the collector's central release is accounted in its ledger.
    """

    t0: Seq
    mechanism: Mechanism
    eps0: StreamEpsilon
    w: Window
    values: Annotated[list[float], Meta(min_length=1, max_length=MAX_BATCH)]

    def __post_init__(self) -> None:
        _check_eps0(self.mechanism, self.eps0)


class Ack(Message, tag="ack", kw_only=True):
    """Collector -> device inbox: reports up to ``seq`` are persisted (``seq`` = -1 before
    any); the device may send batches with number < ``credit`` (flow control)."""

    seq: Annotated[int, Meta(ge=-1, le=MAX_STEPS)] = -1
    credit: Annotated[int, Meta(ge=0, le=MAX_STEPS)] = 0


class Reject(Message, tag="reject", kw_only=True):
    """Collector -> service topic: a message was refused, with the field and the reason.

    ``seq`` numbers the collector's rejections. A rejection that no retransmission can
    change (``protocol.events.FINAL_REASONS``) of a message on a device's own topic also
    goes to that device's inbox, naming the message: its ``message_seq`` and ``digest``
    (``codec.message_digest`` of the message as the collector decoded it). The device acts
    on it only when both name a message it sent (``protocol.stream``, "Rejections")."""

    device: str
    topic: Annotated[str, Meta(max_length=300)]
    kind: Annotated[str, Meta(max_length=64)]
    field: Annotated[str, Meta(max_length=100)] = ""
    reason: Reason
    # the stable reason key (``rejections_by_reason``); absent in traces before it existed
    code: Annotated[str, Meta(max_length=32)] = ""
    # the refused message's own seq and digest (-1 / "" when it could not be decoded)
    message_seq: Annotated[int, Meta(ge=-1, le=MAX_STEPS)] = -1
    digest: Digest = ""


class Stage(Message, tag="stage", kw_only=True):
    """Collector -> all devices: a stage opens or closes."""

    stage: Ident
    state: Literal["open", "closed"]
    detail: Reason = ""


class Progress(Message, tag="progress", kw_only=True):
    """A service's progress counter (the recorder's messages recorded, for flow control)."""

    count: Annotated[int, Meta(ge=0)]


class BudgetRefused(Message, tag="budget_refused", kw_only=True):
    """Device -> collector (``up/budget_refused``): a request would make me overspend my
    ledger, so I refuse it; nothing was privatised or released for it and my ledger is
    unchanged (its ``refusals`` counter aside).

    ``request`` names what asked for the spend (``"sw_report"``: the stream's steps from
    ``round`` on; ``"cadr_plan"``, ``"ndoe"``, ``"lpea"``, ``"dsr"``: a CADR-LDP stage),
    ``round`` its step or round, ``account`` the ledger account, ``requested`` the ε the
    request needs and ``remaining`` what the account can still spend (for a w-event account:
    what the fullest window containing the step has left). The collector stops waiting for
    what the refusal says will never come."""

    account: Ident
    request: Ident
    round: Seq = 0
    requested: StreamEpsilon
    remaining: Annotated[float, Meta(ge=0.0, le=1e6)]
    reason: Reason = ""


class Withdraw(Message, tag="withdraw", kw_only=True):
    """Device -> collector (``up/withdraw``): the collector's final ``Reject`` of my message
    ``kind`` number ``message_seq`` (``digest``) named a message I sent, so no
    retransmission can succeed: I stop reporting; expect nothing more from me. ``field``,
    ``code`` and ``reason`` repeat the rejection. The collector counts the device as finished
    (rejected), so the stage closes without waiting for its deadline. Authenticated like a
    ``BudgetRefused``: the broker's ACL lets only the device publish on its ``up`` topics."""

    kind: Annotated[str, Meta(max_length=64)]
    message_seq: Annotated[int, Meta(ge=-1, le=MAX_STEPS)] = -1
    digest: Digest
    field: Annotated[str, Meta(max_length=100)] = ""
    code: Annotated[str, Meta(max_length=32)] = ""
    reason: Reason = ""


MAX_FLEET_SHARDS = 4096  # fleet shards of one run a status may name
# device ids each list of one FleetDone holds: both lists full of 64-character ids encode
# to ~2.01 MB, under codec.MAX_PAYLOAD (2 MiB; 20,000 encoded to ~2.68 MB, refused as
# oversize by every reader: helper R's review, 2026-12-07, tests/unit/test_R3_*)
MAX_LISTED_DEVICES = 15_000
MAX_DEVICES = 100_000_000  # a shard's finished count
# the parts one shard's status may come in (MAX_DEVICES listed, MAX_LISTED_DEVICES a part)
MAX_FLEET_DONE_PARTS = -(-MAX_DEVICES // MAX_LISTED_DEVICES)  # 6,667


class FleetDone(Message, tag="fleet_done", kw_only=True):
    """Fleet shard ``shard`` of ``shards`` -> collector
    (``ldp/{run}/dev/fleet-{shard}-of-{shards}/up/fleet_done``, ``protocol.fleet_done``):
    every device of my slice (devices ``i`` with ``i % shards == shard``) has ended, so
    nothing more will come from them. ``finished`` devices delivered everything; ``gone``
    crashed for good (``[faults] never_return``); ``stopped`` ended otherwise (failed, gave
    up, unfinished). ``finished + len(gone) + len(stopped)`` is the slice's size.

    A shard with more than ``MAX_LISTED_DEVICES`` gone or stopped devices says it in
    ``parts`` messages (``part`` 0 .. parts-1, ``protocol.fleet_done.fleet_done_statuses``):
    each repeats ``finished`` and lists its share of ``gone`` and ``stopped``; the lists of
    all parts together make the slice's rest. A one-part status (the default) is the whole
    status; a payload without ``part`` and ``parts`` is one."""

    shard: Annotated[int, Meta(ge=0, lt=MAX_FLEET_SHARDS)]
    shards: Annotated[int, Meta(ge=1, le=MAX_FLEET_SHARDS)]
    finished: Annotated[int, Meta(ge=0, le=MAX_DEVICES)]
    gone: Annotated[list[Ident], Meta(max_length=MAX_LISTED_DEVICES)] = []
    stopped: Annotated[list[Ident], Meta(max_length=MAX_LISTED_DEVICES)] = []
    part: Annotated[int, Meta(ge=0, lt=MAX_FLEET_DONE_PARTS)] = 0
    parts: Annotated[int, Meta(ge=1, le=MAX_FLEET_DONE_PARTS)] = 1

    def __post_init__(self) -> None:
        if not self.shard < self.shards:
            raise ValueError(f"field `shard` must be < shards ({self.shards}), got {self.shard}")
        if not self.part < self.parts:
            raise ValueError(f"field `part` must be < parts ({self.parts}), got {self.part}")


ReleaseValue = Annotated[float, Meta(ge=-1e12, le=1e12)]
NodeIndex = Annotated[int, Meta(ge=0, lt=MAX_RELEASE)]


class GcdpRelease(Message, tag="gcdp_release", kw_only=True):
    """Collector -> ``rel/gcdp``: one GC-DP central release (Algorithm 4) of a window.

    ``values[k]`` is node k's window mean (over steps ``t0 .. t0+steps-1``, in [0, 1]
    units) plus Laplace(``scales[k]`` / ``budgets[k]``) noise; ``nodes[k]`` names the device.
    ``eps_rel`` was charged to the collector's ledger before the noise was drawn;
    ``eps_cal`` is the calibration's cost (0: public calibration data). ``bounds`` are the
    certified B_k under the declared ``adjacency``; ``edges`` are the calibration graph's
    (node pairs, i < j), which shaped only ``scales`` and ``budgets``. ``seq`` = ``window``.
    """

    window: Seq
    t0: Seq
    steps: Window
    mechanism: Literal["gcdp_laplace"]
    method: Literal["gcdp", "lap"]
    eps_cal: StreamEpsilon
    eps_rel: Epsilon
    adjacency: Reason
    values: Annotated[list[ReleaseValue], Meta(min_length=1, max_length=MAX_RELEASE)]
    budgets: Annotated[list[Epsilon], Meta(min_length=1, max_length=MAX_RELEASE)]
    scales: Annotated[list[Annotated[float, Meta(ge=0.0, le=1e6)]], Meta(max_length=MAX_RELEASE)]
    bounds: Annotated[list[Annotated[float, Meta(ge=0.0, le=1e6)]], Meta(max_length=MAX_RELEASE)]
    nodes: Annotated[list[Ident], Meta(max_length=MAX_RELEASE)]
    edges: Annotated[list[tuple[NodeIndex, NodeIndex]], Meta(max_length=MAX_RELEASE * 8)]

    def __post_init__(self) -> None:
        d = len(self.values)
        for name in ("budgets", "scales", "bounds", "nodes"):
            if len(getattr(self, name)) != d:
                raise ValueError(f"field `{name}` must have one entry per value ({d})")
        for i, j in self.edges:
            if not i < j < d:
                raise ValueError(f"field `edges`: ({i}, {j}) needs i < j < {d}")
        if not sum(self.budgets) <= self.eps_rel * (1 + 1e-9):
            raise ValueError("field `budgets` sums to more than eps_rel")


AnyMessage = (
    Hello
    | SwReport
    | Ack
    | Reject
    | Stage
    | Progress
    | GcdpRelease
    | BudgetRefused
    | Withdraw
    | FleetDone
)
