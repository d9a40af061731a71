"""Tier-1 tests of the LPEA device machine (protocol/lpea.py).

A driver builds one ``LpeaNode`` per node of a small graph, starts every round on every node
(the collector's broadcast), then delivers the pending ``Outbound`` messages between the
nodes — in FIFO order, or in an adversarial order chosen by hypothesis (any pending message
may be delivered next). Every message goes through msgspec JSON and ``topics.parse`` as a
pump would. After every delivery no node may exceed theta (kept + reserved); at quiescence
the kept edges must be symmetric, inside the graph and of degree <= theta.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Union

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Outbound
from ldpfleet.protocol.lpea import (
    LPEA_MESSAGES,
    LpeaAnswer,
    LpeaConfirm,
    LpeaEstablish,
    LpeaNode,
    LpeaRequest,
    RoundFinished,
)
from ldpfleet.protocol.messages import Ack

RUN = "lpea-test"
_decoder = msgspec.json.Decoder(Union[LPEA_MESSAGES])  # noqa: UP007 (runtime union of a tuple)
_encoder = msgspec.json.Encoder()

Picker = Callable[[int], int]


def name(v: int) -> str:
    return f"d{v:02d}"


class Fleet:
    """Nodes of one graph plus the in-flight messages between them."""

    def __init__(
        self,
        n: int,
        edges: set[tuple[int, int]],
        theta: int,
        eps: float,
        codes: list[int],
        seed: int,
        order: str = "low",
    ) -> None:
        self.n, self.theta = n, theta
        self.edges = {(min(a, b), max(a, b)) for a, b in edges if a != b}
        adj: dict[int, set[int]] = {v: set() for v in range(n)}
        for a, b in self.edges:
            adj[a].add(b)
            adj[b].add(a)
        self.adj = adj
        seeds = np.random.SeedSequence(seed).spawn(n)
        self.nodes = {
            name(v): LpeaNode(
                RUN,
                name(v),
                {name(u): codes[u] for u in sorted(adj[v])},
                theta,
                eps,
                np.random.default_rng(seeds[v]),
                order,  # type: ignore[arg-type]
            )
            for v in range(n)
        }
        self.pending: list[Outbound] = []
        self.trace: list[tuple[str, bytes]] = []
        self.finished: dict[str, list[RoundFinished]] = {d: [] for d in self.nodes}

    def collect(self) -> None:
        for device, node in self.nodes.items():
            self.pending.extend(node.pop_outbound())
            for event in node.pop_events():
                assert isinstance(event, RoundFinished)
                self.finished[device].append(event)

    def check_caps(self) -> None:
        for node in self.nodes.values():
            assert len(node.kept) + node.reserved <= self.theta
            assert len(node.kept) <= self.theta

    def deliver(self, index: int) -> None:
        out = self.pending.pop(index)
        payload = _encoder.encode(out.message)
        self.trace.append((out.topic, payload))
        topic = topics.parse(out.topic)
        assert topic.recipient is not None
        self.nodes[topic.recipient].receive(topic, _decoder.decode(payload), 0.0)
        self.collect()
        self.check_caps()

    def run_round(self, r: int, pick: Picker) -> int:
        """Start round ``r`` everywhere, deliver until quiescent; the fleet's ``added``."""
        for node in self.nodes.values():
            node.start_round(r, 0.0)
        self.collect()
        self.check_caps()
        steps = 0
        while self.pending:
            self.deliver(pick(len(self.pending)))
            steps += 1
            assert steps < 10_000
        assert all(node.round_done for node in self.nodes.values())
        added = 0
        for events in self.finished.values():
            mine = [e for e in events if e.round == r]
            assert len(mine) == 1
            added += mine[0].added
        self.check_quiescent()
        return added

    def kept_edges(self) -> set[tuple[int, int]]:
        index = {name(v): v for v in range(self.n)}
        return {
            (min(index[d], index[k]), max(index[d], index[k]))
            for d, node in self.nodes.items()
            for k in node.kept
        }

    def check_quiescent(self) -> None:
        for d, node in self.nodes.items():
            for k in node.kept:
                assert d in self.nodes[k].kept, f"{d} keeps {k} but not the reverse"
            assert len(node.kept) <= self.theta
            assert node.reserved == 0
        assert self.kept_edges() <= self.edges

    def is_maximal(self) -> bool:
        deg = {v: len(self.nodes[name(v)].kept) for v in range(self.n)}
        kept = self.kept_edges()
        return not any(
            deg[a] < self.theta and deg[b] < self.theta and (a, b) not in kept
            for a, b in self.edges
        )


