"""One device's side of CADR-LDP over a fleet — theory of operation.

A device is a graph node that knows only its own neighbours (its adjacency list is its
private input). ``CadrDevice`` is the sans-I/O machine of all its stages (CADR-LDP spec,
``docs/cadr.md``; seed 004 Alg. 2-6); the pump (``devices.cadr_agent``) only moves bytes.

1. *Plan* (``CadrPlan`` on ``ctl/cadr_plan``): ε, α, the method, the public degree bound
   D, the number of NDOE partitions. The device opens its ledger: one account ``node`` of
   ε, charged ``αε/2`` (exponential mechanism), ``αε/2`` (Warner RR), ``(1-α)ε`` (Laplace)
   as each release happens; any overspend raises ``BudgetExhausted`` before the release.
2. *θ search* (Alg. 2/3): each ``CadrQuery`` opens a secure-aggregation session; the device
   answers with ``[d > t]`` per threshold (Deviation) or its local error per candidate
   (Sum), through a ``protocol.secagg.client.SecAggClient``. The collector sees only the
   sum. These exact sums are not charged to the ledger: they are aggregates revealed by
   design (spec §1; ``docs/cadr.md``). A plan with ``theta_fraction > 0`` (the "dp"
   pipeline) asks instead ONE ``measure="bucket"`` query: the device charges the θ part
   of its budget (``CadrBudget.theta``, mechanism ``geometric``) and answers the one-hot
   vector of its degree's bucket plus its Pólya noise share for ``noise_parties``
   survivors (``protocol.cadr_theta_noise``), so the opened sum is ε_θ-DP; any other
   query, or a second one, is refused (ledger). Secure-aggregation messages of a session whose query
   has not arrived yet are held, as are queries and θ that overtake the plan and relay
   steps that overtake θ: MQTT orders messages per topic only.
3. *θ* (``CadrTheta``).
4. *NDOE* (Alg. 4, relay phase ``ndoe``): on the relay's round start the device samples
   its code with the exponential mechanism at αε/2 (scores ``-|d - median(P_j)|``,
   sensitivity D) and sends it to every neighbour; the relay's delivery brings the
   neighbours' codes. RANDOM-ADD (``ra``) sends no code (and spends nothing here): its
   candidates are ordered at random.
5. *LPEA* (Alg. 5, relay phase ``lpea``): a ``protocol.lpea.LpeaNode`` at εʹ = αε/2 does
   the negotiation; every relay step feeds it the delivered items in relay order and
   returns everything it sends as one batch. ``ll``: lowest code first; ``lh``: highest;
   ``ra``: random order. In a padded phase (``protocol.peer_relay``, "Padding") the relay's
   ``pad`` notice after the quiet round ends the negotiation: that notice and every later
   round are answered with an empty ``done`` batch, the node and the generator untouched
   (so the release is the unpadded one).
6. *DSR* (Alg. 6): when the relay ends LPEA, the device releases ``clip(kept, 0, θ) +
   Laplace(θ / (1-α)ε)`` in a ``DsrReport`` and re-sends it every ``retry`` seconds until
   the collector's ``Ack`` says it is persisted. The ledger then holds exactly ε (ll/lh).

Method ``clip`` (``protocol.cadr_budget``, "Method clip"): no NDOE code, no LPEA node, no
relay phase (a relay step is refused). On θ the device releases ``clip(d, 0, θ) +
Laplace(θ / ε_dsr)`` of its OWN degree ``d`` at once, ``ε_dsr = ε - ε_θ``; its ledger
holds the θ part and the Laplace part, exactly ε. Nothing it sends depends on any other
device's list.

Budget safety. The collector's plan says what the run will spend (ε); a device may cap it
(``max_eps``: its own budget for the run; None accepts the plan's ε). Every spend goes
through the ledger first: the plan is admitted only if its whole split fits (all or
nothing, like ``CadrBudget.charge_all``), and each of NDOE, LPEA and DSR charges before it
draws. A request that does not fit is answered with ONE ``BudgetRefused`` on
``up/budget_refused`` (``request`` = ``cadr_plan``/``ndoe``/``lpea``/``dsr``) — never
silence — and from then on the device privatises nothing: it still answers the relay's
steps so the phases do not stall, with data-independent content (NDOE code 0; an LPEA node
of capacity 0 that proposes nothing, answers every request with randomized response of a
constant "no" and refuses every establish), and sends no DSR release. It is finished when
the LPEA phase ends. θ-search answers of the paper's plan are exact secure sums and cost
no budget (above), so a refused device keeps answering them; under a DP θ search a
device whose θ charge is refused answers a zero vector plus its noise share
(data-independent) so the secure sum still completes.

Deterministic: all randomness comes from the injected generator, drawn in the order of the
inputs, and the relay fixes that order — so a seed gives the same release on every
transport. Invalid input raises ``RemoteProtocolError`` naming the field, changes nothing —
except a relay delivery's peer items, judged one by one: the relay cannot judge them (is a
code in range, is the sender a neighbour, is an answer in turn), so a bad item is refused
alone and counted (``refused_items``), the rest is used and the step answered, then ONE
``RemoteProtocolError`` names the first bad item (``items[i]``) for the pump to count. One
misbehaving peer thus cannot stop an honest device (helper V). A neighbour left without a
valid NDOE code is tried last by LPEA (code ``ndoe_parts``; ``-1`` for ``lh``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_budget import ACCOUNT, THETA_LABEL, CadrBudget, negotiates
from ldpfleet.protocol.cadr_messages import CadrPlan, CadrQuery, CadrTheta, DsrReport
from ldpfleet.protocol.cadr_theta_noise import SHARE_BOUND, bucket_vector, polya_share
from ldpfleet.protocol.dsr import dsr_release
from ldpfleet.protocol.errors import (
    BudgetExhausted,
    LocalProtocolError,
    ParameterError,
    RemoteProtocolError,
)
from ldpfleet.protocol.events import Event, Machine
from ldpfleet.protocol.exponential import ExponentialMechanism, ndoe_partitions, ndoe_scores
from ldpfleet.protocol.ledger import BudgetAccount, PrivacyLedger
from ldpfleet.protocol.lpea import LpeaNode, RoundFinished
from ldpfleet.protocol.messages import MAX_STEPS, Ack, BudgetRefused, Message
from ldpfleet.protocol.peer_relay import RELAY_ID, PeerBatch, PeerDelivery, PeerItem, PeerStep
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.messages import SA_MESSAGES, SaSetup

__all__ = ["CadrDevice", "Released"]

MAX_HELD = 64  # secure-aggregation messages held for a session whose query is not here yet
# the DSR re-send wait doubles from retry up to this many retries' worth (CadrDevice._send_report)
RETRY_BACKOFF_CAP = 8


@dataclass(frozen=True, slots=True)
class Released(Event):
    """The DSR value was sent (the device's last release)."""

    value: float


class CadrDevice(Machine):
    """A graph node taking part in CADR-LDP (module docstring)."""

    def __init__(
        self,
        run: str,
        device: str,
        neighbours: Sequence[str],
        rng: np.random.Generator,
        *,
        retry: float = 5.0,
        max_eps: float | None = None,
    ) -> None:
        super().__init__()
        if max_eps is not None and not (isinstance(max_eps, int | float) and max_eps > 0):
            raise ParameterError(
                f"must be > 0, got {max_eps!r}",
                field="max_eps",
                limit="a number > 0 (or None)",
                value=max_eps,
            )
        self.max_eps = None if max_eps is None else float(max_eps)
        self.run = topics.check_ident(run, "run")
        self.device = topics.check_ident(device, "device")
        self.neighbours = tuple(sorted(topics.check_ident(n, "neighbours") for n in neighbours))
        if device in self.neighbours or len(set(self.neighbours)) != len(self.neighbours):
            raise ParameterError(
                "must be distinct devices other than itself",
                field="neighbours",
                limit="distinct devices other than itself",
                value=neighbours,
            )
        self.degree = len(self.neighbours)
        self._rng = rng
        self.retry = retry
        self.plan: CadrPlan | None = None
        self.budget: CadrBudget | None = None
        self.ledger: PrivacyLedger | None = None
        self.refusal: BudgetRefused | None = None  # set once a spend was refused
        self.theta: int | None = None
        self.code: int | None = None
        self.codes: dict[str, int] = {}  # the neighbours' valid NDOE codes
        self._codes_taken = False  # the NDOE delivery came
        self.refused_items = 0  # delivered peer items refused one by one (a peer misbehaved)
        self.node: LpeaNode | None = None
        self.sessions = 0
        self._theta_answered = False
        self.theta_answer: np.ndarray | None = None  # the DP θ search's input to its sum
        self.released: float | None = None
        self.acked = False
        self._client: SecAggClient | None = None
        self._held: list[tuple[topics.Topic, Message]] = []
        self._early: list[tuple[topics.Topic, Message]] = []  # broadcasts before the plan
        self._pending_steps: list[PeerStep] = []  # relay steps waiting for plan / θ
        self._phase_done: set[str] = set()
        self._padding = False  # a padded LPEA phase went quiet (relay's ``pad``)
        self._seq = 0
        self._report: DsrReport | None = None
        self._resend_at: float | None = None
        self._retry_wait = retry  # the wait before the next re-send (doubles, capped)

    # ---- helpers ---------------------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq += 1
        return min(self._seq, MAX_STEPS)

    def _batch(self, phase: str, r: int, step: int, items: list[PeerItem], **extra) -> None:
        self._send(
            topics.up(self.run, self.device, "peer_batch"),
            PeerBatch(
                run=self.run,
                sender=self.device,
                seq=self._next_seq(),
                phase=phase,
                round=r,
                step=step,
                items=items,
                **extra,
            ),
        )

    @property
    def finished(self) -> bool:
        """The release is persisted by the collector (or, after a budget refusal, the LPEA
        phase the device still served is over; clip: θ came)."""
        if self.acked:
            return True
        if self.refusal is None:
            return False
        if self.plan is not None and not negotiates(self.plan.method):
            return self.theta is not None  # clip: θ came, the refused release is not sent
        return "lpea" in self._phase_done

    def _refuse(self, request: str, r: int, requested: float, reason: str) -> None:
        """Answer a request that would overspend with one ``BudgetRefused``."""
        assert self.ledger is not None
        account = self.ledger.account(ACCOUNT)
        assert isinstance(account, BudgetAccount)
        self.refusal = BudgetRefused(
            run=self.run,
            sender=self.device,
            seq=self._next_seq(),
            account=ACCOUNT,
            request=request,
            round=min(r, MAX_STEPS),
            requested=min(requested, 50.0),
            remaining=min(account.remaining, 1e6),
            reason=reason[:500],
        )
        self._send(topics.up(self.run, self.device, "budget_refused"), self.refusal)

    def _charge(self, eps: float, mechanism: str, request: str, r: int) -> bool:
        """Charge the ledger before a release; False (one refusal sent) if it does not fit."""
        assert self.ledger is not None
        if self.refusal is not None:
            return False
        try:
            self.ledger.charge(ACCOUNT, eps, mechanism=mechanism)
        except BudgetExhausted as refusal:
            self._refuse(request, r, eps, refusal.reason)
            return False
        return True

    # ---- input -----------------------------------------------------------------------------

    def receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        """One message from the collector, the relay or (through the relay) the peers."""
        if message.run != self.run or topic.run != self.run:
            raise RemoteProtocolError(f"run {message.run!r} is not {self.run!r}", field="run")
        if topic.family == "ctl":
            if isinstance(message, PeerStep):
                self._expect_sender(message, RELAY_ID)
                self._on_step(message, now)
                return
            self._expect_sender(message, topics.COLLECTOR_ID)
            if isinstance(message, CadrQuery | CadrTheta) and self.plan is None:
                # the plan is still on the way (no order between two broadcast topics)
                if len(self._early) >= MAX_HELD:
                    raise RemoteProtocolError("too many broadcasts before the plan", field="type")
                self._early.append((topic, message))
            elif isinstance(message, CadrPlan):
                self._on_plan(message)
                early, self._early = self._early, []
                for held_topic, held in early:
                    self.receive(held_topic, held, now)
            elif isinstance(message, CadrQuery):
                self._on_query(message, now)
            elif isinstance(message, CadrTheta):
                self._on_theta(message, now)
            else:
                raise RemoteProtocolError(
                    f"unexpected {message.type_name()} broadcast", field="type"
                )
            return
        if topic.family != "in" or topic.recipient != self.device:
            raise RemoteProtocolError(f"{topic.text!r} is not {self.device}'s inbox", field="topic")
        if message.sender != topic.sender:
            raise RemoteProtocolError("sender does not match the topic's source", field="sender")
        if topic.sender == RELAY_ID and isinstance(message, PeerDelivery):
            self._on_delivery(message, now)
        elif topic.sender == topics.COLLECTOR_ID and isinstance(message, SA_MESSAGES):
            self._on_secagg(topic, message, now)
        elif topic.sender == topics.COLLECTOR_ID and isinstance(message, Ack):
            if self._report is None or message.seq != self._report.seq:
                raise RemoteProtocolError("ack of no report of ours", field="seq")
            self.acked = True
            self._resend_at = None
        else:
            raise RemoteProtocolError(
                f"unexpected {message.type_name()} from {topic.sender}", field="type"
            )

    @staticmethod
    def _expect_sender(message: Message, sender: str) -> None:
        if message.sender != sender:
            raise RemoteProtocolError(
                f"{message.type_name()} must come from {sender}, not {message.sender!r}",
                field="sender",
            )

    # ---- plan and θ ------------------------------------------------------------------------

    def _on_plan(self, plan: CadrPlan) -> None:
        if self.plan is not None:
            if plan == self.plan:
                return  # a repeated broadcast
            raise RemoteProtocolError("the plan cannot change during a run", field="plan")
        if plan.ndoe_parts > plan.degree_bound + 1:
            raise RemoteProtocolError(
                f"{plan.ndoe_parts} parts exceed the {plan.degree_bound + 1} degrees in [0, D]",
                field="ndoe_parts",
            )
        if plan.theta_fraction > 0 and plan.noise_parties < 1:
            raise RemoteProtocolError(
                "a DP θ search needs noise_parties >= 1, got 0", field="noise_parties"
            )
        self.plan = plan
        self.budget = CadrBudget(
            plan.eps,
            plan.alpha,
            plan.theta_fraction,
            plan.theta_extra,
            negotiation=negotiates(plan.method),
        )
        limit = plan.eps if self.max_eps is None else self.max_eps
        self.ledger = PrivacyLedger(self.device)
        self.ledger.open_account(ACCOUNT, BudgetAccount(limit))
        account = self.ledger.account(ACCOUNT)
        assert isinstance(account, BudgetAccount)
        total = sum(eps for _, eps in self.budget.parts())
        if not account.can_charge(total):  # all or nothing: refuse the plan up front
            account.refusals += 1
            self._refuse(
                "cadr_plan",
                0,
                plan.eps,
                f"the plan spends {total:.6g} but this device's budget is {limit:.6g}",
            )

    def _require_plan(self) -> CadrPlan:
        if self.plan is None:
            raise RemoteProtocolError("no plan yet", field="type")
        return self.plan

    def _on_query(self, query: CadrQuery, now: float) -> None:
        plan = self._require_plan()
        assert self.budget is not None
        if self._client is not None and self._client.session == query.session:
            raise RemoteProtocolError(f"session {query.session} asked twice", field="session")
        bad = [t for t in query.thresholds if t > plan.degree_bound]
        if bad:
            raise RemoteProtocolError(
                f"threshold {bad[0]} exceeds the degree bound {plan.degree_bound}",
                field="thresholds",
            )
        dp = plan.theta_fraction > 0
        if dp != (query.measure == "bucket"):
            raise RemoteProtocolError(
                f"measure {query.measure!r} under a plan with theta_fraction "
                f"{plan.theta_fraction:g} (bucket queries are the DP θ search's, only)",
                field="measure",
            )
        t = np.asarray(query.thresholds, dtype=float)
        d = float(min(self.degree, plan.degree_bound))
        if dp:
            x = self._bucket_answer(query, plan)
        elif query.measure == "above":
            x = (d > t).astype(float)
        else:  # Alg. 2's local error, optimistic projection loss + expected Laplace error
            x = np.maximum(0.0, d - t) + t / self.budget.dsr
        self._client = SecAggClient(self.run, query.session, self.device, x)
        self.sessions += 1
        held, self._held = self._held, []
        for topic, message in held:
            if message.session == query.session:  # type: ignore[attr-defined]
                self._feed_client(topic, message, now)

    def _bucket_answer(self, query: CadrQuery, plan: CadrPlan) -> np.ndarray:
        """The DP θ search's answer: one-hot bucket + Pólya share, after the θ charge (a
        refused charge: zeros + share, data-independent)."""
        assert self.budget is not None
        if list(query.thresholds) != sorted(set(query.thresholds)):
            raise RemoteProtocolError(
                "thresholds must be ascending and distinct", field="thresholds"
            )
        if self._theta_answered:
            raise RemoteProtocolError("the DP θ search asks one bucket query", field="session")
        self._theta_answered = True
        size = len(query.thresholds) + 1
        if self._charge(self.budget.theta, THETA_LABEL, "theta", 0):
            x = bucket_vector(min(self.degree, plan.degree_bound), query.thresholds)
        else:
            x = np.zeros(size)
        share = polya_share(self._rng, plan.noise_parties, self.budget.theta, size)
        self.theta_answer = x + share.astype(float)
        return self.theta_answer

    def _on_secagg(self, topic: topics.Topic, message: Message, now: float) -> None:
        client = self._client
        if client is not None and message.session == client.session:  # type: ignore[attr-defined]
            self._feed_client(topic, message, now)
        elif len(self._held) < MAX_HELD:
            self._held.append((topic, message))  # its query is still on the way
        else:
            raise RemoteProtocolError("too many messages of unknown sessions", field="session")

    def _feed_client(self, topic: topics.Topic, message: Message, now: float) -> None:
        assert self._client is not None
        if isinstance(message, SaSetup) and self.plan is not None and self.plan.theta_fraction > 0:
            _check_theta_session(self.plan, message)
        self._client.receive(topic, message, now)
        self._outbound.extend(self._client.pop_outbound())

    def _on_theta(self, message: CadrTheta, now: float) -> None:
        plan = self._require_plan()
        if self.theta is not None and message.theta != self.theta:
            raise RemoteProtocolError("θ cannot change during a run", field="theta")
        if message.theta > plan.degree_bound:
            raise RemoteProtocolError(
                f"θ = {message.theta} exceeds the degree bound {plan.degree_bound}", field="theta"
            )
        first = self.theta is None
        self.theta = message.theta
        if not negotiates(plan.method):  # clip: release the own clipped degree at once
            if first:
                self._release(now, min(self.degree, message.theta))
            return
        pending, self._pending_steps = self._pending_steps, []
        for step in pending:
            self._on_step(step, now)

    # ---- relay phases ----------------------------------------------------------------------

    def _on_step(self, step: PeerStep, now: float) -> None:
        if step.phase not in ("ndoe", "lpea"):
            raise RemoteProtocolError(f"unknown phase {step.phase!r}", field="phase")
        if self.plan is not None and not negotiates(self.plan.method):
            raise RemoteProtocolError(
                f"method {self.plan.method} runs no relay phase ({step.phase})", field="phase"
            )
        if self.plan is None or self.theta is None:
            if len(self._pending_steps) >= 4:
                raise RemoteProtocolError("relay steps before the plan and θ", field="phase")
            self._pending_steps.append(step)  # the collector's θ is still on the way
            return
        if step.phase in self._phase_done:
            raise RemoteProtocolError(f"phase {step.phase} is over", field="phase")
        if step.phase == "ndoe":
            if step.finished:
                self._phase_done.add("ndoe")
            else:
                self._send_code(step.round)
        elif step.finished:
            self._phase_done.add("lpea")
            if self.node is None:
                raise RemoteProtocolError("LPEA ended before it started", field="phase")
            self._release(now, len(self.node.kept))
        elif self._padding:  # a padding round (protocol.peer_relay, "Padding")
            if self.node is None or step.round <= self.node.round:
                raise RemoteProtocolError(f"padding round {step.round} is stale", field="round")
            self._batch("lpea", step.round, 0, [], done=True, added=0)
        else:
            self._lpea_round(step.round, now)

    def _send_code(self, r: int) -> None:
        plan = self.plan
        assert plan is not None and self.budget is not None and self.ledger is not None
        if self.code is not None:
            raise RemoteProtocolError("NDOE runs once", field="round")
        items: list[PeerItem] = []
        if plan.method != "ra":
            if self._charge(self.budget.ndoe, "exponential", "ndoe", r):
                partitions = ndoe_partitions(0, plan.degree_bound, plan.ndoe_parts)
                mechanism = ExponentialMechanism(self.budget.ndoe, plan.degree_bound)
                self.code = mechanism.sample(ndoe_scores(self.degree, partitions), self._rng)
            else:
                self.code = 0  # refused: a data-independent code, nothing privatised
            items = [PeerItem(n, "code", self.code) for n in self.neighbours]
        else:
            self.code = 0  # RANDOM-ADD: no code, every candidate ties, order is random
        self._batch("ndoe", r, 0, items, done=True)

    def _lpea_round(self, r: int, now: float) -> None:
        plan = self.plan
        assert plan is not None and self.budget is not None and self.ledger is not None
        if self.node is None:
            if r != 0:
                raise RemoteProtocolError(f"LPEA starts at round 0, not {r}", field="round")
            if plan.method == "ra":
                codes = dict.fromkeys(self.neighbours, 0)
            else:
                # a neighbour whose code was refused or never came is tried last
                last = -1 if plan.method == "lh" else plan.ndoe_parts
                codes = {n: self.codes.get(n, last) for n in self.neighbours}
            capacity = self.theta
            if not self._charge(self.budget.lpea, "warner_rr", "lpea", r):
                # refused: capacity 0 makes every answer RR of a constant "no" and every
                # establish refused; nothing about the adjacency list is released
                codes, capacity = dict.fromkeys(self.neighbours, 0), 0
            order = "high" if plan.method == "lh" else "low"
            self.node = LpeaNode(
                self.run,
                self.device,
                codes,
                capacity,
                self.budget.lpea,
                self._rng,
                order,
                compact=True,
            )
        try:
            self.node.start_round(r, now)
        except LocalProtocolError as error:
            raise RemoteProtocolError(str(error), field="round") from None
        self._flush_node(r, 0)

    def _flush_node(self, r: int, step: int) -> None:
        node = self.node
        assert node is not None
        done, added = False, 0
        for event in node.pop_events():
            if isinstance(event, RoundFinished):
                done, added = True, event.added
        self._batch("lpea", r, step, node.pop_items(), done=done, added=added)

    def _on_delivery(self, delivery: PeerDelivery, now: float) -> None:
        if delivery.phase == "ndoe":
            refused = self._take_codes(delivery)
            self._batch("ndoe", delivery.round, delivery.step, [], done=True)
            self._refuse_items(refused, len(delivery.items))
            return
        node = self.node
        if delivery.phase != "lpea" or node is None or delivery.round != node.round:
            raise RemoteProtocolError(
                f"delivery of {delivery.phase} round {delivery.round} is not expected",
                field="phase",
            )
        r = delivery.round
        if delivery.pad:  # the negotiation went quiet: the rest of the phase is padding
            if delivery.items or not node.round_done or self._padding:
                raise RemoteProtocolError("a padding notice is not expected now", field="pad")
            self._padding = True
            self._batch("lpea", r, delivery.step, [], done=True, added=0)
            return
        refused: list[tuple[int, RemoteProtocolError]] = []
        for index, item in enumerate(delivery.items):
            try:  # the node checks every item before it changes anything
                node.receive_item(item.peer, item.kind, item.value, r, now)
            except RemoteProtocolError as error:  # that peer misbehaved: skip its item
                refused.append((index, error))
        self._flush_node(r, delivery.step)
        self._refuse_items(refused, len(delivery.items))

    def _refuse_items(self, refused: list[tuple[int, RemoteProtocolError]], total: int) -> None:
        """Count the items of a delivery that were refused one by one (the rest was used and
        the step answered) and raise one ``RemoteProtocolError`` naming the first: one
        peer's bad item must not stop this device (the relay cannot judge items)."""
        if not refused:
            return
        self.refused_items += len(refused)
        index, first = refused[0]
        raise RemoteProtocolError(
            f"{len(refused)} of {total} items refused (the rest used); first: {first.reason}",
            field=f"items[{index}]",
            code=first.code,
        )

    def _take_codes(self, delivery: PeerDelivery) -> list[tuple[int, RemoteProtocolError]]:
        """Keep each neighbour's first valid code; return the items refused (by index)."""
        plan = self.plan
        if plan is None or self.code is None or self._codes_taken:
            raise RemoteProtocolError("NDOE codes are not expected now", field="phase")
        self._codes_taken = True
        codes: dict[str, int] = {}
        refused: list[tuple[int, RemoteProtocolError]] = []
        neighbours = set(self.neighbours)
        for index, item in enumerate(delivery.items):
            if item.kind != "code" or not 0 <= item.value < plan.ndoe_parts:
                reason = f"bad NDOE item {item!r} (a code in [0, {plan.ndoe_parts}))"
            elif item.peer not in neighbours or item.peer in codes:
                reason = f"code from {item.peer}, not a neighbour (or twice)"
            else:
                codes[item.peer] = item.value
                continue
            refused.append((index, RemoteProtocolError(reason, field=f"items[{index}]")))
        self.codes = codes
        return refused

    # ---- DSR ---------------------------------------------------------------------------------

    def _release(self, now: float, kept: int) -> None:
        """DSR: ``clip(kept, 0, θ) + Laplace(θ / ε_dsr)`` (``kept``: LPEA's kept degree, or
        clip's own degree), after its charge."""
        assert self.budget is not None and self.ledger is not None and self.theta is not None
        if self._report is not None:
            raise RemoteProtocolError("DSR runs once", field="phase")
        if not self._charge(self.budget.dsr, "laplace", "dsr", 0):
            return  # refused (now or earlier): no release; finished with the phase
        value = float(dsr_release(kept, self.theta, self.budget.dsr, self._rng))
        self._report = DsrReport(
            run=self.run,
            sender=self.device,
            seq=self._next_seq(),
            value=value,
            theta=self.theta,
            eps=self.budget.dsr,
        )
        self.released = value
        self._emit(Released(value))
        self._send_report(now)

    def _send_report(self, now: float, *, again: bool = False) -> None:
        """Send the DSR report; re-sent while unacknowledged after ``retry``, then twice as
        long each time, at most ``RETRY_BACKOFF_CAP`` x ``retry`` (a fixed 5 s made a large
        fleet's releases a congestion collapse: the collector acks ~1,000 a second on the
        memory transport, so at 25,000 devices each was sent 2.3 times on average and at
        50,000 the DSR stage missed its 120 s)."""
        assert self._report is not None
        self._send(topics.up(self.run, self.device, "dsr"), self._report)
        wait = min(2 * self._retry_wait, RETRY_BACKOFF_CAP * self.retry) if again else self.retry
        self._retry_wait = wait
        self._resend_at = now + wait

    def next_timer(self) -> float | None:
        return self._resend_at

    def handle_timer(self, now: float) -> None:
        if self._resend_at is not None and now >= self._resend_at and not self.acked:
            self._send_report(now, again=True)

    # ---- views -------------------------------------------------------------------------------

    def spent(self) -> float:
        """ε charged so far (the ``node`` account)."""
        if self.ledger is None:
            return 0.0
        return self.ledger.account(ACCOUNT).spent


def _check_theta_session(plan: CadrPlan, setup: SaSetup) -> None:
    """``RemoteProtocolError`` for a θ-search session that would cut the noise this device
    adds (privacy review V, 2026-12-07): shares sized for more sharers than the session has
    (the opened sum under-noised while every ledger is charged ε_θ), or an encoding range
    narrower than a share or a rounding scale (each share clipped before the sum)."""
    if plan.noise_parties > setup.participants:
        raise RemoteProtocolError(
            f"noise_parties {plan.noise_parties} exceeds the session's "
            f"{setup.participants} participants: the θ search's noise would fall short",
            field="noise_parties",
        )
    holds_a_share = setup.clip_low <= -SHARE_BOUND and setup.clip_high >= SHARE_BOUND + 1
    if not (holds_a_share and setup.scale >= 1 and float(setup.scale).is_integer()):
        raise RemoteProtocolError(
            f"the θ-bucket session encodes [{setup.clip_low:g}, {setup.clip_high:g}] "
            f"at scale {setup.scale:g}: it must hold [-{SHARE_BOUND}, {SHARE_BOUND + 1}] "
            "at an integer scale, or each noise share is clipped before the sum",
            field="clip_low",
        )
