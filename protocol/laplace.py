"""The Laplace mechanism for values in [0, 1] — the stream baseline of seed 003.

Theory of operation (Dwork et al. 2006): a value v in [0, 1] has sensitivity 1, so
y = v + Lap(1/eps) is pure eps-LDP (the output densities of two inputs differ by at most
e^eps everywhere). y is an unbiased estimate of v.

The noise is EXACT (``protocol.samplers.laplace_on_grid``): numpy's floating-point
``rng.laplace`` leaks the input through the low bits of v + noise (Mironov, CCS 2012). v is
rounded to the grid ``GRID * Z`` (2**-20) and a discrete Laplace multiple of the grid with
scale 1/eps is added, so every output is a grid point whatever v is. 0 and 1 are grid
points and rounding is monotone, so two rounded inputs still differ by at most 1 and the
ratio of output probabilities is at most e^eps: exactly eps-LDP. The report estimates the
rounded v (bias below 2**-21) with variance ``GRID**2 * 2p / (1 - p)**2``, p =
exp(-GRID eps), which is 2/eps^2 - GRID^2/6 + O(GRID^4). ``density`` is the continuous
density the grid law approximates (its mass per grid cell / GRID).

The output is unbounded; the collector accepts |y - 1/2| <= 1/2 + TAIL/eps, which an
honest device exceeds with probability e^-TAIL (TAIL = 50: never in practice), so only
fabricated values are refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from ldpfleet.protocol.mechanism_contract import (
    check_budget,
    checked_report_values,
    checked_rng,
    report_floats,
    unit_inputs,
)
from ldpfleet.protocol.samplers import GRID, laplace_on_grid

TAIL = 50.0


@dataclass(frozen=True)
class LaplaceMechanism:
    """Laplace noise of scale 1/eps on inputs in [0, 1]."""

    eps: float
    variant: str = "laplace"
    output_low: float = field(init=False, repr=False, compare=False)
    output_high: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = check_budget(self.eps)  # numpy's real scalars too (np.float32(1))
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "output_low", -TAIL / eps)
        object.__setattr__(self, "output_high", 1.0 + TAIL / eps)

    @property
    def scale(self) -> float:
        """The Laplace scale 1/eps."""
        return 1.0 / self.eps

    def perturb(self, v: float | np.ndarray, rng: np.random.Generator) -> np.ndarray | float:
        """Add exact Laplace(1/eps) noise on the grid (module docstring); ``v`` must lie in
        [0, 1]."""
        checked_rng(rng)
        return laplace_on_grid(rng, unit_inputs(v), self.scale, GRID)

    def estimate(self, y: np.ndarray) -> np.ndarray:
        """The report itself is an unbiased estimate of v."""
        return np.asarray(y, dtype=float)

    def estimate_mean(self, y: np.ndarray) -> float:
        """The mean report: unbiased for the mean input. ``y``: at least one report, each
        within the accepted tail bound (else ``ParameterError`` naming it)."""
        return float(np.mean(checked_report_values(self, y)))

    def variance(self, v: float | np.ndarray) -> np.ndarray:
        """Variance of one report given any input: the grid law's ``GRID**2 * 2p / (1 -
        p)**2`` with ``p = exp(-GRID / scale)`` (``2 / eps^2`` up to GRID^2 / 6); ``1 - p``
        from ``expm1`` (from ``exp`` it rounded to 0 below eps ~1.1e-10)."""
        x = GRID / self.scale
        one_minus_p = -math.expm1(-x)
        return np.full(np.shape(v), GRID**2 * 2.0 * math.exp(-x) / one_minus_p**2)

    def density(self, y: np.ndarray, v: float) -> np.ndarray:
        """Output density at ``y`` for input ``v``."""
        return 0.5 * self.eps * np.exp(-self.eps * np.abs(np.asarray(y, dtype=float) - v))

    def in_domain(self, y: np.ndarray) -> np.ndarray:
        """Finite and within the accepted tail bound."""
        yy = report_floats(y)
        return np.isfinite(yy) & (yy >= self.output_low) & (yy <= self.output_high)
