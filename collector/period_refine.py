"""Integer refinement and the fundamental (``collector/period.py``, "Search, refinement,
fundamental"): fold energies on the resolving harmonics (exact, bounded, or by batched
partial DFTs), the resolving level, and the divisor / multiple moves (``_fundamental``)."""

from __future__ import annotations

import functools
import math

import numpy as np
from ldpfleet.collector.period_constants import (
    ALPHA_CORROBORATE,
    ALPHA_SHAPE,
    FAST_FOLD_BATCH,
    FAST_FOLD_DIRECT,
    FAST_FOLD_HARMONICS,
    FAST_FOLD_MIN_DIRECT,
    FAST_FOLD_MIN_PERIOD,
    FAST_FOLD_MIN_WIDE,
    FAST_FOLD_PRIME,
    FAST_FOLD_TOLERANCE,
    FAST_FOLD_WIDE,
    FLOOR_SLACK,
    HARMONIC_LEVELS,
    MAX_MULTIPLE,
    MIN_EXTRA_SHARE,
)
from ldpfleet.collector.period_screen import (
    _log_f_leading,
    _log_sf,
)
from ldpfleet.collector.period_stats import (
    _extra_logp,
    _level_logp,
    _levels,
)
from ldpfleet.collector.period_whiten import (
    _dot,
    _phase_counts,
    _phase_sums,
    _rfft,
    _scratch_pool,
    _within_scale,
)
from scipy import fft as sp_fft
from scipy import special


def _fold_energy(xs: np.ndarray, t: np.ndarray, period: int, harmonics: int) -> float:
    """Energy of the fold of the WHOLE stream (partial last cycle included, each phase mean
    weighted by its count) in its first ``harmonics`` harmonics: the same samples for every
    period, so neighbouring integers compare fairly, and an exactly periodic signal is
    captured completely only at its period."""
    sums = _phase_sums(xs, period)
    spec = _rfft(sums / _phase_counts(xs.size, period)[1])[1 : _limit(harmonics, period) + 1]
    return 2.0 * float(np.sum(spec.real**2 + spec.imag**2)) / period


def _fold_energy_bounded(xs: np.ndarray, period: int, harmonics: int) -> tuple[float, float]:
    """``(value, tol)`` with ``|value - _fold_energy(xs, t, period, harmonics)| <= tol``
    (issue 19, helper K). On a period of at least ``FAST_FOLD_MIN_PERIOD`` that is not
    5-smooth (pocketfft's slow lengths: generic radices or Bluestein) and at most
    ``FAST_FOLD_HARMONICS`` harmonics, the harmonics come from a partial DFT
    (``_partial_dft``, 3-10 times faster there); elsewhere ``_fold_energy`` itself, tol 0.

    The bound: both routes compute each ``Y_j`` (of the fold ``y``) within ``eps sum |y|``
    of its true value, ``eps`` a few hundred ulps at most (measured below 1e-14 for the
    partial DFT at 128 harmonics and lengths 973-3019; pocketfft's error is
    ``O(u log n)`` of ``||y||_2 sqrt(n)`` which is at most ``sum |y|`` times that), and
    the energy ``2 / T sum_{j <= L} |Y_j|^2`` then moves by at most
    ``2 / T L (2 eps + eps^2) (sum |y|)^2`` per route; ``tol`` uses
    ``FAST_FOLD_TOLERANCE = 1e-9`` for the sum of both routes' ``4 eps + 2 eps^2`` (a
    factor ~1e4 of slack over the measured errors)."""
    limit = _limit(harmonics, period)
    if not _partial_pays(period, limit):
        return _fold_energy(xs, None, period, harmonics), 0.0
    folded = _phase_sums(xs, period) / _phase_counts(xs.size, period)[1]
    spec = _partial_dft(folded, limit)
    value = 2.0 * float(np.sum(spec.real**2 + spec.imag**2)) / period
    scale = float(np.sum(np.abs(folded)))
    return value, FAST_FOLD_TOLERANCE * 2.0 * limit * scale * scale / period


