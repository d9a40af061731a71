"""Utility-guided budget allocation with a floor — Algorithm 3 (seed 000, Section 4.4,
Proposition 2), with the Ada-DP and Risk-DP reductions and the uniform (Lap-DP) split.

Theory of operation. Coordinate k gets exposure ``r_k^(q) = mean_{i in a(k)} r_bar_i``,
penalty ``p_k = (r_k^(q) + rho)^beta_r (s_k + eta)^beta_g``, utility weight
``u_k = (mu_k + eta)^beta_u`` and ``h_k = u_k / (p_k + eta) > 0``; then

    eps_k = eps_min + (eps_rel - d eps_min) h_k / sum_j h_j,     0 < eps_min < eps_rel / d.

Proposition 2: every ``eps_k >= eps_min`` and ``sum_k eps_k = eps_rel`` (in exact
arithmetic). In floating point the sum can land a rounding error ABOVE ``eps_rel``; the
allocator then lowers the largest share by the excess (``validate.exact_excess``, whose
sign is exact) until the vector's EXACT sum is ``<= eps_rel``; no share drops below the
floor (the largest share is ``>= eps_rel / d > eps_min``). ``beta_r = 0`` removes exposure
(Ada-DP, utility only); ``beta_u = 0`` removes utility (Risk-DP, exposure only). The
allocation is post-processing of the fixed (public) parameter object theta; it never reads
protected data.

Deviation from the seed (documented in docs/gcdp.md, "Exposure offset"): the seed writes the
exposure factor as ``(r_k^(q) + eta)^beta_r`` with ``eta = 1e-8``. Min-max normalisation
(§4.1) always gives some node ``r_bar = 0``, so that coordinate's weight is ~1/eta = 1e8 times
any other and it takes the whole budget above the floor, whatever its utility (measured on
Occupancy: budgets [0.992, 0.002, ...] at eps = 1, task F1 44 at every eps). We add the offset
``rho = exposure_offset`` (default 1.0) instead of eta, which bounds the exposure effect to a
factor ``(1 + rho)^beta_r / rho^beta_r = 2^beta_r`` between the least and the most exposed
coordinate, the same order as the utility factor's range. ``exposure_offset = eta`` is the
seed's formula exactly. Theorem 1 and Proposition 2 do not depend on it (any ``h_k > 0``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from ldpfleet.collector.gcdp.constants import eps_min_for
from ldpfleet.collector.gcdp.sensitivity import coordinate_nodes
from ldpfleet.collector.gcdp.validate import (
    check_allocation_floor,
    exact_excess,
    integer_at_least,
    nonnegative_vector,
    positive_real,
    real_in_range,
    unit_vector,
)

__all__ = [
    "ada_allocation",
    "allocate_budget",
    "allocation_weights",
    "coordinate_exposure",
    "fit_total",
    "risk_allocation",
    "uniform_allocation",
]


def fit_total(budgets: np.ndarray, eps_rel: float) -> np.ndarray:
    """Lower the largest entry until the exact sum is ``<= eps_rel`` (a rounding repair)."""
    out = np.array(budgets, dtype=float)
    for _ in range(64):
        excess = exact_excess(out, eps_rel)
        if excess <= 0.0:
            return out
        k = int(np.argmax(out))
        out[k] = min(out[k] - excess, np.nextafter(out[k], 0.0))
    raise AssertionError("budget rounding repair did not converge")  # pragma: no cover


def coordinate_exposure(
    exposure_norm: object, d: int, coordinate_map: Sequence[Sequence[int]] | None = None
) -> np.ndarray:
    """``r_k^(q)``: the mean normalised node exposure over ``a(k)``."""
    r_bar = unit_vector(exposure_norm, "exposure")
    amap = coordinate_nodes(coordinate_map, d, r_bar.size)
    return np.array([float(np.mean(r_bar[list(nodes)])) for nodes in amap])


def allocation_weights(
    coord_exposure: np.ndarray,
    scales: np.ndarray,
    utility: np.ndarray,
    *,
    beta_r: float,
    beta_g: float,
    beta_u: float,
    eta: float,
    exposure_offset: float,
) -> np.ndarray:
    """Steps 3-4: ``h_k = u_k / (p_k + eta)`` (all > 0), with
    ``p_k = (r_k + exposure_offset)^beta_r (s_k + eta)^beta_g``."""
    penalty = (coord_exposure + exposure_offset) ** beta_r * (scales + eta) ** beta_g
    return (utility + eta) ** beta_u / (penalty + eta)


def allocate_budget(
    eps_rel: float,
    scales: object,
    utility: object,
    exposure_norm: object,
    coordinate_map: Sequence[Sequence[int]] | None = None,
    *,
    eps_min: float | None = None,
    beta_r: float = 1.0,
    beta_g: float = 1.0,
    beta_u: float = 0.7,
    eta: float = 1e-8,
    exposure_offset: float = 1.0,
) -> np.ndarray:
    """Algorithm 3. ``scales`` are the ``s_k`` (length d), ``utility`` the ``mu_k`` in
    [0, 1] (length d), ``exposure_norm`` the node scores ``r_bar`` in [0, 1] (length M);
    ``eps_min`` defaults to Table 5's ``eps_rel / (100 d)``. ``exposure_offset`` is added to
    the coordinate exposure in the penalty (default 1.0; pass ``eta`` for the seed's literal
    formula, see the module docstring)."""
    total = positive_real(eps_rel, "eps_rel")
    s = nonnegative_vector(scales, "scales")
    d = s.size
    mu = unit_vector(utility, "utility", d)
    r_q = coordinate_exposure(exposure_norm, d, coordinate_map)
    floor = check_allocation_floor(eps_min_for(total, d) if eps_min is None else eps_min, total, d)
    exps = {
        name: real_in_range(value, name, 0.0, math.inf, high_open=True)
        for name, value in (("beta_r", beta_r), ("beta_g", beta_g), ("beta_u", beta_u))
    }
    h = allocation_weights(
        r_q,
        s,
        mu,
        eta=positive_real(eta, "eta"),
        exposure_offset=positive_real(exposure_offset, "exposure_offset"),
        **exps,
    )
    budgets = floor + (total - d * floor) * (h / h.sum())
    return fit_total(budgets, total)


def ada_allocation(eps_rel: float, scales: object, utility: object, **kwargs) -> np.ndarray:
    """Ada-DP: Algorithm 3 with ``beta_r = 0`` (utility-aware, exposure ignored)."""
    d = nonnegative_vector(scales, "scales").size
    return allocate_budget(eps_rel, scales, utility, np.zeros(d), None, beta_r=0.0, **kwargs)


def risk_allocation(
    eps_rel: float,
    scales: object,
    exposure_norm: object,
    coordinate_map: Sequence[Sequence[int]] | None = None,
    **kwargs,
) -> np.ndarray:
    """Risk-DP: Algorithm 3 with ``beta_u = 0`` (exposure-aware, utility ignored)."""
    d = nonnegative_vector(scales, "scales").size
    return allocate_budget(
        eps_rel, scales, np.zeros(d), exposure_norm, coordinate_map, beta_u=0.0, **kwargs
    )


def uniform_allocation(eps_rel: float, d: int) -> np.ndarray:
    """Lap-DP's split ``eps_rel / d`` per coordinate, exact sum ``<= eps_rel``."""
    total = positive_real(eps_rel, "eps_rel")
    n = integer_at_least(d, "d", 1)
    return fit_total(np.full(n, total / n), total)
