"""Helper D's round-3 BUGGY plugins (2026-12-06): families not in docs/audit.md's lists
(state across calls, input-dependent precision and sign, edge bands, batch-dependent
domains and budgets, wrong normalisers and sensitivities, wrong subsampling claims).
Each docstring states the bug and the true leak at a claim of eps = 1."""

import math

import numpy as np
from d3common import GRID, GridLaplace, KaryLevels, check_eps, grid_laplace_scale, laplace_on_grid

# --- state across calls -------------------------------------------------------------


class AnnealAfterCalls(GridLaplace):
    """'The estimator has converged': after 2,000 calls of one object the noise scale is
    halved (2 eps). A device streaming one reading per step leaks from step 2,000 on."""

    calls = 0

    def perturb(self, x, rng):
        self.calls += 1
        return self.noise(rng, x, 2.0 if self.calls > 2000 else 1.0)


class CallParityScale(GridLaplace):
    """Odd calls at eps, even calls at 3 eps ('they average out'): every second report of a
    device leaks 3 eps."""

    calls = 0

    def perturb(self, x, rng):
        self.calls += 1
        return self.noise(rng, x, 3.0 if self.calls % 2 == 0 else 1.0)


class EveryHundredthCallClear(GridLaplace):
    """A 'calibration' call: every 100th call returns the readings without noise."""

    calls = 0

    def perturb(self, x, rng):
        self.calls += 1
        y = self.noise(rng, x)
        if self.calls % 100 == 0:
            return np.asarray(x, dtype=float).copy()
        return y


class ClearFirstRealCall(GridLaplace):
    """The first call after the 'warm-up' (the first three calls of an object) is
    returned in the clear ('priming the estimator'): a device's first readings leak."""

    calls = 0

    def perturb(self, x, rng):
        self.calls += 1
        y = self.noise(rng, x)
        if self.calls == 4:
            return np.asarray(x, dtype=float).copy()
        return y


class DeltaEncoded(GridLaplace):
    """Sends noisy differences x_t - x_(t-1) (along the batch) to save bandwidth: each
    reading enters two reports at eps each (2 eps); the collector cumsums."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        prev = np.concatenate(([0.5], x[:-1])) if x.size else x
        return self.noise(rng, x - prev)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(0.5 + np.cumsum(y))) if y.size else 0.5


# --- input-dependent output type, sign, precision -------------------------------------


class SignedZeroKRR(KaryLevels):
    """8-level RR whose level-0 report is written -0.0 when the true level is below the
    middle (a sign carried over from t = x - 0.5): the sign of zero tells the truth's half
    (about ln 4.3 = 1.45 at eps = 1 for input 0 vs 1 on the report 0)."""

    def perturb(self, x, rng):
        code = self.level(x)
        y = self.respond(code, rng) / (self.k - 1)
        low = np.asarray(x, dtype=float) < 0.5
        return np.where((y == 0.0) & low, -0.0, y)


class Float32AboveHalf(GridLaplace):
    """Reports for readings above 0.5 go through float32 ('the fast path'): 24 significant
    bits instead of the grid's full ones tell x > 0.5."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = self.noise(rng, x)
        return np.where(x > 0.5, y.astype(np.float32).astype(float), y)


class IntegerAtBounds(GridLaplace):
    """A clipped reading (exactly 0 or 1) is reported as an integer number of 1/16 steps
    of noise (a 'saturated sensor' path): coarse reports tell a bound."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = self.noise(rng, x)
        at_bound = (x == 0.0) | (x == 1.0)
        return np.where(at_bound, np.round(y * 16) / 16, y)


class FloatNoiseAtBounds(GridLaplace):
    """Readings exactly at a bound skip the grid sampler: x + rng.laplace (float
    arithmetic), so their reports carry full 53-bit randomness, the grid's do not."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = self.noise(rng, x)
        b = float(self.scale())
        at_bound = (x == 0.0) | (x == 1.0)
        return np.where(at_bound, x + rng.laplace(0.0, b, x.shape), y)


# --- bugs confined to the edges of [0, 1] ---------------------------------------------


class RelativeNoiseNearZero(GridLaplace):
    """'Relative precision for small readings': for 0 < x < 0.03 the scale shrinks with x
    (scale * x / 0.03); a reading just above the lower bound is nearly in the clear."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = self.noise(rng, x)
        small = (x > 0) & (x < 0.03)
        if np.any(small):
            share = np.maximum(0.03 / np.maximum(x[small], 1e-6), 1.0)
            y = y.copy()
            for i, s in zip(np.flatnonzero(small), share, strict=True):
                y[i] = self.noise(rng, x[i : i + 1], float(min(s, 1e4)))[0]
        return y


class TwoEpsNearOne(GridLaplace):
    """A 'top band' (0.97, 1) with its own table entry at 2 eps (1 itself not in it)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = self.noise(rng, x)
        band = (x > 0.97) & (x < 1.0)
        if np.any(band):
            y = y.copy()
            y[band] = self.noise(rng, x[band], 2.0)
        return y


