"""``run_cadr_collector``: the collector's side of CADR-LDP over a device fleet.

Stages (seed 004 Alg. 2-6; ``protocol.cadr_device`` is the device side):

1. ``CadrPlan`` broadcast (ε, α, method, public degree bound D, NDOE partitions).
2. θ: given, or searched in [1, D] through ``collector.secure_sum`` — by Deviation
   (``DeviationSearch``: each round one ``CadrQuery(measure="above")`` and one secure sum
   of the devices' bits ``[d > t]`` for one threshold, or ``fanout`` thresholds on a linear
   or geometric grid), or by Sum (one query with every candidate and one
   secure sum of the vectors of local errors). The collector only ever holds sums.
3. ``CadrTheta`` broadcast (also published on ``rel/theta``).
4. NDOE and LPEA: the collector asks the relay (``ctl/relay_phase``) to run phase
   ``ndoe`` (one round), then ``lpea`` PADDED: exactly ``padded_rounds(max_rounds)`` rounds
   (``protocol.lpea.PADDED_ROUNDS`` unless ``max_rounds`` is smaller; a public count), the
   negotiation running until a round adds nothing and the rest padding
   (``protocol.peer_relay``, "Padding"), and waits for each ``PhaseReport`` — that the
   phase ended and whether normally, with the public round count; no count of the
   negotiation (the relay's rounds, supersteps, items and edges added depend on the
   devices' lists and stay with the relay). With ``peer_deadline`` = D > 0 (``[cadr]
   peer_deadline_seconds``) each request carries the public deadline D and the relay ends
   no phase before it (``protocol.peer_relay``, "Deadline"); the report says whether it
   held (``overran``), and ``CadrOutcome.phases`` records it for the privacy claim.
5. DSR: every device's ``DsrReport`` goes through ``protocol.cadr_collect.DsrIntake``;
   a device's ``BudgetRefused`` (``up/budget_refused``, at any stage; held until θ exists)
   takes it off the list of releases awaited (``CadrOutcome.budget_refusals``);
   an accepted release is persisted (``collector.store.ReportStore``, when a path is given)
   before it is acknowledged.
   Method ``clip`` (``protocol.cadr_budget``, "Method clip") asks the relay for no phase:
   every device releases its own clipped degree on θ, so the DSR stage follows stage 3.
6. The release: the noisy degree sequence (by device) and the degree histogram over
   ``0..θ`` (rounded, clipped) on ``rel/degrees``. With ``pipeline = "dp"`` the search by
   Deviation aims θ at the post-processed error (``noise_weight``) and the release also
   holds the post-processed sequence and histogram (``collector.degree_postprocess``:
   posterior medians under the deconvolved distribution; post-processing, no budget).

What becomes of each inbound message — a phase report for the stage waiting on it, a
release or refusal for the DSR intake, a refusal held until θ exists, or a rejection — is
decided by the sans-I/O ``protocol.cadr_admission.CadrAdmission``; this pump parses,
hands each message to it and acts on its answer (queue, persist, acknowledge, publish).

Devices that crash for good (``[cadr] dropout``, ``devices.cadr_agent``): a device's
``SaAbort`` on its ``up/sa_abort`` (its last will) puts it in ``CadrOutcome.departed``
and the DSR stage no longer waits for its release (which wills count, when the stage is
complete, its deadline and the sentence naming the missing: the sans-I/O
``protocol.cadr_dsr_stage.DsrStage``); the θ search's secure sum covers the devices
still in it (each noise share is sized for ``noise_parties(n)``, and the sum aborts
before unmasking below that: ``min_inputs``), and the release covers the devices
that released (docs/cadr.md, "Dropouts").

A failed stage raises ``CadrFailed`` with the reason (secure sum aborted, relay phase
aborted, releases missing at the deadline).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from ldpfleet.broker.fanin import fan_in
from ldpfleet.broker.pump import InputHold, answer_of, background, publish_outbound
from ldpfleet.broker.transport import Connection, Delivery, Transport
from ldpfleet.collector.degree_postprocess import (
    SearchCounts,
    noise_weight,
    post_process_release,
)
from ldpfleet.collector.secure_sum import secure_sum
from ldpfleet.collector.store import ReportStore
from ldpfleet.collector.theta_search import DeviationSearch, deviation_target, theta_by_sum
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_admission import CadrAdmission, Departed, ForIntake, PhaseReported
from ldpfleet.protocol.cadr_budget import CadrBudget, known_kept_ratio, negotiates
from ldpfleet.protocol.cadr_collect import DsrAccepted, DsrIntake
from ldpfleet.protocol.cadr_dsr_stage import DsrStage, ReleasesFailed
from ldpfleet.protocol.cadr_messages import (
    CadrPlan,
    CadrQuery,
    CadrTheta,
    DegreeRelease,
)
from ldpfleet.protocol.cadr_relay_wait import PhaseFailed, RelayPhaseWait, phase_timeout
from ldpfleet.protocol.cadr_theta_noise import (
    SHARE_BOUND,
    bucket_count,
    bucket_grid,
    counts_above,
    noise_parties,
    theta_from_counts,
)
from ldpfleet.protocol.dsr import post_process_distribution
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.events import Rejected
from ldpfleet.protocol.lpea import padded_rounds
from ldpfleet.protocol.peer_relay import RELAY_ID, PhaseReport, RelayPhase
from ldpfleet.protocol.secagg.encoding import FixedPoint

__all__ = ["CadrFailed", "CadrOutcome", "GatheredReleases", "ReleaseHook", "run_cadr_collector"]

ERROR_SCALE = 2.0**16  # fixed-point resolution of the local errors summed by the Sum search

# Who wants to hear of each finished stage (name, seconds): ``ldpfleet run`` shows them as
# they complete. A context variable, so that no signature between the CLI and here changes.
stage_listener: contextvars.ContextVar[Callable[[str, float], None] | None] = (
    contextvars.ContextVar("cadr_stage_listener", default=None)
)


class CadrFailed(RuntimeError):
    """A stage of the run could not complete."""


@dataclass
class CadrOutcome:
    """What the collector released and how it got there."""

    theta: int
    theta_rule: str
    theta_rounds: int
    theta_queries: list[dict] = field(default_factory=list)
    released: dict[str, float] = field(default_factory=dict)
    histogram: list[int] = field(default_factory=list)
    phases: dict[str, dict] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    rejected: int = 0
    duplicates: int = 0
    budget_refusals: dict[str, dict] = field(default_factory=dict)
    pipeline: str = "paper"
    estimates: dict[str, int] = field(default_factory=dict)
    estimate_histogram: list[int] = field(default_factory=list)
    # device -> the stage it named in its last will (``SaAbort``): no release awaited
    departed: dict[str, str] = field(default_factory=dict)


@dataclass
class GatheredReleases:
    """The DSR stage's result when partition workers ran the intake (``releases`` hook)."""

    values: dict[str, float]
    refusals: dict[str, dict]
    rejected: int = 0
    duplicates: int = 0


