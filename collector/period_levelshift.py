"""Step 12 of cycle recovery (``collector/period.py``): a claim that a level-shift model
explains is withdrawn (helper L, docs/preregistration/L-level-shift.md).

A noise-free step at the middle of a stream, ``np.r_[np.zeros(n // 2), np.ones(n - n // 2)]``,
was claimed as period ``n / 4`` (p 3e-17 at n = 1,000): the quadratic detrend of step 1 leaves
the step minus its best quadratic, a sawtooth-like residual of two ramps whose harmonics the
fold at ``n / 4`` reads as 4 cycles. A level shift (a door opened, a valve closed, a sensor
recalibrated) is a common aperiodic stream. The check:

1. ``step_fit``: the best piecewise-constant mean with up to ``SHIFT_CHANGES`` (2)
   changepoints, by binary segmentation on cumulative sums (``O(n)``).
2. Relevance: the step model must explain at least as much of the stream's variance about its
   mean as the fold at the claimed period does (``fold_ss``: the between-phase sum of squares
   of the whole-stream fold). On a cycle the fold holds the signal and a step only a part of
   it; on a step seen at ``n / 4`` the phase means are nearly equal. Most streams stop here
   (one bincount and two cumulative sums).
3. Where it is relevant, the detector runs once more on the stream minus the step fit; the
   claim stands if that run claims a period (any: the shift was not all there was),
   otherwise it is withdrawn (``period = None``, ``candidate`` the withdrawn period). A
   residual below ``1e-20`` of the stream's sum of squares is rounding of a noise-free step
   stream (the rerun's own constant-stream check is relative to the residual's scale) and
   counts as no period.

It only withdraws claims."""

from __future__ import annotations

import itertools

import numpy as np
from ldpfleet.collector.period_constants import SHIFT_CHANGES

_EXPLAINED = 1e-20  # a residual sum of squares below this share of the stream's is rounding


def _best_split(segment: np.ndarray) -> tuple[float, int]:
    """The reduction of the sum of squares of ``segment`` by its best split into two means,
    and the split's index (the first sample of the second part); ``(0.0, 0)`` for fewer than
    two samples."""
    m = segment.size
    if m < 2:
        return 0.0, 0
    head = np.cumsum(segment)[:-1]
    total = float(head[-1] + segment[-1])
    k = np.arange(1, m, dtype=float)
    gain = head**2 / k + (total - head) ** 2 / (m - k) - total**2 / m
    best = int(np.argmax(gain))
    return float(gain[best]), best + 1


def step_fit(x: np.ndarray, changes: int = SHIFT_CHANGES) -> np.ndarray:
    """The piecewise-constant mean of ``x`` with up to ``changes`` changepoints found by binary
    segmentation (each new changepoint is the best split of the segment where a split gains
    most)."""
    x = np.asarray(x, float)
    cuts = [0, x.size]
    for _ in range(changes):
        best_gain, best_cut = 0.0, None
        for lo, hi in itertools.pairwise(cuts):
            gain, at = _best_split(x[lo:hi])
            if gain > best_gain:
                best_gain, best_cut = gain, lo + at
        if best_cut is None:
            break
        cuts = sorted([*cuts, best_cut])
    fit = np.empty_like(x)
    for lo, hi in itertools.pairwise(cuts):
        fit[lo:hi] = x[lo:hi].mean()
    return fit


def fold_ss(x: np.ndarray, period: int) -> float:
    """Between-phase sum of squares of the whole-stream fold of ``x`` at ``period`` (phase
    ``t mod period``, the partial last cycle included) about the mean of ``x``."""
    x = np.asarray(x, float)
    phase = np.arange(x.size) % period
    sums = np.bincount(phase, weights=x, minlength=period)
    counts = np.bincount(phase, minlength=period)
    return float(np.sum(sums**2 / counts) - x.sum() ** 2 / x.size)


def hinge_fit(x: np.ndarray) -> np.ndarray:
    """The least-squares fit of ``a + b t + c max(0, t - k)`` to ``x`` over every kink ``k``
    in ``1 .. n - 2`` (a ramp that turns, e.g. a ramp then a flat level), by suffix sums
    (``O(n)``): the gain of the hinge column over the line is ``(x~ . u~)^2 / (u~ . u~)``,
    ``~`` the residual after regressing on ``1, t``."""
    x = np.asarray(x, float)
    n = x.size
    t = np.arange(n, dtype=float)
    line = np.polynomial.polynomial.polyfit(t, x, 1)
    base = np.polynomial.polynomial.polyval(t, line)
    if n < 4:
        return base
    k = np.arange(1, n - 1, dtype=float)
    a0, a1, a2, x0, x1 = (np.cumsum(v[::-1])[::-1][1 : n - 1] for v in (t**0, t, t**2, x, t * x))
    s_u = a1 - k * a0
    s_uu = a2 - 2.0 * k * a1 + k * k * a0
    tc = t - t.mean()
    v = float(tc @ tc)
    tu = (a2 - k * a1) - t.mean() * s_u  # sum (t - mean t) u
    uu = s_uu - s_u**2 / n - tu**2 / v
    xu = (x1 - k * x0) - x.sum() * s_u / n - float(tc @ x) * tu / v
    gain = np.where(uu > 1e-12 * s_uu, xu**2 / np.maximum(uu, 1e-300), 0.0)
    best = int(np.argmax(gain))
    kink = np.maximum(t - k[best], 0.0)
    design = np.column_stack([np.ones(n), t, kink])
    coef = np.linalg.lstsq(design, x, rcond=None)[0]
    return design @ coef


def shift_residual(x: np.ndarray, period: int) -> np.ndarray | None:
    """``x`` minus its level-shift fit (the better of ``step_fit`` and ``hinge_fit``) where
    that fit explains at least as much variance as the fold at ``period`` (the claim must then
    be re-examined on it); None otherwise."""
    x = np.asarray(x, float)
    fit = max((step_fit(x), hinge_fit(x)), key=lambda f: -float(np.sum((x - f) ** 2)))
    step_ss = float(np.sum((fit - x.mean()) ** 2))
    if step_ss < fold_ss(x, period):
        return None
    residual = x - fit
    if np.sum(residual**2) <= _EXPLAINED * np.sum((x - x.mean()) ** 2):
        return np.zeros_like(x)  # the steps are the whole stream (rounding left): no period
    return residual
