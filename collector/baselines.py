"""Reconstruction baselines for one numeric stream on the same budget — theory of operation.

Seed 003 (CPR) compares its reconstruction against five baselines (its Sec. "Comparison
Methods"); this module implements them for ONE device stream ``v_1..v_n`` in ``[0, 1]`` (the
public-bounds normalisation of ``protocol.sw.normalise``) under ``eps``-``w``-event LDP. Every
function returns a reconstruction of the same length as the stream, in normalised units.

``moving_average``
    Centred moving average of odd length ``k`` (an even ``k`` becomes ``k + 1``): output ``i``
    is the mean of ``x[max(0, i - r) : min(n, i + r + 1)]`` with ``r = k // 2``. At the edges
    the window shrinks to the neighbours that exist (no zero padding, no reflection), so a
    constant series stays constant and edge values are not biased towards 0.

``laplace_perturb`` / ``laplace_smoothed`` ("Laplace", Dwork et al., TCC 2006)
    Each step releases ``v_t + Lap(1/eps0)``: the sensitivity of the identity on ``[0, 1]`` is
    1, so every release is ``eps0``-LDP and ``eps0 = eps / w`` gives ``eps``-``w``-event LDP by
    sequential composition. The releases are left unclipped (unbiased); the collector smooths
    them with ``moving_average`` and clips the result to ``[0, 1]`` (post-processing).

``sw_raw``, ``sw_moving``, ``sw_filter`` (Square Wave, Li et al., SIGMOD 2020)
    The device releases SW reports ``y_t`` with ``eps0`` (``protocol.sw.SquareWave``). The
    collector uses the unbiased point estimates ``mechanism.estimate(y_t)``:
    ``sw_raw`` clips them to ``[0, 1]``; ``sw_moving`` applies ``moving_average`` first;
    ``sw_filter`` applies a zero-phase Butterworth low-pass filter (``scipy.signal.butter``
    of order ``order`` with cutoff ``cutoff`` as a fraction of the Nyquist frequency, in
    second-order sections, run forward and backward by ``scipy.signal.sosfiltfilt`` with odd
    extension of ``min(default, n - 1)`` samples at each end; the effective magnitude response
    is the square of the filter's, order ``2 * order``, unit gain at DC, no phase shift) and
    then clips. Smoothing happens before clipping so the averaging stays unbiased.

``lbd`` (LDP-IDS "LBD", LDP Budget Division: Ren, Shi, Wang, Zhang, Xiao, Zhang, Yang,
"LDP-IDS: Local Differential Privacy for Infinite Data Streams", SIGMOD 2022; the
budget-division idea of Kellaris et al., VLDB 2014), adapted from a population histogram to
one numeric stream. With ``r_{-1} = 0.5`` (the public domain midpoint) and at each step ``t``:

1. dissimilarity, budget ``eps1 = eps / (2w)``: ``dis = |v_t - r_{t-1}| + Lap(1/eps1)`` (the
   previous release is public, so ``|v - r|`` has sensitivity 1 in ``v``); debiased squared
   dissimilarity ``dis_sq = dis^2 - 2/eps1^2`` (``E[dis_sq] = (v_t - r_{t-1})^2``). The paper
   compares this squared-error dissimilarity with the variance of a fresh publication, so
   both sides are squared errors;
2. remaining publication budget ``eps_rm = eps/2 - sum_{i=t-w+1}^{t-1} eps_{i,2}``, potential
   publication budget ``eps2 = eps_rm / 2`` and its expected squared error
   ``err = 2 / eps2^2`` (the Laplace variance);
3. if ``dis_sq > err``: publish ``r_t = clip(v_t + Lap(1/eps2), 0, 1)`` and spend ``eps2``;
   otherwise ``r_t = r_{t-1}`` and spend nothing more.

Each window of ``w`` steps spends ``w * eps1 = eps/2`` on dissimilarities and at most ``eps/2``
on publications (every publication takes half of what the window has left), so at most
``eps``. Every spend is charged to a ``protocol.ledger.WindowAccount(eps, w)``, which would
refuse (``BudgetExhausted``) any step breaking that bound. Unlike the other baselines the
device runs LBD itself (it needs ``v_t`` at both sub-steps), so ``lbd`` takes the clean stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from ldpfleet.collector.metrics import finite_series
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.ledger import WindowAccount
from ldpfleet.protocol.samplers import GRID, laplace_on_grid
from ldpfleet.protocol.sw import SquareWave
from ldpfleet.protocol.validate import integer_at_least, positive_real

__all__ = [
    "LbdResult",
    "laplace_perturb",
    "laplace_smoothed",
    "lbd",
    "moving_average",
    "sw_filter",
    "sw_moving",
    "sw_raw",
]

R_INITIAL = 0.5


def _series(x: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ParameterError(
            f"must be 1-d, got shape {arr.shape}",
            field=name,
            limit="a 1-d array (value: its shape)",
            value=arr.shape,
        )
    return finite_series(arr, name)


def _unit_series(v: np.ndarray, name: str = "v") -> np.ndarray:
    arr = _series(v, name)
    if np.any((arr < 0.0) | (arr > 1.0)):
        raise ParameterError(
            "values must lie in [0, 1]",
            field=name,
            limit="values in [0, 1] (value: the first outside)",
            value=float(arr[(arr < 0.0) | (arr > 1.0)][0]),
        )
    return arr


def moving_average(x: np.ndarray, k: int) -> np.ndarray:
    """Centred moving average of odd length ``k`` (even ``k`` -> ``k + 1``); at the edges the
    window shrinks to the available neighbours (no zero padding)."""
    arr = _series(x, "x")
    radius = integer_at_least(k, "k", 1) // 2
    n = arr.size
    if n == 0:
        return arr.copy()
    radius = min(radius, n - 1)  # neighbours beyond the series never exist
    kernel = np.ones(2 * radius + 1)
    # direct window sums (np.convolve is not FFT-based): rounding error bounded by the
    # window, unlike differences of a running cumulative sum
    sums = np.convolve(arr, kernel, mode="full")[radius : radius + n]
    counts = np.convolve(np.ones(n), kernel, mode="full")[radius : radius + n]
    return sums / counts


def laplace_perturb(v: np.ndarray, eps0: float, rng: np.random.Generator) -> np.ndarray:
    """``v + Lap(1/eps0)`` per step (``v`` in ``[0, 1]``, sensitivity 1); unclipped. Exact
    noise on the grid (``protocol.samplers.laplace_on_grid``, as ``protocol.laplace``: 0
    and 1 are grid points, so the sensitivity stays 1)."""
    arr = _unit_series(v)
    scale = 1.0 / positive_real(eps0, "eps0")
    return np.asarray(laplace_on_grid(rng, arr, scale, GRID), dtype=float)


def laplace_smoothed(noisy: np.ndarray, k: int) -> np.ndarray:
    """``moving_average(noisy, k)`` clipped to ``[0, 1]``."""
    return np.clip(moving_average(noisy, k), 0.0, 1.0)


def _estimates(y: np.ndarray, mechanism: SquareWave) -> np.ndarray:
    if not isinstance(mechanism, SquareWave):
        raise ParameterError(
            f"must be a SquareWave, got {type(mechanism).__name__}",
            field="mechanism",
            limit="a SquareWave",
            value=mechanism,
        )
    arr = _series(y, "y")
    if not np.all(mechanism.in_domain(arr)):
        raise ParameterError(
            "reports outside the mechanism's output domain",
            field="y",
            limit="reports in the mechanism's output domain (value: the first outside)",
            value=float(arr[~mechanism.in_domain(arr)][0]),
        )
    return np.asarray(mechanism.estimate(arr), dtype=float)


def sw_raw(y: np.ndarray, mechanism: SquareWave) -> np.ndarray:
    """The unbiased SW point estimates, clipped to ``[0, 1]``."""
    return np.clip(_estimates(y, mechanism), 0.0, 1.0)


def sw_moving(y: np.ndarray, mechanism: SquareWave, k: int) -> np.ndarray:
    """Moving average (``moving_average``) of the unbiased SW estimates, clipped."""
    return np.clip(moving_average(_estimates(y, mechanism), k), 0.0, 1.0)


def sw_filter(
    y: np.ndarray, mechanism: SquareWave, *, cutoff: float = 0.1, order: int = 4
) -> np.ndarray:
    """Zero-phase Butterworth low-pass (order ``order``, cutoff ``cutoff`` x Nyquist, applied
    forward and backward with ``sosfiltfilt``) of the unbiased SW estimates, clipped."""
    est = _estimates(y, mechanism)
    wn = positive_real(cutoff, "cutoff")
    if wn >= 1.0:
        raise ParameterError(
            f"must lie in (0, 1) (fraction of Nyquist), got {cutoff!r}",
            field="cutoff",
            limit="in (0, 1) (fraction of Nyquist)",
            value=cutoff,
        )
    # imported here: scipy.signal (with scipy.stats) costs ~1.4 s of CPU to import, paid by
    # every process that loads the scenario schema (each CADR fleet shard) and never filters
    from scipy import signal

    sos = signal.butter(integer_at_least(order, "order", 1), wn, btype="lowpass", output="sos")
    if est.size < 2:
        return np.clip(est, 0.0, 1.0)
    n_sections = sos.shape[0]
    trivial = min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum()))
    default_pad = 3 * (2 * n_sections + 1 - trivial)  # scipy's own default padlen
    smoothed = signal.sosfiltfilt(sos, est, padtype="odd", padlen=min(default_pad, est.size - 1))
    return np.clip(smoothed, 0.0, 1.0)


@dataclass(frozen=True)
class LbdResult:
    """LBD output: the release per step, whether the step published a fresh value, and the
    total budget spent at the step (dissimilarity + publication)."""

    release: np.ndarray
    published: np.ndarray
    eps_spent: np.ndarray


def lbd(
    v: np.ndarray,
    eps: float,
    w: int,
    rng: np.random.Generator,
    *,
    account: WindowAccount | None = None,
) -> LbdResult:
    """LDP-IDS LBD on one stream ``v`` in ``[0, 1]`` (see the module docstring).

    ``rng`` needs only ``laplace(loc, scale)``. ``account`` (optional) is the
    ``WindowAccount`` charged; by default a fresh ``WindowAccount(eps, w)``. It must start
    empty at step 0 for the stream's steps. A refusal (which the budget division rules out)
    propagates as ``BudgetExhausted``.
    """
    values = _unit_series(v)
    total = positive_real(eps, "eps")
    width = integer_at_least(w, "w", 1)
    ledger = WindowAccount(total, width) if account is None else account
    if not isinstance(ledger, WindowAccount):
        raise ParameterError(
            f"must be a WindowAccount, got {type(ledger).__name__}",
            field="account",
            limit="a WindowAccount",
            value=ledger,
        )
    n = values.size
    eps1 = total / (2.0 * width)
    bias = 2.0 / (eps1 * eps1)
    release = np.empty(n)
    published = np.zeros(n, dtype=bool)
    pub_spent = np.zeros(n)
    previous = R_INITIAL
    for t in range(n):
        ledger.charge(t, eps1)
        dis = abs(values[t] - previous) + float(rng.laplace(0.0, 1.0 / eps1))
        dis_sq = dis * dis - bias
        eps_rm = total / 2.0 - math.fsum(pub_spent[max(0, t - width + 1) : t])
        eps2 = eps_rm / 2.0
        if eps2 > 0.0 and dis_sq > 2.0 / (eps2 * eps2):
            ledger.charge(t, eps2)
            previous = min(1.0, max(0.0, values[t] + float(rng.laplace(0.0, 1.0 / eps2))))
            published[t] = True
            pub_spent[t] = eps2
        release[t] = previous
    return LbdResult(release=release, published=published, eps_spent=eps1 + pub_spent)
