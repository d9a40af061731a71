"""Bulk gateways: many devices' stream reports in one message — theory of operation.

Issue 23 (a million devices, docs/scaling.md "Bulk gateways"). A per-device connection
or a gateway that multiplexes per-device publishes (``devices/gateway.py``) costs one MQTT
message, one acknowledgement and one Python object graph per device and report. A *bulk
gateway* is the LoRaWAN shape: it holds its devices as rows of numpy arrays and forwards
many devices' batches in ONE message, which the collector validates, persists and
acknowledges per device in ONE message. The stream protocol is the same as the
per-device one (docs/streaming.md; the w-event stream of the SW paper, Li et al. SIGMOD
2020, Section 3, privatised per step at ``eps0 = eps / w``); only the framing changes:

- **Admission by range.** Gateway ``g`` owns the devices ``g*G .. g*G+G-1`` (``G`` =
  ``gateway_devices``, the last gateway fewer). It sends one ``BulkHello`` (its range,
  mechanism, eps, w, steps, batch size, bounds) per partition it serves; the collector
  checks it against the plan and answers ``BulkAdmit``. 10^6 devices are admitted by
  ``ceil(10^6 / G)`` hellos instead of 10^6.
- **Reports.** ``BulkReport.entries`` is packed little-endian rows
  ``(device u4, seq u4, eps0 f8, values f8[B])`` (``entry_dtype``): batch ``seq`` of a
  device covers steps ``seq*B .. seq*B+B-1``. Before a row is built the gateway's
  ``BulkLedger`` charges ``eps0`` at each of those steps of the device's w-event account
  and refuses (the row is never built) if any window of ``w`` steps would exceed ``eps``.
- **Validation, per entry, vectorised** (``BulkCollector.ingest``). Reasons
  (``REJECT_REASONS``): ``acl`` — the device is not in the sending gateway's range or
  not in this partition, or listed twice in one message (the entry is dropped without
  touching the device's state: a gateway cannot consume another's sequence numbers);
  ``out_of_range`` — a seq past the stream or a value outside the mechanism's output
  domain (non-finite included); ``budget`` — ``eps0 * w`` exceeds the run's ``eps``;
  ``mismatch`` — another ``eps0`` than the run's. A whole message whose mechanism, ``w``
  or batch size differs from the run's, or from a gateway not admitted, is refused
  entry by entry with ``mismatch`` / ``acl``. Rejected entries are counted, never stored
  or aggregated; a rejection of one of the gateway's own devices resolves that seq (the
  device's authority sent it: it will not be sent again) and is acknowledged as such.
- **Admission of a delivery** (``BulkCollector.route``, the pump acts on its answer). A
  ``Stage`` is heeded only on ``ctl/stage`` from this run's collector (the runner): a
  ``closed`` one ends the stage (``close``), any other is counted
  (``stage_messages_ignored``) and has no effect (``ignore``). Anything else must come on
  a gateway's uplink of this partition spelled exactly as that gateway's own topic
  (``gw/g{n}/up/{kind}``: ``g01``, ``g+1`` or ``g١`` also parse to ``n``, but no ACL rule
  names them) and be of that topic's kind: a ``BulkHello`` on ``up/hello`` (``hello``),
  a ``BulkReport`` on ``up/bulk`` (``report``). What fails is refused whole
  (``RemoteProtocolError`` naming ``topic``, ``sender`` or ``type``, code ``schema``): the
  pump counts it by code and publishes the machine's ``refusal_notice``.
- **Dedup and order.** The collector keeps ``next_seq[device]`` (every seq below it is
  resolved). ``seq < next`` is a duplicate (counted, acknowledged again, not stored);
  ``seq > next`` is early (a gap: neither stored nor acknowledged; the gateway
  retransmits it after ``retransmit_after``); ``seq == next`` is validated.
- **Persist before acknowledging.** ``ingest`` returns a ``PendingBulk`` holding the
  accepted rows; the pump stores them and calls ``commit``, which only then advances
  ``next_seq`` and returns the ``BulkAck``: per listed device the highest resolved seq,
  and the (device, seq, reason) of every rejection. A crash between store and commit
  re-stores rows a retransmission brings again: the store dedups nothing, so the pump
  commits right after each store (one message = one append).
- **Retransmission.** The gateway keeps every sent message's rows (the privatised values,
  never re-privatised or re-charged) until each row is acknowledged or rejected, and
  resends what is left after ``retransmit_after``; it sends at most ``window`` messages
  per partition before acknowledgements (flow control: the broker's queue for the
  collector never holds more than ``window`` x gateways messages).

Fleet-mean sums, independent of arrival order. The fleet's mean estimate at each step is
what ``fleet_mean_mae`` scores (scenarios/bulk_run.py). The collector used to add each
committed row's estimates into a float64 ``estimate_sum`` in the order reports arrived;
float addition is not associative, so two runs of one seed could differ in the last bit.
It now keeps ``report_sum``: per step, the sum of the *reports* ``y`` as exact int64 in
units of ``2**-REPORT_SUM_BITS`` (``_add_reports``: each report is rounded to that grid
once, then only integers are added, exactly, in whatever order or grouping), and
``fleet_means`` returns the mechanism's estimate of the mean report — the mean of the
per-report estimates, since ``SquareWave.estimate`` is affine. Why this and not a
fixed-point sum of the estimates or a re-sum at the end: every SW output is ``output_low +
(i + 1/2) GRID`` with ``GRID = 2**-20`` and ``output_low = -b`` a whole number of cells
(protocol/sw.py), so an honest report is a multiple of ``2**-21`` in ``(-0.5, 1.5)`` and
the grid ``2**-35`` holds it exactly: an honest run's sums carry no rounding at all, with
one scale for every plan (none can be refused), no extra pass over the stored rows, and
fewer operations per value than the estimates took. A value inside the output range but off
the grid (never built by an honest gateway) counts rounded to ``2**-35`` (at most
``2**-36`` in report units). The figure then rounds a handful of times (``fleet_means``:
the mean of ``y - C`` formed exactly in int64, then the affine map), where the float sum
rounded at every addition: on 100,000 devices x 20 steps (eps0 0.4 and 0.02) the means are
within 3.4e-16 of the exactly summed per-report estimates, the former ones within 1.8e-15.

Randomness. The privacy noise comes from a keyed pseudorandom function: AES-256 under a
256-bit noise key, applied to 128-bit counter blocks (one ``cryptography`` call encrypts a
whole message's blocks; ECB over distinct blocks is counter mode). Device ``d``'s SW words
for step ``t`` are the two 64-bit halves of ``AES_key(t | d << 64)`` (``d`` the device's
index in the fleet), each shifted to a 62-bit integer, fed to ``SquareWave.perturb``'s exact
sampler (two 62-bit words per value, protocol/sw.py). Its rare extra draws — a tie at
probability 2^-62, a rejected cell below 2^-40 — are exact bounded integers (rejection)
from the message's own extra-draw blocks ``(t0 << 32 | i, d0 | 2^32)`` (``d0`` the
message's first device, ``t0`` its batch's first step; bit 32 of the high word keeps them
apart from every device's words). A block is used once, so as long as AES is a
pseudorandom permutation the words are indistinguishable from independent uniform ones
(PRP/PRF switching: advantage at most q^2 / 2^129 for q blocks, below 2^-35 at 10^8
devices x 10^6 steps), and a device's noise is fixed by (key, device, step): it does not
depend on which gateway, process or message carries it (but for those rare extra draws).

The key: seeded (the default), SHA-256 of a domain prefix and the run's seed
(``seeded_noise_key``): one key for the run, so every gateway layout and process gives
the same reports, and whoever holds the seed can replay the noise (the privacy claims'
trust row). With ``[privacy] device_noise = "os"`` each gateway draws its own 256-bit key
from ``os.urandom`` (``BulkGateway(noise_key=)``, ``devices.noise_entropy.bulk_noise_key``),
kept in its memory only. Per gateway, not per device: a gateway's devices live in one
process whose memory holds them all, so per-device keys would separate nothing, and would
cost a key schedule per device and message instead of one call. The devices' noise stays
independent: their blocks differ (the device index is in each), and a PRF's outputs on
distinct inputs are independent uniform to anyone without the key. The simulated data
(``synthetic_values``, ``device_offsets``, periods and phases) keep SplitMix64 keyed by
SHA-256(``"{seed}:{device id}"``)[:8]: a statistical generator, right for data that are not
privacy noise, and the same data in both modes.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

import msgspec
import numpy as np
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Outbound
from ldpfleet.protocol.messages import (
    MAX_STEPS,
    Epsilon,
    Mechanism,
    Message,
    Reject,
    Stage,
    StreamEpsilon,
    Window,
)
from ldpfleet.protocol.sw import SquareWave, normalise
from ldpfleet.protocol.topics import COLLECTOR_ID, PREFIX, check_ident, partition_level, svc
from msgspec import Meta

__all__ = [
    "BULK_MECHANISMS",
    "MAX_BULK_W",
    "NOISE_KEY_BYTES",
    "REJECT_REASONS",
    "REPORT_SUM_BITS",
    "BulkAck",
    "BulkAdmit",
    "BulkCollector",
    "BulkGateway",
    "BulkHello",
    "BulkLedger",
    "BulkPlan",
    "BulkReport",
    "BulkRoute",
    "NoisePrf",
    "PendingBulk",
    "decode_bulk",
    "device_keys",
    "device_offsets",
    "encode_bulk",
    "entry_dtype",
    "fleet_means",
    "noise_words",
    "seeded_noise_key",
    "splitmix_uniform",
    "stage_closes",
    "stored_dtype",
]

MAX_DEVICES = 100_000_000
MAX_ENTRIES = 65_536  # rows per bulk message (at B = 5: 56 bytes a row, 3.5 MiB base64)
MAX_BULK_W = 1024  # the ledger keeps w floats per device
BULK_MECHANISMS = ("sw", "sw01")  # privatised vectorised over a message's rows
MAX_BULK_PAYLOAD = 8 * 1024 * 1024
REJECT_REASONS = ("acl", "out_of_range", "budget", "mismatch")
# reconstructions of SW reports (collector.reconstruct's methods that take sw / sw01)
BULK_RECONSTRUCT = ("none", "cpr", "sw", "sw_moving", "sw_filter")
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TOLERANCE = 1e-9
# report_sum's grid (module docstring, "Fleet-mean sums"). No int64 overflows, no float
# partial sum rounds, for every plan: an accepted report y is in the mechanism's output
# range, within (-0.5, 1.5) (sw: [-b, 1 + b] with b = cells * 2**-20 < 2**19 * 2**-20 =
# 1/2; sw01: [0, 1]), so q = rint(y * 2**35) has |q| <= 1.5 * 2**35. (a) One report: at
# most MAX_ENTRIES = 2**16 rows, a device once (acl), so a step's float64 partial sums in
# _add_reports are integers below 2**16 * 1.5 * 2**35 = 1.5 * 2**51 < 2**53: exact, in any
# order. (b) A step's total over the run, all partitions together: each device adds at
# most one row per step (a (device, seq) is stored once), so |total| <= MAX_DEVICES * 1.5 *
# 2**35 = 5.2e18 < 2**63 = 9.2e18. (c) An honest y is a multiple of 2**-21 (module
# docstring), so y * 2**35 is an integer: rint changes nothing. Checked by
# tests/unit/test_bulk_fleet_mean_order.py.
REPORT_SUM_BITS = 35
_REPORT_SCALE = 2.0**REPORT_SUM_BITS  # multiplying by a power of two is exact here
_REPORT_BOUND = 1.5


def entry_dtype(batch_steps: int) -> np.dtype:
    """The packed row of one device's batch: device, seq, eps0, ``batch_steps`` values."""
    return np.dtype(
        [("device", "<u4"), ("seq", "<u4"), ("eps0", "<f8"), ("values", "<f8", (batch_steps,))]
    )


