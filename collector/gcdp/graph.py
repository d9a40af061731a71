"""Calibration graph with a symmetric degree cap — Algorithm 1 (seed 000, Section 4.1).

Theory of operation. From the score matrix ``S`` (``correlation.lagged_abs_pearson``):

1. candidates ``E_tau = {{i, j} : S_ij >= tau, i < j}``, sorted by decreasing ``S_ij`` with
   the lexicographic pair ``(i, j)`` as the deterministic tie-break (step 3);
2. greedy symmetric sparsification: in that order accept ``{i, j}`` only if both current
   (unweighted) degrees are ``< K``, and set ``w_ij = w_ji = S_ij`` (step 4). Hence every
   degree is ``<= K``; sub-threshold pairs are never reinstated; isolated nodes are allowed;
3. ``W~ = D^{-1/2} W D^{-1/2}`` with ``D`` the weighted degrees and inverse degree 0 for an
   isolated node (step 5);
4. weighted degree ``d_m = sum_j w_mj`` and smoothed exposure
   ``r_m = alpha d_m + (1 - alpha) sum_j w~_mj d_j`` (steps 6-7);
5. min-max normalisation to ``r_bar in [0, 1]``; if all ``r_m`` are equal, ``r_bar = 0``
   (step 8).

The result depends only on ``S`` and the constants (no randomness, no dict/set ordering). The
exposure is an allocation surrogate, not a privacy-loss bound (Section 3.3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ldpfleet.collector.gcdp.correlation import lagged_abs_pearson
from ldpfleet.collector.gcdp.validate import integer_at_least, real_in_range
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "CalibrationGraph",
    "build_calibration_graph",
    "calibrate_from_data",
    "degree_capped_edges",
    "normalized_adjacency",
    "smoothed_exposure",
]


@dataclass(frozen=True)
class CalibrationGraph:
    """Algorithm 1 output: ``scores`` S, sparse ``weights`` W, ``normalized`` W~, accepted
    ``edges`` (i < j, in acceptance order), weighted ``degree`` d, raw ``exposure`` r and its
    normalisation ``exposure_norm`` (r_bar)."""

    scores: np.ndarray
    weights: np.ndarray
    normalized: np.ndarray
    edges: tuple[tuple[int, int], ...]
    degree: np.ndarray
    exposure: np.ndarray
    exposure_norm: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.weights.shape[0])

    def edge_counts(self) -> np.ndarray:
        """Unweighted degree of every node (each ``<= K``)."""
        return np.count_nonzero(self.weights, axis=1)

    def neighbors(self, node: int) -> np.ndarray:
        """Indices of the accepted neighbours of ``node``, ascending."""
        return np.flatnonzero(self.weights[node])


def _check_scores(scores: object) -> np.ndarray:
    try:
        s = np.array(scores, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(
            "must be a square array of real numbers",
            field="scores",
            limit="a square array of real numbers (value: its type)",
            value=type(scores).__name__,
        ) from None
    if s.ndim != 2 or s.shape[0] != s.shape[1] or s.shape[0] == 0:
        raise ParameterError(
            f"must be a non-empty square matrix, got {s.shape}",
            field="scores",
            limit="a non-empty square matrix (value: its shape)",
            value=s.shape,
        )
    if not np.all(np.isfinite(s)) or np.any(s < 0.0) or np.any(s > 1.0):
        raise ParameterError(
            "entries must be finite and in [0, 1]",
            field="scores",
            limit="entries finite and in [0, 1] (value: the first bad one)",
            value=float(s[~(np.isfinite(s) & (s >= 0.0) & (s <= 1.0))][0]),
        )
    if not np.array_equal(s, s.T):
        raise ParameterError(
            "must be symmetric",
            field="scores",
            limit="symmetric (value: the first (i, j) with s[i, j] != s[j, i])",
            value=tuple(int(i) for i in np.argwhere(s != s.T)[0]),
        )
    return s


def degree_capped_edges(
    scores: np.ndarray, tau: float, degree_cap: int
) -> tuple[np.ndarray, tuple[tuple[int, int], ...]]:
    """Steps 3-4: the capped weight matrix W and the accepted edges."""
    m = scores.shape[0]
    rows, cols = np.triu_indices(m, k=1)
    vals = scores[rows, cols]
    keep = vals >= tau
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    order = np.lexsort((cols, rows, -vals))  # primary: -S; ties: i, then j
    weights = np.zeros((m, m))
    edge_count = np.zeros(m, dtype=int)
    accepted: list[tuple[int, int]] = []
    for idx in order:
        i, j = int(rows[idx]), int(cols[idx])
        if edge_count[i] < degree_cap and edge_count[j] < degree_cap and vals[idx] > 0.0:
            weights[i, j] = weights[j, i] = vals[idx]
            edge_count[i] += 1
            edge_count[j] += 1
            accepted.append((i, j))
    return weights, tuple(accepted)


def normalized_adjacency(weights: np.ndarray) -> np.ndarray:
    """Step 5: ``D^{-1/2} W D^{-1/2}``, zero inverse degree for isolated nodes."""
    deg = weights.sum(axis=1)
    inv_sqrt = np.zeros_like(deg)
    positive = deg > 0.0
    inv_sqrt[positive] = 1.0 / np.sqrt(deg[positive])
    return inv_sqrt[:, None] * weights * inv_sqrt[None, :]


def smoothed_exposure(
    weights: np.ndarray, normalized: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 6-8: (weighted degree d, exposure r, min-max normalised r_bar)."""
    deg = weights.sum(axis=1)
    exposure = alpha * deg + (1.0 - alpha) * (normalized @ deg)
    spread = exposure.max() - exposure.min()
    if spread > 0.0:
        norm = np.clip((exposure - exposure.min()) / spread, 0.0, 1.0)
    else:
        norm = np.zeros_like(exposure)
    return deg, exposure, norm


def build_calibration_graph(
    scores: object, tau: float = 0.15, degree_cap: int = 5, alpha: float = 0.7
) -> CalibrationGraph:
    """Algorithm 1 steps 3-9 on a given score matrix (public or already released privately).

    A pair with ``S_ij = 0`` is never an edge, even at ``tau = 0`` (it carries no weight)."""
    s = _check_scores(scores)
    threshold = real_in_range(tau, "tau", 0.0, 1.0)
    cap = integer_at_least(degree_cap, "degree_cap", 1)
    smoothing = real_in_range(alpha, "alpha", 0.0, 1.0)
    weights, edges = degree_capped_edges(s, threshold, cap)
    normalized = normalized_adjacency(weights)
    deg, exposure, norm = smoothed_exposure(weights, normalized, smoothing)
    for arr in (s, weights, normalized, deg, exposure, norm):
        arr.setflags(write=False)
    return CalibrationGraph(
        scores=s,
        weights=weights,
        normalized=normalized,
        edges=edges,
        degree=deg,
        exposure=exposure,
        exposure_norm=norm,
    )


def calibrate_from_data(
    data: object,
    *,
    lag_window: int = 3,
    lam: float = 0.6,
    tau: float = 0.15,
    degree_cap: int = 5,
    alpha: float = 0.7,
    bounds: tuple[object, object] | None = None,
) -> CalibrationGraph:
    """All of Algorithm 1 on a public calibration matrix (time x nodes)."""
    scores = lagged_abs_pearson(data, lag_window=lag_window, lam=lam, bounds=bounds)
    return build_calibration_graph(scores, tau=tau, degree_cap=degree_cap, alpha=alpha)
