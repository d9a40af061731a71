"""Graph canaries for the CADR-LDP degree release (seed 001, Section 5.1, constructions
A-D adapted to node-LDP) — theory of operation.

What is audited. The collector's view of one CADR-LDP run with a GIVEN theta (no theta
search, so no secure sums): the noisy degree every node releases in DSR, as published on
``rel/degrees``. (The relay's phase counts the collector also learns are disclosed by
design and not DP, ``docs/cadr.md``; they are left out.)

How a run is made (``cadr_release``). Every node's private input is its OWN adjacency
list, and the lists need not be symmetric: that is what the formal node-LDP model needs
(one node's list changes, every other node's list stays as it was). The fleet's
``CadrDevice`` cannot take such an input (a device that receives an NDOE code from a node
it does not list refuses the whole delivery, and a device missing a listed neighbour's code
stops), and ``collector.cadr_reference.private_run`` takes a symmetric ``Graph`` only. So
the run is driven here, on the real pieces, exactly as ``CadrDevice`` uses them:

1. NDOE: each node samples its code with ``ExponentialMechanism(alpha eps / 2, D)`` over
   ``ndoe_scores(len(own list), ndoe_partitions(0, D, parts))`` and sends it to every node
   it lists; a recipient keeps a code only from a node IT lists (``CadrDevice._take_codes``
   refuses the others). A listed neighbour that sent no code gets the placeholder code 0:
   such a neighbour never answers the LPEA request (below), so it never enters the pool
   and its code orders nothing.
2. LPEA: one ``protocol.lpea.LpeaNode`` per node (compact mode, Warner RR at alpha eps / 2,
   order ``low`` = LPEA-LOW), with a lock-step delivery loop like ``protocol.peer_relay``:
   each superstep collects every node's items (node order, then emission order) and
   delivers them to the recipients in sender order. A recipient refuses an item from a
   node it does not list (``RemoteProtocolError``, no state change — the machine's own
   validation). A request that is never answered is given up by the machine's own
   ``finish_requests`` when the step loop is quiet (it then counts as not asked). Rounds
   run until one adds no edge (the collector's stopping rule).
3. DSR: every node releases ``protocol.dsr.dsr_release(kept, theta, (1 - alpha) eps)``.

All randomness comes from the one generator of the trial, drawn in a fixed order.

The neighbouring pair (node-LDP, the CADR-LDP claim). The centre ``v``'s list is all its
star leaves in D and EMPTY in D'; every other node's list is identical in both worlds (the
leaves still list ``v``). The whole view is a function of the inputs, of which exactly one
differs. ``node_pair_differs_in_one_list`` checks this for every canary.

Claims. CADR-LDP claims eps, the node's total budget (NDOE alpha eps / 2 + LPEA alpha eps /
2 + DSR (1 - alpha) eps). This audit REFUTES that claim for the whole view
(docs/audit-graph.md): LPEA's establish/confirm is a hard cap, not randomised, so a leaf
can keep its edge with ``v`` only when ``v`` lists it, and the leaves' own DSR releases
therefore depend on ``v``'s list too. For a star whose leaves have no other edge the view's
loss is at most (1 - alpha) eps (v's release, kept degree <= theta) plus (1 - alpha) eps /
theta per leaf whose kept degree moves by 1 (<= theta of them): 2 (1 - alpha) eps (the
kept-degree vectors of D and D' are at L1 distance <= 2 theta over their supports). The
star with k = theta = 1 (``GRAPH_FINDINGS["degree-star-tight"]``) certifies eps_LB > eps
at every budget. So the battery entries audit the node-LDP pairs against 2 eps (``"two
lists"``: each edge sits in two lists, the factor of relationship DP): proven for the
star (A); for B-D (leaf-leaf and background edges, where a change at ``v`` can cascade
through the projection) it is the conjectured analogue, not a theorem. ``GRAPH_FINDINGS``
also holds A and B against eps itself (not in the battery: they alarm, correctly).

The group canary (``degree-star-group``): the symmetric change of central node-DP — the
leaves also drop ``v`` in D' — changes k + 1 inputs; its honest claim is (k + 1) eps.

Constructions (seed 001, adapted): A ``star`` (star vs isolated centre); B ``star-edge``
(star plus an edge between two leaves); C ``er`` (B's extra edge is shared with an
Erdos-Renyi background graph, scaled down to ``ER_N`` nodes at ``ER_P``); D ``connected``
(a hub ``w`` adjacent to ``v`` and every leaf, and — as in the seed's D — ``(w, v)`` shared
with an ER background; ``v`` keeps ``w`` in D', so the graph stays connected).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from ldpfleet.collector.audit.core import Canary, Witness
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError

__all__ = [
    "GRAPH_BATTERY",
    "GRAPH_FINDINGS",
    "GraphCanary",
    "cadr_release",
    "clip_audit_canary",
    "clip_release",
    "construction",
    "graph_audit_canary",
    "graph_witnesses",
    "node_pair_differs_in_one_list",
]

Lists = tuple[tuple[int, ...], ...]

ALPHA = 0.1  # the seed's Fig. 6 split (protocol.cadr_budget.ALPHA_DEFAULT)
NDOE_PARTS = 16  # as collector.cadr_reference
THETA = 4  # given, not searched
STAR_LEAVES = 8  # k: the seed uses 999; scaled down for runtime (v's release clips at theta)
ER_N = 20  # the seed's background is n = 1000, p = 0.025; scaled down for runtime
ER_P = 0.2
ER_SEED = 1  # the background graph is a fixed, public part of the canary
RUN = "audit"


def _ids(n: int) -> list[str]:
    width = max(4, len(str(n)))
    return [f"n{i:0{width}d}" for i in range(n)]  # string order = numeric order


def cadr_release(
    lists: Lists,
    theta: int,
    eps: float,
    rng: np.random.Generator,
    *,
    alpha: float = ALPHA,
    degree_bound: int | None = None,
    order: str = "low",
    ndoe_cache: dict[tuple[int, int], np.ndarray] | None = None,
) -> np.ndarray:
    """One CADR-LDP run on (possibly asymmetric) adjacency lists (module docstring):
    the released noisy degree of every node, in node order. ``ndoe_cache`` (optional, a
    dict the caller keeps across runs) holds the NDOE score vector of each (degree,
    degree bound), so the runs of one canary compute each once (the same vectors, the
    same draws)."""
    import ldpfleet.protocol.dsr as dsr
    from ldpfleet.protocol.exponential import ndoe_scores

    budget, bound, parts, mechanism = _ndoe_setup(lists, eps, alpha, degree_bound)
    # 1. NDOE: own degree -> code; kept by a recipient only from a node it lists
    scores = {} if ndoe_cache is None else ndoe_cache
    sent = np.empty(len(lists), dtype=np.int64)
    for i, own in enumerate(lists):
        d = len(own)
        if (d, bound) not in scores:
            scores[d, bound] = ndoe_scores(d, parts)
        sent[i] = mechanism.sample(scores[d, bound], rng)
    nodes, ids, index = _lpea_nodes(lists, sent, theta, budget.lpea, order, lambda i: rng)
    # 2. LPEA rounds in lock-step supersteps
    _lpea_rounds(nodes, ids, index)
    kept = np.array([len(node.kept) for node in nodes], dtype=np.int64)
    # 3. DSR
    return np.asarray(dsr.dsr_release(kept, theta, budget.dsr, rng), dtype=float)


def _ndoe_setup(lists: Lists, eps: float, alpha: float, degree_bound: int | None):
    """The run's budget split, degree bound, NDOE partitions and exponential mechanism."""
    from ldpfleet.protocol.cadr_budget import CadrBudget
    from ldpfleet.protocol.exponential import ExponentialMechanism, ndoe_partitions

    budget = CadrBudget(eps, alpha)
    bound = degree_bound if degree_bound is not None else max(1, *(len(a) for a in lists))
    parts = ndoe_partitions(0, bound, min(NDOE_PARTS, bound + 1))
    return budget, bound, parts, ExponentialMechanism(budget.ndoe, bound)


