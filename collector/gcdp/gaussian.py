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
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from ldpfleet.collector.gcdp.validate import integer_at_least, positive_real, real_in_range
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "CALIBRATIONS",
    "GaussianGrid",
    "analytic_discrete_sigma2",
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "discrete_gaussian",
    "discrete_gaussian_delta",
    "gaussian_grid",
    "gaussian_on_grid",
    "zcdp_delta",
    "zcdp_rho",
]

_MAX_STEPS = 4096


def analytic_gaussian_delta(sigma: float, eps: float, l2_sensitivity: float) -> float:
    """The exact ``delta`` of the Gaussian mechanism at noise ``sigma`` (Theorem 8)."""
    s = positive_real(sigma, "sigma")
    e = positive_real(eps, "eps")
    sens = positive_real(l2_sensitivity, "l2_sensitivity")
    # imported here: scipy.special costs ~0.5 s of CPU to import, paid by every process
    # that loads the scenario plans (each CADR fleet shard), which never calibrates
    from scipy.special import log_ndtr

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
        raise ParameterError(
            "no admissible sigma found",
            field="delta",
            limit="a delta some sigma meets",
            value=delta,
        )
    for _ in range(_MAX_STEPS):
        if not ok(lo):
            break
        hi, lo = lo, 0.5 * lo
    else:  # pragma: no cover - delta(sigma) -> 1 > delta as sigma -> 0
        raise ParameterError(
            "no inadmissible sigma found",
            field="delta",
            limit="a delta some sigma misses",
            value=delta,
        )
    for _ in range(_MAX_STEPS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# --- the exact sampler: a discrete Gaussian on a fine grid, zCDP accounting ------------------
#
# Theory of operation. ``rng.normal`` is a floating-point sampler: like the float Laplace
# (protocol/samplers.py, Mironov 2012) the set of doubles ``x + noise`` can take depends on
# ``x``, so it is not (eps, delta)-DP as computed. Gau-DP therefore draws, exactly, the
# discrete Gaussian N_Z(0, s2) (Canonne, Kamath and Steinke, "The Discrete Gaussian for
# Differential Privacy", NeurIPS 2020, Algorithm 3) on the grid ``g * Z``: the projected
# answer is rounded to the grid (``k = rint(y / g)``) and ``g * (k + Z)`` is released, so the
# output's support does not depend on the input.
#
# Accounting. Rounding moves each coordinate by at most g / 2, so two answers that differ by
# at most ``Delta`` in l2, in at most ``m`` coordinates, round to integer vectors that differ
# by at most ``Delta / g + sqrt(m)`` in l2 (triangle inequality; coordinates that do not
# change round identically). The d-dimensional discrete Gaussian with integer l2
# sensitivity D is (D^2 / (2 s2))-zCDP (CKS Theorem 14), and rho-zCDP implies (eps, delta)-DP
# for delta = inf_{alpha > 1} exp((alpha - 1)(alpha rho - eps)) / (alpha - 1)
# * (1 - 1 / alpha)^alpha (CKS Corollary 13, the conversion OpenDP's
# ``make_zCDP_to_approxDP`` uses). ``zcdp_rho(eps, delta)`` is the largest rho whose delta is
# <= the target; s2 is the smallest integer with D^2 / (2 s2) <= rho. That accounting is
# looser than the continuous Gaussian's exact (Balle-Wang) curve: at delta = 1e-5 the noise
# is 7-10 % larger (sigma / Delta 4.045 against 3.731 at eps = 1) -- the cost of a
# certificate that holds for the sampler actually run. The grid is ``2**(floor(log2 sigma)
# - GRID_BITS_BELOW_SIGMA)`` (public: it depends on eps, delta and Delta only), so s2 is
# 2**20..2**22 and every integer of Algorithm 3 fits in int64.

GRID_BITS_BELOW_SIGMA = 10
_INT_SAFE_ABS = 2**19  # |Y| above this: the acceptance numerator is computed on Python ints
CALIBRATIONS = ("zcdp", "classic", "analytic", "analytic_discrete")


def zcdp_delta(rho: float, eps: float) -> float:
    """delta of the (eps, delta)-DP guarantee implied by rho-zCDP (CKS 2020, Corollary 13);
    the infimum over alpha is approached by a grid plus bounded refinement, and ANY alpha
    gives a valid delta, so an inexact minimiser can only overstate delta."""
    r = positive_real(rho, "rho")
    e = real_in_range(eps, "eps", 0.0, math.inf)

    def log_delta(u: float) -> float:  # alpha = 1 + exp(u)
        a = 1.0 + math.exp(u)
        return (a - 1.0) * (a * r - e) - u + a * math.log1p(-1.0 / a)

    grid = [-20.0 + 0.05 * i for i in range(1001)]  # alpha - 1 from 2e-9 to 4.9e8
    best = min(grid, key=log_delta)
    lo, hi = best - 0.05, best + 0.05
    for _ in range(100):  # ternary refinement (log_delta is unimodal in u near the minimum)
        m1, m2 = lo + (hi - lo) / 3.0, hi - (hi - lo) / 3.0
        if log_delta(m1) <= log_delta(m2):
            hi = m2
        else:
            lo = m1
    value = min(log_delta(best), log_delta(0.5 * (lo + hi)))
    return min(1.0, math.exp(value))


@lru_cache(maxsize=256)
def zcdp_rho(eps: float, delta: float) -> float:
    """The largest rho (to floating-point resolution, never above) whose Corollary 13 delta
    at ``eps`` is <= ``delta``; the returned value always satisfies it."""
    e = positive_real(eps, "eps")
    target = real_in_range(delta, "delta", 0.0, 1.0, low_open=True, high_open=True)
    lo, hi = 0.0, e  # delta(rho = eps) >= ... > target for every target < 1
    while zcdp_delta(hi, e) <= target:  # pragma: no cover - exp(-(a-1)... ) keeps it large
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if zcdp_delta(mid, e) <= target:
            lo = mid
        else:
            hi = mid
    if lo <= 0.0:
        raise ParameterError(
            "no admissible rho found",
            field="delta",
            limit="a delta some rho > 0 meets",
            value=delta,
        )
    return lo


def _bernoulli_exp_le1(rng: np.random.Generator, num: np.ndarray, den: int) -> np.ndarray:
    """``Bernoulli(exp(-num / den))`` element-wise for integers ``0 <= num <= den`` (CKS
    Algorithm 1: ``A_k ~ Bernoulli(gamma / k)`` until the first failure at K; K odd)."""
    out = np.empty(num.shape, dtype=bool)
    active = np.arange(num.size)
    k = 1
    while active.size:
        success = rng.integers(0, den * k, size=active.size) < num[active]
        out[active[~success]] = k % 2 == 1
        active = active[success]
        k += 1
    return out


def _bernoulli_exp(rng: np.random.Generator, num: np.ndarray, den: int) -> np.ndarray:
    """``Bernoulli(exp(-num / den))`` for integer ``num >= 0`` (int64) and ``den``: one
    ``Bernoulli(exp(-1))`` per whole unit, then one for the remainder (CKS Algorithm 1)."""
    whole, frac = np.divmod(num, den)
    out = np.ones(num.shape, dtype=bool)
    alive = np.flatnonzero(whole > 0)
    left = whole.copy()
    while alive.size:
        ok = _bernoulli_exp_le1(rng, np.ones(alive.size, dtype=np.int64), 1)
        out[alive[~ok]] = False
        left[alive] -= 1
        alive = alive[ok & (left[alive] > 0)]
    idx = np.flatnonzero(out & (frac > 0))
    if idx.size:
        out[idx] = _bernoulli_exp_le1(rng, frac[idx], den)
    return out


def discrete_gaussian(
    rng: np.random.Generator, sigma2: int, size: int | tuple[int, ...]
) -> np.ndarray:
    """Exact draws of the discrete Gaussian ``P[Z = z] ∝ exp(-z^2 / (2 sigma2))`` on the
    integers (CKS 2020, Algorithm 3), for an integer variance parameter ``sigma2`` in
    [1, 2**40]: with ``t = floor(sqrt(sigma2)) + 1``, draw ``Y`` discrete Laplace of scale
    t and accept with probability ``exp(-(|Y| - sigma2 / t)^2 / (2 sigma2))``. Every step
    is integer arithmetic on the injected generator (protocol.samplers.discrete_laplace)."""
    from ldpfleet.protocol.samplers import bernoulli_exp, discrete_laplace

    if isinstance(sigma2, bool) or not isinstance(sigma2, int | np.integer):
        raise ParameterError(
            f"must be an integer, got {sigma2!r}", field="sigma2", limit="an integer", value=sigma2
        )
    p = int(sigma2)
    if not 1 <= p <= 2**40:
        raise ParameterError(
            f"must be in [1, 2**40], got {p}", field="sigma2", limit="in [1, 2**40]", value=p
        )
    shape = size if isinstance(size, tuple) else (int(size),)
    n = int(np.prod(shape, dtype=np.int64))
    t = math.isqrt(p) + 1
    den = 2 * p * t * t  # gamma = (|Y| t - p)^2 / (2 p t^2)
    out = np.zeros(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        y = np.asarray(discrete_laplace(rng, t, size=pending.size), dtype=np.int64)
        a = np.abs(y)
        safe = a <= _INT_SAFE_ABS
        accept = np.zeros(pending.size, dtype=bool)
        if den < 2**47:
            idx = np.flatnonzero(safe)
            num = (a[idx] * t - p) ** 2
            accept[idx] = _bernoulli_exp(rng, num, den)
            rare = np.flatnonzero(~safe)
        else:
            rare = np.arange(pending.size)
        for i in rare.tolist():  # astronomically rare for small sigma2; exact on Python ints
            accept[i] = bool(bernoulli_exp(rng, Fraction((int(a[i]) * t - p) ** 2, den)))
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out.reshape(shape)


# --- the analytic calibration of the discrete sampler (``"analytic_discrete"``) ------------------
#
# Balle and Wang's analytic Gaussian mechanism (seed 000, Table 4 and [32]) is the smallest
# sigma whose EXACT privacy curve meets delta. For the discrete Gaussian actually sampled the
# exact curve is known too when one protected unit moves ONE coordinate (CKS 2020, Theorem 7):
# for an integer shift a > 0 the privacy loss ln p(z) / p(z - a) = (a^2 - 2 a z) / (2 s2)
# exceeds eps exactly when z < a / 2 - eps s2 / a, so the hockey-stick divergence is
#
#     delta_a(s2) = P[Y > eps s2 / a - a / 2] - e^eps P[Y > eps s2 / a + a / 2],  Y ~ N_Z(0, s2),
#
# (strict inequalities; by the symmetry of Y). Rounding to the grid moves a coordinate by at
# most g / 2, so two answers within Delta round to integers within floor(Delta / g) + 1; the
# curve is taken as the maximum over EVERY shift 1 .. floor(Delta / g) + 1 (no monotonicity
# in a is assumed). The tails are summed from the far end (small terms first) over
# |z| <= 14 sqrt(s2) + shift (the mass left out is below e^-98 < 1e-42), and the computed delta
# is raised by 1e-9 of the first tail (float error) plus 1e-40 (the mass left out) before it is
# compared with the target.


def _discrete_gaussian_tails(sigma2: int, half_width: int) -> tuple[np.ndarray, int]:
    """``tail[i] = P[Y >= i - half_width]`` for ``i`` in 0 .. 2 half_width + 1, where
    Y ~ N_Z(0, sigma2)."""
    z = np.arange(-half_width, half_width + 1, dtype=float)
    weights = np.exp(-(z * z) / (2.0 * sigma2))
    pmf = weights / weights.sum()  # pairwise summation: relative error ~1e-15
    tail = np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0]])
    return tail, half_width


