"""Sharing graphs: who agrees masks with whom and who holds whose Shamir shares.

Theory of operation:

- Full graph (Bonawitz et al., CCS 2017): every device is a neighbour of every other one;
  O(n^2) key agreements and shares in total.
- SecAgg+ graph (Bell et al., CCS 2020, section 3): a random k-regular graph with
  k = O(log n) suffices for privacy and dropout robustness against an adversary that does
  not know the graph in advance. ``harary_graph`` builds the circulant (Harary) graph on a
  uniformly random permutation of the ids: the ids are shuffled by Fisher-Yates with
  rejection-sampled indices drawn from ``random_bytes`` (no modulo bias, no global RNG),
  position i holds ``perm[i]`` and is adjacent to positions i +- 1, ..., i +- (k // 2)
  (mod n). For odd k one more "long" edge per node is needed:

  * n even: position i is also adjacent to its antipode i + n/2 (a perfect matching), so
    every node has degree exactly k;
  * n odd: a perfect matching does not exist, so positions i and i + (n + 1)/2 are joined
    for i = 0, ..., (n - 3)/2. Every position then has degree k except position (n - 1)/2,
    which has degree k - 1 (as the labels are random, so is the node concerned).

  Even k always gives degree exactly k. The long edges have circular distance n/2 or
  (n - 1)/2, longer than any ring edge (at most k // 2 < those for k < n), so no edge is
  doubled; the graph is symmetric and has no self-loops. k = 1 on an odd number of nodes is
  refused: it would leave one node with no neighbour, whose input nothing would mask. (The
  server also refuses k = 1 on more than 2 nodes, a perfect matching whose pairs' sums
  unmasking would reveal, and checks that the survivors' graph is in one part before it
  unmasks: ``components``.)
- ``default_degree(n)``: k = ceil(2 log2 n) (computed exactly as the bit length of n^2 - 1),
  rounded up to an odd number, at least 3, and capped at n - 1 (the complete graph, whose
  degree may then be even); n <= 3 gives n - 1.
- ``default_threshold(degree)``: t = degree // 2 + 1, strictly more than half of the
  ``degree`` share holders of a device, and the least such t. Pass the number of holders:
  in SecAgg+ (and Flower's num_shares convention) a device keeps one share of its own
  secrets besides one per neighbour, so count the node itself (degree + 1); if it shares
  among its neighbours only, pass the neighbour count. Why more than half: an honest holder
  reveals at most one of the two shares of u in a round (of the self-mask seed b_u if u
  survived, of the mask key s_u if it dropped), so a server needs 2t distinct honest
  holders to learn both, and 2t > holders makes that impossible. In the odd/odd Harary
  case compute t from the largest neighbourhood; the node of degree k - 1 then still has
  at least t holders for k >= 3. Dropout tolerance: holders - t holders of a device may drop.
- ``abort_probability_bound(devices, degree, threshold, dropping)``: on the SecAgg+ graph
  (random labels) the dropping devices sit at uniformly random positions, so the number of
  dropped neighbours of one device is hypergeometric; a survivor is unmaskable while at most
  ``degree + 1 - t`` of its neighbours dropped (it holds a share of its own), a dropped device
  while at most ``degree - t`` did. The union bound over the devices is an upper bound on
  the probability that the session aborts for want of holders (within a factor 2 where
  measured: one cluster of dropped devices fails a dropped device and a survivor at once;
  200 devices, K = 11, t = 7, 20 dropping: bound 5.9 %, sampled 3.5 %). It counts every
  device at ``degree`` neighbours (the one node of degree k - 1 on an odd/odd Harary graph
  is not counted apart).
- ``session_abort_bound`` adds ``split_probability_bound`` when the devices leave before
  their masked input (a survivors' graph in parts is refused too), in floating point
  (log-gamma terms: exact integer arithmetic took 3.4 s at 10,000 devices and degree
  3,001; within 1e-9 relative of it where both are tested). ``safer_degree`` and
  ``safer_dropping`` search the smallest degree (with its default threshold) and the
  most dropping devices that keep it under a limit: what a scenario's warning and the
  bench's advice name (``ABORT_RISK_LIMIT``, 1e-3, for a scenario).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from math import comb, exp, lgamma, perm

from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg.crypto import uniform_below
from ldpfleet.protocol.validate import integer_at_least

RandomBytes = Callable[[int], bytes]


def _check_ids(ids: Sequence[int]) -> list[int]:
    out = list(ids)
    for i, v in enumerate(out):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ParameterError(
                f"must be an integer, got {v!r}", field=f"ids[{i}]", limit="an integer", value=v
            )
    if len(set(out)) != len(out):
        raise ParameterError(
            "ids must be distinct",
            field="ids",
            limit="distinct ids (value is the first repeated id)",
            value=next(v for v in out if out.count(v) > 1),
        )
    return out


def full_graph(ids: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """Every id is adjacent to every other id (neighbours sorted)."""
    nodes = _check_ids(ids)
    ordered = sorted(nodes)
    return {u: tuple(v for v in ordered if v != u) for u in nodes}


def default_degree(n: int) -> int:
    """k = ceil(2 log2 n) rounded up to odd, at least 3, at most n - 1 (n <= 3: n - 1)."""
    n = integer_at_least(n, "n", 2)
    if n <= 3:
        return n - 1
    k = (n * n - 1).bit_length()  # == ceil(log2(n^2)) == ceil(2 log2 n), exactly
    if k % 2 == 0:
        k += 1
    return min(n - 1, max(3, k))


def harary_graph(
    ids: Sequence[int], k: int, random_bytes: RandomBytes = os.urandom
) -> dict[int, tuple[int, ...]]:
    """The k-regular circulant (Harary) graph on a random permutation of ``ids``.

    Degree is exactly k, except when k and n are both odd: then one node has degree k - 1.
    """
    nodes = _check_ids(ids)
    n = len(nodes)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < n:
        raise ParameterError(
            f"must be an integer in [1, n - 1] with n = {n}, got {k!r}",
            field="k",
            limit=f"an integer in [1, n - 1] with n = {n}",
            value=k,
        )
    if k == 1 and n % 2 == 1:
        raise ParameterError(
            f"k = 1 on n = {n} (odd) nodes leaves a node without neighbours",
            field="k",
            limit="k > 1 on an odd number of nodes",
            value=k,
        )
    perm = nodes[:]
    for i in range(n - 1, 0, -1):  # Fisher-Yates
        j = uniform_below(i + 1, random_bytes)
        perm[i], perm[j] = perm[j], perm[i]
    adjacent: list[set[int]] = [set() for _ in range(n)]

    def join(i: int, j: int) -> None:
        adjacent[i].add(j)
        adjacent[j].add(i)

    for i in range(n):
        for d in range(1, k // 2 + 1):
            join(i, (i + d) % n)
    if k % 2 == 1:
        if n % 2 == 0:
            for i in range(n // 2):
                join(i, i + n // 2)
        else:
            for i in range((n - 1) // 2):
                join(i, i + (n + 1) // 2)
    graph = {perm[i]: tuple(sorted(perm[j] for j in adjacent[i])) for i in range(n)}
    return {u: graph[u] for u in nodes}


def components(
    adjacency: dict[int, frozenset[int]] | dict[int, tuple[int, ...]], members: Collection[int]
) -> list[frozenset[int]]:
    """The connected parts of the graph induced on ``members`` (largest first, then by
    smallest id). Why it matters: once the self masks of the survivors and the masks shared
    with dropped devices are removed, the pairwise masks left cancel within each part of
    the survivors' graph, so unmasking a graph of several parts reveals each part's sum."""
    inside = set(members)
    parts: list[frozenset[int]] = []
    seen: set[int] = set()
    for start in sorted(inside):
        if start in seen:
            continue
        part, frontier = {start}, [start]
        while frontier:
            u = frontier.pop()
            for v in adjacency[u]:
                if v in inside and v not in part:
                    part.add(v)
                    frontier.append(v)
        seen |= part
        parts.append(frozenset(part))
    return sorted(parts, key=lambda part: (-len(part), min(part)))


def default_threshold(degree: int) -> int:
    """t = degree // 2 + 1: strictly more than half of ``degree`` share holders.

    Count the node itself among the holders when it keeps a share of its own secrets
    (SecAgg+: holders = number of neighbours + 1).
    """
    degree = integer_at_least(degree, "degree", 1)
    return degree // 2 + 1


def abort_probability_bound(devices: int, degree: int, threshold: int, dropping: int) -> float:
    """At most this share of sessions abort before unmasking because some device keeps
    fewer than ``threshold`` live share holders, when ``dropping`` of ``devices`` devices
    (uniformly random positions of the SecAgg+ graph of ``degree``; a full graph has
    ``degree = devices - 1``) drop after sharing (module docstring: a union bound over the
    devices of hypergeometric tails, exact integer arithmetic)."""
    _check_bound_args(devices, degree, threshold, dropping)
    others = devices - 1
    survivors = devices - dropping
    total = 0.0
    if survivors:  # a survivor: `dropping` dropped among the `others`
        total += survivors * _tail(others, dropping, degree, degree + 1 - threshold)
    if dropping:  # a dropped device: the other `dropping - 1` among the `others`
        total += dropping * _tail(others, dropping - 1, degree, degree - threshold)
    return min(1.0, total)


def _check_bound_args(devices: int, degree: int, threshold: int, dropping: int) -> None:
    """The bounds' arguments: integers, 2 <= devices, 1 <= degree <= devices - 1,
    threshold >= 1, 0 <= dropping <= devices (else a ParameterError naming the first)."""
    devices = integer_at_least(devices, "devices", 2)
    degree = integer_at_least(degree, "degree", 1)
    integer_at_least(threshold, "threshold", 1)
    dropping = integer_at_least(dropping, "dropping", 0)
    if degree > devices - 1 or dropping > devices:
        raise ParameterError(
            f"need degree <= devices - 1 = {devices - 1} and dropping <= devices = {devices}, "
            f"got degree {degree}, dropping {dropping}",
            field="degree" if degree > devices - 1 else "dropping",
            limit=f"degree <= devices - 1 = {devices - 1} and dropping <= devices = {devices}",
            value=degree if degree > devices - 1 else dropping,
        )


def split_probability_bound(devices: int, degree: int, dropping: int) -> float:
    """At most this share of sessions abort because the survivors' SecAgg+ graph splits
    (the server refuses to unmask a graph in several parts: each part's sum would show)
    when ``dropping`` of ``devices`` devices at uniformly random positions of the Harary
    graph of ``degree`` drop before their masked input.

    The Harary graph contains the ring C_n(1..r), r = degree // 2, on the same random
    positions (odd degrees add long edges, which can only join parts), and two survivors
    at most r positions apart are neighbours there. So a split survivors' graph needs two
    runs of at least r consecutive dropped positions with survivors between them on both
    sides of the circle: two windows of r positions, each starting at least r + 1 after the
    other, all 2r dropped. A union bound over the n (n - 2r - 1) / 2 such pairs, each all
    dropped with probability (dropping)_2r / (devices)_2r. Exact for degree 2 (a ring: any
    two non-adjacent dropouts cut it). The full graph (degree n - 1) never splits.
    (Held-out QA, helper T: ``--devices 20 --neighbors 2 --dropout 0.1`` reported
    ``abort_probability_at_most`` 0.316 while every seed aborted on a split ring.)"""
    r = degree // 2
    if degree >= devices - 1 or r == 0 or 2 * r > dropping:
        return 0.0
    pairs = devices * (devices - 2 * r - 1) // 2
    if pairs <= 0:
        return 0.0
    # pairs x (dropping)_2r / (devices)_2r: one correctly rounded division of exact
    # integers (a product of 2r Fractions, the same value, reduced a gcd per factor)
    return min(1.0, pairs * perm(dropping, 2 * r) / perm(devices, 2 * r))


def _tail(population: int, marked: int, draws: int, allowed: int) -> float:
    """P(more than ``allowed`` of ``draws`` drawn without replacement are marked)."""
    if allowed < 0:
        return 1.0
    ways = comb(population, draws)
    bad = sum(
        comb(marked, j) * comb(population - marked, draws - j)
        for j in range(allowed + 1, min(marked, draws) + 1)
    )
    return bad / ways


def check_dropout_survivors(dropout: float, devices: int, threshold: int, why: str = "") -> None:
    """Refuse (``ParameterError`` on ``dropout``) a dropout share of ``devices`` that leaves
    fewer than the session's ``threshold`` t: every stage would close with fewer than t
    replies and the session abort, whatever happens. The dropping devices are
    ``round(dropout * devices)``, as a scenario's secure-sum stage and ``bench secagg``
    drop them; ``why`` (e.g. " (degree 3: t = ...)") follows t in the sentence."""
    dropping = round(dropout * devices)
    if devices - dropping < threshold:
        raise ParameterError(
            f"must leave at least the threshold t = {threshold} of the {devices} devices"
            f"{why} or the session aborts, so at most {(devices - threshold) / devices:.4g} "
            f"here, got {dropout!r} ({dropping} dropping, {devices - dropping} left)",
            field="dropout",
            limit=(
                f"at most {(devices - threshold) / devices:.4g} "
                f"(keeps t = {threshold} of {devices})"
            ),
            value=dropout,
        )


ABORT_RISK_LIMIT = 1e-3  # a scenario whose sessions may abort more often than this warns


def leaves_before_masked(dropout_stage: str) -> bool:
    """Whether a device dropping at ``dropout_stage`` (``devices.secagg_agent``'s
    ``DROPOUT_STAGES``) leaves before its masked input is in: after ``after_masked`` or
    ``during_unmask`` it stays in U3 and cannot cut the survivors' graph, so only the
    earlier stages add ``split_probability_bound`` (``session_abort_bound``'s
    ``before_masked``)."""
    return dropout_stage not in ("after_masked", "during_unmask")


def session_abort_bound(
    devices: int, degree: int, threshold: int, dropping: int, *, before_masked: bool = True
) -> float:
    """At most this share of sessions abort before unmasking when ``dropping`` of
    ``devices`` devices at uniformly random positions of the SecAgg+ graph of ``degree``
    (``devices - 1``: the full graph) leave: for want of ``threshold`` live share holders
    (``abort_probability_bound``'s union bound) or, when they leave ``before_masked``,
    because the survivors' graph splits (``split_probability_bound``). Floating point
    (log-gamma), fast at any size: the module docstring. ParameterError as
    ``abort_probability_bound``."""
    _check_bound_args(devices, degree, threshold, dropping)
    others, survivors = devices - 1, devices - dropping
    total = 0.0
    if survivors:
        total += survivors * _tail_float(others, dropping, degree, degree + 1 - threshold)
    if dropping:
        total += dropping * _tail_float(others, dropping - 1, degree, degree - threshold)
    if before_masked:
        total += split_probability_bound(devices, degree, dropping)
    return min(1.0, total)


def safer_degree(
    devices: int, degree: int, dropping: int, limit: float, *, before_masked: bool = True
) -> int | None:
    """The smallest degree above ``degree`` (odd, as ``default_degree``'s, or
    ``devices - 1``) whose ``session_abort_bound`` with its default threshold is at most
    ``limit``; None when only the full graph (``devices - 1``) gets there, or nothing does.
    The bound falls as the degree grows, so the search doubles the step, then halves it
    (about 2 log2 n evaluations)."""

    def fine(k: int) -> bool:
        t = default_threshold(k + 1)
        return session_abort_bound(devices, k, t, dropping, before_masked=before_masked) <= limit

    candidates = [k for k in (degree + 1, degree + 2) if k % 2 == 1]
    low = candidates[0] if candidates else degree + 1  # the first odd degree above
    top = devices - 2 if (devices - 2) % 2 == 1 else devices - 3  # the last odd below full
    if low > top:
        return None
    step, high = 2, low
    while not fine(high):  # double the step until a degree that is fine (or none)
        if high >= top:
            return None
        low = high + 2
        high = min(top, high + step)
        step *= 2
    while low < high:  # the smallest fine odd degree in [low, high]
        middle = low + ((high - low) // 2) // 2 * 2
        if fine(middle):
            high = middle
        else:
            low = middle + 2
    return high


def safer_dropping(
    devices: int,
    degree: int,
    threshold: int,
    dropping: int,
    limit: float,
    *,
    before_masked: bool = True,
) -> int:
    """The most dropping devices, at most ``dropping``, whose ``session_abort_bound`` at
    this ``degree`` and ``threshold`` is at most ``limit`` (0 when only that does: with nobody
    leaving no session aborts). Bisection: the bound grows with the dropping devices."""
    low, high = 0, dropping  # fine(low) holds: the bound is 0 with nobody dropping
    while low < high:
        middle = (low + high + 1) // 2
        bound = session_abort_bound(devices, degree, threshold, middle, before_masked=before_masked)
        if bound <= limit:
            low = middle
        else:
            high = middle - 1
    return low


def _tail_float(population: int, marked: int, draws: int, allowed: int) -> float:
    """``_tail`` in floating point: each hypergeometric term from log-gammas."""
    if allowed < 0:
        return 1.0
    first = max(allowed + 1, draws - (population - marked))
    last = min(marked, draws)
    if first > last:
        return 0.0
    ways = _log_comb(population, draws)
    marked_rest = population - marked
    return min(
        1.0,
        sum(
            exp(_log_comb(marked, j) + _log_comb(marked_rest, draws - j) - ways)
            for j in range(first, last + 1)
        ),
    )


def _log_comb(n: int, k: int) -> float:
    return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)