class OneIsOwnLevel(KaryLevels):
    """8-level RR whose level codes are floor(8 x) (so x = 1 gets a ninth code, 8, that no
    other input can be reported as except by the truth)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        code = np.floor(x * self.k).astype(np.int64)
        y = self.respond(np.minimum(code, self.k - 1), rng)
        return np.where((code == self.k) & (y == self.k - 1), self.k, y) / (self.k - 1)

    def in_domain(self, y):
        c = np.asarray(y, dtype=float) * (self.k - 1)
        return (np.abs(c - np.rint(c)) < 1e-9) & (c >= 0) & (c <= self.k + 1e-9)


# --- batch-dependent domains, budgets, scales ----------------------------------------


class ArgmaxCoordinate(GridLaplace):
    """'Vector reading': the batch is one d-dim reading; only its largest coordinate is
    reported (d times its noisy value, the rest 0) 'to save budget'. Which report is
    non-zero tells which reading is the batch's largest."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = np.zeros_like(x)
        if x.size:
            j = int(np.argmax(x))
            y[j] = x.size * self.noise(rng, x[j : j + 1])[0]
        return y


class ScaleFromLastReading(GridLaplace):
    """Noise scale adapted to 'the current level', read from the batch's LAST reading
    (scale * (1.5 - x_last), at least the eps scale only while x_last <= 0.5): a last
    reading near 1 halves every report's scale (2 eps), and leaks through their spread."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        if not x.size:
            return x.copy()
        return self.noise(rng, x, 1.0 / (1.5 - float(x[-1])))


class ScaleFromPreviousReading(GridLaplace):
    """Smoothing 'adapted to the trend': report i's scale is scale * (0.25 + x_(i-1)):
    reading i - 1 leaks through report i's spread (and the first through the last)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        if not x.size:
            return x.copy()
        prev = np.roll(x, 1)
        y = np.empty_like(x)
        for s in np.unique(prev):
            m = prev == s
            y[m] = self.noise(rng, x[m], 1.0 / (0.25 + float(s)))
        return y


class TopReadingTwoEps(GridLaplace):
    """'The peak matters most': readings strictly above the batch median get 2 eps."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = self.noise(rng, x)
        if x.size > 1:
            top = x > np.median(x)
            if np.any(top):
                y = y.copy()
                y[top] = self.noise(rng, x[top], 2.0)
        return y


class BatchLevelsRR(GridLaplace):
    """Randomised response over the domain of the batch's own distinct readings (rounded to
    1/16): lies stay 'plausible'. The report set names the other readings."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        levels = np.unique(np.rint(x * 16) / 16)
        k = levels.size
        e = math.exp(self.eps)
        p = e / (e + k - 1) if k > 1 else 1.0
        truth = np.rint(x * 16) / 16
        keep = rng.random(x.shape) < p
        pick = levels[rng.integers(0, k, size=x.shape)]
        return np.where(keep, truth, pick)

    def in_domain(self, y):
        c = np.asarray(y, dtype=float) * 16
        return (np.abs(c - np.rint(c)) < 1e-9) & (c >= 0) & (c <= 16)


class ConstantBatchOneDraw(GridLaplace):
    """A batch whose readings all agree within 0.01 gets ONE noise draw for all ('the
    sensor was idle'): their reports agree, a tell of the readings."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        if x.size > 1 and float(np.ptp(x)) < 0.01:
            return self.noise(rng, x[:1])[0] + (x - x[0])
        return self.noise(rng, x)


# --- wrong normalisers, sensitivities, compositions -----------------------------------


class KRRWrongNormaliser(KaryLevels):
    """8-level RR with q = 1 / (e^eps + k) (a normaliser 'e^eps + k'), the truth kept with
    the rest: p / q = e^eps + 1 (ln(e + 1) = 1.31 at eps = 1)."""

    def __init__(self, eps):
        super().__init__(eps)
        e = math.exp(self.eps)
        self.q = 1.0 / (e + self.k)
        self.p = 1.0 - (self.k - 1) * self.q


class ExpMechLevelUnits:
    """Exponential mechanism over 11 levels, utility -|level - 10 x| in LEVEL units with
    sensitivity taken as 1 (a level), so the true sensitivity (10 levels) is 10x off."""

    def __init__(self, eps):
        self.eps = check_eps(eps)
        self.levels = np.arange(11)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        u = -np.abs(self.levels[None, :] - 10 * x[:, None])
        w = np.exp(self.eps * (u - u.max(axis=1, keepdims=True)) / 2)
        cdf = np.cumsum(w / w.sum(axis=1, keepdims=True), axis=1)
        r = rng.random((x.size, 1))
        return (np.minimum((r > cdf).sum(axis=1), 10) / 10).reshape(x.shape)

    def in_domain(self, y):
        c = np.asarray(y, dtype=float) * 10
        return (np.abs(c - np.rint(c)) < 1e-9) & (c >= 0) & (c <= 10)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5


class ExpMechHalfSensitivity(ExpMechLevelUnits):
    """Exponential mechanism over 11 levels of [0, 1], utility -|level/10 - x|, its
    sensitivity taken as 1/2 ('the nearest level is at most half away'): weights
    exp(eps u / (2 * 1/2)), up to 2 eps."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        u = -np.abs(self.levels[None, :] / 10 - x[:, None])
        w = np.exp(self.eps * (u - u.max(axis=1, keepdims=True)) / (2 * 0.5))
        cdf = np.cumsum(w / w.sum(axis=1, keepdims=True), axis=1)
        r = rng.random((x.size, 1))
        return (np.minimum((r > cdf).sum(axis=1), 10) / 10).reshape(x.shape)


