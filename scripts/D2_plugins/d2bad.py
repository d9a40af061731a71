"""Helper D's round-2 plugins with a PRIVACY bug (2026-12-06), written as a privacy
researcher would bring them, from docs/mechanisms.md and docs/audit.md only; none of the
families in docs/audit.md's lists. Each class docstring says the bug and the true leak."""

import math

import numpy as np
from d2common import GRID, GridLaplaceBase, geometric_noise, grid_laplace_scale, laplace_on_grid


class BoundsAsUnit(GridLaplaceBase):
    """Works on t = 2x - 1 in [-1, 1] but calibrates the noise for [0, 1] (sensitivity 1
    where the range's width is 2): 2 eps."""

    def perturb(self, x, rng):
        t = 2.0 * np.asarray(x, dtype=float) - 1.0
        return laplace_on_grid(rng, t, self._scale, GRID)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float((np.mean(y) + 1.0) / 2.0) if y.size else 0.5


class NarrowAssumedRange(GridLaplaceBase):
    """Sensitivity 0.6: the author's readings 'always lie in [0.2, 0.8]'; no clip, so
    inputs 0 and 1 are eps / 0.6 = 1.67 eps apart."""

    sensitivity = 0.6


class ClipAfterNoise(GridLaplaceBase):
    """Meant: clip x to [0.25, 0.75] (sensitivity 0.5), then noise. Wrote: noise for
    sensitivity 0.5, then clip the REPORT to [0.25, 0.75]: 2 eps and worse at the edges."""

    sensitivity = 0.5

    def perturb(self, x, rng):
        noisy = laplace_on_grid(rng, np.asarray(x, dtype=float), self._scale, GRID)
        return np.clip(noisy, 0.25, 0.75)


class KRRLieIncludesTruth:
    """8-level randomised response, keep p = e^eps / (e^eps + 7), but the lie is uniform
    over ALL 8 levels (the truth included): P(true) / P(other) = 1 + 8 p / (1 - p),
    4.1 = e^1.41 at eps = 1."""

    K = 8

    def __init__(self, eps):
        self.eps = float(eps)
        e = math.exp(self.eps)
        self.p = e / (e + self.K - 1)
        self.output_low, self.output_high = 0, self.K - 1

    def perturb(self, x, rng):
        s = np.asarray(x, dtype=float) * (self.K - 1)
        lo = np.floor(s)
        code = np.minimum(lo + (rng.random(s.shape) < s - lo), self.K - 1).astype(np.int64)
        lie = rng.integers(0, self.K, size=s.shape)
        return np.where(rng.random(s.shape) < self.p, code, lie)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == np.round(y)) & (y >= 0) & (y <= self.K - 1)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=np.int64)
        if y.size == 0:
            return 0.5
        share = np.bincount(y, minlength=self.K) / y.size
        freq = (share - (1 - self.p) / self.K) / self.p
        return float(freq @ (np.arange(self.K) / (self.K - 1)))


class SaturatedLessNoise(GridLaplaceBase):
    """Honest inside (0, 1); a reading exactly at a bound ('the sensor saturated, we know
    it was clipped') gets half the scale."""

    def setup(self):
        self._half = grid_laplace_scale(1.0, 2 * self.noise_eps)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        full = laplace_on_grid(rng, x, self._scale, GRID)
        half = laplace_on_grid(rng, x, self._half, GRID)
        return np.where((x == 0.0) | (x == 1.0), half, full)


class UniformAroundX:
    """Uniform noise of width 2/eps around x: the report's support [x - 1/eps, x + 1/eps]
    moves with x (unbounded loss)."""

    def __init__(self, eps):
        self.eps = float(eps)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = x + rng.uniform(-1.0 / self.eps, 1.0 / self.eps, x.shape)
        return np.round(y / GRID) * GRID

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5


class GaussianAsPure:
    """Gaussian noise with the classic sigma for (eps, 1e-5), claimed pure eps-LDP: its
    log-ratio is unbounded in the tails (eps_true = infinity, delta 1e-5)."""

    DELTA = 1e-5

    def __init__(self, eps):
        self.eps = float(eps)
        self.sigma = math.sqrt(2 * math.log(1.25 / self.DELTA)) / self.eps

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return np.round((x + self.sigma * rng.standard_normal(x.shape)) / GRID) * GRID

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5


class GaussianAsPureDensity(GaussianAsPure):
    """GaussianAsPure stating its density (the audit's likelihood-ratio witness)."""

    def density(self, y, v):
        z = (np.asarray(y, dtype=float) - v) / self.sigma
        return np.exp(-0.5 * z * z) / (self.sigma * math.sqrt(2 * math.pi))


