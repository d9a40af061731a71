"""Background fits and whitening of cycle recovery (``collector/period.py``, "Whitening"):
the detrending, the Whittle fits of the white + AR(1) and long-memory backgrounds (blocked for
long streams), the whitening filter, and the FFT and fold primitives they share (``_rfft``,
``_dot``, ``_phase_sums``, ``_fold``)."""

from __future__ import annotations

import functools
import math
import threading

import numpy as np
from ldpfleet.collector.period_constants import (
    BLAS_SERIAL,
    BY_ROW_COLUMNS,
    MEMORY_GRID,
    PHI_GRID,
    SCRATCH_FLOATS,
    TRIM,
    WHITTLE_BLOCK,
    WITHIN_CACHE,
)
from scipy import fft as sp_fft


def _private_r2c():
    """The transform behind ``scipy.fft.rfft`` without its dispatch (~8 us a call), if this
    scipy has it with the signature we call and it gives rfft's values bit for bit on a
    probe; else None (the public function is used). A private name: checked, never trusted."""
    try:
        from scipy.fft._pocketfft.pypocketfft import r2c

        probe = np.random.default_rng(0).random(37)
        if np.array_equal(r2c(probe, (-1,), True, 0, None, 1), sp_fft.rfft(probe)):
            return r2c
    except Exception:  # pragma: no cover - another scipy layout or signature
        pass
    return None  # pragma: no cover


_pocket_r2c = _private_r2c()
_scratch_pool = threading.local()  # _scratch's buffers, one set per thread


def _detrend(x: np.ndarray) -> np.ndarray:
    """Residual of the least-squares quadratic in time (a linear or bowed trend is not a
    period; a signal with >= 3 cycles is nearly orthogonal to it)."""
    basis = _quadratic_basis(x.size)
    columns = _quadratic_columns(x.size) if x.size <= WITHIN_CACHE else basis
    coef, *_ = np.linalg.lstsq(columns, x, rcond=None)
    return x - basis @ coef


def _detrend_at(x: np.ndarray, period: int) -> np.ndarray:
    """Residual of the quadratic in time fitted JOINTLY with a ``period``-periodic fold
    (one mean per phase): the trend a ``period``-periodic signal does not explain. The
    plain quadratic of ``_detrend`` is not zero on a periodic signal with few cycles (a sine
    over 6 whole cycles from phase 0 leans on ``t``); what it removes is not periodic, and
    the refinement and the multiple test read it as energy off the period (a noise-free
    sine of period 365 in 4 cycles settled at 366, 6 cycles of 97 became 194). An exactly
    ``period``-periodic ``x`` comes back unchanged (Frisch-Waugh: the trend is fitted to the
    within-phase residuals of ``x`` and of the basis)."""
    trend = _quadratic_basis(x.size)[:, 1:]
    if x.size <= WITHIN_CACHE:
        basis = _within_trend(x.size, period)
    else:
        basis = np.stack([_within(trend[:, 0], period), _within(trend[:, 1], period)], axis=1)
    coef, *_ = np.linalg.lstsq(basis, _within(x, period), rcond=None)
    return x - trend @ coef


def _within(v: np.ndarray, period: int) -> np.ndarray:
    """``v`` less its phase means at ``period`` (``_detrend_at``)."""
    counts = _phase_counts(v.size, period)[0]
    # np.resize repeats the phase means along the stream: means[t % period], copied
    return v - np.resize(_phase_sums(v, period) / counts, v.size)


@functools.lru_cache(maxsize=16)  # n x 2 floats each: 160 KB at n = 10^4, 512 KB at 2^15
def _within_trend(n: int, period: int) -> np.ndarray:
    """The within-phase residuals of the linear and quadratic trend columns at ``period``,
    as ``_detrend_at`` fits them (the same values; read-only, shared): a function of the
    stream's length and the period only, the same for every stream of a fleet and for the
    settles of one call that revisit a centre (issue 19, helper F: ~70 of ~290 us of a
    ``_detrend_at`` at n = 10^4)."""
    trend = _quadratic_basis(n)[:, 1:]
    basis = np.stack([_within(trend[:, 0], period), _within(trend[:, 1], period)], axis=1)
    basis = np.asfortranarray(basis)  # the same values; lstsq copies C order column by column
    basis.setflags(write=False)
    return basis