# -- wire messages ------------------------------------------------------------------------


class BulkHello(Message, tag="bulk_hello", kw_only=True):
    """Gateway -> collector (``gw/{g}/up/hello``): admit my devices ``first ..
    first+count-1``; this is the stream each of them reports."""

    gateway: Annotated[int, Meta(ge=0, le=MAX_DEVICES)]
    first: Annotated[int, Meta(ge=0, le=MAX_DEVICES)]
    count: Annotated[int, Meta(ge=1, le=MAX_DEVICES)]
    mechanism: Mechanism
    eps: Epsilon
    w: Window
    eps0: StreamEpsilon
    steps: Annotated[int, Meta(ge=1, le=MAX_STEPS)]
    batch_steps: Annotated[int, Meta(ge=1, le=4096)]
    lo: float
    hi: float


class BulkAdmit(Message, tag="bulk_admit", kw_only=True):
    """Collector -> gateway inbox: your range is admitted in ``partition``; send at most
    ``window`` unacknowledged reports."""

    partition: Annotated[int, Meta(ge=0, le=1024)]
    window: Annotated[int, Meta(ge=1, le=1_000_000)]


class BulkReport(Message, tag="bulk_report", kw_only=True):
    """Gateway -> collector (``gw/{g}/up/bulk``): ``entries`` = packed ``entry_dtype``
    rows (base64 in JSON); ``seq`` numbers the gateway's messages."""

    mechanism: Mechanism
    w: Window
    batch_steps: Annotated[int, Meta(ge=1, le=4096)]
    entries: bytes


class BulkAck(Message, tag="bulk_ack", kw_only=True):
    """Collector -> gateway inbox, after the accepted rows are persisted: ``seq`` = the
    report it answers; ``devices`` (u4) with ``acked`` (i4: highest resolved seq per
    device, -1 before any); rejections as ``rejected_devices`` (u4), ``rejected_seqs``
    (u4) and ``rejected_codes`` (u1: index in ``REJECT_REASONS``)."""

    partition: Annotated[int, Meta(ge=0, le=1024)] = 0
    devices: bytes = b""
    acked: bytes = b""
    rejected_devices: bytes = b""
    rejected_seqs: bytes = b""
    rejected_codes: bytes = b""


BULK_MESSAGES = (BulkHello, BulkAdmit, BulkReport, BulkAck)  # in protocol.codec too
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(BulkHello | BulkAdmit | BulkReport | BulkAck | Stage)


def encode_bulk(message: Message) -> bytes:
    """msgspec JSON (bytes fields base64), as ``protocol.codec.encode``."""
    return _encoder.encode(message)


def decode_bulk(payload: bytes) -> Message:
    """Decode one bulk-protocol message; ``RemoteProtocolError`` naming the field (``seq``,
    ``w``, ``type``...; ``payload`` when none can be named) as ``protocol.codec.decode``
    does, and refusing another schema version (field ``v``, ``unsupported_version``)."""
    if len(payload) > MAX_BULK_PAYLOAD:
        raise RemoteProtocolError(
            f"{len(payload)} bytes exceeds the limit of {MAX_BULK_PAYLOAD}",
            field="payload",
            code="oversize",
        )
    # the wire decoder's field and version rules (imported here: codec imports this module)
    from ldpfleet.protocol.codec import check_version, refused_field

    try:
        message = _decoder.decode(payload)
    except msgspec.ValidationError as error:
        text = str(error)
        # another version's message is refused for that reason (field v)
        raise RemoteProtocolError(text, field=refused_field(payload, text), code="schema") from None
    except msgspec.DecodeError as error:
        raise RemoteProtocolError(
            f"not valid JSON: {error}", field="payload", code="undecodable"
        ) from None
    check_version(message.v)
    return message


# -- topics -------------------------------------------------------------------------------


def _base(run: str, partition: int | None) -> str:
    return (
        f"{PREFIX}/{run}" if partition is None else f"{PREFIX}/{run}/{partition_level(partition)}"
    )


def gateway_up(run: str, gateway: int, kind: str, partition: int | None) -> str:
    """``ldp/{run}[/p{p}]/gw/g{gateway}/up/{kind}`` (kind: ``hello`` or ``bulk``)."""
    return f"{_base(run, partition)}/gw/g{gateway}/up/{kind}"


def gateway_inbox(run: str, gateway: int, partition: int | None) -> str:
    """``ldp/{run}[/p{p}]/gw/g{gateway}/in/collector``."""
    return f"{_base(run, partition)}/gw/g{gateway}/in/collector"


def gateway_up_filter(run: str, partition: int | None) -> str:
    """What a partition's collector subscribes: every gateway's uplink there."""
    return f"{_base(run, partition)}/gw/+/up/+"


def gateway_of_topic(topic: str) -> int:
    """The gateway number of an uplink topic; ``RemoteProtocolError`` if malformed."""
    parts = topic.split("/")
    try:
        level = parts[-3]
        if parts[-4] != "gw" or parts[-2] != "up" or not level.startswith("g"):
            raise ValueError
        return int(level[1:])
    except (IndexError, ValueError):
        raise RemoteProtocolError(
            f"not a gateway uplink: {topic!r}", field="topic", code="schema"
        ) from None


def gateway_route(topic: str) -> tuple[str, str] | None:
    """(sender, recipient) of a bulk topic — ``("g{g}", "collector")`` on an uplink,
    ``("collector", "g{g}")`` on a gateway's inbox — or None if ``topic`` is not one
    (the trace's sender and recipient columns)."""
    parts = topic.split("/")
    if len(parts) < 6 or parts[-4] != "gw" or not parts[-3].startswith("g"):
        return None
    gateway = parts[-3]
    if not gateway[1:].isdigit():
        return None
    if parts[-2] == "up":
        return gateway, "collector"
    if parts[-2:] == ["in", "collector"]:
        return "collector", gateway
    return None


def stage_topic(run: str) -> str:
    """``ldp/{run}/ctl/stage``: the runner closes the stage there."""
    return f"{PREFIX}/{run}/ctl/stage"


# the ``detail`` of the runner's ``Stage(stream, closed)`` when the run's deadline
# (``[scenario] run_timeout``) closed it: the collectors store what arrived and skip the
# reconstruction (scenarios/bulk_run.py, collector/bulk.py)
RUN_TIMEOUT_DETAIL = "run_timeout"


