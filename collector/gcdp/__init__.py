"""GC-DP — graph-calibrated differential privacy for correlated IoT channels (seed 000).

The pure, synchronous math core: Algorithm 1 (``graph``), Algorithm 2 (``sensitivity``),
Algorithm 3 (``allocation``), Algorithm 4 (``release``), the theorem-condition checks
(``validate``), the analytic Gaussian mechanism (``gaussian``) and the Table 4 baselines
(``baselines``), in public-calibration mode (eps_cal = 0) or private-calibration mode with
composed accounting (``private_calibration``, Section 4.2), and GC-DP-Cache with its
drift monitor (``cache``); see ``docs/gcdp.md``. The fleet path (``fleet_calibration``:
theta for M sensor nodes from public data; ``windows``: window formation and the ordered,
ledger-charged window release) is described in ``docs/gcdp-fleet.md``.
"""

from __future__ import annotations

from ldpfleet.collector.gcdp.allocation import (
    ada_allocation,
    allocate_budget,
    fit_total,
    risk_allocation,
    uniform_allocation,
)
from ldpfleet.collector.gcdp.baselines import ada_dp, gau_dp, gc_dp, lap_dp, non_private, risk_dp
from ldpfleet.collector.gcdp.cache import (
    CachedCalibration,
    CacheDecision,
    DriftMonitor,
    summary_distance,
)
from ldpfleet.collector.gcdp.constants import GcdpConstants, eps_min_for
from ldpfleet.collector.gcdp.correlation import lagged_abs_pearson
from ldpfleet.collector.gcdp.fleet_calibration import ADJACENCY, FleetTheta, calibrate_fleet
from ldpfleet.collector.gcdp.gaussian import (
    GaussianGrid,
    analytic_discrete_sigma2,
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    discrete_gaussian,
    discrete_gaussian_delta,
    gaussian_grid,
    gaussian_on_grid,
    zcdp_delta,
    zcdp_rho,
)
from ldpfleet.collector.gcdp.graph import (
    CalibrationGraph,
    build_calibration_graph,
    calibrate_from_data,
)
from ldpfleet.collector.gcdp.private_calibration import (
    PrivateCalibration,
    PrivateCalibrationRelease,
    PrivateTheta,
)
from ldpfleet.collector.gcdp.release import laplace_release, project
from ldpfleet.collector.gcdp.sensitivity import (
    clipped_range_bound,
    compression_set,
    count_bound,
    empirical_influence,
    histogram_bound,
    l2_certificate,
    masking_deltas,
    mean_bound,
    occurrence_l2_certificate,
    release_scales,
    window_masking_deltas,
)
from ldpfleet.collector.gcdp.validate import (
    ReleaseParameters,
    check_release_parameters,
    exact_excess,
)
from ldpfleet.collector.gcdp.windows import (
    GcdpReleaser,
    ReleaseRefused,
    WindowAssembler,
    WindowReleased,
)

__all__ = [
    "ADJACENCY",
    "CacheDecision",
    "CachedCalibration",
    "CalibrationGraph",
    "DriftMonitor",
    "FleetTheta",
    "GaussianGrid",
    "GcdpConstants",
    "GcdpReleaser",
    "PrivateCalibration",
    "PrivateCalibrationRelease",
    "PrivateTheta",
    "ReleaseParameters",
    "ReleaseRefused",
    "WindowAssembler",
    "WindowReleased",
    "ada_allocation",
    "ada_dp",
    "allocate_budget",
    "analytic_discrete_sigma2",
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "build_calibration_graph",
    "calibrate_fleet",
    "calibrate_from_data",
    "check_release_parameters",
    "clipped_range_bound",
    "compression_set",
    "count_bound",
    "discrete_gaussian",
    "discrete_gaussian_delta",
    "empirical_influence",
    "eps_min_for",
    "exact_excess",
    "fit_total",
    "gau_dp",
    "gaussian_grid",
    "gaussian_on_grid",
    "gc_dp",
    "histogram_bound",
    "l2_certificate",
    "lagged_abs_pearson",
    "lap_dp",
    "laplace_release",
    "masking_deltas",
    "mean_bound",
    "non_private",
    "occurrence_l2_certificate",
    "project",
    "release_scales",
    "risk_allocation",
    "risk_dp",
    "summary_distance",
    "uniform_allocation",
    "window_masking_deltas",
    "zcdp_delta",
    "zcdp_rho",
]
