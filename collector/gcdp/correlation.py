"""Lag-aware absolute-Pearson dependence scores — Algorithm 1 steps 1-2 (seed 000, Section 4.1).

Theory of operation. For channels (graph nodes) i, j of a calibration matrix ``X`` (N rows =
time, M columns = nodes), ``rho_ij^(l)`` is the absolute Pearson correlation of the aligned
pairs ``(x_{t,i}, x_{t+l,j})``; it is 0 when fewer than two aligned pairs remain or either
aligned series is constant (zero variance). The bounded score is

    S_ij = lam * rho_ij^(0) + (1 - lam) * max_{|l| <= L} rho_ij^(l)      in [0, 1].

Negative lags need no extra work: ``rho_ij^(-l) = rho_ji^(l)``, so one centred matrix product
per lag ``l = 0 .. L`` gives every pair at once (vectorised over all pairs; ``L + 1`` products,
cost ``O(M^2 (L + 1) N)``, as in the paper's direct computation). The matrix is exactly
symmetric (the upper triangle is mirrored) with a zero diagonal. The scores are
post-processing of public (or already privately released) calibration data: this module
never touches protected records.
"""

from __future__ import annotations

import numpy as np
from ldpfleet.collector.gcdp.validate import integer_at_least, real_in_range
from ldpfleet.protocol.errors import ParameterError

__all__ = ["lagged_abs_pearson", "lagged_correlations"]


def _check_matrix(data: object, bounds: tuple[object, object] | None) -> np.ndarray:
    try:
        x = np.array(data, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(
            "must be a 2-D array of real numbers",
            field="data",
            limit="a 2-D array of real numbers (value: its type)",
            value=type(data).__name__,
        ) from None
    if x.ndim != 2 or x.shape[1] == 0:
        raise ParameterError(
            f"must be 2-D (time x nodes), got shape {x.shape}",
            field="data",
            limit="a 2-D array (time x nodes) (value: its shape)",
            value=x.shape,
        )
    if not np.all(np.isfinite(x)):
        raise ParameterError(
            "must be finite (remove or interpolate gaps first)",
            field="data",
            limit="finite (value: the first non-finite one)",
            value=float(x[~np.isfinite(x)][0]),
        )
    if bounds is not None:  # Algorithm 1 step 1: fixed public bounded normalisation
        low = np.broadcast_to(np.asarray(bounds[0], dtype=float), x.shape[1:])
        high = np.broadcast_to(np.asarray(bounds[1], dtype=float), x.shape[1:])
        bad = np.flatnonzero(~(np.isfinite(low) & np.isfinite(high) & (low < high)))
        if bad.size:
            k = int(bad[0])
            raise ParameterError(
                "must be finite with low < high per node",
                field="bounds",
                limit="finite with low < high per node (value: the first bad (low, high))",
                value=(float(low[k]), float(high[k])),
            )
        x = np.clip(x, low, high)
    return x


def _abs_corr_at_lag(x: np.ndarray, lag: int) -> np.ndarray:
    """``|corr(x_{t,i}, x_{t+lag,j})|`` for all (i, j), 0 where undefined."""
    n = x.shape[0] - lag
    m = x.shape[1]
    if n < 2:
        return np.zeros((m, m))
    a, b = x[:n], x[lag:]
    const_a = np.ptp(a, axis=0) == 0.0
    const_b = np.ptp(b, axis=0) == 0.0
    ac = a - a.mean(axis=0)
    bc = b - b.mean(axis=0)
    norm_a = np.sqrt(np.einsum("ti,ti->i", ac, ac))
    norm_b = np.sqrt(np.einsum("ti,ti->i", bc, bc))
    norm_a[const_a | (norm_a == 0.0)] = np.inf  # zero variance -> correlation 0
    norm_b[const_b | (norm_b == 0.0)] = np.inf
    corr = (ac.T @ bc) / np.outer(norm_a, norm_b)
    return np.clip(np.abs(corr), 0.0, 1.0)


def lagged_correlations(data: object, lag_window: int) -> np.ndarray:
    """Stack ``R[l + L, i, j] = rho_ij^(l)`` for ``l = -L .. L`` (shape ``(2L+1, M, M)``)."""
    x = _check_matrix(data, None)
    lags = integer_at_least(lag_window, "lag_window", 0)
    peak = np.max(np.abs(x), axis=0)
    x = x / np.where(peak > 0.0, peak, 1.0)  # Pearson is scale-free; avoids over/underflow
    forward = np.stack([_abs_corr_at_lag(x, lag) for lag in range(lags + 1)])
    backward = np.transpose(forward[:0:-1], (0, 2, 1))  # rho^(-l) = (rho^(l))^T
    return np.concatenate([backward, forward])


def lagged_abs_pearson(
    data: object,
    lag_window: int = 3,
    lam: float = 0.6,
    bounds: tuple[object, object] | None = None,
) -> np.ndarray:
    """The score matrix ``S`` (M x M, symmetric, zero diagonal, entries in [0, 1]).

    ``bounds = (low, high)`` clips each node to its fixed public range first (step 1)."""
    weight = real_in_range(lam, "lam", 0.0, 1.0)
    x = _check_matrix(data, bounds)
    stacked = lagged_correlations(x, lag_window)
    lags = (stacked.shape[0] - 1) // 2
    scores = weight * stacked[lags] + (1.0 - weight) * stacked.max(axis=0)
    upper = np.triu(np.clip(scores, 0.0, 1.0), k=1)
    return upper + upper.T
