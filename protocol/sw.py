"""Square Wave (SW) randomizer for numeric values in [0, 1] — theory of operation.

Square Wave (Li et al., "Estimating Numerical Distributions under Local Differential
Privacy", SIGMOD 2020) reports a value ``y`` drawn from a piecewise-constant density that is
high (``p``) on a window of width ``2b`` around the true input ``v`` and low (``q``) elsewhere,
with ``p / q = e^eps``. Because the output density for *any* two inputs differs by at most the
factor ``e^eps`` at every point, the mechanism is pure ``eps``-LDP. The half-width is

    b(eps) = (eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps)),

which maximises the mutual information between input and output; ``b -> 1/2`` as ``eps -> 0``
and decreases monotonically in ``eps``.

Two variants are provided (``MECHANISMS``):

``"sw"`` (original, Li et al.)
    Output domain ``[-b, 1 + b]``; density ``p = e^eps / (2b e^eps + 1)`` on ``[v - b, v + b]``
    and ``q = 1 / (2b e^eps + 1)`` elsewhere. ``E[y] = q(1 + 2b)/2 + 2b(p - q) v``, so
    ``(y - q(1 + 2b)/2) / (2b(p - q))`` is an unbiased estimate of ``v`` for every ``v``.

``"sw01"`` (seed 003)
    Output domain kept in ``[0, 1]``: the window is ``I_v = [a, a + 2b]`` with
    ``a = clip(v - b, 0, 1 - 2b)`` (``b <= 1/2`` so ``1 - 2b >= 0``); density
    ``p = e^eps q`` on ``I_v`` and ``q = 1 / (1 + 2b(e^eps - 1))`` elsewhere. It is still pure
    ``eps``-LDP (the density takes only the values ``p`` or ``q``), but all inputs in
    ``[0, b]`` share one output law (as do all inputs in ``[1 - b, 1]``), so the mean inversion
    ``(y - q/2) / (2b(p - q))`` is unbiased only for ``v`` in ``[b, 1 - b]``; below ``b`` its
    expectation is ``b`` and above ``1 - b`` it is ``1 - b``.

Sampling is exact, on a grid (``GRID = 2**-20``), so that no output's low bits depend on
the input (Mironov, CCS 2012; the former inverse CDF on one double ``rng.random()`` computed
``a + (r - q a)/p`` in doubles, whose reachable set depends on ``v``). The output range is
cut into cells of width ``GRID`` starting at ``output_low``; ``b`` is rounded to a whole
number ``B`` of cells (``1 <= B < 2**19``: ``b`` is the grid value, what every estimator
reads), the input is rounded to the grid (``v_g``: a deterministic pre-processing, privacy
holds for every ``v``), and the window is ``K = 2B`` whole cells (from ``v_g - b`` for
``sw``, from ``clip(v_g - b, 0, 1 - 2b)`` for ``sw01``) out of ``N``; ``M = N - K`` far cells.
The density ratio is a rational ``ratio = R <= e^eps`` (``samplers.exp_lower_bound``: a
rigorous bound rounded down to 60 bits, so the privacy loss is ``ln R``, in
``[eps - 2**-58, eps]``); ``p = R q`` with ``q`` from ``R`` and ``b``. One report: "far"
with the exact ``Bernoulli(M / (M + K R))`` (``samplers.bernoulli_rational``), then a
uniform cell among the far (or the window) cells (``rng.integers``), reported as the cell's
midpoint ``output_low + (i + 1/2) GRID`` (an exact double). Every output is such a midpoint
whatever the input; a cell's probability is ``R / (K R + M)`` or ``1 / (K R + M)``, so the
ratio between two inputs is at most ``R <= e^eps``, exactly. The cell law is the
piecewise-constant density's mass per cell, so ``E[y]`` is unchanged and ``Var[y]`` is the
continuous one minus ``GRID**2 / 12``. No global RNG, no I/O.

Inputs are physical readings mapped to ``[0, 1]`` with *fixed public* bounds (``normalise``);
data-dependent bounds would leak information outside the privacy accounting.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanism_contract import (
    EPS_MIN,
    below_eps_min,
    checked_report_values,
    checked_rng,
    report_floats,
    unit_inputs,
)
from ldpfleet.protocol.samplers import bernoulli_rational, exp_lower_bound

__all__ = ["EPS_MAX", "GRID", "MECHANISMS", "SquareWave", "denormalise", "normalise", "sw_b"]

MECHANISMS = ("sw", "sw01")
EPS_MAX = 50.0
_SERIES_BELOW = 1e-3
GRID_BITS = 20
GRID = 2.0**-GRID_BITS  # the output cells' width (module docstring)
_MAX_CELLS = 2 ** (GRID_BITS - 1) - 1  # B < 2**19: sw01 keeps at least two far cells


def _check_eps(eps: object, *, floor: bool = True) -> float:
    """``eps`` as a float in [EPS_MIN, EPS_MAX] (``floor=False``: in (0, EPS_MAX])."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise ParameterError(
            f"must be a real number, got {eps!r}", field="eps", limit="a real number", value=eps
        )
    value = float(eps)
    if not math.isfinite(value) or value <= 0.0 or value > EPS_MAX:
        raise ParameterError(
            f"must be finite with 0 < eps <= {EPS_MAX:g}, got {eps!r}",
            field="eps",
            limit=f"finite with 0 < eps <= {EPS_MAX:g}",
            value=eps,
        )
    if floor and value < EPS_MIN:  # p == q below ~1.1e-16: every estimate would be NaN
        raise ParameterError(below_eps_min(eps), field="eps", limit=f">= {EPS_MIN:g}", value=eps)
    return value