@functools.lru_cache(maxsize=8)  # n x 3 floats each
def _quadratic_columns(n: int) -> np.ndarray:
    """``_quadratic_basis(n)`` in Fortran order (read-only, shared; ``_detrend`` uses it for
    streams of up to ``WITHIN_CACHE`` samples): ``np.linalg.lstsq`` copies its matrix into
    Fortran order for LAPACK (the same values either way), ~50 us cheaper from Fortran order
    at n = 10^4 (issue 19, helper F)."""
    out = np.asfortranarray(_quadratic_basis(n))
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=8)  # n x 3 floats each
def _quadratic_basis(n: int) -> np.ndarray:
    """Columns 1, u, (3 u^2 - 1) / 2 on ``u = linspace(-1, 1, n)`` (read-only, shared)."""
    u = np.linspace(-1.0, 1.0, n)
    basis = np.stack([np.ones_like(u), u, 1.5 * u * u - 0.5], axis=1)
    basis.setflags(write=False)
    return basis


# -- background spectrum --------------------------------------------------------------------


def _whittle(p: np.ndarray, g: np.ndarray, start: float) -> tuple[float, float, int]:
    """Whittle fit of ``S = c + a g_phi`` for every ``phi`` (row of ``g``) to the values ``p``:
    the score equations ``sum (S - p) / S^2 dS = 0`` solved by iteratively reweighted least
    squares (weights ``1 / S^2``, ``c, a >= 0``). Returns ``(c, a, row)`` of the ``phi`` with
    the smallest deviance ``sum log S + p / S``."""
    c = np.full(g.shape[0], start)
    a = np.zeros(g.shape[0])
    blocked = _blocked(g)
    if blocked:
        sums, rows_p = _whittle_sums_blocked, p
    else:  # the temporaries once for the 4 steps (fresh pages fault in: +4 ms at n = 10^4)
        work = [_scratch(role, *g.shape) for role in ("wt", "wg", "tmp")]
        sums = functools.partial(_whittle_sums, work=work)
        rows_p = _rows_of(p, g.shape)
    for step in range(4):
        if step == 0 and not blocked and math.isfinite(start) and start > 0.0:
            s11, s12, s22, r1, r2 = _whittle_sums_flat(start, g, p, work, rows_p)
        else:
            s11, s12, s22, r1, r2 = sums(c, a, g, rows_p)
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
    if blocked:
        deviance = _deviance_blocked(c, a, g, p)
    else:  # sum(log(c + a g) + p / (c + a g)), each operation into the work arrays
        spectrum, logs, ratio = work
        _by_row(np.multiply, g, a, spectrum)
        _by_row(np.add, spectrum, c, spectrum)
        np.log(spectrum, out=logs)
        np.divide(rows_p, spectrum, out=ratio)
        deviance = _row_sums(np.add(logs, ratio, out=logs))
    best = int(np.argmin(deviance))
    return float(c[best]), float(a[best]), best


def _scratch(role: str, rows: int, cols: int) -> np.ndarray:
    """An uninitialised Fortran-ordered ``(rows, cols)`` float64 array for the temporaries
    of the Whittle fits (``role`` names one; ``_columns``, ``_whittle``), a view of a
    buffer this thread keeps between calls: fresh pages fault in one by one, and on this
    project's machines that cost ~3.6 us a page, ~1,650 faults (~5 ms) per 10,000-report
    stream in the fits' temporaries (issue 19, helper A). Fortran order as ``g[:, keep]``
    has it: the fits' row sums then add the columns in sequence, the same bits. Above
    ``SCRATCH_FLOATS`` elements a fresh array (the buffers kept stay under
    ``5 * SCRATCH_FLOATS`` floats a thread, 10 MB)."""
    size = rows * cols
    if size > SCRATCH_FLOATS:
        return np.empty((rows, cols), order="F")
    pool = _scratch_pool.__dict__
    buffer = pool.get(role)
    if buffer is None or buffer.size < size:
        buffer = pool[role] = np.empty(size)
    return buffer[:size].reshape((rows, cols), order="F")


