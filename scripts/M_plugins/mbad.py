"""Buggy stream mechanisms written by a user (helper M). Each docstring says the bug."""

import math
import random

import numpy as np
from ldpfleet.protocol.samplers import grid_laplace_scale, laplace_on_grid


class _GridLaplace:
    factor = 1.0  # scale multiplier (1 = honest)

    def __init__(self, eps):
        if not 0 < eps <= 50:
            raise ValueError(f"eps must be in (0, 50], got {eps!r}")
        self.eps = float(eps)
        self.scale = grid_laplace_scale(1.0, self.eps) * self.factor

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return laplace_on_grid(rng, x, self.scale) * np.ones(x.shape)

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(y.mean()) if y.size else 0.5


class ScaleHalf(_GridLaplace):
    """Bug: Laplace scale off by a factor 2 (too little noise: 2 eps)."""

    from fractions import Fraction

    factor = Fraction(1, 2)


class ScaleTiny(_GridLaplace):
    """Bug: Laplace scale off by a factor 10 (10 eps)."""

    from fractions import Fraction

    factor = Fraction(1, 10)


class DeclaresDouble(_GridLaplace):
    """Bug: states self.eps = 2 eps while using eps (declared larger than used)."""

    def __init__(self, eps):
        super().__init__(eps)
        self.eps = 2 * float(eps)


class DeclaresHalf(_GridLaplace):
    """Bug: states self.eps = eps / 2 while using eps (declared smaller than used)."""

    def __init__(self, eps):
        super().__init__(eps)
        self.eps = float(eps) / 2


class UsesDoubleNoEpsAttr(_GridLaplace):
    """Bug: spends 2 eps and states no eps at all."""

    def __init__(self, eps):
        super().__init__(2 * eps)
        del self.eps


class GlobalNumpy(_GridLaplace):
    """Bug: noise from the global np.random, unseeded."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return x + np.random.laplace(0, 1 / self.eps, x.shape)


class StdlibRandom(_GridLaplace):
    """Bug: noise from the stdlib random module, unseeded; rng used for a dummy draw."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        rng.random()
        return np.array(
            [v + random.expovariate(self.eps) - random.expovariate(self.eps) for v in x]
        )


class RareGlobal(_GridLaplace):
    """Bug: honest grid Laplace, but 1 call in 50 adds global-RNG noise (not reproducible)."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        if np.random.random() < 0.02:
            y = y + np.round(np.random.laplace(0, 1 / self.eps, y.shape) * 2**20) / 2**20
        return y


class MicroLeak(_GridLaplace):
    """Bug: report = noisy value on a 1/1024 grid plus x * 2^-20: the input sits in the
    report's bits between the grid and 2^-20 (not the lowest byte)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = laplace_on_grid(rng, x, self.scale, grid=2.0**-10) * np.ones(x.shape)
        return y + np.floor(x * 1023) * 2.0**-20


class RoundingLeak(_GridLaplace):
    """Bug: float Laplace rounded to 3 decimals, plus x rounded to 1e-6 (x in the 4th-6th
    decimals)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        noisy = np.round(x + rng.laplace(0, 1 / self.eps, x.shape), 3)
        return noisy + np.round(x * 1e-4, 6)


class TruncatedNoise(_GridLaplace):
    """Bug: the noise is clipped to [-2/eps, 2/eps] (truncated Laplace: not pure LDP,
    reports above 2/eps can only come from inputs > 0)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        b = float(self.scale)
        return x + np.clip(
            laplace_on_grid(rng, np.zeros(x.shape), b) * np.ones(x.shape), -2 * b, 2 * b
        )


class ClipAfterNoise(_GridLaplace):
    """Bug: report clipped to [0, 1] after the noise (private, but estimate_mean biased)."""

    def perturb(self, x, rng):
        return np.clip(super().perturb(x, rng), 0.0, 1.0)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y >= 0) & (y <= 1)