def sw_b(eps: float) -> float:
    """Square Wave half-width ``b(eps)``; numerically stable, ``b -> 1/2`` as ``eps -> 0``.

    For ``eps < 1e-3`` both numerator and denominator (divided by ``eps^2``) are evaluated from
    their Taylor series ``sum_{n>=2} eps^(n-2) (n-1)/n!`` and ``sum_{n>=2} eps^(n-2)/n!``
    (truncation error below ``1e-24``); otherwise the closed form is used with ``expm1``.
    """
    x = _check_eps(eps, floor=False)  # b itself is exact down to the smallest double
    if x < _SERIES_BELOW:
        num = 0.0
        den = 0.0
        term = 0.5  # x^(n-2) / n! for n = 2
        for n in range(2, 12):
            num += term * (n - 1)
            den += term
            term *= x / (n + 1)
        return num / (2.0 * math.exp(x) * den)
    em1 = math.expm1(x)
    # numerator: x e^x - (e^x - 1); denominator: 2 e^x (e^x - 1 - x)
    return (x * (em1 + 1.0) - em1) / (2.0 * (em1 + 1.0) * (em1 - x))


@dataclass(frozen=True)
class SquareWave:
    """A Square Wave randomizer with budget ``eps`` per report (see the module docstring)."""

    eps: float
    variant: str = "sw"
    b: float = field(init=False, repr=False, compare=False)
    ratio: Fraction = field(init=False, repr=False, compare=False)  # p / q, <= e^eps
    p: float = field(init=False, repr=False, compare=False)
    q: float = field(init=False, repr=False, compare=False)
    output_low: float = field(init=False, repr=False, compare=False)
    output_high: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = _check_eps(self.eps)
        if not isinstance(self.variant, str) or self.variant not in MECHANISMS:
            raise ParameterError(
                f"must be one of {MECHANISMS}, got {self.variant!r}",
                field="variant",
                limit=f"one of {list(MECHANISMS)}",
                value=self.variant,
            )
        cells = min(max(1, round(sw_b(eps) / GRID)), _MAX_CELLS)
        b = cells * GRID
        ratio = exp_lower_bound(eps)
        r = float(ratio)
        if self.variant == "sw":
            q = 1.0 / (2.0 * b * r + 1.0)
            low, high = -b, 1.0 + b
        else:
            q = 1.0 / (1.0 + 2.0 * b * float(ratio - 1))
            low, high = 0.0, 1.0
        p = r * q
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "ratio", ratio)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)
        object.__setattr__(self, "output_low", low)
        object.__setattr__(self, "output_high", high)

    # -- helpers -------------------------------------------------------------------------

    @property
    def gap(self) -> float:
        """``p - q`` computed as ``q (R - 1)`` with ``R - 1`` exact (``ratio``, a Fraction):
        exact to rounding, where the difference of the two stored densities (both near 1/2
        at small ``eps``) keeps only ~1.1e-16 / eps of its relative precision."""
        return self.q * float(self.ratio - 1)

    def _window_start(self, v: np.ndarray) -> np.ndarray:
        """Offset of the high-density window from ``output_low`` (the window has width 2b)."""
        if self.variant == "sw":
            return v  # window [v - b, v + b] = output_low + [v, v + 2b]
        return np.clip(v - self.b, 0.0, 1.0 - 2.0 * self.b)

    def window(self, v: float) -> tuple[float, float]:
        """The high-density window ``[lo, hi]`` for input ``v`` (rounded to the grid)."""
        a = float(self._window_start(_on_grid(unit_inputs(v)))) + self.output_low
        return a, a + 2.0 * self.b

    # -- public API ----------------------------------------------------------------------

    def perturb(self, v: float | np.ndarray, rng: np.random.Generator) -> np.ndarray | float:
        """Randomize ``v`` (scalar or array, values in ``[0, 1]``), exactly (module
        docstring): ``v`` rounded to the grid, "far" with the exact ``Bernoulli(M / (M +
        K R))``, a uniform cell index, its midpoint. Two 62-bit words per input, drawn as
        ``rng.integers(0, 2**62, size=(n, 2))`` (so value-by-value calls give the same
        outputs as one call): the first against the probability's first 62 bits (a tie, at
        ``2**-62``, draws more), the second modulo the cell count (redrawn with
        ``rng.integers`` in the ``< 2**-40`` case above the largest multiple). Returns a
        float for scalar input, an array of the same shape otherwise; every output is
        ``output_low + (i + 1/2) GRID``."""
        checked_rng(rng)
        arr = unit_inputs(v)
        start = np.rint(self._window_start(_on_grid(arr)) / GRID).astype(np.int64).ravel()
        near_cells = 2 * round(self.b / GRID)
        far_cells = round((self.output_high - self.output_low) / GRID) - near_cells
        if arr.ndim == 0:  # one value: the same draws and arithmetic in Python ints
            return self._perturb_one(int(start[0]), near_cells, far_cells, rng)
        words = rng.integers(0, _WORD, size=(start.size, 2))
        far = _far_coins(rng, words[:, 0], near_cells, far_cells, self.ratio)
        span = np.where(far, far_cells, near_cells)
        offset = words[:, 1] % span
        redraw = np.flatnonzero(words[:, 1] >= (_WORD // span) * span)
        if redraw.size:  # keep the cell exactly uniform (rejection)
            offset[redraw] = rng.integers(0, span[redraw])
        far_cell = offset + near_cells * (offset >= start)  # skip the window's cells
        cell = np.where(far, far_cell, start + offset)
        return (self.output_low + (cell + 0.5) * GRID).reshape(arr.shape)

    def _perturb_one(
        self, start: int, near_cells: int, far_cells: int, rng: np.random.Generator
    ) -> float:
        """``perturb`` for one value (its draws and law, without array overhead)."""
        coin, pick = rng.integers(0, _WORD, size=2).tolist()
        chunk, rest = _far_expansion(near_cells, far_cells, self.ratio)
        far = coin < chunk or (coin == chunk and bool(bernoulli_rational(rng, rest, 1)[0]))
        span = far_cells if far else near_cells
        offset = pick % span
        if pick >= (_WORD // span) * span:  # keep the cell exactly uniform (rejection)
            offset = int(rng.integers(0, span))
        cell = offset + near_cells * (offset >= start) if far else start + offset
        return self.output_low + (cell + 0.5) * GRID

    def density(self, y: np.ndarray, v: float) -> np.ndarray:
        """Output density at ``y`` given input ``v``: ``p`` on the window, ``q`` elsewhere in
        ``[output_low, output_high]``, ``0`` outside it (and for non-finite ``y``)."""
        lo, hi = self.window(v)
        yy = np.asarray(y, dtype=float)
        in_window = (yy >= lo) & (yy <= hi)
        return np.where(self.in_domain(yy), np.where(in_window, self.p, self.q), 0.0)

    def estimate(self, y: np.ndarray) -> np.ndarray:
        """Point estimate of ``v`` from a report ``y`` (mean inversion).

        ``sw``: ``(y - q(1+2b)/2) / (2b(p-q))``, unbiased for every ``v`` in ``[0, 1]``.
        ``sw01``: ``(y - q/2) / (2b(p-q))``, unbiased only for ``v`` in ``[b, 1-b]``; inputs in
        ``[0, b)`` share the law of ``v = b`` (expectation ``b``), inputs in ``(1-b, 1]`` the law
        of ``v = 1 - b``. Estimates may fall outside ``[0, 1]``; do not clip before averaging.
        """
        yy = np.asarray(y, dtype=float)
        scale = 2.0 * self.b * self.gap
        if self.variant == "sw":
            return (yy - self.q * (1.0 + 2.0 * self.b) / 2.0) / scale
        return (yy - self.q / 2.0) / scale

    def estimate_mean(self, y: np.ndarray) -> float:
        """The mean of the point estimates (``estimate``): unbiased for the mean input with
        ``sw``; with ``sw01`` only when every input lies in ``[b, 1 - b]``. ``y``: at least
        one report, each in the output range (else ``ParameterError`` naming it)."""
        return float(np.mean(self.estimate(checked_report_values(self, y))))

    def variance(self, v: float | np.ndarray) -> np.ndarray:
        """Variance of one report's point estimate given input ``v``: the output law is
        ``q`` on ``[output_low, output_high]`` plus ``p - q`` on the window ``[w0, w1]``, so
        ``E[y^k] = (q (H^(k+1) - L^(k+1)) + (p - q)(w1^(k+1) - w0^(k+1))) / (k + 1)``,
        taken about the window's centre ``c`` (``L, H, w0, w1`` minus ``c``)."""
        # about c the window's own term is exact ((p - q) 2 b^3 / 3); about 0 it was a
        # difference of two near-equal cubes (w1^3 - w0^3, of size 1 for a window of width
        # 2^-19) whose rounding swamps a variance of ~1e-13: 2e-8 off at eps 20, 5e-4 at 30,
        # negative (-1.8e-11) at 40 and 50, where bench mechanisms refused the built-in sw
        centre = self._window_start(_on_grid(unit_inputs(v))) + self.output_low + self.b
        low, high = self.output_low - centre, self.output_high - centre
        mean = self.q * (high - low) * (high + low) / 2.0
        second = (self.q * (high**3 - low**3) + self.gap * 2.0 * self.b**3) / 3.0
        # cell midpoints: the continuous law minus a uniform(-GRID/2, GRID/2) within the cell
        spread = second - mean**2 - GRID**2 / 12.0
        return spread / (2.0 * self.b * self.gap) ** 2

    def in_domain(self, y: np.ndarray) -> np.ndarray:
        """Boolean mask: ``y`` finite and within ``[output_low, output_high]``."""
        yy = report_floats(y)
        return np.isfinite(yy) & (yy >= self.output_low) & (yy <= self.output_high)


def _on_grid(v: np.ndarray) -> np.ndarray:
    """``v`` rounded to the nearest multiple of ``GRID`` (exact: a power of two)."""
    return np.rint(v / GRID) * GRID


_WORD = 2**62  # perturb's words: uniform in [0, 2**62), one 64-bit draw each


@lru_cache(maxsize=256)
def _far_expansion(near_cells: int, far_cells: int, ratio: Fraction) -> tuple[int, Fraction]:
    """``P(far) = M / (M + K R)`` for ``K`` window cells, ``M`` far cells, ratio ``R``, as
    its first 62 bits (an integer ``c``) and the rest: ``P = (c + rest) / 2**62``."""
    prob = Fraction(far_cells) / (far_cells + near_cells * ratio)
    chunk, rem = divmod(prob.numerator << 62, prob.denominator)
    return chunk, Fraction(rem, prob.denominator)


def _far_coins(
    rng: np.random.Generator, words: np.ndarray, near_cells: int, far_cells: int, ratio: Fraction
) -> np.ndarray:
    """Exact ``Bernoulli(P(far))`` from uniform 62-bit ``words`` (``U = (word + U') / 2**62``
    with ``U'`` uniform: ``U < P`` iff ``word < c``, or ``word == c`` and ``U' < rest``)."""
    chunk, rest = _far_expansion(near_cells, far_cells, ratio)
    far = words < chunk
    tie = np.flatnonzero(words == chunk)
    if tie.size:
        far[tie] = bernoulli_rational(rng, rest, tie.size)
    return far


def _check_bounds(lo: float, hi: float) -> tuple[float, float]:
    try:
        flo, fhi = float(lo), float(hi)
    except (TypeError, ValueError):
        raise ParameterError(
            f"bounds must be real numbers, got {lo!r}, {hi!r}",
            field="bounds",
            limit="real numbers",
            value=(lo, hi),
        ) from None
    if not (math.isfinite(flo) and math.isfinite(fhi) and flo < fhi):
        raise ParameterError(
            f"need finite lo < hi, got lo={lo!r}, hi={hi!r}",
            field="bounds",
            limit="finite lo < hi",
            value=(lo, hi),
        )
    if not math.isfinite(fhi - flo):  # e.g. [-1e308, 1e308]: every x / (hi - lo) would be 0
        raise ParameterError(
            f"hi - lo overflows to infinity (the width must be finite), got lo={lo!r}, hi={hi!r}",
            field="bounds",
            limit="a finite width hi - lo",
            value=(lo, hi),
        )
    return flo, fhi


def normalise(x: float | np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Clip ``x`` to the fixed public bounds ``[lo, hi]`` and map it to ``[0, 1]``.

    ``±inf`` clip to the bounds; NaN is refused (``ParameterError``, field ``"x"``).
    """
    flo, fhi = _check_bounds(lo, hi)
    xx = np.asarray(x, dtype=float)
    if np.any(np.isnan(xx)):
        raise ParameterError(
            "reading is NaN",
            field="x",
            limit="not NaN",
            value=float("nan"),
        )
    return (np.clip(xx, flo, fhi) - flo) / (fhi - flo)


def denormalise(v: float | np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Inverse of ``normalise`` on ``[0, 1]``: ``lo + v (hi - lo)`` (no clipping, so unbiased
    estimates outside ``[0, 1]`` keep their linear meaning)."""
    flo, fhi = _check_bounds(lo, hi)
    return flo + np.asarray(v, dtype=float) * (fhi - flo)