class MedianOfThree(GridLaplace):
    """The median of three grid-Laplace reports at eps each ('robust to outliers'): its
    tails fall as e^(-2|y|/b): 2 eps in the tails."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        draws = np.stack([self.noise(rng, x) for _ in range(3)])
        return np.median(draws, axis=0)


class BitwiseRRPerBitEps:
    """x's 6 leading bits, each through RR at eps ('each bit is its own reading'): 6 eps
    spent per reading; the report recombines the debiased bits."""

    bits = 6

    def __init__(self, eps):
        self.eps = check_eps(eps)
        self.bit_eps = self.eps

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        code = np.minimum(np.floor(x * 2**self.bits), 2**self.bits - 1).astype(np.int64)
        p = 1 / (1 + math.exp(-self.bit_eps))
        y = np.zeros(x.shape)
        for i in range(self.bits):
            bit = (code >> (self.bits - 1 - i)) & 1
            keep = rng.random(x.shape) < p
            noisy = np.where(keep, bit, 1 - bit)
            y += ((noisy - (1 - p)) / (2 * p - 1)) * 2.0 ** -(i + 1)
        return y

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y) + 2.0 ** -(self.bits + 1)) if y.size else 0.5


class SubsampleSentinel(GridLaplace):
    """'Amplification by subsampling': each reading is reported with probability 1/2 at
    eps' = ln(1 + (e^eps - 1) / (1/2)), else the sentinel -1. In LDP the sentinel says
    nothing about the reading, so the sampled reports leak eps' (1.49 at eps = 1)."""

    q = 0.5

    def __init__(self, eps):
        super().__init__(eps)
        self.amplified = math.log1p((math.exp(self.eps) - 1) / self.q)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = laplace_on_grid(rng, x, grid_laplace_scale(1.0, self.amplified), GRID)
        sampled = rng.random(x.shape) < self.q
        return np.where(sampled, y, -1.0)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        kept = y[y != -1.0]
        return float(np.mean(kept)) if kept.size else 0.5


class SubsampleDummyAmplified(SubsampleSentinel):
    """Subsampling again, the non-sampled reading replaced by a dummy report of the
    reading 0.5 at eps' (so the reports 'look alike'); eps' from the central-model
    amplification bound: not a bound for this mixture."""

    q = 0.25

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        sampled = rng.random(x.shape) < self.q
        src = np.where(sampled, x, 0.5)
        return laplace_on_grid(rng, src, grid_laplace_scale(1.0, self.amplified), GRID)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float((np.mean(y) - 0.5 * (1 - self.q)) / self.q) if y.size else 0.5


class SnapWhenNoiseSmall(GridLaplace):
    """'Noise below 0.01 is negligible': such a report is replaced by the exact reading."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = self.noise(rng, x)
        return np.where(np.abs(y - x) < 0.01, x, y)


class ClampedNoiseAtEdge(GridLaplace):
    """Noise clamped so the report never crosses the far bound by more than 3 scales
    ('physically impossible values'), asymmetric: only for readings above 0.5, and the
    cut is at x + 3b: reports above x + 3b never come from x > 0.5 but do from lower x."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = self.noise(rng, x)
        b = float(self.scale())
        return np.where(x > 0.5, np.minimum(y, x + 3 * b), y)


class SingleReadingFallback(GridLaplace):
    """A scalar fast path for a call of one reading (a paced device's every call) with the
    scale of a 2-reading pair by mistake (2 eps); batches of 2 or more are right."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        if x.size == 1:
            return self.noise(rng, x, 2.0)
        return self.noise(rng, x)


class BaselineMinInClear(GridLaplace):
    """'The batch minimum is the sensor's baseline': it is sent in the clear (calibration),
    the other readings with grid Laplace at eps."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        y = self.noise(rng, x)
        if x.size > 1:
            j = int(np.argmin(x))
            y[j] = x[j]
        return y
