"""The two plain period detectors the grid compares ``detect_period`` with (docs/cpr-grid.md):
the folded variance and the autocorrelation of the centred stream."""

from __future__ import annotations

import math

import numpy as np
from ldpfleet.collector.period import check_stream


def _baseline_input(x: object, min_period: int, max_period: int | None):
    """The centred stream and the periods a baseline scans, or None when there is nothing to
    scan (no period in ``min_period .. max_period``, ``n // 3`` by default, or a constant
    stream). Bad input is a ``ParameterError`` naming ``x`` or its sample ``x[k]``
    (``collector.period.check_stream``); the stream is brought into ``[0.5, 1)`` by a power
    of two first (exact: the answer is that of the unscaled stream), so samples near the
    float range do not overflow the squares."""
    arr = check_stream(x, "x")
    n = arr.size
    max_period = n // 3 if max_period is None else max_period
    top = float(np.max(np.abs(arr))) if n else 0.0
    if max_period < min_period or top == 0.0:
        return None
    arr = np.ldexp(arr, -math.frexp(top)[1])
    centred = arr - float(np.mean(arr))
    if not np.any(centred):
        return None
    return centred, np.arange(min_period, max_period + 1)


def folded_variance_period(x: np.ndarray, min_period: int = 2, max_period: int | None = None):
    """Plain folded-variance baseline: for every ``T``, fold the whole cycles
    (``k = n // T``) of the centred stream, score the folded mean's energy above the noise
    floor ``mean(m_T^2) - mean(var_T) / k`` and return the smallest ``T`` within 90% of the
    best score. Never abstains on a stream with a period to scan; ``None`` where there is
    none (fewer than ``3 * min_period`` samples, or a constant stream)."""
    checked = _baseline_input(x, min_period, max_period)
    if checked is None:
        return None
    x, periods = checked
    n = x.size
    score = np.empty(periods.size)
    for i, period in enumerate(periods):
        k = n // period
        seg = x[: k * period].reshape(k, period)
        score[i] = np.mean(seg.mean(axis=0) ** 2) - np.mean(seg.var(axis=0, ddof=1)) / k
    best = float(score.max())
    if best <= 0.0:
        return int(periods[int(np.argmax(score))])
    return int(periods[np.flatnonzero(score >= 0.9 * best)[0]])


def autocorrelation_period(x: np.ndarray, min_period: int = 2, max_period: int | None = None):
    """Plain autocorrelation baseline: the unbiased sample autocorrelation
    ``r_T = (sum_t x_t x_{t+T} / (n - T)) / (sum_t x_t^2 / n)`` of the centred stream; the
    smallest ``T`` within 90% of the best ``r_T``. Never abstains on a stream with a period
    to scan; ``None`` where there is none (as ``folded_variance_period``)."""
    checked = _baseline_input(x, min_period, max_period)
    if checked is None:
        return None
    x, periods = checked
    n = x.size
    max_period = int(periods[-1])
    nfft = 1 << (2 * n - 1).bit_length()
    spec = np.fft.rfft(x, nfft)
    ac = np.fft.irfft(spec.real**2 + spec.imag**2, nfft)[: max_period + 1]
    r = ac / (n - np.arange(max_period + 1)) / (ac[0] / n)
    r = r[min_period:]
    best = float(r.max())
    if best <= 0.0:
        return min_period + int(np.argmax(r))
    return min_period + int(np.flatnonzero(r >= 0.9 * best)[0])
