"""Screening of cycle recovery (``collector/period.py``, "Statistic", step 1): the harmonic sums
of the whitened spectrum for every admissible period (comb sums of the autocorrelation or
bins of the padded spectrum), their F / chi-square tails (``_log_sf``) evaluated lazily per
level column, and the public shift discrepancy ``shift_discrepancy``."""

from __future__ import annotations

import functools
import math

import numpy as np
from ldpfleet.collector.period_constants import (
    COMB_CACHE,
    COMB_VECTOR,
    FULL_LEAD_MARGIN,
    FULL_TAIL_FLOOR,
    HARMONIC_LEVELS,
    LAZY_TINY,
    LAZY_TOP,
    PAD,
    SCREEN_CACHE_PERIODS,
)
from ldpfleet.collector.period_input import (
    check_stream,
)
from ldpfleet.protocol.errors import ParameterError
from scipy import fft as sp_fft
from scipy import special


def _lag_sums(xc: np.ndarray, max_lag: int) -> tuple[np.ndarray, np.ndarray]:
    """Autocorrelation ``c_T = sum_t xc_t xc_{t+T}`` for ``T = 0..max_lag`` (FFT, zero-padded
    to ``>= n + max_lag`` so nothing wraps) and the cumulative sums of squares with a leading
    0 (``cs[b] - cs[a] = S(a, b)``)."""
    n = xc.size
    nfft = sp_fft.next_fast_len(n + max_lag, real=True)
    spec = sp_fft.rfft(xc, nfft)
    ac = sp_fft.irfft(spec.real**2 + spec.imag**2, nfft)[: max_lag + 1]
    cs = np.concatenate(([0.0], np.cumsum(xc * xc)))
    return ac, cs


def shift_discrepancy(x: np.ndarray, periods: np.ndarray) -> np.ndarray:
    """``Delta_T = mean_{t=0}^{n-T-1} (x_{t+T} - x_t)^2`` for every ``T`` in ``periods``.

    Vectorised in ``O(n log n)`` for all lags together (see the module docstring): one FFT
    autocorrelation and one cumulative sum of squares, no loop over ``T``. ``periods`` are
    integers with ``0 <= T < n``; the result has their shape. Rounding can make an exact zero
    come out as a tiny number; negative rounding results are clipped to 0.
    """
    arr = check_stream(x)
    lags = np.asarray(periods)
    if lags.dtype.kind not in "iu":
        flt = np.asarray(lags, dtype=float)
        if not np.all(np.isfinite(flt) & (flt == np.round(flt))):
            bad = flt[~(np.isfinite(flt) & (flt == np.round(flt)))]
            raise ParameterError(
                "periods must be integers",
                field="periods",
                limit="integers",
                value=float(bad.flat[0]),
            )
        lags = flt.astype(np.int64)
    n = arr.size
    if lags.size == 0:
        return np.zeros(lags.shape)
    if lags.min() < 0 or lags.max() >= n:
        outside = lags[(lags < 0) | (lags >= n)]
        raise ParameterError(
            f"periods must lie in [0, {n - 1}] for n = {n}",
            field="periods",
            limit=f"[0, {n - 1}]",
            value=int(outside.flat[0]),
        )
    # computed on the stream brought into [0.5, 1) by a power of two (exact) and scaled
    # back at the end: samples near +-1e300 overflowed the mean (a NaN for every lag) and
    # the squares; a true discrepancy beyond the float range is inf, not NaN
    exponent = math.frexp(float(np.max(np.abs(arr))))[1]
    scaled = np.ldexp(arr, -exponent)
    xc = scaled - scaled.mean()
    ac, cs = _lag_sums(xc, int(lags.max()))
    m = n - lags
    total = cs[m] + (cs[n] - cs[lags]) - 2.0 * ac[lags]
    with np.errstate(over="ignore"):
        return np.ldexp(np.maximum(total, 0.0) / m, 2 * exponent)


