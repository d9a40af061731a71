"""Certified release scales — Algorithm 2 (seed 000, Section 4.3, Proposition 1).

Theory of operation. Coordinate k of the query is released with Laplace scale ``s_k / eps_k``
where

    s_k = max(B_k, xi_k).

``B_k`` is a CERTIFIED bound on the true sensitivity ``Delta_k`` under the fixed adjacency
``~G0`` (two datasets agree outside a predeclared expansion set ``Gamma(u)`` of one atomic
occurrence and may differ arbitrarily inside it). Analytic certificates, with
``changed_records`` = the most records the expansion set lets change for this coordinate:

* count of records (each record adds 0 or 1): ``B = changed_records``;
* fixed-size mean of ``n`` values clipped to ``[L, U]``: ``B = min(U - L, changed_records
  (U - L) / n)``;
* one histogram bin (each record lies in exactly one bin): ``B = changed_records`` per bin
  (the l1 bound over the whole histogram is twice that; GC-DP composes coordinatewise);
* any extractor clipped to ``[L_k, U_k]``: ``B = U_k - L_k`` (always valid, possibly loose).

``xi_k`` is EMPIRICAL: on public calibration data, ``delta_ik = |Pi_k(q_k(D)) -
Pi_k(q_k(M_i(D)))|`` is the change of coordinate k when node i is masked (``M_i`` replaces
node i's column by a fixed public value) and

    xi_k = min(g_max, kappa * max_{i in a(k)} [delta_ik + gamma r_bar_i
                                               sum_{j in C_k} w~_ij delta_jk]).

What ``M_i`` masks is part of the query's calibration: ``window_masking_deltas`` (the
channel means of one window) masks node TYPE v_i -- every value of channel i in the window
(seed §4.3 read literally, "M_i applies the prespecified mask to node type v_i") -- by
default, or one occurrence per window mean (``unit="occurrence"``: the reading the fleet
path, ``bench gcdp-scaling`` and ``bench gcdp``'s default run, which keeps every ``delta``
<= ``B_k = 1/window``; docs/gcdp.md, "Masking-delta scale").

``C_k`` is a compression set: the candidates are the graph neighbours of the nodes of
``a(k)``; scanning them by decreasing exposure ``r_bar`` (ties: smaller node index), a
candidate is kept unless its similarity ``S`` with an already kept one is ``>= tau_c`` — so of
every near-collinear pair only the more exposed node (the lower index on ties) counts.

Proposition 1: ``s_k >= B_k >= Delta_k`` whatever the graph, masking error, compression or
``gamma, tau_c, kappa, g_max`` do, because ``B_k`` stays inside the max. ``xi_k`` only ranks
influence and can only raise the scale.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from ldpfleet.collector.gcdp.graph import CalibrationGraph
from ldpfleet.collector.gcdp.validate import (
    finite_vector,
    integer_at_least,
    nonnegative_vector,
    positive_real,
    real_in_range,
)
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "MASK_UNITS",
    "NEIGHBOUR_DELTAS",
    "WINDOW_AGGREGATES",
    "clipped_range_bound",
    "compression_set",
    "coordinate_nodes",
    "count_bound",
    "empirical_influence",
    "histogram_bound",
    "l2_certificate",
    "masking_deltas",
    "mean_bound",
    "occurrence_l2_certificate",
    "release_scales",
    "window_masking_deltas",
]


# --- analytic certificates B_k --------------------------------------------------------------


def _range(low: object, high: object) -> float:
    lo = real_in_range(low, "low", -math.inf, math.inf, low_open=True, high_open=True)
    hi = real_in_range(high, "high", -math.inf, math.inf, low_open=True, high_open=True)
    if not hi > lo:
        raise ParameterError(
            f"must be > low = {lo!r}, got {high!r}",
            field="high",
            limit=f"> low = {lo!r}",
            value=high,
        )
    return hi - lo


def count_bound(changed_records: int = 1) -> float:
    """Certificate of a count: each changed record moves it by at most 1."""
    return float(integer_at_least(changed_records, "changed_records", 0))


def histogram_bound(changed_records: int = 1) -> float:
    """Certificate of ONE histogram bin (coordinatewise): at most ``changed_records``."""
    return float(integer_at_least(changed_records, "changed_records", 0))


def mean_bound(low: float, high: float, n: int, changed_records: int = 1) -> float:
    """Certificate of a mean of ``n`` (fixed, public) values clipped to ``[low, high]``."""
    width = _range(low, high)
    size = integer_at_least(n, "n", 1)
    changed = integer_at_least(changed_records, "changed_records", 0)
    return min(width, changed * width / size)


def clipped_range_bound(low: float, high: float) -> float:
    """The always-valid certificate ``U - L`` of an output clipped to ``[low, high]``."""
    return _range(low, high)


def l2_certificate(bounds: object) -> float:
    """An l2 sensitivity certificate from coordinatewise ones: ``sqrt(sum B_k^2)``
    (every coordinate moves by at most its ``B_k`` on the same neighbouring pair)."""
    b = nonnegative_vector(bounds, "bounds")
    return math.sqrt(math.fsum((b * b).tolist()))


def occurrence_l2_certificate(
    bounds: object, coordinate_map: Sequence[Sequence[int]] | None, n_nodes: int
) -> float:
    """The l2 certificate of the vector query under the component-occurrence adjacency
    (seed 000 §3.1, ``Gamma(u) = {u}`` with ``u = (t, v_i)``): one occurrence of node i
    can move only the coordinates whose ``a(k)`` contains i, each by at most ``B_k``, so
    ``Delta_2 <= max_i sqrt(sum_{k : i in a(k)} B_k^2)``. With ``a(k) = {k}`` this is
    ``max_k B_k``. Valid only when coordinate k reads nothing outside ``a(k)`` (the
    caller's obligation, as for ``B_k``); ``l2_certificate`` (``sqrt(sum_k B_k^2)``) needs
    no such property and is never smaller."""
    b = nonnegative_vector(bounds, "bounds")
    amap = coordinate_nodes(coordinate_map, b.size, integer_at_least(n_nodes, "n_nodes", 1))
    per_node = [0.0] * n_nodes
    for k, nodes in enumerate(amap):
        for i in nodes:
            per_node[i] += float(b[k]) ** 2
    return math.sqrt(max(per_node))


# --- empirical influence xi_k ---------------------------------------------------------------


def coordinate_nodes(
    mapping: Sequence[Sequence[int]] | None, d: int, n_nodes: int
) -> tuple[tuple[int, ...], ...]:
    """The fixed map ``a(k)``, checked; ``None`` means ``a(k) = {k}`` (needs ``d = M``)."""
    if mapping is None:
        if d != n_nodes:
            raise ParameterError(
                f"is required when d = {d} differs from the node count {n_nodes}",
                field="coordinate_map",
                limit=f"given when d = {d} differs from the node count {n_nodes}",
                value=mapping,
            )
        return tuple((k,) for k in range(d))
    if len(mapping) != d:
        raise ParameterError(
            f"must have d = {d} entries, got {len(mapping)}",
            field="coordinate_map",
            limit=f"d = {d} entries (value: the count)",
            value=len(mapping),
        )
    out = []
    for k, nodes in enumerate(mapping):
        field = f"coordinate_map[{k}]"
        checked = sorted({integer_at_least(i, field, 0) for i in nodes})
        if not checked or checked[-1] >= n_nodes:
            raise ParameterError(
                f"must be a non-empty set of node indices < {n_nodes}, got {list(nodes)!r}",
                field=field,
                limit=f"a non-empty set of node indices < {n_nodes}",
                value=list(nodes),
            )
        out.append(tuple(checked))
    return tuple(out)


def masking_deltas(
    query: Callable[[np.ndarray], object],
    data: object,
    low: object,
    high: object,
    mask_values: object = 0.0,
) -> np.ndarray:
    """``delta[i, k] = |Pi_k(q_k(D)) - Pi_k(q_k(M_i(D)))|`` (shape M x d) on PUBLIC data.

    ``query`` maps a (time x nodes) array to ``d`` values; ``Pi_k`` clips to
    ``[low_k, high_k]``; ``M_i`` sets node i's column to ``mask_values[i]``."""
    x = np.array(data, dtype=float)
    if x.ndim != 2 or x.shape[1] == 0 or not np.all(np.isfinite(x)):
        raise ParameterError(
            "must be a finite 2-D array (time x nodes)",
            field="data",
            limit="a finite 2-D array (time x nodes) (value: shape or first non-finite)",
            value=x.shape if x.ndim != 2 or x.shape[1] == 0 else float(x[~np.isfinite(x)][0]),
        )
    m = x.shape[1]
    fill = np.broadcast_to(np.asarray(mask_values, dtype=float), (m,))

    def projected(arr: np.ndarray) -> np.ndarray:
        return np.clip(finite_vector(query(arr), "query(data)"), lo, hi)

    first = finite_vector(query(x), "query(data)")
    d = first.size
    lo = finite_vector(np.broadcast_to(np.asarray(low, dtype=float), (d,)), "low", d)
    hi = finite_vector(np.broadcast_to(np.asarray(high, dtype=float), (d,)), "high", d)
    if np.any(hi <= lo):
        raise ParameterError(
            "must be > low in every coordinate",
            field="high",
            limit="> low in every coordinate (value: the first bad (low, high))",
            value=tuple(float(v[np.flatnonzero(hi <= lo)[0]]) for v in (lo, hi)),
        )
    base = np.clip(first, lo, hi)
    deltas = np.empty((m, d))
    for i in range(m):
        masked = x.copy()
        masked[:, i] = fill[i]
        deltas[i] = np.abs(base - projected(masked))
    return deltas


MASK_UNITS = ("node", "occurrence")
WINDOW_AGGREGATES = ("mean", "max")
NEIGHBOUR_DELTAS = ("coordinate", "own")


def window_masking_deltas(
    nodes: object,
    window: int,
    *,
    unit: str = "node",
    aggregate: str = "mean",
    mask_values: object = 0.0,
    low: float = 0.0,
    high: float = 1.0,
) -> np.ndarray:
    """Algorithm 2's ``delta[i, k]`` (M x M) for the released query "the M channel means of
    one window of ``window`` consecutive records", on PUBLIC calibration ``nodes``
    (time x M, already on the ``[low, high]`` scale; the trailing partial window is dropped).

    ``unit`` is what ``M_i`` masks (docs/gcdp.md, "Masking-delta scale"):

    * ``"node"`` (seed §4.3: "M_i applies the prespecified mask to node type v_i"; §3.1: a
      node is a component TYPE, an occurrence ``(t, v_i)`` is one of its values): every
      value of channel i in the window is replaced by ``mask_values[i]``, so the window
      mean of channel i moves to the mask and ``delta[i, i]`` is the aggregate over the
      calibration windows of ``|Pi(window mean_i) - Pi(mask_i)|``;
    * ``"occurrence"``: ONE masked occurrence per window mean, the reading the fleet
      path and the benches run by default -- exactly ``masking_deltas(lambda a:
      a.mean(axis=0) / window, nodes, low, high, mask_values)`` (the whole matrix at
      once, displacement / window).

    ``aggregate`` (``"node"`` only) turns the per-window deltas into one number: their
    ``"mean"`` or their ``"max"`` over the calibration windows. A window mean of channel k
    reads channel k only, so ``delta[i, k] = 0`` for ``i != k`` under either unit.

    Privacy: the deltas are empirical and only ever RAISE a release scale
    (``release_scales`` keeps ``B_k`` inside the max), so no unit, aggregate or mask value
    can invalidate the certificate (Proposition 1)."""
    _check_window_options(unit, aggregate)
    size = integer_at_least(window, "window", 1)
    x = _calibration_nodes(nodes)
    if unit == "occurrence":
        if aggregate != "mean":
            raise ParameterError(
                f"must be mean with unit='occurrence' (one number per node), got {aggregate!r}",
                field="aggregate",
                limit="mean with unit='occurrence'",
                value=aggregate,
            )
        return masking_deltas(lambda a: a.mean(axis=0) / size, x, low, high, mask_values)
    return _node_window_deltas(x, size, aggregate, mask_values, low, high)


def _check_window_options(unit: str, aggregate: str) -> None:
    """Refuse a ``unit`` not in ``MASK_UNITS`` and an ``aggregate`` not in
    ``WINDOW_AGGREGATES`` (``window_masking_deltas``)."""
    if unit not in MASK_UNITS:
        raise ParameterError(
            f"must be one of {', '.join(MASK_UNITS)}, got {unit!r}",
            field="unit",
            limit=f"one of {', '.join(MASK_UNITS)}",
            value=unit,
        )
    if aggregate not in WINDOW_AGGREGATES:
        raise ParameterError(
            f"must be one of {', '.join(WINDOW_AGGREGATES)}, got {aggregate!r}",
            field="aggregate",
            limit=f"one of {', '.join(WINDOW_AGGREGATES)}",
            value=aggregate,
        )


def _calibration_nodes(nodes: object) -> np.ndarray:
    """``nodes`` as a float array, refused unless finite and 2-D (time x nodes) with at
    least one node."""
    x = _real_array(nodes, "nodes", "a finite 2-D array (time x nodes)")
    if x.ndim != 2 or x.shape[1] == 0 or not np.all(np.isfinite(x)):
        raise ParameterError(
            "must be a finite 2-D array (time x nodes)",
            field="nodes",
            limit="a finite 2-D array (time x nodes) (value: shape or first non-finite)",
            value=x.shape if x.ndim != 2 or x.shape[1] == 0 else float(x[~np.isfinite(x)][0]),
        )
    return x


def _real_array(value: object, field: str, limit: str) -> np.ndarray:
    """``value`` as a float array, or a ``ParameterError`` naming ``field`` (text, ragged
    lists or None raised numpy's own ValueError / TypeError)."""
    try:
        return np.array(value, dtype=float)
    except (TypeError, ValueError) as error:
        raise ParameterError(
            f"must be real numbers ({error})", field=field, limit=limit, value=value
        ) from None


def _node_window_deltas(
    x: np.ndarray, size: int, aggregate: str, mask_values: object, low: float, high: float
) -> np.ndarray:
    """``window_masking_deltas`` with ``unit="node"``: the diagonal matrix of the
    ``aggregate`` over the whole windows of ``|Pi(window mean_i) - Pi(mask_i)|``, ``Pi``
    the clip to ``[low, high]``. Refuses data shorter than one window, bounds that are not
    finite with ``high > low`` and mask values that are not finite."""
    n_windows, m = x.shape[0] // size, x.shape[1]
    if n_windows == 0:
        raise ParameterError(
            f"has {x.shape[0]} records, fewer than one window of {size}",
            field="nodes",
            limit=f">= {size} records, one window (value: the record count)",
            value=x.shape[0],
        )
    lo, hi = float(low), float(high)
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ParameterError(
            f"must be finite and > low = {low!r}, got {high!r}",
            field="high",
            limit=f"finite and > low = {low!r}",
            value=high,
        )
    given = _real_array(mask_values, "mask_values", f"one finite number, or {m} (one per node)")
    if given.ndim > 1 or given.size not in (1, m):
        raise ParameterError(
            f"must be one number or {m} numbers (one per node), got shape {given.shape}",
            field="mask_values",
            limit=f"one finite number, or {m} (one per node) (value: the shape)",
            value=given.shape,
        )
    fill = np.clip(np.broadcast_to(given, (m,)), lo, hi)
    if not np.all(np.isfinite(fill)):
        raise ParameterError(
            "must be finite",
            field="mask_values",
            limit="finite (value: the first non-finite one)",
            value=float(fill[~np.isfinite(fill)][0]),
        )
    means = np.clip(x[: n_windows * size].reshape(n_windows, size, m).mean(axis=1), lo, hi)
    per_window = np.abs(means - fill[None, :])
    diagonal = per_window.mean(axis=0) if aggregate == "mean" else per_window.max(axis=0)
    return np.diag(diagonal)


def compression_set(
    graph: CalibrationGraph, nodes: Sequence[int], tau_c: float = 0.85, compress: bool = True
) -> tuple[int, ...]:
    """``C_k`` for a coordinate whose node set ``a(k)`` is ``nodes`` (ascending indices).

    ``compress=False`` (the "w/o compression" ablation) keeps every candidate."""
    threshold = real_in_range(tau_c, "tau_c", 0.0, 1.0)
    candidates = np.flatnonzero(graph.weights[list(nodes)].any(axis=0))
    if not compress:
        return tuple(int(j) for j in candidates)
    order = sorted(candidates.tolist(), key=lambda j: (-graph.exposure_norm[j], j))
    kept: list[int] = []
    for j in order:
        if all(graph.scores[j, c] < threshold for c in kept):
            kept.append(j)
    return tuple(sorted(kept))


def empirical_influence(
    deltas: object,
    graph: CalibrationGraph,
    coordinate_map: Sequence[Sequence[int]] | None = None,
    *,
    gamma: float = 1.2,
    tau_c: float = 0.85,
    kappa: float = 1.0,
    g_max: float = 1.0,
    compress: bool = True,
    neighbour_delta: str = "coordinate",
) -> np.ndarray:
    """``xi_k`` for every coordinate (length d) from the M x d masking ``deltas``.

    ``neighbour_delta`` reads the ``delta_jk`` of the expansion term (j in ``C_k``):
    ``"coordinate"`` (default) the seed's literal ``delta_jk``, node j's effect on
    coordinate k -- 0 whenever coordinate k reads no node outside ``a(k)``, so with
    ``a(k) = {k}`` the term and the compression have no effect; ``"own"`` node j's effect
    on its own coordinates, ``max_{k': j in a(k')} delta_jk'`` (0 if j is in no ``a(k')``),
    a reading that gives the term weight in the d = M case (docs/gcdp.md, "Masking-delta
    scale"). Either way ``xi_k >= 0`` only raises ``s_k = max(B_k, xi_k)``."""
    delta = np.array(deltas, dtype=float)
    m = graph.n_nodes
    if delta.ndim != 2 or delta.shape[0] != m:
        raise ParameterError(
            f"must have shape ({m}, d), got {delta.shape}",
            field="deltas",
            limit=f"shape ({m}, d) (value: its shape)",
            value=delta.shape,
        )
    if not np.all(np.isfinite(delta)) or np.any(delta < 0.0):
        raise ParameterError(
            "entries must be finite and >= 0",
            field="deltas",
            limit="entries finite and >= 0 (value: the first bad one)",
            value=float(delta[~(np.isfinite(delta) & (delta >= 0.0))][0]),
        )
    expansion = real_in_range(gamma, "gamma", 0.0, math.inf, high_open=True)
    inflation = real_in_range(kappa, "kappa", 1.0, math.inf, high_open=True)
    cap = positive_real(g_max, "g_max")
    if neighbour_delta not in NEIGHBOUR_DELTAS:
        raise ParameterError(
            f"must be one of {', '.join(NEIGHBOUR_DELTAS)}, got {neighbour_delta!r}",
            field="neighbour_delta",
            limit=f"one of {', '.join(NEIGHBOUR_DELTAS)}",
            value=neighbour_delta,
        )
    d = delta.shape[1]
    amap = coordinate_nodes(coordinate_map, d, m)
    own = np.zeros(m)  # node j's largest effect on its own coordinates ("own" only)
    for k, nodes in enumerate(amap if neighbour_delta == "own" else ()):
        for i in nodes:
            own[i] = max(own[i], delta[i, k])
    xi = np.empty(d)
    for k, nodes in enumerate(amap):
        members = list(compression_set(graph, nodes, tau_c, compress))
        idx = list(nodes)
        neighbour = delta[members, k] if neighbour_delta == "coordinate" else own[members]
        spread = graph.normalized[np.ix_(idx, members)] @ neighbour if members else 0.0
        per_node = delta[idx, k] + expansion * graph.exposure_norm[idx] * spread
        xi[k] = min(cap, inflation * float(np.max(per_node)))
    return xi


def release_scales(bounds: object, empirical: object | None = None) -> np.ndarray:
    """Algorithm 2 step 5: ``s_k = max(B_k, xi_k)`` (``B_k`` alone if no empirical score)."""
    b = nonnegative_vector(bounds, "bounds")
    if empirical is None:
        return b
    xi = nonnegative_vector(empirical, "empirical", b.size)
    return np.maximum(b, xi)
