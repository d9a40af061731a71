"""The Piecewise Mechanism (PM) of Wang et al. — theory of operation.

Wang, Xiao, Yang, Zhao, Hui, Shin, Shin and Yu, "Collecting and Analyzing Multidimensional
Data with Local Differential Privacy", ICDE 2019, Algorithm 2. The input ``x`` in [0, 1] is
mapped to ``t = 2x - 1`` in [-1, 1]; with ``e2 = e^(eps/2)``,

    C = (e2 + 1) / (e2 - 1),   l(t) = (C + 1)/2 t - (C - 1)/2,   r(t) = l(t) + C - 1,

the report ``y`` in [-C, C] has density ``p = (e^eps - e2) / (2 e2 + 2)`` on the centre
piece ``[l(t), r(t)]`` (width ``C - 1``, mass ``e2 / (e2 + 1)``) and ``q = p / e^eps`` on
the rest of [-C, C]. The density takes only the values ``p`` and ``q = p e^-eps`` whatever
the input, so the mechanism is pure ``eps``-LDP. ``E[y] = t`` (unbiased; ``(y + 1) / 2``
estimates x) and

    Var[y | t] = t^2 / (e2 - 1) + (e2 + 3) / (3 (e2 - 1)^2)

(Lemma 1 of the paper; a quarter of it on the [0, 1] scale).

Sampling is exact, on a grid, as ``protocol.sw`` does (Mironov, CCS 2012: the former
inverse CDF on one double ``rng.random()`` computed ``l(t) + (u - q (l + C)) / p`` in doubles,
whose reachable outputs depend on the input's low bits). The output range is cut into
``N`` cells of width ``cell`` (``GRID = 2**-20``; a coarser power of two when ``C >=
2**21``, i.e. ``eps < ~2e-6``, so that ``N < 2**43``): ``N = round(2 C / cell)`` and the
range is ``[-bound, bound]`` with ``bound = N cell / 2`` (the grid value of ``C``, what every
estimator reads); the centre piece is ``K = round((bound - 1) / cell)`` whole cells (at
least 1: above ``eps ~ 28`` the ideal piece ``C - 1 = 2 / (e^(eps/2) - 1)`` is narrower than
a cell), and it starts ``a = rint(x M)`` cells above ``-bound`` (``M = N - K``: the input is
rounded to a grid of ``1 / M``, a deterministic pre-processing, so privacy holds for every
``x``; ``x = 1`` puts the piece at the top). The density ratio is a rational ``R <= e^eps``
(``samplers.exp_lower_bound``: privacy loss ``ln R`` in ``[eps - 2**-58, eps]``). One
report: "far" with the exact ``Bernoulli(M / (M + K R))`` (a 62-bit word against its
binary expansion, ``samplers.bernoulli_rational`` on a tie, as protocol/sw.py),
then a uniform cell among the far (or the centre) cells (``rng.integers``, exactly uniform),
reported as its midpoint ``-bound + (i + 1/2) cell`` (an exact double). Every output is such
a midpoint whatever the input; a cell's probability is ``R / (K R + M)`` or ``1 / (K R +
M)``, so the ratio between two inputs is at most ``R <= e^eps``, exactly.

The grid law is again unbiased, with its own slope: the midpoints of all ``N`` cells sum to
0, so ``E[y] = (R - 1) K / (K R + M) * (sum of the centre's midpoints) / K = gain (2 a / M -
1)`` with ``gain = (R - 1) K M cell / (2 (K R + M))`` (``= 1`` for the continuous constants;
here within ~1e-6 of it), and ``estimate`` is ``(y / gain + 1) / 2``, unbiased for ``a /
M``. ``p = R q`` and ``q = 1 / ((K R + M) cell)`` are the grid law's densities; ``variance``
is the grid law's (the piecewise-constant law's minus ``cell**2 / 12``, over ``4 gain**2``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np
from ldpfleet.protocol.mechanism_contract import (
    check_budget,
    checked_report_values,
    checked_rng,
    report_floats,
    unit_inputs,
)
from ldpfleet.protocol.samplers import bernoulli_rational, exp_lower_bound

__all__ = ["GRID", "PiecewiseMechanism", "pm_variance"]

GRID_BITS = 20
GRID = 2.0**-GRID_BITS  # the output cells' width, unless C is huge (module docstring)
_MAX_CELL_BITS = 42  # N = 2 C / cell stays below 2**43


def pm_variance(eps: float, t: np.ndarray) -> np.ndarray:
    """Var[y | t] of the Piecewise Mechanism on the [-1, 1] scale (Lemma 1)."""
    e2m1 = math.expm1(eps / 2.0)
    tt = np.asarray(t, dtype=float)
    return tt**2 / e2m1 + (e2m1 + 4.0) / (3.0 * e2m1**2)


@dataclass(frozen=True)
class PiecewiseMechanism:
    """The Piecewise Mechanism on inputs in [0, 1] (reports in [-C, C], on a grid)."""

    eps: float
    bound: float = field(init=False, repr=False, compare=False)  # C on the grid: N cell / 2
    p: float = field(init=False, repr=False, compare=False)
    q: float = field(init=False, repr=False, compare=False)
    ratio: Fraction = field(init=False, repr=False, compare=False)  # p / q = R <= e^eps
    cell: float = field(init=False, repr=False, compare=False)  # the cells' width
    cells: int = field(init=False, repr=False, compare=False)  # N
    centre_cells: int = field(init=False, repr=False, compare=False)  # K
    gain: float = field(init=False, repr=False, compare=False)  # E[y] = gain (2 a / M - 1)
    output_low: float = field(init=False, repr=False, compare=False)
    output_high: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = check_budget(self.eps)
        ideal = 1.0 / math.tanh(eps / 4.0)  # C = (e2 + 1) / (e2 - 1)
        cell = 2.0 ** max(-GRID_BITS, math.frexp(ideal)[1] - _MAX_CELL_BITS)
        cells = max(2, round(2.0 * ideal / cell))
        bound = cells * cell / 2.0
        centre = min(cells - 1, max(1, round((bound - 1.0) / cell)))
        far = cells - centre
        ratio = exp_lower_bound(eps)
        mass = centre * ratio + far  # the cells' probabilities are R / mass and 1 / mass
        q = float(1 / (mass * Fraction(cell)))
        gain = float((ratio - 1) * centre * far * Fraction(cell) / (2 * mass))
        for name, value in (
            ("eps", eps),
            ("bound", bound),
            ("p", float(ratio * q)),
            ("q", q),
            ("ratio", ratio),
            ("cell", cell),
            ("cells", cells),
            ("centre_cells", centre),
            ("gain", gain),
            ("output_low", -bound),
            ("output_high", bound),
        ):
            object.__setattr__(self, name, value)

    def centre(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The high-density piece ``[l, r]`` for inputs ``x`` in [0, 1]: ``K`` cells from
        ``a = rint(x M)`` cells above ``-bound`` (module docstring; ``l(t) = (C + 1)/2 t -
        (C - 1)/2`` on the grid)."""
        far = self.cells - self.centre_cells
        start = np.rint(np.asarray(x, dtype=float) * far)
        left = self.output_low + start * self.cell
        return left, left + self.centre_cells * self.cell

    def perturb(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Reports in [-C, C], exactly (module docstring): the centre piece's first cell
        ``a``, "far" with the exact ``Bernoulli(M / (M + K R))``, a uniform cell among the
        far (or the centre) cells, its midpoint."""
        checked_rng(rng)
        arr = unit_inputs(x)
        near, total = self.centre_cells, self.cells
        left, _ = self.centre(arr)
        start = np.clip(np.rint((left - self.output_low) / self.cell), 0, total - near)
        start = start.astype(np.int64).ravel()
        far = _far_coins(rng, start.size, near, total, self.ratio)
        offset = rng.integers(0, np.where(far, total - near, near))
        cell = np.where(far, offset + near * (offset >= start), start + offset)
        out = (self.output_low + (cell + 0.5) * self.cell).reshape(arr.shape)
        return out[()] if out.ndim == 0 else out

    def in_domain(self, y: np.ndarray) -> np.ndarray:
        """Finite and within [-C, C]."""
        yy = report_floats(y)
        return np.isfinite(yy) & (np.abs(yy) <= self.bound)

    def density(self, y: np.ndarray, v: float) -> np.ndarray:
        """Output density at ``y`` for input ``v``: p on the centre piece, q elsewhere (the
        piecewise-constant law whose cell masses the reports follow)."""
        left, right = self.centre(np.asarray(v, dtype=float))
        yy = np.asarray(y, dtype=float)
        inside = (yy >= left) & (yy <= right)
        return np.where(self.in_domain(yy), np.where(inside, self.p, self.q), 0.0)

    def estimate(self, y: np.ndarray) -> np.ndarray:
        """Per-report unbiased estimates of x: ``(y / gain + 1) / 2`` (module docstring)."""
        return (np.asarray(y, dtype=float) / self.gain + 1.0) / 2.0

    def estimate_mean(self, y: np.ndarray) -> float:
        """Unbiased estimate of the mean input. ``y``: at least one report, each an output
        of the mechanism (else ``ParameterError`` naming it)."""
        return float(np.mean(self.estimate(checked_report_values(self, y))))

    def variance(self, x: np.ndarray) -> np.ndarray:
        """Variance of one report's estimate of ``x``: the grid law's ``Var[y]`` over ``4
        gain**2`` (within ~1e-6 of a quarter of Lemma 1's, ``pm_variance``, while the centre
        piece spans many cells). The law is a mixture of three runs of equally likely
        midpoints (below the centre piece, the piece, above it), so ``Var[y]`` is summed
        from their within-run variances ``(n**2 - 1) cell**2 / 12`` and the spread of their
        means: every term is >= 0, no cancellation (at eps = 50 the variance is ~1e-13)."""
        near, far = self.centre_cells, self.cells - self.centre_cells
        left, right = self.centre(x)
        below = (left - self.output_low) / self.cell  # far cells under the piece (a)
        above = far - below
        w = self.cell
        p_far = float(_far_probability(near, self.cells, self.ratio))
        mean_lo, mean_hi = self.output_low + below * w / 2, right + above * w / 2
        share = below / far
        far_var = (
            share * (below**2 - 1) * w**2 / 12
            + (1 - share) * (above**2 - 1) * w**2 / 12
            + share * (1 - share) * (mean_hi - mean_lo) ** 2
        )
        far_mean = share * mean_lo + (1 - share) * mean_hi
        near_var = (near**2 - 1) * w**2 / 12
        near_mean = left + near * w / 2
        spread = (
            (1 - p_far) * near_var
            + p_far * far_var
            + p_far * (1 - p_far) * (near_mean - far_mean) ** 2
        )
        return spread / (4.0 * self.gain**2)


@lru_cache(maxsize=256)
def _far_probability(near: int, total: int, ratio: Fraction) -> Fraction:
    """``P(far) = M / (M + K R)`` for ``K = near`` centre cells of ``total``."""
    far = total - near
    return Fraction(far) / (far + near * ratio)


_WORD = 2**62


@lru_cache(maxsize=256)
def _far_expansion(near: int, total: int, ratio: Fraction) -> tuple[int, Fraction]:
    """``P(far)`` as its first 62 bits (an integer ``c``) and the rest: ``(c + rest) /
    2**62``."""
    prob = _far_probability(near, total, ratio)
    chunk, rem = divmod(prob.numerator * _WORD, prob.denominator)
    return chunk, Fraction(rem, prob.denominator)


def _far_coins(
    rng: np.random.Generator, n: int, near: int, total: int, ratio: Fraction
) -> np.ndarray:
    """``n`` exact ``Bernoulli(P(far))`` coins: a uniform 62-bit word per coin against the
    first 62 bits of ``P(far)`` (``U = (word + U') / 2**62``: ``U < P`` iff ``word < c``, or
    ``word == c`` and ``U' < rest``, drawn by ``bernoulli_rational``), as protocol/sw.py."""
    chunk, rest = _far_expansion(near, total, ratio)
    words = rng.integers(0, _WORD, size=n)
    far = words < chunk
    tie = np.flatnonzero(words == chunk)
    if tie.size:
        far[tie] = bernoulli_rational(rng, rest, tie.size)
    return far