def _fold_energies_bounded(
    xs: np.ndarray, periods: list[int], harmonics: int
) -> list[tuple[float, float]]:
    """``_fold_energy_bounded(xs, q, harmonics)`` for every ``q`` of ``periods`` on which it
    takes the partial DFT (``_partial_pays``), the partial DFTs batched (``_partial_dft`` of a
    list of folds, at most ``FAST_FOLD_BATCH`` twiddles a call): the same value up to
    rounding and the same ``tol`` (issue 19, helper E). The bound of
    ``_fold_energy_bounded`` holds as it is: each batched ``Y_j`` is the same sum of the
    same products, only the twiddles of all rows come from one call."""
    groups: dict[int, list[int]] = {}
    for q in periods:
        groups.setdefault(_limit(harmonics, q), []).append(q)
    found: dict[int, tuple[float, float]] = {}
    for limit, qs in groups.items():
        b = math.isqrt(max(qs) - 1) + 1
        rows = max(1, FAST_FOLD_BATCH // (limit * (b + -(-max(qs) // b))))
        for start in range(0, len(qs), rows):
            # (issue 19, helper D) each fold written into its zero-padded row at once and
            # the rows' sums |y| in one call: the same values up to rounding of the sums,
            # which the tolerance's slack (~1e4) covers
            chunk = qs[start : start + rows]
            padded = _padded_rows(chunk)
            for row, q in zip(padded, chunk, strict=True):
                np.divide(_phase_sums(xs, q), _phase_counts(xs.size, q)[1], out=row[:q])
            spec = _partial_dft_padded(padded, np.array(chunk), limit)
            power = 2.0 * np.sum(spec.real**2 + spec.imag**2, axis=1)
            scale = np.abs(padded).sum(axis=1)
            tol = FAST_FOLD_TOLERANCE * 2.0 * limit * scale * scale
            for q, energy, bound in zip(chunk, power.tolist(), tol.tolist(), strict=True):
                found[q] = (energy / q, bound / q)
    return [found[q] for q in periods]


def _span_floor(xw: np.ndarray, periods: list[int]) -> np.ndarray:
    """Lower bounds, one per ``q`` of ``periods``, of step 2's exact log p-value
    (``_Search.exact_logp``: ``_level_logp(power / scale, (n - q) / 2)`` with ``power`` the
    harmonic powers of the whitened stream ``xw`` folded at ``q`` and ``scale`` its
    within-phase mean square), without an FFT of each fold (issue 19, helper F): ``refine``
    skips the settle of a candidate whose whole neighbourhood is bounded above the best
    exact log p-value found, which then cannot change (its test is ``value < best``).
    Every ``q`` needs at least 65 samples (32 harmonics below its Nyquist).

    Per ``q``: the scale exactly as the exact test computes it (``_within_scale`` on the
    same phase sums ``S``); the first 32 harmonic powers ``|Y_j|^2 / n`` by the batched
    partial DFT (``_partial_dft_padded``), each within ``e = FAST_FOLD_TOLERANCE q sum S^2
    / n >= FAST_FOLD_TOLERANCE (sum |S|)^2 / n`` of the true power and so of the FFT's
    (``_fold_energy_bounded``'s error budget: both routes' ``|Y_j|`` within ``eps sum |S|``,
    ``4 eps + 2 eps^2 <= 1e-9``); the level
    sums ``sum_{j <= H} P_j + H e`` for ``H = 1 .. 32`` and, for the level of all
    ``(q - 1) // 2`` harmonics, Parseval's ``q sum S^2 / (2 n) >= sum_j P_j`` (it drops
    ``|Y_0|^2`` and the Nyquist term). Those upper bounds of the level sums, over the scale
    and raised by ``1e-9`` relative (every rounding of both routes), go through ``_log_sf``'s
    tail (decreasing in the sum) at the same degrees of freedom; ``FLOOR_SLACK`` = 2 more
    covers where ``_log_sf`` is not monotone: ``fdtrc``'s jitter (at most 0.05 in log,
    ``_column_bound``) and the step of at most ~0.4 where it switches to the leading term
    below 1e-300."""
    n, count, size = xw.size, HARMONIC_LEVELS[-1], len(periods)
    square = _dot(xw, xw)
    scales, energy = np.empty(size), np.empty(size)
    power = np.empty((size, count))
    sizes = np.array(periods)
    longest = int(sizes.max())
    b = math.isqrt(longest - 1) + 1
    rows = max(1, FAST_FOLD_BATCH // (count * (b + -(-longest // b))))
    for start in range(0, size, rows):
        chunk = periods[start : start + rows]
        width = _padded_rows([max(chunk)]).shape[1]  # the (a, b) matrix of the longest
        padded = _floor_rows(len(chunk), width)
        for i, q in enumerate(chunk, start):
            sums = _phase_sums(xw, q)
            scales[i] = _within_scale(xw, None, q, sums, square)
            energy[i] = _dot(sums, sums)
            padded[i - start, :q] = sums
        spec = _partial_dft_padded(padded, sizes[start : start + len(chunk)], count)
        power[start : start + len(chunk)] = spec.real**2 + spec.imag**2
    power /= n
    err = FAST_FOLD_TOLERANCE * sizes * energy / n  # (sum |S|)^2 <= q sum S^2
    levels = np.array(HARMONIC_LEVELS)
    partial = np.cumsum(power, axis=1)[:, levels - 1] + levels[None, :] * err[:, None]
    full = sizes * energy / (2.0 * n)
    shape = np.column_stack([np.broadcast_to(levels, partial.shape), (sizes - 1) // 2])
    total = np.column_stack([partial, full]) / scales[:, None] * (1.0 + 1e-9)
    dfd = np.broadcast_to(((n - sizes) / 2.0)[:, None], total.shape)
    sf = special.fdtrc(2.0 * shape, 2.0 * dfd, total / shape)
    tiny = sf < 1e-300
    logp = np.log(np.where(tiny, 1.0, sf))
    if tiny.any():
        x = np.maximum(total[tiny], 1e-300)
        logp[tiny] = _log_f_leading(x, shape[tiny].astype(float), dfd[tiny])
    return logp.min(axis=1) - FLOOR_SLACK


def _floor_rows(rows: int, cols: int) -> np.ndarray:
    """Zeros, C-ordered ``(rows, cols)``, in a buffer this thread keeps between calls
    (``_span_floor``'s folds; ``period_whiten._scratch``'s reason: fresh pages fault in one
    by one, ~1 ms for the ~1 MB of a neighbourhood's folds here)."""
    pool = _scratch_pool.__dict__
    buffer = pool.get("floor")
    if buffer is None or buffer.size < rows * cols:
        buffer = pool["floor"] = np.empty(rows * cols)
    out = buffer[: rows * cols].reshape(rows, cols)
    out.fill(0.0)
    return out


def _padded_rows(sizes: list[int]) -> np.ndarray:
    """Zeros for folds of ``sizes`` samples, one row each of ``a b`` columns: the
    ``(a, b)`` matrix of ``_partial_dft`` for the longest (``b = ceil(sqrt(T))``)."""
    longest = max(sizes)
    b = math.isqrt(longest - 1) + 1
    return np.zeros((len(sizes), b * -(-longest // b)))


def _batch_pays(period: int, limit: int) -> bool:
    """Whether ``_Search.bound_span`` reads ``limit`` harmonics of a fold of ``period``
    samples by the batched partial DFT (issue 19, helper E): where ``_partial_pays``, and
    from ``FAST_FOLD_MIN_DIRECT`` samples also up to ``FAST_FOLD_HARMONICS // 2``
    harmonics of any length and up to ``FAST_FOLD_HARMONICS`` of a length that is not
    5-smooth. Batched, a fold costs ~1 ns per harmonic and sample here against ~15 ns per
    sample for pocketfft's real FFT of a 5-smooth length (more for the others; measured
    under load ~8 at n = 10,000: 21 us a fold at (2,000, 8), 88 us at (3,000, 32), 364 us
    at (3,000, 128); rfft 34 us at 2,000, 45 us at 3,000, 80 us at 997, 220 us at 2,999)."""
    if limit > FAST_FOLD_WIDE * FAST_FOLD_HARMONICS or period < FAST_FOLD_MIN_DIRECT:
        return False
    if limit <= FAST_FOLD_HARMONICS // 2:
        return True
    if limit <= FAST_FOLD_HARMONICS and not _smooth(period):
        return True
    return _partial_pays(period, limit)


def _partial_pays(period: int, limit: int) -> bool:
    """Whether ``_fold_energy_bounded`` reads ``limit`` harmonics of a fold of ``period``
    samples by the partial DFT (faster there than pocketfft's real FFT; measured, docs/
    cpr.md "Speed"): never on 5-smooth lengths; up to ``FAST_FOLD_DIRECT`` harmonics from
    ``FAST_FOLD_MIN_DIRECT`` samples, up to ``FAST_FOLD_HARMONICS`` from
    ``FAST_FOLD_MIN_PERIOD`` (helper K); and (issue 19, helper A) up to ``FAST_FOLD_WIDE
    * FAST_FOLD_HARMONICS`` from ``FAST_FOLD_MIN_WIDE`` samples when the length's largest
    prime factor exceeds ``FAST_FOLD_PRIME`` (pocketfft's generic radix or Bluestein; 49
    cold folds of 64 harmonics near 2,000 samples: 4.95 ms by FFT, 2.47 ms so; of 128
    harmonics near 3,000: 5.07 against 3.50 ms)."""
    if limit > FAST_FOLD_WIDE * FAST_FOLD_HARMONICS or _smooth(period):
        return False
    if limit <= FAST_FOLD_DIRECT:
        return period >= FAST_FOLD_MIN_DIRECT
    if limit <= FAST_FOLD_HARMONICS:
        return period >= FAST_FOLD_MIN_PERIOD
    return period >= FAST_FOLD_MIN_WIDE and _largest_prime(period) > FAST_FOLD_PRIME


@functools.lru_cache(maxsize=4096)
def _largest_prime(size: int) -> int:
    """The largest prime factor of ``size`` (cached)."""
    return _prime_factors(size)[-1]


@functools.lru_cache(maxsize=4096)
def _smooth(size: int) -> bool:
    """Whether pocketfft's real FFT of ``size`` is fast (``size`` 5-smooth)."""
    return sp_fft.next_fast_len(size, real=True) == size


def _partial_dft(y: np.ndarray | list[np.ndarray], count: int) -> np.ndarray:
    """``rfft(y)[1 : count + 1]`` to within ``~count * 1e-16 * sum |y|`` (not bit for bit):
    ``y`` zero-padded to an ``(a, b)`` matrix (``b = ceil(sqrt(T))``), ``Y_j = sum_s
    e^{-2 pi i j s / T} sum_r y_{r b + s} e^{-2 pi i j r b / T}``: ``count (a + b)``
    twiddles and a ``(count, a) x (a, b)`` matrix product. Up to ``FAST_FOLD_DIRECT``
    harmonics the twiddles are exponentials of exactly reduced angles (one call); beyond,
    the ``j``-th powers of those of harmonic 1 (a cumulative product: ``a + b``
    exponentials, the rest multiplications: ``_powers``).

    ``y`` a list of 1-D folds (issue 19, helper E): the rows ``rfft(y[i])[1 : count + 1]``
    of a ``(len(y), count)`` array, in one call: every fold zero-padded to the ``(a, b)``
    matrix of the longest (``Y_j`` as above needs only ``a b >= T``), each row's twiddles
    from its own length (one exponential call for all, then the same doubling), the
    ``(count, a) x (a, b)`` products stacked (numpy's batched matmul: one BLAS call of the
    former size per row)."""
    if not isinstance(y, np.ndarray):
        return _partial_dft_rows(y, count)
    size = y.size
    b = math.isqrt(size - 1) + 1
    a = -(-size // b)
    padded = np.zeros(a * b)
    padded[:size] = y
    matrix = padded.reshape(a, b)
    steps = np.concatenate((np.arange(0, a * b, b), np.arange(b)))
    if count <= FAST_FOLD_DIRECT:
        angles = np.outer(np.arange(1, count + 1), steps) % size
        twiddles = np.exp(angles * (-2j * np.pi / size))
    else:
        twiddles = _powers(np.exp(steps * (-2j * np.pi / size)), count)
    outer = twiddles[:, :a]
    partial = (outer.real @ matrix) + 1j * (outer.imag @ matrix)
    return np.einsum("js,js->j", partial, twiddles[:, a:])


def _partial_dft_rows(folds: list[np.ndarray], count: int) -> np.ndarray:
    """``_partial_dft`` of a list of folds (its docstring)."""
    sizes = [fold.size for fold in folds]
    padded = _padded_rows(sizes)
    for row, fold in zip(padded, folds, strict=True):
        row[: fold.size] = fold
    return _partial_dft_padded(padded, np.array(sizes), count)


def _partial_dft_padded(padded: np.ndarray, sizes: np.ndarray, count: int) -> np.ndarray:
    """``_partial_dft_rows`` of folds of ``sizes`` samples already in the rows of
    ``padded`` (``_padded_rows``, zeros beyond each fold)."""
    b = math.isqrt(int(sizes.max()) - 1) + 1
    a = padded.shape[1] // b
    matrix = padded.reshape(len(sizes), a, b)
    steps = np.concatenate((np.arange(0, a * b, b), np.arange(b)))
    if count <= FAST_FOLD_DIRECT:
        angles = (np.arange(1, count + 1)[None, :, None] * steps) % sizes[:, None, None]
        twiddles = np.exp(angles * (-2j * np.pi / sizes[:, None, None]))
    else:
        twiddles = _powers(np.exp(steps * (-2j * np.pi / sizes[:, None])), count)
        twiddles = twiddles.transpose(1, 0, 2)
    # (issue 19, helper D) the complex sum over the inner steps as four real ones: the
    # former mixed real x complex einsum over a transposed view cast every element (1.7 of
    # 5.7 ms per stream in these DFTs at T = 1,000, load 3.5). Contiguous real and
    # imaginary parts for the products: numpy's matmul hands those to BLAS (strided ones
    # went through its own loop). (The powers are made harmonic-major, ``_powers``: made
    # fold-major, each doubling step's operands share the output's memory bounds and numpy
    # copied them, 640 us at 4 folds x 128 harmonics.)
    cos_part, sin_part = twiddles.real, twiddles.imag
    real = np.ascontiguousarray(cos_part[:, :, :a]) @ matrix
    imag = np.ascontiguousarray(sin_part[:, :, :a]) @ matrix
    inner_cos = np.ascontiguousarray(cos_part[:, :, a:])
    inner_sin = np.ascontiguousarray(sin_part[:, :, a:])
    out = np.empty(real.shape[:2], dtype=complex)
    out.real = np.einsum("kjs,kjs->kj", real, inner_cos) - np.einsum("kjs,kjs->kj", imag, inner_sin)
    out.imag = np.einsum("kjs,kjs->kj", real, inner_sin) + np.einsum("kjs,kjs->kj", imag, inner_cos)
    return out


def _powers(first: np.ndarray, count: int) -> np.ndarray:
    """Rows ``first ** 1 .. first ** count`` (complex), by doubling: row ``i + d`` is row
    ``i`` times row ``d - 1`` for the ``d`` rows already made, ~log2(count) products of
    whole blocks (issue 19, helper A: numpy's complex ``cumprod`` over the rows was 40 %
    of a partial DFT). Each row is a product of at most ``count`` factors, as by the
    cumulative product: the same error bound (``_partial_dft``)."""
    out = np.empty((count, *first.shape), dtype=complex)
    out[0] = first
    done = 1
    while done < count:
        step = min(done, count - done)
        np.multiply(out[:step], out[done - 1], out=out[done : done + step])
        done += step
    return out


def _resolving_level(power: np.ndarray) -> int:
    """The most-significant level, raised to every higher level whose added block of
    harmonics is itself significant (``ALPHA_SHAPE``): high harmonics that carry signal
    resolve neighbouring integers best, noise-only ones just add noise."""
    best = _level_logp(power)[1]
    levels = _levels(power.size)[0]
    # the blocks above the most significant level, their tails in one call (elementwise:
    # the same values as one call per block)
    starts = [0, *levels[:-1]]
    upper = [i for i, level in enumerate(levels) if level > best]
    if not upper:
        return best
    blocks = np.array([float(np.sum(power[starts[i] : levels[i]])) for i in upper])
    widths = np.array([float(levels[i] - starts[i]) for i in upper])
    significant = _log_sf(blocks, widths) < np.log(ALPHA_SHAPE)
    for i, hit in zip(upper, significant, strict=True):
        if hit and levels[i] > best:
            best = levels[i]
    return best


def _captured(power: np.ndarray, harmonics: int, window: np.ndarray) -> float:
    """Share of the window's variance that the fold captures in its first ``harmonics``
    harmonics, above the noise floor (each harmonic power carries 1 of noise):
    ``(sum_j P_j - H) / (sum_t (x_t - mean)^2)`` — a share, so that windows of different
    content (a neighbour's fold covers a few more samples) compare fairly."""
    h = _limit(harmonics, 2 * power.size + 1)
    centred = window - window.mean()
    return float(np.sum(power[:h]) - h) / max(_dot(centred, centred), 1e-300)


def _prime_factors(value: int) -> list[int]:
    out, p = [], 2
    while p * p <= value:
        if value % p == 0:
            out.append(p)
            while value % p == 0:
                value //= p
        p += 1
    if value > 1:
        out.append(value)
    return out


def _limit(harmonics: int, period: int) -> int:
    top = (period - 1) // 2
    value = harmonics if harmonics < top else top
    return value if value > 1 else 1


def _fundamental(
    period, harmonics, power, whole, whitened_whole, xs_at, min_period, max_period
) -> tuple[int, int, int | None]:
    """Divisors first (prefer the fundamental: move to ``T / p``, ``p`` prime, while its own
    exact statistic is at least as significant), then multiples (a line on a harmonic: move to
    ``m T`` if the harmonics of ``m T`` that ``T`` lacks are significant, detrended at
    ``ALPHA_SHAPE`` and whitened at ``ALPHA_CORROBORATE``, step 3c). Returns the period after
    the divisors, the final one (step 7 may undo the multiple move) and the multiple vetoed
    by step 3c (None if none)."""
    moved = True
    while moved:
        moved = False
        here = _level_logp(power(period))[0]
        for prime in _prime_factors(period):
            small = period // prime
            if small < min_period:
                continue
            value, h = _level_logp(power(small))
            if value <= here:
                period, harmonics, moved = small, h, True
                break
        if not moved and period % 2 == 1:
            # step 3a: an odd period has no half among its divisors; ~2T that settled on an
            # odd integer (287, 289 for T = 144) moves to the better of its two near halves
            # if that is at least as significant and the period's harmonics off the even
            # ones add nothing (not significant at ALPHA_SHAPE)
            halves = [h for h in (period // 2, period // 2 + 1) if h >= min_period]
            scored = [(_level_logp(power(h)), h) for h in halves]
            if scored:
                (value, h), small = min(scored)
                full = power(period)
                if value <= here and _extra_logp(full, 2, full.size) >= np.log(ALPHA_SHAPE):
                    period, harmonics, moved = small, h, True
    multiples = range(2, min(MAX_MULTIPLE, (max_period + MAX_MULTIPLE) // period) + 1)
    for m in multiples:
        # T may be a rounded T_true / m: search the integers around m T, but never as far as
        # (m +- 1) T (a period T <= m reached them: T = 5 became 20, whose "extra" harmonics
        # j not divisible by m = 5 were T's own lines at j = 4, 8)
        span = min(m, period - 1)
        near = [q for q in range(m * period - span, m * period + span + 1) if q <= max_period]
        if not near:
            continue
        big, limit, added = _multiple_reading(period, harmonics, m, near, whole, xs_at)
        if added < np.log(ALPHA_SHAPE / len(multiples)):
            # step 3c: corroborated on the whitened stream, or vetoed (slow aperiodic power,
            # e.g. an amplitude envelope times the mean level, on the multiple's lowest
            # harmonics: the background fit absorbs it)
            if _extra_logp(whitened_whole(big), m, limit) < np.log(ALPHA_CORROBORATE):
                return period, big, None
            return period, period, big
    return period, period, None


def _multiple_reading(period, harmonics, m, near, whole, xs_at) -> tuple[int, int, float]:
    """Step 3's reading of the multiple ``m`` of ``period``: the integer ``big`` of ``near``
    (around ``m T``) whose whole-cycle fold captures the most energy, the harmonics read
    there, and the log p-value of the harmonics ``big`` adds to ``period`` (``_extra_logp``
    of the stream detrended jointly with the fold at ``period``; 0 when they carry at most
    ``MIN_EXTRA_SHARE`` of the power: rounding error of a clean stream)."""
    limit = _limit(m * harmonics, near[-1])
    xs = xs_at(period)  # detrended jointly with the fold at T: the null "periodic at T"
    common = xs.size // near[-1]
    big = near[
        int(np.argmax([_captured(whole(q, period, common), limit, xs[: common * q]) for q in near]))
    ]
    pw = whole(big, period)
    limit = _limit(m * harmonics, big)
    extra = float(np.sum(pw[:limit]) - np.sum(pw[m - 1 : limit : m]))
    # significant, and not rounding error (a clean stream has no noise floor to beat)
    if extra <= MIN_EXTRA_SHARE * float(np.sum(pw)):
        return big, limit, 0.0
    return big, limit, _extra_logp(pw, m, limit)


def _longer_multiple(
    period, harmonics, whole, whitened_whole, xs_at, max_period, top
) -> int | None:
    """Step 10 (b), the multiples past the range: the multiples ``m T`` (``m <=
    MAX_MULTIPLE``) whose window ``m T +- min(m, T - 1)`` (cut at ``top``) reaches past
    ``max_period``, each read exactly as step 3 reads one over its WHOLE window (``big``,
    the integer whose fold captures the most); the first whose ``big`` lies past
    ``max_period`` and whose added harmonics are significant detrended (``ALPHA_SHAPE``,
    Bonferroni over these multiples) and whitened (``ALPHA_CORROBORATE``); None if none.
    A ``big`` inside the range was step 3's to judge (the window only past the range
    compared ``4 T + 1 .. 4 T + 4`` without ``4 T`` itself, and a T-periodic spiky cycle
    read over 2 cycles of ``4 T + 1`` shows every harmonic: true 25 and 144 withdrawn,
    docs/preregistration/C-range-edge.md). Speed: the whitened reading is first taken at
    the integer of the window nearest ``m T`` and a multiple failing it is not read
    further (one fold instead of ``2 m + 2``: 3-4 ms at T = 1,000, n = 10,000)."""
    candidates = []
    for m in range(2, MAX_MULTIPLE + 1):
        span = min(m, period - 1)
        near = [q for q in range(m * period - span, m * period + span + 1) if q <= top]
        if near and near[-1] > max_period:
            candidates.append((m, near))
    for m, near in candidates:
        centre = min(near, key=lambda q: abs(q - m * period))
        if _extra_logp(whitened_whole(centre), m, _limit(m * harmonics, centre)) >= np.log(
            ALPHA_CORROBORATE
        ):
            continue
        big, limit, added = _multiple_reading(period, harmonics, m, near, whole, xs_at)
        if big <= max_period:
            continue
        if added < np.log(ALPHA_SHAPE / len(candidates)) and _extra_logp(
            whitened_whole(big), m, limit
        ) < np.log(ALPHA_CORROBORATE):
            return big
    return None
