"""Helper D's round-2 HONEST plugins of unusual shapes (2026-12-06): each is eps-LDP per
report (post-processing, mixtures by data-independent coins, integer or affine report
encodings, shuffles), so the audit must stay inconclusive (eps_LB below the claim)."""

import math

import numpy as np
from d2common import GRID, GridLaplaceBase, geometric_noise, grid_laplace_scale, laplace_on_grid


class ShuffledBatch(GridLaplaceBase):
    """Grid Laplace, then the batch's reports in a random order drawn from rng: a function
    of the multiset of eps-LDP reports (the mean estimate needs no order)."""

    def perturb(self, x, rng):
        noisy = laplace_on_grid(rng, np.asarray(x, dtype=float), self._scale, GRID)
        return noisy[rng.permutation(noisy.size)]


class SortedByReport(GridLaplaceBase):
    """Grid Laplace, then sorted by REPORT value: post-processing of the reports."""

    def perturb(self, x, rng):
        return np.sort(laplace_on_grid(rng, np.asarray(x, dtype=float), self._scale, GRID))


class MixtureCoinRR:
    """With probability s = tanh(eps/2) the randomised-rounding bit, else a fair coin:
    P(1 | 1) / P(1 | 0) = (1 + s) / (1 - s) = e^eps exactly."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.s = math.tanh(self.eps / 2)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        bit = rng.random(x.shape) < x
        coin = rng.random(x.shape) < 0.5
        return np.where(rng.random(x.shape) < self.s, bit, coin).astype(np.int64)

    def in_domain(self, y):
        y = np.asarray(y)
        return (y == 0) | (y == 1)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float((np.mean(y) - (1 - self.s) / 2) / self.s) if y.size else 0.5

    def density(self, y, v):
        one = (1 - self.s) / 2 + self.s * v
        return np.where(np.asarray(y) == 1, one, 1 - one)


class MicroUnitsInt(GridLaplaceBase):
    """Grid Laplace reported as int64 micro-units (round(y * 1e6)): post-processing."""

    def perturb(self, x, rng):
        noisy = laplace_on_grid(rng, np.asarray(x, dtype=float), self._scale, GRID)
        return np.round(noisy * 1e6).astype(np.int64)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return np.isfinite(y) & (y == np.round(y))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y) / 1e6) if y.size else 0.5


class SignBits:
    """Reports -1 / +1: a threshold bit (1 with probability x), kept with e^eps/(1+e^eps)."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.p = 1.0 / (1.0 + math.exp(-self.eps))
        self.output_low, self.output_high = -1.0, 1.0

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        bit = rng.random(x.shape) < x
        keep = rng.random(x.shape) < self.p
        return np.where(keep == bit, 1.0, -1.0)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == -1.0) | (y == 1.0)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        if y.size == 0:
            return 0.5
        # keep == bit: P(+1) = x p + (1 - x)(1 - p)
        return float(((np.mean(y) + 1) / 2 - (1 - self.p)) / (2 * self.p - 1))

    def density(self, y, v):
        plus = v * self.p + (1 - v) * (1 - self.p)
        return np.where(np.asarray(y) == 1.0, plus, 1 - plus)


class ThirdBudget(GridLaplaceBase):
    """Spends eps / 3 (a cautious author): eps_LB should sit near eps / 3."""

    def setup(self):
        self.noise_eps = self.eps / 3


