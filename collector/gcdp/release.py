"""Graph-calibrated Laplace release — Algorithm 4 (seed 000, Section 4.5, Theorem 1).

Theory of operation. Given a fixed (public) parameter object — certified bounds ``B_k``,
scale numerators ``s_k`` and budgets ``eps_k`` — the release first REFUSES anything outside
Theorem 1's conditions (``validate.check_release_parameters``), then for every coordinate
projects ``y_k = Pi_k(q_k(D))`` onto its fixed interval ``[L_k, U_k]`` and releases

    y_hat_k = y_k + Z_k,   Z_k ~ Laplace(0, s_k / eps_k) independently.

The noise is exact (``protocol.samplers.laplace_on_grid``, grid g = 2**-20; floating-point
``rng.laplace`` leaks the input through its low bits, Mironov CCS 2012): ``y_k`` is rounded
to the grid and a discrete Laplace multiple of g is added. Rounding can move two
neighbouring values apart by up to g more, so the scale is ``(s_k + g) / eps_k``
(``grid_laplace_scale``), which keeps every coordinate's ratio bound ``e^eps_k`` exactly.

For neighbours ``D ~G0 D'`` the density ratio is at most
``exp(sum_k eps_k |y_k - y'_k| / s_k) <= exp(sum_k eps_k) <= exp(eps_rel)`` because
``|y_k - y'_k| <= Delta_k <= B_k <= s_k``. A coordinate with ``s_k = 0`` (certified constant)
is released without noise, as the theorem allows. Randomness comes only from the injected
``numpy.random.Generator`` (one exact draw per noisy coordinate); the function is pure.

Batches. ``values`` may be an ``n x d`` matrix: row ``t`` is the answer of invocation ``t``
(e.g. one disjoint window each) released with the same fixed theta, so every row is its own
eps_rel-DP release (parallel composition is the caller's claim, as for n separate calls).
Each coordinate's n draws come from one vectorised exact sampler call; a 1-D ``values``
consumes the generator exactly as before.
"""

from __future__ import annotations

import numpy as np
from ldpfleet.collector.gcdp.validate import check_release_parameters, finite_answers, finite_vector
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.samplers import GRID, grid_laplace_scale, laplace_on_grid

__all__ = ["laplace_release", "project"]


def project(values: object, low: object, high: object) -> np.ndarray:
    """``Pi_k``: clip each coordinate to its fixed public interval ``[low_k, high_k]``
    (``values`` of length d, or an ``n x d`` matrix of n answers)."""
    y = finite_answers(values, "values")
    d = y.shape[-1]
    lo = finite_vector(np.broadcast_to(np.asarray(low, dtype=float), (d,)), "low", d)
    hi = finite_vector(np.broadcast_to(np.asarray(high, dtype=float), (d,)), "high", d)
    bad = np.flatnonzero(hi < lo)
    if bad.size:
        k = int(bad[0])
        raise ParameterError(
            f"must be >= low[{k}] = {lo[k]!r}, got {hi[k]!r}",
            field=f"high[{k}]",
            limit=f">= low[{k}] = {float(lo[k])!r}",
            value=float(hi[k]),
        )
    return np.clip(y, lo, hi)


def laplace_release(
    values: object,
    *,
    bounds: object,
    scales: object,
    budgets: object,
    eps_rel: float,
    low: object,
    high: object,
    rng: np.random.Generator,
) -> np.ndarray:
    """Algorithm 4: the eps_rel-DP release of the query answer ``values`` (length d), or of
    n answers with the same theta (an ``n x d`` matrix, one release per row)."""
    params = check_release_parameters(bounds, scales, budgets, eps_rel)
    y = project(values, low, high)
    if y.shape[-1] != params.d:
        raise ParameterError(
            f"must have d = {params.d} entries, got {y.shape[-1]}",
            field="values",
            limit=f"d = {params.d} entries (value: the count)",
            value=y.shape[-1],
        )
    out = y.copy()
    for k in np.flatnonzero(params.scales > 0.0):  # exact noise, one coordinate at a time
        scale = grid_laplace_scale(float(params.scales[k]), float(params.budgets[k]), GRID)
        out[..., k] = laplace_on_grid(rng, y[..., k], scale, GRID)
    return out
