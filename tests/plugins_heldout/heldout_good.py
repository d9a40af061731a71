"""Held-out CORRECT stream-mechanism plugins, written as users write them (helper P).

Each class is eps-LDP, draws every random number from the ``rng`` it is given and has an
unbiased ``estimate_mean``: ``ldpfleet audit`` must find no violation and a fleet run must
complete. Data for ``tests/unit/test_plugins_heldout.py``; not imported by ldpfleet.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np
from ldpfleet.protocol.duchi import DuchiMechanism
from ldpfleet.protocol.samplers import GRID, grid_laplace_scale, laplace_on_grid


class PlainRR:
    """Class with __init__(eps): Bernoulli(x) bit, then Warner's randomised response.
    Discrete outputs {0, 1}, no stated eps, no stated range."""

    def __init__(self, eps):
        self.p = math.exp(eps) / (1 + math.exp(eps))

    def perturb(self, x, rng):
        bit = rng.random(len(x)) < x
        keep = rng.random(len(x)) < self.p
        return np.where(keep, bit, ~bit).astype(np.int64)  # integer dtype

    def in_domain(self, y):
        return np.isin(y, (0, 1))

    def estimate_mean(self, y):
        return (float(np.mean(y)) - (1 - self.p)) / (2 * self.p - 1)


@dataclass
class DataclassLaplace:
    """A dataclass: exact grid Laplace, reports clipped to a stated range."""

    eps: float
    tail: float = 30.0
    output_low: float = field(init=False)
    output_high: float = field(init=False)

    def __post_init__(self):
        if not 0 < self.eps <= 50:
            raise ValueError(f"eps must be in (0, 50], got {self.eps}")
        self.output_low = -self.tail / self.eps
        self.output_high = 1 + self.tail / self.eps

    def perturb(self, x, rng):
        scale = grid_laplace_scale(1.0, self.eps)
        y = laplace_on_grid(rng, np.asarray(x, dtype=float), scale, GRID)
        return np.clip(y, self.output_low, self.output_high)

    def in_domain(self, y):
        return (y >= self.output_low) & (y <= self.output_high)

    def estimate_mean(self, y):
        return np.mean(y)  # a numpy float64


class LoggedDuchi(DuchiMechanism):
    """Subclass of a built-in (a frozen dataclass): its own constructor and estimate_mean."""

    def __init__(self, eps):
        super().__init__(eps)

    def estimate_mean(self, y):
        t = float(np.mean(np.asarray(y, dtype=float)))
        return (t + 1) / 2


class PiecewiseWithDensity:
    """The Piecewise Mechanism written from the paper, with its density (LR witness)."""

    def __init__(self, eps):
        self.eps = float(eps)
        h = math.exp(eps / 2)
        self.C = (h + 1) / (h - 1)
        self.p = (math.exp(eps) - h) / (2 * h + 2)
        self.output_low, self.output_high = -self.C, self.C

    def _lr(self, t):
        left = (self.C + 1) / 2 * t - (self.C - 1) / 2
        return left, left + self.C - 1

    def perturb(self, x, rng):
        t = 2 * np.asarray(x, dtype=float) - 1
        left, right = self._lr(t)
        centre = rng.random(t.shape) < math.exp(self.eps / 2) / (math.exp(self.eps / 2) + 1)
        u = rng.random(t.shape)
        inside = left + u * (right - left)
        # outside: uniform on [-C, left) U (right, C], total length C + 1
        w = u * (self.C + 1)
        span_left = left + self.C
        outside = np.where(w < span_left, -self.C + w, right + (w - span_left))
        return np.where(centre, inside, outside)

    def in_domain(self, y):
        return np.abs(y) <= self.C

    def estimate_mean(self, y):
        return (float(np.mean(y)) + 1) / 2

    def density(self, y, v):
        left, right = self._lr(2 * v - 1)
        y = np.asarray(y, dtype=float)
        inside = (y >= left) & (y <= right)
        return np.where(inside, self.p, self.p * math.exp(-self.eps))


class KaryRandomisedRounding:
    """Discrete: randomised rounding to K levels, then K-ary randomised response."""

    K = 5

    def __init__(self, eps):
        self.eps = eps
        k = self.K
        self.p = math.exp(eps) / (math.exp(eps) + k - 1)
        self.q = 1 / (math.exp(eps) + k - 1)
        self.output_low, self.output_high = 0, k - 1  # ints

    def perturb(self, x, rng):
        k = self.K
        pos = np.asarray(x) * (k - 1)
        low = np.floor(pos)
        level = (low + (rng.random(pos.shape) < pos - low)).astype(int)
        level = np.minimum(level, k - 1)
        keep = rng.random(pos.shape) < self.p - self.q  # keep, else uniform over all K
        other = rng.integers(0, k, pos.shape)
        return np.where(keep, level, other)

    def in_domain(self, y):
        return np.isin(y, np.arange(self.K))

    def estimate_mean(self, y):
        k = self.K
        mean_level = (float(np.mean(y)) - (k - 1) / 2 * (1 - (self.p - self.q))) / (self.p - self.q)
        return mean_level / (k - 1)

    def density(self, y, v):
        pos = v * (self.K - 1)
        low = math.floor(pos)
        probs = np.full(self.K, 0.0)
        probs[min(low, self.K - 1)] += 1 - (pos - low)
        if pos - low > 0:
            probs[low + 1] += pos - low
        law = (self.p - self.q) * probs + self.q
        return law[np.asarray(y, dtype=int)]


class SquareWaveOwn:
    """Square Wave written by hand with a stated range [-b, 1 + b] and its density."""

    def __init__(self, eps):
        if eps <= 0:
            raise ValueError("eps must be positive")
        self.eps = eps
        e = math.exp(eps)
        self.b = (eps * e - e + 1) / (2 * e * (e - 1 - eps))
        self.p = e / (2 * self.b * e + 1)
        self.q = 1 / (2 * self.b * e + 1)
        self.output_low, self.output_high = -self.b, 1 + self.b

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        b = self.b
        inside = rng.random(x.shape) < 2 * b * self.p
        u = rng.random(x.shape)
        near = x - b + 2 * b * u
        w = u  # uniform on the rest ([-b, x - b) U (x + b, 1 + b], length 1)
        far = np.where(w < x, -b + w, x + b + (w - x))
        return np.where(inside, near, far)

    def in_domain(self, y):
        return (y >= -self.b) & (y <= 1 + self.b)

    def estimate_mean(self, y):
        # E[y] = q (1 + 2b)(1/2) + (p - q) 2b x  ->  solve for x
        bias = self.q * (1 + 2 * self.b) / 2
        return (float(np.mean(y)) - bias) / ((self.p - self.q) * 2 * self.b)

    def density(self, y, v):
        return np.where(np.abs(np.asarray(y) - v) <= self.b, self.p, self.q)


class CachedTables:
    """Stateful object: lazily built tables and a call counter; randomness from rng only."""

    def __init__(self, eps):
        self.eps = eps
        self._table = None
        self.calls = 0

    def _probs(self):
        if self._table is None:
            e = math.exp(self.eps)
            self._table = {"p": e / (1 + e)}
        return self._table

    def perturb(self, x, rng):
        self.calls += 1
        p = self._probs()["p"]
        bit = rng.binomial(1, np.asarray(x, dtype=float))
        flip = rng.binomial(1, 1 - p, size=bit.shape)
        return (bit ^ flip).astype(float)

    def in_domain(self, y):
        return (y == 0) | (y == 1)

    def estimate_mean(self, y):
        p = self._probs()["p"]
        return (np.mean(y) - (1 - p)) / (2 * p - 1)


class ScalarLoop:
    """Scalar-only perturb: a Python loop over Python floats, reports rebuilt as an array;
    randomness from a stdlib ``random.Random`` seeded from rng (a function of rng)."""

    def __init__(self, eps):
        self.eps = eps
        self.p = math.exp(eps) / (1 + math.exp(eps))

    def _one(self, v, r):
        bit = 1.0 if r.random() < v else 0.0
        return bit if r.random() < self.p else 1.0 - bit

    def perturb(self, x, rng):
        r = random.Random(int(rng.integers(2**63)))
        return np.array([self._one(float(v), r) for v in x])

    def in_domain(self, y):
        return np.array([v in (0.0, 1.0) for v in y], dtype=bool)

    def estimate_mean(self, y):
        total = sum(float(v) for v in y)
        return (total / len(y) - (1 - self.p)) / (2 * self.p - 1)  # a Python float


class ZeroDimMean:
    """estimate_mean answers a 0-d array (np.where on scalars), perturb a child generator."""

    def __init__(self, eps):
        self.eps = eps
        self.p = math.exp(eps) / (1 + math.exp(eps))

    def perturb(self, x, rng):
        child = np.random.default_rng(rng.integers(2**63))  # a function of rng
        bit = child.random(x.shape) < x
        keep = child.random(x.shape) < self.p
        return np.where(keep, bit, ~bit).astype(float)

    def in_domain(self, y):
        return (y == 0) | (y == 1)

    def estimate_mean(self, y):
        raw = (np.mean(y) - (1 - self.p)) / (2 * self.p - 1)
        return np.where(len(y) > 0, raw, 0.5)  # a 0-d ndarray


class GeneratorMethods:
    """numpy Generator methods (choice, permutation-free), outputs in {-1, +1} * C."""

    def __init__(self, eps):
        self.eps = eps
        e = math.exp(eps)
        self.C = (e + 1) / (e - 1)
        self.output_low, self.output_high = -self.C, self.C

    def perturb(self, x, rng):
        t = 2 * np.asarray(x, dtype=float) - 1
        up = rng.uniform(size=t.shape) < 0.5 + t / (2 * self.C)
        return rng.choice([self.C], size=t.shape) * np.where(up, 1.0, -1.0)

    def in_domain(self, y):
        return np.isclose(np.abs(y), self.C, rtol=0, atol=0)

    def estimate_mean(self, y):
        return (float(np.mean(y)) + 1) / 2