def fifo(_: int) -> int:
    return 0


def run_until_stable(fleet: Fleet, pick: Picker, max_rounds: int = 100) -> int:
    for r in range(max_rounds):
        if fleet.run_round(r, pick) == 0:
            return r + 1
    raise AssertionError("no fixed point")


@st.composite
def graphs(draw: st.DrawFn, max_n: int = 7) -> tuple[int, set[tuple[int, int]]]:
    n = draw(st.integers(2, max_n))
    pairs = list(itertools.combinations(range(n), 2))
    mask = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    return n, {p for p, keep in zip(pairs, mask, strict=True) if keep}


def true_degrees(n: int, edges: set[tuple[int, int]]) -> list[int]:
    deg = [0] * n
    for a, b in edges:
        deg[a] += 1
        deg[b] += 1
    return deg


# --- (a) FIFO --------------------------------------------------------------------------------


def test_fifo_triangle_theta_one_is_maximal() -> None:
    fleet = Fleet(3, {(0, 1), (1, 2), (0, 2)}, 1, 50.0, [2, 2, 2], seed=3)
    rounds = run_until_stable(fleet, fifo)
    assert len(fleet.kept_edges()) == 1
    assert fleet.is_maximal()
    assert rounds <= 2


@pytest.mark.parametrize("order", ["low", "high"])
@pytest.mark.parametrize("seed", range(5))
def test_fifo_private_runs_respect_the_cap(seed: int, order: str) -> None:
    rng = np.random.default_rng(seed)
    n = 12
    edges = {(a, b) for a, b in itertools.combinations(range(n), 2) if rng.random() < 0.4}
    codes = rng.integers(0, 5, n).tolist()
    fleet = Fleet(n, edges, 3, 0.5, codes, seed=seed, order=order)
    for r in range(4):
        fleet.run_round(r, fifo)
    assert all(len(node.kept) <= 3 for node in fleet.nodes.values())


def test_theta_zero_keeps_nothing_and_sends_nothing() -> None:
    fleet = Fleet(3, {(0, 1), (1, 2)}, 0, 1.0, [0, 0, 0], seed=1)
    assert fleet.run_round(0, fifo) == 0
    assert fleet.trace == []
    assert fleet.kept_edges() == set()


# --- (b) adversarial orderings ------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    graph=graphs(),
    theta=st.integers(0, 4),
    eps=st.sampled_from([0.1, 0.5, 1.0, 3.0, 50.0]),
    code_seed=st.integers(0, 2**32 - 1),
    seed=st.integers(0, 2**32 - 1),
    order=st.sampled_from(["low", "high"]),
    rounds=st.integers(1, 3),
    data=st.data(),
)
def test_adversarial_delivery_orders_keep_the_invariants(
    graph: tuple[int, set[tuple[int, int]]],
    theta: int,
    eps: float,
    code_seed: int,
    seed: int,
    order: str,
    rounds: int,
    data: st.DataObject,
) -> None:
    n, edges = graph
    codes = np.random.default_rng(code_seed).integers(0, 4, n).tolist()
    fleet = Fleet(n, edges, theta, eps, codes, seed=seed, order=order)

    def pick(k: int) -> int:
        return data.draw(st.integers(0, k - 1), label="deliver")

    for r in range(rounds):
        fleet.run_round(r, pick)  # caps checked after every delivery, symmetry at the end