class MixtureLaplaceRR:
    """A fair coin from rng picks the branch: an RR bit reported as 1e6 or 1e6 + 1, or a
    grid Laplace report clipped to [-1e5, 1e5]. Each branch eps-LDP, the coin public."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.p = 1.0 / (1.0 + math.exp(-self.eps))
        self._scale = grid_laplace_scale(1.0, self.eps)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        rr = rng.random(x.shape) < 0.5
        bit = (rng.random(x.shape) < x) == (rng.random(x.shape) < self.p)
        lap = np.clip(laplace_on_grid(rng, x, self._scale, GRID), -1e5, 1e5)
        return np.where(rr, 1e6 + bit, lap)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return ((y >= -1e5) & (y <= 1e5)) | (y == 1e6) | (y == 1e6 + 1)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        if y.size == 0:
            return 0.5
        rr = y >= 1e6
        est = np.where(rr, ((y - 1e6) - (1 - self.p)) / (2 * self.p - 1), y)
        return float(np.mean(est))


class CoarseGeometricDensity:
    """Randomised rounding to 5 levels (1/4 grid), two-sided geometric per level with ratio
    e^(-eps/4) (sensitivity 4 levels), with its density: eps-LDP."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.alpha = math.exp(-self.eps / 4)

    def perturb(self, x, rng):
        s = np.asarray(x, dtype=float) * 4
        lo = np.floor(s)
        k = lo + (rng.random(s.shape) < s - lo)
        return (k + geometric_noise(rng, self.alpha, s.shape)) / 4.0

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return np.isfinite(y) & (y * 4 == np.round(y * 4))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5

    def density(self, y, v):
        a = self.alpha
        k = np.round(np.asarray(y, dtype=float) * 4)
        s = v * 4
        lo = math.floor(s)
        up = s - lo

        def pmf(level):
            return (1 - a) / (1 + a) * a ** np.abs(k - level)

        return (1 - up) * pmf(lo) + (up * pmf(lo + 1) if up > 0 else 0.0)


class RoundedFloatLaplace:
    """Continuous numpy Laplace, the sum rounded to a 2^-10 grid (post-processing that
    drops the float sum's low bits)."""

    def __init__(self, eps):
        self.eps = float(eps)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = x + rng.laplace(0.0, 1.0 / self.eps, x.shape)
        return np.round(y * 1024) / 1024

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5


class OffsetReports(GridLaplaceBase):
    """Grid Laplace shifted by +100 and clipped to a stated range [100 - 30/eps, 101 +
    30/eps] (a user's calibration offset): post-processing."""

    def setup(self):
        self.output_low = 100 - 30 / self.eps
        self.output_high = 101 + 30 / self.eps

    def perturb(self, x, rng):
        noisy = laplace_on_grid(rng, np.asarray(x, dtype=float), self._scale, GRID)
        return np.clip(noisy + 100.0, self.output_low, self.output_high)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y) - 100.0) if y.size else 0.5


class NegatedAffine(GridLaplaceBase):
    """Reports 3 - 2 (x + noise): an affine map of an eps-LDP report."""

    def perturb(self, x, rng):
        noisy = laplace_on_grid(rng, np.asarray(x, dtype=float), self._scale, GRID)
        return 3.0 - 2.0 * noisy

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float((3.0 - np.mean(y)) / 2.0) if y.size else 0.5


class ThreeLevelChoice:
    """3-ary RR on levels {0, 0.5, 1} via rng.choice, refusing eps > 5; with density."""

    LEVELS = np.array([0.0, 0.5, 1.0])

    def __init__(self, eps):
        if not 0 < eps <= 5:
            raise ValueError(f"eps must be in (0, 5], got {eps!r}")
        self.eps = float(eps)
        e = math.exp(self.eps)
        self.p, self.q = e / (e + 2), 1 / (e + 2)

    def _rounded(self, x, rng):
        s = np.asarray(x, dtype=float) * 2
        lo = np.floor(s)
        return np.minimum(lo + (rng.random(s.shape) < s - lo), 2).astype(int)

    def perturb(self, x, rng):
        code = self._rounded(x, rng)
        shift = rng.choice([1, 2], size=code.shape)
        keep = rng.random(code.shape) < self.p
        return self.LEVELS[np.where(keep, code, (code + shift) % 3)]

    def in_domain(self, y):
        return np.isin(np.asarray(y, dtype=float), self.LEVELS)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        if y.size == 0:
            return 0.5
        share = np.array([np.mean(y == v) for v in self.LEVELS])
        freq = (share - self.q) / (self.p - self.q)
        return float(freq @ self.LEVELS)

    def density(self, y, v):
        s = v * 2
        lo = min(math.floor(s), 2)
        up = s - lo
        probs = np.zeros(3)
        probs[lo] += 1 - up
        if up > 0:
            probs[min(lo + 1, 2)] += up
        idx = np.round(np.asarray(y, dtype=float) * 2).astype(int)
        return probs[idx] * self.p + (1 - probs[idx]) * self.q
