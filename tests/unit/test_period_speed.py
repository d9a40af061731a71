"""The long-stream routes of detect_period (issue 19, 10^6 reports) change no result.

Each route is switched on by a size threshold; the tests force it on short inputs (a
monkeypatched threshold) or use inputs past it, and compare with the one-shot route bit
for bit: the comb sums (``_comb_sums``), the blocked Whittle fit (``_whittle``), the lazy
ranking (``_ranked``), the thread-free dot product (``_dot``)."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import period
from ldpfleet.protocol.sw import SquareWave


def _bincount_comb(ac: np.ndarray, periods: np.ndarray) -> np.ndarray:
    """The former one-shot comb: index arrays of every (T, j) pair and one bincount."""
    count = (ac.size - 1) // periods
    rows = np.repeat(np.arange(periods.size), count)
    j = np.arange(rows.size) - np.repeat(np.cumsum(count) - count, count) + 1
    return np.bincount(rows, weights=ac[periods[rows] * j], minlength=periods.size)


def _high(n: int, div: int) -> int:
    return n // div if div > 1 else n - 1


# every (n, (low, div)) pair with at least one admissible period (low <= high)
_COMB_CASES = [
    (n, (low, div))
    for n in (10, 97, 1000, 30_001, 250_007)
    for low, div in ((3, 3), (3, 2), (5, 1), (40, 3))
    if low <= _high(n, div)
]


@pytest.mark.parametrize(("n", "bounds"), _COMB_CASES)
def test_comb_loops_give_the_bincount_bits(n, bounds, monkeypatch):
    low, div = bounds
    high = _high(n, div)
    periods = np.arange(low, high + 1)
    rng = np.random.default_rng(n + low)
    ac = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
    monkeypatch.setattr(period, "COMB_VECTOR", 0)
    assert np.array_equal(period._comb_sums(ac, periods), _bincount_comb(ac, periods))


@pytest.mark.parametrize("m", [40_000, 100_003])
@pytest.mark.parametrize("share", [1.0, 0.9])
def test_blocked_whittle_gives_the_one_shot_bits(m, share, monkeypatch):
    rng = np.random.default_rng(m)
    omega = np.sort(rng.uniform(1e-4, np.pi, m))
    g = period._shapes(omega)
    g /= g.mean(axis=1, keepdims=True)
    keep = rng.random(m) < share
    gk = g[:, keep]  # Fortran-ordered, as in the fits
    p = (rng.exponential(size=m) * (0.3 + 5.0 * g[int(rng.integers(g.shape[0]))]))[keep]
    assert period._blocked(gk)
    blocked = period._whittle(p, gk, float(np.median(p)))
    monkeypatch.setattr(period, "WHITTLE_BLOCK", 10**9)
    assert not period._blocked(gk)
    assert period._whittle(p, gk, float(np.median(p))) == blocked


@pytest.mark.parametrize("size", [5, 256, 257, 5000])
@pytest.mark.parametrize("kind", ["normal", "ties", "inf", "few"])
def test_ranked_is_the_stable_argsort(size, kind):
    rng = np.random.default_rng(size)
    score = rng.standard_normal(size)
    if kind == "ties":
        score = np.round(score, 1)
    elif kind == "inf":
        score[rng.random(size) < 0.5] = np.inf
    elif kind == "few":
        score = np.full(size, np.inf)
        score[:3] = 1.0
    assert np.array_equal(list(period._ranked(score)), np.argsort(score, kind="stable"))


def test_dot_is_blas_up_to_the_serial_size_and_chunked_beyond():
    rng = np.random.default_rng(5)
    short = rng.standard_normal(period.BLAS_SERIAL)
    assert period._dot(short, short) == float(short @ short)
    long = rng.standard_normal(3 * period.BLAS_SERIAL + 7)
    chunks = [long[i : i + period.BLAS_SERIAL] for i in range(0, long.size, period.BLAS_SERIAL)]
    expected = 0.0
    for chunk in chunks:
        expected += float(chunk @ chunk)
    assert period._dot(long, long) == expected
    assert period._dot(long, long) == pytest.approx(float(np.sum(long * long)), rel=1e-12)


def test_long_routes_change_no_estimate(monkeypatch):
    """A 60,000-report stream through the long routes and through the one-shot ones."""
    rng = np.random.default_rng(8)
    t = np.arange(60_000)
    y = SquareWave(1.0).perturb(0.5 + 0.3 * np.sin(2 * np.pi * t / 37), rng)
    monkeypatch.setattr(period, "COMB_VECTOR", 0)  # the loops
    monkeypatch.setattr(period, "WHITTLE_BLOCK", 1024)  # blocked from 8,192 bins
    fast = period.detect_period(y)
    monkeypatch.setattr(period, "COMB_VECTOR", 10**12)
    monkeypatch.setattr(period, "WHITTLE_BLOCK", 10**9)
    monkeypatch.setattr(period, "RANK_HEAD", 10**9)
    assert period.detect_period(y) == fast
    assert fast.period == 37