class GridAnchoredAtX:
    """Discrete Laplace on a 0.01 grid added to x WITHOUT rounding x to that grid: the
    report's offset from the grid is x's (x mod 0.01 in the clear); exact for inputs
    that are multiples of 0.01."""

    STEP = 0.01

    def __init__(self, eps):
        self.eps = float(eps)
        self.alpha = math.exp(-self.eps * self.STEP)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return x + self.STEP * geometric_noise(rng, self.alpha, x.shape)

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5


class FinerGridHigh(GridLaplaceBase):
    """'More resolution where it matters': readings >= 0.5 on a 2^-12 grid, below on
    2^-8; the report's grid tells which half x is in."""

    def setup(self):
        self._coarse = grid_laplace_scale(1.0, self.noise_eps, 2.0**-8)
        self._fine = grid_laplace_scale(1.0, self.noise_eps, 2.0**-12)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        coarse = laplace_on_grid(rng, x, self._coarse, 2.0**-8)
        fine = laplace_on_grid(rng, x, self._fine, 2.0**-12)
        return np.where(x >= 0.5, fine, coarse)


class NoiseNinetyPercent(GridLaplaceBase):
    """Adds the noise with probability 0.9 ('a tenth of the reports keep their accuracy')."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        noisy = laplace_on_grid(rng, x, self._scale, GRID)
        return np.where(rng.random(x.shape) < 0.9, noisy, x)


class SeededByInput(GridLaplaceBase):
    """Per-reading child generator seeded from a draw of rng AND the reading ('reproducible
    per reading'), the draw only 6 bits: 64 possible reports per input, disjoint sets."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        salt = rng.integers(0, 64, size=x.shape)
        out = np.empty(x.shape)
        for i, (xi, si) in enumerate(zip(x.ravel(), salt.ravel(), strict=True)):
            child = np.random.default_rng([int(si), round(float(xi) * 2**32)])
            out.flat[i] = laplace_on_grid(child, float(xi), self._scale, GRID)
        return out


class SortedByInput(GridLaplaceBase):
    """Returns a batch's reports in ascending order of their READINGS ('the collector
    compresses sorted streams better'): a report's position tells its reading's rank."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        noisy = laplace_on_grid(rng, x, self._scale, GRID)
        return noisy[np.argsort(x, kind="stable")]


class ReprPrecision(GridLaplaceBase):
    """Rounds each report to as many decimals as the reading's repr shows, plus 3 ('keep
    the sensor's precision'): the report's decimal count tells the reading's."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        noisy = laplace_on_grid(rng, x, self._scale, GRID)
        out = np.empty(x.shape)
        for i, (xi, yi) in enumerate(zip(x.ravel(), noisy.ravel(), strict=True)):
            text = repr(float(xi))
            places = len(text.split(".")[1]) if "." in text and "e" not in text else 6
            out.flat[i] = round(float(yi), places + 3)
        return out


class LogScaleNaN(GridLaplaceBase):
    """Privatises log(x) ('sensor values are log-normal'): -inf at the lower bound."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        with np.errstate(divide="ignore"):
            t = np.log(x)
        return t + rng.laplace(0.0, 1.0 / self.eps, x.shape)


class SmallEpsBranch:
    """One-bit RR (randomised rounding, then keep with p). For eps < 1 a 'small-budget
    approximation' p = 1/2 + eps/2: at eps = 0.4, p / (1 - p) = 2.33 = e^0.85."""

    def __init__(self, eps):
        self.eps = float(eps)
        if self.eps >= 1:
            self.p = 1.0 / (1.0 + math.exp(-self.eps))
        else:
            self.p = 0.5 + self.eps / 2.0
        self.output_low, self.output_high = 0.0, 1.0

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        bit = rng.random(x.shape) < x
        keep = rng.random(x.shape) < self.p
        return np.where(keep, bit, ~bit).astype(float)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == 0.0) | (y == 1.0)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        if y.size == 0:
            return 0.5
        return float((np.mean(y) - (1.0 - self.p)) / (2.0 * self.p - 1.0))


class WindowBudgetPerStep(GridLaplaceBase):
    """'ldpfleet hands me eps / w; my sensor's window is w = 5, the ledger keeps the window
    honest': privatises each step at w * eps0, the whole window budget."""

    W = 5

    def setup(self):
        self.noise_eps = self.eps * self.W