def discrete_gaussian_delta(sigma2: int, eps: float, max_shift: int) -> float:
    """The exact delta at ``eps`` of ``x + N_Z(0, sigma2)`` for integer answers ``x`` that
    neighbours change by at most ``max_shift`` (one coordinate): the maximum over the
    shifts a = 1 .. max_shift of the hockey-stick divergence above (CKS 2020, Theorem 7),
    raised by 1e-9 of its first tail and by 1e-40 for the float error and the truncated
    tails (so never understated)."""
    p = integer_at_least(sigma2, "sigma2", 1)
    e = positive_real(eps, "eps")
    top = integer_at_least(max_shift, "max_shift", 1)
    tail, half = _discrete_gaussian_tails(p, 14 * math.isqrt(p) + 14 + top)
    shifts = np.arange(1, top + 1, dtype=np.int64)
    # the last z with loss > eps is floor(eps s2 / a - a / 2) = k; both tails use this one
    # rounded boundary (P[Y > k] and P[Y > k + a]), so a float error in it moves the two
    # sums together (the term at the boundary has loss ~ eps and contributes ~0)
    edge = np.floor(e * p / shifts - shifts / 2.0).astype(np.int64)

    def above(k: np.ndarray) -> np.ndarray:  # P[Y > k] = P[Y >= k + 1] for integer k
        return tail[np.clip(k + 1 + half, 0, tail.size - 1)]

    first, second = above(edge), above(edge + shifts)
    with np.errstate(over="ignore"):
        curve = first - math.exp(min(e, 700.0)) * second
    return float(np.max(curve + 1e-9 * first)) + 1e-40


