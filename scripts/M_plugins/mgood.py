"""Honest stream mechanisms written by a user (helper M), from docs/mechanisms.md only."""

import math

import numpy as np
from ldpfleet.protocol.samplers import grid_laplace_scale, laplace_on_grid


class BucketKRR:
    """k-ary RR on K = 5 buckets of [0, 1]; randomised rounding to a bucket centre so
    that the estimate is unbiased; the report is the bucket code 0..4 (an int array)."""

    K = 5

    def __init__(self, eps):
        if not 0 < eps <= 50:
            raise ValueError(f"eps must be in (0, 50], got {eps!r}")
        self.eps = float(eps)
        e = math.exp(self.eps)
        self.p = e / (e + self.K - 1)
        self.q = 1.0 / (e + self.K - 1)
        self.output_low, self.output_high = 0, self.K - 1

    def perturb(self, x, rng):
        s = np.asarray(x, dtype=float) * (self.K - 1)
        lo = np.floor(s)
        code = (lo + (rng.random(s.shape) < s - lo)).astype(np.int64)
        code = np.minimum(code, self.K - 1)
        other = rng.integers(0, self.K - 1, size=s.shape)
        other = other + (other >= code)
        keep = rng.random(s.shape) < self.p
        return np.where(keep, code, other)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == np.round(y)) & (y >= 0) & (y <= self.K - 1)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=np.int64)
        if y.size == 0:
            return 0.5
        share = np.bincount(y, minlength=self.K) / y.size
        freq = (share - self.q) / (self.p - self.q)
        return float(freq @ (np.arange(self.K) / (self.K - 1)))

    def density(self, y, v):
        s = v * (self.K - 1)
        lo = math.floor(s)
        probs = np.full(self.K, 0.0)
        up = s - lo
        probs[min(lo, self.K - 1)] += 1 - up
        if up > 0:
            probs[min(lo + 1, self.K - 1)] += up
        y = np.asarray(y, dtype=np.int64)
        return probs[y] * self.p + (1 - probs[y]) * self.q


class ClippedGridLaplace:
    """Laplace on a 2^-20 grid (exact sampler of ldpfleet), input clipped to [0, 1]
    first (a no-op for valid inputs); report bounded only by the noise."""

    def __init__(self, eps):
        if not 0 < eps <= 50:
            raise ValueError(f"eps must be in (0, 50], got {eps!r}")
        self.eps = float(eps)
        self.scale = grid_laplace_scale(1.0, self.eps)

    def perturb(self, x, rng):
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        return laplace_on_grid(rng, x, self.scale) * np.ones(x.shape)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return np.isfinite(y) & (y * 2**20 == np.round(y * 2**20))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(y.mean()) if y.size else 0.5

    def density(self, y, v):
        b = float(self.scale)
        return np.exp(-np.abs(np.asarray(y, dtype=float) - v) / b) / (2 * b)


class TwoSidedGeometric:
    """Exact sampler without floats in the noise: round x at random to k/M (M = 16),
    add a two-sided geometric Z with ratio alpha = exp(-eps / M) built from two
    rng.geometric draws; report (k + Z) / M. Sensitivity of k is M."""

    M = 16

    def __init__(self, eps):
        if not 0 < eps <= 50:
            raise ValueError(f"eps must be in (0, 50], got {eps!r}")
        self.eps = float(eps)
        self.alpha = math.exp(-self.eps / self.M)

    def perturb(self, x, rng):
        s = np.asarray(x, dtype=float) * self.M
        lo = np.floor(s)
        k = (lo + (rng.random(s.shape) < s - lo)).astype(np.int64)
        p = 1 - self.alpha
        z = rng.geometric(p, size=s.shape) - rng.geometric(p, size=s.shape)
        return (k + z) / self.M

    def in_domain(self, y):
        j = np.asarray(y, dtype=float) * self.M
        return np.isfinite(j) & (j == np.round(j))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(y.mean()) if y.size else 0.5