def _log_sf(total, shape, dfd: float = np.inf) -> np.ndarray:
    """log P(G > total) for ``G = Gamma(shape, 1)`` scaled by an independent estimate of its
    unit noise level with ``dfd`` exponential degrees of freedom, i.e. ``total / shape`` is
    F(2 shape, 2 dfd) (``dfd = inf``: the Gamma law itself). Below 1e-300 the leading terms of
    the Gamma series ``(a - 1) ln x - x - ln Gamma(a) + ln(1 + (a - 1) / x)`` (only ranks
    overwhelming evidence)."""
    total, shape = np.asarray(total, float), np.asarray(shape, float)
    if total.shape != shape.shape:
        total, shape = np.broadcast_arrays(total, shape)
    total = np.maximum(total, 0.0)
    finite = math.isfinite(dfd)
    if finite:
        sf = special.fdtrc(2.0 * shape, 2.0 * dfd, total / shape)
    else:
        sf = special.gammaincc(shape, total)
    tiny = sf < 1e-300
    if not tiny.any():
        return np.log(sf)
    out = np.log(np.where(tiny, 1.0, sf))
    a, x = shape[tiny], np.maximum(total[tiny], 1e-300)
    if finite:
        out[tiny] = _log_f_leading(x, a, dfd)
    else:
        out[tiny] = (a - 1.0) * np.log(x) - x - special.gammaln(a) + np.log1p((a - 1.0) / x)
    return out


def _log_f_leading(x: np.ndarray, a: np.ndarray, dfd: float) -> np.ndarray:
    """The leading term of the F(2 a, 2 dfd) log tail at ``total = x`` that ``_log_sf`` uses
    below 1e-300: the tail is ``I_z(dfd, a)``, ``z = dfd / (dfd + x)``, and its series
    ``z^dfd (1 - z)^a / (dfd B(dfd, a)) * 2F1(a + dfd, 1; dfd + 1; z)`` has a
    hypergeometric factor >= 1, so this term is a LOWER bound of the log tail. As a function
    of ``x`` its derivative is ``dfd (a - x) / (x (dfd + x))``: decreasing for ``x > a``
    (``_screen_lazy`` relies on both)."""
    z = dfd / (dfd + x)
    return dfd * np.log(z) + a * np.log1p(-z) - np.log(dfd) - special.betaln(dfd, a)


def _screen_sums(xw: np.ndarray, periods: np.ndarray):
    """The screening statistics of ``_screen`` without the autocorrelation."""
    return _screen(xw, periods)[0]