def analytic_discrete_sigma2(eps: float, delta: float, max_shift: int, upper: int) -> int:
    """The smallest integer ``sigma2`` (bisection; ``upper`` must be admissible, and is
    doubled until it is) whose ``discrete_gaussian_delta`` is <= ``delta``; the returned
    value always satisfies it."""
    e = positive_real(eps, "eps")
    target = real_in_range(delta, "delta", 0.0, 1.0, low_open=True, high_open=True)
    hi = max(1, int(upper))
    while discrete_gaussian_delta(hi, e, max_shift) > target:
        hi *= 2
    lo = 0  # inadmissible by convention (sigma2 >= 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if discrete_gaussian_delta(mid, e, max_shift) <= target:
            hi = mid
        else:
            lo = mid
    return hi


class GaussianGrid(NamedTuple):
    """The exact Gau-DP noise: grid ``grid`` (a power of two), integer variance ``sigma2``
    in grid units, ``sigma`` = grid * sqrt(sigma2) (the released noise's standard
    deviation, up to the discrete Gaussian's negligible variance deficit), and the zCDP
    ``rho`` it certifies for the rounded query (``rho <= zcdp_rho(eps, delta)`` for the
    certified calibrations)."""

    grid: float
    sigma2: int
    sigma: float
    rho: float