# -- the plan -----------------------------------------------------------------------------


def _positive_int(value: object, name: str, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise ParameterError(
            f"must be an integer in 1..{limit}, got {value!r}",
            field=name,
            limit=f"an integer in 1..{limit}",
            value=value,
        )
    return value


def _one_of(value: object, name: str, choices: tuple[str, ...], rule: str) -> None:
    """Refuse ``value`` unless it is one of ``choices``: ``<rule>, got <value>``."""
    if value not in choices:
        raise ParameterError(
            f"{rule}, got {value!r}", field=name, limit=f"one of {list(choices)}", value=value
        )


@dataclass(frozen=True)
class BulkPlan:
    """Everything both sides agree on (built from the bench's or a scenario's numbers).

    Device ``i`` is named ``f"{id_prefix}{i:0{width}d}"`` (``width`` = digits of
    ``devices - 1``, at least 4: the scenario schema's naming)."""

    run: str
    devices: int
    steps: int
    batch_steps: int
    eps: float
    w: int
    seed: int = 1
    gateway_devices: int = 10_000
    partitions: int = 1
    window: int = 4
    max_in_flight: int = 100_000
    max_entries: int = 2_000
    retransmit_after: float = 30.0
    lo: float = -1.5
    hi: float = 1.5
    period: tuple[int, int] = (12, 48)
    amplitude: float = 1.0
    noise: float = 0.1
    # the readings' centre (``[source] offset``): ``offset + amplitude * sin(...) + noise``;
    # a (min, max) pair draws each device's centre uniformly (``device_offsets``)
    offset: float | tuple[float, float] = 0.0
    id_prefix: str = "d"
    mechanism: str = "sw"
    # pacing (``[stream] step_seconds``): reading t of a device exists ``t * step_seconds``
    # after its gateway starts, so batch b is built no earlier than ``((b + 1) * B - 1) *
    # step_seconds`` (a per-device agent's paced feed, devices/agent.py); 0: unpaced
    step_seconds: float = 0.0
    # the collectors' reconstruction of each device's stored stream (``[stream]
    # reconstruct``; collector/bulk.py) and CPR's period range (``[cpr]``)
    reconstruct: str = "none"
    cpr_min_period: int = 2
    cpr_max_period: int | None = None
    cpr_min_cycles: int = 3  # collector.period.DEFAULT_MIN_CYCLES (protocol imports no collector)

    def __post_init__(self) -> None:
        check_ident(self.run, "run")
        _positive_int(self.devices, "devices", MAX_DEVICES)
        _positive_int(self.steps, "steps", MAX_STEPS)
        _positive_int(self.batch_steps, "batch_steps", 4096)
        _positive_int(self.w, "w", MAX_BULK_W)
        _positive_int(self.gateway_devices, "gateway_devices", MAX_DEVICES)
        _positive_int(self.partitions, "partitions", 1024)
        _positive_int(self.window, "window", 1_000_000)
        _positive_int(self.max_in_flight, "max_in_flight", MAX_DEVICES)
        _positive_int(self.max_entries, "max_entries", MAX_ENTRIES)
        if self.steps % self.batch_steps:
            raise ParameterError(
                f"bulk gateways need steps divisible by batch_steps, got steps={self.steps}, "
                f"batch_steps={self.batch_steps}",
                field="batch_steps",
                limit="steps divisible by batch_steps",
                value=self.batch_steps,
            )
        _one_of(
            self.mechanism,
            "mechanism",
            BULK_MECHANISMS,
            f"bulk gateways privatise with {' or '.join(BULK_MECHANISMS)}",
        )
        SquareWave(self.eps / self.w, self.mechanism)  # validates eps
        if not (math.isfinite(self.retransmit_after) and self.retransmit_after > 0):
            raise ParameterError(
                f"must be > 0, got {self.retransmit_after!r}",
                field="retransmit_after",
                limit="a finite number > 0",
                value=self.retransmit_after,
            )
        for name in ("amplitude", "noise"):
            if not math.isfinite(getattr(self, name)):
                raise ParameterError(
                    f"must be finite, got {getattr(self, name)!r}",
                    field=name,
                    limit="a finite number",
                    value=getattr(self, name),
                )
        self._check_offset()
        if not (math.isfinite(self.step_seconds) and 0 <= self.step_seconds <= 3600):
            raise ParameterError(
                f"must be in [0, 3600] seconds, got {self.step_seconds!r}",
                field="step_seconds",
                limit="in [0, 3600] seconds",
                value=self.step_seconds,
            )
        _one_of(
            self.reconstruct,
            "reconstruct",
            BULK_RECONSTRUCT,
            f"bulk collectors reconstruct with one of {', '.join(BULK_RECONSTRUCT)}",
        )

    @property
    def eps0(self) -> float:
        """Budget per step: eps / w."""
        return self.eps / self.w

    @property
    def admit_window(self) -> int:
        """Reports a gateway may have unacknowledged in a partition: ``window``, or fewer
        so that all gateways together stay within ``max_in_flight`` entries per partition
        (at least 1). This bounds the collector's queue on the broker and the time a
        report waits for its acknowledgement (keep ``retransmit_after`` above it)."""
        return max(1, min(self.window, self.max_in_flight // (self.gateways * self.max_entries)))

    def ready_at(self, batch: int) -> float:
        """Seconds after the gateway's start when ``batch`` may be built (0 unpaced)."""
        return ((batch + 1) * self.batch_steps - 1) * self.step_seconds

    @property
    def batches(self) -> int:
        """Reports per device."""
        return self.steps // self.batch_steps

    @property
    def gateways(self) -> int:
        """How many gateways carry the fleet."""
        return -(-self.devices // self.gateway_devices)

    def gateway_range(self, gateway: int) -> tuple[int, int]:
        """(first device index, count) of ``gateway``."""
        first = gateway * self.gateway_devices
        return first, min(self.gateway_devices, self.devices - first)

    def device_id(self, index: int) -> str:
        """The id of device ``index``."""
        return f"{self.id_prefix}{index:0{self._width}d}"

    def device_ids(self, first: int, count: int) -> list[str]:
        """The ids of devices ``first .. first+count-1``."""
        prefix, width = self.id_prefix, self._width
        return [f"{prefix}{i:0{width}d}" for i in range(first, first + count)]

    @functools.cached_property
    def _width(self) -> int:
        return max(4, len(str(self.devices - 1)))

    def partition_level_of(self, partition: int) -> int | None:
        """The topic level: None when P = 1 (the unpartitioned layout)."""
        return None if self.partitions == 1 else partition

    def partitions_of(self, first: int, count: int) -> np.ndarray:
        """``topics.partition_of`` of devices ``first .. first+count-1`` (u2)."""
        if self.partitions == 1:
            return np.zeros(count, dtype=np.uint16)
        p, sha = self.partitions, hashlib.sha256
        # topics.partition_of, inlined: ~1 us a device instead of ~20 (10^6 devices per
        # collector at start); tests check the two agree
        return np.fromiter(
            (int.from_bytes(sha(d.encode()).digest()[:8], "big") % p
             for d in self.device_ids(first, count)),
            dtype=np.uint16,
            count=count,
        )  # fmt: skip

    def stream_config(self):  # -> protocol.stream.StreamConfig
        """The per-device path's ``StreamConfig`` of this plan (its mechanism, budget and
        bounds): what the collectors reconstruct with and the results are stated in."""
        from ldpfleet.protocol.stream import StreamConfig  # stream imports this module

        return StreamConfig(
            run=self.run, mechanism=self.mechanism, eps=self.eps, w=self.w, steps=self.steps,
            batch_steps=self.batch_steps, lo=self.lo, hi=self.hi,
        )  # fmt: skip

    def _check_offset(self) -> None:
        offset = self.offset
        if isinstance(offset, (tuple, list)):
            if not (
                len(offset) == 2
                and all(math.isfinite(v) for v in offset)
                and offset[0] <= offset[1]
            ):
                raise ParameterError(
                    f"must be finite, or a finite [min, max] pair with min <= max, got {offset!r}",
                    field="offset",
                    limit="finite, or a finite [min, max] pair with min <= max",
                    value=offset,
                )
            object.__setattr__(self, "offset", (float(offset[0]), float(offset[1])))
        elif not math.isfinite(offset):
            raise ParameterError(
                f"must be finite, got {offset!r}",
                field="offset",
                limit="a finite number",
                value=offset,
            )

    def to_dict(self) -> dict:
        """JSON-ready (``from_dict`` inverts it)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in values.items()}

    @classmethod
    def from_dict(cls, data: dict) -> BulkPlan:
        """Inverse of ``to_dict``."""
        values = dict(data)
        values["period"] = tuple(values.get("period", (12, 48)))
        if isinstance(values.get("offset"), list):
            values["offset"] = tuple(values["offset"])
        return cls(**values)


# -- randomness ---------------------------------------------------------------------------


def device_keys(plan: BulkPlan, first: int, count: int) -> np.ndarray:
    """u8 key of each device: the first 8 bytes of SHA-256(``"{seed}:{id}"``)."""
    sha, seed = hashlib.sha256, plan.seed
    return np.fromiter(
        (int.from_bytes(sha(f"{seed}:{d}".encode()).digest()[:8], "little")
         for d in plan.device_ids(first, count)),
        dtype=np.uint64,
        count=count,
    )  # fmt: skip


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def splitmix_uniform(keys: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Uniforms in [0, 1): SplitMix64 output ``steps`` of each key, 53 bits each.
    ``keys`` (n,) u8, ``steps`` (n, k) or (k,) integers; the result is (n, k)."""
    state = keys[:, None] + (np.asarray(steps, dtype=np.uint64) + np.uint64(1)) * _GAMMA
    return (_mix(state) >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


# -- privacy noise: a keyed PRF -------------------------------------------------------------

NOISE_KEY_BYTES = 32  # AES-256
# the seeded mode's key: SHA-256 of this prefix and the seed (apart from every other use of
# the seed: the data keys hash "{seed}:{id}")
_NOISE_KEY_DOMAIN = b"ldpfleet/bulk/sw-noise-key/v1\x00"
_EXTRA_TAG = 1 << 32  # in a block's high word: an extra-draw block, not a device's words
_MAX_EXTRA_BLOCKS = 1 << 32  # a message's extra-draw counter fits the low 32 bits
_U64_MAX = np.uint64(2**64 - 1)


def seeded_noise_key(seed: int) -> bytes:
    """The seeded mode's 256-bit noise key of a run: SHA-256(domain, decimal ``seed``)."""
    return hashlib.sha256(_NOISE_KEY_DOMAIN + str(int(seed)).encode()).digest()


def checked_noise_key(key: object) -> bytes:
    """``key`` if it is ``NOISE_KEY_BYTES`` bytes, else a ``ParameterError`` (field
    ``noise_key``)."""
    if not isinstance(key, bytes) or len(key) != NOISE_KEY_BYTES:
        raise ParameterError(
            f"must be {NOISE_KEY_BYTES} bytes, got {type(key).__name__} of length "
            f"{len(key) if isinstance(key, bytes | bytearray) else '-'}",
            field="noise_key",
            limit=f"{NOISE_KEY_BYTES} bytes",
            value=type(key).__name__ if not isinstance(key, bytes) else len(key),
        )
    return key


class NoisePrf:
    """AES-256 under ``key`` as a PRF on 128-bit blocks (module docstring, "Randomness"):
    ``blocks(low, high)`` encrypts the blocks ``(low, high)`` (two little-endian u8 words)
    in one call over the whole buffer (ECB of distinct counter blocks = counter mode) and
    returns the ciphertexts as ``(..., 2)`` u8."""

    def __init__(self, key: bytes) -> None:
        # imported here: the CLI's light commands import this module, not cryptography
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        cipher = Cipher(algorithms.AES(checked_noise_key(key)), modes.ECB())
        self._encrypt = cipher.encryptor()  # stateless over whole blocks: reused

    def blocks(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """AES_key(low | high << 64) for each pair of the broadcast ``low``, ``high``."""
        low, high = np.broadcast_arrays(np.asarray(low, np.uint64), np.asarray(high, np.uint64))
        plain = np.empty((*low.shape, 2), dtype="<u8")
        plain[..., 0], plain[..., 1] = low, high
        if not plain.size:
            return plain
        cipher = self._encrypt.update(memoryview(plain.reshape(-1)).cast("B"))
        return np.frombuffer(cipher, dtype="<u8").reshape(plain.shape)


def noise_words(prf: NoisePrf, devices: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """SW's words (module docstring, "Randomness"): for device ``d`` (its index in the
    fleet) at step ``t`` the block ``AES_key(t | d << 64)``, its two 64-bit halves shifted
    to 62 bits; ``devices`` (n,), ``steps`` (k,); the result is (n, k, 2) int64."""
    devices = np.asarray(devices, dtype=np.uint64)
    steps = np.asarray(steps, dtype=np.uint64)
    out = prf.blocks(steps[None, :], devices[:, None])
    return (out >> np.uint64(2)).astype(np.int64)


class _PrfIntegers:
    """Exactly uniform bounded integers (``numpy.random.Generator.integers``' call shapes:
    ``low``, ``high`` scalars or arrays, ``size``) from the PRF's extra-draw stream of one
    message: blocks ``(t0 << 32 | i, device | 2**32)`` for i = 0, 1, ... (``device`` the
    message's first device, ``t0`` its batch's first step: a message's pair in a run),
    each 64-bit half one draw, by rejection: ``u % span`` for ``u`` below the largest
    multiple of ``span`` under 2**64."""

    def __init__(self, prf: NoisePrf, device: int, t0: int) -> None:
        self._prf = prf
        self._high = np.uint64(device | _EXTRA_TAG)
        self._base = np.uint64(t0 << 32)
        self._next = 0

    def _draw(self, count: int) -> np.ndarray:
        """The next ``count`` 64-bit words of the stream (u8)."""
        blocks = -(-count // 2)
        if self._next + blocks > _MAX_EXTRA_BLOCKS:
            raise LocalProtocolError("a message's extra draws exhausted", field="extra")
        counter = np.arange(self._next, self._next + blocks, dtype=np.uint64)
        self._next += blocks
        return self._prf.blocks(self._base | counter, self._high).reshape(-1)[:count]

    def integers(self, low, high=None, size=None):
        """Uniform integers in ``[low, high)`` (``[0, low)`` without ``high``), int64."""
        if high is None:
            low, high = 0, low
        low = np.asarray(low, dtype=np.int64)
        high = np.asarray(high, dtype=np.int64)
        shape = np.broadcast_shapes(low.shape, high.shape) if size is None else size
        shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
        width = np.broadcast_to(high - low, shape)
        if np.any(width <= 0):
            raise LocalProtocolError("an empty range of integers", field="high")
        span = width.astype(np.uint64).ravel()
        # u is accepted below 2**64 - (2**64 mod span): every residue equally often
        limit = _U64_MAX - (_U64_MAX % span + np.uint64(1)) % span
        value = np.empty(span.size, dtype=np.uint64)
        todo = np.arange(span.size)
        while todo.size:
            u = self._draw(todo.size)
            ok = u <= limit[todo]
            value[todo[ok]] = u[ok] % span[todo[ok]]
            todo = todo[~ok]
        out = np.broadcast_to(low, shape) + value.reshape(shape).astype(np.int64)
        return out if out.ndim else out[()]


class _Words:
    """Hands precomputed words to ``SquareWave.perturb`` (its ``rng.integers(0, 2**62,
    (n, 2))``); its rare further draws (a tie, a rejected cell) come from ``extra``, the
    PRF's extra-draw stream of the message."""

    def __init__(self, words: np.ndarray, extra: _PrfIntegers) -> None:
        self._words = words.reshape(-1, 2)
        self._given = False
        self._extra = extra

    def integers(self, low, high=None, size=None):
        if not self._given and low == 0 and high == 2**62 and size == self._words.shape:
            self._given = True
            return self._words
        return self._extra.integers(low, high, size=size)


# -- the w-event ledger of many devices ------------------------------------------------------


class BulkLedger:
    """w-event accounts of ``n`` devices: ``spent[i, t mod w]`` is what device ``i`` spent
    at step ``t`` (``last[i]`` the last charged step, -1 before any). A run of steps is
    granted to a device only if every window of ``w`` steps stays within ``eps``; steps
    are charged in increasing order, each once (as ``protocol.ledger.WindowAccount``)."""

    def __init__(self, n: int, eps: float, w: int) -> None:
        self.eps = float(eps)
        self.w = int(w)
        self.spent = np.zeros((n, w), dtype=np.float64)
        self.last = np.full(n, -1, dtype=np.int64)
        self.charges = np.zeros(n, dtype=np.int64)
        self.refusals = np.zeros(n, dtype=np.int64)

    def charge_run(self, rows: np.ndarray, t0: int, count: int, eps0: float) -> np.ndarray:
        """Charge ``eps0`` at steps ``t0 .. t0+count-1`` of each device in ``rows``;
        returns the granted mask. A device is granted all the steps or none (a refused
        device's account is unchanged but for its ``refusals``)."""
        last = self.last[rows]
        if np.any(last >= t0):
            raise LocalProtocolError(f"steps from {t0} already charged", field="t0")
        ring = self.spent[rows]  # a copy (fancy indexing)
        gap = t0 - last
        for k in range(1, self.w):  # step t0 - k was skipped (spent nothing) if k < gap
            ring[gap > k, (t0 - k) % self.w] = 0.0
        granted = np.ones(len(rows), dtype=bool)
        for t in range(t0, t0 + count):
            ring[:, t % self.w] = eps0  # replaces step t - w, which left the window
            granted &= ring.sum(axis=1) <= self.eps * (1 + _TOLERANCE)
        ok = rows[granted]
        self.spent[ok] = ring[granted]
        self.last[ok] = t0 + count - 1
        self.charges[ok] += count
        self.refusals[rows[~granted]] += 1
        return granted

    def max_window_spent(self) -> float:
        """The largest window spend of any device."""
        return float(self.spent.sum(axis=1).max(initial=0.0))


# -- the gateway ----------------------------------------------------------------------------


def true_periods(plan: BulkPlan, keys: np.ndarray) -> np.ndarray:
    """Each device's sine period (i8), an integer in ``plan.period`` drawn from its key:
    what ``synthetic_values`` generates, and what a reconstruction's period is scored
    against."""
    low, high = plan.period
    return (low + (keys % np.uint64(high - low + 1))).astype(np.int64)


def tally_clipping(clip: list, raw: np.ndarray, clean: np.ndarray) -> None:
    """Add readings ``raw`` (clipped to ``clean``) to a gateway's ``truth_clip`` tally
    ``[readings, clipped, lowest raw, highest raw]`` (simulator-only ground truth)."""
    if raw.size:
        clip[0] += raw.size
        clip[1] += int(np.count_nonzero(clean != raw))
        clip[2], clip[3] = min(clip[2], float(raw.min())), max(clip[3], float(raw.max()))


# the key of a device's offset draw (``device_offsets``): apart from the phase's bits, the
# period's residue and the noise's stream (``synthetic_values``)
_OFFSET_KEY = np.uint64(0x6A09E667F3BCC909)


def device_offsets(plan: BulkPlan, keys: np.ndarray) -> np.ndarray | float:
    """Each device's centre: ``plan.offset`` itself, or for a ``(min, max)`` range a uniform
    draw in it from the key (the SplitMix64 output 0 of the key xor a constant)."""
    if not isinstance(plan.offset, tuple):
        return plan.offset
    low, high = plan.offset
    u = splitmix_uniform(keys ^ _OFFSET_KEY, np.zeros(1, dtype=np.uint64))[:, 0]
    return low + (high - low) * u


def synthetic_values(plan: BulkPlan, keys: np.ndarray, t0: int, count: int) -> np.ndarray:
    """Clean readings of steps ``t0 .. t0+count-1`` for the devices of ``keys`` (n, count):
    ``offset + amplitude * sin(2 pi (t / period + phase)) + noise * N(0, 1)``
    (``devices.sources``' sine), with the period an integer in ``plan.period`` and the
    phase in [0, 1) taken from the key's bits, and the normal noise by Box-Muller from
    SplitMix64 outputs of the key xor a constant (simulated data, not privacy noise)."""
    period = true_periods(plan, keys).astype(np.float64)
    phase = ((keys >> np.uint64(40)) & np.uint64(0xFFFFFF)).astype(np.float64) / float(1 << 24)
    t = np.arange(t0, t0 + count, dtype=np.float64)
    x = plan.amplitude * np.sin(2.0 * np.pi * (t[None, :] / period[:, None] + phase[:, None]))
    offset = device_offsets(plan, keys)
    x += offset[:, None] if isinstance(offset, np.ndarray) else offset  # before the noise
    if plan.noise > 0:
        data_keys = keys ^ np.uint64(0xD1B54A32D192ED03)
        steps = np.arange(2 * t0, 2 * (t0 + count), dtype=np.uint64)
        u = splitmix_uniform(data_keys, steps)
        u1, u2 = u[:, 0::2], u[:, 1::2]
        x += plan.noise * np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)
    return x


@dataclass
class _Sent:
    partition: int
    entries: np.ndarray  # entry_dtype rows not yet resolved
    sent_at: float


@dataclass
class GatewayCounters:
    """What a gateway did (its outcome)."""

    entries_built: int = 0
    messages_sent: int = 0
    retransmitted_entries: int = 0
    rejected: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REJECT_REASONS, 0))
    ledger_refusals: int = 0


class BulkGateway:
    """The device side of ``plan.gateway_range(gateway)`` as one sans-I/O machine.

    ``start(now)`` emits the hellos; ``receive(message, now)`` takes ``BulkAdmit`` /
    ``BulkAck`` / a closing ``Stage`` and returns what to publish; ``handle_timer(now)``
    retransmits; ``next_timer()`` says when; ``done`` once every report is resolved (or the
    stage closed). ``tamper`` (tests, hostile experiments) may rewrite each built message's
    entries before it is first sent."""

    def __init__(self, plan: BulkPlan, gateway: int, *, tamper=None, noise_key=None) -> None:
        if not 0 <= gateway < plan.gateways:
            raise ParameterError(
                f"must be in 0..{plan.gateways - 1}, got {gateway!r}",
                field="gateway",
                limit=f"in 0..{plan.gateways - 1}",
                value=gateway,
            )
        self.plan = plan
        self.gateway = gateway
        self.name = f"g{gateway}"
        self.first, self.count = plan.gateway_range(gateway)
        self.keys = device_keys(plan, self.first, self.count)
        # the SW words' PRF key: the run's seeded key, or ``noise_key`` (32 bytes) the
        # device side injects from its own entropy (devices.noise_entropy); the data keep
        # the seeded keys either way
        key = seeded_noise_key(plan.seed) if noise_key is None else noise_key
        self._noise = NoisePrf(key)  # checks the key (checked_noise_key)
        parts = plan.partitions_of(self.first, self.count)
        self.rows = {int(p): np.flatnonzero(parts == p) for p in np.unique(parts)}
        self.ledger = BulkLedger(self.count, plan.eps, plan.w)
        self.acked = np.full(self.count, -1, dtype=np.int64)
        self.mechanism = SquareWave(plan.eps0, plan.mechanism)
        self.dtype = entry_dtype(plan.batch_steps)
        self._cursor = dict.fromkeys(self.rows, (0, 0))  # partition -> (batch, offset)
        self._admitted: dict[int, int] = {}  # partition -> window
        self._hello_at: dict[int, float] = {}
        self._pending: dict[int, _Sent] = {}
        self._inflight = dict.fromkeys(self.rows, 0)
        self._next_seq = 0
        self._origin: float | None = None  # start(now): pacing's time origin
        self.closed = False
        self.tamper = tamper
        self.counters = GatewayCounters()
        self.truth_sum = np.zeros(plan.steps)  # clipped clean readings, summed per step
        # raw readings built, how many [lo, hi] clipped, their range (simulator-only truth)
        self.truth_clip = [0, 0, math.inf, -math.inf]

    # -- sans-I/O surface --------------------------------------------------------------

    def start(self, now: float) -> list[Outbound]:
        """The hello of every partition this gateway's devices belong to."""
        if self._origin is None:
            self._origin = now
        return [self._hello(p, now) for p in self.rows]

    def receive(self, message: Message, now: float) -> list[Outbound]:
        """Consume one message from the collector (or the stage's close)."""
        if isinstance(message, Stage):
            if message.state == "closed":
                self.closed = True
            return []
        if message.sender != "collector":
            raise RemoteProtocolError(
                f"gateways take instructions from the collector, not {message.sender!r}",
                field="sender",
            )
        if isinstance(message, BulkAdmit):
            if message.partition not in self.rows:
                raise RemoteProtocolError(
                    f"partition {message.partition} holds none of my devices", field="partition"
                )
            self._admitted[message.partition] = message.window
            return self._fill(message.partition, now)
        if isinstance(message, BulkAck):
            return self._acknowledged(message, now)
        raise RemoteProtocolError(f"a gateway does not take {message.type_name()!r}", field="type")

    def handle_timer(self, now: float) -> list[Outbound]:
        """Resend hellos not answered and reports not resolved after ``retransmit_after``;
        build the batches whose time has come (paced)."""
        out: list[Outbound] = []
        if self.closed:
            return out
        if self.plan.step_seconds > 0:
            for p in self._admitted:
                out += self._fill(p, now)
        after = self.plan.retransmit_after
        for p, at in self._hello_at.items():
            if p not in self._admitted and now >= at + after:
                out.append(self._hello(p, now))
        for seq, sent in self._pending.items():
            if now >= sent.sent_at + after:
                sent.sent_at = now
                self.counters.retransmitted_entries += len(sent.entries)
                out.append(self._report(sent.partition, seq, sent.entries))
        return out

    def next_timer(self) -> float | None:
        """When ``handle_timer`` next has work (None: nothing outstanding)."""
        if self.closed:
            return None
        after = self.plan.retransmit_after
        times = [s.sent_at + after for s in self._pending.values()]
        times += [at + after for p, at in self._hello_at.items() if p not in self._admitted]
        if self.plan.step_seconds > 0 and self._origin is not None:
            times += [
                self._origin + self.plan.ready_at(self._cursor[p][0])
                for p, window in self._admitted.items()
                if self._inflight[p] < window and self._cursor[p][0] < self.plan.batches
            ]
        return min(times) if times else None

    @property
    def done(self) -> bool:
        """Every batch built and resolved, or the stage closed."""
        if self.closed:
            return True
        finished = all(b >= self.plan.batches for b, _ in self._cursor.values())
        return finished and not self._pending

    # -- internals ---------------------------------------------------------------------

    def _hello(self, partition: int, now: float) -> Outbound:
        self._hello_at[partition] = now
        plan = self.plan
        hello = BulkHello(
            run=plan.run, sender=self.name, gateway=self.gateway, first=self.first,
            count=self.count, mechanism=plan.mechanism, eps=plan.eps, w=plan.w,
            eps0=plan.eps0, steps=plan.steps, batch_steps=plan.batch_steps, lo=plan.lo,
            hi=plan.hi,
        )  # fmt: skip
        level = plan.partition_level_of(partition)
        return Outbound(gateway_up(plan.run, self.gateway, "hello", level), hello)

    def _report(self, partition: int, seq: int, entries: np.ndarray) -> Outbound:
        plan = self.plan
        report = BulkReport(
            run=plan.run, sender=self.name, seq=seq, mechanism=plan.mechanism, w=plan.w,
            batch_steps=plan.batch_steps, entries=entries.tobytes(),
        )  # fmt: skip
        self.counters.messages_sent += 1
        level = plan.partition_level_of(partition)
        return Outbound(gateway_up(plan.run, self.gateway, "bulk", level), report)

    def _fill(self, partition: int, now: float) -> list[Outbound]:
        out: list[Outbound] = []
        window = self._admitted.get(partition)
        if window is None or self.closed:
            return out
        while self._inflight[partition] < window:
            entries = self._build(partition, now)
            if entries is None:
                break
            if self.tamper is not None:
                entries = self.tamper(entries)
            seq = self._next_seq
            self._next_seq += 1
            if len(entries) == 0:
                continue
            self._pending[seq] = _Sent(partition, entries, now)
            self._inflight[partition] += 1
            out.append(self._report(partition, seq, entries))
        return out

    def _build(self, partition: int, now: float) -> np.ndarray | None:
        """The next message's rows for ``partition`` (None when its stream is built, or
        its next batch's readings do not exist yet: paced)."""
        plan = self.plan
        batch, offset = self._cursor[partition]
        if batch >= plan.batches:
            return None
        if plan.step_seconds > 0 and now < (self._origin or 0.0) + plan.ready_at(batch):
            return None
        rows = self.rows[partition][offset : offset + plan.max_entries]
        offset += len(rows)
        self._cursor[partition] = (
            (batch + 1, 0) if offset >= len(self.rows[partition]) else (batch, offset)
        )
        B = plan.batch_steps
        t0 = batch * B
        raw = synthetic_values(plan, self.keys[rows], t0, B)
        x = np.clip(raw, plan.lo, plan.hi)
        tally_clipping(self.truth_clip, raw, x)
        self.truth_sum[t0 : t0 + B] += x.sum(axis=0)
        granted = self.ledger.charge_run(rows, t0, B, plan.eps0)
        self.counters.ledger_refusals += int((~granted).sum())
        rows = rows[granted]
        v = normalise(x[granted], plan.lo, plan.hi)
        entries = np.empty(len(rows), dtype=self.dtype)
        entries["device"] = rows + self.first
        entries["seq"] = batch
        entries["eps0"] = plan.eps0
        entries["values"] = self._privatise(v, entries["device"], t0) if len(rows) else v
        self.counters.entries_built += len(rows)
        return entries

    def _privatise(self, v: np.ndarray, devices: np.ndarray, t0: int) -> np.ndarray:
        """SW reports of ``v`` (rows: ``devices``' steps ``t0 ..``), the noise from the
        PRF (module docstring, "Randomness")."""
        steps = np.arange(t0, t0 + v.shape[1], dtype=np.uint64)
        words = noise_words(self._noise, devices, steps)
        extra = _PrfIntegers(self._noise, int(devices[0]), t0)
        return self.mechanism.perturb(v, _Words(words, extra))

    def _acknowledged(self, ack: BulkAck, now: float) -> list[Outbound]:
        devices = np.frombuffer(ack.devices, dtype="<u4").astype(np.int64) - self.first
        acked = np.frombuffer(ack.acked, dtype="<i4")
        if len(devices) != len(acked):
            raise RemoteProtocolError("devices and acked differ in length", field="acked")
        if np.any((devices < 0) | (devices >= self.count)):
            raise RemoteProtocolError("acknowledges a device not mine", field="devices")
        np.maximum.at(self.acked, devices, acked)
        codes = np.frombuffer(ack.rejected_codes, dtype="u1")
        for code, n in zip(*np.unique(codes, return_counts=True), strict=True):
            if code < len(REJECT_REASONS):
                self.counters.rejected[REJECT_REASONS[code]] += int(n)
        rej_dev = np.frombuffer(ack.rejected_devices, dtype="<u4").astype(np.int64)
        rej_seq = np.frombuffer(ack.rejected_seqs, dtype="<u4").astype(np.int64)
        sent = self._pending.get(ack.seq)
        if sent is None:
            return []  # a repeated acknowledgement
        local = sent.entries["device"].astype(np.int64) - self.first
        mine = (local >= 0) & (local < self.count)  # a tampered message may hold others'
        open_ = mine.copy()
        open_[mine] = self.acked[local[mine]] < sent.entries["seq"][mine]
        if len(rej_dev):  # rejected entries are final (never sent again)
            key = sent.entries["device"].astype(np.int64) * (1 << 32) + sent.entries["seq"]
            open_ &= ~np.isin(key, rej_dev * (1 << 32) + rej_seq)
        sent.entries = sent.entries[open_]
        if len(sent.entries):
            return []  # the rest is retransmitted when its timer fires
        del self._pending[ack.seq]
        self._inflight[sent.partition] -= 1
        return self._fill(sent.partition, now)


# -- the collector --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BulkRoute:
    """What the pump does with one decoded delivery (``BulkCollector.route``): ``hello``
    or ``report`` (of ``gateway``: hand it to ``hello`` / ``ingest``), ``close`` (the stage
    closed: ``stage`` is the closing message) or ``ignore``."""

    action: Literal["hello", "report", "close", "ignore"]
    gateway: int = -1
    stage: Stage | None = None


def stage_closes(run: str, topic: str, message: Stage) -> bool:
    """Whether ``message`` closes the stage: only this run's collector (the runner) may,
    on ``ctl/stage``. A ``Stage`` on a gateway uplink (which a gateway may publish on), or
    of another run or sender, is refused (``RemoteProtocolError``, field ``topic`` or
    ``sender``, code ``schema``): one gateway must not end every gateway's run."""
    if topic != stage_topic(run):
        raise RemoteProtocolError(
            f"a stage message on {topic[:120]!r}, not on {stage_topic(run)!r}",
            field="topic",
            code="schema",
        )
    if message.run != run or message.sender != COLLECTOR_ID:
        raise RemoteProtocolError(
            f"a stage message from {message.sender!r} of run {message.run!r}: only run "
            f"{run!r}'s collector closes its stage",
            field="sender",
            code="schema",
        )
    return message.state == "closed"


@dataclass
class PendingBulk:
    """One ingested report awaiting ``BulkCollector.commit``: ``rows`` (device, seq,
    values) must be persisted first."""

    gateway: int
    report_seq: int
    rows: np.ndarray
    resolve: np.ndarray  # devices whose next seq advances on commit
    ack_devices: np.ndarray
    rejected_devices: np.ndarray
    rejected_seqs: np.ndarray
    rejected_codes: np.ndarray
    duplicates: int
    early: int
    resolved_rejections: int


@dataclass
class CollectorCounters:
    """A partition collector's counters (results.json)."""

    reports_received: int = 0
    reports_duplicate: int = 0
    reports_early: int = 0
    reports_rejected: int = 0
    rejected_resolved: int = 0
    rejections_by_reason: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(REJECT_REASONS, 0)
    )
    messages: int = 0
    hellos: int = 0
    hello_refusals: int = 0
    refused_messages: int = 0
    notices: int = 0  # Reject notices published (refused messages, reports with rejections)
    stage_messages_ignored: int = 0  # the runner's Stage messages that do not close the stage


def stored_dtype(batch_steps: int) -> np.dtype:
    """A stored row (the collector's ``reports.bin``): device, seq, the ``eps0`` the
    report declared (what ``ldpfleet trace verify`` recomputes each device's w-event
    spend from) and ``batch_steps`` values; ``entry_dtype`` is the same row."""
    return entry_dtype(batch_steps)


class BulkCollector:
    """The collector side of one partition (``partition`` of ``plan.partitions``).

    ``hello(gateway, message, now)`` admits a gateway's range; ``ingest(gateway,
    message)`` validates a report and returns a ``PendingBulk`` whose ``rows`` the pump
    persists before calling ``commit(pending, stored)``, which returns the ``BulkAck``.
    ``gateway`` is the one the uplink topic names (the broker's ACL lets a gateway
    publish only there)."""

    def __init__(self, plan: BulkPlan, partition: int = 0) -> None:
        if not 0 <= partition < plan.partitions:
            raise ParameterError(
                f"must be in 0..{plan.partitions - 1}, got {partition!r}",
                field="partition",
                limit=f"in 0..{plan.partitions - 1}",
                value=partition,
            )
        self.plan = plan
        self.partition = partition
        self.part = plan.partitions_of(0, plan.devices)
        self.owned = int((self.part == partition).sum())
        self.next_seq = np.zeros(plan.devices, dtype=np.int32)
        self.admitted = np.zeros(plan.gateways, dtype=bool)
        self.mechanism = SquareWave(plan.eps0, plan.mechanism)
        self.dtype = entry_dtype(plan.batch_steps)
        self.stored_dtype = stored_dtype(plan.batch_steps)
        self.counters = CollectorCounters()
        low, high = self.mechanism.output_low, self.mechanism.output_high
        if not -_REPORT_BOUND < low <= high < _REPORT_BOUND:  # REPORT_SUM_BITS' proof
            raise ParameterError(
                f"report_sum needs the output range inside (-1.5, 1.5), got [{low}, {high}]",
                field="mechanism",
                limit="an output range inside (-1.5, 1.5)",
                value=plan.mechanism,
            )
        # per step: the sum of the stored reports in units of 2**-REPORT_SUM_BITS (exact,
        # independent of arrival order: module docstring, "Fleet-mean sums"), and how many
        self.report_sum = np.zeros(plan.steps, dtype=np.int64)
        self.estimate_count = np.zeros(plan.steps, dtype=np.int64)
        self._pending: PendingBulk | None = None

    @property
    def expected(self) -> int:
        """Reports this partition expects: its devices x batches."""
        return self.owned * self.plan.batches

    @property
    def complete(self) -> bool:
        """Every report of every owned device resolved (stored or rejected)."""
        c = self.counters
        return c.reports_received + c.rejected_resolved >= self.expected

    def route(self, topic: str, message: Message) -> BulkRoute:
        """What becomes of one decoded delivery on ``topic`` (module docstring,
        "Admission of a delivery"): the pump acts on the answer; a message refused whole
        raises ``RemoteProtocolError`` (the pump counts it and publishes
        ``refusal_notice``). Changes nothing but ``stage_messages_ignored``."""
        if isinstance(message, Stage):
            if stage_closes(self.plan.run, topic, message):
                return BulkRoute("close", stage=message)
            self.counters.stage_messages_ignored += 1
            return BulkRoute("ignore")
        gateway = self.gateway_of(topic, message)
        if isinstance(message, BulkHello) and topic.endswith("/up/hello"):
            return BulkRoute("hello", gateway)
        if isinstance(message, BulkReport) and topic.endswith("/up/bulk"):
            return BulkRoute("report", gateway)
        raise RemoteProtocolError(
            f"{message.type_name()!r} on {topic!r}", field="type", code="schema"
        )

    def gateway_of(self, topic: str, message: Message) -> int:
        """The gateway whose uplink ``topic`` is, spelled as that gateway's own topic
        (``gw/g{n}/up/{kind}`` of this partition, ``kind`` the message's): ``g01``, ``g+1``
        or ``g١`` also parse to 1, but no ACL rule names them as gateway 1's
        (``RemoteProtocolError``, field ``topic``, code ``schema``)."""
        gateway = gateway_of_topic(topic)
        kind = "hello" if isinstance(message, BulkHello) else "bulk"
        level = self.plan.partition_level_of(self.partition)
        if gateway < 0 or topic != gateway_up(self.plan.run, gateway, kind, level):
            raise RemoteProtocolError(
                f"{topic[:120]!r} is not gateway {gateway}'s {kind} uplink in this partition",
                field="topic",
                code="schema",
            )
        return gateway

    def hello(self, gateway: int, message: BulkHello, now: float) -> list[Outbound]:
        """Admit ``gateway``'s device range if its hello matches the plan."""
        plan = self.plan
        self.counters.hellos += 1
        first, count = plan.gateway_range(gateway) if gateway < plan.gateways else (-1, 0)
        problems = [
            (name, got, want)
            for name, got, want in (
                ("sender", message.sender, f"g{gateway}"),
                ("gateway", message.gateway, gateway),
                ("first", message.first, first),
                ("count", message.count, count),
                ("mechanism", message.mechanism, plan.mechanism),
                ("w", message.w, plan.w),
                ("steps", message.steps, plan.steps),
                ("batch_steps", message.batch_steps, plan.batch_steps),
            )
            if got != want
        ]
        for name, got, want in (("eps", message.eps, plan.eps), ("eps0", message.eps0, plan.eps0)):
            if abs(got - want) > _TOLERANCE * want:
                problems.append((name, got, want))
        if problems:
            self.counters.hello_refusals += 1
            name, got, want = problems[0]
            raise RemoteProtocolError(
                f"hello of gateway {gateway}: {name} is {got!r}, the run has {want!r}",
                field=name,
                code="mismatch",
            )
        self.admitted[gateway] = True
        admit = BulkAdmit(
            run=plan.run, sender="collector", partition=self.partition, window=plan.admit_window
        )
        level = plan.partition_level_of(self.partition)
        return [Outbound(gateway_inbox(plan.run, gateway, level), admit)]

    # a hot path; split in helpers at no measured cost (scripts/G_bench_ingest.py, old
    # against new alternately: new/old median 0.995 at 2,000 rows, 1.003 at 65,536)
    def ingest(self, gateway: int, message: BulkReport) -> PendingBulk:
        """Validate every entry of ``message`` (module docstring); nothing changes until
        ``commit``."""
        if self._pending is not None:
            raise LocalProtocolError("commit the previous report first", field="pending")
        e = self._entries(message)
        dev = e["device"].astype(np.int64)
        seq = e["seq"].astype(np.int64)
        code = np.full(len(e), 255, dtype=np.uint8)  # 255: not rejected
        acl, safe = self._acl_refused(gateway, message, dev)
        code[acl] = 0
        plan = self.plan
        header_ok = (
            message.mechanism == plan.mechanism
            and message.w == plan.w
            and plan.batch_steps == message.batch_steps
        )
        if not header_ok:
            code[~acl] = 3  # mismatch, not resolving
        dup, early, cur = self._sequence_classes(code, seq, safe)
        resolving = self._current_rejections(e, cur, code)
        accepted = cur & (code == 255)
        rows = np.empty(int(accepted.sum()), dtype=self.stored_dtype)
        rows["device"] = e["device"][accepted]
        rows["seq"] = e["seq"][accepted]
        rows["eps0"] = e["eps0"][accepted]
        rows["values"] = e["values"][accepted]
        rejected = code != 255
        pending = PendingBulk(
            gateway=gateway,
            report_seq=message.seq,
            rows=rows,
            resolve=dev[accepted | resolving],
            ack_devices=dev[~acl],
            rejected_devices=dev[rejected],
            rejected_seqs=seq[rejected],
            rejected_codes=code[rejected],
            duplicates=int(dup.sum()),
            early=int(early.sum()),
            resolved_rejections=int(resolving.sum()),
        )
        self._pending = pending
        return pending

    def _entries(self, message: BulkReport) -> np.ndarray:
        """``message``'s entries as rows of ``entry_dtype``; a payload that is not whole
        rows, or more than ``MAX_ENTRIES`` of them, is refused whole (counted)."""
        B = message.batch_steps
        itemsize = entry_dtype(B).itemsize
        if len(message.entries) % itemsize or len(message.entries) // itemsize > MAX_ENTRIES:
            self.counters.refused_messages += 1
            raise RemoteProtocolError(
                f"{len(message.entries)} bytes are not at most {MAX_ENTRIES} rows of "
                f"{itemsize} bytes",
                field="entries",
                code="out_of_range",
            )
        return np.frombuffer(message.entries, dtype=entry_dtype(B))

    def _acl_refused(
        self, gateway: int, message: BulkReport, dev: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Which entries the ACL refuses (code 0): a device outside the fleet, not the
        gateway's or not this partition's, a gateway not admitted or a sender not its own
        (every entry), a device's second entry in the report; and the device indices made
        safe to look up (0 for a device outside the fleet)."""
        plan = self.plan
        n = len(dev)
        in_fleet = dev < plan.devices
        safe = np.where(in_fleet, dev, 0)
        acl = ~in_fleet | (safe // plan.gateway_devices != gateway)
        acl |= self.part[safe] != self.partition
        if (
            gateway >= plan.gateways
            or not self.admitted[gateway]
            or message.sender != f"g{gateway}"
        ):
            acl[:] = True
        first_seen = np.zeros(n, dtype=bool)
        first_seen[np.unique(dev, return_index=True)[1]] = True
        acl |= ~first_seen
        return acl, safe

    def _sequence_classes(
        self, code: np.ndarray, seq: np.ndarray, safe: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The entries not rejected yet, by their seq against the device's next one:
        duplicates, early and current; an entry past the last batch gets code 1 here."""
        plan = self.plan
        live = code == 255
        past = live & (seq >= plan.batches)
        code[past] = 1
        live &= ~past
        nxt = self.next_seq[safe].astype(np.int64)
        dup = live & (seq < nxt)
        early = live & (seq > nxt)
        cur = live & (seq == nxt)
        return dup, early, cur

    def _current_rejections(self, e: np.ndarray, cur: np.ndarray, code: np.ndarray) -> np.ndarray:
        """Validate the current entries: a value outside the mechanism's domain (code 1),
        ``eps0`` over the budget (2, NaN included) or not the plan's (3), first reason
        wins; returns the entries rejected here (they resolve their seq on commit)."""
        plan = self.plan
        bad_value = ~self.mechanism.in_domain(e["values"]).all(axis=1)
        eps0 = e["eps0"]
        over = ~(eps0 * plan.w <= plan.eps * (1 + _TOLERANCE))  # NaN included
        other = np.abs(eps0 - plan.eps0) > _TOLERANCE * plan.eps0
        resolving = np.zeros(len(e), dtype=bool)
        for reason, mask in ((1, bad_value), (2, over), (3, other)):
            hit = cur & mask & (code == 255)
            code[hit] = reason
            resolving |= hit
        return resolving

    def commit(self, pending: PendingBulk, stored: int) -> list[Outbound]:
        """``pending``'s ``stored`` rows are persisted: advance the devices, count, and
        return the acknowledgement."""
        if pending is not self._pending:
            raise LocalProtocolError("not the report awaiting commit", field="pending")
        if stored != len(pending.rows):
            raise LocalProtocolError(
                f"{stored} rows persisted, the report has {len(pending.rows)}", field="stored"
            )
        self._pending = None
        plan = self.plan
        self.next_seq[pending.resolve] += 1
        c = self.counters
        c.messages += 1
        c.reports_received += len(pending.rows)
        c.reports_duplicate += pending.duplicates
        c.reports_early += pending.early
        c.reports_rejected += len(pending.rejected_codes)
        c.rejected_resolved += pending.resolved_rejections
        for code, count in zip(*np.unique(pending.rejected_codes, return_counts=True), strict=True):
            c.rejections_by_reason[REJECT_REASONS[code]] += int(count)
        if len(pending.rows):  # exact sums (scripts/A_bench_commit.py, against the float
            # sum of the estimates, CPU time alternately: these lines new/old 0.90 at 2,000
            # rows, 0.95 at 65,536; ingest + commit 0.98 and 1.02, within the noise)
            _add_reports(self.report_sum, self.estimate_count, pending.rows, plan.batch_steps)
        ack = BulkAck(
            run=plan.run,
            sender="collector",
            seq=pending.report_seq,
            partition=self.partition,
            devices=pending.ack_devices.astype("<u4").tobytes(),
            acked=(self.next_seq[pending.ack_devices] - 1).astype("<i4").tobytes(),
            rejected_devices=pending.rejected_devices.astype("<u4").tobytes(),
            rejected_seqs=pending.rejected_seqs.astype("<u4").tobytes(),
            rejected_codes=pending.rejected_codes.astype("u1").tobytes(),
        )
        level = plan.partition_level_of(self.partition)
        out = [Outbound(gateway_inbox(plan.run, pending.gateway, level), ack)]
        if len(pending.rejected_codes):
            out.append(self._entries_notice(pending))
        return out

    def fleet_means(self) -> np.ndarray:
        """This partition's mean estimate per step (``fleet_means``; NaN at a step
        without a stored row)."""
        return fleet_means(self.plan, self.report_sum, self.estimate_count)

    def refusal_notice(self, topic: str, kind: str, error: RemoteProtocolError) -> Outbound:
        """The ``Reject`` notice on ``svc/collector/reject`` of a whole message refused
        (undecodable, oversize, a hello that does not match the run): what the per-device
        collector publishes for each refused message (``protocol.events``), the trace's
        record of it."""
        self.counters.notices += 1
        route = gateway_route(topic)
        return self._notice(
            route[0] if route else "", topic, kind, error.field, error.reason, error.code or ""
        )

    def _entries_notice(self, pending: PendingBulk) -> Outbound:
        """One ``Reject`` notice for the rejected entries of one report: how many for each
        reason (the entries themselves are in the ``BulkAck``)."""
        self.counters.notices += 1
        codes, counts = np.unique(pending.rejected_codes, return_counts=True)
        reasons = ", ".join(
            f"{REJECT_REASONS[c]} {n}" for c, n in zip(codes.tolist(), counts.tolist(), strict=True)
        )
        level = self.plan.partition_level_of(self.partition)
        return self._notice(
            f"g{pending.gateway}",
            gateway_up(self.plan.run, pending.gateway, "bulk", level),
            BulkReport.__struct_config__.tag,
            "entries",
            f"report {pending.report_seq}: {len(pending.rejected_codes)} entries rejected "
            f"({reasons})",
            REJECT_REASONS[int(codes[np.argmax(counts)])],
        )

    def _notice(self, gateway, topic, kind, field_name, reason, code) -> Outbound:
        notice = Reject(
            run=self.plan.run, sender="collector", seq=min(self.counters.notices, MAX_STEPS),
            device=gateway[:64], topic=topic[:300], kind=kind[:64], field=field_name[:100],
            reason=reason[:500], code=code[:32],
        )  # fmt: skip
        return Outbound(svc(self.plan.run, "collector", "reject"), notice)

    def summary(self) -> dict:
        """Counters and the lost count (expected minus resolved)."""
        c = self.counters
        lost = self.expected - c.reports_received - c.rejected_resolved
        return {
            "partition": self.partition,
            "devices": self.owned,
            "reports_expected": self.expected,
            "reports_received": c.reports_received,
            "reports_lost": lost,
            "reports_rejected": c.reports_rejected,
            "rejected_resolved": c.rejected_resolved,
            "rejections_by_reason": dict(c.rejections_by_reason),
            "reports_duplicate": c.reports_duplicate,
            "reports_early": c.reports_early,
            "messages": c.messages,
            "hellos": c.hellos,
            "hello_refusals": c.hello_refusals,
            "refused_messages": c.refused_messages,
            "stage_messages_ignored": c.stage_messages_ignored,
        }


def _add_reports(report_sum: np.ndarray, count: np.ndarray, rows: np.ndarray, B: int) -> None:
    """Add ``rows``' reports to ``report_sum`` (per step, units of ``2**-REPORT_SUM_BITS``,
    int64) and one per value to ``count``, over the span of steps the rows cover. Exact
    (the proof at ``REPORT_SUM_BITS``): the result does not depend on the rows' order or on
    how they were grouped into reports."""
    seq = rows["seq"].astype(np.int64)
    low, high = int(seq.min()), int(seq.max())
    first, last = low * B, (high + 1) * B
    steps = ((seq - low) * B)[:, None] + np.arange(B)
    q = np.rint(rows["values"] * _REPORT_SCALE)  # integers, |q| <= 1.5 * 2**35
    report_sum[first:last] += np.bincount(steps.ravel(), q.ravel(), minlength=last - first).astype(
        np.int64
    )
    count[first:last] += np.bincount(steps.ravel(), minlength=last - first)


def fleet_means(plan: BulkPlan, report_sum: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The mean estimate per step in physical units, from the per-step ``report_sum``
    (``BulkCollector.report_sum``, or several partitions' added) and ``count``: the
    mechanism's estimate of the mean report, which is the mean of the per-report estimates
    (``SquareWave.estimate``, ``(y - C) / S``, is affine). NaN where ``count`` is 0. The
    same arrays in give the same bits out, whatever order the reports came in.

    ``mean(y) - C`` is formed without cancellation: ``(report_sum - n * Cq) / n * 2**-35 +
    (Cq * 2**-35 - C)`` with ``Cq = round(C * 2**35)``, the first difference exact in int64
    (``0 <= C < 1``: ``|n Cq| <= 2**27 * 2**35``, the difference at most ``1.5 n 2**35 <
    2**63``), the second exact (Sterbenz) or below ``2**-36``; then ``/ S``, ``* (hi -
    lo)``, ``+ lo`` as ``estimate`` does per report. So the mean is within a few roundings
    of its exact value, relative to each term (rounding the mean report first and then
    subtracting ``C`` would lose ``|hi - lo| / S`` times more)."""
    mechanism = SquareWave(plan.eps0, plan.mechanism)
    centre, scale = _estimate_affine(mechanism)
    units = round(centre * _REPORT_SCALE)  # Python int, 0 <= units <= 2**35
    n = np.asarray(count, dtype=np.int64)
    centred = np.asarray(report_sum, dtype=np.int64) - n * units  # exact (docstring)
    offset = units / _REPORT_SCALE - centre
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_centred = centred.astype(np.float64) / n / _REPORT_SCALE + offset
    return plan.lo + mean_centred / scale * (plan.hi - plan.lo)


def _estimate_affine(mechanism: SquareWave) -> tuple[float, float]:
    """``(C, S)`` with ``mechanism.estimate(y) == (y - C) / S`` bit for bit (its own
    expressions; tests/unit/test_bulk_fleet_mean_order.py checks they agree)."""
    scale = 2.0 * mechanism.b * mechanism.gap
    if mechanism.variant == "sw":
        return mechanism.q * (1.0 + 2.0 * mechanism.b) / 2.0, scale
    return mechanism.q / 2.0, scale