@settings(max_examples=150, deadline=None)
@given(graph=graphs(), theta=st.integers(1, 3), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_adversarial_finish_requests_with_lost_answers(
    graph: tuple[int, set[tuple[int, int]]], theta: int, seed: int, data: st.DataObject
) -> None:
    """Some answers are dropped; the node gives up on them; the invariants still hold."""
    n, edges = graph
    fleet = Fleet(n, edges, theta, 1.0, true_degrees(n, edges), seed=seed)
    for node in fleet.nodes.values():
        node.start_round(0, 0.0)
    fleet.collect()
    while fleet.pending or not all(node.round_done for node in fleet.nodes.values()):
        if not fleet.pending:
            for node in fleet.nodes.values():
                if not node.round_done:
                    node.finish_requests(0.0)  # only answers can be missing
            fleet.collect()
            continue
        index = data.draw(st.integers(0, len(fleet.pending) - 1), label="deliver")
        if isinstance(fleet.pending[index].message, LpeaAnswer) and data.draw(
            st.booleans(), label="drop"
        ):
            fleet.pending.pop(index)
            continue
        fleet.deliver(index)
    fleet.check_quiescent()


# --- (c) non-private limit ---------------------------------------------------------------


def test_eps_50_answers_are_truthful() -> None:
    node = LpeaNode(RUN, "a", {"b": 1}, 1, 50.0, np.random.default_rng(0))
    assert node.rr.p == 1.0


@settings(max_examples=150, deadline=None)
@given(
    graph=graphs(max_n=8),
    theta=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    order=st.sampled_from(["low", "high"]),
    adversarial=st.booleans(),
    data=st.data(),
)
def test_non_private_limit_reaches_a_maximal_projection(
    graph: tuple[int, set[tuple[int, int]]],
    theta: int,
    seed: int,
    order: str,
    adversarial: bool,
    data: st.DataObject,
) -> None:
    n, edges = graph
    fleet = Fleet(n, edges, theta, 50.0, true_degrees(n, edges), seed=seed, order=order)

    def pick(k: int) -> int:
        return data.draw(st.integers(0, k - 1), label="deliver") if adversarial else 0

    rounds = run_until_stable(fleet, pick, max_rounds=len(edges) + 2)
    assert fleet.is_maximal()
    assert rounds <= len(edges) + 1


def test_non_private_limit_on_a_larger_random_graph() -> None:
    rng = np.random.default_rng(11)
    n = 30
    edges = {(a, b) for a, b in itertools.combinations(range(n), 2) if rng.random() < 0.25}
    fleet = Fleet(n, edges, 4, 50.0, true_degrees(n, edges), seed=5)
    run_until_stable(fleet, fifo)
    assert fleet.is_maximal()
    assert max(len(node.kept) for node in fleet.nodes.values()) <= 4


# --- (d) validation ----------------------------------------------------------------------


def snapshot(node: LpeaNode) -> tuple[dict, dict]:
    state = {k: copy.deepcopy(v) for k, v in vars(node).items() if k not in ("_rng", "rejected")}
    return state, copy.deepcopy(node._rng.bit_generator.state)


def inbox_topic(dst: str, src: str) -> topics.Topic:
    return topics.parse(topics.inbox(RUN, dst, src))


@pytest.fixture
def pair() -> tuple[LpeaNode, LpeaNode]:
    a = LpeaNode(RUN, "a", {"b": 1}, 1, 1.0, np.random.default_rng(0))
    b = LpeaNode(RUN, "b", {"a": 1}, 1, 1.0, np.random.default_rng(1))
    a.start_round(0, 0.0)
    b.start_round(0, 0.0)
    return a, b


@pytest.mark.parametrize(
    ("topic_args", "message", "field"),
    [
        (("a", "x"), LpeaRequest(run=RUN, sender="x", round=0), "sender"),
        (("a", "b"), LpeaRequest(run=RUN, sender="x", round=0), "sender"),
        (("a", "x"), LpeaEstablish(run=RUN, sender="x", round=0), "sender"),
        (("c", "b"), LpeaRequest(run=RUN, sender="b", round=0), "topic"),
        (("a", "b"), LpeaRequest(run="other", sender="b", round=0), "run"),
        (("a", "b"), LpeaRequest(run=RUN, sender="b", round=1), "round"),
        (("a", "b"), LpeaConfirm(run=RUN, sender="b", round=0, accepted=True), "type"),
        (("a", "b"), Ack(run=RUN, sender="b"), "type"),
    ],
)
def test_bad_messages_are_refused_without_state_change(
    pair: tuple[LpeaNode, LpeaNode], topic_args: tuple[str, str], message, field: str
) -> None:
    a, _ = pair
    a.pop_outbound()
    before = snapshot(a)
    with pytest.raises(RemoteProtocolError) as info:
        a.receive(inbox_topic(*topic_args), message, 0.0)
    assert info.value.field == field
    assert snapshot(a) == before
    assert a.pop_outbound() == []
    assert a.rejected == 1


def test_answer_without_request_and_duplicates_are_refused(
    pair: tuple[LpeaNode, LpeaNode],
) -> None:
    a, b = pair
    a.pop_outbound()
    answer = LpeaAnswer(run=RUN, sender="b", round=0, yes=True)
    a.receive(inbox_topic("a", "b"), answer, 0.0)  # the one pending answer
    before = snapshot(a)
    with pytest.raises(RemoteProtocolError, match="without a pending request"):
        a.receive(inbox_topic("a", "b"), answer, 0.0)
    assert snapshot(a) == before
    request = LpeaRequest(run=RUN, sender="a", round=0)
    b.receive(inbox_topic("b", "a"), request, 0.0)
    with pytest.raises(RemoteProtocolError, match="second"):
        b.receive(inbox_topic("b", "a"), request, 0.0)


def test_messages_before_the_first_round_are_refused() -> None:
    a = LpeaNode(RUN, "a", {"b": 1}, 1, 1.0, np.random.default_rng(0))
    with pytest.raises(RemoteProtocolError) as info:
        a.receive(inbox_topic("a", "b"), LpeaRequest(run=RUN, sender="b", round=0), 0.0)
    assert info.value.field == "round"


def test_crossed_proposal_refusal_is_refused() -> None:
    a = LpeaNode(RUN, "a", {"b": 1}, 1, 50.0, np.random.default_rng(0))
    a.start_round(0, 0.0)
    a.receive(inbox_topic("a", "b"), LpeaAnswer(run=RUN, sender="b", round=0, yes=True), 0.0)
    assert a.reserved == 1
    a.receive(inbox_topic("a", "b"), LpeaEstablish(run=RUN, sender="b", round=0), 0.0)
    assert a.kept == {"b"} and a.reserved == 0 and not a.round_done
    before = snapshot(a)
    refusal = LpeaConfirm(run=RUN, sender="b", round=0, accepted=False)
    with pytest.raises(RemoteProtocolError) as info:
        a.receive(inbox_topic("a", "b"), refusal, 0.0)
    assert info.value.field == "accepted"
    assert snapshot(a) == before
    a.receive(inbox_topic("a", "b"), LpeaConfirm(run=RUN, sender="b", round=0, accepted=True), 0)
    assert a.kept == {"b"} and a.round_done
    assert [e for e in a.pop_events() if isinstance(e, RoundFinished)] == [RoundFinished(0, 1)]


@pytest.mark.parametrize("confirm_first", [False, True])
def test_crossed_proposals_keep_the_edge_once(confirm_first: bool) -> None:
    """Both nodes propose to each other; either interleaving keeps the edge exactly once."""
    fleet = Fleet(2, {(0, 1)}, 1, 50.0, [1, 1], seed=0)
    for node in fleet.nodes.values():
        node.start_round(0, 0.0)
    fleet.collect()
    while not all(isinstance(o.message, LpeaEstablish) for o in fleet.pending):
        fleet.deliver(next(i for i, o in enumerate(fleet.pending) if o.message.round == 0))
    assert len(fleet.pending) == 2  # both establishes in flight
    fleet.deliver(0)  # one side converts its reservation and confirms
    if confirm_first:
        fleet.deliver(len(fleet.pending) - 1)  # that confirm overtakes the other establish
    while fleet.pending:
        fleet.deliver(0)
    fleet.check_quiescent()
    assert fleet.kept_edges() == {(0, 1)}
    assert all(node.round_done for node in fleet.nodes.values())


def test_local_misuse() -> None:
    a = LpeaNode(RUN, "a", {"b": 1}, 1, 1.0, np.random.default_rng(0))
    with pytest.raises(LocalProtocolError):
        a.finish_requests(0.0)
    a.start_round(0, 0.0)
    with pytest.raises(LocalProtocolError):
        a.start_round(1, 0.0)  # round 0 not finished
    a.finish_requests(0.0)
    assert a.round_done
    with pytest.raises(LocalProtocolError):
        a.start_round(0, 0.0)  # rounds only move forward


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"theta": -1}, "theta"),
        ({"theta": True}, "theta"),
        ({"order": "mid"}, "order"),
        ({"eps": 0.0}, "eps"),
        ({"eps": 51.0}, "eps"),
        ({"codes": {"a": 1}}, "codes"),
        ({"codes": {"b/c": 1}}, "codes"),
    ],
)
def test_bad_parameters(kwargs: dict, field: str) -> None:
    args = {"codes": {"b": 1}, "theta": 1, "eps": 1.0, "order": "low"} | kwargs
    with pytest.raises(ParameterError) as info:
        LpeaNode(RUN, "a", rng=np.random.default_rng(0), **args)
    assert info.value.field == field


