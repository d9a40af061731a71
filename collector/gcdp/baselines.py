"""The release methods of seed 000, Table 4 (Section 5.1), as plain functions.

Theory of operation. All pure-eps methods share the certified bounds ``B_k`` and the total
``eps_rel`` and differ only in the scale numerators ``s_k`` and the split ``eps_k``; every one
goes through Algorithm 4 (``release.laplace_release``), so every one is refused on the same
Theorem 1 conditions:

* ``non_private`` — the projected answer, no noise, NO privacy guarantee;
* ``lap_dp`` — ``s_k = B_k``, uniform ``eps_k = eps_rel / d``;
* ``gau_dp`` — (eps, delta)-DP, NOT pure eps: an exact discrete Gaussian on a fine grid
  on every coordinate, sigma from zCDP accounting (``gaussian``) for the l2 certificate
  ``sqrt(sum B_k^2)`` or the caller's tighter one; an empirical comparator only;
* ``ada_dp`` — Algorithm 3 with ``beta_r = 0`` (utility-aware, exposure ignored);
* ``risk_dp`` — Algorithm 3 with ``beta_u = 0`` (exposure-aware, utility ignored);
* ``gc_dp`` — the full Algorithm 3 + 4 release.

The caller chooses ``scales`` for the adaptive methods: ``s_k = max(B_k, xi_k)`` from
Algorithm 2 for GC-DP; Table 4 says Risk-DP "omits graph-compressed expanded influence", i.e.
passes ``scales = bounds``. Randomness only from the injected generator.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ldpfleet.collector.gcdp.allocation import allocate_budget, uniform_allocation
from ldpfleet.collector.gcdp.gaussian import gaussian_grid, gaussian_on_grid
from ldpfleet.collector.gcdp.release import laplace_release, project
from ldpfleet.collector.gcdp.sensitivity import l2_certificate
from ldpfleet.collector.gcdp.validate import nonnegative_vector, positive_real, real_in_range

__all__ = ["ada_dp", "gau_dp", "gc_dp", "lap_dp", "non_private", "risk_dp"]


def non_private(values: object, low: object, high: object) -> np.ndarray:
    """NonPrivate: the projected answer ``Pi_k(q_k(D))`` (no privacy)."""
    return project(values, low, high)


def lap_dp(
    values: object,
    *,
    bounds: object,
    eps_rel: float,
    low: object,
    high: object,
    rng: np.random.Generator,
) -> np.ndarray:
    """Lap-DP: certified bounds, uniform budgets, Laplace release (eps_rel-DP)."""
    b = nonnegative_vector(bounds, "bounds")
    budgets = uniform_allocation(eps_rel, b.size)
    return laplace_release(
        values, bounds=b, scales=b, budgets=budgets, eps_rel=eps_rel, low=low, high=high, rng=rng
    )


def gau_dp(
    values: object,
    *,
    bounds: object,
    eps: float,
    delta: float,
    low: object,
    high: object,
    rng: np.random.Generator,
    l2_sensitivity: float | None = None,
    changed_coordinates: int | None = None,
    calibration: str = "zcdp",
) -> np.ndarray:
    """Gau-DP: Gaussian noise for an l2 certificate ((eps, delta)-DP; a coordinate-free
    mechanism, so every coordinate gets the same sigma), drawn EXACTLY: the projected
    answer rounded to a fine grid plus a discrete Gaussian on it (``gaussian.gaussian_grid``
    and ``gaussian_on_grid``; zCDP accounting, CKS 2020). The certificate is
    ``l2_sensitivity`` when given (e.g. ``occurrence_l2_certificate``, the caller's proof
    obligation; it must not exceed ``sqrt(sum B_k^2)``, which is always valid), else
    ``sqrt(sum B_k^2)`` of ``bounds``. ``changed_coordinates`` is the most coordinates of
    one answer (one row of an n x d ``values``) that one protected unit can move (default
    d, always valid; the rounding costs ``sqrt`` of it in grid units of sensitivity).
    ``calibration`` picks the sigma (``gaussian.CALIBRATIONS``; ``"zcdp"`` is the
    certified minimum)."""
    y = project(values, low, high)
    d = y.shape[-1]
    sens = l2_certificate(nonnegative_vector(bounds, "bounds", d))
    if l2_sensitivity is not None:
        given = real_in_range(
            l2_sensitivity, "l2_sensitivity", 0.0, sens * (1.0 + 1e-12), low_open=sens > 0.0
        )
        sens = min(given, sens)
    positive_real(eps, "eps")
    real_in_range(delta, "delta", 0.0, 1.0, low_open=True, high_open=True)
    changed = d if changed_coordinates is None else changed_coordinates
    if sens == 0.0:  # every coordinate certified constant
        return y
    noise = gaussian_grid(eps, delta, sens, changed, calibration)
    return gaussian_on_grid(rng, y, noise)


def gc_dp(
    values: object,
    *,
    bounds: object,
    scales: object,
    utility: object,
    exposure_norm: object,
    eps_rel: float,
    low: object,
    high: object,
    rng: np.random.Generator,
    coordinate_map: Sequence[Sequence[int]] | None = None,
    **allocation: float,
) -> np.ndarray:
    """GC-DP: Algorithm 3 allocation (keyword overrides: ``eps_min``, ``beta_r``,
    ``beta_g``, ``beta_u``, ``eta``) then the Algorithm 4 release."""
    budgets = allocate_budget(eps_rel, scales, utility, exposure_norm, coordinate_map, **allocation)
    return laplace_release(
        values,
        bounds=bounds,
        scales=scales,
        budgets=budgets,
        eps_rel=eps_rel,
        low=low,
        high=high,
        rng=rng,
    )


def ada_dp(
    values: object,
    *,
    bounds: object,
    scales: object,
    utility: object,
    eps_rel: float,
    low: object,
    high: object,
    rng: np.random.Generator,
    **allocation: float,
) -> np.ndarray:
    """Ada-DP: the GC-DP release with ``beta_r = 0`` (exposure plays no part)."""
    d = nonnegative_vector(scales, "scales").size
    return gc_dp(
        values,
        bounds=bounds,
        scales=scales,
        utility=utility,
        exposure_norm=np.zeros(d),
        eps_rel=eps_rel,
        low=low,
        high=high,
        rng=rng,
        **{**allocation, "beta_r": 0.0},
    )


def risk_dp(
    values: object,
    *,
    bounds: object,
    scales: object,
    exposure_norm: object,
    eps_rel: float,
    low: object,
    high: object,
    rng: np.random.Generator,
    coordinate_map: Sequence[Sequence[int]] | None = None,
    **allocation: float,
) -> np.ndarray:
    """Risk-DP: the GC-DP release with ``beta_u = 0`` (utility plays no part)."""
    d = nonnegative_vector(scales, "scales").size
    return gc_dp(
        values,
        bounds=bounds,
        scales=scales,
        utility=np.zeros(d),
        exposure_norm=exposure_norm,
        eps_rel=eps_rel,
        low=low,
        high=high,
        rng=rng,
        coordinate_map=coordinate_map,
        **{**allocation, "beta_u": 0.0},
    )
