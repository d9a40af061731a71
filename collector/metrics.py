"""Evaluation metrics of seed 003 (CPR) — theory of operation.

Reconstruction quality: cosine distance (seed 003, Sec. "Experiments": "All distribution data
are normalized and interpolated to a unified coordinate system to ensure a fair comparison").
The seed does not spell the procedure out; ours is, exactly:

1. each series ``s`` of length ``L`` is placed on normalised time ``t_i = i / (L - 1)``,
   ``i = 0..L-1`` (a single value sits at ``t = 0`` and is extended as a constant);
2. both are linearly interpolated (``numpy.interp``) onto the common grid
   ``u_j = j / (G - 1)``, ``j = 0..G-1``, ``G = grid`` (default: the longer length);
3. each interpolated series is min-max normalised, ``(a - min a) / (max a - min a)``; a
   constant series maps to all ``0.5``;
4. ``distance = 1 - <a, b> / (|a| |b|)``.

(The cosine is scale-invariant, so for a constant series only "non-zero" matters: its
distance to ``b`` is ``1 - mean(b) / rms(b)``.)
After step 3 both vectors are non-negative and non-zero, so the distance lies in ``[0, 1]``:
0 when one series is an increasing affine function of the other (the metric ignores offset
and scale, which differ between physical and normalised units), 1 when the normalised
series have disjoint supports. It is symmetric in its arguments.

Period detection: ``period_correct`` says whether a detected period is within ``tolerance``
samples of the true one (seed 003's Table I counts exact matches: ``tolerance=0``); a missing
detection is wrong, an unknown truth gives ``None`` (the trial is not scored).
"""

from __future__ import annotations

import numbers

import numpy as np
from ldpfleet.protocol.errors import ParameterError

__all__ = ["cosine_distance", "finite_series", "period_correct"]


def finite_series(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` itself, refused naming its first non-finite value if it has one: the CPR
    series' check (here and in ``collector.baselines``)."""
    if not np.all(np.isfinite(arr)):
        raise ParameterError(
            "must be finite",
            field=name,
            limit="finite (value: the first non-finite one)",
            value=float(arr[~np.isfinite(arr)][0]),
        )
    return arr


def _series(x: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(
            f"must be a non-empty 1-d series, got shape {arr.shape}",
            field=name,
            limit="a non-empty 1-d series (value: its shape)",
            value=arr.shape,
        )
    return finite_series(arr, name)


def _on_grid(s: np.ndarray, g: int) -> np.ndarray:
    u = np.linspace(0.0, 1.0, g)
    if s.size == 1:
        return np.full(g, s[0])
    return np.interp(u, np.linspace(0.0, 1.0, s.size), s)


def _min_max(a: np.ndarray) -> np.ndarray:
    lo, hi = float(a.min()), float(a.max())
    if hi == lo:
        return np.full_like(a, 0.5)
    return (a - lo) / (hi - lo)


def cosine_distance(
    reconstruction: np.ndarray, truth: np.ndarray, *, grid: int | None = None
) -> float:
    """``1 - cos`` of the two series after interpolation onto a common grid of normalised time
    and min-max normalisation (module docstring). In ``[0, 1]``."""
    a = _series(reconstruction, "reconstruction")
    b = _series(truth, "truth")
    if grid is None:
        g = max(a.size, b.size)
    elif isinstance(grid, bool) or not isinstance(grid, numbers.Integral) or grid < 1:
        raise ParameterError(
            f"must be an integer >= 1, got {grid!r}",
            field="grid",
            limit="an integer >= 1",
            value=grid,
        )
    else:
        g = int(grid)
    na = _min_max(_on_grid(a, g))
    nb = _min_max(_on_grid(b, g))
    cos = float(np.dot(na, nb) / (np.linalg.norm(na) * np.linalg.norm(nb)))
    return float(min(1.0, max(0.0, 1.0 - cos)))


def _period(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ParameterError(
            f"must be an integer >= 1 or None, got {value!r}",
            field=name,
            limit="an integer >= 1 or None",
            value=value,
        )
    return int(value)


def period_correct(
    period_hat: int | None, period_true: int | None, *, tolerance: int = 0
) -> bool | None:
    """Whether ``|period_hat - period_true| <= tolerance``. ``None`` when the truth is unknown
    (``period_true is None``); ``False`` when nothing was detected (``period_hat is None``)."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Integral) or tolerance < 0:
        raise ParameterError(
            f"must be an integer >= 0, got {tolerance!r}",
            field="tolerance",
            limit="an integer >= 0",
            value=tolerance,
        )
    if period_true is None:
        if period_hat is not None:
            _period(period_hat, "period_hat")
        return None
    truth = _period(period_true, "period_true")
    if period_hat is None:
        return False
    return abs(_period(period_hat, "period_hat") - truth) <= int(tolerance)