# (θ, eps_dsr, stage_timeout) -> every device's release or refusal; raises CadrFailed
ReleaseHook = Callable[[int, float, float], Awaitable[GatheredReleases]]


async def run_cadr_collector(
    transport: Transport,
    run: str,
    devices: Sequence[str],
    *,
    eps: float,
    alpha: float,
    method: str,
    degree_bound: int,
    theta_rule: str | int,
    fanout: int = 1,
    spacing: str = "linear",
    ndoe_parts: int = 16,
    max_rounds: int = 100,
    stage_timeout: float = 120.0,
    secagg_degree: int | None = None,
    store_path: str | Path | None = None,
    ready: asyncio.Event | None = None,
    devices_ready: Awaitable[object] | None = None,
    pipeline: str = "paper",
    releases: ReleaseHook | None = None,
    peer_deadline: float = 0.0,
) -> CadrOutcome:
    """Drive one CADR-LDP run (module docstring). ``ready`` is set once the collector
    listens; the plan goes out after ``devices_ready`` (every device subscribed).
    ``pipeline``: ``"paper"`` (the paper's θ objective and raw release) or ``"dp"``.
    ``releases``: partition workers run the DSR intake (``collector.cadr_partition``);
    awaited after the relay phases instead of the local intake. ``peer_deadline`` > 0:
    the public wall-clock deadline of every relay phase, in seconds (module docstring)."""
    _check_pipeline(pipeline, theta_rule)
    members = sorted(devices)
    # the dp pipeline's θ search is DP and charged (protocol.cadr_theta_noise); a given θ
    # costs nothing, so its plan keeps the paper's split
    private_search = pipeline == "dp" and theta_rule == "auto-dev"
    budget = CadrBudget.for_pipeline(eps, alpha, pipeline, private_search, len(members), method)
    parties = noise_parties(len(members)) if private_search else 0
    # NDOE needs non-empty partitions of [0, D]: a small graph gets one part per degree
    ndoe_parts = min(ndoe_parts, degree_bound + 1)
    outcome = CadrOutcome(theta=0, theta_rule=str(theta_rule), theta_rounds=0, pipeline=pipeline)
    store = ReportStore(store_path) if store_path is not None else None
    local = members if releases is None else []  # else the partition workers listen
    async with (
        transport.connect(f"{run}-collector-cadr") as conn,
        # one release per device at a time: fan_in keeps every broker queue below 500
        fan_in(transport, f"{run}-collector-cadr-in", _upstream(run, local)) as inbound,
    ):
        state = _CadrRun(run, members, conn, outcome, store, stage_timeout, peer_deadline)
        if ready is not None:
            ready.set()
        if devices_ready is not None:
            await devices_ready
        try:
            async with background(state.consume(inbound)):
                state.stage_started = state.clock()
                await state.broadcast_plan(budget, method, degree_bound, ndoe_parts, parties)
                theta = await _search_theta(
                    transport,
                    run,
                    members,
                    state.broadcast,
                    outcome,
                    rule=theta_rule,
                    degree_bound=degree_bound,
                    eps_dsr=budget.dsr,
                    weight=noise_weight(budget.dsr) if pipeline == "dp" else 1.0,
                    parties=parties,
                    eps_theta=budget.theta,
                    fanout=fanout,
                    spacing=spacing,
                    stage_timeout=stage_timeout,
                    secagg_degree=secagg_degree,
                )
                await state.announce_theta(theta, budget.dsr, local=releases is None)
                if negotiates(method):  # clip: no relay phase, the releases follow θ
                    await state.relay_phases(max_rounds)
                gathered = await state.await_releases(theta, budget.dsr, releases)
                await state.flush()  # the last Ack, if the reader is still publishing it
        finally:
            if store is not None:
                store.close()
        state.keep_releases(gathered if gathered is not None else state.local_releases())
        ratio = known_kept_ratio(method)
        _post_process(outcome, budget.dsr, degree_bound, budget.theta, parties, ratio)
        await state.publish_release()
    return outcome