def _lpea_nodes(
    lists: Lists,
    sent: Sequence[int],
    theta: int,
    eps_lpea: float,
    order: str,
    rng_of: Callable[[int], np.random.Generator],
) -> tuple[list, list[str], dict[str, int]]:
    """One ``LpeaNode`` per list (node ``i``'s generator ``rng_of(i)``), holding the NDOE
    codes ``sent`` of the neighbours that list it (0 for one that does not), with the
    node ids and their index."""
    from ldpfleet.protocol.lpea import LpeaNode

    listed = [set(a) for a in lists]
    ids = _ids(len(lists))
    index = {name: i for i, name in enumerate(ids)}
    nodes = []
    for i, own in enumerate(lists):
        codes = {ids[j]: int(sent[j]) if i in listed[j] else 0 for j in own}
        nodes.append(LpeaNode(RUN, ids[i], codes, theta, eps_lpea, rng_of(i), order, compact=True))
    return nodes, ids, index


# ``rekey(i, r, peer, kind)``: called before every call into node i in round r (``kind``
# "start", "req", "ans", "est", "conf" with the sender's index as ``peer``, -1 for an
# answer and for giving up); None: the nodes keep their own generators
Rekey = Callable[[int, int, int, str], None] | None


def _lpea_rounds(nodes: list, ids: list[str], index: dict[str, int], rekey: Rekey = None) -> None:
    """LPEA rounds 0, 1, ... in lock-step supersteps until a round adds no edge (the
    collector's stopping rule)."""
    r = 0
    while True:
        for i, node in enumerate(nodes):
            if rekey is not None:
                rekey(i, r, -1, "start")
            node.start_round(r, 0.0)
        if _lpea_round(nodes, ids, index, r, rekey) == 0:
            return
        r += 1


