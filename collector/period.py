"""Cycle recovery for SW-privatised streams — theory of operation.

This is step 1 of CPR (seed 003, ``003_c13c27287677cf8c.txt``, §III "cycle recovery"; working
spec ``/work/shared/reference/sw-and-cpr.md``, "CPR 1. Cycle recovery"): estimate the dominant
period ``T`` of a stream from its Square Wave reports alone. It is post-processing of released
reports, so it costs no privacy budget.

Periodicity proxy (seed 003)
    The mean squared shift discrepancy ``Delta_T(x) = mean_{t=0}^{n-T-1} (x_{t+T} - x_t)^2``
    (``shift_discrepancy``). With ``S(a, b) = sum_{a<=t<b} x_t^2`` and the autocorrelation
    ``c_T = sum_t x_t x_{t+T}``, ``(n - T) Delta_T = S(0, n-T) + S(T, n) - 2 c_T``: one
    zero-padded real FFT gives every ``c_T`` and one cumulative sum gives every ``S``, so all
    lags cost ``O(n log n)`` together. The mean is removed first (``Delta`` is shift invariant;
    this only improves the conditioning of the sums).

    For ``x_t = s_t + e_t`` with ``s`` ``T``-periodic and ``e`` iid noise of variance
    ``sigma^2``, the signal cancels at every multiple ``jT`` and ``Delta_{jT} = 2 sigma^2``;
    at other lags the signal adds ``2 var(s) (1 - rho_s(lag))``. Pure white noise gives
    ``2 sigma^2`` at every lag.

Normalised discrepancy and its standard error
    ``detect_period`` divides ``Delta_T`` by ``v_T = (S(0, n-T) + S(T, n)) / (2 (n - T))``, the
    mean power of exactly the samples that enter the lag-``T`` differences, so
    ``D_T = Delta_T / v_T = 2 (1 - r_T)`` with ``r_T = c_T / ((n - T) v_T)`` a correlation
    coefficient. For a stationary stream ``v_T`` is the stream variance (the normalisation
    seed 003 implies); dividing by ``v_T`` rather than the global variance removes the slowly
    varying fluctuation of the two partial sums of squares, which is common to neighbouring lags
    and would otherwise dominate the error of the averages below.

    Standard error. Under iid noise the lag products ``c_T`` of distinct lags are uncorrelated
    and ``var(c_T / (n - T)) = sigma^4 / (n - T)``. Hence at lags where the signal cancels,
    ``D_l = D0 + noise`` with ``D0 = 2 sigma^2 / v`` and ``sd = D0 / sqrt(n - l)``,
    independently across lags; for white noise ``D0 = 2``. Any weighted average
    ``A = sum_l a_l D_l`` therefore has ``sd(A) = D0 sqrt(sum_l a_l^2 / (n - l))`` and the
    difference of two averages ``A - B`` has ``sd = D0 sqrt(sum_l (a_l - b_l)^2 / (n - l))``
    (shared lags cancel). Every tolerance below is ``z`` times such a standard error, with
    ``D0`` estimated by the comb value of the current best candidate. (When the signal
    dominates ``v``, the noise part of the partial sums of squares adds a per-lag error of the
    same size, but it varies smoothly with the lag and cancels between two averages taken over
    the same lag range — which is why the preference test below compares equal ranges.
    Simulated check, 300 noisy periodic streams: the standardised ``A - B`` of two true-period
    combs has mean 0.0-0.1 and standard deviation 0.97-1.03.)

Comb (harmonic) average
    A single lag is a weak statistic under SW noise: at ``eps0 = 1``, ``n = 2000`` the signal
    lowers ``D_T`` by ~0.15 while one lag has ``sd`` ~0.04-0.06 and neighbouring periods differ
    by a few hundredths. A ``T``-periodic stream has ``D`` at its floor at *every* multiple
    ``jT``, so candidates are scored by the comb mean
    ``C(P) = mean_{j=1..J} D_{jP}``, ``J = min(COMB_CYCLES, (n // 2) // P)`` (lags up to
    ``n / 2``, so each ``Delta`` averages at least ``n / 2`` products). ``COMB_CYCLES = 16``
    cycles is the measured compromise between noise averaging (more lags) and robustness to
    quasi-periodic streams whose cycle lengths jitter, where phase drift decorrelates far
    multiples. The white-noise verification and the multiple-vs-divisor test also use the
    full comb up to ``n / 2`` (strictly periodic streams gain power from it).

Pipeline (``detect_period``)
    0. Validation: ``x`` 1-D and finite (``ParameterError``, a ``ValueError``, naming the
       offending sample ``x[i]``); ``min_period >= 2``; ``max_period`` defaults to
       ``n // (min_cycles * DEFAULT_SCALES)`` and is clipped to ``n // min_cycles``. The brief
       suggested the default ``n // min_cycles``, but then only ``L_1 = n`` satisfies the scale
       rule below, a single scale votes and the confidence degenerates to 0 or 1; the default
       keeps ``DEFAULT_SCALES = 6`` scales. Pass ``max_period`` explicitly for longer periods
       (with ``K`` scales possible only if ``max_period <= n / (min_cycles K)``).
    1. Detrend: ``scipy.signal.detrend(x, type="linear")``. A linear drift adds ``(a T)^2`` to
       ``Delta_T`` and inflates the variance, so on an aperiodic stream every ``D_T`` would
       drop below the white-noise level and pass the verification of step 4. A stream that is
       constant or a pure linear ramp (residual ``std <= 1e-12 max|x|``) has nothing periodic:
       ``period=None``.
    2. Multi-scale probing: ``L_k = n // k`` for ``k = 1, 2, ...`` while
       ``L_k >= min_cycles * max_period`` (at most ``MAX_SCALES = 8`` scales, which bounds the
       runtime; each costs ~0.5 ms at ``n = 10_000``). At scale ``k`` the
       first ``k L_k`` samples are cut into ``k`` non-overlapping segments; each is de-meaned,
       multiplied by a periodic Hann window and transformed; the ``k`` power spectra are
       averaged (Welch without overlap: a chi-square with ``2k`` degrees of freedom per bin
       under white noise, so the variance drops ``k``-fold). Local maxima with frequency index
       ``f >= L / (max_period + 1/2)`` are ranked by power and the ``top_peaks`` highest are
       kept; the peak position is refined by a parabola through the log-power at
       ``f - 1, f, f + 1`` (shift clipped to ±1/2 bin), giving ``p = L / f_hat``.
       A peak is *significant* if its power exceeds ``floor * Q_k(PEAK_ALPHA / N) / k``, with
       ``floor`` the band median divided by the median of ``Gamma(k, 1)/k``, ``Q_k`` the upper
       Gamma(k) quantile and ``N`` the number of band bins (Bonferroni), and if it has at least
       ``PEAK_DYNAMIC_RANGE = 1%`` of the strongest peak's power (on a clean stream the noise
       floor is rounding error, and Hann sidelobes, <= -31 dB, must not count as lines).
    3. Candidates: a peak at ``f_hat`` supports every integer in
       ``m [L / (f_hat + PEAK_HALF_WIDTH), L / (f_hat - PEAK_HALF_WIDTH)]`` plus
       ``round(m p)``, for ``m = 1, 2, ...`` up to ``max_period`` — ``m = 1`` is the "integers
       around ``L / f``" of the brief, the band width being the peak's frequency uncertainty
       (a quarter bin each side) scaled to periods; ``m >= 2`` are the multiples: an FFT peak can
       sit on a harmonic ``T / m`` of the true period (a strong second harmonic, or a random
       template whose fundamental is weak). Only candidates in ``[min_period, max_period]``
       are kept. If some peaks are significant, only candidates supported by *all* of them are
       kept (when that leaves any): spectral lines of a ``T``-periodic stream sit at multiples of
       ``1/T``, so a significant line at period ``p`` rules out periods that are not multiples
       of ``p`` (e.g. the harmonic ``T/3`` when the fundamental is significant too).
    4. Verification with ``D``: the *base* candidates (``m <= 3``, as in the brief: ``c``,
       ``2c``, ``3c``) are scored by ``C`` (equal scores: the smaller period); the best one
       is replaced by the best extended
       candidate (``m >= 4``) only if that is better by ``Z_EXTEND = 4`` standard errors of the
       difference (the extended set is large; without this gate noise would pick from it).
       Then the "smallest period" preference: for a truly ``T``-periodic stream ``D`` at ``T``,
       ``2T``, ``3T`` is equally small, so noise can make ``2T`` win. If the winner ``Q`` came
       from a peak with multiplier ``m``, each smaller candidate ``P`` of the same peak with
       multiplier ``m' | m`` is tested, smallest first: ``P`` replaces ``Q`` if
       ``A <= B + Z_PREFER * B * sd``, where ``A`` and ``B`` average ``D`` over the multiples of
       ``P`` and of ``Q`` up to the same lag ``R = Q ((n // 2) // Q)`` and ``sd`` is the
       standard error of ``A - B`` from the formula above. Under "``P`` is a period" ``A - B``
       has mean ``<= 0`` (phase drift only makes far lags worse), so ``Z_PREFER = 4`` rejects a
       true smaller period with nominal probability 3e-5 per comparison (``z = 3`` was tried:
       its measured false-rejection rate, 0.7%, made 2 of 150 lightly noised test streams
       report ``2T``); a non-period ``P`` is accepted only if its non-period lags cost less
       than 4 standard errors. The test is restricted to
       the winner's own harmonic family: across unrelated candidates "smaller" carries no
       evidence, and on noise it would bias every scale to the shortest periods.
       Finally the winner must be significantly periodic: ``C < 2 - z sd0`` for the capped or
       the full comb (``sd0`` as above with ``D0 = 2``, white-noise null), with
       ``z = Phi^-1(1 - VERIFY_ALPHA / (2 N_c))`` Bonferroni-corrected over the ``N_c``
       candidates examined and the two combs. A scale whose winner fails abstains.
    5. Consensus: every non-abstaining scale votes for its period; the period with most votes
       wins, ties broken by the smaller comb value ``C`` then the smaller period;
       ``confidence = votes / number of scales`` (abstentions count in the denominator). All
       scales share ``D`` of the whole stream, so their votes are not independent: the
       confidence measures how stable the choice is across spectral resolutions, and the
       verification step is what keeps it near 0 on aperiodic input.

Measured (``SquareWave(eps0, "sw")`` on a random smooth template in [0, 1], ``T = 24``,
``n = 2000``, 200 seeded trials, exact match): 95.5% at ``eps0 = 1``, 79.5% at ``0.6``, 25%
at ``0.4``, 0.5% at ``0.2`` (a period is reported at all in 100%, 91%, 32%, 1.5% of the
trials; without the verification the detector would guess right in 30% / 2.5% at 0.4 / 0.2
but report confidence ~0.5 on pure noise). An iid (aperiodic) stream privatised at
``eps0 = 0.05`` gets no vote in 200 trials. Quasi-periodic streams whose cycle lengths vary by
±1 sample are found exactly in ~98% of the cases tried (T in {12, 24, 50}). Runtime for
``n = 10_000``: 3-5 ms (6-8 scales), ~1.5 ms with a single scale.
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass

import numpy as np
from ldpfleet.protocol.errors import ParameterError
from scipy import fft as sp_fft
from scipy import signal, special

__all__ = [
    "COMB_CYCLES",
    "DEFAULT_SCALES",
    "MAX_SCALES",
    "PeriodEstimate",
    "detect_period",
    "shift_discrepancy",
]

DEFAULT_SCALES = 6  # default max_period = n // (min_cycles * DEFAULT_SCALES)
MAX_SCALES = 8  # cap on the number of window lengths L_k = n // k
COMB_CYCLES = 16  # multiples averaged by the scoring comb
PEAK_HALF_WIDTH = 0.25  # frequency uncertainty of an interpolated peak, in bins (each side)
PEAK_ALPHA = 0.01  # false-alarm rate of "significant peak" over the band (Bonferroni)
PEAK_DYNAMIC_RANGE = 0.01  # a significant peak also has >= 1% of the strongest peak's power
Z_PREFER = 4.0  # tolerance of the smaller-period preference, in standard errors
Z_EXTEND = 4.0  # margin an extended (m >= 4) candidate needs over the base winner
VERIFY_ALPHA = 0.01  # per-scale false-positive rate of the white-noise verification
WHITE_LEVEL = 2.0  # D_T of white noise
_SLACK = 1e-9  # absolute slack on D for rounding in exactly periodic streams


@dataclass(frozen=True)
class PeriodEstimate:
    """Result of ``detect_period``.

    ``period``: detected dominant period in samples (``None`` if no scale found an admissible,
    verified candidate); ``confidence``: share of the scales' votes won by ``period``, in
    ``[0, 1]``; ``votes``: period -> number of scales voting for it; ``scales``: the window
    lengths ``L_k`` probed.
    """

    period: int | None
    confidence: float
    votes: dict[int, int]
    scales: tuple[int, ...]


# -- validation ---------------------------------------------------------------------------


def _check_stream(x: object) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError("must be a 1-D array of real numbers", field="x") from None
    if arr.ndim != 1:
        raise ParameterError(f"must be 1-D, got shape {arr.shape}", field="x")
    bad = ~np.isfinite(arr)
    if np.any(bad):
        idx = int(np.flatnonzero(bad)[0])
        raise ParameterError(f"sample must be finite, got {arr[idx]!r}", field=f"x[{idx}]")
    return arr


def _check_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"must be an integer, got {value!r}", field=name)
    if value < minimum:
        raise ParameterError(f"must be >= {minimum}, got {value!r}", field=name)
    return int(value)


# -- shift discrepancy --------------------------------------------------------------------


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
    arr = _check_stream(x)
    lags = np.asarray(periods)
    if lags.dtype.kind not in "iu":
        flt = np.asarray(lags, dtype=float)
        if not np.all(np.isfinite(flt) & (flt == np.round(flt))):
            raise ParameterError("periods must be integers", field="periods")
        lags = flt.astype(np.int64)
    n = arr.size
    if lags.size == 0:
        return np.zeros(lags.shape)
    if lags.min() < 0 or lags.max() >= n:
        raise ParameterError(f"periods must lie in [0, {n - 1}] for n = {n}", field="periods")
    xc = arr - arr.mean()
    ac, cs = _lag_sums(xc, int(lags.max()))
    m = n - lags
    total = cs[m] + (cs[n] - cs[lags]) - 2.0 * ac[lags]
    return np.maximum(total, 0.0) / m


def _normalised_discrepancy(xd: np.ndarray, max_lag: int) -> np.ndarray:
    """``D_T = Delta_T / v_T`` for ``T = 0..max_lag`` (module docstring)."""
    xc = xd - xd.mean()
    ac, cs = _lag_sums(xc, max_lag)
    n = xc.size
    lags = np.arange(max_lag + 1)
    squares = cs[n - lags] + (cs[n] - cs[lags])
    diff = np.maximum(squares - 2.0 * ac, 0.0)
    safe = np.where(squares > 0.0, squares, 1.0)
    return np.where(squares > 0.0, 2.0 * diff / safe, WHITE_LEVEL)


# -- comb statistics ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Comb:
    """``value[P]`` = mean of ``D`` over the first ``count[P]`` multiples of ``P``;
    ``white_sd[P]`` = its standard error under white noise (``D0 = 2``)."""

    value: np.ndarray
    count: np.ndarray
    white_sd: np.ndarray


def _comb(d: np.ndarray, n: int, max_period: int, max_lag: int, cap: int) -> _Comb:
    periods = np.arange(1, max_period + 1)
    count = np.minimum(max_lag // periods, cap)
    rows = np.repeat(periods, count)
    j = np.arange(rows.size) - np.repeat(np.cumsum(count) - count, count) + 1
    lag = rows * j
    value = np.full(max_period + 1, np.inf)
    value[1:] = np.bincount(rows, weights=d[lag], minlength=max_period + 1)[1:] / count
    inv = np.bincount(rows, weights=1.0 / (n - lag), minlength=max_period + 1)[1:]
    white_sd = np.full(max_period + 1, np.inf)
    white_sd[1:] = WHITE_LEVEL * np.sqrt(inv) / count
    counts = np.zeros(max_period + 1, dtype=np.int64)
    counts[1:] = count
    return _Comb(value, counts, white_sd)


def _white_test(d: np.ndarray, lags: np.ndarray, n: int, z: float) -> bool:
    """Is the mean of ``D`` over ``lags`` more than ``z`` white-noise standard errors below 2?"""
    sd = WHITE_LEVEL * np.sqrt(np.sum(1.0 / (n - lags))) / lags.size
    return bool(d[lags].mean() < WHITE_LEVEL - z * sd)


def _difference_sd(lags_a: np.ndarray, lags_b: np.ndarray, n: int) -> float:
    """``sqrt(sum_l (a_l - b_l)^2 / (n - l))`` for the uniform averages over two lag sets."""
    top = int(max(lags_a.max(), lags_b.max()))
    w = np.zeros(top + 1)
    w[lags_a] += 1.0 / lags_a.size
    w[lags_b] -= 1.0 / lags_b.size
    ell = np.arange(1, top + 1)
    return float(np.sqrt(np.sum(w[1:] ** 2 / (n - ell))))


def _comb_lags(period: int, count: int) -> np.ndarray:
    return period * np.arange(1, count + 1)


def _prefer_smaller(p: int, q: int, d: np.ndarray, n: int, max_lag: int) -> bool:
    """Is the smaller period ``p`` as good as ``q`` (step 4, preference test)?"""
    reach = q * (max_lag // q)
    lags_p = np.arange(p, reach + 1, p)
    lags_q = np.arange(q, reach + 1, q)
    a = float(d[lags_p].mean())
    b = float(d[lags_q].mean())
    return a <= b + Z_PREFER * b * _difference_sd(lags_p, lags_q, n) + _SLACK


# -- per-scale probing ----------------------------------------------------------------------


def _welch_power(xd: np.ndarray, k: int, length: int) -> np.ndarray:
    """Average periodogram of the ``k`` de-meaned segments of length ``length`` (periodic Hann
    window)."""
    seg = xd[: k * length].reshape(k, length)
    seg = seg - seg.mean(axis=1, keepdims=True)
    hann = 0.5 - 0.5 * np.cos((2.0 * np.pi / length) * np.arange(length))
    spec = sp_fft.rfft(seg * hann, axis=1)
    return np.mean(spec.real**2 + spec.imag**2, axis=0)


@functools.lru_cache(maxsize=256)
def _gamma_factors(k: int, n_bins: int) -> tuple[float, float]:
    """(median, upper PEAK_ALPHA / n_bins quantile) of Gamma(k, 1) / k, the law of a Welch
    bin averaged over k segments relative to its mean, under white noise."""
    median = float(special.gammaincinv(k, 0.5)) / k
    upper = float(special.gammainccinv(k, PEAK_ALPHA / n_bins)) / k
    return median, upper


def _peaks(power: np.ndarray, k: int, length: int, max_period: int, top_peaks: int):
    """Top peaks in the admissible band: (refined frequency, significant?) arrays."""
    n_bins = power.size
    lo = max(2, int(np.ceil(length / (max_period + 0.5))))
    if lo > n_bins - 1:
        return None
    mid = power[lo:]
    left = power[lo - 1 : -1]
    right = np.concatenate((power[lo + 1 :], [-np.inf]))
    cand = np.flatnonzero((mid > left) & (mid >= right)) + lo
    if cand.size == 0:
        return None
    if cand.size > top_peaks:
        cand = cand[np.argpartition(-power[cand], top_peaks - 1)[:top_peaks]]
    top = cand[np.argsort(-power[cand], kind="stable")]
    tiny = np.finfo(float).tiny
    log_l = np.log(np.maximum(power[top - 1], tiny))
    log_m = np.log(np.maximum(power[top], tiny))
    inner = top + 1 < n_bins
    log_r = np.full(top.size, -np.inf)
    log_r[inner] = np.log(np.maximum(power[top[inner] + 1], tiny))
    curv = log_l - 2.0 * log_m + log_r
    ok = np.isfinite(curv) & (curv < 0.0)
    shift = np.where(ok, 0.5 * (log_l - log_r) / np.where(ok, curv, -1.0), 0.0)
    f_hat = top + np.clip(shift, -0.5, 0.5)
    median, upper = _gamma_factors(k, mid.size)
    threshold = max(np.median(mid) / median * upper, PEAK_DYNAMIC_RANGE * power[top[0]])
    return f_hat, power[top] > threshold


def _candidates(f_hat, significant, length, min_period, max_period):
    """Integers supported by the peaks: (period, peak index, multiplier) triples."""
    p_hat = length / f_hat
    mult_max = np.floor((max_period + 0.5) / p_hat).astype(np.int64)
    mult_max = np.maximum(mult_max, 0)
    peak = np.repeat(np.arange(f_hat.size), mult_max)
    mult = np.arange(peak.size) - np.repeat(np.cumsum(mult_max) - mult_max, mult_max) + 1
    lo = length / (f_hat + PEAK_HALF_WIDTH)
    hi = length / np.maximum(f_hat - PEAK_HALF_WIDTH, 1e-12)
    centre = np.rint(mult * p_hat[peak])
    a = np.minimum(np.ceil(mult * lo[peak]), centre)
    b = np.maximum(np.floor(mult * hi[peak]), centre)
    a = np.maximum(a, min_period).astype(np.int64)
    b = np.minimum(b, max_period).astype(np.int64)
    keep = a <= b
    a, b, peak, mult = a[keep], b[keep], peak[keep], mult[keep]
    width = b - a + 1
    offs = np.arange(width.sum()) - np.repeat(np.cumsum(width) - width, width)
    ints = np.repeat(a, width) + offs
    peak = np.repeat(peak, width)
    mult = np.repeat(mult, width)
    sig_ids = np.flatnonzero(significant)
    if sig_ids.size and ints.size:
        hits = np.zeros((f_hat.size, max_period + 1), dtype=bool)
        hits[peak, ints] = True
        consistent = hits[sig_ids].all(axis=0)[ints]
        if consistent.any():
            ints, peak, mult = ints[consistent], peak[consistent], mult[consistent]
    return ints, peak, mult


def _scale_vote(xd, k, length, d, comb, n, min_period, max_period, max_lag, top_peaks):
    """Step 2-4 at one scale: the verified period this scale votes for, or None."""
    found = _peaks(_welch_power(xd, k, length), k, length, max_period, top_peaks)
    if found is None:
        return None
    ints, peak, mult = _candidates(*found, length, min_period, max_period)
    if ints.size == 0:
        return None
    base = np.unique(ints[mult <= 3])
    ext = np.setdiff1d(ints[mult > 3], base)
    score = comb.value
    if base.size:
        best = int(base[np.argmin(score[base])])
        if ext.size:
            challenger = int(ext[np.argmin(score[ext])])
            sd = _difference_sd(
                _comb_lags(challenger, int(comb.count[challenger])),
                _comb_lags(best, int(comb.count[best])),
                n,
            )
            if score[challenger] < score[best] - Z_EXTEND * score[best] * sd - _SLACK:
                best = challenger
    else:
        best = int(ext[np.argmin(score[ext])])
    # smaller-period preference inside the winner's harmonic family
    family = []
    for pk, m in zip(peak[ints == best], mult[ints == best], strict=True):
        sel = (peak == pk) & (mult < m) & (m % mult == 0)
        family.append(ints[sel])
    smaller = np.unique(np.concatenate(family)) if family else np.zeros(0, dtype=np.int64)
    for p in smaller[smaller < best]:
        if _prefer_smaller(int(p), best, d, n, max_lag):
            best = int(p)
            break
    # white-noise verification (Bonferroni over candidates and the two combs)
    z = -special.ndtri(VERIFY_ALPHA / (2.0 * (base.size + ext.size)))
    capped_ok = comb.value[best] < WHITE_LEVEL - z * comb.white_sd[best]
    if capped_ok or _white_test(d, np.arange(best, max_lag + 1, best), n, z):
        return best
    return None


# -- public entry point -----------------------------------------------------------------------


def detect_period(
    x: np.ndarray,
    *,
    min_period: int = 2,
    max_period: int | None = None,
    top_peaks: int = 3,
    min_cycles: int = 3,
) -> PeriodEstimate:
    """Dominant period of a (privatised) stream by multi-scale FFT probing, verification with
    the shift discrepancy and a vote across scales (module docstring, steps 0-5)."""
    arr = _check_stream(x)
    min_period = _check_int(min_period, "min_period", 2)
    top_peaks = _check_int(top_peaks, "top_peaks", 1)
    min_cycles = _check_int(min_cycles, "min_cycles", 2)
    n = arr.size
    if max_period is None:
        max_period = n // (min_cycles * DEFAULT_SCALES)
    else:
        max_period = _check_int(max_period, "max_period", min_period)
    max_period = min(max_period, n // min_cycles)
    if max_period < min_period:
        return PeriodEstimate(None, 0.0, {}, ())
    scales = tuple(n // k for k in range(1, MAX_SCALES + 1) if n // k >= min_cycles * max_period)
    xd = signal.detrend(arr, type="linear")
    scale_ref = float(np.max(np.abs(arr)))
    if float(np.std(xd)) <= 1e-12 * scale_ref or scale_ref == 0.0:
        return PeriodEstimate(None, 0.0, {}, scales)
    max_lag = max(max_period, n // 2)
    d = _normalised_discrepancy(xd, max_lag)
    comb = _comb(d, n, max_period, max_lag, COMB_CYCLES)
    votes: dict[int, int] = {}
    for k, length in enumerate(scales, start=1):
        vote = _scale_vote(xd, k, length, d, comb, n, min_period, max_period, max_lag, top_peaks)
        if vote is not None:
            votes[vote] = votes.get(vote, 0) + 1
    if not votes:
        return PeriodEstimate(None, 0.0, {}, scales)
    period, count = min(votes.items(), key=lambda kv: (-kv[1], comb.value[kv[0]], kv[0]))
    return PeriodEstimate(int(period), count / len(scales), dict(sorted(votes.items())), scales)