def _check_pipeline(pipeline: str, theta_rule: str | int) -> None:
    """Refuse an unknown pipeline and the dp pipeline with the (non-private) Sum search."""
    if pipeline not in ("dp", "paper"):
        raise ValueError(f"pipeline: {pipeline!r} is not dp or paper")
    if pipeline == "dp" and theta_rule == "auto-sum":
        raise ValueError("theta: the dp pipeline searches θ by Deviation (auto-dev) or takes one")


def _upstream(run: str, local: Sequence[str]) -> list[list[str]]:
    """The collector's subscriptions, one group per device it listens to (its DSR
    releases, budget refusals and last will) and the relay's phase reports."""
    kinds = ("dsr", "budget_refused", "sa_abort")
    upstream = [[topics.up(run, d, kind) for kind in kinds] for d in local]
    upstream.append([topics.svc(run, RELAY_ID, "phase")])
    return upstream


@dataclass
class _CadrRun:
    """What the stages of one ``run_cadr_collector`` share: the connection, the outcome
    being filled, the DSR intake once θ exists, and the relay's phase reports."""

    run: str
    members: list[str]
    conn: Connection
    outcome: CadrOutcome
    store: ReportStore | None
    stage_timeout: float
    peer_deadline: float
    seq: int = 0
    # stage seconds on the loop's clock, the one every deadline of the run reads (the
    # secure sums', the relay's): a run on virtual time reports virtual durations
    clock: Callable[[], float] = field(default_factory=lambda: asyncio.get_running_loop().time)
    stage_started: float = field(init=False)
    # the waits for the relay's phase reports (``protocol.cadr_relay_wait``)
    relay_wait: RelayPhaseWait = field(default_factory=RelayPhaseWait)
    intake: DsrIntake | None = None
    # the local DSR stage's decisions: which wills count, completion, the deadline
    # (``protocol.cadr_dsr_stage``)
    stage: DsrStage = field(init=False)
    # set when a waiting machine (``stage``, ``relay_wait``) may have answered
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    # what becomes of each inbound message (phase report, for the intake, held before θ,
    # refused: undecodable, before θ, on the wrong topic) is the admission machine's
    # decision (``protocol.cadr_admission``); its refusals are counted in
    # ``outcome.rejected`` and published on ``svc/collector/reject`` like the intake's
    gate: CadrAdmission = field(init=False)
    # the inbound buffer and its reader (``consume``) once it runs: a passed deadline of a
    # wait is held while deliveries sit in that buffer (``_answer``)
    hold: InputHold | None = None
    # one publisher of the machines' outboxes at a time (the reader, the main task's
    # ``flush``): the main task's last flush waits for a publish in progress (``flush``)
    publishing: asyncio.Lock = field(default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        self.gate = CadrAdmission(self.run, self.members)
        self.stage = DsrStage(self.members)
        self.stage_started = self.clock()

    def lap(self, name: str) -> None:
        """Close stage ``name``: record its seconds and tell the stage listener."""
        now = self.clock()
        self.outcome.stage_seconds[name] = round(now - self.stage_started, 3)
        self.stage_started = now
        listener = stage_listener.get()
        if listener is not None:
            listener(name, self.outcome.stage_seconds[name])

    async def broadcast(self, kind: str, message_type: type, **fields: object) -> None:
        """Publish one collector message on ``ctl/<kind>`` with the next sequence number."""
        self.seq += 1
        message = message_type(run=self.run, sender=topics.COLLECTOR_ID, seq=self.seq, **fields)
        await self.conn.publish(topics.ctl(self.run, kind), codec.encode(message))

    async def broadcast_plan(
        self, budget: CadrBudget, method: str, degree_bound: int, ndoe_parts: int, parties: int
    ) -> None:
        """Broadcast the ``CadrPlan`` (stage 1)."""
        await self.broadcast(
            "cadr_plan",
            CadrPlan,
            eps=budget.eps,
            alpha=budget.alpha,
            method=method,
            degree_bound=degree_bound,
            ndoe_parts=ndoe_parts,
            theta_fraction=budget.theta_fraction,
            theta_extra=budget.theta_extra,
            noise_parties=parties,
        )

    async def consume(self, inbound: AsyncIterator[Delivery]) -> None:
        """Parse every inbound delivery, hand it to the admission machine and act on its
        answer (``act``). While it runs, the waits' deadlines are held on ``inbound``'s
        buffer (``hold``)."""
        loop = asyncio.get_running_loop()
        reader = asyncio.current_task()
        assert reader is not None
        self.hold = InputHold(inbound, reader)
        async for delivery in inbound:
            try:
                topic = topics.parse(delivery.topic)
                message = codec.decode(delivery.payload)
            except RemoteProtocolError as error:
                self.gate.reject(delivery.topic[:300], "invalid", error)
            else:
                self.gate.receive(topic, message, loop.time())
            await self.act(loop.time())

    def depart(self, event: Departed) -> None:
        """A member's admitted last will: the DSR stage records its first one (and no
        longer awaits its release); the outcome names it."""
        if self.stage.depart(event.device, event.stage):
            self.outcome.departed[event.device] = self.stage.departed[event.device]
        self.changed.set()

    async def act(self, now: float) -> None:
        """Do what the admission machine decided: count its refusals, queue the relay's
        phase reports, hand device messages to the DSR intake; publish its notices."""
        for event in self.gate.pop_events():
            if isinstance(event, Rejected):
                self.outcome.rejected += 1
            elif isinstance(event, PhaseReported):
                self.relay_wait.report(event.report)
                self.changed.set()
            elif isinstance(event, Departed):
                self.depart(event)
            elif isinstance(event, ForIntake):
                await self.handle(event.topic, event.message, now)
        async with self.publishing:
            await publish_outbound(self.conn, self.gate)

    async def handle(self, topic: topics.Topic, message: object, now: float) -> None:
        """One DSR release or budget refusal: persist accepted releases, then ack."""
        intake = self.intake
        assert intake is not None
        intake.receive(topic, message, now)  # type: ignore[arg-type]
        accepted = [e for e in intake.pop_events() if isinstance(e, DsrAccepted)]
        if self.store is not None and accepted:
            self.store.persist(
                (e.device, e.seq, 0, [e.value], time.time()) for e in accepted if not e.duplicate
            )
        for event in accepted:  # persisted: now acknowledge
            self.outcome.duplicates += event.duplicate
            intake.ack(event.device, event.seq)
        async with self.publishing:
            await publish_outbound(self.conn, intake)
        self.stage.intake_changed()
        self.changed.set()

    async def flush(self) -> None:
        """Publish what the intake and the admission machine still hold, after any publish
        of the reader's in progress: the DSR stage may end (its deadline, a last will)
        while the reader publishes the last release's ``Ack``, and leaving
        ``run_cadr_collector``'s ``background(consume)`` cancels the reader — the last
        device never heard it (tests/e2e/test_B5_cadr_last_ack.py)."""
        async with self.publishing:
            if self.intake is not None:
                await publish_outbound(self.conn, self.intake)
            await publish_outbound(self.conn, self.gate)

    async def announce_theta(self, theta: int, eps_dsr: float, *, local: bool) -> None:
        """Close the θ stage, open the local DSR intake (``local``; the admission machine
        then hands it the refusals held so far), and broadcast ``CadrTheta``."""
        self.lap("theta")
        self.outcome.theta = theta
        if local:
            self.intake = DsrIntake(self.run, self.members, theta, eps_dsr)
            self.stage.open(self.intake)
            self.gate.open_intake()
            await self.act(self.clock())
        await self.broadcast("cadr_theta", CadrTheta, theta=theta)

    async def relay_phases(self, max_rounds: int) -> None:
        """NDOE (one round), then LPEA padded to the public round count."""
        self.outcome.phases["ndoe"] = await self.run_phase("ndoe")
        self.outcome.phases["lpea"] = await self.run_phase(
            "lpea", until_quiet=True, max_rounds=padded_rounds(max_rounds), padded=True
        )

    async def run_phase(self, phase: str, **options: object) -> dict:
        """Ask the relay for one phase and wait for its report; the phase's public figures."""
        if self.peer_deadline > 0:
            options["deadline"] = float(self.peer_deadline)
        await self.broadcast("relay_phase", RelayPhase, phase=phase, **options)
        # the report, a failed phase or none in time: ``protocol.cadr_relay_wait``
        timeout = phase_timeout(self.stage_timeout, self.peer_deadline)
        self.relay_wait.await_report(phase, self.clock(), timeout)
        answer = await self._answer(self.relay_wait)
        if isinstance(answer, PhaseFailed):
            raise CadrFailed(answer.sentence)
        report = answer.report
        self.lap(phase)
        # only public facts: the relay's counts stay with the relay (protocol.peer_relay)
        figures: dict = {"max_rounds": report.max_rounds}
        if self.peer_deadline > 0:
            figures.update(self._deadline_figures(phase, report))
        return figures

    def _deadline_figures(self, phase: str, report: PhaseReport) -> dict:
        """Whether ``phase`` held the public deadline, and by how much it overran."""
        # held only if the relay says so (a relay that ignored the deadline: UNSET)
        overran = report.overran is not False
        late = self.outcome.stage_seconds[phase] - self.peer_deadline
        return {
            "deadline_seconds": float(self.peer_deadline),
            "overran": overran,
            "overrun_seconds": round(max(late, 0.0), 3) if overran else 0.0,
        }

    async def await_releases(
        self, theta: int, eps_dsr: float, releases: ReleaseHook | None
    ) -> GatheredReleases | None:
        """The DSR stage: the partition workers' releases (``releases``), or None once
        the local intake holds every release; ``CadrFailed`` past the stage timeout."""
        gathered = None
        if releases is not None:
            gathered = await releases(theta, eps_dsr, self.stage_timeout)
        else:
            await self._all_released()
        self.lap("dsr")
        return gathered

    async def _all_released(self) -> None:
        """Wait for the DSR stage's answer (``protocol.cadr_dsr_stage.DsrStage``: every
        member released, refused or departed); ``CadrFailed`` with its sentence naming
        the missing releases at its deadline, ``stage_timeout`` from now."""
        self.stage.await_releases(self.clock(), self.stage_timeout)
        answer = await self._answer(self.stage)
        if isinstance(answer, ReleasesFailed):
            raise CadrFailed(answer.sentence)

    async def _answer(self, machine: DsrStage | RelayPhaseWait) -> Any:
        """The answer of ``machine``'s pending wait: an input ended it, or its deadline
        (driven on the loop's clock meanwhile). A passed deadline is held while deliveries
        wait in the inbound buffer (``broker.pump.InputHold``): a release or phase report
        that arrived in time is fed before the machine judges it missing, however busy the
        process, for at most ``stage_timeout`` past the deadline (docs/reliability.md,
        "Timeouts: a run never hangs")."""

        # at most one stage timeout late: a flood that keeps the buffer full cannot keep
        # the stage open for ever
        return await answer_of(machine, self.changed, lambda: self.hold, self.stage_timeout)

    def local_releases(self) -> GatheredReleases:
        """What the local intake gathered."""
        assert self.intake is not None
        return GatheredReleases(self.intake.values, self.intake.refusals, self.intake.rejected)

    def keep_releases(self, gathered: GatheredReleases) -> None:
        """Record the releases, refusals and counts in the outcome, with the histogram."""
        outcome = self.outcome
        outcome.rejected += gathered.rejected
        outcome.duplicates += gathered.duplicates
        outcome.budget_refusals = dict(sorted(gathered.refusals.items()))
        outcome.released = dict(sorted(gathered.values.items()))
        values = np.array(list(outcome.released.values()))
        outcome.histogram = post_process_distribution(values, outcome.theta).tolist()

    async def publish_release(self) -> None:
        """Publish the ``DegreeRelease`` on ``rel/degrees``."""
        outcome = self.outcome
        self.seq += 1
        release = DegreeRelease(
            run=self.run,
            sender=topics.COLLECTOR_ID,
            seq=self.seq,
            theta=outcome.theta,
            devices=list(outcome.released),
            values=np.array(list(outcome.released.values())).tolist(),
            histogram=outcome.histogram,
            pipeline=outcome.pipeline,
            estimates=list(outcome.estimates.values()),
            estimate_histogram=outcome.estimate_histogram,
        )
        await self.conn.publish(topics.rel(self.run, "degrees"), codec.encode(release))


def _post_process(
    outcome: CadrOutcome, eps_dsr: float, degree_bound: int, eps_theta: float, parties: int,
    ratio: float | None = None,
) -> None:  # fmt: skip
    """The dp pipeline's post-processed sequence and histogram (module docstring;
    ``degree_postprocess.post_process_release``), from the θ search's counts
    (``_search_counts``; ``eps_theta``, ``parties``: the search's noise law). ``ratio``:
    the known kept ratio (clip: 1; None: estimated)."""
    if outcome.pipeline != "dp":
        return
    values = np.array(list(outcome.released.values()))
    counts = _search_counts(outcome, degree_bound, eps_theta, parties)
    post = post_process_release(values, outcome.theta, eps_dsr, counts, ratio)
    outcome.estimates = dict(zip(outcome.released, post.estimates.tolist(), strict=True))
    outcome.estimate_histogram = post.histogram.tolist()


def _search_counts(
    outcome: CadrOutcome, degree_bound: int, eps_theta: float, parties: int
) -> SearchCounts | None:
    """The DP θ search's opened bucket sums, with the devices in them and the noise law
    (None when θ was given or searched exactly)."""
    for query in outcome.theta_queries:
        if "bucket_sums" in query:
            return SearchCounts(
                query["bucket_sums"], query["thresholds"], degree_bound, query["survivors"],
                eps_theta, parties,
            )  # fmt: skip
    return None


async def _search_theta(
    transport: Transport,
    run: str,
    members: list[str],
    broadcast,
    outcome: CadrOutcome,
    *,
    rule: str | int,
    degree_bound: int,
    eps_dsr: float,
    weight: float,
    parties: int,
    eps_theta: float,
    fanout: int,
    spacing: str,
    stage_timeout: float,
    secagg_degree: int | None,
) -> int:
    """θ by rule: an integer, ``auto-dev`` or ``auto-sum`` (module docstring); ``weight``
    is the Deviation search's noise weight (``theta_search.deviation_target``);
    ``parties > 0``: the DP search (one secure sum of noisy bucket counts)."""
    if not isinstance(rule, str):
        return int(rule)
    ask = _ThetaQueries(transport, run, members, broadcast, outcome, stage_timeout, secagg_degree)
    if rule == "auto-dev" and parties > 0:
        return await _theta_by_buckets(ask, degree_bound, eps_theta, eps_dsr, weight, parties)
    if rule == "auto-dev":
        search = DeviationSearch(
            1,
            degree_bound,
            len(members),
            eps_dsr,
            fanout=fanout,
            spacing=spacing,
            noise_weight=weight,
        )
        return await _theta_by_deviation(ask, search)
    if rule == "auto-sum":
        return await _theta_by_sum(ask, degree_bound, eps_dsr)
    raise CadrFailed(f"theta: {rule!r} is not an integer, auto-sum or auto-dev")


@dataclass
class _ThetaQueries:
    """One θ-search query at a time: a ``CadrQuery`` broadcast and the secure sum of the
    devices' answers; each is recorded in ``outcome.theta_queries``."""

    transport: Transport
    run: str
    members: list[str]
    broadcast: Callable[..., Awaitable[None]]
    outcome: CadrOutcome
    stage_timeout: float
    secagg_degree: int | None

    async def __call__(
        self, session: str, measure: str, thresholds: list[int], fp: FixedPoint, min_inputs: int = 0
    ) -> np.ndarray:
        """The opened sum of the answers to ``measure`` at ``thresholds``."""
        await self.broadcast(
            "cadr_query", CadrQuery, session=session, measure=measure, thresholds=thresholds
        )
        loop = asyncio.get_running_loop()
        started = loop.time()  # the clock of the secure sum's deadlines
        result = await secure_sum(
            self.transport,
            self.run,
            session,
            self.members,
            len(thresholds) + (measure == "bucket"),  # k thresholds: k + 1 buckets
            fp,
            degree=self.secagg_degree,
            stage_timeout=self.stage_timeout,
            min_inputs=min_inputs,
        )
        if result.aborted or result.total is None:
            raise CadrFailed(
                f"θ search: secure sum {session} aborted: {result.aborted} "
                f"(stages, seconds after each opened: {_timeline_text(result.timeline)})"
            )
        self.outcome.theta_queries.append(
            {
                "session": session,
                "thresholds": len(thresholds) if len(thresholds) > 8 else thresholds,
                "survivors": len(result.survivors),
                "seconds": round(loop.time() - started, 3),
                # each stage of the secure sum (advertise, share, masked, unmask), the same
                # clock: where a slow θ search spends its time
                "stage_seconds": {k: round(v, 3) for k, v in result.stage_seconds.items()},
                "timeline": result.timeline,
                # the devices the sum went on without (left before their masked input)
                **({"dropped": sorted(result.dropped)} if result.dropped else {}),
            }
        )
        return result.total


def _timeline_text(timeline: dict[str, dict[str, float]]) -> str:
    """``SecureSumResult.timeline`` in one line: "masked: requests out 3.1, 0 deliveries;
    ..." (when the collector had sent a stage's requests, when replies came)."""
    parts = []
    for stage, entry in timeline.items():
        out = entry.get("requests_out")
        text = f"{stage}: requests out {'?' if out is None else format(out, 'g')}"
        text += f", {entry['deliveries']:g} deliveries"
        if "first" in entry:
            text += f" from {entry['first']:g} to {entry['last']:g}"
        parts.append(text)
    return "; ".join(parts) or "none opened"


async def _theta_by_buckets(
    ask: _ThetaQueries, degree_bound: int, eps_theta: float, eps_dsr: float, weight: float,
    parties: int,
) -> int:  # fmt: skip
    """The DP search: one secure sum of the devices' noisy bucket counts."""
    outcome = ask.outcome
    thresholds = bucket_grid(degree_bound, bucket_count(len(ask.members), eps_theta))
    fp = FixedPoint(-float(SHARE_BOUND), float(SHARE_BOUND + 1), 1.0, 64)
    # the noise needs >= parties shares: the secure sum aborts before unmasking fewer
    totals = await ask("theta-buckets", "bucket", thresholds, fp, min_inputs=parties)
    query = outcome.theta_queries[-1]
    sums = np.rint(totals).astype(np.int64)
    above = counts_above(sums)
    target = deviation_target(query["survivors"], eps_dsr, weight)
    query.update(thresholds=thresholds, bucket_sums=sums.tolist(), target=target)
    query["counts"] = above.tolist()
    outcome.theta_rounds = 1
    return theta_from_counts(thresholds, above, target, degree_bound)


async def _theta_by_deviation(ask: _ThetaQueries, search: DeviationSearch) -> int:
    """The exact search by Deviation: one secure sum of the bits ``[d > t]`` per round."""
    while (thresholds := search.query()) is not None:
        totals = await ask(
            f"theta-{search.rounds}", "above", thresholds, FixedPoint(0.0, 1.0, 1.0, 32)
        )
        counts = [int(np.rint(x)) for x in totals]
        ask.outcome.theta_queries[-1]["counts"] = counts
        search.observe(counts)
    ask.outcome.theta_rounds = search.rounds
    assert search.theta is not None
    return search.theta


async def _theta_by_sum(ask: _ThetaQueries, degree_bound: int, eps_dsr: float) -> int:
    """The search by Sum: one secure sum of every device's vector of local errors."""
    candidates = list(range(1, degree_bound + 1))
    top = degree_bound + degree_bound / eps_dsr
    totals = await ask("theta-sum", "error", candidates, FixedPoint(0.0, top, ERROR_SCALE))
    ask.outcome.theta_rounds = 1
    return theta_by_sum(candidates, lambda t: float(totals[t - 1]))