class UnaryFloat:
    """Symmetric unary encoding of K = 4 buckets (one-hot after randomised rounding),
    each bit flipped with prob 1/(1 + e^(eps/2)); the report is the float estimate of x
    computed from the noisy bit vector (post-processing)."""

    K = 4

    def __init__(self, eps):
        if not 0 < eps <= 50:
            raise ValueError(f"eps must be in (0, 50], got {eps!r}")
        self.eps = float(eps)
        e = math.exp(self.eps / 2)
        self.p = e / (1 + e)  # keep a bit
        self.q = 1 - self.p
        self.levels = np.arange(self.K) / (self.K - 1)

    def perturb(self, x, rng):
        s = np.asarray(x, dtype=float) * (self.K - 1)
        lo = np.floor(s)
        code = np.minimum((lo + (rng.random(s.shape) < s - lo)).astype(np.int64), self.K - 1)
        onehot = code[..., None] == np.arange(self.K)
        keep = rng.random(onehot.shape) < self.p
        bits = np.where(keep, onehot, ~onehot).astype(float)
        est = (bits - self.q) / (self.p - self.q)
        return est @ self.levels

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(y.mean()) if y.size else 0.5


class CountingDuchi:
    """Duchi's mechanism with state across calls done right: a call counter and a lazily
    built constant, reports a fresh draw every time."""

    def __init__(self, eps):
        if not 0 < eps <= 50:
            raise ValueError(f"eps must be in (0, 50], got {eps!r}")
        self.eps = float(eps)
        self.calls = 0
        self._c = None

    @property
    def c(self):
        if self._c is None:
            self._c = (math.exp(self.eps) + 1) / (math.exp(self.eps) - 1)
        return self._c

    def perturb(self, x, rng):
        self.calls += 1
        t = 2 * np.asarray(x, dtype=float) - 1
        up = rng.random(t.shape) < 0.5 + t / (2 * self.c)
        return np.where(up, self.c, -self.c)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return np.isclose(np.abs(y), self.c, rtol=0, atol=1e-12)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float((y.mean() + 1) / 2) if y.size else 0.5

    def density(self, y, v):
        t = 2 * v - 1
        pu = 0.5 + t / (2 * self.c)
        return np.where(np.asarray(y) > 0, pu, 1 - pu)


class SharedRR:
    """One-bit RR whose budget is a constructor argument with a share of it spent;
    `share` has a default, so Cls(eps) works."""

    def __init__(self, eps, share=0.75):
        if not 0 < eps <= 50:
            raise ValueError(f"eps must be in (0, 50], got {eps!r}")
        self.eps = float(eps)
        self.p = 1 / (1 + math.exp(-self.eps * share))

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        bit = rng.random(x.shape) < x
        keep = rng.random(x.shape) < self.p
        return np.where(keep, bit, ~bit).astype(np.int8)

    def in_domain(self, y):
        y = np.asarray(y)
        return (y == 0) | (y == 1)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        if y.size == 0:
            return 0.5
        return np.float64((y.mean() - (1 - self.p)) / (2 * self.p - 1))


def plain_function(x, rng, eps=1.0):
    """A mechanism as a plain function (the docs say this is refused)."""
    return np.asarray(x) + rng.laplace(0, 1 / eps, np.shape(x))


class ThreeLevel:
    """Reports one of {-a, 0.5, 1 + a}: a three-output mechanism with density,
    P(-a) = (1-x) r, P(1+a) = x r, P(0.5) = 1 - r, r chosen so that outputs' ratios are
    <= e^eps: P(-a | x=0) / P(-a | x=1) is r / 0 ... so mix in uniform: each output has
    floor prob f. Estimate unbiased by inversion."""

    def __init__(self, eps):
        if not 0 < eps <= 50:
            raise ValueError(f"eps must be in (0, 50], got {eps!r}")
        self.eps = float(eps)
        e = math.exp(self.eps)
        # P(hi | x) = f + g x, P(lo | x) = f + g (1 - x), P(mid) = 1 - 2f - g
        # ratio (f + g) / f = e  ->  g = f (e - 1); take the middle at f too: 3f + g = 1
        self.f = 1 / (e + 2)
        self.g = self.f * (e - 1)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        u = rng.random(x.shape)
        hi = self.f + self.g * x
        lo = self.f + self.g * (1 - x)
        return np.where(u < hi, 2.0, np.where(u < hi + lo, -1.0, 0.5))

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == 2.0) | (y == -1.0) | (y == 0.5)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        if y.size == 0:
            return 0.5
        d = np.mean(y == 2.0) - np.mean(y == -1.0)  # = g (2x - 1)
        return float((d / self.g + 1) / 2)

    def density(self, y, v):
        y = np.asarray(y, dtype=float)
        return np.where(
            y == 2.0,
            self.f + self.g * v,
            np.where(y == -1.0, self.f + self.g * (1 - v), 1 - 2 * self.f - self.g),
        )
