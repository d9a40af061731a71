"""Shared pieces of helper D's round-2 plugins (scripts/D2_plugins): a user's own helpers."""

import math

import numpy as np
from ldpfleet.protocol.samplers import GRID, grid_laplace_scale, laplace_on_grid

__all__ = ["GRID", "GridLaplaceBase", "geometric_noise", "grid_laplace_scale", "laplace_on_grid"]


def geometric_noise(rng, alpha, shape):
    """Two-sided geometric integers, P(k) proportional to alpha**|k| (difference of two
    geometric counts): the discrete Laplace of a user who does not know ldpfleet's sampler."""
    g1 = rng.geometric(1.0 - alpha, size=shape) - 1
    g2 = rng.geometric(1.0 - alpha, size=shape) - 1
    return (g1 - g2).astype(float)


class GridLaplaceBase:
    """Exact grid Laplace on x in [0, 1] at the budget ``self.noise_eps`` (default eps):
    subclasses change one thing. Reports unbounded, estimate the mean of the reports."""

    sensitivity = 1.0

    def __init__(self, eps):
        if not (isinstance(eps, int | float) and math.isfinite(eps) and 0 < eps <= 50):
            raise ValueError(f"eps must be in (0, 50], got {eps!r}")
        self.eps = float(eps)
        self.noise_eps = self.eps
        self.setup()
        self._scale = grid_laplace_scale(self.sensitivity, self.noise_eps)

    def setup(self):
        """Subclass hook, called before the scale is computed."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return laplace_on_grid(rng, x, self._scale, GRID)

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5