def _screen(xw: np.ndarray, periods: np.ndarray):
    """The screening statistics: harmonic sums of every period at every level (partial sums
    from an oversampled periodogram, nearest bin), the full sums (autocorrelation comb) and
    their Gamma shapes, and which levels lie below ``(T - 1) // 2``; beside them the
    autocorrelation ``c_L = sum_t xw_t xw_{t+L}``, ``L < n`` (step 7 reads it)."""
    n = xw.size
    nfft = sp_fft.next_fast_len(PAD * n, real=True)
    spec = sp_fft.rfft(xw, nfft)
    squares = spec.real**2 + spec.imag**2  # once for both (the same values)
    pad_power = squares / n
    ac = sp_fft.irfft(squares, nfft)[:n]
    # full harmonic sum: sum_p S_p^2 = c_0 + 2 sum_j c_{jT}
    comb = ac[0] + 2.0 * _comb_sums(ac, periods)
    full_total = periods * comb / (2.0 * n)
    full_shape = (periods - 1) / 2.0
    levels = np.array(HARMONIC_LEVELS)
    valid = levels[None, :] < ((periods[:, None] - 1) // 2)
    bounds = _arange_bounds(periods)
    if bounds is None:
        idx = _harmonic_bins(nfft, pad_power.size, periods)
        partial = np.cumsum(pad_power[idx], axis=1)[:, levels - 1]
    else:
        partial = _level_sums(pad_power, _harmonic_bins_cached(nfft, pad_power.size, *bounds))
    return (partial, full_total, full_shape, valid), ac


def _harmonic_bins(nfft: int, bins: int, periods: np.ndarray) -> np.ndarray:
    """The oversampled periodogram's bin nearest each harmonic ``j = 1 .. 32`` of every
    period: ``(periods.size, 32)`` indices into ``bins`` bins."""
    jj = np.arange(1, HARMONIC_LEVELS[-1] + 1)
    idx = np.rint(jj[None, :] * (nfft / periods[:, None])).astype(np.int64)
    return np.minimum(idx, bins - 1)


@functools.lru_cache(maxsize=2)  # <= SCREEN_CACHE_PERIODS x 32 indices (2 MB) each
def _harmonic_bins_cached(nfft: int, bins: int, first: int, last: int) -> np.ndarray:
    """``_harmonic_bins`` of the periods ``first .. last``, transposed (one row per
    harmonic, C order) and cached: a function of the stream's length only, the same for
    every stream of a fleet (issue 19, helper D: ~0.3 ms of the screening at n = 10^4).
    Read-only."""
    idx = np.ascontiguousarray(_harmonic_bins(nfft, bins, np.arange(first, last + 1)).T)
    idx.setflags(write=False)
    return idx


def _level_sums(pad_power: np.ndarray, bins_by_harmonic: np.ndarray) -> np.ndarray:
    """``np.cumsum(pad_power[idx], axis=1)[:, levels - 1]`` (``idx`` the transpose of
    ``bins_by_harmonic``), bit for bit: ``cumsum`` adds each row's harmonics in order, and
    so does the running sum here, one harmonic (a contiguous row of all periods) at a time,
    kept at each level (issue 19, helper D: the cumulative sum over rows of 32 and the
    column selection cost 0.5 ms at n = 10^4, load 4; this, 0.15 ms). One harmonic's
    powers gathered at a time: the whole ``(32, periods)`` gather was 850 KB of fresh
    pages per stream at n = 10^4."""
    harmonics, size = bins_by_harmonic.shape
    out = np.empty((size, len(HARMONIC_LEVELS)))
    running = pad_power[bins_by_harmonic[0]]
    row = np.empty(size)
    column = 0
    for j in range(harmonics):
        if j:
            np.add(running, np.take(pad_power, bins_by_harmonic[j], out=row), out=running)
        if j + 1 == HARMONIC_LEVELS[column]:
            out[:, column] = running
            column += 1
    return out


def _arange_bounds(periods: np.ndarray) -> tuple[int, int] | None:
    """``(first, last)`` when ``periods`` is ``np.arange(first, last + 1)`` of at most
    ``SCREEN_CACHE_PERIODS`` periods (the screening's cached index arrays), else None."""
    if periods.size == 0 or periods.size > SCREEN_CACHE_PERIODS:
        return None
    first, last = int(periods[0]), int(periods[-1])
    if last - first + 1 != periods.size or not np.all(np.diff(periods) == 1):
        return None
    return first, last


def _comb_sums(ac: np.ndarray, periods: np.ndarray) -> np.ndarray:
    """``sum_{j >= 1, j T < n} c_{jT}`` for every (ascending) ``T`` of ``periods``, each
    accumulated in order of ``j`` from 0 (the order of ``np.bincount``, so both routes give
    the same bits). ``sum_T n / T`` terms, ~``n ln n``: at ``n = 10^6`` 11.6 million, whose
    index arrays (row, ``j``, ``j T``; ~90 MB each) cost more than the FFTs. Beyond
    ``COMB_VECTOR`` terms the short periods (``T^2 < n``) are summed one period at a time
    (a cumulative sum over the strided lags) and the others one ``j`` at a time over the
    prefix of periods with ``j T < n``: ~``2 sqrt(n)`` vector operations, no index array."""
    n = ac.size
    count = (n - 1) // periods
    if int(count.sum()) <= COMB_VECTOR:
        bounds = _arange_bounds(periods)
        if bounds is not None and n <= COMB_CACHE:
            rows, lags = _comb_index(n, *bounds)
        else:
            rows, lags = _comb_rows(n, periods)
        return np.bincount(rows, weights=ac[lags], minlength=periods.size)
    out = np.zeros(periods.size)
    short = int(np.searchsorted(periods, math.isqrt(n - 1), side="right"))
    for r in range(short):
        lag = int(periods[r])
        out[r] = np.cumsum(ac[lag : lag * int(count[r]) + 1 : lag])[-1] if count[r] else 0.0
    if short < periods.size:
        rest, lags = out[short:], periods[short:]
        for j in range(1, int(count[short]) + 1):
            k = int(np.searchsorted(lags, (n - 1) // j, side="right"))  # j T < n: a prefix
            rest[:k] += ac[lags[:k] * j]
    return out


def _comb_rows(n: int, periods: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The comb's terms as index arrays: each term's row (its period's index) and lag
    ``j T``, ``j = 1 .. (n - 1) // T``, rows ascending, ``j`` ascending within a row."""
    count = (n - 1) // periods
    rows = np.repeat(np.arange(periods.size), count)
    j = np.arange(rows.size) - np.repeat(np.cumsum(count) - count, count) + 1
    return rows, periods[rows] * j


@functools.lru_cache(maxsize=2)  # ~n ln n terms x 2 x 8 bytes: 1.3 MB at n = 10^4, 5 MB at 2^15
def _comb_index(n: int, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
    """``_comb_rows`` of the periods ``first .. last``, cached: a function of the stream's
    length only (issue 19, helper D: the index arithmetic was half of ``_comb_sums``).
    Read-only."""
    rows, lags = _comb_rows(n, np.arange(first, last + 1))
    rows.setflags(write=False)
    lags.setflags(write=False)
    return rows, lags


def _screen_logp(stats, dfd: float, rows: np.ndarray | None = None) -> np.ndarray:
    """The screening log p-values (``inf`` where a level is not below ``(T - 1) // 2``) of
    every period, or of the periods ``rows``."""
    partial, full_total, full_shape, valid = stats
    if rows is not None:
        partial, full_total, full_shape, valid = (
            partial[rows],
            full_total[rows],
            full_shape[rows],
            valid[rows],
        )
    levels = np.array(HARMONIC_LEVELS)
    logp = np.full((partial.shape[0], levels.size + 1), np.inf)
    logp[:, :-1] = np.where(valid, _log_sf(partial, levels[None, :], dfd), np.inf)
    logp[:, -1] = _log_sf(full_total, full_shape, dfd)
    return logp


def _screen_lazy(stats, dfd: float) -> tuple[np.ndarray, np.ndarray | None]:
    """The screening log p-values of the periods that can lead the ranking, without the
    F tails of the others (most of the screening's cost on long streams). Within a level
    column every test has the same degrees of freedom, so its p-value falls as its sum
    grows: only the ``LAZY_TOP`` largest sums of each column are evaluated, and the largest
    of their log p-values bounds every other entry of the column from below. Every period
    with an evaluated value below the smallest bound (less a margin for rounding) is
    evaluated in full; the others, whose score is then at least that bound, get ``inf``
    and ``exact`` False. The ranked prefix of exact rows is the true one (the caller
    recomputes everything if it needs a row beyond it). Returns ``(logp, exact)``;
    ``exact`` is None when everything was evaluated. The bound of a column whose evaluated
    tails reach below 1e-300 (``_column_bound``) holds across ``_log_sf``'s switch to its
    asymptotic term (issue 19, helper A: before, such a column meant every F tail was
    evaluated, a third of the screening's cost on strongly periodic streams)."""
    partial, full_total, full_shape, valid = stats
    size = partial.shape[0]
    if size <= 4 * LAZY_TOP:
        return _screen_logp(stats, dfd), None
    levels = np.array(HARMONIC_LEVELS)
    heads, bound = [], np.inf
    for col, level in enumerate(levels):
        rows, values, column_bound = _column_head(partial[:, col], valid[:, col], level, dfd)
        heads.append((rows, values))
        bound = min(bound, column_bound)
    if not np.isfinite(bound):
        return _screen_logp(stats, dfd), None
    cut = bound - 1e-9 * (1.0 + abs(bound))
    known = _full_column(full_total, full_shape, dfd, cut)
    for rows, values in heads:
        known[rows] = np.minimum(known[rows], values)
    exact = known < cut
    logp = np.full((size, levels.size + 1), np.inf)
    logp[exact] = _screen_logp(stats, dfd, np.flatnonzero(exact))
    return logp, exact


def _full_column(total: np.ndarray, shape: np.ndarray, dfd: float, cut: float) -> np.ndarray:
    """The screening's full-sum log tails (``_log_sf``) where they can fall below ``cut``,
    ``inf`` elsewhere (``_screen_lazy``; issue 19, helper E: half the F tails of that
    column on a noise-like stream). A full sum at most its shape is an F ratio ``<= 1``,
    whose tail is at least ``P(F(2 s, 2 d) > 1) >= exp(-1)`` for ``s >= 1`` (the limit
    ``s = 1``, ``d -> inf`` is the exponential tail at 1; measured on a grid of ``s`` and
    ``d`` from 1 to 10^7: minimum 0.3679), above ``FULL_TAIL_FLOOR = 0.3``: such a row
    cannot be below a ``cut`` under ``log 0.3``, so ``known < cut`` comes out the same.

    Nor can a row whose leading term ``_log_f_leading`` (a lower bound of the log tail, at
    a tenth of fdtrc's cost) is at least ``cut + FULL_LEAD_MARGIN`` (issue 19, helper D:
    the F tails of this column were ~1.1 of ~23 ms per stream at T = 1,000): where
    ``_log_sf`` switches to that term its value is the bound itself, and elsewhere it is
    the log of an fdtrc value that would have to fall ``e^10`` times below the true tail
    to reach ``cut`` (fdtrc's error in log is within 0.05 where measured,
    ``_column_bound``)."""
    if cut >= math.log(FULL_TAIL_FLOOR):
        return _log_sf(total, shape, dfd)
    out = np.full(total.size, np.inf)
    rows = np.flatnonzero(total > shape)
    if math.isfinite(dfd) and rows.size:
        lead = _log_f_leading(np.maximum(total[rows], 1e-300), shape[rows], dfd)
        rows = rows[lead < cut + FULL_LEAD_MARGIN]
    out[rows] = _log_sf(total[rows], shape[rows], dfd)
    return out


def _column_head(sums: np.ndarray, valid: np.ndarray, level: int, dfd: float):
    """The evaluated head of one screening column (``_screen_lazy``): ``(rows, their log
    tails, the bound of every other valid row)``; the bound is ``inf`` when every valid row
    is in the head. The ``LAZY_TOP`` largest sums first; while ``_column_bound`` proves
    nothing (the smallest head sum's tail in fdtrc's inaccurate band), 4 times as many
    (issue 19, helper A: before, such a column meant every F tail of every column)."""
    candidates = np.flatnonzero(valid)
    count = LAZY_TOP
    while True:
        rows = candidates
        if rows.size > count:
            rows = rows[np.argpartition(-sums[rows], count - 1)[:count]]
        values = _log_sf(sums[rows], np.full(rows.size, float(level)), dfd)
        if rows.size == candidates.size:
            return rows, values, np.inf
        bound = _column_bound(sums[rows], values, float(level), dfd)
        if np.isfinite(bound) or not math.isfinite(dfd):
            return rows, values, bound
        count *= 4


def _column_bound(sums: np.ndarray, values: np.ndarray, level: float, dfd: float) -> float:
    """A lower bound of ``_log_sf(s, level, dfd)`` for every sum ``s`` of a screening column
    at most ``sums.min()`` (the column's entries left out of the ``LAZY_TOP`` largest
    ``sums``, whose log tails are ``values``), or ``-inf`` when none is proven (the caller
    then evaluates every entry). While the tails stay above ``exp(LAZY_TINY)``,
    ``values.max()``: ``_log_sf`` is there the log of ``fdtrc``, decreasing in ``s`` (up to
    rounding, which the caller's margin covers). Below, ``scipy.special.fdtrc`` is not
    accurate (not even monotone: a smaller sum's log tail below a larger one's by up to
    0.05 between -690.8 and -600 and 0.002 between -600 and -575, none above -575 in
    2 million sums per (level, dfd) for levels 1-32 and dfd 20-16,664 (issue 19, helper
    A; main's ``LAZY_TINY`` of -600 let such a column through); it falls to ``exp(-0.39)``
    times its own leading term near 1e-300 at 32 harmonics and dfd 100) and ``_log_sf``
    switches to the leading term ``lead`` (``_log_f_leading``) where fdtrc falls below
    1e-300. If the smallest evaluated sum ``m`` took that switch, the bound is
    ``min(values.max(), f(m), lead(m), log(1e-300))``. Proof, for
    ``s <= m``: if ``_log_sf(s)`` took the switch too, it is ``lead(s)``, and ``s > level``
    (an F ratio ``s / level <= 1`` has a tail above 0.3, nowhere near 1e-300) where
    ``lead`` decreases in ``s``, so ``lead(s) >= lead(m)``; otherwise it is the log of an
    fdtrc value of at least 1e-300, so at least ``log(1e-300)``. No accuracy of fdtrc is
    assumed. If ``m`` did not take the switch (its tail lies in fdtrc's inaccurate band
    between 1e-300 and ``exp(LAZY_TINY)``), ``-inf``."""
    top = float(values.max())
    if top >= LAZY_TINY:
        return top
    if not math.isfinite(dfd):  # the Gamma series: no such bound (every tail is evaluated)
        return -math.inf
    i = int(np.argmin(sums))
    lowest = max(float(sums[i]), 0.0)
    if special.fdtrc(2.0 * level, 2.0 * dfd, lowest / level) >= 1e-300:
        return -math.inf
    lead = float(_log_f_leading(np.array([max(lowest, 1e-300)]), np.array([level]), dfd)[0])
    return min(top, float(values[i]), lead, math.log(1e-300))