def _lpea_round(
    nodes: list, ids: list[str], index: dict[str, int], r: int, rekey: Rekey = None
) -> int:
    """One round's supersteps; returns the edges it added. Each superstep collects the
    items of the nodes in node order (then emission order) and delivers them to the
    recipients in recipient order, each recipient's in sender order. Only a node that was
    called since its last collection (started the round, received an item, gave up its
    requests) can hold items or events: the others are skipped, which changes nothing
    (their queues are empty), so the run is the same as collecting from every node."""
    from ldpfleet.protocol.lpea import RoundFinished

    added = 0
    touched: list[int] = list(range(len(nodes)))  # every node started the round
    while True:
        by_dst: dict[int, list[tuple[str, str, int]]] = {}
        for i in touched:
            node = nodes[i]
            for event in node.pop_events():
                if isinstance(event, RoundFinished):
                    added += event.added
            items = node.pop_items()
            if not items:
                continue
            sender = ids[i]
            for item in items:
                dst = index[item.peer]
                inbox = by_dst.get(dst)
                if inbox is None:
                    by_dst[dst] = inbox = []
                inbox.append((sender, item.kind, item.value))
        if by_dst:
            touched = sorted(by_dst)
            for dst in touched:
                if rekey is None:
                    _deliver_plain(nodes[dst], by_dst[dst], r)
                else:
                    _deliver(nodes[dst], by_dst[dst], r, _rekey_for(rekey, dst, r, index))
            continue
        touched = [i for i, node in enumerate(nodes) if node._phase == "requesting"]
        if not touched:
            break
        for i in touched:  # answers that never come: give up, count as not asked
            if rekey is not None:
                rekey(i, r, -1, "ans")  # the same key as a last answer
            nodes[i].finish_requests(0.0)
    if any(not node.round_done for node in nodes):
        raise RuntimeError("LPEA round did not finish")  # cannot happen: quiet, no stuck
    return added


def _rekey_for(rekey: Rekey, dst: int, r: int, index: dict[str, int]):
    """``before(sender, kind)`` for ``_deliver`` to node ``dst``: ``rekey`` with the sender's
    index (-1 for an answer); None without ``rekey``."""
    if rekey is None:
        return None
    return lambda sender, kind: rekey(dst, r, -1 if kind == "ans" else index[sender], kind)


def _deliver_plain(node, items: list[tuple[str, str, int]], r: int) -> None:
    """``_deliver`` without ``before`` (the audit's runs): the same calls in the same order."""
    receive = node.receive_item
    for sender, kind, value in items:
        try:
            receive(sender, kind, value, r, 0.0)
        except RemoteProtocolError:
            continue  # refused: the sender is not in the recipient's list


def _deliver(
    node, items: list[tuple[str, str, int]], r: int, before: Callable | None = None
) -> None:
    """A recipient's items of one superstep, in sender order; an item from a node it does
    not list is refused by the machine (``RemoteProtocolError``, no state change).
    ``before(sender, kind)``, if given, is called before each item is received."""
    for sender, kind, value in items:
        if before is not None:
            before(sender, kind)
        try:
            node.receive_item(sender, kind, value, r, 0.0)
        except RemoteProtocolError:
            continue  # refused: the sender is not in the recipient's list