def test_message_round_trip_and_tags() -> None:
    messages = [
        LpeaRequest(run=RUN, sender="a", round=3),
        LpeaAnswer(run=RUN, sender="a", round=3, yes=False),
        LpeaEstablish(run=RUN, sender="a", round=3),
        LpeaConfirm(run=RUN, sender="a", round=3, accepted=True),
    ]
    for message in messages:
        assert message.type_name().startswith("lpea_")
        assert _decoder.decode(_encoder.encode(message)) == message
    with pytest.raises(msgspec.ValidationError):
        _decoder.decode(b'{"type":"lpea_request","run":"r","sender":"a","round":-1}')


# --- (e) determinism -----------------------------------------------------------------------


def _run(seed: int) -> tuple[set[tuple[int, int]], list[tuple[str, bytes]]]:
    rng = np.random.default_rng(99)
    n = 10
    edges = {(a, b) for a, b in itertools.combinations(range(n), 2) if rng.random() < 0.5}
    fleet = Fleet(n, edges, 3, 1.0, rng.integers(0, 4, n).tolist(), seed=seed)
    order = np.random.default_rng(seed + 1)
    for r in range(3):
        fleet.run_round(r, lambda k: int(order.integers(k)))
    return fleet.kept_edges(), fleet.trace


def test_same_seeds_same_run() -> None:
    assert _run(7) == _run(7)
    kept, trace = _run(7)
    assert trace  # the run did something
    assert kept


