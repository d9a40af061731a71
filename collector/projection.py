"""Non-private graph projections to maximum degree theta (seed 004, CADR-LDP) — theory of operation.

A *projection* turns a graph ``G = (V, E)`` into a subgraph ``G' = (V, E')``, ``E' ⊆ E``,
whose every degree is at most ``theta``. Releasing the projected degree ``dbar_i`` then has
sensitivity ``theta`` under node-LDP. The error a projection causes is ``d_i - dbar_i >= 0``
(edges are only ever lost), so good projections keep as many edges as possible, and keep
them where they matter for the degree sequence.

These are the *centralised, non-private reference implementations*: they see the whole graph
and use true degrees. They exist to reproduce the seed's Table 2 and to be the ground truth
that the private, distributed protocol (NDOE codes + randomized response over the broker) is
compared with. Each is pure and deterministic given the ``numpy.random.Generator`` passed in
(the same generator state gives the same output), and each returns the kept subgraph as a
:class:`devices.graphs.Graph` on the same nodes (``name`` gets a ``|METHOD(theta)`` suffix,
``ids`` is carried over). Kept degrees are ``kept.degrees()``; the kept edge set is
``kept.edge_keys()``.

Hard invariant, everywhere: no kept degree ever exceeds ``theta``. Every method checks it on
its result and raises ``RuntimeError`` if it were ever broken (it cannot be, by construction).

Methods (``theta`` a non-negative integer; ``theta = 0`` keeps nothing)

EDGE-REMOVE, ``ER`` (:func:`edge_remove`)
    Visit the nodes in a uniformly random order. When node ``v``'s *current* degree (after
    the deletions made by the nodes visited before it) exceeds ``theta``, it deletes
    ``current - theta`` of its current incident edges chosen uniformly at random without
    replacement. A deletion also lowers the neighbour's current degree, so a node visited
    later may need to delete fewer edges, or none. Every node ends at ``<= theta`` and
    nodes that were already below it never gain anything back: ER over-deletes.

RANDOM-ADD, ``RA`` (:func:`random_add`, Day, Li & Lyu, SIGMOD 2016)
    Start from the empty graph and visit the edges of ``G`` in a uniformly random order;
    keep edge ``(i, j)`` iff both endpoints currently have kept degree ``< theta``.

LPEA-LOW / LPEA-HIGH, ``LL`` / ``LH`` (:func:`lpea`, seed Alg. 5 without the privacy)
    Local edge addition, negotiated by the nodes. State: the kept edge set, initially empty.
    The procedure runs in *rounds*; a round visits the nodes in a uniformly random order
    (a fresh permutation each round). When node ``i`` is visited and has capacity
    (``kept_i < theta``):

    1. ``U1`` = its neighbours ``j`` with no kept edge to ``i`` yet (the request set);
    2. every ``j`` in ``U1`` answers the edge-add request: ``answers = accept(i, U1, ...)``;
       without privacy ``j`` says yes iff ``kept_j < theta``;
    3. ``s = min(count(answers), theta - kept_i)`` (``count`` = number of yes answers,
       rounded to the nearest integer and floored at 0 if an estimator is injected);
    4. the pool (by default the neighbours that said yes; ``pool="all"``: all of ``U1``) is
       ordered by ``key`` ascending (LL: lowest true degree first) or descending (LH),
       ties broken uniformly at random, and ``i`` walks it establishing edges until it has
       established ``s``. *Establishing re-checks the cap at both endpoints*: an edge
       ``(i, j)`` is added only if ``kept_i < theta`` and ``kept_j < theta`` at that moment
       (a ``j`` at the cap refuses and is skipped).

    Rounds repeat until a round adds no edge (or ``max_rounds``). Without privacy and with
    sequential visits, round 2 never adds anything: after its visit a node either is full
    or every neighbour it does not keep was full (and kept degrees never drop). The rounds
    matter when answers are noisy (randomized response under-counts, or a refusal is
    spurious) — which is why they are here.

    The private protocol replaces two ingredients, which are therefore injectable:
    ``key(i, U1) -> sort keys`` (NDOE codes instead of true degrees) and
    ``accept(i, U1, kept_deg_U1, theta, rng) -> bool answers`` (Warner randomized response
    instead of the truthful test), with ``count(answers) -> float`` (the debiased estimate
    ``c'``) and ``pool="all"`` (choose among all requested neighbours by code).

Metrics (arguments: true and kept degree arrays, or :class:`Graph` objects, same length)

- :func:`degree_sequence_mae` = ``mean_i |d_i - dbar_i|``; :func:`degree_sequence_mse` =
  ``mean_i (d_i - dbar_i)^2``.
- :func:`degree_distribution_mae`: with ``K = max(max d, max dbar)`` and the normalised
  histograms ``P(k) = #{i : d_i = k} / n`` and ``Q(k) = #{i : dbar_i = k} / n`` on the
  *common* support ``k = 0..K`` (zero-count degrees included), the value is
  ``mean_{k=0..K} |P(k) - Q(k)|`` (``reduce="mean"``, the default) or the L1 distance
  ``sum_{k=0..K} |P(k) - Q(k)|`` (``reduce="sum"``, in ``[0, 2]``). The seed's definition
  is garbled; its Facebook numbers (1.27 at theta=16 down to 0.27 at theta=128) are in the
  range of the L1 distance and far above what the mean can be (``<= 2 / (K + 1)``), so the
  seed most likely reports the sum; both are offered. Degrees must be non-negative
  integers (round and clip noisy releases first).
- :func:`kept_edge_ratio` = ``|E'| / |E|``, computed as ``sum(dbar) / sum(d)`` (equal by
  the handshake lemma); 1.0 for an edgeless original.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from ldpfleet.devices.graphs import Graph
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.lpea import checked_theta

__all__ = [
    "METHODS",
    "Accept",
    "Count",
    "DegreeKey",
    "ProjectionScore",
    "degree_distribution_mae",
    "degree_sequence_mae",
    "degree_sequence_mse",
    "edge_remove",
    "evaluate",
    "kept_edge_ratio",
    "lpea",
    "project",
    "random_add",
    "truthful_accept",
]

DegreeKey = Callable[[int, np.ndarray], np.ndarray]
"""``key(i, candidates)``: one numeric sort key per candidate neighbour of requester ``i``."""

Accept = Callable[[int, np.ndarray, np.ndarray, int, np.random.Generator], np.ndarray]
"""``accept(i, candidates, kept_degree_of_candidates, theta, rng)``: one bool answer each."""

Count = Callable[[np.ndarray], float]
"""``count(answers)``: how many candidates requester ``i`` believes will accept."""


# --- helpers -------------------------------------------------------------------------------


def _result(graph: Graph, kept: Sequence[set[int]], theta: int, tag: str) -> Graph:
    deg = np.fromiter((len(s) for s in kept), dtype=np.int64, count=graph.n)
    if deg.size and int(deg.max()) > theta:
        raise RuntimeError(f"{tag}: kept degree {int(deg.max())} exceeds theta={theta}")
    src = np.repeat(np.arange(graph.n, dtype=np.int64), deg)
    dst = np.fromiter((j for s in kept for j in s), dtype=np.int64, count=int(deg.sum()))
    return Graph.from_edges(graph.n, src, dst, name=f"{graph.name}|{tag}({theta})", ids=graph.ids)


# --- EDGE-REMOVE ---------------------------------------------------------------------------


def edge_remove(graph: Graph, theta: int, rng: np.random.Generator) -> Graph:
    """ER: random node order, each over-full node deletes random incident edges down to theta."""
    theta = checked_theta(theta)
    kept = [set(a.tolist()) for a in graph.adjacency]
    for v in rng.permutation(graph.n).tolist():
        excess = len(kept[v]) - theta
        if excess <= 0:
            continue
        current = np.array(sorted(kept[v]), dtype=np.int64)
        for j in rng.choice(current, size=excess, replace=False).tolist():
            kept[v].discard(j)
            kept[j].discard(v)
    return _result(graph, kept, theta, "ER")


# --- RANDOM-ADD ----------------------------------------------------------------------------


def random_add(graph: Graph, theta: int, rng: np.random.Generator) -> Graph:
    """RA: edges in random order, kept iff both endpoints are still below theta."""
    theta = checked_theta(theta)
    edges = graph.edge_array()
    order = rng.permutation(len(edges))
    deg = [0] * graph.n
    kept: list[set[int]] = [set() for _ in range(graph.n)]
    for i, j in edges[order].tolist():
        if deg[i] < theta and deg[j] < theta:
            deg[i] += 1
            deg[j] += 1
            kept[i].add(j)
            kept[j].add(i)
    return _result(graph, kept, theta, "RA")


# --- LPEA ----------------------------------------------------------------------------------


def truthful_accept(
    i: int, candidates: np.ndarray, kept_deg: np.ndarray, theta: int, rng: np.random.Generator
) -> np.ndarray:
    """Non-private answer of each candidate ``j`` to ``i``'s request: yes iff ``kept_j < theta``."""
    del i, candidates, rng
    return kept_deg < theta