class NoiseTable16(GridLaplaceBase):
    """'Fast' Laplace: the noise is one of 16 precomputed Laplace quantiles (chosen by
    rng), so each input has 16 possible reports."""

    def setup(self):
        u = (np.arange(16) + 0.5) / 16
        b = float(self._scale_value())
        self.table = np.round(np.where(u < 0.5, b * np.log(2 * u), -b * np.log(2 - 2 * u)) / GRID)

    def _scale_value(self):
        return (1.0 + GRID) / self.noise_eps

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        grid_x = np.round(x / GRID)
        return (grid_x + self.table[rng.integers(0, 16, size=x.shape)]) * GRID


class BandTableBug(GridLaplaceBase):
    """Per-bin scales from a precomputed 40-bin table; a fill error quartered the scale in
    bins 1, 5, 9, ... (x in [0.025, 0.05), [0.125, 0.15), ...): 4 eps there."""

    def setup(self):
        self.table = [
            grid_laplace_scale(1.0, self.noise_eps * (4 if i % 4 == 1 else 1)) for i in range(40)
        ]

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        bins = np.minimum((x * 40).astype(int), 39)
        out = laplace_on_grid(rng, x, self._scale, GRID)
        for b in np.unique(bins):
            if b % 4 == 1:
                mask = bins == b
                out[mask] = laplace_on_grid(rng, x[mask], self.table[b], GRID)
        return out


class TwoReportsAveraged(GridLaplaceBase):
    """Two independent reports at eps each, averaged 'to halve the variance': 2 eps."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        a = laplace_on_grid(rng, x, self._scale, GRID)
        b = laplace_on_grid(rng, x, self._scale, GRID)
        return (a + b) / 2.0


class BatchSpreadScale:
    """Noise scale proportional to the batch's spread ('adaptive noise'), at least 0.05:
    a batch of equal readings gets almost no noise."""

    def __init__(self, eps):
        self.eps = float(eps)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        scale = max(float(np.std(x)), 0.05) * 2.0 / self.eps
        return laplace_on_grid(rng, x, scale, GRID)

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5


class RepeatSharesReport(GridLaplaceBase):
    """A reading equal to the one before it in the batch repeats its report ('no budget
    spent twice on one value'): equal reports tell equal readings."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        out = laplace_on_grid(rng, x, self._scale, GRID)
        for i in range(1, x.size):
            if x[i] == x[i - 1]:
                out[i] = out[i - 1]
        return out


class SqrtEpsScale(GridLaplaceBase):
    """Scale (1 + grid) / sqrt(eps) from a misremembered variance formula: right at
    eps = 1 only; at eps0 = 0.4 it is eps 0.63 per report."""

    def setup(self):
        self.noise_eps = math.sqrt(self.eps)


class GeometricWrongBase:
    """Two-sided geometric on a 1/16 grid with ratio e^-eps per grid STEP, where the
    sensitivity is 16 steps: 16 eps."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.alpha = math.exp(-self.eps)

    def perturb(self, x, rng):
        s = np.asarray(x, dtype=float) * 16
        lo = np.floor(s)
        k = lo + (rng.random(s.shape) < s - lo)
        return (k + geometric_noise(rng, self.alpha, s.shape)) / 16.0

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5


class AntitheticPairs(GridLaplaceBase):
    """'Variance reduction': consecutive readings get antithetic noise (n, -n), so the
    noise cancels in the mean; the sum of two neighbouring reports is the sum of their
    readings, in the clear."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        noise = laplace_on_grid(rng, np.zeros(x.shape), self._scale, GRID)
        half = x.size // 2
        if half:
            noise[1 : 2 * half : 2] = -noise[0 : 2 * half : 2]
        return np.round(x / GRID) * GRID + noise


class SortedByInputKRR(KRRLieIncludesTruth):
    """8-level RR (with the correct lie: uniform over the OTHER levels) whose batch comes
    back in ascending order of the READINGS: with additive i.i.d. noise such a sort is
    harmless (the sorted readings move by at most the change in l1, and permuted i.i.d.
    noise is i.i.d.), for RR it is not: one reading moving from the lowest to the highest
    shifts every report of the batch by a position."""

    def perturb(self, x, rng):
        s = np.asarray(x, dtype=float) * (self.K - 1)
        lo = np.floor(s)
        code = np.minimum(lo + (rng.random(s.shape) < s - lo), self.K - 1).astype(np.int64)
        other = rng.integers(0, self.K - 1, size=s.shape)
        other = other + (other >= code)
        out = np.where(rng.random(s.shape) < self.p, code, other)
        return out[np.argsort(s, kind="stable")]

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=np.int64)
        if y.size == 0:
            return 0.5
        q = (1 - self.p) / (self.K - 1)
        share = np.bincount(y, minlength=self.K) / y.size
        freq = (share - q) / (self.p - q)
        return float(freq @ (np.arange(self.K) / (self.K - 1)))
