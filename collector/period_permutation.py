"""Step 11 of cycle recovery (``collector/period.py``): a permutation gate on a quiet short
stream's claim (helper K, docs/preregistration/K-short-stream-permutation.md, FAILED; v2 by
helper K2, docs/preregistration/K2-quiet-permutation.md).

Under an aperiodic stream of exchangeable reports (a constant level plus i.i.d. noise, spikes
at i.i.d. times, SW on them) the exact null of any fold statistic is its permutation null.
The gates' normal and Whittle null models misfit SW's reports of a quiet level off the middle
(a narrow window around the level plus a uniform floor) at few reports per phase, and claimed
on 2-3 % of such streams of 45-150 samples (helper H, docs/heldout-cpr.md). The gate runs on a
claim only where that misfit lives: a stream of at most ``PERMUTATION_STREAM`` samples that is
QUIET (``quiet_ratio``: the narrowest window holding ``QUIET_SHARE`` of the reports is at most
``QUIET_WIDTH`` of their range; SW reports of a constant at eps0 >= 3 put 72-80 % of them
within +-b of it, b <= 0.064, so the ratio is ~0.02-0.11; a cycle spread over its range is
~0.15-0.5, and at eps0 <= 2 SW's own spread keeps every stream above ~0.12; the rule reads
neither eps0 nor the claim). There, the claim is kept only if the stream's fold statistic
(``fold_statistic``: the best normal-theory F tail over every searched period and harmonic
level, after the detector's quadratic detrend) beats that of ``PERMUTATION_DRAWS`` random
orders of the same reports with permutation p-value ``(1 + #{perm >= observed}) / (B + 1)``
at most ``PERMUTATION_ALPHA``. The statistic reads the whole range, not the claimed period,
and ``quiet_ratio`` depends on the reports' values only, not on their order, so the p-value is
exact however the claim was chosen: on exchangeable reports a claim survives with probability
at most ``PERMUTATION_ALPHA``. It can only withdraw claims; red (AR(1), random-walk) nulls
are not exchangeable and stay with the other gates.

Cost: the draws run in batches of ``PERMUTATION_BATCH`` and stop once more than
``PERMUTATION_ALPHA * (B + 1) - 1`` of them reach the observed statistic (the gate can no
longer pass: the same decision as all B draws, a curtailed count); a claim that passes reads
all B. Streams above ``PERMUTATION_STREAM`` samples never run it (one comparison).

Deterministic: the permutations come from a generator seeded by a digest of the reports'
rank order (the same for ``c * reports``, ``c > 0``, as the statistic is)."""

from __future__ import annotations

import hashlib
import math

import numpy as np
from ldpfleet.collector.period_constants import (
    HARMONIC_LEVELS,
    PERMUTATION_ALPHA,
    PERMUTATION_BATCH,
    PERMUTATION_DRAWS,
    PERMUTATION_STREAM,
    QUIET_SHARE,
    QUIET_WIDTH,
)
from scipy import special, stats

_LOG_FLOOR = -700.0  # log of an F tail that underflowed (below any permutation's)


def quiet_ratio(x: np.ndarray) -> float:
    """Width of the narrowest window holding ``ceil(QUIET_SHARE * n)`` of the values of ``x``
    over their range (``max - min``); 1.0 for a constant stream. Order-free and invariant
    under ``a + c * x``, ``c > 0``."""
    s = np.sort(np.asarray(x, float))
    n = s.size
    span = float(s[-1] - s[0]) if n else 0.0
    if span <= 0.0:
        return 1.0
    k = max(1, math.ceil(QUIET_SHARE * n))
    return float(np.min(s[k - 1 :] - s[: n - k + 1])) / span


def gate_applies(x: np.ndarray) -> bool:
    """Whether a claim on stream ``x`` is checked: at most ``PERMUTATION_STREAM`` samples
    (tested first: a longer stream costs one comparison) and ``quiet_ratio(x) <=
    QUIET_WIDTH``."""
    return 0 < x.size <= PERMUTATION_STREAM and quiet_ratio(x) <= QUIET_WIDTH


def _seed(x: np.ndarray) -> int:
    order = np.argsort(x, kind="stable").astype(np.int64)
    return int.from_bytes(hashlib.blake2b(order.tobytes(), digest_size=8).digest(), "little")


def _detrended(rows: np.ndarray) -> np.ndarray:
    """Each row minus its least-squares quadratic in time (as ``_detrend``)."""
    n = rows.shape[1]
    t = np.linspace(-1.0, 1.0, n)
    q, _ = np.linalg.qr(np.stack([np.ones(n), t, t * t], axis=1))
    return rows - (rows @ q) @ q.T


