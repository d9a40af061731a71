"""Plugins whose privacy depends on how a device batches its readings (helper B1): each
passes the load-time check and, sampled in one call on many copies of an input, the audit;
a fleet's devices call ``perturb`` on a few readings at a time and leak."""

from __future__ import annotations

import numpy as np


class Laplace01:
    """Laplace(1/eps) noise on x in [0, 1], clipped to a stated range (eps-LDP)."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.b = 1.0 / self.eps
        self.output_low, self.output_high = -40 * self.b, 1 + 40 * self.b

    def _noise(self, x, rng):
        return rng.laplace(0.0, self.b, x.shape)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return np.clip(x + self._noise(x, rng), self.output_low, self.output_high)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y >= self.output_low) & (y <= self.output_high)

    def estimate_mean(self, y):
        return float(np.mean(y)) if len(y) else 0.5


class SharedNoise(Laplace01):
    """One draw per call, shared by the batch: two reports differ by their readings'
    difference exactly."""

    def _noise(self, x, rng):
        return np.full(x.shape, rng.laplace(0.0, self.b))


class SmallBatchBug(Laplace01):
    """A quarter of the noise for a batch of at most 8 readings (a device's w-window)."""

    def _noise(self, x, rng):
        return rng.laplace(0.0, self.b / 4 if x.size <= 8 else self.b, x.shape)
