"""Square Wave stream reporting under w-event LDP: the device and collector machines.

Theory of operation (seed 003 §III; Kellaris et al. 2014 for w-event privacy; Li et al.
2020 for Square Wave). A device holds a stream x_0..x_{S-1}, clips it to FIXED public
bounds [lo, hi] and maps it to [0, 1]. Each step is privatised independently by Square Wave
with ε0 = ε/w, so any window of w consecutive steps costs ε by sequential composition; the
device's ledger charges ε0 per step to every window containing it and refuses a step that
would overspend (nothing is released then). Reports are batched: batch ``seq`` carries steps
[seq·B, min((seq+1)·B, S)), each report stating mechanism, ε0, w and seq.

Flow control and delivery (DESIGN.md, "Facts measured"): a broker silently drops messages
queued for a slow subscriber, so the collector grants *credit*. A device first says
``Hello``; the collector admits at most ``max_in_flight / credit_window`` devices at a time
and answers each persisted batch with an ``Ack(seq=highest contiguous persisted,
credit=batches the device may have sent)``. Upstream messages in flight therefore never
exceed ``max_in_flight``, whatever the fleet size. A device retransmits unacknowledged
batches (and its hello) after ``retransmit_after`` seconds, backing off: each further
retransmission of the same message waits twice as long, up to ``2 ** BACKOFF_DOUBLINGS`` x
``retransmit_after``, from the start again once the collector re-announces the stage (a
collector that fell behind is not buried under retransmissions: a 1,000-device fleet
starved of CPU sent ~140 hellos/s at a fixed interval and never recovered); the collector
deduplicates by (device, seq), and acknowledges only what it has persisted
(``confirm_persisted``).

Central model (``mechanism = "raw"``, ``protocol.raw``): the same machines carry clipped,
normalised readings in the clear to a trusted collector that performs the one private
release (GC-DP). Then ``eps = eps0 = 0``, the device's ledger holds a ``RawAccount`` (0 spent,
never charged), every report states ``mechanism = "raw"`` and ``eps0 = 0``, and the hello's
``eps`` / ``w`` declare the budget and window of the collector's central release that
protects the readings (``gcdp.eps_rel`` / ``gcdp.window``), not a local spend.

Budget safety: a step the ledger refuses is never privatised; the device answers with ONE
``BudgetRefused`` (account, step, the ε asked, what is left) on ``up/budget_refused`` instead
of going silent, sends every complete batch before the refused step, and is finished
(state ``refused``) once those are acknowledged. The collector stops expecting the batches
from the refused step on (they count as ``reports_refused``, not lost), so the stage closes
without waiting for its deadline.

Silence: a collector that is gone sends no goodbye, and a device must not retransmit to
it forever. The pump tells the reporter when it listens (``listen(now, silence_timeout)``,
at every start of a pump, a restored reporter's too); every delivery is a word from the
collector (``receive`` notes its ``now``, ``heard`` one the pump could not decode), and
once ``silence_timeout`` seconds pass without one (``now >= last word + silence_timeout``
exactly, at ``handle_timer``) the reporter gives up: ``gave_up`` holds the sentence "no
message from the collector for S s (state ..., N retransmissions)", it emits
``CollectorSilent``, and it sends, retransmits and accepts nothing more (``stopped``). Its
``state`` stays the protocol's (the stream did not finish: ``finished`` stays False, so
the run counts the device as unfinished and a state file keeps it for a resumed run, which
listens afresh). A finished reporter never gives up; ``None`` (or ``math.inf``) never.
The deadline is ``protocol.liveness.SilenceWatch``'s (``ReporterSilence``).

Error policy: the collector (a server facing many peers) refuses a bad message, counts it,
publishes a ``Reject`` naming the field and keeps going; it never lets the message reach
analytics. A device treats a malformed instruction from the collector as terminal
(``RemoteProtocolError``, state ``error``); messages from anyone else are refused.

Rejections: a rejection no retransmission of the same message can change
(``FINAL_REASONS``) of a message on a known device's own topic also goes to the device's
inbox, naming the message by ``message_seq`` and ``digest`` (``codec.message_digest``). The
device rebuilds the message it sent under that kind and seq; only if the digests agree does
it stop (state ``rejected``: nothing more is sent or retransmitted), record the rejection
and send one ``Withdraw``. Any other notice (another device's, a message it never sent —
an impostor's changed copy on its topic —, a transient reason) is counted in
``rejects_ignored``. The notice is trusted like an ``Ack`` (only the collector publishes on
``in/collector``); the ``Withdraw`` like a ``BudgetRefused`` (only the device publishes on
its ``up`` topics). The collector counts a withdrawn device as finished (failed): it frees
its credit slot, stores nothing more of it, and closes the stage once every device is
complete or withdrawn.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import (
    LocalProtocolError,
    ParameterError,
    RemoteProtocolError,
)
from ldpfleet.protocol.events import Event, Machine, PeerFacingMachine
from ldpfleet.protocol.ledger import PrivacyLedger, RawAccount, WindowAccount
from ldpfleet.protocol.liveness import CollectorSilent, SilenceWatch
from ldpfleet.protocol.mechanism_contract import check_outputs, domain_mask
from ldpfleet.protocol.mechanisms import mechanism_factory, stream_mechanism
from ldpfleet.protocol.messages import (
    MAX_BATCH,
    MAX_STEPS,
    Ack,
    BudgetRefused,
    Hello,
    Message,
    Reject,
    Stage,
    SwReport,
    Withdraw,
)
from ldpfleet.protocol.sw import normalise

STAGE = "stream"
LEDGER_ACCOUNT = "stream"
RAW = "raw"
# The collector ledger account that pays for the central release of raw readings.
CENTRAL_ACCOUNT = "gcdp_release"
WAITING_HELLO_FACTOR = 6  # a device waiting for credit repeats its hello this much slower
BACKOFF_DOUBLINGS = 3  # a message retransmitted k times waits 2**min(k, 3) x retransmit_after
_REL_TOL = 1e-12
# Rejections no retransmission of the same message can change (the message itself is out of
# the run's parameters or domain): the collector sends them to the device's inbox too, and
# the device stops. Not here: ``no_credit`` and ``out_of_order`` (a restarted collector
# refuses a retransmission until the device's fresh hello), nor anything about a topic or a
# sender the device does not own (``wrong_sender``, ``unknown_sender``: only impostors).
FINAL_REASONS = frozenset({"parameter_mismatch", "out_of_range", "replay"})
# messages a device sends on its own ``up`` topics, which a final rejection may name
_OWN_KINDS = ("hello", "sw_report", "budget_refused")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class StreamConfig:
    """Parameters both sides agree on (from the scenario); validated on construction."""

    run: str
    mechanism: str
    eps: float
    w: int
    steps: int
    batch_steps: int
    lo: float
    hi: float
    retransmit_after: float = 5.0
    # collector partitions (DESIGN.md, "Scale"): > 1 puts each device's topics under its
    # partition's level (``topics.partition_of``); 1 is the unpartitioned layout
    partitions: int = 1

    def __post_init__(self) -> None:
        for name in ("eps", "lo", "hi", "retransmit_after"):
            if not _is_number(getattr(self, name)):
                raise ParameterError(
                    "must be a real number",
                    field=name,
                    limit="a real number",
                    value=getattr(self, name),
                )
        for name in ("w", "steps", "batch_steps"):
            if not _is_int(getattr(self, name)):
                raise ParameterError(
                    "must be an integer", field=name, limit="an integer", value=getattr(self, name)
                )
        topics.check_ident(self.run, "run")
        mechanism_factory(self.mechanism)  # resolves the name (built-in, import, entry point)
        if not (math.isfinite(self.eps) and 0 < self.eps <= 50):
            raise ParameterError(
                f"must be in (0, 50], got {self.eps}",
                field="eps",
                limit="in (0, 50]",
                value=self.eps,
            )
        if not (isinstance(self.w, int) and 1 <= self.w <= 100_000):
            raise ParameterError(
                f"must be an integer in [1, 100000], got {self.w}",
                field="w",
                limit="an integer in [1, 100000]",
                value=self.w,
            )
        if not (isinstance(self.steps, int) and 1 <= self.steps <= MAX_STEPS):
            raise ParameterError(
                f"must be an integer in [1, {MAX_STEPS}]",
                field="steps",
                limit=f"an integer in [1, {MAX_STEPS}]",
                value=self.steps,
            )
        if not (isinstance(self.batch_steps, int) and 1 <= self.batch_steps <= MAX_BATCH):
            raise ParameterError(
                f"must be an integer in [1, {MAX_BATCH}]",
                field="batch_steps",
                limit=f"an integer in [1, {MAX_BATCH}]",
                value=self.batch_steps,
            )
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo < self.hi):
            raise ParameterError(
                f"need finite lo < hi, got [{self.lo}, {self.hi}]",
                field="bounds",
                limit="finite lo < hi",
                value=(self.lo, self.hi),
            )
        if not math.isfinite(self.hi - self.lo):  # e.g. [-1e308, 1e308]: x / inf = 0
            raise ParameterError(
                "hi - lo overflows to infinity (the width must be finite), got "
                f"[{self.lo}, {self.hi}]",
                field="bounds",
                limit="a finite width hi - lo",
                value=(self.lo, self.hi),
            )
        if not (math.isfinite(self.retransmit_after) and self.retransmit_after > 0):
            raise ParameterError(
                "must be > 0 seconds",
                field="retransmit_after",
                limit="> 0 seconds",
                value=self.retransmit_after,
            )
        topics.partition_of("", self.partitions)  # 1..MAX_PARTITIONS, else ParameterError

    def partition(self, device: str) -> int | None:
        """The partition level of ``device``'s topics (``None`` when unpartitioned)."""
        return topics.device_partition(device, self.partitions)

    @property
    def eps0(self) -> float:
        """Per-step budget ε/w spent ON THE DEVICE (0 for ``raw``: nothing is spent there;
        ``eps`` and ``w`` then state the central release's budget and window)."""
        return 0.0 if self.mechanism == RAW else self.eps / self.w

    @property
    def n_batches(self) -> int:
        """Report messages per device."""
        return -(-self.steps // self.batch_steps)

    def batch_span(self, seq: int) -> tuple[int, int]:
        """Steps [t0, t1) carried by batch ``seq``."""
        t0 = seq * self.batch_steps
        return t0, min(t0 + self.batch_steps, self.steps)

    @property
    def raw(self) -> bool:
        """Readings travel in the clear (central model); nothing is spent on the device."""
        return self.mechanism == RAW

    def mechanism_object(self):
        """The per-step randomizer at ε0 (the identity for ``raw``): any mechanism of the
        contract in ``protocol.mechanism_contract``, built by ``protocol.mechanisms``."""
        return stream_mechanism(self.mechanism, self.eps0)


def _opens_the_stage(message: Message) -> bool:
    """A (re)announcement of the stream stage: a collector that may not know us yet."""
    return isinstance(message, Stage) and message.stage == STAGE and message.state == "open"


# Events ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadingsRefused(Event):
    """The ledger refused to privatise steps from ``t`` on; they were not released."""

    t: int
    reason: str


@dataclass(frozen=True, slots=True)
class StreamDone(Event):
    """Every batch of this device was acknowledged (persisted by the collector)."""


@dataclass(frozen=True, slots=True)
class StreamClosed(Event):
    """The collector closed the stage; ``complete`` says whether all batches were acked."""

    complete: bool
    detail: str


@dataclass(frozen=True, slots=True)
class StreamRejected(Event):
    """The collector finally rejected this device's message ``kind`` number ``seq``
    (``field``, ``code``, ``reason``: the limit and the value): the device stopped."""

    kind: str
    seq: int
    field: str
    code: str
    reason: str


@dataclass(frozen=True, slots=True)
class ReportAccepted(Event):
    """A valid, new batch: the pump must persist it, then call ``confirm_persisted``."""

    device: str
    seq: int
    t0: int
    values: list[float]


@dataclass(frozen=True, slots=True)
class DeviceComplete(Event):
    """All batches of ``device`` are persisted."""

    device: str


@dataclass(frozen=True, slots=True)
class StageClosed(Event):
    """The stream stage ended; ``complete`` is True when every device delivered everything."""

    complete: bool
    reason: str


# Device side ----------------------------------------------------------------------------


def check_silence_timeout(silence_timeout: float | None) -> float | None:
    """``silence_timeout`` as a device accepts it: None (never give up) or seconds > 0
    (``math.inf``: never).

    Returns:
        The value, unchanged.

    Raises:
        ParameterError: NaN, 0, a negative number, a boolean or a non-number (naming
            ``silence_timeout``, the limit and the value).
    """
    if silence_timeout is not None and (
        isinstance(silence_timeout, bool)
        or not isinstance(silence_timeout, int | float)
        or not silence_timeout > 0  # NaN fails too
    ):
        raise ParameterError(
            f"must be None (never give up) or > 0 seconds, got {silence_timeout!r}",
            field="silence_timeout",
            limit="None or > 0 seconds",
            value=silence_timeout,
        )
    return silence_timeout


class ReporterSilence(SilenceWatch):
    """A stream device's deadline on its collector's silence (the module docstring,
    "Silence"): ``SilenceWatch``'s rules with the reporter's sentence."""

    def __init__(self, reporter: StreamReporter, timeout: float) -> None:
        super().__init__(reporter.config.run, timeout)
        self.reporter = reporter

    def _sentence(self) -> str:
        reporter = self.reporter
        return (
            f"no message from the collector for {self.timeout:g} s "
            f"(state {reporter.state}, {reporter.retransmissions} retransmissions)"
        )


class StreamReporter(Machine):
    """Device side: privatise readings, report batches as credit allows, retransmit, and
    give up on a collector silent for longer than the pump's ``silence_timeout``."""

    # the give-up's sentence and the deadline (``listen``); class defaults, so that a
    # reporter pickled before they existed (a state file) still loads
    gave_up: str | None = None
    _silence: ReporterSilence | None = None

    def __init__(
        self,
        config: StreamConfig,
        device: str,
        rng: np.random.Generator,
        ledger: PrivacyLedger | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        self.device = topics.check_ident(device, "device")
        self._partition = config.partition(device)
        self._rng = rng
        self._mechanism = config.mechanism_object()
        self.ledger = ledger if ledger is not None else PrivacyLedger(device)
        self.ledger.open_account(
            LEDGER_ACCOUNT,
            RawAccount(CENTRAL_ACCOUNT) if config.raw else WindowAccount(config.eps, config.w),
        )
        self.values = np.full(config.steps, np.nan)
        self.privatised = 0  # steps privatised so far
        self.refused_from: int | None = None
        self.refusal: BudgetRefused | None = None  # what was sent to the collector
        self.acked = -1
        self.credit = 0
        self._next_seq = 0
        self._sent_at: dict[int, float] = {}
        self._hello_sent_at: float | None = None
        # retransmissions so far of each unacknowledged batch, and of the unanswered hello
        self._tries: dict[int, int] = {}
        self._hello_tries = 0
        # idle -> hello -> waiting|streaming -> done | refused | rejected | closed | error
        self.state = "idle"
        # the collector's final rejection of one of my messages (kind, seq, field, code,
        # reason), and the withdrawal sent for it; notices naming no message I sent
        self.rejection: dict | None = None
        self.withdrawal: Withdraw | None = None
        self.rejects_ignored = 0
        self.retransmissions = 0
        # seconds from a batch's first transmission to its acknowledgement (the collector
        # acks after its commit), for batches sent once: the fleet's end-to-end latency
        self.ack_latencies: list[float] = []
        self._first_sent: dict[int, float] = {}
        # why this device stopped waiting for a silent collector (None: it did not)
        self.gave_up = None
        self._silence = None  # the deadline on the collector's silence (``listen``)

    @property
    def finished(self) -> bool:
        """No further input will change anything."""
        return self.state in ("done", "refused", "rejected", "closed", "error")

    @property
    def stopped(self) -> bool:
        """The pump may stop: the stream is finished, or the device gave up on a silent
        collector (``gave_up``; then ``finished`` is False: the stream did not end)."""
        return self.finished or self.gave_up is not None

    def listen(self, now: float, silence_timeout: float | None) -> None:
        """The pump listens for the collector from ``now`` on: the device gives up once
        ``silence_timeout`` seconds pass without a delivery (None or ``math.inf``: never).
        Called at every start of a pump, a restored reporter's too: the deadline of an
        earlier pump (another process's clock) and its give-up are forgotten.

        Returns:
            None.

        Raises:
            ParameterError: ``silence_timeout`` is neither None nor > 0 seconds.
        """
        timeout = check_silence_timeout(silence_timeout)
        self.gave_up = None
        self._silence = None
        if timeout is not None:
            self._silence = ReporterSilence(self, float(timeout))
            self._silence.start(now)

    def heard(self, now: float) -> None:
        """A delivery reached the device at ``now``, whatever it was (``receive`` calls
        this itself; the pump calls it for one it could not decode): the collector's
        silence is counted from ``now``."""
        if self._silence is not None:
            self._silence.heard(now)

    @property
    def last_batch(self) -> int:
        """The last batch this device will send: all of them, or (after a ledger refusal)
        the last one complete before the refused step (``-1``: none)."""
        if self.refused_from is None:
            return self.config.n_batches - 1
        return self.refused_from // self.config.batch_steps - 1

    def _topic(self, kind: str) -> str:
        return topics.up(self.config.run, self.device, kind, self._partition)

    def start(self, now: float) -> None:
        """Announce the stream to the collector."""
        if self.state != "idle":
            raise LocalProtocolError(f"start() in state {self.state}")
        self.state = "hello"
        self._send_hello(now)

    def _send_hello(self, now: float) -> None:
        self._send(self._topic("hello"), self._hello())
        self._hello_sent_at = now

    def _hello(self) -> Hello:
        c = self.config
        return Hello(
            run=c.run,
            sender=self.device,
            mechanism=c.mechanism,  # type: ignore[arg-type]
            eps=c.eps,
            w=c.w,
            eps0=c.eps0,
            steps=c.steps,
            batch_steps=c.batch_steps,
            lo=c.lo,
            hi=c.hi,
        )

    def add_readings(self, readings: np.ndarray | Iterable[float], now: float) -> None:
        """Privatise the next readings (physical units, in step order) and send what credit
        allows. A step the ledger refuses is not privatised and nothing after it is."""
        if self.finished:
            raise LocalProtocolError(f"add_readings() in state {self.state}")
        if self.gave_up is not None:
            raise LocalProtocolError(f"add_readings() after giving up: {self.gave_up}")
        x = np.asarray(readings, dtype=float).ravel()
        start = self.privatised
        if self.refused_from is not None or len(x) == 0:
            return
        if start + len(x) > self.config.steps:
            raise LocalProtocolError(
                f"{start + len(x)} readings exceed the declared {self.config.steps} steps"
            )
        if not np.all(np.isfinite(x)):
            raise LocalProtocolError("readings must be finite (a sensor fault is not data)")
        c = self.config
        if c.raw:  # central model: nothing is privatised here, nothing is spent
            granted, refusal = len(x), None
        else:
            granted, refusal = self.ledger.charge_run(
                LEDGER_ACCOUNT, c.eps0, t0=start, count=len(x), mechanism=c.mechanism
            )
        if refusal is not None:
            self._refuse(start + granted, refusal.reason)
        if granted:
            v = normalise(x[:granted], self.config.lo, self.config.hi)
            self.values[start : start + granted] = self._privatise(v)
            self.privatised += granted
        self._send_ready(now)

    def _privatise(self, v: np.ndarray) -> np.ndarray:
        """The mechanism's reports for ``v``, checked like at load time (right shape, finite
        numbers, every one accepted by the mechanism's own ``in_domain``: the collector
        would reject the batch, the device retransmit it, and the run wait for its stage
        timeout, 600 s by default): a user mechanism failing here stops this device with
        one sentence naming ``mechanism`` (``ParameterError``) instead of a NaN the wire
        cannot carry."""
        name = self.config.mechanism
        try:
            y = self._mechanism.perturb(v, self._rng)
        except (Exception, SystemExit) as error:
            raise ParameterError(
                f"{name!r} perturb failed on device {self.device}: {type(error).__name__}: {error}",
                field="mechanism",
                limit="a perturb that does not raise (the mechanism contract)",
                value=name,
            ) from error
        return check_outputs(self._mechanism, v, y, name)

    def _refuse(self, t: int, reason: str) -> None:
        """The ledger refused step ``t``: nothing from ``t`` on is privatised; tell the
        collector (one ``BudgetRefused``) so it does not wait for those batches."""
        c = self.config
        self.refused_from = t
        account = self.ledger.account(LEDGER_ACCOUNT)
        assert isinstance(account, WindowAccount)
        _, spent = account._worst_window_of_run(t, 0.0, 1)
        self.refusal = BudgetRefused(
            run=c.run,
            sender=self.device,
            account=LEDGER_ACCOUNT,
            request="sw_report",
            round=t,
            requested=c.eps0,
            remaining=min(max(0.0, c.eps - spent), 1e6),
            reason=reason[:500],
        )
        self._send(self._topic("budget_refused"), self.refusal)
        self._emit(ReadingsRefused(t, reason))
        self._check_finished()

    def _check_finished(self) -> bool:
        """Every batch this device will send is acknowledged: it is done (or refused)."""
        if self.acked < self.last_batch or self.state not in ("hello", "waiting", "streaming"):
            return False
        self.state = "done" if self.refused_from is None else "refused"
        self._emit(StreamDone())
        return True

    def _batch_ready(self, seq: int) -> bool:
        _, t1 = self.config.batch_span(seq)
        return self.privatised >= t1

    def _send_batch(self, seq: int, now: float) -> None:
        self._send(self._topic("sw_report"), self._report(seq))
        if seq in self._sent_at:
            self._first_sent.pop(seq, None)  # retransmitted: its latency is not measured
        else:
            self._first_sent[seq] = now
        self._sent_at[seq] = now

    def _report(self, seq: int) -> SwReport:
        c = self.config
        t0, t1 = c.batch_span(seq)
        return SwReport(
            run=c.run,
            sender=self.device,
            seq=seq,
            t0=t0,
            mechanism=c.mechanism,  # type: ignore[arg-type]
            eps0=c.eps0,
            w=c.w,
            values=self.values[t0:t1].tolist(),
        )

    def _send_ready(self, now: float) -> None:
        if self.state != "streaming":
            return
        while self._next_seq < min(self.credit, self.last_batch + 1) and self._batch_ready(
            self._next_seq
        ):
            self._send_batch(self._next_seq, now)
            self._next_seq += 1

    def receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        """Consume one inbox or control message (any delivery is a word against the
        collector's silence: ``heard``). After giving up, nothing is consumed."""
        if self.gave_up is not None:
            return
        self.heard(now)
        if topic.sender != topics.COLLECTOR_ID or message.sender != topics.COLLECTOR_ID:
            raise RemoteProtocolError(
                f"{message.type_name()} from {message.sender!r}: devices take stream "
                "instructions only from the collector",
                field="sender",
            )
        if self.finished:
            if self.withdrawal is not None and _opens_the_stage(message):
                self._send(self._topic("withdraw"), self.withdrawal)  # a restarted collector
            return
        try:
            self._receive_from_collector(message, now)
        except RemoteProtocolError:
            self.state = "error"
            raise

    def _receive_from_collector(self, message: Message, now: float) -> None:
        if isinstance(message, Ack):
            if message.seq >= self._next_seq:
                raise RemoteProtocolError(
                    f"ack for batch {message.seq} which was never sent "
                    f"(sent up to {self._next_seq - 1})",
                    field="seq",
                )
            if message.credit > self.config.n_batches:
                raise RemoteProtocolError(
                    f"credit {message.credit} exceeds the {self.config.n_batches} batches",
                    field="credit",
                )
            if self.state in ("hello", "waiting"):
                self.state = "streaming" if message.credit > 0 else "waiting"
            self._hello_tries = 0
            self.acked = max(self.acked, message.seq)
            self.credit = max(self.credit, message.credit)
            for seq in [s for s in self._sent_at if s <= self.acked]:
                del self._sent_at[seq]
                self._tries.pop(seq, None)
                first = self._first_sent.pop(seq, None)
                if first is not None:
                    self.ack_latencies.append(now - first)
            if self._check_finished():
                return
            self._send_ready(now)
        elif isinstance(message, Stage):
            if message.stage != STAGE:
                return
            if message.state == "closed":
                complete = self.acked == self.last_batch
                self.state = "closed"
                self._emit(StreamClosed(complete, message.detail))
            elif self.state in ("hello", "waiting", "streaming"):
                self._hello_tries = 0
                self._tries.clear()  # a fresh collector: no backoff owed to the old one
                self._send_hello(now)  # the collector (re)started: announce at once
                if self.refusal is not None:
                    self._send(self._topic("budget_refused"), self.refusal)
        elif isinstance(message, Reject):
            self._on_reject(message)
        else:
            raise RemoteProtocolError(
                f"unexpected {message.type_name()} in the stream stage", field="type"
            )

    def _sent_message(self, kind: str, seq: int) -> Message | None:
        """The message ``kind`` number ``seq`` as this device sent it (None: never sent)."""
        if kind == "hello" and seq == 0 and self._hello_sent_at is not None:
            return self._hello()
        if kind == "sw_report" and 0 <= seq < self._next_seq:
            return self._report(seq)
        if kind == "budget_refused" and self.refusal is not None and seq == self.refusal.seq:
            return self.refusal
        return None

    def _on_reject(self, notice: Reject) -> None:
        """A final rejection naming a message this device sent (its kind, seq and digest:
        the collector refused exactly what we sent, so every retransmission would be
        refused too) stops the device: it records the rejection and withdraws (one
        ``Withdraw``), and nothing more is sent. Any other notice — another device's, an
        unknown message, a digest of something we never sent (an impostor's message on our
        topic), a reason a retransmission could fix — is counted and ignored."""
        sent = self._sent_message(notice.kind, notice.message_seq)
        if (
            notice.device != self.device
            or notice.code not in FINAL_REASONS
            or sent is None
            or codec.message_digest(sent) != notice.digest
        ):
            self.rejects_ignored += 1
            return
        self.state = "rejected"
        self._sent_at.clear()
        self._tries.clear()
        self.rejection = {
            "kind": notice.kind,
            "seq": notice.message_seq,
            "field": notice.field,
            "code": notice.code,
            "reason": notice.reason,
        }
        self.withdrawal = Withdraw(
            run=self.config.run,
            sender=self.device,
            kind=notice.kind,
            message_seq=notice.message_seq,
            digest=notice.digest,
            field=notice.field,
            code=notice.code,
            reason=notice.reason,
        )
        self._send(self._topic("withdraw"), self.withdrawal)
        self._emit(StreamRejected(**self.rejection))

    def _wait(self, tries: int) -> float:
        """Seconds before retransmitting a message already retransmitted ``tries`` times."""
        return self.config.retransmit_after * 2 ** min(tries, BACKOFF_DOUBLINGS)

    def next_timer(self) -> float | None:
        """The next deadline: a retransmission, if anything is unacknowledged, or the
        collector's silence (None: neither; always None once finished or given up)."""
        if self.gave_up is not None:
            return None
        retransmit = self._retransmit_deadline()
        silence = None if self._silence is None or self.finished else self._silence.next_timer()
        if silence is None or (retransmit is not None and retransmit < silence):
            return retransmit
        return silence

    def _retransmit_deadline(self) -> float | None:
        """When the hello or the oldest unacknowledged batch is due again (None: never)."""
        if self.state == "hello" and self._hello_sent_at is not None:
            return self._hello_sent_at + self._wait(self._hello_tries)
        if self.state == "waiting" and self._hello_sent_at is not None:
            # Waiting for credit: a slow keep-alive hello, in case the admitting ack was lost.
            return self._hello_sent_at + WAITING_HELLO_FACTOR * self.config.retransmit_after
        if self.state == "streaming" and self._sent_at:
            return min(self._batch_deadline(seq) for seq in self._sent_at)
        return None

    def _batch_deadline(self, seq: int) -> float:
        return self._sent_at[seq] + self._wait(self._tries.get(seq, 0))

    def handle_timer(self, now: float) -> None:
        """Give up, if the collector was silent for ``silence_timeout`` seconds at ``now``
        (``gave_up``, ``CollectorSilent``: then nothing is retransmitted); else retransmit
        the hello or every overdue batch."""
        if self.gave_up is not None:
            return
        if self._silence is not None and not self.finished:
            self._silence.handle_timer(now)
            for event in self._silence.pop_events():
                if isinstance(event, CollectorSilent):
                    self.gave_up = event.sentence
                    self._emit(event)
            if self.gave_up is not None:
                return
        deadline = self._retransmit_deadline()
        if deadline is None or now < deadline:
            return
        if self.state in ("hello", "waiting"):
            self.retransmissions += 1
            if self.state == "hello":
                self._hello_tries += 1
            self._send_hello(now)
            return
        for seq in sorted(self._sent_at):
            if self._batch_deadline(seq) <= now:
                self.retransmissions += 1
                self._tries[seq] = self._tries.get(seq, 0) + 1
                self._send_batch(seq, now)


# Collector side -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BudgetRefusal(Event):
    """``device`` refused to privatise steps from ``t`` on (its ledger): the collector no
    longer expects its batches from ``t // batch_steps`` on."""

    device: str
    t: int
    requested: float
    remaining: float
    reason: str


@dataclass(frozen=True, slots=True)
class DeviceWithdrawn(Event):
    """``device`` stopped after the collector finally rejected its ``kind`` number ``seq``
    (``field``); it counts as finished (failed)."""

    device: str
    kind: str
    seq: int
    field: str


@dataclass
class _DeviceState:
    n_batches: int
    expected: int = -1  # batches this device will send (< n_batches after a refusal)
    refused_from: int | None = None
    digests: dict[int, int] = field(default_factory=dict)  # seq -> hash of the values
    hello: bool = False
    received: set[int] = field(default_factory=set)
    persisted: set[int] = field(default_factory=set)
    persisted_upto: int = -1
    credit: int = 0
    active: bool = False
    stalled: bool = False
    complete: bool = False
    last_heard: float = 0.0
    partition: int | None = None  # the p{p} level of its topics (None: unpartitioned)
    withdrawn: dict | None = None  # the final rejection it withdrew after (finished, failed)


class StreamCollector(PeerFacingMachine):
    """Collector side: validate, deduplicate, grant credit, acknowledge what is persisted."""

    def __init__(
        self,
        config: StreamConfig,
        devices: Iterable[str],
        *,
        max_in_flight: int = 256,
        credit_window: int = 2,
        deadline: float | None = None,
        idle_timeout: float = 30.0,
    ) -> None:
        super().__init__(config.run)
        if not 1 <= credit_window <= max_in_flight:
            raise ParameterError(
                "need 1 <= credit_window <= max_in_flight",
                field="credit_window",
                limit=f"1 <= credit_window <= max_in_flight = {max_in_flight}",
                value=credit_window,
            )
        self.config = config
        self._mechanism = config.mechanism_object()
        self.max_active = max(1, max_in_flight // credit_window)
        self.credit_window = credit_window
        self.deadline = deadline
        self.idle_timeout = idle_timeout
        self.devices = {
            topics.check_ident(d, "device"): _DeviceState(
                config.n_batches, config.n_batches, partition=config.partition(d)
            )
            for d in devices
        }
        if not self.devices:
            raise ParameterError(
                "at least one device is expected",
                field="devices",
                limit="at least one expected device",
                value=self.devices,
            )
        # devices waiting for credit, in arrival order (a dict: O(1) membership; a deque's
        # `in` made 100,000 hellos quadratic, measured)
        self._waiting: dict[str, None] = {}
        # (idle deadline, device) of active devices, stale entries skipped lazily: the
        # earliest idle check in O(log n) instead of a scan of every active device
        self._idle_heap: list[tuple[float, str]] = []
        self._clock = float("-inf")  # the latest `now` seen
        self._active: set[str] = set()
        self.state = "open"  # open -> closed
        self.accepted = 0
        self.duplicates = 0
        self.late = 0
        self.complete_devices = 0
        self.close_reason = ""
        self.budget_refusals: dict[str, dict] = {}
        self.withdrawn_devices = 0  # devices that withdrew after a final rejection
        # named holds that keep a complete stage open (e.g. an injected attack that must be
        # handled before the stage closes, whatever the machine's load): ``hold_open``
        self._holds: set[str] = set()

    # ---- input ----------------------------------------------------------------------

    def open(self) -> None:
        """Announce the stage: every started, unfinished device says hello again (so a
        restarted collector learns of devices whose hello it never stored)."""
        self._send(
            topics.ctl(self.config.run, "stage"),
            Stage(run=self.config.run, sender=topics.COLLECTOR_ID, stage=STAGE, state="open"),
        )

    def _receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        c = self.config
        self._clock = max(self._clock, now)
        self._check_upstream(topic, message)
        state = self.devices.get(message.sender)
        if state is None:
            raise RemoteProtocolError(
                f"{message.sender!r} is not a device of run {c.run}",
                field="sender",
                code="unknown_sender",
            )
        if topic.partition != state.partition:
            raise RemoteProtocolError(
                f"{message.sender!r} belongs to partition level {state.partition}, not "
                f"{topic.partition}",
                field="topic",
                code="unknown_sender",
            )
        if self.state == "closed":
            self.late += 1  # e.g. a retransmission racing the close: not an attack
            return
        if message.type_name() != topic.kind:
            raise RemoteProtocolError(
                f"a {message.type_name()} message on a {topic.kind!r} topic", field="topic"
            )
        if isinstance(message, Hello):
            self._on_hello(message, state, now)
        elif isinstance(message, SwReport):
            self._on_report(message, state, now)
        elif isinstance(message, BudgetRefused):
            self._on_refusal(message, state, now)
        elif isinstance(message, Withdraw):
            self._on_withdraw(message, state)
        else:
            raise RemoteProtocolError(
                f"unexpected {message.type_name()} from a device", field="type"
            )

    def _expect(self, name: str, got: float, want: float) -> None:
        if isinstance(want, float):
            ok = math.isclose(got, want, rel_tol=_REL_TOL, abs_tol=0.0)
        else:
            ok = got == want
        if not ok:
            raise RemoteProtocolError(
                f"declared {got!r}, this run uses {want!r}", field=name, code="parameter_mismatch"
            )

    def _on_hello(self, hello: Hello, state: _DeviceState, now: float) -> None:
        c = self.config
        for name in ("mechanism", "eps", "w", "eps0", "steps", "batch_steps", "lo", "hi"):
            want = c.eps0 if name == "eps0" else getattr(c, name)
            self._expect(name, getattr(hello, name), want)
        self._heard(hello.sender, state, now)
        state.stalled = False
        if not state.hello:
            state.hello = True
            self._waiting[hello.sender] = None
            self._admit()
            if not state.active:
                self._ack(hello.sender, state)  # known, please wait for credit
        elif state.active or state.complete:
            self._ack(hello.sender, state)  # a restarted device resumes where it was
        elif hello.sender not in self._waiting:
            self._waiting[hello.sender] = None  # stalled, heard from again
            self._admit()
            if not state.active:
                self._ack(hello.sender, state)
        else:
            self._ack(hello.sender, state)  # still queued: the "please wait" was lost

    def _final_notice(self, topic: topics.Topic, message: Message, code: str) -> str | None:
        """The device's inbox when ``message`` on its own topic was refused for a reason no
        retransmission can change (``FINAL_REASONS``) and the device is still expected."""
        if code not in FINAL_REASONS or message.type_name() not in _OWN_KINDS:
            return None
        state = self.devices.get(topic.sender)
        if (
            state is None
            or message.sender != topic.sender
            or topic.run != self.config.run
            or message.run != self.config.run
            or topic.family != "up"
            or topic.partition != state.partition
            or state.complete
            or state.withdrawn is not None
        ):
            return None
        return topics.inbox(self.config.run, topic.sender, topics.COLLECTOR_ID, state.partition)

    def _on_withdraw(self, withdraw: Withdraw, state: _DeviceState) -> None:
        """The device stopped after a final rejection: it is finished (failed), its credit
        slot is freed, and the stage no longer waits for it."""
        if state.withdrawn is not None:
            return  # the same withdrawal again (resent after a collector restart)
        if state.complete:
            raise RemoteProtocolError(
                "withdrawal after every batch was persisted", field="type", code="out_of_order"
            )
        if withdraw.code not in FINAL_REASONS or withdraw.kind not in _OWN_KINDS:
            raise RemoteProtocolError(
                f"a withdrawal follows a final rejection of the device's own message, not "
                f"{withdraw.code!r} of {withdraw.kind!r}",
                field="code",
                code="parameter_mismatch",
            )
        device = withdraw.sender
        state.withdrawn = {
            "kind": withdraw.kind,
            "seq": withdraw.message_seq,
            "field": withdraw.field,
            "code": withdraw.code,
            "reason": withdraw.reason,
        }
        self.withdrawn_devices += 1
        state.active = False
        self._active.discard(device)
        self._waiting.pop(device, None)
        self._emit(DeviceWithdrawn(device, withdraw.kind, withdraw.message_seq, withdraw.field))
        self._admit()
        self._close_if_complete()

    def _on_report(self, report: SwReport, state: _DeviceState, now: float) -> None:
        """A device's report: checked (``_check_report_order``, ``_check_report_span``,
        ``_check_report_values``), then accepted once (a duplicate is acknowledged again
        once persisted)."""
        self._check_report_order(report, state)
        t0 = self._check_report_span(report)
        self._check_report_values(report)
        digest = hash(tuple(report.values))
        if report.seq in state.received and state.digests.get(report.seq, digest) != digest:
            raise RemoteProtocolError(
                f"batch {report.seq} was already received with different values",
                field="values",
                code="replay",
            )
        self._heard(report.sender, state, now)
        if state.stalled:
            state.stalled = False
            if not (state.active or state.complete) and report.sender not in self._waiting:
                self._waiting[report.sender] = None  # heard from again: queue for credit
                self._admit()
        if report.seq in state.received:
            self.duplicates += 1
            if report.seq in state.persisted:
                self._ack(report.sender, state)
            return
        state.received.add(report.seq)
        state.digests[report.seq] = digest
        self.accepted += 1
        self._emit(ReportAccepted(report.sender, report.seq, t0, report.values))

    def _check_report_order(self, report: SwReport, state: _DeviceState) -> None:
        """After the hello and before a withdrawal, with the run's parameters, within the
        run's batches, before the device's budget refusal and within its credit."""
        c = self.config
        if state.withdrawn is not None:
            raise RemoteProtocolError(
                "sw_report after the device withdrew", field="type", code="out_of_order"
            )
        if not state.hello:
            raise RemoteProtocolError("sw_report before hello", field="type", code="out_of_order")
        self._expect("mechanism", report.mechanism, c.mechanism)
        self._expect("eps0", report.eps0, c.eps0)
        self._expect("w", report.w, c.w)
        if report.seq >= c.n_batches:
            raise RemoteProtocolError(
                f"batch {report.seq} out of range (this run has {c.n_batches})",
                field="seq",
                code="out_of_range",
            )
        if report.seq >= state.expected:
            raise RemoteProtocolError(
                f"batch {report.seq} is past the device's budget refusal at step "
                f"{state.refused_from}",
                field="seq",
                code="out_of_range",
            )
        if report.seq >= state.credit:
            raise RemoteProtocolError(
                f"batch {report.seq} sent without credit (granted < {state.credit})",
                field="seq",
                code="no_credit",
            )

    def _check_report_span(self, report: SwReport) -> int:
        """The batch starts at its step and holds its steps' values; returns its first
        step."""
        t0, t1 = self.config.batch_span(report.seq)
        if report.t0 != t0:
            raise RemoteProtocolError(
                f"batch {report.seq} starts at step {t0}", field="t0", code="out_of_range"
            )
        if len(report.values) != t1 - t0:
            raise RemoteProtocolError(
                f"batch {report.seq} has {t1 - t0} values, got {len(report.values)}",
                field="values",
                code="out_of_range",
            )
        return t0

    def _check_report_values(self, report: SwReport) -> None:
        """Every value is an output of the run's mechanism (its ``in_domain``)."""
        c = self.config
        values = np.asarray(report.values, dtype=float)
        try:  # the load-time check's reading of in_domain (a bool mask of the values' shape)
            inside = domain_mask(self._mechanism, values, c.mechanism)
        except ParameterError as error:  # the plugin failed on these values: refuse them
            raise RemoteProtocolError(
                f"the values could not be checked: {error}"[:400],
                field="values",
                code="out_of_range",
            ) from None
        bad = np.flatnonzero(~inside)
        if bad.size:
            index = int(bad[0])
            raise RemoteProtocolError(
                f"{report.values[index]!r} is outside the {c.mechanism} output domain"
                f"{self._domain_text()} at eps0={c.eps0:g}",
                field=f"values[{index}]",
                code="out_of_range",
            )

    def _domain_text(self) -> str:
        """`` [low, high]`` when the mechanism states its range (optional in the contract)."""
        low = getattr(self._mechanism, "output_low", None)
        high = getattr(self._mechanism, "output_high", None)
        if not (_is_number(low) and _is_number(high)):
            return ""
        return f" [{low:.6g}, {high:.6g}]"

    def _on_refusal(self, refusal: BudgetRefused, state: _DeviceState, now: float) -> None:
        c = self.config
        if c.raw:
            raise RemoteProtocolError(
                "a raw stream spends nothing on the device and cannot be refused",
                field="request",
                code="parameter_mismatch",
            )
        if refusal.account != LEDGER_ACCOUNT or refusal.request != "sw_report":
            raise RemoteProtocolError(
                f"refusal of {refusal.request!r} on account {refusal.account!r}: the stream "
                f"stage only spends on {LEDGER_ACCOUNT!r} for sw_report",
                field="request",
                code="parameter_mismatch",
            )
        self._expect("requested", refusal.requested, c.eps0)
        t = refusal.round
        if t >= c.steps:
            raise RemoteProtocolError(
                f"step {t} out of range (this run has {c.steps})",
                field="round",
                code="out_of_range",
            )
        if state.refused_from is not None:
            if state.refused_from != t:
                raise RemoteProtocolError(
                    f"already refused from step {state.refused_from}", field="round", code="replay"
                )
            return  # the same refusal again (resent after a collector restart)
        expected = t // c.batch_steps
        if any(seq >= expected for seq in state.received):
            raise RemoteProtocolError(
                f"step {t} refused, but a batch past it was already received",
                field="round",
                code="out_of_range",
            )
        self._heard(refusal.sender, state, now)
        state.refused_from = t
        state.expected = expected
        self.budget_refusals[refusal.sender] = {
            "step": t,
            "requested": refusal.requested,
            "remaining": refusal.remaining,
            "reason": refusal.reason,
            "batches_refused": c.n_batches - expected,
        }
        self._emit(
            BudgetRefusal(refusal.sender, t, refusal.requested, refusal.remaining, refusal.reason)
        )
        if not state.complete and state.persisted_upto == state.expected - 1:
            state.complete = True
            self.complete_devices += 1
            self._active.discard(refusal.sender)
            state.active = False
            self._emit(DeviceComplete(refusal.sender))
            if state.hello:
                self._ack(refusal.sender, state)
            self._admit()
            self._close_if_complete()
        elif state.active:
            state.credit = min(state.credit, state.expected)

    def restore(self, persisted: Iterable[tuple[str, int]]) -> None:
        """Resume after a collector restart: these (device, seq) are already stored.

        Their devices count as introduced; incomplete ones are queued for credit again, so
        their pending retransmissions are accepted and the rest is re-requested."""
        touched = set()
        for device, seq in persisted:
            state = self.devices.get(device)
            if state is None or seq in state.received:
                continue
            state.received.add(seq)
            state.persisted.add(seq)
            state.hello = True
            touched.add(device)
            self.accepted += 1
        for device in sorted(touched):
            state = self.devices[device]
            while state.persisted_upto + 1 in state.persisted:
                state.persisted_upto += 1
            if state.persisted_upto == state.expected - 1:
                state.complete = True
                self.complete_devices += 1
            else:
                self._waiting.setdefault(device, None)
        self._admit()
        self._close_if_complete()

    # ---- after persistence --------------------------------------------------------------

    def confirm_persisted(self, items: Iterable[tuple[str, int]]) -> None:
        """The pump has durably stored these (device, seq) reports: acknowledge them."""
        touched: dict[str, _DeviceState] = {}
        for device, seq in items:
            state = self.devices[device]
            if seq not in state.received:
                raise LocalProtocolError(f"{device} batch {seq} was never accepted")
            state.persisted.add(seq)
            while state.persisted_upto + 1 in state.persisted:
                state.persisted_upto += 1
            touched[device] = state
        for device, state in touched.items():
            if state.withdrawn is not None:
                continue  # accepted before it withdrew: stored, but the device failed
            if not state.complete and state.persisted_upto == state.expected - 1:
                state.complete = True
                self.complete_devices += 1
                self._active.discard(device)
                state.active = False
                self._emit(DeviceComplete(device))
            elif state.active:
                state.credit = min(state.expected, state.persisted_upto + 1 + self.credit_window)
            self._ack(device, state)
        self._admit()
        self._close_if_complete()

    def _ack(self, device: str, state: _DeviceState) -> None:
        self._send(
            topics.inbox(self.config.run, device, topics.COLLECTOR_ID, state.partition),
            Ack(
                run=self.config.run,
                sender=topics.COLLECTOR_ID,
                seq=state.persisted_upto,
                credit=state.credit,
            ),
        )

    def _admit(self) -> None:
        while self._waiting and len(self._active) < self.max_active and self.state == "open":
            device = next(iter(self._waiting))
            del self._waiting[device]
            state = self.devices[device]
            if state.complete or state.active:
                continue
            state.active = True
            self._active.add(device)
            # its silence is counted from the admission, not from its (old) hello
            self._heard(device, state, max(state.last_heard, self._clock))
            state.credit = max(
                state.credit, min(state.expected, state.persisted_upto + 1 + self.credit_window)
            )
            self._ack(device, state)

    # ---- time ---------------------------------------------------------------------------

    def _heard(self, device: str, state: _DeviceState, now: float) -> None:
        """``device`` was heard from (or admitted) at ``now``."""
        state.last_heard = now
        if state.active:
            heapq.heappush(self._idle_heap, (now + self.idle_timeout, device))

    def _earliest_idle(self) -> float | None:
        heap = self._idle_heap
        while heap:
            when, device = heap[0]
            state = self.devices[device]
            if state.active and state.last_heard + self.idle_timeout == when:
                return when
            heapq.heappop(heap)  # stale: heard from since, or no longer active
        return None

    def next_timer(self) -> float | None:
        """Stage deadline or the earliest idle-device check."""
        candidates = [self.deadline] if self.deadline is not None else []
        idle = self._earliest_idle()
        if idle is not None:
            candidates.append(idle)
        return min(candidates) if candidates and self.state == "open" else None

    def handle_timer(self, now: float) -> None:
        """Close at the deadline; free the credit slots of devices silent for too long."""
        if self.state != "open":
            return
        if self.deadline is not None and now >= self.deadline:
            self._close(complete=False, reason="stage deadline passed")
            return
        self._clock = max(self._clock, now)
        while (when := self._earliest_idle()) is not None and when <= now:
            _, device = heapq.heappop(self._idle_heap)
            state = self.devices[device]
            state.active = False
            state.stalled = True
            self._active.discard(device)
        self._admit()

    def hold_open(self, name: str) -> None:
        """Keep the stage open after every device has delivered, until ``release(name)``.

        The stage deadline still closes it, and so does ``close``: a hold only defers the
        *complete* close, so a side activity (an injected flood) is handled before it."""
        if self.state == "open":
            self._holds.add(name)

    def release(self, name: str) -> None:
        """Drop the hold ``name``; the stage closes now if it is complete and unheld."""
        self._holds.discard(name)
        self._close_if_complete()

    def _close_if_complete(self) -> None:
        finished = self.complete_devices + self.withdrawn_devices
        if finished == len(self.devices) and self.state == "open" and not self._holds:
            if self.withdrawn_devices:
                self._close(
                    complete=False,
                    reason=f"every device finished; {self.withdrawn_devices} withdrew after "
                    "the collector rejected its report",
                )
            else:
                self._close(complete=True, reason="every device delivered every report")

    def close(self, reason: str) -> None:
        """End the stage now (operator request); missing reports count as lost."""
        if self.state == "open":
            self._close(complete=False, reason=reason)

    def _close(self, *, complete: bool, reason: str) -> None:
        self.state = "closed"
        self.close_reason = reason
        self._send(
            topics.ctl(self.config.run, "stage"),
            Stage(
                run=self.config.run,
                sender=topics.COLLECTOR_ID,
                stage=STAGE,
                state="closed",
                detail=reason,
            ),
        )
        self._emit(StageClosed(complete, reason))

    # ---- reporting ----------------------------------------------------------------------

    def missing(self) -> dict[str, list[int]]:
        """Per incomplete device, the batch numbers not persisted."""
        return {
            device: sorted(set(range(state.expected)) - state.persisted)
            for device, state in self.devices.items()
            if not state.complete
        }

    def summary(self) -> dict:
        """Counters for results.json."""
        expected = len(self.devices) * self.config.n_batches
        persisted = sum(len(s.persisted) for s in self.devices.values())
        refused = sum(s.n_batches - s.expected for s in self.devices.values())
        withdrawn = {d: s for d, s in self.devices.items() if s.withdrawn is not None}
        unsent = sum(s.expected - len(s.persisted) for s in withdrawn.values())
        return {
            "devices": len(self.devices),
            "devices_complete": self.complete_devices,
            "devices_silent": sorted(d for d, s in self.devices.items() if not s.hello),
            "reports_expected": expected,
            "reports_received": persisted,
            "reports_duplicate": self.duplicates,
            "messages_after_close": self.late,
            "reports_rejected": self.rejected,
            "rejections_by_field": dict(self.rejections_by_field),
            "rejections_by_reason": dict(sorted(self.rejections_by_reason.items())),
            "reports_refused": refused,
            "budget_refusals": dict(sorted(self.budget_refusals.items())),
            # devices that stopped after a final rejection, what it said, and the batches
            # they will never send (not lost: the collector refused them)
            "devices_rejected": len(withdrawn),
            "device_rejections": {d: dict(s.withdrawn) for d, s in sorted(withdrawn.items())},
            "reports_withdrawn": unsent,
            "reports_lost": expected - persisted - refused - unsent,
            "stage_state": self.state,
            "close_reason": self.close_reason,
        }