def _fold_columns(rows: np.ndarray, lo: int, hi: int):
    """Per period ``lo .. hi`` and harmonic level (``HARMONIC_LEVELS`` and the full fold):
    ``(f, df, df_res)``, ``f`` the F ratio of each row's fold of its quadratic-detrended values
    (between-phase sum of squares on the fold's first H harmonics against the rest)."""
    r = _detrended(np.atleast_2d(np.asarray(rows, float)))
    k_rows, n = r.shape
    total = np.einsum("ij,ij->i", r, r)
    for period in range(lo, hi + 1):
        cycles = -(-n // period)
        padded = np.zeros((k_rows, cycles * period))
        padded[:, :n] = r
        sums = padded.reshape(k_rows, cycles, period).sum(axis=1)
        counts = np.bincount(np.arange(n) % period, minlength=period).astype(float)
        full = np.sum(sums * sums / counts, axis=1)  # the row means are ~0 (detrended)
        spec = np.fft.rfft(sums / counts, axis=1)[:, 1 : period // 2 + 1]
        weights = np.full(spec.shape[1], 2.0)
        if period % 2 == 0:
            weights[-1] = 1.0
        energy = np.cumsum(weights * (spec.real**2 + spec.imag**2), axis=1) * (n / period**2)
        dfs = np.cumsum(weights)
        levels = sorted({min(h, spec.shape[1]) for h in HARMONIC_LEVELS})
        columns = [(energy[:, h - 1], dfs[h - 1]) for h in levels] + [(full, period - 1.0)]
        for between, df in columns:
            df_res = n - 3.0 - df
            if df_res < 1.0:
                continue
            resid = np.maximum(total - between, 1e-300 * np.maximum(total, 1e-300))
            yield (between / df) / (resid / df_res), float(df), df_res


def _minus_log_tail(f: np.ndarray, df: float, df_res: float) -> np.ndarray:
    return -np.log(np.maximum(special.fdtrc(df, df_res, f), np.exp(_LOG_FLOOR)))


def fold_statistic(rows: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Per row of ``rows`` (streams of one length n): minus the smallest log F tail over
    periods ``lo .. hi`` and harmonic levels ``HARMONIC_LEVELS`` plus the full fold, of the
    fold of the quadratic-detrended row (between-phase sum of squares on the fold's first H
    harmonics against the rest, ``F(df_H, n - 3 - df_H)``)."""
    best = np.zeros(np.atleast_2d(rows).shape[0])
    for f, df, df_res in _fold_columns(rows, lo, hi):
        np.maximum(best, _minus_log_tail(f, df, df_res), out=best)
    return best


def reaches(rows: np.ndarray, lo: int, hi: int, observed: float) -> np.ndarray:
    """``fold_statistic(rows, lo, hi) >= observed`` per row, without an F tail per entry:
    a column's tail is read only where its F ratio is within 1e-6 (relative) of the F whose
    tail is ``exp(-observed)`` (``stats.f.isf``, once per (df, df_res)), so the answer is
    ``fold_statistic``'s (the tail is monotone in F) at ~1/50 of its cost."""
    out = np.zeros(np.atleast_2d(rows).shape[0], dtype=bool)
    tail = math.exp(-min(observed, -_LOG_FLOOR))
    crit: dict[tuple[float, float], float] = {}
    for f, df, df_res in _fold_columns(rows, lo, hi):
        key = (df, df_res)
        if key not in crit:
            crit[key] = float(stats.f.isf(tail, df, df_res)) if tail < 1.0 else 0.0
        near = np.flatnonzero(~out & (f >= crit[key] * (1.0 - 1e-6)))
        if near.size:
            out[near] = _minus_log_tail(f[near], df, df_res) >= observed
    return out


def permutation_p(x: np.ndarray, lo: int, hi: int) -> float:
    """Permutation p-value of ``fold_statistic`` of ``x`` over periods ``lo .. hi``:
    ``(1 + #{draws >= observed}) / (PERMUTATION_DRAWS + 1)``; 1.0 for an empty range. The
    draws stop once the count exceeds what ``gate_passes`` allows (then the value is the
    count so far, a lower bound above ``PERMUTATION_ALPHA``: the same decision)."""
    x = np.asarray(x, float)
    hi = min(hi, x.size // 2)
    if hi < lo:
        return 1.0
    rng = np.random.default_rng(_seed(x))
    observed = fold_statistic(x[None, :], lo, hi)[0]
    allowed = math.floor(PERMUTATION_ALPHA * (PERMUTATION_DRAWS + 1) + 1e-9) - 1
    exceed = done = 0
    while done < PERMUTATION_DRAWS and exceed <= allowed:
        size = min(PERMUTATION_BATCH, PERMUTATION_DRAWS - done)
        draws = np.argsort(rng.random((size, x.size)), axis=1)
        exceed += int(np.count_nonzero(reaches(x[draws], lo, hi, observed)))
        done += size
    return (1.0 + exceed) / (PERMUTATION_DRAWS + 1.0)


def gate_passes(p: float) -> bool:
    return p <= PERMUTATION_ALPHA
