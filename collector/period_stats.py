"""Exact statistical tests of cycle recovery (``collector/period.py``): the harmonic level
tests of a fold, the tests of extra harmonics, the Bartlett segment gate, the phase ANOVA,
the neighbour and masked-background tests, and the few-cycles penalty."""

from __future__ import annotations

import functools

import numpy as np
from ldpfleet.collector.period_constants import (
    ALPHA_SHAPE,
    HARMONIC_LEVELS,
    MASKED_CACHE,
    MASKED_MIN_BINS,
    PENALTY_CYCLES,
    PENALTY_SLOPE,
    SEGMENT_CYCLES,
    SHORT_PENALTY_SLOPE,
    SHORT_STREAM,
    TRIM,
)
from ldpfleet.collector.period_screen import (
    _log_sf,
)
from ldpfleet.collector.period_whiten import (
    _columns,
    _dot,
    _phase_sums,
    _rfft,
    _shapes,
    _whittle,
    _within_scale,
)
from scipy import fft as sp_fft
from scipy import special


def _harmonic_power(xw: np.ndarray, t: np.ndarray, period: int) -> np.ndarray:
    """Exact ``|sum_t xw_t exp(-2 pi i j t / T)|^2 / n`` for ``j = 1 .. (T - 1) // 2``."""
    folded = _phase_sums(xw, period)
    spec = _rfft(folded)[1 : (period - 1) // 2 + 1]
    return (spec.real**2 + spec.imag**2) / xw.size


def _level_logp(power: np.ndarray, dfd: float = np.inf) -> tuple[float, int]:
    """Smallest log p-value over the harmonic levels (and all harmonics) and its level."""
    total = np.cumsum(power)
    levels, index, shape = _levels(power.size)
    logp = _log_sf(total[index], shape, dfd)
    i = int(np.argmin(logp))
    return float(logp[i]), levels[i]


@functools.lru_cache(maxsize=1024)
def _levels(size: int) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The harmonic levels below ``size`` and ``size`` itself; their indices into a cumulative
    sum; the levels as floats (cached; the arrays read-only)."""
    levels = [h for h in HARMONIC_LEVELS if h < size] + [size]
    index = np.array(levels) - 1
    shape = np.array(levels, dtype=float)
    index.setflags(write=False)
    shape.setflags(write=False)
    return levels, index, shape


def _extra_logp(power: np.ndarray, m: int, limit: int, segments: int = 1) -> float:
    """Smallest log p-value, over the harmonic levels up to ``limit``, of the energy in the
    harmonics ``j`` with ``m`` not dividing ``j`` (Bonferroni over the levels); each power a
    sum of ``segments`` Exp(1) under the null (``segment_powers``)."""
    extra = power[:limit].copy()
    extra[m - 1 :: m] = 0.0
    mask = np.ones(extra.size)
    mask[m - 1 :: m] = 0.0
    total, dof = np.cumsum(extra), np.cumsum(mask)
    levels = sorted({h for h in HARMONIC_LEVELS if h < limit} | {limit})
    ix = np.array(levels) - 1
    ok = dof[ix] > 0
    if not ok.any():
        return 0.0
    logp = _log_sf(total[ix][ok], segments * dof[ix][ok])
    return float(np.min(logp) + np.log(ok.sum()))


def segment_logp(xw: np.ndarray, period: int, cycles: int = SEGMENT_CYCLES) -> float:
    """Log p-value of the harmonic sums of ``period`` folded segment by segment (Bartlett):
    the stream cut into ``B = n // (cycles T)`` segments of ``k = (n // B) // T`` whole
    cycles (the remainder dropped), each folded at ``T`` on its own; the power of harmonic
    ``j`` (``|Y_bj|^2 / (k T)``, segment ``b``) summed over the segments. Under iid noise
    of unit variance each segment's harmonic powers are iid Exp(1) (whole cycles put the
    harmonics on Fourier bins) and the segments are disjoint, so the sum over ``h``
    harmonics is Gamma(``B h``); divided by the within-phase mean square of the segments
    (``B (k - 1) T`` degrees of freedom) it is F(``2 B h``, ``B (k - 1) T``). The
    smallest tail over the harmonic levels (``_level_logp``'s levels; the caller adds the
    Bonferroni count). A phase shift between segments does not cancel the sum (powers
    ignore phase): only a segment holding a jump loses its share. 0 when ``B < 2``."""
    parts = segment_powers(xw, period, cycles)
    if parts is None:
        return 0.0
    power, segments, dof = parts
    total = np.cumsum(power)
    _, index, shape = _levels(power.size)
    logp = _log_sf(total[index], segments * shape, dof / 2.0)
    return float(np.min(logp))


def segment_powers(
    xw: np.ndarray, period: int, cycles: int = SEGMENT_CYCLES
) -> tuple[np.ndarray, int, int] | None:
    """The segment-wise harmonic powers of ``segment_logp``: harmonic ``j``'s power summed
    over the ``B`` segments, divided by the segments' within-phase mean square; ``B``; the
    degrees of freedom of that mean square. None when ``B < 2``."""
    n = xw.size
    segments = n // (cycles * period)
    if segments < 2 or period < 3:
        return None
    k = (n // segments) // period
    block = xw[: segments * k * period].reshape(segments, k, period)
    sums = block.sum(axis=1)
    spec = sp_fft.rfft(sums, axis=1)[:, 1 : (period - 1) // 2 + 1]
    power = np.sum(spec.real**2 + spec.imag**2, axis=0) / (k * period)
    within = float(np.sum(block * block)) - float(np.sum(sums * sums)) / k
    dof = segments * (k - 1) * period
    scale = max(within, 1e-300) / dof
    return power / scale, segments, dof


def _explained_by(xw: np.ndarray, lag: int, m: int) -> bool:
    """Step 8's divisor move: does ``lag / m`` explain the fold energy of ``lag``? True when
    the harmonics ``j`` of ``lag`` with ``m`` not dividing ``j`` (the energy ``lag`` has
    beyond its divisor) are not significant at ``ALPHA_SHAPE``, in the whole-stream fold
    (harmonic powers over the within-phase mean square) AND in the segment-wise fold
    (``segment_powers``), Bonferroni over the two. A phase jump leaves the fold at ``lag``
    of a ``lag / m``-periodic stream ``lag / m``-periodic (each stretch between jumps is),
    so the test holds under jumps; a true period ``lag`` puts its fundamental off the
    multiples of ``m``."""
    t = np.arange(xw.size)
    whole = _harmonic_power(xw, t, lag) / _within_scale(xw, t, lag)
    logp = _extra_logp(whole, m, whole.size)
    parts = segment_powers(xw, lag)
    if parts is not None:
        power, segments, _ = parts
        logp = min(logp, _extra_logp(power, m, power.size, segments))
    return logp + float(np.log(2.0)) >= float(np.log(ALPHA_SHAPE))


def anova_logp(x: np.ndarray, period: int) -> float:
    """Log p-value of the one-way ANOVA of the phases of ``period`` over the ``k = n // T``
    whole cycles of ``x`` (the partial last cycle dropped): between-phase over within-phase
    mean square, F(``T - 1``, ``k T - T``) under iid noise (step 9). Not detrended: a trend
    or a level shift raises the within-phase mean square more than the between-phase one
    at few cycles (conservative; measured in docs/cpr.md, "Short streams: the limit")."""
    cycles = x.size // period
    seg = x[: cycles * period].reshape(cycles, period)
    means = seg.mean(axis=0)
    between = cycles * float(np.sum((means - means.mean()) ** 2)) / (period - 1)
    within = float(np.sum((seg - means) ** 2)) / (cycles * period - period)
    tail = special.fdtrc(period - 1, cycles * period - period, between / max(within, 1e-300))
    return float(np.log(max(float(tail), 1e-300)))


def neighbour_logp(x: np.ndarray, period: int) -> float:
    """Log p-value that the harmonics of ``period`` stand out from their neighbouring bins:
    the whole cycles ``k = n // T`` of the (linearly detrended) stream put the ``j``-th
    harmonic on Fourier bin ``j k`` exactly; its neighbours ``j k +- d``, ``d = 1 .. max(1,
    (k - 1) // 2)``, hold no harmonic. Where the background spectrum is locally flat (or
    convex: the mean of the ``2 d`` neighbours is then at least the background at the
    harmonic) the ratio of the mean harmonic power to the mean neighbour power over the first
    ``h`` harmonics is F(2 h, 4 d h). Smallest over the harmonic levels, Bonferroni over them
    (the caller adds the number of screened tests: the period was chosen by the data).
    ``detect_period`` applies it to the WHITENED stream (module docstring, "Neighbour test":
    on the raw reports of red streams it was anti-conservative)."""
    arr = np.asarray(x, dtype=float)
    cycles = arr.size // period
    m = cycles * period
    harmonics = (period - 1) // 2
    if cycles < 2 or harmonics < 1:
        return 0.0
    seg = arr[:m]
    u = np.arange(m) - (m - 1) / 2.0
    seg = seg - seg.mean() - u * _dot(u, seg) / _dot(u, u)
    spec = sp_fft.rfft(seg)
    pw = spec.real**2 + spec.imag**2
    centre = cycles * np.arange(1, harmonics + 1)
    reach = max(1, (cycles - 1) // 2)
    num = pw[centre]
    den = np.zeros(harmonics)
    for d in range(1, reach + 1):
        den += pw[centre - d] + pw[np.minimum(centre + d, pw.size - 1)]
    levels = np.array([h for h in HARMONIC_LEVELS if h < harmonics] + [harmonics])
    ratio = (np.cumsum(num)[levels - 1] / levels) / (
        np.maximum(np.cumsum(den)[levels - 1], 1e-300) / (2 * reach * levels)
    )
    sf = special.fdtrc(2.0 * levels, 4.0 * reach * levels, ratio)
    return float(np.log(max(float(np.min(sf)), 1e-300)) + np.log(levels.size))


def masked_bins(n: int, period: int) -> np.ndarray:
    """The Fourier bins (of ``n // 2 + 1``) the masked background of ``masked_logp`` is
    fitted to: all but the mean, bin 1 and the floor and ceiling of each harmonic
    ``j n / T``, ``j = 1 .. (T - 1) // 2``. At least ``n // 2 - 1 - (T - 1)`` of them, so at
    least ``MASKED_MIN_BINS`` for every ``T <= n / 3`` once ``n >= 51``."""
    centres = np.arange(1, (period - 1) // 2 + 1) * (n / period)
    keep = np.ones(n // 2 + 1, dtype=bool)
    keep[:2] = False
    keep[np.floor(centres).astype(np.int64)] = False
    keep[np.minimum(np.ceil(centres).astype(np.int64), keep.size - 1)] = False
    return keep


def masked_logp(xd: np.ndarray, period: int, power: np.ndarray | None = None) -> float:
    """Log p-value of the harmonic sums of ``period`` against a background fitted WITHOUT the
    candidate's harmonics: the white + AR(1) / long-memory family (``_shapes``,
    ``_whittle``) fitted to the raw periodogram of the (detrended) stream over every Fourier
    bin except the mean, bin 1 (the quadratic detrend removes most of it) and the two bins
    around each harmonic ``j n / T`` (floor and ceiling; one bin when it is an integer); the
    fold's harmonic powers (the whole stream at frequency ``j / T``) divided by that
    background at ``j / T``; the smallest Gamma tail over the harmonic levels
    (``_level_logp``; the caller adds the Bonferroni count). Unlike the whitening fit
    (``3 min`` of three bins, one exponential degree of freedom per window, a harmonic mean
    that sits below a steep spectrum) every remaining bin counts with its own value, and the
    background at a harmonic is pinned by the bins on both sides of it (module docstring,
    step 6). Where fewer than ``MASKED_MIN_BINS`` bins remain (``masked_bins``: only
    streams of fewer than 51 samples at ``T <= n / 3``, or ``min_cycles = 2``), no
    background can be fitted and the check is skipped: ``-inf``, the claim rests on steps
    4-5 (it answered 0, p = 1, and a noise-free period-8 pulse in 27 samples abstained).

    ``power``: the periodogram ``|rfft(xd - mean)|^2 / n`` if the caller has it (``_whiten``'s
    ``parts``: the same values), else computed here."""
    n = xd.size
    keep = masked_bins(n, period)
    if keep.sum() < MASKED_MIN_BINS:
        return -np.inf
    centred = xd - xd.mean()
    if power is None:
        spec = sp_fft.rfft(centred)
        pw = (spec.real**2 + spec.imag**2) / n
    else:
        pw = power
    if n <= MASKED_CACHE:
        g, norm, shapes_at = _masked_shapes(n, period)
    else:
        g, norm, shapes_at = _masked_shapes.__wrapped__(n, period)
    p = pw[keep]
    fit = np.ones(p.size, dtype=bool)
    for _ in range(2):
        c, a, best = _whittle(p[fit], _columns(g, fit), float(np.mean(p[fit])))
        refit = p <= TRIM * (c + a * g[best])
        if refit.sum() < 8 or np.array_equal(refit, fit):
            break
        fit = refit
    at = shapes_at[best] / norm[best, 0]
    power = _harmonic_power(centred, np.arange(n), period)
    return _level_logp(power / np.maximum(c + a * at, 1e-300))[0]


@functools.lru_cache(maxsize=4)  # 19 x n / 2 floats each: 760 KB at n = 10^4
def _masked_shapes(n: int, period: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``masked_logp``'s background shapes at its bins, each row divided by its mean
    (Fortran order, for ``_columns``), those means, and the raw shapes at the harmonics
    ``j / period``: functions of the stream's length and the period only (issue 19, helper
    F: ~0.35 ms of a masked check at n = 10^4; cached for streams of up to ``MASKED_CACHE``
    samples, the same for every stream of a fleet). The same values as computed in place
    (``_shapes`` of the kept bins' frequencies, ``/=`` the row means, ``np.asfortranarray``);
    read-only, shared."""
    keep = masked_bins(n, period)
    g = _shapes(2.0 * np.pi * np.flatnonzero(keep) / n)
    norm = g.mean(axis=1, keepdims=True)
    g /= norm
    by_column = np.asfortranarray(g)
    shapes_at = _shapes(2.0 * np.pi * np.arange(1, (period - 1) // 2 + 1) / period)
    for array in (by_column, norm, shapes_at):
        array.setflags(write=False)
    return by_column, norm, shapes_at


def few_cycles_penalty(cycles: float, n: int | None = None) -> float:
    """How much further (in natural log of the p-value) a period with ``cycles`` cycles in
    the stream must pass the Bonferroni threshold: 0 from ``PENALTY_CYCLES`` cycles up,
    ``-slope * ln(PENALTY_CYCLES / cycles)`` below, i.e. the adjusted p-value must be
    below ``alpha * (cycles / PENALTY_CYCLES) ** slope`` (module docstring: the fitted
    background is least reliable at the lowest frequencies, where red noise mimics a few
    cycles). ``slope`` is ``PENALTY_SLOPE``, or ``SHORT_PENALTY_SLOPE`` for a stream of
    ``n < SHORT_STREAM`` samples (step 4, "Short streams"; ``n`` None: the long slope)."""
    slope = PENALTY_SLOPE if n is None or n >= SHORT_STREAM else SHORT_PENALTY_SLOPE
    return -slope * max(0.0, float(np.log(PENALTY_CYCLES / cycles)))