def test_cycle_of_proposals_is_resolved_by_deferral() -> None:
    """theta=1 triangle where a->b, b->c, c->a are proposed at once: b defers a (a < b), c
    defers b, a refuses c at once (c > a: busy); c's reservation is freed, it accepts b, b
    then refuses a; a does not propose to c (it answered c's establish this round, and c is
    full anyway). One edge, and it is maximal."""
    codes = {"a": {"b": 0, "c": 1}, "b": {"c": 0, "a": 1}, "c": {"a": 0, "b": 1}}
    nodes = {
        d: LpeaNode(RUN, d, codes[d], 1, 50.0, np.random.default_rng(i))
        for i, d in enumerate("abc")
    }
    pending: list[Outbound] = []

    def pump() -> None:
        for node in nodes.values():
            pending.extend(node.pop_outbound())

    def deliver(kind: type, src: str, dst: str) -> None:
        index = next(
            i
            for i, o in enumerate(pending)
            if isinstance(o.message, kind)
            and o.message.sender == src
            and o.topic == topics.inbox(RUN, dst, src)
        )
        out = pending.pop(index)
        nodes[dst].receive(topics.parse(out.topic), out.message, 0.0)
        pump()

    for node in nodes.values():
        node.start_round(0, 0.0)
    pump()
    for src, dst in itertools.permutations("abc", 2):
        deliver(LpeaRequest, src, dst)
    for src, dst in itertools.permutations("abc", 2):
        deliver(LpeaAnswer, src, dst)
    assert {(o.message.sender, topics.parse(o.topic).recipient) for o in pending} == {
        ("a", "b"),
        ("b", "c"),
        ("c", "a"),
    }
    assert all(node.reserved == 1 for node in nodes.values())
    deliver(LpeaEstablish, "a", "b")
    deliver(LpeaEstablish, "b", "c")
    assert [type(o.message) for o in pending] == [LpeaEstablish]  # both deferred
    deliver(LpeaEstablish, "c", "a")  # a refuses at once
    deliver(LpeaConfirm, "a", "c")  # c released: accepts b, confirms
    assert nodes["c"].kept == {"b"}
    deliver(LpeaConfirm, "c", "b")  # b keeps c, now full: refuses a
    deliver(LpeaConfirm, "b", "a")  # a skips c: it refused c's own establish this round
    assert not pending
    assert [n.kept for n in nodes.values()] == [set(), {"c"}, {"b"}]
    assert all(n.round_done and n.reserved == 0 for n in nodes.values())
