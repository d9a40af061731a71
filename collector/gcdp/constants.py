"""GC-DP hyperparameters — the fixed constants of seed 000, Table 5 (Section 5.1).

Theory of operation. Every constant of Algorithms 1-3 lives in one frozen, validated object so
a run records exactly what it used: lag window ``L``, synchronous weight ``lam`` (lambda),
threshold ``tau``, degree cap ``K``, exposure smoothing ``alpha`` (Algorithm 1); expansion
``gamma``, redundancy threshold ``tau_c``, inflation ``kappa >= 1`` and cap ``g_max``
(Algorithm 2); numerical stabiliser ``eta`` and exponents ``beta_r, beta_g, beta_u``
(Algorithm 3), plus our ``exposure_offset`` (not in the seed; see ``allocation.py``).
The floor ``eps_min = eps_rel / (100 d)`` depends on the release and is computed by
``eps_min_for``. ``tau`` is selected per dataset by validation F1 at eps = 1 from
``TAU_GRID`` (ties -> smaller); the default 0.15 is the Occupancy / Intel Lab choice.
"""

from __future__ import annotations

from dataclasses import dataclass

from ldpfleet.collector.gcdp.validate import integer_at_least, positive_real, real_in_range

__all__ = ["EPS_REL_GRID", "TAU_GRID", "GcdpConstants", "eps_min_for"]

TAU_GRID = (0.10, 0.15, 0.20, 0.25, 0.30)
EPS_REL_GRID = (0.2, 0.5, 1.0, 2.0, 4.0)
FLOOR_FRACTION = 0.01  # Table 5: eps_min reserves 1% of the budget for the floor


def eps_min_for(eps_rel: float, d: int) -> float:
    """Table 5 floor ``eps_rel / (100 d)``."""
    return positive_real(eps_rel, "eps_rel") * FLOOR_FRACTION / integer_at_least(d, "d", 1)


@dataclass(frozen=True)
class GcdpConstants:
    """Table 5 constants; every field is checked at construction (``ParameterError``)."""

    lag_window: int = 3  # L
    lam: float = 0.6  # lambda, weight of the synchronous correlation
    tau: float = 0.15  # edge threshold
    degree_cap: int = 5  # K
    alpha: float = 0.7  # exposure smoothing
    gamma: float = 1.2  # empirical expansion
    tau_c: float = 0.85  # redundancy threshold of the compression set C_k
    kappa: float = 1.0  # inflation, >= 1
    g_max: float = 1.0  # cap of the empirical score
    eta: float = 1e-8  # numerical stabiliser
    beta_r: float = 1.0  # exposure exponent
    beta_g: float = 1.0  # certified-scale exponent
    beta_u: float = 0.7  # utility exponent
    # NOT in Table 5: the offset added to the coordinate exposure in Algorithm 3's penalty.
    # The seed adds eta (= exposure_offset of 1e-8), which hands the min-max exposure-0
    # coordinate ~all the budget; see allocation.py and docs/gcdp.md, "Exposure offset".
    exposure_offset: float = 1.0

    def __post_init__(self) -> None:
        checked = {
            "lag_window": integer_at_least(self.lag_window, "lag_window", 0),
            "lam": real_in_range(self.lam, "lam", 0.0, 1.0),
            "tau": real_in_range(self.tau, "tau", 0.0, 1.0),
            "degree_cap": integer_at_least(self.degree_cap, "degree_cap", 1),
            "alpha": real_in_range(self.alpha, "alpha", 0.0, 1.0),
            "gamma": real_in_range(self.gamma, "gamma", 0.0, float("inf"), high_open=True),
            "tau_c": real_in_range(self.tau_c, "tau_c", 0.0, 1.0),
            "kappa": real_in_range(self.kappa, "kappa", 1.0, float("inf"), high_open=True),
            "g_max": positive_real(self.g_max, "g_max"),
            "eta": positive_real(self.eta, "eta"),
            "beta_r": real_in_range(self.beta_r, "beta_r", 0.0, float("inf"), high_open=True),
            "beta_g": real_in_range(self.beta_g, "beta_g", 0.0, float("inf"), high_open=True),
            "beta_u": real_in_range(self.beta_u, "beta_u", 0.0, float("inf"), high_open=True),
            "exposure_offset": positive_real(self.exposure_offset, "exposure_offset"),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)
