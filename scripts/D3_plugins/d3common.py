"""Shared pieces of helper D's round-3 plugins (scripts/D3_plugins): a user's own helpers."""

import math

import numpy as np
from ldpfleet.protocol.samplers import GRID, grid_laplace_scale, laplace_on_grid

__all__ = ["GRID", "GridLaplace", "KaryLevels", "grid_laplace_scale", "laplace_on_grid"]


def check_eps(eps):
    if not (isinstance(eps, int | float) and math.isfinite(eps) and 0 < eps <= 50):
        raise ValueError(f"eps must be in (0, 50], got {eps!r}")
    return float(eps)


class GridLaplace:
    """Exact grid Laplace on x in [0, 1] at ``self.eps``; subclasses change one thing.
    ``noise(rng, x, eps_share)`` is grid Laplace at eps * eps_share (sensitivity 1)."""

    def __init__(self, eps):
        self.eps = check_eps(eps)
        self._scales = {}

    def scale(self, share=1.0):
        key = float(share)
        if key not in self._scales:
            self._scales[key] = grid_laplace_scale(1.0, self.eps * key)
        return self._scales[key]

    def noise(self, rng, x, share=1.0):
        return laplace_on_grid(rng, np.asarray(x, dtype=float), self.scale(share), GRID)

    def perturb(self, x, rng):
        return self.noise(rng, x)

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5


class KaryLevels:
    """k-ary randomised response over the levels 0, 1/(k-1), ..., 1 (x rounded to the
    nearest level); subclasses change the probabilities or the encoding."""

    k = 8

    def __init__(self, eps):
        self.eps = check_eps(eps)
        e = math.exp(self.eps)
        self.p = e / (e + self.k - 1)
        self.q = 1.0 / (e + self.k - 1)

    def level(self, x):
        return np.rint(np.asarray(x, dtype=float) * (self.k - 1)).astype(np.int64)

    def respond(self, code, rng, p=None):
        p = self.p if p is None else p
        keep = rng.random(code.shape) < p
        other = rng.integers(0, self.k - 1, size=code.shape)
        other = other + (other >= code)  # uniform over the k - 1 other codes
        return np.where(keep, code, other)

    def perturb(self, x, rng):
        return self.respond(self.level(x), rng) / (self.k - 1)

    def in_domain(self, y):
        c = np.asarray(y, dtype=float) * (self.k - 1)
        return (np.abs(c - np.rint(c)) < 1e-9) & (c >= -1e-9) & (c <= self.k - 1 + 1e-9)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        if not y.size:
            return 0.5
        # E[y] = p t + q (sum of levels - t) = (p - q) t + q k / 2
        return float((np.mean(y) - self.q * self.k / 2) / (self.p - self.q))