# ---- canary constructions ---------------------------------------------------------------


def _lists(n: int, edges: Sequence[tuple[int, int]]) -> list[set[int]]:
    out: list[set[int]] = [set() for _ in range(n)]
    for a, b in edges:
        if a != b:
            out[a].add(b)
            out[b].add(a)
    return out


def _freeze(lists: list[set[int]]) -> Lists:
    return tuple(tuple(sorted(a)) for a in lists)


def _er_edges(nodes: Sequence[int], p: float, seed: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    nodes = list(nodes)
    edges = []
    for x in range(len(nodes)):
        hits = np.flatnonzero(rng.random(len(nodes) - x - 1) < p)
        edges.extend((nodes[x], nodes[x + 1 + h]) for h in hits.tolist())
    return edges


@dataclass(frozen=True)
class GraphCanary:
    """A node-LDP neighbouring pair: adjacency lists in D and D', the centre ``v``, its
    star leaves, and what differs."""

    name: str
    lists_d: Lists
    lists_dprime: Lists
    centre: int
    leaves: tuple[int, ...]
    description: str

    @property
    def n(self) -> int:
        return len(self.lists_d)

    def changed(self) -> list[int]:
        """Nodes whose own list differs between the worlds."""
        pairs = zip(self.lists_d, self.lists_dprime, strict=True)
        return [i for i, (a, b) in enumerate(pairs) if a != b]


def construction(kind: str, *, leaves: int = STAR_LEAVES, symmetric: bool = False) -> GraphCanary:
    """Construction ``star`` (A), ``star-edge`` (B), ``er`` (C) or ``connected`` (D); node 0
    is the centre ``v``, nodes 1..k its leaves. ``symmetric`` makes D' the central node-DP
    neighbour (the leaves drop ``v`` too: k + 1 lists change)."""
    k = leaves
    v, star = 0, list(range(1, k + 1))
    edges = [(v, leaf) for leaf in star]
    n = k + 1
    kept_in_dprime: set[int] = set()
    if kind == "star":
        text = f"star of {k} leaves vs isolated centre"
    elif kind == "star-edge":
        edges.append((1, 2))
        text = f"star of {k} leaves + leaf edge (1, 2) vs isolated centre"
    elif kind == "er":
        background = [1, 2, *range(n, n + ER_N - 2)]  # the ER graph shares nodes 1, 2
        n += ER_N - 2
        edges += _er_edges(background, ER_P, ER_SEED)
        edges.append((1, 2))
        text = f"star of {k} leaves sharing edge (1, 2) with ER(n={ER_N}, p={ER_P}) vs isolated"
    elif kind == "connected":
        w = n
        n += 1
        edges += [(w, leaf) for leaf in star] + [(w, v)]
        background = [v, w, *range(n, n + ER_N - 2)]  # the ER graph shares v, w and (w, v)
        n += ER_N - 2
        edges += [e for e in _er_edges(background, ER_P, ER_SEED) if v not in e]
        kept_in_dprime = {w}
        text = (
            f"star of {k} leaves + hub w on all, (w, v) shared with ER(n={ER_N}, p={ER_P}); "
            "v keeps only w"
        )
    else:
        raise ParameterError(
            f"unknown construction {kind!r}",
            field="kind",
            limit="one of 'star', 'star-edge', 'er', 'connected'",
            value=kind,
        )
    d = _lists(n, edges)
    dp = [set(a) for a in d]
    dropped = set(d[v]) - kept_in_dprime
    dp[v] = set(kept_in_dprime)
    if symmetric:
        for u in dropped:
            dp[u].discard(v)
        text += f" (symmetric: {len(dropped) + 1} lists change)"
    else:
        text += " (node-LDP: only v's list changes)"
    return GraphCanary(kind, _freeze(d), _freeze(dp), v, tuple(star), text)


def node_pair_differs_in_one_list(canary: GraphCanary) -> bool:
    """The formal node-LDP relation: exactly one node's own list differs."""
    return len(canary.lists_d) == len(canary.lists_dprime) and len(canary.changed()) == 1


# ---- witnesses ------------------------------------------------------------------------------


def _reference_histogram(lists: Lists, theta: int) -> np.ndarray:
    degrees = np.minimum([len(a) for a in lists], theta)
    return np.bincount(degrees, minlength=theta + 1) / len(lists)


def graph_witnesses(canary: GraphCanary, theta: int) -> dict[str, Witness]:
    """Seed 001's battery on released degree vectors (rows = runs): the centre's released
    degree, the edge count (sum / 2), the max released degree, the L1 distance of the
    post-processed histogram (round, clip to [0, theta]) to the D world's true clipped
    histogram (public: a property of the canary, not of any sample), and the star score
    ``clip(y_v, 0, theta) + sum over leaves clip(y_u, 0, 1)`` (the log-likelihood-ratio
    shape when v keeps edges with its leaves)."""
    reference = _reference_histogram(canary.lists_d, theta)
    v, leaves = canary.centre, list(canary.leaves)

    def rows(y) -> np.ndarray:
        return np.atleast_2d(np.asarray(y, dtype=float))

    def histogram_l1(y) -> np.ndarray:
        arr = np.clip(np.rint(rows(y)), 0, theta).astype(np.int64)
        counts = np.stack([np.bincount(r, minlength=theta + 1) for r in arr])
        return np.abs(counts / arr.shape[1] - reference).sum(axis=1)

    return {
        "centre degree": lambda y: rows(y)[:, v],
        "edge count": lambda y: rows(y).sum(axis=1) / 2.0,
        "max degree": lambda y: rows(y).max(axis=1),
        "histogram L1": histogram_l1,
        "star score": lambda y: (
            np.clip(rows(y)[:, v], 0, theta) + np.clip(rows(y)[:, leaves], 0, 1).sum(axis=1)
        ),
    }


def graph_audit_canary(gc: GraphCanary, theta: int, eps: float) -> Canary:
    """The audit ``Canary``: n CADR-LDP runs on D's lists / D''s lists (same public D)."""
    bound = max(max(len(a) for a in gc.lists_d), max(len(a) for a in gc.lists_dprime), 1)

    def sampler(lists: Lists) -> Callable[[np.random.Generator, int], np.ndarray]:
        def run(rng: np.random.Generator, n: int) -> np.ndarray:
            cache: dict[tuple[int, int], np.ndarray] = {}  # NDOE scores, this sample set's
            return np.stack(
                [
                    cadr_release(lists, theta, eps, rng, degree_bound=bound, ndoe_cache=cache)
                    for _ in range(n)
                ]
            )

        return run

    return Canary(gc.description, sampler(gc.lists_d), sampler(gc.lists_dprime), gc.description)


# ---- battery entries ------------------------------------------------------------------------


def _entry(kind: str, *, leaves: int = STAR_LEAVES, theta: int = THETA, symmetric: bool = False,
           trials: int = 2000, claim: str = "two lists"):  # fmt: skip
    """A battery builder. ``claim``: ``"eps"`` (CADR-LDP's own node-LDP claim), ``"two
    lists"`` (2 eps: module docstring) or ``"group"`` ((number of changed lists) x eps)."""

    def build(eps: float, delta: float):
        from ldpfleet.collector.audit.battery import AuditSpec

        gc = construction(kind, leaves=leaves, symmetric=symmetric)
        factor = {"eps": 1, "two lists": 2, "group": len(gc.changed())}[claim]
        return AuditSpec(
            f"cadr {kind}",
            graph_audit_canary(gc, theta, eps),
            graph_witnesses(gc, theta),
            factor * eps,
            delta=delta,
            trials=trials,
            notes=f"theta = {theta} given; alpha = {ALPHA}; claim {claim}: {factor} x eps",
            extra={"theta": theta, "leaves": leaves, "nodes": gc.n, "changed": gc.changed()},
        )

    return build


GRAPH_BATTERY = {
    "degree-star": _entry("star"),
    "degree-star-edge": _entry("star-edge"),
    "degree-er": _entry("er"),
    "degree-connected": _entry("connected"),
    "degree-star-group": _entry("star", symmetric=True, claim="group"),
}

# Not in the battery: the canary that refutes the eps claim for the whole view (module
# docstring; docs/audit-graph.md). k = theta = 1: v's release and its one leaf's release
# each move by theta, so the view's loss reaches 2 (1 - alpha) eps > eps.
GRAPH_FINDINGS = {
    "degree-star-tight": _entry("star", leaves=1, theta=1, trials=4000, claim="eps"),
    "degree-star-eps": _entry("star", claim="eps"),
    "degree-star-edge-eps": _entry("star-edge", claim="eps"),
}


# ---- method clip through the real device machines (helper P, issue 20) --------------------
# ``degree-clip``: the same star pair (A) as ``degree-star``, but every node is a real
# ``protocol.cadr_device.CadrDevice`` running method "clip" (no NDOE, no LPEA, no relay
# phase; ``protocol.cadr_budget``, "Method clip"): the plan (θ given, so no θ search and
# ε_dsr = ε), then θ, then the ``DsrReport`` each device publishes on ``up/dsr`` — the
# collector's whole view. A device reads only its own list, so the asymmetric lists of the
# node-LDP pair are a valid input (no peer item is ever exchanged). Claim: ε itself (not
# 2ε): only v's release reads v's list. A planted bug (noise scale θ / (2 ε_dsr), or the
# unclipped degree released) makes the view 2ε-node-LDP on this star, which the audit
# certifies above ε (tests/unit/test_P_clip_audit.py).


def clip_release(
    lists: Lists,
    theta: int,
    eps: float,
    rng: np.random.Generator,
    *,
    alpha: float = ALPHA,
    degree_bound: int | None = None,
) -> np.ndarray:
    """One clip run on (possibly asymmetric) adjacency lists through the real
    ``CadrDevice`` machines (one per list, sharing ``rng`` in node order): the ``value``
    of every node's published ``DsrReport``, in node order. θ is given (the plan's
    ``theta_fraction`` is 0): ε_dsr = ε (``CadrBudget(..., negotiation=False)``, checked
    against every report's ``eps``)."""
    from ldpfleet.protocol import topics
    from ldpfleet.protocol.cadr_budget import CadrBudget
    from ldpfleet.protocol.cadr_device import CadrDevice
    from ldpfleet.protocol.cadr_messages import CadrPlan, CadrTheta, DsrReport

    bound = degree_bound if degree_bound is not None else max(1, *(len(a) for a in lists))
    eps_dsr = CadrBudget(eps, alpha, negotiation=False).dsr  # a given θ: the whole eps
    collector = {"run": RUN, "sender": topics.COLLECTOR_ID}
    plan = CadrPlan(**collector, seq=1, eps=eps, alpha=alpha, method="clip",
                    degree_bound=bound, ndoe_parts=min(NDOE_PARTS, bound + 1))  # fmt: skip
    announce = CadrTheta(**collector, seq=2, theta=theta)
    plan_topic = topics.parse(topics.ctl(RUN, "cadr_plan"))
    theta_topic = topics.parse(topics.ctl(RUN, "cadr_theta"))
    ids = _ids(len(lists))
    out = np.empty(len(lists))
    for i, own in enumerate(lists):
        device = CadrDevice(RUN, ids[i], [ids[j] for j in own], rng)
        device.receive(plan_topic, plan, 0.0)
        device.receive(theta_topic, announce, 0.0)
        (report,) = [o.message for o in device.pop_outbound() if isinstance(o.message, DsrReport)]
        if report.eps != eps_dsr:
            raise AssertionError(f"the report states eps {report.eps}, the run's is {eps_dsr}")
        out[i] = report.value
    return out


def clip_audit_canary(gc: GraphCanary, theta: int, eps: float) -> Canary:
    """The audit ``Canary`` of method clip: n clip runs on D's lists / D''s lists (the same
    public D)."""
    bound = max(max(len(a) for a in gc.lists_d), max(len(a) for a in gc.lists_dprime), 1)

    def sampler(lists: Lists) -> Callable[[np.random.Generator, int], np.ndarray]:
        def run(rng: np.random.Generator, n: int) -> np.ndarray:
            return np.stack([clip_release(lists, theta, eps, rng, degree_bound=bound)
                             for _ in range(n)])  # fmt: skip

        return run

    return Canary(gc.description, sampler(gc.lists_d), sampler(gc.lists_dprime), gc.description)


def _clip_entry(eps: float, delta: float):
    """``degree-clip``: the star pair through clip's device machines, claimed at ε."""
    from ldpfleet.collector.audit.battery import AuditSpec

    gc = construction("star")
    return AuditSpec(
        "cadr clip star",
        clip_audit_canary(gc, THETA, eps),
        graph_witnesses(gc, THETA),
        eps,
        delta=delta,
        trials=2000,
        notes=f"method clip, real CadrDevice machines; theta = {THETA} given (eps_dsr = eps); "
        "claim eps: the whole view is eps-node-LDP",
        extra={"theta": THETA, "leaves": STAR_LEAVES, "nodes": gc.n, "changed": gc.changed()},
    )


GRAPH_BATTERY["degree-clip"] = _clip_entry


# ---- the cascade canary (helper E, issue 20) ----------------------------------------------
# Found by ``scripts/E_cascade.py climb --theta 1 --steps 250 --seeds 8 --eps 1 --seed 1``
# (hill-climb over graphs with n <= 30 for the largest coupled L1 of the kept degrees when
# v = node 0 empties its list). Its held-out mean shift sum_i |E k_D,i - E k_D',i| (a lower
# bound on the expected L1 of every coupling) is 3.19 +- 0.15 at theta = 1, eps = 1: above the
# star's 2 theta, so the star's proof of the 2 eps claim does not carry over to this graph.
CASCADE_EDGES = (
    (0, 1), (0, 3), (0, 7), (0, 11), (0, 12), (0, 13), (0, 14), (0, 15), (0, 16), (0, 20),
    (0, 21), (0, 27), (1, 2), (1, 3), (1, 4), (1, 6), (1, 12), (1, 13), (2, 3), (2, 8),
    (2, 11), (2, 15), (2, 18), (2, 27), (3, 8), (3, 9), (3, 12), (3, 15), (3, 17), (4, 9),
    (4, 14), (4, 15), (5, 9), (5, 13), (5, 14), (5, 23), (6, 8), (6, 10), (6, 11), (6, 13),
    (6, 15), (6, 16), (7, 9), (7, 10), (7, 11), (7, 13), (7, 15), (8, 9), (8, 11), (8, 12),
    (8, 13), (8, 28), (9, 14), (9, 22), (10, 13), (10, 14), (10, 15), (11, 12), (11, 15),
    (11, 20), (11, 25), (12, 13), (12, 29), (13, 19), (14, 21), (15, 17), (16, 18), (16, 21),
    (16, 26), (18, 19), (18, 20), (19, 20), (20, 27), (21, 24), (22, 28), (24, 28),
)  # fmt: skip
CASCADE_NODES = 30
# Per-node E k_D - E k_D' (theta = 1, eps = 1) from 300 + 300 pilot runs with seeds that the
# audit never uses (scripts/E_cascade.py mean_shift, seed 10000): public weights of a witness.
CASCADE_PILOT_SHIFT = (
    0.943, 0.037, -0.027, -0.003, -0.093, -0.023, 0.017, 0.143, -0.103, -0.01, -0.08, -0.027,
    -0.037, 0.033, 0.007, 0.023, -0.043, -0.327, 0.023, -0.09, 0.02, 0.073, -0.027, 0.1,
    -0.223, -0.203, -0.193, 0.1, 0.017, -0.253,
)  # fmt: skip


def cascade_canary() -> GraphCanary:
    """The cascade canary: ``CASCADE_EDGES`` in D; in D' node 0 (``v``) empties its list
    (node-LDP: the other 29 lists, including v's neighbours' mention of v, stay)."""
    d = _lists(CASCADE_NODES, CASCADE_EDGES)
    dp = [set(a) for a in d]
    dp[0] = set()
    return GraphCanary(
        "cascade",
        _freeze(d),
        _freeze(dp),
        0,
        tuple(sorted(d[0])),
        f"hill-climbed graph (n = {CASCADE_NODES}, v of degree {len(d[0])}) vs v's list "
        "emptied (node-LDP: only v's list changes)",
    )


def cascade_witnesses(canary: GraphCanary, theta: int) -> dict[str, Witness]:
    """``graph_witnesses`` plus two linear statistics of the clipped releases: the sum with
    the pilot's signs, and the sum weighted by the pilot's mean shifts (``CASCADE_PILOT_SHIFT``,
    public: fixed before any audit run)."""
    weights = np.asarray(CASCADE_PILOT_SHIFT, dtype=float)
    signs = np.sign(weights)

    def clipped(y) -> np.ndarray:
        return np.clip(np.atleast_2d(np.asarray(y, dtype=float)), 0, theta)

    out = dict(graph_witnesses(canary, theta))
    out["signed sum"] = lambda y: clipped(y) @ signs
    out["pilot-weighted sum"] = lambda y: clipped(y) @ weights
    return out


# ---- coupled runs: keyed randomness (helper E, issue 20) -----------------------------------

# Found by ``scripts/E_cascade.py climb --theta 1 --steps 200 --seeds 6 --eps 1000 --seed 2``
# (the same search in the non-private limit of LPEA: eps = 1000, so Warner answers at
# alpha eps / 2 = 50 are truthful). v = node 0 (degree 10) emptying its list moves the kept
# degrees by L1 = 10 theta in every searched coupled run.
CASCADE_LIMIT_EDGES = (
    (0, 2), (0, 6), (0, 9), (0, 10), (0, 11), (0, 12), (0, 18), (0, 22), (0, 28), (0, 29),
    (1, 7), (1, 8), (2, 8), (2, 9), (2, 20), (2, 21), (3, 5), (3, 6), (3, 8), (4, 5), (4, 9),
    (4, 13), (4, 14), (4, 18), (5, 6), (5, 7), (5, 15), (5, 19), (5, 20), (6, 11), (6, 12),
    (6, 14), (7, 11), (7, 13), (7, 20), (7, 21), (8, 15), (9, 10), (9, 17), (10, 19), (11, 16),
    (11, 18), (11, 21), (12, 19), (12, 21), (12, 29), (14, 16), (15, 19), (15, 22), (15, 24),
    (16, 17), (16, 18), (18, 21), (18, 29), (19, 20), (19, 21), (20, 21), (21, 22), (21, 23),
    (21, 25), (23, 26), (23, 29), (26, 27), (26, 28),
)  # fmt: skip


def node_lists(n: int, edges: Sequence[tuple[int, int]]) -> Lists:
    """Symmetric adjacency lists of ``n`` nodes from an edge list."""
    return _freeze(_lists(n, edges))


_KEYED_KIND = {"start": 0, "req": 1, "ans": 2, "est": 3, "conf": 4, "ndoe": 9}


def _keyed(seed: int, node: int, r: int, peer: int, kind: str) -> np.random.Generator:
    return np.random.default_rng([seed, node, r + 1, peer + 1, _KEYED_KIND[kind]])


def keyed_lpea_kept(
    lists: Lists, theta: int, eps: float, seed: int, *, degree_bound: int | None = None
) -> tuple[np.ndarray, list[set[int]]]:
    """LPEA-LOW on (possibly asymmetric) lists as in ``cadr_release`` (NDOE codes, the real
    ``LpeaNode`` machines, the same lock-step delivery), but with KEYED randomness, for
    coupling two worlds: before every call into a node the driver hands it a fresh generator
    seeded by ``(seed, node, round, peer, kind)`` (the Warner coin for answering ``peer``'s
    request, drawn independently of the truth bit; the tie-break permutation keyed with
    ``peer = -1``, whichever answer completes the set), and v's NDOE code by ``(seed, node,
    ndoe)``. Every stream is fresh, so each world's law is the protocol's; the same
    (node, round, peer) coin is shared by D and D'. Returns the kept degrees and kept sets."""
    from ldpfleet.protocol.exponential import ndoe_scores

    budget, _, parts, mechanism = _ndoe_setup(lists, eps, ALPHA, degree_bound)
    sent = [
        mechanism.sample(ndoe_scores(len(a), parts), _keyed(seed, i, -1, -1, "ndoe"))
        for i, a in enumerate(lists)
    ]
    nodes, ids, index = _lpea_nodes(
        lists, sent, theta, budget.lpea, "low", lambda i: _keyed(seed, i, 0, -1, "start")
    )

    def rekey(i: int, r: int, peer: int, kind: str) -> None:
        nodes[i]._rng = _keyed(seed, i, r, peer, kind)

    _lpea_rounds(nodes, ids, index, rekey)
    kept_sets = [{index[j] for j in node.kept} for node in nodes]
    return np.array([len(s) for s in kept_sets], dtype=np.int64), kept_sets