def gaussian_grid(
    eps: float,
    delta: float,
    l2_sensitivity: float,
    changed_coordinates: int = 1,
    calibration: str = "zcdp",
) -> GaussianGrid:
    """The grid and discrete variance of Gau-DP for ``l2_sensitivity`` when one protected
    unit moves at most ``changed_coordinates`` coordinates. ``calibration``: ``"zcdp"``
    (the smallest certified noise: zCDP of the discrete Gaussian, Corollary 13),
    ``"classic"`` (sigma = Delta sqrt(2 ln(1.25 / delta)) / eps, Dwork and Roth Thm. A.1,
    raised to the zcdp value where that is larger, so it stays certified), or
    ``"analytic"`` (the continuous Balle-Wang sigma scaled by the rounding's sensitivity
    inflation: a READING for comparison, its (eps, delta) for the discrete sampler is not
    certified here), or ``"analytic_discrete"`` (Balle-Wang's rule -- the smallest noise
    whose EXACT curve meets delta -- applied to the discrete sampler's exact curve, CKS
    Theorem 7; certified; ``changed_coordinates`` must be 1)."""
    e = positive_real(eps, "eps")
    dl = real_in_range(delta, "delta", 0.0, 1.0, low_open=True, high_open=True)
    sens = positive_real(l2_sensitivity, "l2_sensitivity")
    if (
        isinstance(changed_coordinates, bool)
        or not isinstance(changed_coordinates, int | np.integer)
        or changed_coordinates < 1
    ):
        raise ParameterError(
            f"must be an integer >= 1, got {changed_coordinates!r}",
            field="changed_coordinates",
            limit="an integer >= 1",
            value=changed_coordinates,
        )
    if calibration not in CALIBRATIONS:
        raise ParameterError(
            f"must be one of {', '.join(CALIBRATIONS)}, got {calibration!r}",
            field="calibration",
            limit=f"one of {', '.join(CALIBRATIONS)}",
            value=calibration,
        )
    return _gaussian_grid(e, dl, sens, int(changed_coordinates), calibration)


