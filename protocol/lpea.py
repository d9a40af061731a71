"""LPEA (local private edge addition) between neighbouring devices — theory of operation.

This is the distributed, private counterpart of :func:`collector.projection.lpea`
(CADR-LDP spec §3, seed Alg. 5): every device is one :class:`LpeaNode`, a sans-I/O machine
that negotiates kept edges with its graph neighbours so that no device ever keeps more than
``theta`` edges. The collector starts each round with a broadcast; here that is the method
``start_round(r, now)``. Peers talk through their inboxes, ``topics.inbox(run, dst, src)``.

Message flow of round ``r`` (all four messages carry ``round=r``)

1. *Request.* A node ``i`` with capacity (``kept_i < theta``) sends ``LpeaRequest`` to every
   neighbour of ``U1`` (the neighbours it has no kept edge with).
2. *Answer.* Every ``j`` answers every request with ``LpeaAnswer(yes=RR(kept_j + reserved_j <
   theta))``: Warner randomized response at ``eps`` (``eps' = alpha * eps / 2`` of the spec)
   with the injected generator. Only these bits are privatised (the NDOE codes were
   privatised before; the establish step is the hard cap, as in the reference).
3. *Propose.* When every ``U1`` neighbour has answered (or ``finish_requests()`` gives up on
   the missing ones: they then count as not asked), ``i`` debiases the yes-count,
   ``c' = WarnerRR.debias_count(yes, answered)``, and sets ``s = min(max(round(c'), 0),
   theta - kept_i - reserved_i)``. The *pool* is the neighbours that answered yes (a
   post-processing of the RR output, so no privacy cost), ordered by NDOE code — lowest
   first for ``order="low"`` (LPEA-LOW), highest first for ``"high"`` — ties broken by the
   injected generator (shuffle, then stable sort). ``i`` proposes ``LpeaEstablish`` to the
   first ``s`` of the pool, RESERVING one unit of capacity per outstanding proposal, and
   *walks* the pool as in the reference: each refusal frees the reservation and the next
   pool member is asked, until ``s`` proposals ended in an edge, the pool is exhausted, or
   ``i`` has no capacity left (``kept_i + reserved_i = theta``). The walk skips a neighbour
   whose own establish ``i`` already answered or deferred this round: proposing to it could
   cross with a refusal already in flight (the edge is left to the next round).
4. *Establish.* ``j`` receiving ``LpeaEstablish`` from ``i``:

   - ``j`` has an outstanding proposal to ``i`` (*crossed proposals*, below): accept by
     converting that reservation into the kept edge;
   - the edge ``(i, j)`` is already kept (the other half of a crossing): accept, no change;
   - ``kept_j + reserved_j < theta``: keep the edge, accept;
   - ``kept_j >= theta``: refuse (``LpeaConfirm(accepted=False)``);
   - otherwise ``j`` is blocked only by its own reservations, whose outcome is not known
     yet. If ``i < j`` (device ids compared as strings) ``j`` *defers* the answer until its
     reservations resolve; if ``i > j`` it refuses at once. Waiting only ever goes from a
     smaller to a larger id, so no cycle of waits (deadlock) can form, and a refusal is
     never sent by a node that would have had room after all because of a node it waited
     for. This is what makes the non-private limit maximal (below).

5. *Confirm.* On ``LpeaConfirm`` ``i`` releases the reservation and, if accepted, keeps the
   edge — unless it is already kept through the crossed case.

Crossed proposals. ``i`` and ``j`` may propose to each other in the same round; both
establishes are then in flight and denote the same edge. A node that receives an establish
from a neighbour it has an outstanding proposal to moves that neighbour from ``_proposed``
(reservations) to ``_crossed`` and into ``kept``: the capacity unit reserved for the edge
becomes the kept edge (``kept + reserved`` does not change) and it replies
``accepted=True``. Its own proposal is still in flight, so the peer's confirm for it is
still expected. Two interleavings exist, and both leave the edge kept exactly once by each
endpoint:

- both establishes arrive before either confirm: both nodes convert (both have the peer in
  ``_crossed``); each then gets the other's ``accepted=True`` confirm, finds the peer in
  ``_crossed``, and only clears the marker (the edge is not added again);
- ``i`` converts first and its confirm reaches ``j`` before ``i``'s establish does: ``j``
  treats it as a normal accepted proposal (releases its reservation, keeps ``i``); when
  ``i``'s establish then arrives, ``j`` already keeps ``i`` and accepts without any change;
  ``i`` gets that confirm with ``j`` in ``_crossed`` and clears the marker.

A crossed proposal can only be answered ``accepted=True`` by an honest peer; a refusal of it
is refused as a protocol violation (``field="accepted"``).

Invariants. After every input the machine checks ``kept + reserved <= theta``,
``kept <= theta`` and the proposal bookkeeping, and raises ``LocalProtocolError`` if any were
broken (they cannot be, by construction; ``kept`` ⊆ neighbours holds because only validated
neighbours are ever kept).

Two ways in and out. ``receive``/the outbox carry one message per peer message on the
peers' inbox topics (``protocol.lpea_device``, pumped by ``devices.lpea_agent``). A
*compact* node (``compact=True``) instead takes ``receive_item(sender, kind, value,
round)`` and queues ``PeerItem``s (``pop_items``) for the batching relay
(``protocol.peer_relay``, used by ``protocol.cadr_device``); both paths run the same
checks and the same transitions.

Kept edges are symmetric at quiescence (every node ``round_done`` and no message in
flight). The collector must start round ``r + 1``
only after every node reported ``RoundFinished(r)`` *and* the traffic has drained (a node
that finished its own part still answers requests and establishes of the same round);
``start_round`` refuses while this node is not ``round_done``. The round broadcast must
reach a node before peer messages of that round (``protocol.lpea_device`` buffers early
ones): a message of another round is refused.

Non-private limit. With truthful answers (``eps = 50``) a round that adds no edge leaves a
maximal projection: let ``m`` be the smallest id that proposed; its refusals all come from
full nodes (a busy refusal would come from a smaller proposer, a deferral would end in an
edge), its pool holds only nodes that said "not full", so it would have made an edge.
Hence nobody proposed, no reservation existed, every "no" meant "full", and no edge can be
added between two nodes below ``theta``. ``RoundFinished.added`` (per node: own proposals
that ended in a kept edge, crossed ones included) sums to zero over the fleet iff the round
added no edge, which is the collector's stopping rule.

Validation. ``receive`` refuses, with ``RemoteProtocolError`` and without any state change:
a topic that is not this node's inbox (``topic``/``run``), a sender that is not the
topic's source or not a neighbour (``sender``), another round (``round``), an answer
without a pending request, a confirm without an outstanding proposal, a second request or
establish from the same neighbour in a round, a non-LPEA message (``type``). The pump
reports it and carries on; the node remains usable (``rejected`` counts them).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Literal

import numpy as np
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Event, Machine
from ldpfleet.protocol.messages import MAX_STEPS, Message
from ldpfleet.protocol.peer_relay import PeerItem
from ldpfleet.protocol.rr import WarnerRR
from msgspec import Meta

__all__ = [
    "LPEA_CONTROL",
    "LPEA_MESSAGES",
    "PADDED_ROUNDS",
    "LpeaAnswer",
    "LpeaConfirm",
    "LpeaEstablish",
    "LpeaNode",
    "LpeaRequest",
    "RoundFinished",
    "admit_agent_delivery",
    "admit_round_report",
    "checked_theta",
    "padded_rounds",
]

Round = Annotated[int, Meta(ge=0, le=MAX_STEPS)]

PADDED_ROUNDS = 16  # the fleet's public LPEA round count (docs/cadr.md, "Padding")


def checked_theta(theta: object) -> int:
    """The degree cap θ as an int, refused unless a non-negative integer (a bool is not
    one): every LPEA — a device's ``LpeaNode`` and the in-process projections of
    ``collector.projection`` — checks it here."""
    if isinstance(theta, bool) or not isinstance(theta, int | np.integer) or theta < 0:
        raise ParameterError(
            f"must be a non-negative integer, got {theta!r}",
            field="theta",
            limit="a non-negative integer",
            value=theta,
        )
    return int(theta)


def padded_rounds(max_rounds: int) -> int:
    """The public number of rounds a padded LPEA phase runs: ``PADDED_ROUNDS``, or the
    run's ``max_rounds`` when that is smaller. A constant of the run's configuration, never
    of the data: the negotiation runs until a round adds no edge, the relay pads the rest
    (``protocol.peer_relay``, "Padding"); a negotiation that needs more rounds is cut there
    (how often on the evaluation grid: docs/cadr.md)."""
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise ParameterError(
            f"must be an integer >= 1, got {max_rounds!r}",
            field="max_rounds",
            limit="an integer >= 1",
            value=max_rounds,
        )
    return min(PADDED_ROUNDS, max_rounds)


# Messages -------------------------------------------------------------------------------


class LpeaRequest(Message, tag="lpea_request", kw_only=True):
    """Device -> neighbour inbox: may we keep our edge? (round ``round``)."""

    round: Round


class LpeaAnswer(Message, tag="lpea_answer", kw_only=True):
    """Neighbour -> requester: Warner-RR answer to "kept + reserved < theta"."""

    round: Round
    yes: bool


class LpeaEstablish(Message, tag="lpea_establish", kw_only=True):
    """Requester -> chosen neighbour: keep our edge (the sender reserved capacity for it)."""

    round: Round


class LpeaConfirm(Message, tag="lpea_confirm", kw_only=True):
    """Neighbour -> proposer: the edge is kept (``accepted``) or refused."""

    round: Round
    accepted: bool


LPEA_MESSAGES = (LpeaRequest, LpeaAnswer, LpeaEstablish, LpeaConfirm)
_KIND_TYPES: dict[str, type[Message]] = {
    "req": LpeaRequest,
    "ans": LpeaAnswer,
    "est": LpeaEstablish,
    "conf": LpeaConfirm,
}
_TYPE_KINDS = {message_type: kind for kind, message_type in _KIND_TYPES.items()}


@lru_cache(maxsize=64)
def _warner(make: Callable[[float], WarnerRR], eps: float) -> WarnerRR:
    """``make(eps)`` (the module's ``WarnerRR``) for a float budget, made once per budget and
    shared by the nodes (a frozen object; its answers draw from each node's own generator).
    Keyed by ``make`` too: an audit's planted bug replaces ``lpea.WarnerRR``
    (``collector/audit/mutants.py``), and a cache keyed by the budget alone handed the
    machines the real coin made earlier in the process (the mutant went uncaught).
    Refusals are not cached: a bad budget is refused at every construction, as before."""
    return make(eps)


def _tag(kind: str) -> str:
    """The wire tag of an LPEA message kind (``lpea_request`` for ``req``): for refusals."""
    return _KIND_TYPES[kind].__struct_config__.tag


class LpeaRound(Message, tag="lpea_round", kw_only=True):
    """Collector -> all devices: round ``round`` starts, or (``finished``) LPEA is over."""

    round: Round
    finished: bool = False


class LpeaDone(Message, tag="lpea_done", kw_only=True):
    """Device -> pacer: its own part of round ``round`` ended; ``added`` = its proposals
    that ended in a kept edge (the stopping rule needs only their sum). Not the kept
    degree: whoever paces learns nothing more than the per-round additions."""

    round: Round
    added: Annotated[int, Meta(ge=0, le=MAX_STEPS)]


LPEA_CONTROL = (LpeaRound, LpeaDone)  # round pacing between the collector and the devices


# Admission of the pumps' deliveries (the pumps only act on the answer) -----------------


def admit_agent_delivery(topic: topics.Topic, message: Message, run: str) -> Message:
    """What a device's LPEA pump may do with ``message`` decoded from ``topic``: return it
    (an ``LpeaRound`` from this run's collector on this run's ``ctl/lpea_round``, or a peer
    message on an inbox) or refuse it with ``RemoteProtocolError`` naming the field:
    ``type`` for anything but an ``LpeaRound`` on a control topic or round control on a
    peer inbox (only the collector paces), ``sender`` for a round not from this run's
    collector."""
    if topic.family == "ctl":
        if not isinstance(message, LpeaRound) or topic.text != topics.ctl(run, "lpea_round"):
            raise RemoteProtocolError("expected lpea_round", field="type")
        if message.run != run or message.sender != topics.COLLECTOR_ID:
            raise RemoteProtocolError("not this run's collector", field="sender")
    elif isinstance(message, LPEA_CONTROL):
        raise RemoteProtocolError("round control on a peer inbox", field="type")
    return message


def admit_round_report(
    topic: topics.Topic, message: Message, run: str, round: int, waiting: set[str]
) -> LpeaDone:
    """The LPEA pacer's admission of one delivery while it waits on round ``round``'s
    reports from the devices in ``waiting``: return the ``LpeaDone`` to count, or refuse
    with ``RemoteProtocolError`` naming the field: ``type`` (not an ``LpeaDone``), ``run``
    (message or topic of another run), ``sender`` (not the topic's sender, or not a device
    still awaited: a duplicate or unknown report), ``round`` (a stale report)."""
    if not isinstance(message, LpeaDone):
        raise RemoteProtocolError("expected lpea_done", field="type")
    if message.run != run or topic.run != run:
        raise RemoteProtocolError("wrong run", field="run")
    if message.sender != topic.sender:
        raise RemoteProtocolError("sender is not the topic's", field="sender")
    if message.round != round:
        raise RemoteProtocolError(
            f"a report of round {message.round} while round {round} runs", field="round"
        )
    if message.sender not in waiting:
        raise RemoteProtocolError(
            f"{message.sender!r} is not awaited in round {round}", field="sender"
        )
    return message


# Events ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoundFinished(Event):
    """This node's own part of round ``round`` ended (no request or proposal outstanding);
    ``added`` = its proposals of the round that ended in a kept edge."""

    round: int
    added: int


def _code_key(key: float) -> tuple[bool, float]:
    """The pool's sort key: codes ascending (a stable sort, as ``numpy.argsort(kind=
    "stable")``), a NaN code after every number (numpy's place for NaN)."""
    return (True, 0.0) if key != key else (False, key)


# Machine --------------------------------------------------------------------------------


class LpeaNode(Machine):
    """One device's side of the private LPEA negotiation (module docstring)."""

    def __init__(
        self,
        run: str,
        device: str,
        codes: Mapping[str, int],
        theta: int,
        eps: float,
        rng: np.random.Generator,
        order: Literal["low", "high"] = "low",
        *,
        compact: bool = False,
    ) -> None:
        super().__init__()
        self.compact = compact
        self._items: list[PeerItem] = []
        self.run = topics.check_ident(run, "run")
        self.device = topics.check_ident(device, "device")
        theta = checked_theta(theta)
        if order not in ("low", "high"):
            raise ParameterError(
                f"must be 'low' or 'high', got {order!r}",
                field="order",
                limit="one of ['low', 'high']",
                value=order,
            )
        self.codes: dict[str, float] = {}
        for neighbour, code in codes.items():
            topics.check_ident(neighbour, "codes")
            if neighbour == device:
                raise ParameterError(
                    "a device is not its own neighbour",
                    field="codes",
                    limit="a device other than itself",
                    value=neighbour,
                )
            if isinstance(code, bool) or not isinstance(code, int | float | np.integer):
                raise ParameterError(
                    f"code of {neighbour} must be a number",
                    field="codes",
                    limit="a number",
                    value=code,
                )
            self.codes[neighbour] = float(code)
        self.theta = theta
        self.order = order
        self.rr = _warner(WarnerRR, eps) if type(eps) is float else WarnerRR(eps)
        self._rng = rng
        self.kept: set[str] = set()
        self.round: int | None = None
        self.rejected = 0
        self.asked_max = 0  # the largest request set |U1| of any round (Thm 3.5's V_i)
        self._seq = 0
        self._reset_round()

    def _reset_round(self) -> None:
        self._awaiting: set[str] = set()  # requests sent, answer pending
        self._answers: dict[str, bool] = {}
        self._answered: set[str] = set()  # requests from neighbours answered this round
        self._establish_from: set[str] = set()  # establishes received this round
        self._proposed: set[str] = set()  # outstanding proposals holding a reservation
        self._crossed: set[str] = set()  # own proposals converted to kept, confirm pending
        self._deferred: deque[str] = deque()  # establishes waiting for our reservations
        self._pool: deque[str] = deque()  # ordered candidates not yet proposed to
        self._target = 0  # s
        self._made = 0  # own proposals ended in a kept edge
        self._phase = "idle"  # idle -> requesting -> proposing -> done

    # ---- views ----------------------------------------------------------------------------

    @property
    def reserved(self) -> int:
        """Capacity units held by outstanding proposals."""
        return len(self._proposed)

    @property
    def round_done(self) -> bool:
        """No request, proposal or deferred establish of this node is outstanding."""
        return self._phase in ("idle", "done")

    # ---- helpers --------------------------------------------------------------------------

    def _out(self, dst: str, kind: str, value: int = 0) -> None:
        """Send one peer message: kind ``req``/``ans``/``est``/``conf`` (``value``: the
        answer's ``yes`` or the confirm's ``accepted``). A compact node queues
        ``PeerItem``s for the batching relay (``pop_items``); otherwise a message is
        published on the peer's inbox."""
        if self.compact:
            self._items.append(PeerItem(dst, kind, value))
            return
        self._seq += 1
        fields = {"run": self.run, "sender": self.device, "seq": min(self._seq, MAX_STEPS)}
        if kind == "ans":
            fields["yes"] = bool(value)
        elif kind == "conf":
            fields["accepted"] = bool(value)
        message = _KIND_TYPES[kind](round=self.round, **fields)
        self._send(topics.inbox(self.run, dst, self.device), message)

    def pop_items(self) -> list[PeerItem]:
        """Peer messages of a compact node since the last call (recipient, kind, value)."""
        items, self._items = self._items, []
        return items

    def _check_invariant(self) -> None:
        proposed, crossed, kept_set = self._proposed, self._crossed, self.kept
        kept, reserved = len(kept_set), len(proposed)
        if kept + reserved <= self.theta and not proposed and not crossed:
            return  # the common case: within theta (so kept <= theta), no bookkeeping to check
        if kept > self.theta or kept + reserved > self.theta:
            raise LocalProtocolError(
                f"{self.device}: kept {kept} + reserved {reserved} exceeds theta={self.theta}"
            )
        # kept ⊆ neighbours holds by construction: only validated senders are ever kept
        if not self._proposed.isdisjoint(self.kept) or not self._crossed <= self.kept:
            raise LocalProtocolError(f"{self.device}: proposal bookkeeping is inconsistent")

    # ---- local input ----------------------------------------------------------------------

    def start_round(self, r: int, now: float) -> None:
        """Round ``r`` begins (the collector's broadcast): send the edge-add requests."""
        del now
        if not self.round_done:
            raise LocalProtocolError(f"{self.device}: round {self.round} is not finished")
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r <= MAX_STEPS:
            raise LocalProtocolError(f"round must be an integer in [0, {MAX_STEPS}], got {r!r}")
        if self.round is not None and r <= self.round:
            raise LocalProtocolError(f"round {r} does not follow round {self.round}")
        self.round = r
        self._reset_round()
        self._phase = "requesting"
        if len(self.kept) < self.theta:
            self._awaiting = {j for j in self.codes if j not in self.kept}
            self.asked_max = max(self.asked_max, len(self._awaiting))
            for j in sorted(self._awaiting):
                self._out(j, "req")
        if not self._awaiting:
            self._propose()
        self._check_invariant()

    def finish_requests(self, now: float) -> None:
        """Stop waiting for missing answers (they count as not asked) and propose."""
        del now
        if self._phase != "requesting":
            raise LocalProtocolError(f"{self.device}: no requests are pending")
        self._awaiting.clear()
        self._propose()
        self._check_invariant()

    # ---- remote input ---------------------------------------------------------------------

    def receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        """Consume one inbox message; a bad one raises ``RemoteProtocolError`` and changes
        nothing."""
        try:
            if topic.family != "in" or topic.recipient != self.device:
                raise RemoteProtocolError(
                    f"{topic.text!r} is not {self.device}'s inbox", field="topic"
                )
            if topic.run != self.run or message.run != self.run:
                raise RemoteProtocolError(f"run {message.run!r} is not {self.run!r}", field="run")
            if message.sender != topic.sender:
                raise RemoteProtocolError(
                    f"sender {message.sender!r} does not match topic source {topic.sender!r}",
                    field="sender",
                )
            kind = _TYPE_KINDS.get(type(message))
            if kind is None:
                raise RemoteProtocolError(f"unexpected {message.type_name()} message", field="type")
        except RemoteProtocolError:
            self.rejected += 1
            raise
        value = int(getattr(message, "yes", False) or getattr(message, "accepted", False))
        self.receive_item(message.sender, kind, value, message.round, now)

    def receive_item(self, j: str, kind: str, value: int, r: int, now: float) -> None:
        """Consume one peer message whose sender ``j`` the transport vouches for (the
        batching relay, ``protocol.peer_relay``); same checks and effects as ``receive``."""
        del now
        try:
            self._validate(j, kind, value, r)
        except RemoteProtocolError:
            self.rejected += 1
            raise
        if kind == "req":
            self._answered.add(j)
            truth = len(self.kept) + len(self._proposed) < self.theta  # kept + reserved
            self._out(j, "ans", int(bool(self.rr.respond(truth, self._rng))))
        elif kind == "ans":
            self._awaiting.discard(j)
            self._answers[j] = bool(value)
            if not self._awaiting:
                self._propose()
        elif kind == "est":
            self._establish_from.add(j)
            self._on_establish(j)
            self._advance()
        else:  # "conf"
            if j in self._crossed:
                self._crossed.discard(j)  # the edge was kept at conversion time
                self._made += 1
            else:
                self._proposed.discard(j)
                if value:
                    self.kept.add(j)
                    self._made += 1
            self._advance()
        self._check_invariant()

    def _validate(self, j: str, kind: str, value: int, r: int) -> None:
        """Every check of a peer message, before any state change."""
        if j not in self.codes:
            raise RemoteProtocolError(f"{j!r} is not a neighbour of {self.device}", field="sender")
        if kind not in _KIND_TYPES:
            raise RemoteProtocolError(f"unexpected LPEA message kind {kind!r}", field="type")
        if r != self.round:
            raise RemoteProtocolError(
                f"round {r} is not the current round {self.round}", field="round"
            )
        if value not in (0, 1):
            raise RemoteProtocolError(f"{kind} value must be 0 or 1, got {value!r}", field="value")
        if kind == "req":
            if j in self._answered:
                raise RemoteProtocolError(f"second {_tag(kind)} from {j} this round", field="type")
        elif kind == "ans":
            if j not in self._awaiting:
                raise RemoteProtocolError(
                    f"{_tag(kind)} from {j} without a pending request", field="type"
                )
        elif kind == "est":
            if j in self._establish_from:
                raise RemoteProtocolError(f"second {_tag(kind)} from {j} this round", field="type")
        elif j in self._crossed:  # "conf"
            if not value:
                raise RemoteProtocolError(
                    f"{j} refused a crossed proposal it accepted itself", field="accepted"
                )
        elif j not in self._proposed:
            raise RemoteProtocolError(f"{_tag(kind)} from {j} without a proposal", field="type")

    # ---- protocol steps -------------------------------------------------------------------

    def _propose(self) -> None:
        """All answers are in: compute ``s``, order the pool, start walking it."""
        assert self.round is not None
        self._phase = "proposing"
        asked = len(self._answers)
        if asked:
            yes = sum(self._answers.values())
            estimate = float(self.rr.debias_count(yes, asked))
            capacity = self.theta - len(self.kept) - self.reserved
            self._target = min(max(round(estimate), 0), capacity)  # half to even, as rint
        if self._target > 0:
            said_yes = sorted(j for j, said in self._answers.items() if said)
            if len(said_yes) > 1:
                shuffled = [said_yes[i] for i in self._rng.permutation(len(said_yes)).tolist()]
            else:  # ``permutation`` of 0 or 1 items is the identity and draws nothing
                shuffled = said_yes  # (tests/unit/test_A_lpea_short_pool.py)
            sign = 1.0 if self.order == "low" else -1.0
            self._pool = deque(sorted(shuffled, key=lambda j: _code_key(sign * self.codes[j])))
        self._advance()

    def _on_establish(self, j: str) -> None:
        if j in self._proposed:  # crossed: our reservation for j becomes the kept edge
            self._proposed.discard(j)
            self._crossed.add(j)
            self.kept.add(j)
            self._out(j, "conf", 1)
        elif j in self.kept:  # the other half of a crossing (our confirm overtook it)
            self._out(j, "conf", 1)
        else:
            self._decide(j, may_defer=True)

    def _decide(self, j: str, *, may_defer: bool) -> bool:
        """Answer ``j``'s establish if possible; False if it stays deferred."""
        if len(self.kept) + self.reserved < self.theta:
            self.kept.add(j)
            self._out(j, "conf", 1)
        elif len(self.kept) >= self.theta or j > self.device:
            self._out(j, "conf", 0)
        else:  # blocked by our own reservations and j < us: wait for them to resolve
            if may_defer:
                self._deferred.append(j)
            return False
        return True

    def _advance(self) -> None:
        """Answer deferred establishes that can now be decided, walk the pool, finish."""
        for _ in range(len(self._deferred)):
            j = self._deferred.popleft()
            if not self._decide(j, may_defer=False):
                self._deferred.append(j)
        if self._phase != "proposing":
            return
        while (
            self._pool
            and self._made + len(self._proposed) + len(self._crossed) < self._target
            and len(self.kept) + self.reserved < self.theta
        ):
            j = self._pool.popleft()
            if j in self.kept or j in self._establish_from:
                continue  # kept already, or we answered (or defer) its own establish
            self._proposed.add(j)
            self._out(j, "est")
        if not (self._proposed or self._crossed or self._deferred):
            self._phase = "done"
            assert self.round is not None
            self._emit(RoundFinished(self.round, self._made))
