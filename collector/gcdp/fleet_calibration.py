"""GC-DP calibration for a fleet of sensor nodes (Algorithms 1-3 on public data).

Theory of operation. The fleet path (docs/gcdp-fleet.md) has M sensor nodes, one device
each, streaming readings clipped to FIXED public per-channel bounds and normalised to
[0, 1]. The collector releases, for every complete non-overlapping window of ``window``
steps, the M node means: d = M coordinates with a(k) = {k}. The protected unit is one
clipped channel value at one timestamp, Gamma(u) = {u}, so one unit moves one coordinate by
at most 1/window: the certificate is B_k = ``mean_bound(0, 1, window)`` (Algorithm 2).

``calibrate_fleet`` fixes the public parameter object theta BEFORE any protected value is
seen, from a PUBLIC calibration matrix laid out like the fleet (time x M nodes, [0, 1]
units), so eps_cal = 0:

1. Algorithm 1: ``calibrate_from_data`` (Table 5 constants, threshold ``tau``) gives the
   graph, its edges and the normalised exposure r_bar;
2. Algorithm 2: ``window_masking_deltas(unit="occurrence")``, the query "displacement of a
   window mean by one masked occurrence" (column means / window, as ``bench gcdp``'s
   default Occupancy reading), then
   ``empirical_influence`` and ``release_scales`` s_k = max(B_k, xi_k) >= B_k;
3. utility mu_k: |corr(window mean of node k, its window majority label)| on the calibration
   windows when public labels are given (``labels``, time x M: node k's room label), else
   mu = 1 for every node (no task preference);
4. Algorithm 3: ``allocate_budget`` with its defaults (method ``gcdp``), or Lap-DP's
   s = B with the uniform split (method ``lap``).

The result is checked against Theorem 1 once (``check_release_parameters``), so a release
with it can never be refused after the ledger was charged. Pure: no I/O, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ldpfleet.collector.gcdp.allocation import allocate_budget, uniform_allocation
from ldpfleet.collector.gcdp.evaluation import label_utility, window_means
from ldpfleet.collector.gcdp.graph import calibrate_from_data
from ldpfleet.collector.gcdp.sensitivity import (
    empirical_influence,
    mean_bound,
    release_scales,
    window_masking_deltas,
)
from ldpfleet.collector.gcdp.validate import check_release_parameters, positive_real, real_in_range
from ldpfleet.protocol.errors import ParameterError

__all__ = ["ADJACENCY", "FLEET_METHODS", "FleetTheta", "calibrate_fleet"]

ADJACENCY = "one clipped channel value at one timestamp; Gamma(u)={u}"
FLEET_METHODS = ("gcdp", "lap")


@dataclass(frozen=True)
class FleetTheta:
    """The fixed public parameter object of a fleet's window releases.

    ``bounds`` B_k, ``scales`` s_k, ``budgets`` eps_k (sum <= ``eps_rel``), ``utility`` mu_k
    and ``exposure_norm`` r_bar (length M), the calibration graph's ``edges`` (i < j),
    ``eps_cal`` (0: public calibration) and the declared ``adjacency``."""

    method: str
    window: int
    eps_rel: float
    eps_cal: float
    tau: float
    bounds: np.ndarray
    scales: np.ndarray
    budgets: np.ndarray
    utility: np.ndarray
    exposure_norm: np.ndarray
    edges: tuple[tuple[int, int], ...]
    adjacency: str = ADJACENCY

    @property
    def d(self) -> int:
        """Coordinates per release (= nodes)."""
        return int(self.bounds.size)

    def to_dict(self) -> dict:
        """Plain data for results.json."""
        return {
            "method": self.method,
            "window": self.window,
            "eps_rel": self.eps_rel,
            "eps_cal": self.eps_cal,
            "tau": self.tau,
            "adjacency": self.adjacency,
            "bounds": self.bounds.tolist(),
            "scales": self.scales.tolist(),
            "budgets": self.budgets.tolist(),
            "utility": self.utility.tolist(),
            "exposure_norm": self.exposure_norm.tolist(),
            "edges": [list(edge) for edge in self.edges],
        }


def _check_calibration(data: object, window: int) -> np.ndarray:
    x = np.array(data, dtype=float)
    if x.ndim != 2 or x.shape[1] == 0:
        raise ParameterError(
            f"must be a 2-D array (time x nodes), got shape {x.shape}",
            field="data",
            limit="a 2-D array (time x nodes) (value: its shape)",
            value=x.shape,
        )
    if not np.all(np.isfinite(x)) or np.any(x < 0.0) or np.any(x > 1.0):
        raise ParameterError(
            "entries must be finite and in [0, 1] (clipped, normalised)",
            field="data",
            limit="entries finite and in [0, 1] (value: the first bad one)",
            value=float(x[~(np.isfinite(x) & (x >= 0.0) & (x <= 1.0))][0]),
        )
    if x.shape[0] < window:
        raise ParameterError(
            f"{x.shape[0]} calibration records are fewer than one window ({window})",
            field="data",
            limit=f"at least one window ({window}) of records (value: the record count)",
            value=x.shape[0],
        )
    return x


def _utility(x: np.ndarray, labels: object | None, window: int) -> np.ndarray:
    m = x.shape[1]
    if labels is None:
        return np.ones(m)
    lab = np.array(labels, dtype=float)
    if lab.ndim == 1:
        lab = np.repeat(lab[:, None], m, axis=1)
    if lab.shape != x.shape or not np.all(np.isin(lab, (0.0, 1.0))):
        raise ParameterError(
            f"must be 0/1 with shape {x.shape} (or {x.shape[0]},)",
            field="labels",
            limit=f"0/1 with shape {x.shape} (or {x.shape[0]},) (value: shape or first non-0/1)",
            value=lab.shape if lab.shape != x.shape else float(lab[~np.isin(lab, (0.0, 1.0))][0]),
        )
    mu = np.empty(m)
    for k in range(m):
        feats, win_labels = window_means(x[:, [k]], lab[:, k].astype(int), window)
        mu[k] = float(label_utility(feats, win_labels)[0])
    return mu


def calibrate_fleet(
    data: object,
    *,
    window: int,
    eps_rel: float,
    method: str = "gcdp",
    tau: float = 0.15,
    labels: object | None = None,
) -> FleetTheta:
    """Theta from PUBLIC calibration ``data`` (time x M nodes in [0, 1]); see the module
    docstring. ``ParameterError`` names the field on bad input."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ParameterError(
            f"must be an integer >= 1, got {window!r}",
            field="window",
            limit="an integer >= 1",
            value=window,
        )
    total = positive_real(eps_rel, "eps_rel")
    if method not in FLEET_METHODS:
        raise ParameterError(
            f"must be one of {FLEET_METHODS}, got {method!r}",
            field="method",
            limit=f"one of {FLEET_METHODS}",
            value=method,
        )
    threshold = real_in_range(tau, "tau", 0.0, 1.0)
    x = _check_calibration(data, window)
    m = x.shape[1]
    bounds = np.full(m, mean_bound(0.0, 1.0, window))
    graph = calibrate_from_data(x, tau=threshold)
    deltas = window_masking_deltas(x, window, unit="occurrence")
    xi = empirical_influence(deltas, graph)
    utility = _utility(x, labels, window)
    if method == "gcdp":
        scales = release_scales(bounds, xi)
        budgets = allocate_budget(total, scales, utility, graph.exposure_norm)
    else:
        scales = bounds.copy()
        budgets = uniform_allocation(total, m)
    check_release_parameters(bounds, scales, budgets, total)  # Theorem 1, once, up front
    return FleetTheta(
        method=method,
        window=window,
        eps_rel=total,
        eps_cal=0.0,
        tau=threshold,
        bounds=bounds,
        scales=scales,
        budgets=budgets,
        utility=utility,
        exposure_norm=np.asarray(graph.exposure_norm, dtype=float),
        edges=tuple((int(i), int(j)) for i, j in graph.edges),
    )