def _columns(g: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``g[:, keep]`` (the same values and Fortran order) in the ``"g"`` scratch buffer. From
    a Fortran-ordered ``g`` whole columns are copied (its transpose's rows; issue 19, helper
    D: from the C-ordered shapes each column was gathered element by element, 152 against
    58 us at 19 x 5,000)."""
    out = _scratch("g", g.shape[0], int(keep.sum()))
    if g.flags.f_contiguous and not g.flags.c_contiguous:
        np.compress(keep, g.T, axis=0, out=out.T)
        return out
    return np.compress(keep, g, axis=1, out=out)


def _whittle_sums(c: np.ndarray, a: np.ndarray, g: np.ndarray, p: np.ndarray, work: list):
    """One IRLS step's sums over the bins, per row of ``g``: ``sum w``, ``sum w g``,
    ``sum w g^2``, ``sum w p``, ``sum w g p`` with ``w = 1 / (c + a g)^2``; ``work``: three
    arrays like ``g`` (overwritten)."""
    wt, wg, tmp = work
    # the same float operations as c + a g, 1 / (s s), (wt g) g, (wt g) p, in place
    _by_row(np.multiply, g, a, wt)
    _by_row(np.add, wt, c, wt)
    np.multiply(wt, wt, out=wt)
    np.divide(1.0, wt, out=wt)
    np.multiply(wt, g, out=wg)
    s11 = _row_sums(wt)
    s12 = _row_sums(wg)
    s22 = _row_dots(wg, g, tmp)
    r1 = _row_dots(wt, p, tmp)
    r2 = _row_dots(wg, p, tmp)
    return s11, s12, s22, r1, r2


def _whittle_sums_flat(
    start: float, g: np.ndarray, p: np.ndarray, work: list, rows_p: np.ndarray | None = None
):
    """``_whittle_sums`` at the IRLS start, ``c = start`` and ``a = 0`` on every row (issue
    19, helper E): ``S = 0 g + c = start`` exactly (``g`` finite), so ``w = 1 / (start
    start)`` is one number and ``sum w`` and ``sum w p`` are the same on every row. Those two
    sums once, in sequence as numpy forms the row sums of the Fortran-ordered arrays
    (``np.cumsum``'s last element: the same additions in the same order), the other three
    as ``_whittle_sums`` with ``w g`` from the scalar: the same bits, four passes over ``g``
    and two row sums fewer. ``rows_p``: ``p`` on every row (``_rows_of``), or None."""
    rows, cols = g.shape
    w = 1.0 / (np.float64(start) * np.float64(start))
    _, wg, tmp = work
    np.multiply(g, w, out=wg)
    s11 = np.full(rows, np.cumsum(np.full(cols, w))[-1])
    s12 = _row_sums(wg)
    s22 = _row_dots(wg, g, tmp)
    r1 = np.full(rows, np.cumsum(w * p)[-1])
    r2 = _row_dots(wg, p if rows_p is None else rows_p, tmp)
    return s11, s12, s22, r1, r2


def _per_row(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``a[:, None]`` for products with ``g``: on a Fortran-ordered ``g`` the same values as
    a contiguous array of ``g``'s layout (``np.tile``: ``a`` once per column), which numpy
    multiplies in one pass instead of one column per inner-loop call (50 against 94 us at
    19 x 5,000 with the tiling; issue 19, helper D). The same products, so the same bits."""
    if g.ndim == 2 and g.flags.f_contiguous and not g.flags.c_contiguous:
        return np.tile(a, g.shape[1]).reshape(g.shape, order="F")
    return a[:, None]


def _by_row(ufunc, x: np.ndarray, v: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``ufunc(x, v[:, None], out=out)`` (a per-row operand ``v``), the same elementwise
    results (issue 19, helper F). On Fortran-ordered ``x`` and ``out`` of several rows numpy
    broadcasts ``v`` one column (``rows`` elements) per inner-loop call (50 us for ``+= c``
    at 19 x 4,950 here), and ``_per_row``'s full tile of ``v`` costs 24 us; here both
    arrays' memory is read as rows of ``BY_ROW_COLUMNS`` whole columns against ``v`` tiled
    that many times (a 1,216-element operand), the last columns as ``(columns, rows)``
    against ``v``: every element meets its own row's ``v`` in the same operation."""
    rows, cols = x.shape
    ordered = (x, out)
    if rows < 2 or not all(a.flags.f_contiguous and not a.flags.c_contiguous for a in ordered):
        return ufunc(x, v[:, None], out=out)
    flat_x, flat_out = x.T.reshape(-1), out.T.reshape(-1)
    whole = (cols // BY_ROW_COLUMNS) * BY_ROW_COLUMNS * rows
    if whole:
        width = BY_ROW_COLUMNS * rows
        ufunc(
            flat_x[:whole].reshape(-1, width),
            np.tile(v, BY_ROW_COLUMNS),
            out=flat_out[:whole].reshape(-1, width),
        )
    if whole < flat_x.size:
        ufunc(flat_x[whole:].reshape(-1, rows), v, out=flat_out[whole:].reshape(-1, rows))
    return out


def _rows_of(p: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``p`` repeated on every row of a Fortran-ordered ``shape`` array (the ``"p"`` scratch
    buffer; issue 19, helper D): the fits multiply and divide by ``p`` 8 times, and numpy
    broadcasts a 1-D ``p`` over a Fortran-ordered array one column (19 elements) per
    inner-loop call, 2.2 times slower than with this contiguous operand (146 against
    66 us at 19 x 5,000, load 5). The same products, so the same bits."""
    out = _scratch("p", *shape)
    out[...] = p
    return out


def _row_sums(x: np.ndarray) -> np.ndarray:
    """``x.sum(axis=1)`` of a 2-D float64 array, bit for bit (issue 19, helper D). On a
    Fortran-ordered array of several rows numpy adds the columns in sequence, one column
    (``rows`` elements) per inner-loop call, ~45 ns each; ``np.einsum("ij->i", x)`` makes
    the same additions in the same order (its output starts at 0.0 and adds each column;
    ``0.0 + x_0 = x_0`` for every ``x_0`` but -0.0, so only a row of -0.0 alone could come
    out +0.0) with a cheaper loop: 86 against 250 us at 19 x 5,000 (load 5). Elsewhere
    (one row, C order) numpy's own sum: einsum's contiguous loops use several
    accumulators there (other bits). tests/unit/test_D_speed_same.py compares the two."""
    if x.ndim == 2 and x.shape[0] > 1 and x.flags.f_contiguous and not x.flags.c_contiguous:
        return np.einsum("ij->i", x)
    return x.sum(axis=1)


def _column_ordered(x: np.ndarray) -> bool:
    """Whether ``_row_sums`` adds the columns of ``x`` in sequence by ``einsum`` (a 2-D
    Fortran-ordered array of several rows)."""
    return x.ndim == 2 and x.shape[0] > 1 and x.flags.f_contiguous and not x.flags.c_contiguous


def _row_dots(u: np.ndarray, v: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``_row_sums(np.multiply(u, v, out=out))``, bit for bit, without writing the products
    when both are Fortran-ordered 2-D arrays of several rows (issue 19, helper F):
    ``np.einsum("ij,ij->i", u, v)`` iterates them in memory order as ``"ij->i"`` does, the
    rows innermost and the columns in sequence, and adds each rounded product ``u v`` to
    its row's running sum from 0.0 (no fused multiply-add: the products are the ones
    ``np.multiply`` writes). 69 against 89 us at 19 x 4,950 here; three of the five sums
    of every Whittle step. ``scripts/F_row_dots.py`` compares the two on random arrays and
    the pins of ``scripts/cpr_period_same.py`` on every stream. Otherwise (one row, C
    order, a 1-D ``v``) the product is written and summed as before; ``out`` is overwritten
    there."""
    if _column_ordered(u) and _column_ordered(v) and u.shape == v.shape:
        return np.einsum("ij,ij->i", u, v)
    return _row_sums(np.multiply(u, v, out=out))


def _blocked(g: np.ndarray) -> bool:
    """Whether the Whittle sums go block by block (``_whittle_sums_blocked``): a
    Fortran-ordered ``g`` of more than ``8 WHITTLE_BLOCK`` columns (below, the blocks'
    overhead outweighs the cache). The fits pass ``g[:, keep]``, which numpy lays out
    column by column and whose rows it reduces in sequence."""
    return g.shape[1] > 8 * WHITTLE_BLOCK and g.flags.f_contiguous and not g.flags.c_contiguous


def _column_blocks(size: int):
    """``(start, stop)`` of the consecutive column blocks of ``WHITTLE_BLOCK`` columns."""
    return ((s, min(s + WHITTLE_BLOCK, size)) for s in range(0, size, WHITTLE_BLOCK))


def _whittle_sums_blocked(c: np.ndarray, a: np.ndarray, g: np.ndarray, p: np.ndarray):
    """``_whittle_sums`` of a Fortran-ordered ``g`` (``_blocked``), ``WHITTLE_BLOCK``
    columns at a time so that the five ``g``-sized temporaries stay in cache (at n = 10^6
    each was 76 MB and the fit ran at memory speed: 1.2 of 4.3 s). The same values: numpy
    sums the rows of a Fortran-ordered array in sequence, column by column, and each
    block's sums continue that sequence (the running sum sits in column 0 of the block's
    buffer, 0 before the first block)."""
    rows = g.shape[0]
    buf = [np.zeros((rows, WHITTLE_BLOCK + 1), order="F") for _ in range(5)]
    for start, stop in _column_blocks(g.shape[1]):
        width = stop - start + 1
        gb, pb = g[:, start:stop], p[start:stop]
        wt, wg = buf[0][:, 1:width], buf[1][:, 1:width]
        np.multiply(a[:, None], gb, out=wt)
        wt += c[:, None]
        np.multiply(wt, wt, out=wt)
        np.divide(1.0, wt, out=wt)
        np.multiply(wt, gb, out=wg)
        np.multiply(wg, gb, out=buf[2][:, 1:width])
        np.multiply(wt, pb, out=buf[3][:, 1:width])
        np.multiply(wg, pb, out=buf[4][:, 1:width])
        for b in buf:
            b[:, 0] = b[:, :width].sum(axis=1)
    return tuple(b[:, 0].copy() for b in buf)


def _deviance_blocked(c: np.ndarray, a: np.ndarray, g: np.ndarray, p: np.ndarray):
    """``sum log S + p / S`` per row, ``S = c + a g``, block by block as in
    ``_whittle_sums_blocked`` (the same values as the one-shot sum)."""
    buf = np.zeros((g.shape[0], WHITTLE_BLOCK + 1), order="F")
    for start, stop in _column_blocks(g.shape[1]):
        width = stop - start + 1
        s = c[:, None] + a[:, None] * g[:, start:stop]
        buf[:, 1:width] = np.log(s) + p[start:stop] / s
        buf[:, 0] = buf[:, :width].sum(axis=1)
    return buf[:, 0].copy()


def _background(power: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """Whittle fit of ``S(w) = c + a g(w)`` (white + AR(1) / random-walk / long-memory
    background, ``g`` one of ``_shapes``) to the periodogram ``power`` at frequencies
    ``omega`` (all > 0). For each shape the model is linear in ``(c, a)`` (``_whittle``); the
    shape with the smallest Whittle deviance wins. Lines (``P / S > TRIM``) are dropped and the fit
    repeated once. Returns ``S`` at every frequency."""
    g = _ar_shapes(omega.tobytes())  # a function of the frequencies only: cached
    # the harmonic mean of S over three neighbouring bins is estimated by 3 x their minimum
    # (the minimum of exponentials is exponential): a line, or the lines of a cycle with
    # >= 3 cycles (every 3rd bin or sparser), never sits in all three bins
    padded = np.concatenate(([np.inf], power, [np.inf]))
    power = 3.0 * np.minimum(np.minimum(padded[:-2], padded[1:-1]), padded[2:])
    power[[0, -1]] *= 2.0 / 3.0  # edge windows hold two bins
    white = float(np.median(power)) / np.log(2.0) + 1e-300
    keep = np.ones(power.size, dtype=bool)
    for _ in range(2):
        # (always the copies: _whittle on the uncopied arrays, same values, rounded some
        # fits differently in the last bit -- measured, 5 of 2,400 reference streams)
        c, a, best = _whittle(power[keep], _columns(g, keep), white)
        spectrum = c + a * g[best]
        keep_new = power <= TRIM * spectrum
        if keep_new.all() or keep_new.sum() < 8 or np.array_equal(keep_new, keep):
            break
        keep = keep_new
    return spectrum


@functools.lru_cache(maxsize=8)
def _ar_shapes(omega_bytes: bytes) -> np.ndarray:
    """The background shapes (``_shapes``) at the frequencies ``w`` (float64 bytes), each row
    divided by its mean (``a`` is then the mean coloured power: conditioning). Read-only,
    shared."""
    omega = np.frombuffer(omega_bytes, dtype=float)
    g = _shapes(omega)
    g /= g.mean(axis=1, keepdims=True)
    g = np.asfortranarray(g)  # the same values, column by column for _columns
    g.setflags(write=False)
    return g


def _shapes(omega: np.ndarray) -> np.ndarray:
    """The coloured part ``g(w)`` of the background ``S = c + a g``, one row per shape, at the
    frequencies ``w`` (all > 0): ``1 / (1 + phi^2 - 2 phi cos w)`` for every ``phi`` of
    ``PHI_GRID`` (AR(1); ``phi = 1`` the random walk), then ``|2 sin(w / 2)|^(-2 d)`` for
    every ``d`` of ``MEMORY_GRID`` (long memory, fractionally integrated noise: a power law
    at low frequencies that no AR(1) shape follows over more than a decade; module
    docstring, "Long memory")."""
    grid = np.array(PHI_GRID)[:, None]
    memory = np.array(MEMORY_GRID)[:, None]
    ar = 1.0 / (1.0 + grid * grid - 2.0 * grid * np.cos(omega)[None, :])
    return np.vstack((ar, np.abs(2.0 * np.sin(omega / 2.0))[None, :] ** (-2.0 * memory)))


def _whiten(xd: np.ndarray, parts: dict | None = None) -> tuple[np.ndarray, float]:
    """The stream divided, frequency by frequency, by the square root of its fitted background:
    under any background of the fitted family the result is close to iid with variance 1.
    Also returns the white level ``min S`` (the SW noise variance, for the refinement).
    ``parts`` (a dict, optional) receives ``"power"``: the periodogram of the centred stream,
    ``|rfft(xd - mean)|^2 / n`` at every bin, which ``masked_logp`` reads again (issue 19,
    helper F: the same values, one transform fewer)."""
    n = xd.size
    spec = sp_fft.rfft(xd - xd.mean())
    power = (spec.real**2 + spec.imag**2) / n
    if parts is not None:
        parts["power"] = power
    omega = 2.0 * np.pi * np.arange(spec.size) / n
    bg = np.empty(spec.size)
    bg[1:] = _background(power[1:], omega[1:])
    bg[0] = np.inf
    return sp_fft.irfft(spec / np.sqrt(bg), n), float(np.min(bg[1:]))


# -- FFT and fold primitives --------------------------------------------------------------


def _rfft(x: np.ndarray) -> np.ndarray:
    """``scipy.fft.rfft(x)`` of a 1-D float64 array: the same pocketfft call (same result,
    bit for bit) without the backend dispatch, which dominated the small folds of short
    streams."""
    if _pocket_r2c is None:  # pragma: no cover
        return sp_fft.rfft(x)
    return _pocket_r2c(x, (-1,), True, 0, None, 1)


@functools.lru_cache(maxsize=512)
def _phase_counts(size: int, period: int) -> tuple[np.ndarray, np.ndarray]:
    """Samples per phase of a ``size``-sample stream folded at ``period``, and their square
    roots (read-only, shared)."""
    counts = np.full(period, size // period) + (np.arange(period) < size % period)
    root = np.sqrt(counts)
    counts.setflags(write=False)
    root.setflags(write=False)
    return counts, root


def _phase_sums(x: np.ndarray, period: int) -> np.ndarray:
    """``np.bincount(np.arange(x.size) % period, weights=x, minlength=period)`` of a 1-D
    float64 ``x``, the same values bit for bit, 4-6 times faster (issue 19: the modulo of
    every sample was half the cost of a fold). ``bincount`` adds the samples of each phase
    in time order, starting from 0.0; so does numpy's reduction over the rows of the
    C-ordered ``(cycles, period)`` view (from ``initial=0.0``, each row added elementwise in
    turn: the reduced axis is not the innermost one, so no pairwise summation), followed by
    the partial last cycle. At ``period = 1`` the rows are single elements and numpy sums
    them pairwise: ``bincount`` there (tests/unit/test_period_speed_same.py compares the
    two on every ``period`` from 1 to 120 and on long ones)."""
    cycles, rest = divmod(x.size, period)
    if period < 2 or cycles == 0 or x.dtype != np.float64:
        return np.bincount(np.arange(x.size) % period, weights=x, minlength=period)
    sums = np.add.reduce(x[: cycles * period].reshape(cycles, period), axis=0, initial=0.0)
    if rest:
        sums[:rest] += x[cycles * period :]
    return sums


def _within_scale(
    xw: np.ndarray,
    t: np.ndarray,
    period: int,
    sums: np.ndarray | None = None,
    square: float | None = None,
) -> float:
    """Mean square of the whitened stream within phases (``n - T`` degrees of freedom): its
    noise level with every harmonic of ``1 / T`` removed. ``sums``: ``_phase_sums(xw,
    period)``, ``square``: ``_dot(xw, xw)``, if the caller has them (the same value)."""
    if sums is None:
        sums, counts = _fold(xw, t, period)
    else:
        counts = _phase_counts(xw.size, period)[0]
    between = float(np.sum(sums * sums / counts))
    square = _dot(xw, xw) if square is None else square
    return max(square - between, 1e-300) / (xw.size - period)


def _fold(x: np.ndarray, t: np.ndarray, period: int) -> tuple[np.ndarray, np.ndarray]:
    """Phase sums of ``x`` at ``period`` and the number of samples of each phase."""
    sums = _phase_sums(x, period)
    return sums, _phase_counts(x.size, period)[0]


def _dot(u: np.ndarray, v: np.ndarray) -> float:
    """``float(u @ v)`` of two 1-D float arrays without BLAS threads: OpenBLAS splits a
    dot product of more than ``BLAS_SERIAL`` elements over its threads, which on a loaded
    machine cost ~20 ms a call at n = 10^5 instead of 0.02 ms (the threads wait for cores;
    30-65 calls per stream) and made the last bits depend on the thread count. Up to
    ``BLAS_SERIAL`` elements the plain product (BLAS's serial kernel, the same bits as
    before); beyond, the serial products of consecutive ``BLAS_SERIAL``-element chunks
    summed in order (deterministic whatever the thread count)."""
    if u.size <= BLAS_SERIAL:
        return float(u @ v)
    total = 0.0
    for start in range(0, u.size, BLAS_SERIAL):
        total += float(u[start : start + BLAS_SERIAL] @ v[start : start + BLAS_SERIAL])
    return total
