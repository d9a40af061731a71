"""Held-out SUBTLY WRONG stream-mechanism plugins (helper P).

Each has one bug a user could plausibly write. Privacy bugs must make ``ldpfleet audit``
report a violation (exit 1) or be refused when the mechanism loads; contract bugs (NaN,
reports outside the stated range, an input changed in place, randomness not from the rng)
must be refused with one sentence, counted, and never aggregated. Data for
``tests/unit/test_plugins_heldout.py``; not imported by ldpfleet.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
from ldpfleet.protocol.samplers import GRID, grid_laplace_scale, laplace_on_grid

np.random.seed(1234)  # a user's "reproducible" module-level seed (GlobalSeededAtImport)


class _RR:
    """Bernoulli(x) bit, then randomised response: the honest base of several bugs."""

    def __init__(self, eps):
        self.eps = eps
        self.p = math.exp(eps) / (1 + math.exp(eps))
        self.output_low, self.output_high = 0.0, 1.0

    def keep_prob(self, x):
        return np.full(np.shape(x), self.p)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        bit = rng.random(x.shape) < x
        keep = rng.random(x.shape) < self.keep_prob(x)
        return np.where(keep, bit, ~bit).astype(float)

    def in_domain(self, y):
        return (y == 0) | (y == 1)

    def estimate_mean(self, y):
        return (float(np.mean(y)) - (1 - self.p)) / (2 * self.p - 1)


class TwoEpsAboveNine(_RR):
    """Spends 2 eps for inputs above 0.9 ("near the top we want accuracy")."""

    def keep_prob(self, x):
        hi = math.exp(2 * self.eps) / (1 + math.exp(2 * self.eps))
        return np.where(np.asarray(x) > 0.9, hi, self.p)


class LowBitsLeak:
    """Exact grid Laplace, but the input's first byte hidden in the report's low mantissa
    bits (a "debug tag"): far below the grid step of any witness."""

    def __init__(self, eps):
        self.eps = eps
        self.scale = grid_laplace_scale(1.0, eps)
        self.output_low, self.output_high = -30 / eps, 1 + 30 / eps

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = np.clip(laplace_on_grid(rng, x, self.scale, GRID), self.output_low, self.output_high)
        tag = np.round(x * 255).astype(np.uint64)
        bits = (y.view(np.uint64) & ~np.uint64(0xFF)) | tag
        return bits.view(np.float64)

    def in_domain(self, y):
        return (y >= self.output_low) & (y <= self.output_high)

    def estimate_mean(self, y):
        return float(np.mean(y))


class ScaleDependsOnX:
    """Laplace noise whose scale shrinks with x ("less noise for large readings")."""

    def __init__(self, eps):
        self.eps = eps
        self.output_low, self.output_high = -40 / eps, 1 + 40 / eps

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        scale = (1.0 - 0.5 * x) / self.eps
        y = laplace_on_grid(rng, np.zeros_like(x), 1.0, GRID) * scale + x
        return np.clip(y, self.output_low, self.output_high)

    def in_domain(self, y):
        return (y >= self.output_low) & (y <= self.output_high)

    def estimate_mean(self, y):
        return float(np.mean(y))


class DeterministicAtEdges(_RR):
    """Skips the randomisation for inputs exactly 0 or 1 ("already extreme")."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        x = np.asarray(x, dtype=float)
        edge = (x == 0.0) | (x == 1.0)
        return np.where(edge, x, y)


class ReseededEachCall(_RR):
    """Ignores the rng passed in: a fixed-seed generator each call ("reproducible")."""

    def perturb(self, x, rng):
        return super().perturb(x, np.random.default_rng(42))


class GlobalSeededAtImport(_RR):
    """Ignores the rng passed in: numpy's global RNG, seeded once at import."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        bit = np.random.random(x.shape) < x
        keep = np.random.random(x.shape) < self.p
        return np.where(keep, bit, ~bit).astype(float)


class ClipsInputRangeRounded:
    """Duchi on x clipped to [0.1, 0.9] (a biased estimate), and the stated range C cut to
    6 decimals, so +C lies just above output_high."""

    def __init__(self, eps):
        self.eps = eps
        e = math.exp(eps)
        self.C = (e + 1) / (e - 1)
        high = math.floor(self.C * 1e6) / 1e6
        self.output_low, self.output_high = -high, high

    def perturb(self, x, rng):
        t = 2 * np.clip(np.asarray(x, dtype=float), 0.1, 0.9) - 1
        up = rng.random(t.shape) < 0.5 + t / (2 * self.C)
        return np.where(up, self.C, -self.C)

    def in_domain(self, y):
        return np.abs(np.abs(y) - self.C) < 1e-9

    def estimate_mean(self, y):
        return (float(np.mean(y)) + 1) / 2


class RarelyOutOfRange(_RR):
    """One report in 2,000 is 1.5 ("a sentinel"), outside the stated range [0, 1]."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        return np.where(rng.random(y.shape) < 5e-4, 1.5, y)

    def in_domain(self, y):
        return np.isfinite(y)


class BiasedEstimate(_RR):
    """Private, but estimate_mean forgets to undo the randomised response's shrinkage."""

    def estimate_mean(self, y):
        return float(np.mean(y))


class EpsFromClassAttribute(_RR):
    """Reads its working budget from a class attribute, not from the instance."""

    WORKING_EPS = 2.0

    def keep_prob(self, x):
        e = math.exp(type(self).WORKING_EPS)
        return np.full(np.shape(x), e / (1 + e))


class RareNaN(_RR):
    """One report in 2,000 is NaN (a 0/0 in a rarely taken branch)."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        return np.where(rng.random(y.shape) < 5e-4, np.nan, y)

    def in_domain(self, y):
        return np.ones(np.shape(y), dtype=bool)


class MutatesInput(_RR):
    """Clamps its input in place before privatising (x is the caller's array)."""

    def perturb(self, x, rng):
        np.clip(x, 0.01, 0.99, out=x)
        return super().perturb(x, rng)


class SleepsPerCall(_RR):
    """Blocks 0.2 s per call (a network round trip to a "noise service")."""

    def perturb(self, x, rng):
        time.sleep(0.2)
        return super().perturb(x, rng)


class ChunkedForgetsTail(_RR):
    """Privatises in chunks of 256 (to bound memory) but forgets the last partial chunk,
    left NaN: the load-time sample (exactly 256 inputs) cannot see it, a device with more
    than 256 readings in one batch can."""

    CHUNK = 256

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        out = np.full(x.shape, np.nan)
        for start in range(0, len(x) - self.CHUNK + 1, self.CHUNK):
            out[start : start + self.CHUNK] = super().perturb(x[start : start + self.CHUNK], rng)
        return out

    def in_domain(self, y):
        return np.ones(np.shape(y), dtype=bool)


class SqueezesOutput(_RR):
    """``np.squeeze`` on its reports ("in case x came as a column"): one reading, the batch
    of a live device, gives a 0-d array instead of shape (1,)."""

    def perturb(self, x, rng):
        return np.squeeze(super().perturb(x, rng))


RELEASE = threading.Event()  # a test sets it to let a blocked call return


class BlocksForever(_RR):
    """Waits for a "noise service" that never answers: perturb does not return."""

    def perturb(self, x, rng):
        RELEASE.wait()
        return super().perturb(x, rng)