def lpea(
    graph: Graph,
    theta: int,
    rng: np.random.Generator,
    order: Literal["low", "high"] = "low",
    *,
    key: DegreeKey | None = None,
    accept: Accept | None = None,
    count: Count | None = None,
    pool: Literal["accepting", "all"] = "accepting",
    max_rounds: int | None = None,
) -> Graph:
    """LPEA-LOW (``order="low"``, LL) or LPEA-HIGH (``order="high"``, LH); see module docstring.

    Defaults are the non-private algorithm: ``key`` = true degree of the candidate,
    ``accept`` = :func:`truthful_accept`, ``count`` = number of yes answers,
    ``pool="accepting"``.
    """
    theta = checked_theta(theta)
    _check_lpea_options(order, pool, max_rounds)
    key = _true_degree_key(graph) if key is None else key
    accept = truthful_accept if accept is None else accept
    sign = 1 if order == "low" else -1

    kept_deg = np.zeros(graph.n, dtype=np.int64)
    kept: list[set[int]] = [set() for _ in range(graph.n)]
    rounds = 0
    while max_rounds is None or rounds < max_rounds:
        rounds += 1
        added = 0
        for i in rng.permutation(graph.n).tolist():
            capacity = theta - int(kept_deg[i])
            if capacity <= 0:
                continue
            asked = _ask_neighbours(graph, i, kept, kept_deg, theta, rng, accept, count)
            if asked is None:
                continue
            u1, answers, c = asked
            s = min(max(int(np.rint(c)), 0), capacity)
            if s == 0:
                continue
            cand = u1[answers] if pool == "accepting" else u1
            if cand.size == 0:
                continue
            ranked = _ranked_candidates(i, cand, rng, key, sign)
            added += _establish(i, ranked, s, kept, kept_deg, theta)
        if added == 0:
            break
    return _result(graph, kept, theta, "LL" if order == "low" else "LH")


