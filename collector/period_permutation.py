"""Step 11 of cycle recovery (``collector/period.py``): a permutation gate on a short
stream's claim (helper K, docs/preregistration/K-short-stream-permutation.md).

Under an aperiodic stream of exchangeable reports (a constant level plus i.i.d. noise, spikes
at i.i.d. times, SW on them) the exact null of any fold statistic is its permutation null.
The gates' normal and Whittle null models misfit SW's reports of a quiet level off the middle
(a narrow window around the level plus a uniform floor) at few reports per phase, and claimed
on 2-3 % of such streams of 45-150 samples (helper H, docs/heldout-cpr.md). For a stream of at
most ``PERMUTATION_STREAM`` samples, a claim is kept only if the stream's fold statistic
(``fold_statistic``: the best normal-theory F tail over every searched period and harmonic
level, after the detector's quadratic detrend) beats that of ``PERMUTATION_DRAWS`` random
orders of the same reports with permutation p-value ``(1 + #{perm >= observed}) / (B + 1)``
at most ``PERMUTATION_ALPHA``. The statistic reads the whole range, not the claimed period,
so the p-value is exact however the claim was chosen: on exchangeable reports the gate
passes with probability at most ``PERMUTATION_ALPHA``. It can only withdraw claims; red
(AR(1), random-walk) nulls are not exchangeable and stay with the other gates.

Deterministic: the permutations come from a generator seeded by a digest of the reports'
rank order (the same for ``c * reports``, ``c > 0``, as the statistic is)."""

from __future__ import annotations

import hashlib

import numpy as np
from ldpfleet.collector.period_constants import (
    HARMONIC_LEVELS,
    PERMUTATION_ALPHA,
    PERMUTATION_DRAWS,
    PERMUTATION_STREAM,
)
from scipy import special

_LOG_FLOOR = -700.0  # log of an F tail that underflowed (below any permutation's)


def gate_applies(n: int) -> bool:
    """Whether a stream of ``n`` samples has its claim checked (``n <= PERMUTATION_STREAM``)."""
    return 0 < n <= PERMUTATION_STREAM


def _seed(x: np.ndarray) -> int:
    order = np.argsort(x, kind="stable").astype(np.int64)
    return int.from_bytes(hashlib.blake2b(order.tobytes(), digest_size=8).digest(), "little")


def _detrended(rows: np.ndarray) -> np.ndarray:
    """Each row minus its least-squares quadratic in time (as ``_detrend``)."""
    n = rows.shape[1]
    t = np.linspace(-1.0, 1.0, n)
    q, _ = np.linalg.qr(np.stack([np.ones(n), t, t * t], axis=1))
    return rows - (rows @ q) @ q.T


def fold_statistic(rows: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Per row of ``rows`` (streams of one length n): minus the smallest log F tail over
    periods ``lo .. hi`` and harmonic levels ``HARMONIC_LEVELS`` plus the full fold, of the
    fold of the quadratic-detrended row (between-phase sum of squares on the fold's first H
    harmonics against the rest, ``F(df_H, n - 3 - df_H)``)."""
    r = _detrended(np.atleast_2d(np.asarray(rows, float)))
    k_rows, n = r.shape
    total = np.einsum("ij,ij->i", r, r)
    best = np.zeros(k_rows)
    phase_all = np.arange(n)
    for period in range(lo, hi + 1):
        phase = phase_all % period
        order = np.argsort(phase, kind="stable")
        counts = np.bincount(phase, minlength=period).astype(float)
        starts = np.concatenate([[0], np.cumsum(counts[:-1])]).astype(np.intp)
        sums = np.add.reduceat(r[:, order], starts, axis=1)
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
            f = (between / df) / (resid / df_res)
            tail = special.fdtrc(df, df_res, f)
            logp = np.log(np.maximum(tail, np.exp(_LOG_FLOOR)))
            np.maximum(best, -logp, out=best)
    return best


def permutation_p(x: np.ndarray, lo: int, hi: int) -> float:
    """Permutation p-value of ``fold_statistic`` of ``x`` over periods ``lo .. hi``:
    ``(1 + #{draws >= observed}) / (PERMUTATION_DRAWS + 1)``; 1.0 for an empty range."""
    x = np.asarray(x, float)
    hi = min(hi, x.size // 2)
    if hi < lo:
        return 1.0
    rng = np.random.default_rng(_seed(x))
    draws = np.argsort(rng.random((PERMUTATION_DRAWS, x.size)), axis=1)
    stats = fold_statistic(np.vstack([x[None, :], x[draws]]), lo, hi)
    exceed = int(np.count_nonzero(stats[1:] >= stats[0]))
    return (1.0 + exceed) / (PERMUTATION_DRAWS + 1.0)


def gate_passes(p: float) -> bool:
    return p <= PERMUTATION_ALPHA