@lru_cache(maxsize=256)
def _gaussian_grid(
    e: float, dl: float, sens: float, changed_coordinates: int, calibration: str
) -> GaussianGrid:
    rho = zcdp_rho(e, dl)
    target = sens / math.sqrt(2.0 * rho)  # continuous-equivalent sigma of the zcdp reading
    if calibration == "analytic_discrete":
        return _analytic_discrete_grid(e, dl, sens, changed_coordinates, rho)
    if calibration == "classic":
        target = max(target, sens * math.sqrt(2.0 * math.log(1.25 / dl)) / e)
    elif calibration == "analytic":
        target = analytic_gaussian_sigma(e, dl, sens)
    grid = 2.0 ** (math.floor(math.log2(target)) - GRID_BITS_BELOW_SIGMA)
    d_grid = sens / grid + math.sqrt(int(changed_coordinates))  # l2 of the rounded answers
    need = (target / grid * d_grid / (sens / grid)) ** 2  # target scaled by the inflation
    if calibration != "analytic":
        need = max(need, d_grid**2 / (2.0 * rho))
    sigma2 = math.ceil(need * (1.0 + 1e-12))  # float slack, upwards
    return GaussianGrid(grid, sigma2, grid * math.sqrt(sigma2), d_grid**2 / (2.0 * sigma2))


def _analytic_discrete_grid(
    e: float, dl: float, sens: float, changed_coordinates: int, rho: float
) -> GaussianGrid:
    """``"analytic_discrete"``: the grid of the continuous analytic sigma, then the smallest
    integer variance whose exact discrete curve (``discrete_gaussian_delta``) meets delta for
    every integer shift the rounded answers can take (one changed coordinate only)."""
    if changed_coordinates != 1:
        raise ParameterError(
            "the exact discrete-Gaussian curve needs one changed coordinate per protected "
            f"unit (use calibration='zcdp'), got {changed_coordinates}",
            field="changed_coordinates",
            limit="1 for the exact discrete-Gaussian curve",
            value=changed_coordinates,
        )
    grid = 2.0 ** (
        math.floor(math.log2(analytic_gaussian_sigma(e, dl, sens))) - GRID_BITS_BELOW_SIGMA
    )
    max_shift = math.floor(sens / grid) + 1  # |rint(x / g) - rint(x' / g)| <= floor(Delta / g) + 1
    upper = math.ceil((sens / grid + 1.0) ** 2 / (2.0 * rho))  # the zcdp variance: admissible
    sigma2 = analytic_discrete_sigma2(e, dl, max_shift, upper)
    return GaussianGrid(grid, sigma2, grid * math.sqrt(sigma2), max_shift**2 / (2.0 * sigma2))


def gaussian_on_grid(
    rng: np.random.Generator, values: np.ndarray, noise: GaussianGrid
) -> np.ndarray:
    """``values`` rounded to ``noise.grid`` plus ``grid * N_Z(0, sigma2)``, element-wise:
    every output is a grid point whatever the input."""
    x = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(x)):
        raise ParameterError(
            "must be finite",
            field="values",
            limit="finite (value: the first non-finite one)",
            value=float(x[~np.isfinite(x)][0]),
        )
    k = np.rint(x / noise.grid)
    if np.any(np.abs(k) >= 2.0**52):
        raise ParameterError(
            "|value| / grid must stay below 2**52",
            field="values",
            limit="|value| / grid < 2**52 (value: the first too large)",
            value=float(x[np.abs(k) >= 2.0**52][0]),
        )
    z = discrete_gaussian(rng, noise.sigma2, x.shape or (1,)).reshape(x.shape)
    return (k.astype(np.int64) + z).astype(float) * noise.grid
