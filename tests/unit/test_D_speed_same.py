"""Issue 19 (helper D): ``detect_period`` faster with no answer changed. Each speed-up is
checked here against the code it replaced, bit for bit; end to end, the reference sets of
``scripts/cpr_period_same.py check`` and ``scripts/cpr_speed_same.py same``.

(1) ``_row_sums``: the Whittle fits' row sums of Fortran-ordered arrays by
``np.einsum("ij->i")`` (numpy's own column-by-column order). (2) ``_rows_of``: ``p``
repeated on every row for the fits' products. (3) The fits as a whole (``_whittle``)
against the former code, copied below."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from ldpfleet.collector import period as P


def _former_whittle(p: np.ndarray, g: np.ndarray, start: float) -> tuple[float, float, int]:
    """``_whittle`` as it was before (main at 253b30a): numpy's sums, ``p`` broadcast."""

    def sums(c, a, g, p, work):
        wt, wg, tmp = work
        np.multiply(a[:, None], g, out=wt)
        wt += c[:, None]
        np.multiply(wt, wt, out=wt)
        np.divide(1.0, wt, out=wt)
        np.multiply(wt, g, out=wg)
        return (
            wt.sum(axis=1),
            wg.sum(axis=1),
            np.multiply(wg, g, out=tmp).sum(axis=1),
            np.multiply(wt, p, out=tmp).sum(axis=1),
            np.multiply(wg, p, out=tmp).sum(axis=1),
        )

    def flat(start, g, p, work):
        rows, cols = g.shape
        w = 1.0 / (np.float64(start) * np.float64(start))
        _, wg, tmp = work
        np.multiply(g, w, out=wg)
        return (
            np.full(rows, np.cumsum(np.full(cols, w))[-1]),
            wg.sum(axis=1),
            np.multiply(wg, g, out=tmp).sum(axis=1),
            np.full(rows, np.cumsum(w * p)[-1]),
            np.multiply(wg, p, out=tmp).sum(axis=1),
        )

    c = np.full(g.shape[0], start)
    a = np.zeros(g.shape[0])
    work = [np.empty(g.shape, order="F") for _ in range(3)]
    step_sums = functools.partial(sums, work=work)
    for step in range(4):
        if step == 0 and math_ok(start):
            s11, s12, s22, r1, r2 = flat(start, g, p, work)
        else:
            s11, s12, s22, r1, r2 = step_sums(c, a, g, p)
        det = s11 * s22 - s12 * s12
        ok = det > 1e-12 * s11 * s22
        c_new = np.where(ok, (s22 * r1 - s12 * r2) / np.where(ok, det, 1.0), r1 / s11)
        a_new = np.where(ok, (s11 * r2 - s12 * r1) / np.where(ok, det, 1.0), 0.0)
        neg_a = a_new < 0.0
        a_new = np.where(neg_a, 0.0, a_new)
        c_new = np.where(neg_a, r1 / s11, c_new)
        neg_c = c_new <= 0.0
        c_new = np.where(neg_c, 1e-12 * start, c_new)
        a_new = np.where(neg_c, np.maximum(r2 / s22, 0.0), a_new)
        c, a = c_new, a_new
    spectrum = np.multiply(a[:, None], g, out=work[0])
    spectrum += c[:, None]
    logs = np.log(spectrum, out=work[1])
    ratio = np.divide(p, spectrum, out=work[2])
    deviance = np.add(logs, ratio, out=logs).sum(axis=1)
    best = int(np.argmin(deviance))
    return float(c[best]), float(a[best]), best


def math_ok(start: float) -> bool:
    return bool(np.isfinite(start) and start > 0.0)


def _fortran_cases():
    rng = np.random.default_rng(1941)
    for rows in (2, 3, 19, 40):
        for cols in (1, 2, 7, 8, 9, 127, 300, 4999):
            scale = 10.0 ** rng.integers(-8, 9, (rows, cols))
            x = rng.standard_normal((rows, cols)) * scale  # cancellations across magnitudes
            yield np.asfortranarray(x)
            yield np.asfortranarray(np.abs(x))


def test_row_sums_are_numpys_bit_for_bit():
    checked = 0
    for x in _fortran_cases():
        assert x.flags.f_contiguous
        assert np.array_equal(P._row_sums(x), x.sum(axis=1))
        checked += 1
    assert checked == 64


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape", [(1, 500), (19, 1), (5, 300)])
def test_row_sums_elsewhere_are_numpys(order, shape):
    rng = np.random.default_rng(1942)
    x = np.array(rng.standard_normal(shape) * 1e3, order=order)
    assert np.array_equal(P._row_sums(x), x.sum(axis=1))
    strided = np.asfortranarray(rng.standard_normal((shape[0], 2 * shape[1])))[:, ::2]
    assert np.array_equal(P._row_sums(strided), strided.sum(axis=1))


def test_rows_of_repeats_p_fortran_ordered():
    p = np.random.default_rng(1943).exponential(size=1234)
    rows = P._rows_of(p, (19, 1234))
    assert rows.flags.f_contiguous
    assert np.array_equal(rows, np.broadcast_to(p, (19, 1234)))


