"""Contract plugins for the input-pair audit tests (``tests.unit.leaky_mechanisms:Name``):
one honest Laplace and planted bugs that leak only at inputs other than 0 and 1, which
the former canary (input 0 vs 1 only) did not see.

* ``ExactInMiddleBand`` — reports x in the clear for x in [0.45, 0.55].
* ``FourEpsInMiddleBand`` — Laplace noise for 4 eps (a quarter of the scale) there.
* ``NarrowBandAt03`` — for x within 0.005 of 0.3 (a narrow input band), a fifth of the
  reports land in the narrow output band [0.3, 0.3 + 2^-10].
* ``SineDuchi`` — Duchi's two reports +-C with t = sin(2 pi x) instead of 2x - 1 and the
  probabilities of 2 eps: 0 and 1 give the same distribution (a 0 vs 1 canary sees
  nothing), while 1/4 vs 3/4 differ by e^(2 eps).
"""

from __future__ import annotations

import math

import numpy as np
from ldpfleet.protocol.samplers import GRID, grid_laplace_scale, laplace_on_grid


class HonestGridLaplace:
    """x + Laplace((1 + GRID) / eps) sampled exactly on the grid: pure eps-LDP."""

    def __init__(self, eps: float) -> None:
        self.eps = float(eps)
        self._scale = grid_laplace_scale(1.0, self.eps)

    def _noisy(self, x: np.ndarray, rng: np.random.Generator, eps_factor: float = 1.0):
        scale = self._scale if eps_factor == 1.0 else grid_laplace_scale(1.0, eps_factor * self.eps)
        return np.asarray(laplace_on_grid(rng, x, scale, GRID), dtype=float)

    def perturb(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One exact Laplace report per input."""
        return self._noisy(np.asarray(x, dtype=float), rng)

    def in_domain(self, y: np.ndarray) -> np.ndarray:
        """Any finite report."""
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y: np.ndarray) -> float:
        """The mean report."""
        return float(np.mean(y))


class ExactInMiddleBand(HonestGridLaplace):
    """Planted bug (a): inputs in [0.45, 0.55] are reported exactly."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return np.where((x >= 0.45) & (x <= 0.55), x, self._noisy(x, rng))


class FourEpsInMiddleBand(HonestGridLaplace):
    """Planted bug (a'): inputs in [0.45, 0.55] get the noise of 4 eps."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        band = (x >= 0.45) & (x <= 0.55)
        return np.where(band, self._noisy(x, rng, 4.0), self._noisy(x, rng))


class NarrowBandAt03(HonestGridLaplace):
    """Planted bug (b): near x = 0.3 a fifth of the reports fall in [0.3, 0.3 + 2^-10]."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        honest = self._noisy(x, rng)
        leak = (np.abs(x - 0.3) <= 0.005) & (rng.random(x.shape) < 0.2)
        band = 0.3 + GRID * rng.integers(0, 2**10, size=x.shape)
        return np.where(leak, band, honest)


class SineDuchi:
    """Planted bug (c): Duchi with t = sin(2 pi x) and 2 eps's probabilities."""

    def __init__(self, eps: float) -> None:
        self.eps = float(eps)
        self.c = (math.exp(self.eps) + 1.0) / (math.exp(self.eps) - 1.0)

    def perturb(self, x, rng):
        t = np.sin(2.0 * np.pi * np.asarray(x, dtype=float))
        p_high = 0.5 + 0.5 * t * math.tanh(self.eps)  # ratio e^(2 eps) between t = +-1
        return np.where(rng.random(t.shape) < p_high, self.c, -self.c)

    def in_domain(self, y):
        return np.isin(np.asarray(y, dtype=float), (-self.c, self.c))

    def estimate_mean(self, y):
        return float((np.mean(y) + 1.0) / 2.0)


class BiasedMean(HonestGridLaplace):
    """An honest report with a biased ``estimate_mean`` (+0.05 on every estimate), for
    ``ldpfleet bench mechanisms``'s bias flag."""

    def estimate_mean(self, y):
        return float(np.mean(y)) + 0.05
