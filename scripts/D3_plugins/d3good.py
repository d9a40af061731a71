"""Helper D's round-3 HONEST plugins of unusual shapes (2026-12-06): each is eps-LDP per
reading (composition of shares summing to eps, data-independent coins and choices,
post-processing, exact discrete laws), so the audit must stay inconclusive."""

import math

import numpy as np
from d3common import GridLaplace, KaryLevels, check_eps


class SampledCoordinate(GridLaplace):
    """One coordinate of the batch, chosen uniformly from rng, reported as n (x_j + noise);
    the others report 0. Reading i enters only report i, through grid Laplace at eps."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = np.zeros_like(x)
        if x.size:
            j = int(rng.integers(0, x.size))
            y[j] = x.size * self.noise(rng, x[j : j + 1])[0]
        return y


class BitwiseRRSplit:
    """x's 6 leading bits, each through RR at eps / 6 (basic composition: eps in all)."""

    bits = 6

    def __init__(self, eps):
        self.eps = check_eps(eps)
        self.p = 1 / (1 + math.exp(-self.eps / self.bits))

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        code = np.minimum(np.floor(x * 2**self.bits), 2**self.bits - 1).astype(np.int64)
        y = np.zeros(x.shape)
        for i in range(self.bits):
            bit = (code >> (self.bits - 1 - i)) & 1
            noisy = np.where(rng.random(x.shape) < self.p, bit, 1 - bit)
            y += ((noisy - (1 - self.p)) / (2 * self.p - 1)) * 2.0 ** -(i + 1)
        return y

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y) + 2.0 ** -(self.bits + 1)) if y.size else 0.5


class MedianOfThreeThirds(GridLaplace):
    """The median of three grid-Laplace reports at eps / 3 each: post-processing of a
    composition that spends eps."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return np.median(np.stack([self.noise(rng, x, 1 / 3) for _ in range(3)]), axis=0)


class SubsampleDummyHonest(GridLaplace):
    """With probability 1/2 the reading's grid-Laplace report at eps, else a dummy report
    of 0.5 at eps: a mixture by a data-independent coin, at most e^eps between inputs."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        src = np.where(rng.random(x.shape) < 0.5, x, 0.5)
        return self.noise(rng, src)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float((np.mean(y) - 0.25) / 0.5) if y.size else 0.5


class ExpMechCorrect:
    """Exponential mechanism over 11 levels, utility -|level/10 - x| (sensitivity 1),
    weights exp(eps u / 2): eps-DP; states its density."""

    def __init__(self, eps):
        self.eps = check_eps(eps)
        self.levels = np.arange(11) / 10

    def _probs(self, x):
        u = -np.abs(self.levels[None, :] - np.asarray(x, dtype=float).reshape(-1)[:, None])
        w = np.exp(self.eps * u / 2)
        return w / w.sum(axis=1, keepdims=True)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        cdf = np.cumsum(self._probs(x), axis=1)
        r = rng.random((x.size, 1))
        return (np.minimum((r > cdf).sum(axis=1), 10) / 10).reshape(x.shape)

    def in_domain(self, y):
        c = np.asarray(y, dtype=float) * 10
        return (np.abs(c - np.rint(c)) < 1e-9) & (c >= 0) & (c <= 10)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5

    def density(self, y, v):
        idx = np.rint(np.asarray(y, dtype=float) * 10).astype(int)
        return self._probs(np.full(1, v))[0][idx]


class NegativeCodesKRR(KaryLevels):
    """5-level RR reported as int16 codes -2 .. 2, with its density."""

    k = 5

    def perturb(self, x, rng):
        return (self.respond(self.level(x), rng) - 2).astype(np.int16)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == np.rint(y)) & (y >= -2) & (y <= 2)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        if not y.size:
            return 0.5
        return float(((np.mean(y) + 2) / 4 - self.q * self.k / 2) / (self.p - self.q))

    def density(self, y, v):
        code = int(np.rint(v * 4))
        return np.where(np.rint(np.asarray(y, dtype=float)) + 2 == code, self.p, self.q)


class RandomSignZeroRR(KaryLevels):
    """8-level RR whose level-0 reports carry a sign drawn from rng (-0.0 or 0.0): the
    sign of zero is a fair coin, not the reading's."""

    def perturb(self, x, rng):
        y = self.respond(self.level(x), rng) / (self.k - 1)
        neg = rng.random(y.shape) < 0.5
        return np.where((y == 0.0) & neg, -0.0, y)


class OffsetBitSplit(GridLaplace):
    """Two shares: RR at 0.3 eps on 'x > 1/2', grid Laplace at 0.7 eps on x, sent as one
    number 1000 * bit + laplace (composition: eps in all)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        p = 1 / (1 + math.exp(-0.3 * self.eps))
        bit = (x > 0.5).astype(float)
        noisy = np.where(rng.random(x.shape) < p, bit, 1 - bit)
        return 1000.0 * noisy + self.noise(rng, x, 0.7)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y - 1000.0 * (y > 500))) if y.size else 0.5


class TinyMagnitude(GridLaplace):
    """Grid Laplace reported in units of 1e-7 ('microvolts'): y * 2^-23 (exact scaling)."""

    def perturb(self, x, rng):
        return self.noise(rng, x) * 2.0**-23

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y) * 2.0**23) if y.size else 0.5


class TruncatedGeometric5:
    """x rounded to 5 levels, then a geometric law truncated to those 5 levels and
    renormalised, alpha = e^(-eps/4) per level: the largest ratio is e^eps (levels 0 vs 4
    at report 0; others smaller), with its density."""

    k = 5

    def __init__(self, eps):
        self.eps = check_eps(eps)
        a = math.exp(-self.eps / (self.k - 1))
        j = np.arange(self.k)
        self.table = a ** np.abs(j[:, None] - j[None, :])
        self.table /= self.table.sum(axis=1, keepdims=True)
        self.cdf = np.cumsum(self.table, axis=1)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        code = np.rint(x * (self.k - 1)).astype(int)
        r = rng.random(x.shape)
        out = (r[..., None] > self.cdf[code]).sum(axis=-1)
        return np.minimum(out, self.k - 1) / (self.k - 1)

    def in_domain(self, y):
        c = np.asarray(y, dtype=float) * (self.k - 1)
        return (np.abs(c - np.rint(c)) < 1e-9) & (c >= 0) & (c <= self.k - 1)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5

    def density(self, y, v):
        code = int(np.rint(v * (self.k - 1)))
        idx = np.rint(np.asarray(y, dtype=float) * (self.k - 1)).astype(int)
        return self.table[code][idx]


class StatefulCounterHonest(GridLaplace):
    """Counts its calls and readings (for a log) and caches its scale: state that leaves
    the reports alone."""

    calls = 0
    readings = 0

    def perturb(self, x, rng):
        self.calls += 1
        self.readings += int(np.asarray(x).size)
        return self.noise(rng, x)


class ReversedBatch(GridLaplace):
    """Grid Laplace computed on the batch reversed, then reversed back (report i is still
    reading i's, noise from rng in another order)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return self.noise(rng, x[::-1])[::-1].copy()