@pytest.mark.parametrize("cols", [9, 300, 4999, 20_000])
def test_whittle_is_the_former_fit_bit_for_bit(cols):
    rng = np.random.default_rng([1944, cols])
    omega = np.sort(rng.uniform(1e-3, np.pi, cols))
    g = P._shapes(omega)
    g /= g.mean(axis=1, keepdims=True)
    for trial in range(6):
        keep = rng.random(cols) < (1.0 if trial % 2 else 0.8)
        gk = g[:, keep]  # Fortran-ordered, as in the fits
        row = int(rng.integers(g.shape[0]))
        p = (rng.exponential(size=cols) * (0.2 + 3.0 * trial * g[row]))[keep]
        for start in (float(np.median(p)) / np.log(2.0) + 1e-300, float(np.mean(p)), 1e-3):
            assert P._whittle(p, gk, start) == _former_whittle(p, gk, start)


def _former_screen(xw: np.ndarray, periods: np.ndarray):
    """``_screen``'s statistics as they were before (main at 253b30a)."""
    from scipy import fft as sp_fft

    n = xw.size
    nfft = sp_fft.next_fast_len(P.PAD * n, real=True)
    spec = sp_fft.rfft(xw, nfft)
    pad_power = (spec.real**2 + spec.imag**2) / n
    ac = sp_fft.irfft(spec.real**2 + spec.imag**2, nfft)[:n]
    count = (n - 1) // periods
    rows = np.repeat(np.arange(periods.size), count)
    j = np.arange(rows.size) - np.repeat(np.cumsum(count) - count, count) + 1
    comb = ac[0] + 2.0 * np.bincount(rows, weights=ac[periods[rows] * j], minlength=periods.size)
    full_total = periods * comb / (2.0 * n)
    full_shape = (periods - 1) / 2.0
    jj = np.arange(1, P.HARMONIC_LEVELS[-1] + 1)
    idx = np.rint(jj[None, :] * (nfft / periods[:, None])).astype(np.int64)
    idx = np.minimum(idx, pad_power.size - 1)
    partial = np.cumsum(pad_power[idx], axis=1)
    levels = np.array(P.HARMONIC_LEVELS)
    valid = levels[None, :] < ((periods[:, None] - 1) // 2)
    return (partial[:, levels - 1], full_total, full_shape, valid), ac


@pytest.mark.parametrize("n", [9, 150, 1001, 10_000, 40_000])
def test_screen_is_the_former_screen_bit_for_bit(n):
    rng = np.random.default_rng([1945, n])
    xw = rng.standard_normal(n) + np.sin(2 * np.pi * np.arange(n) / 7.3)
    cases = [np.arange(3, n // 3 + 1), np.arange(5, n // 2 + 1), np.arange(3, n // 3 + 1)[::2]]
    for periods in cases:
        if periods.size == 0:
            continue
        got, want = P._screen(xw, periods), _former_screen(xw, periods)
        assert np.array_equal(got[1], want[1])
        for a, b in zip(got[0], want[0], strict=True):
            assert a.shape == b.shape and np.array_equal(a, b)


def test_screen_caches_only_aranges():
    assert P._arange_bounds(np.arange(3, 100)) == (3, 99)
    assert P._arange_bounds(np.arange(3, 100, 2)) is None
    assert P._arange_bounds(np.array([3, 5, 4])) is None
    assert P._arange_bounds(np.arange(3, 4 + P.SCREEN_CACHE_PERIODS)) is None
    assert P._arange_bounds(np.arange(0)) is None


def test_per_row_is_a_broadcast_of_a():
    rng = np.random.default_rng(1946)
    a = rng.standard_normal(19)
    for g in (np.asfortranarray(rng.random((19, 300))), rng.random((19, 300))):
        rows = P._per_row(a, g)
        assert np.array_equal(np.broadcast_to(rows, g.shape), np.broadcast_to(a[:, None], g.shape))
        assert np.array_equal(rows * g, a[:, None] * g)


@pytest.mark.parametrize("order", ["C", "F"])
def test_columns_is_the_column_selection(order):
    rng = np.random.default_rng(1947)
    g = np.array(rng.random((19, 777)), order=order)
    keep = rng.random(777) < 0.9
    got = P._columns(g, keep)
    assert got.flags.f_contiguous
    assert np.array_equal(got, g[:, keep])


@pytest.mark.parametrize("dfd", [1.0, 22.0, 1663.0, 166_663.0])
def test_full_column_lead_filter_keeps_every_row_below_the_cut(dfd):
    rng = np.random.default_rng([1948, int(dfd)])
    shape = (np.arange(3, 5000) - 1) / 2.0
    ratio = np.exp(rng.normal(0.0, 1.0, shape.size) * rng.choice([0.05, 0.5, 3.0], shape.size))
    total = shape * ratio
    plain = P._log_sf(total, shape, dfd)
    checked = 0
    for cut in (-1.3, -5.0, -40.0, -700.0, -5000.0, -1e5):
        got = P._full_column(total, shape, dfd, cut)
        below = plain < cut
        assert np.array_equal(got < cut, below)
        assert np.array_equal(got[below], plain[below])
        checked += int(below.sum())
    assert checked > 100
