"""Analytic Gaussian mechanism (Balle & Wang, "Improving the Gaussian Mechanism for
Differential Privacy", ICML 2018, Theorem 8) — the Gau-DP comparator of seed 000, Table 4.

Theory of operation. Adding ``N(0, sigma^2 I)`` to a query of l2 sensitivity ``D`` is
(eps, delta)-DP if and only if

    delta(sigma) = Phi(D / (2 sigma) - eps sigma / D)
                   - e^eps Phi(-D / (2 sigma) - eps sigma / D)   <=   delta.

``delta(sigma)`` decreases strictly from 1 (sigma -> 0) to 0 (sigma -> inf), so the smallest
admissible sigma is found by bisection on that EXACT condition: bracket ``[lo, hi]`` with
``delta(lo) > delta >= delta(hi)`` by halving / doubling, bisect until the bracket cannot
shrink in floating point, and return ``hi`` — a sigma that satisfies the condition, never a
midpoint that might not. ``delta(sigma)`` is evaluated in log space
(``Phi(a) (1 - exp(eps + log Phi(b) - log Phi(a)))`` with ``scipy.special.log_ndtr``), so
large eps cannot overflow ``e^eps`` and tiny deltas keep relative accuracy.
"""

from __future__ import annotations

import math

from ldpfleet.collector.gcdp.validate import positive_real, real_in_range
from ldpfleet.protocol.errors import ParameterError
from scipy.special import log_ndtr

__all__ = ["analytic_gaussian_delta", "analytic_gaussian_sigma"]

_MAX_STEPS = 4096


def analytic_gaussian_delta(sigma: float, eps: float, l2_sensitivity: float) -> float:
    """The exact ``delta`` of the Gaussian mechanism at noise ``sigma`` (Theorem 8)."""
    s = positive_real(sigma, "sigma")
    e = positive_real(eps, "eps")
    sens = positive_real(l2_sensitivity, "l2_sensitivity")
    a = sens / (2.0 * s) - e * s / sens
    b = -sens / (2.0 * s) - e * s / sens
    log_a = float(log_ndtr(a))
    log_ratio = e + float(log_ndtr(b)) - log_a
    if log_ratio >= 0.0:  # only by rounding: delta(sigma) >= 0 mathematically
        return 0.0
    return math.exp(log_a) * -math.expm1(log_ratio)


def analytic_gaussian_sigma(eps: float, delta: float, l2_sensitivity: float) -> float:
    """The smallest sigma (to floating-point resolution) with ``delta(sigma) <= delta``;
    the returned value always satisfies the condition."""
    e = positive_real(eps, "eps")
    target = real_in_range(delta, "delta", 0.0, 1.0, low_open=True, high_open=True)
    sens = positive_real(l2_sensitivity, "l2_sensitivity")

    def ok(sigma: float) -> bool:
        return analytic_gaussian_delta(sigma, e, sens) <= target

    lo = hi = sens
    for _ in range(_MAX_STEPS):
        if ok(hi):
            break
        lo, hi = hi, 2.0 * hi
    else:  # pragma: no cover - delta(sigma) -> 0, so doubling always ends
        raise ParameterError("no admissible sigma found", field="delta")
    for _ in range(_MAX_STEPS):
        if not ok(lo):
            break
        hi, lo = lo, 0.5 * lo
    else:  # pragma: no cover - delta(sigma) -> 1 > delta as sigma -> 0
        raise ParameterError("no inadmissible sigma found", field="delta")
    for _ in range(_MAX_STEPS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