def _check_lpea_options(order: str, pool: str, max_rounds: int | None) -> None:
    """Refuse an unknown ``order`` or ``pool`` and a ``max_rounds`` below 1 (``lpea``)."""
    if order not in ("low", "high"):
        raise ParameterError(
            f"must be 'low' or 'high', got {order!r}",
            field="order",
            limit="'low' or 'high'",
            value=order,
        )
    if pool not in ("accepting", "all"):
        raise ParameterError(
            f"must be 'accepting' or 'all', got {pool!r}",
            field="pool",
            limit="'accepting' or 'all'",
            value=pool,
        )
    if max_rounds is not None and max_rounds < 1:
        raise ParameterError(
            f"must be >= 1, got {max_rounds}", field="max_rounds", limit=">= 1", value=max_rounds
        )


def _true_degree_key(graph: Graph) -> DegreeKey:
    """``lpea``'s default ``key``: the candidates' true degrees."""
    true_deg = graph.degrees()

    def key(i: int, candidates: np.ndarray) -> np.ndarray:
        return true_deg[candidates]

    return key


def _ask_neighbours(
    graph: Graph,
    i: int,
    kept: list[set[int]],
    kept_deg: np.ndarray,
    theta: int,
    rng: np.random.Generator,
    accept: Accept,
    count: Count | None,
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Steps 1-3 of node ``i``'s visit: its request set ``U1`` (neighbours with no kept edge
    to it), their answers (``accept``, checked for shape) and the count of yes answers
    (``count``, or their number); None when ``U1`` is empty (nothing asked)."""
    mine = kept[i]
    u1 = np.fromiter((j for j in graph.adjacency[i].tolist() if j not in mine), dtype=np.int64)
    if u1.size == 0:
        return None
    answers = np.asarray(accept(i, u1, kept_deg[u1], theta, rng), dtype=bool)
    if answers.shape != u1.shape:
        raise ParameterError(
            f"accept returned shape {answers.shape}",
            field="accept",
            limit=f"shape {u1.shape} (value: the shape returned)",
            value=answers.shape,
        )
    c = float(answers.sum()) if count is None else float(count(answers))
    return u1, answers, c


def _ranked_candidates(
    i: int, cand: np.ndarray, rng: np.random.Generator, key: DegreeKey, sign: int
) -> np.ndarray:
    """The pool in a uniformly random order, then stably sorted by ``sign * key`` (step 4:
    ascending keys for LL, descending for LH, ties in random order)."""
    shuffle = rng.permutation(cand.size)
    cand = cand[shuffle]
    keys = sign * np.asarray(key(i, cand), dtype=float)
    return cand[np.argsort(keys, kind="stable")]


def _establish(
    i: int, ranked: np.ndarray, s: int, kept: list[set[int]], kept_deg: np.ndarray, theta: int
) -> int:
    """Walk ``ranked`` adding edges ``(i, j)`` until ``s`` are made or ``i`` is full; a
    ``j`` at the cap refuses and is skipped. Returns the number made."""
    mine = kept[i]
    made = 0
    for j in ranked.tolist():
        if made == s or kept_deg[i] >= theta:
            break
        if kept_deg[j] >= theta:  # hard cap at the other endpoint: refuse
            continue
        mine.add(j)
        kept[j].add(i)
        kept_deg[i] += 1
        kept_deg[j] += 1
        made += 1
    return made


# --- dispatch ------------------------------------------------------------------------------


def _lpea_high(graph: Graph, theta: int, rng: np.random.Generator) -> Graph:
    return lpea(graph, theta, rng, order="high")


def _lpea_low(graph: Graph, theta: int, rng: np.random.Generator) -> Graph:
    return lpea(graph, theta, rng, order="low")


METHODS: dict[str, Callable[[Graph, int, np.random.Generator], Graph]] = {
    "ER": edge_remove,
    "RA": random_add,
    "LH": _lpea_high,
    "LL": _lpea_low,
}


def project(graph: Graph, method: str, theta: int, rng: np.random.Generator) -> Graph:
    """Run the projection named ``method`` (one of :data:`METHODS`: ER, RA, LH, LL)."""
    if method not in METHODS:
        raise ParameterError(
            f"unknown method {method!r}; one of {list(METHODS)}",
            field="method",
            limit=f"one of {list(METHODS)}",
            value=method,
        )
    return METHODS[method](graph, theta, rng)


# --- metrics -------------------------------------------------------------------------------


def _pair(true_deg: np.ndarray | Graph, kept_deg: np.ndarray | Graph) -> tuple[np.ndarray, ...]:
    d = true_deg.degrees() if isinstance(true_deg, Graph) else np.asarray(true_deg)
    k = kept_deg.degrees() if isinstance(kept_deg, Graph) else np.asarray(kept_deg)
    if d.ndim != 1 or d.shape != k.shape:
        raise ParameterError(
            f"need equal-length 1-d arrays, got {d.shape}, {k.shape}",
            field="deg",
            limit="equal-length 1-d arrays (value: the two shapes)",
            value=(d.shape, k.shape),
        )
    if d.size == 0:
        raise ParameterError(
            "need at least one node",
            field="deg",
            limit="at least one node (value: the count)",
            value=d.size,
        )
    return d, k


def degree_sequence_mae(true_deg: np.ndarray | Graph, kept_deg: np.ndarray | Graph) -> float:
    """``mean_i |d_i - dbar_i|``."""
    d, k = _pair(true_deg, kept_deg)
    return float(np.mean(np.abs(d.astype(float) - k)))


def degree_sequence_mse(true_deg: np.ndarray | Graph, kept_deg: np.ndarray | Graph) -> float:
    """``mean_i (d_i - dbar_i)^2``."""
    d, k = _pair(true_deg, kept_deg)
    return float(np.mean((d.astype(float) - k) ** 2))


def degree_distribution_mae(
    true_deg: np.ndarray | Graph,
    kept_deg: np.ndarray | Graph,
    *,
    reduce: Literal["mean", "sum"] = "mean",
) -> float:
    """Mean (or sum) over ``k = 0..K`` of ``|P(k) - Q(k)|``, normalised histograms (see top)."""
    d, k = _pair(true_deg, kept_deg)
    for name, a in (("true_deg", d), ("kept_deg", k)):
        if not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(a != np.round(a)):
            raise ParameterError(
                "must be non-negative integers",
                field=name,
                limit="non-negative integers (value: the first bad one)",
                value=float(a[~(np.isfinite(a) & (a >= 0) & (a == np.round(a)))][0]),
            )
    if reduce not in ("mean", "sum"):
        raise ParameterError(
            f"must be 'mean' or 'sum', got {reduce!r}",
            field="reduce",
            limit="'mean' or 'sum'",
            value=reduce,
        )
    d, k = d.astype(np.int64), k.astype(np.int64)
    size = int(max(d.max(), k.max())) + 1
    p = np.bincount(d, minlength=size) / d.size
    q = np.bincount(k, minlength=size) / k.size
    diff = np.abs(p - q)
    return float(diff.mean() if reduce == "mean" else diff.sum())


def kept_edge_ratio(true_deg: np.ndarray | Graph, kept_deg: np.ndarray | Graph) -> float:
    """``|E'| / |E| = sum(dbar) / sum(d)``; 1.0 when the original has no edge."""
    d, k = _pair(true_deg, kept_deg)
    total = float(np.sum(d))
    return 1.0 if total == 0 else float(np.sum(k)) / total


# --- evaluation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectionScore:
    """Metrics of one method at one theta, averaged over ``runs`` seeds."""

    method: str
    theta: int
    runs: int
    seq_mae: float
    seq_mse: float
    dist_mae: float
    dist_l1: float
    kept_ratio: float


def evaluate(graph: Graph, method: str, theta: int, seeds: Sequence[int]) -> ProjectionScore:
    """Average the metrics of ``project(graph, method, theta, default_rng(seed))`` over seeds."""
    if len(seeds) == 0:
        raise ParameterError(
            "need at least one seed", field="seeds", limit="at least one seed", value=seeds
        )
    d = graph.degrees()
    rows = []
    for seed in seeds:
        k = project(graph, method, theta, np.random.default_rng(seed)).degrees()
        rows.append(
            (
                degree_sequence_mae(d, k),
                degree_sequence_mse(d, k),
                degree_distribution_mae(d, k),
                degree_distribution_mae(d, k, reduce="sum"),
                kept_edge_ratio(d, k),
            )
        )
    m = np.mean(np.array(rows), axis=0)
    return ProjectionScore(method, theta, len(seeds), *(float(x) for x in m))