class DecayingNoise(_GridLaplace):
    """Bug: state leak: the noise scale shrinks with every call (1 / (1 + calls / 4))."""

    def __init__(self, eps):
        super().__init__(eps)
        self.calls = 0

    def perturb(self, x, rng):
        self.calls += 1
        x = np.asarray(x, dtype=float)
        return laplace_on_grid(rng, x, self.scale / (1 + self.calls // 4)) * np.ones(x.shape)


class CachedNoise(_GridLaplace):
    """Bug: state leak: noise drawn once per batch shape and re-used on later calls."""

    def __init__(self, eps):
        super().__init__(eps)
        self.cache = {}

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        if x.shape not in self.cache:
            self.cache[x.shape] = laplace_on_grid(rng, np.zeros(x.shape), self.scale) * np.ones(
                x.shape
            )
        return x + self.cache[x.shape]


class PrevInput(_GridLaplace):
    """Bug: state leak: each report carries the previous call's first input in the clear
    as 1e-9 * x_prev (an audit world's runs all see the same previous inputs)."""

    def __init__(self, eps):
        super().__init__(eps)
        self.prev = 0.0

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = super().perturb(x, rng) + self.prev
        self.prev = float(np.round(x.flat[0] * 1000)) * 2.0**-30 if x.size else 0.0
        return y


class DropsLastOnHigh(_GridLaplace):
    """Bug: data-dependent length: drops the last report when the batch mean is > 0.95."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        x = np.asarray(x, dtype=float)
        return y[:-1] if x.size > 1 and x.mean() > 0.95 else y


class IntOnZero(_GridLaplace):
    """Bug: data-dependent type: returns a list when every input is exactly 0.5."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        return y.tolist() if np.all(np.asarray(x) == 0.5) else y


class NaNNearThird(_GridLaplace):
    """Bug: NaN for inputs in (0.3333, 0.3334) (e.g. 0.5 / (x - 1/3) style code)."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        x = np.asarray(x, dtype=float)
        return np.where((x > 0.3333) & (x < 0.3334), np.nan, y)


class InfAtOne(_GridLaplace):
    """Bug: inf for x == 1 exactly (log(1 - x))."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        x = np.asarray(x, dtype=float)
        with np.errstate(divide="ignore"):
            return y - np.where(x == 1.0, np.log(1 - x), 0.0)


class RaisesNearHalf(_GridLaplace):
    """Bug: raises for inputs within 1e-4 of 0.6 (a table lookup off by one)."""

    table = tuple(range(10000))

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        for v in np.asarray(x, dtype=float):
            if abs(v - 0.6) < 1e-4:
                _ = self.table[10000]
        return y


class ReturnsList(_GridLaplace):
    """Bug: wrong return type (a list)."""

    def perturb(self, x, rng):
        return list(super().perturb(x, rng))


class ReturnsFloat32Leaky(_GridLaplace):
    """Returns float32 (allowed: converted). Honest but coarse: noise on grid 2^-10."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return (laplace_on_grid(rng, x, self.scale, grid=2.0**-10) * np.ones(x.shape)).astype(
            np.float32
        )


class MeanArray(_GridLaplace):
    """Bug: estimate_mean returns a 1-element array."""

    def estimate_mean(self, y):
        return np.atleast_1d(np.mean(y))


class OnePerBatchNoise(_GridLaplace):
    """Bug: one noise draw per call (rng.laplace(0, b) without size)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return np.round((x + rng.laplace(0, 1 / self.eps)) * 2**20) / 2**20


class KRRWrongP:
    """Bug: k-ary RR with p = e^eps / (e^eps + 1) (the binary formula) on K = 6 levels:
    the real ratio is p / ((1 - p) / 5) = 5 e^eps."""

    K = 6

    def __init__(self, eps):
        self.eps = float(eps)
        e = math.exp(self.eps)
        self.p = e / (e + 1)
        self.q = (1 - self.p) / (self.K - 1)

    def perturb(self, x, rng):
        s = np.asarray(x, dtype=float) * (self.K - 1)
        lo = np.floor(s)
        code = np.minimum((lo + (rng.random(s.shape) < s - lo)).astype(np.int64), self.K - 1)
        other = rng.integers(0, self.K - 1, size=s.shape)
        other = other + (other >= code)
        return np.where(rng.random(s.shape) < self.p, code, other)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == np.round(y)) & (y >= 0) & (y <= self.K - 1)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=np.int64)
        if y.size == 0:
            return 0.5
        share = np.bincount(y, minlength=self.K) / y.size
        return float(((share - self.q) / (self.p - self.q)) @ (np.arange(self.K) / (self.K - 1)))


class LessNoiseForLongBatches(_GridLaplace):
    """Bug: a quarter of the noise when a call holds more than 8 readings (a device's
    whole stream privatised in one call)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        scale = self.scale / 4 if x.size > 8 else self.scale
        return laplace_on_grid(rng, x, scale) * np.ones(x.shape)


class MemoRR:
    """Bug: RAPPOR-style memoisation: the same input gets its first report again."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.p = 1 / (1 + math.exp(-self.eps))
        self.memo = {}

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        out = np.empty(x.shape)
        for i, v in enumerate(x):
            if v not in self.memo:
                bit = rng.random() < v
                self.memo[v] = float(bit if rng.random() < self.p else not bit)
            out[i] = self.memo[v]
        rng.random()
        return out

    def in_domain(self, y):
        y = np.asarray(y)
        return (y == 0) | (y == 1)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float((y.mean() - (1 - self.p)) / (2 * self.p - 1)) if y.size else 0.5
