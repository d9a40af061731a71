"""Refusal layer for GC-DP parameters — the conditions of Theorem 1 (seed 000, Section 4.5).

Theory of operation. Theorem 1 proves that the Algorithm 4 release is eps_rel-DP under the
fixed adjacency ``~G0`` for a parameter object theta exactly when, for every released
coordinate k:

* ``s_k >= B_k >= Delta_k(q)`` — the release scale numerator dominates a certified bound
  (Proposition 1; ``B_k >= Delta_k`` is the caller's analytic obligation, ``s_k >= B_k`` is
  checked here), with ``s_k > 0`` for every non-constant coordinate (``B_k > 0``);
* ``eps_k > 0``; and
* ``sum_k eps_k <= eps_rel``.

Algorithm 3 additionally requires the floor ``0 < eps_min < eps_rel / d`` (its step 1).
Every check raises ``ParameterError`` naming the offending field (``"scales[3]"``,
``"budgets"``, ``"eps_min"``) and the limit; nothing is clipped or repaired silently. The
budget sum (computed exactly, ``math.fsum``) may exceed ``eps_rel`` by at most the privacy
ledger's rounding tolerance ``protocol.ledger.REL_TOL`` (relative ``1e-9``), the project's
one convention: hand-written budgets such as ``[0.4, 0.4, 0.2]`` against ``eps_rel = 1``
(whose floats sum to ``1 + 2.2e-16``) are accepted, anything larger is refused. The
allocators in ``allocation`` return vectors whose exact sum is ``<= eps_rel``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.ledger import REL_TOL
from ldpfleet.protocol.validate import (
    integer_at_least,
    positive_real,
    real_array,
    refuse_first_flagged,
)

__all__ = [
    "ReleaseParameters",
    "check_allocation_floor",
    "check_release_parameters",
    "exact_excess",
    "finite_answers",
    "finite_vector",
    "integer_at_least",
    "nonnegative_vector",
    "positive_real",
    "real_in_range",
]


def real_in_range(
    value: object,
    field: str,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a float if it is a finite real in the interval ``low .. high``
    (each end closed unless ``low_open`` / ``high_open``)."""
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    limit = f"a finite real number in {interval}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(
            f"must be a real number, got {value!r}", field=field, limit=limit, value=value
        )
    out = float(value)
    below = out <= low if low_open else out < low
    above = out >= high if high_open else out > high
    if not math.isfinite(out) or below or above:
        raise ParameterError(
            f"must be finite and in {interval}, got {value!r}",
            field=field,
            limit=limit,
            value=value,
        )
    return out


def finite_vector(values: object, field: str, length: int | None = None) -> np.ndarray:
    """``values`` as a 1-D float array of finite entries (of ``length`` entries if given)."""
    arr = real_array(values, field, copy=True, limit="a 1-D array of real numbers")
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(
            f"must be a non-empty 1-D array, got shape {arr.shape}",
            field=field,
            limit="a non-empty 1-D array (value: its shape)",
            value=arr.shape,
        )
    if length is not None and arr.size != length:
        raise ParameterError(
            f"must have {length} entries, got {arr.size}",
            field=field,
            limit=f"{length} entries (value: the count)",
            value=arr.size,
        )
    refuse_first_flagged(arr, ~np.isfinite(arr), field, rule="finite")
    return arr


def finite_answers(values: object, field: str) -> np.ndarray:
    """``values`` as a float array of finite entries: one answer (1-D, non-empty) or a
    batch of answers (2-D, ``n x d`` with n, d >= 1)."""
    arr = real_array(values, field, copy=True)  # a copy: callers keep theirs
    if arr.ndim == 1:
        return finite_vector(arr, field)
    if arr.ndim != 2 or arr.size == 0:
        raise ParameterError(
            f"must be a non-empty 1-D or 2-D array, got shape {arr.shape}",
            field=field,
            limit="a non-empty 1-D or 2-D array (value: its shape)",
            value=arr.shape,
        )
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        i, k = (int(v) for v in bad[0])
        raise ParameterError(
            f"must be finite, got {arr[i, k]!r}",
            field=f"{field}[{i}, {k}]",
            limit="finite",
            value=float(arr[i, k]),
        )
    return arr


def nonnegative_vector(values: object, field: str, length: int | None = None) -> np.ndarray:
    """``finite_vector`` whose entries are all ``>= 0``."""
    arr = finite_vector(values, field, length)
    refuse_first_flagged(arr, arr < 0.0, field, rule=">= 0")
    return arr


def unit_vector(values: object, field: str, length: int | None = None) -> np.ndarray:
    """A finite vector with every entry in [0, 1] (utility, exposure, released scores)."""
    arr = nonnegative_vector(values, field, length)
    refuse_first_flagged(arr, arr > 1.0, field, rule="in [0, 1]")
    return arr


def exact_excess(budgets: np.ndarray, eps_rel: float) -> float:
    """``sum(budgets) - eps_rel`` correctly rounded from the EXACT real sum of the floats
    (``math.fsum``), so its sign is exact: ``> 0`` iff the budgets overspend ``eps_rel``."""
    return math.fsum([*np.asarray(budgets, dtype=float).tolist(), -eps_rel])


def check_allocation_floor(eps_min: object, eps_rel: float, d: int) -> float:
    """Algorithm 3 step 1: ``0 < eps_min < eps_rel / d``."""
    floor = positive_real(eps_min, "eps_min")
    if not floor < eps_rel / d:
        raise ParameterError(
            f"must be < eps_rel / d = {eps_rel:g} / {d} = {eps_rel / d:.6g}, got {eps_min!r}",
            field="eps_min",
            limit=f"< eps_rel / d = {eps_rel / d:.6g}",
            value=eps_min,
        )
    return floor


@dataclass(frozen=True)
class ReleaseParameters:
    """A checked parameter set for one Algorithm 4 release (all arrays of length ``d``):
    certified bounds ``B_k``, scale numerators ``s_k``, budgets ``eps_k``, total ``eps_rel``."""

    bounds: np.ndarray
    scales: np.ndarray
    budgets: np.ndarray
    eps_rel: float

    @property
    def d(self) -> int:
        return int(self.bounds.size)

    @property
    def laplace_scales(self) -> np.ndarray:
        """``b_k = s_k / eps_k`` (zero for a zero-sensitivity coordinate)."""
        return self.scales / self.budgets


def check_release_parameters(
    bounds: object, scales: object, budgets: object, eps_rel: object
) -> ReleaseParameters:
    """Refuse any parameter set outside Theorem 1's conditions (see the module docstring).

    ``bounds`` are the certified ``B_k >= 0``; ``scales`` the ``s_k``; ``budgets`` the
    ``eps_k``. A coordinate with ``B_k = 0`` (constant under the adjacency) may have
    ``s_k = 0`` and is then released deterministically."""
    total = positive_real(eps_rel, "eps_rel")
    b = nonnegative_vector(bounds, "bounds")
    d = b.size
    s = finite_vector(scales, "scales", d)
    below = np.flatnonzero(s < b)
    if below.size:
        k = int(below[0])
        raise ParameterError(
            f"must be >= the certified bound bounds[{k}] = {b[k]!r} (Proposition 1), got {s[k]!r}",
            field=f"scales[{k}]",
            limit=f">= the certified bound bounds[{k}] = {float(b[k])!r}",
            value=float(s[k]),
        )
    e = finite_vector(budgets, "budgets", d)
    bad = np.flatnonzero(e <= 0.0)
    if bad.size:
        k = int(bad[0])
        raise ParameterError(
            f"must be > 0, got {e[k]!r}", field=f"budgets[{k}]", limit="> 0", value=float(e[k])
        )
    excess = exact_excess(e, total)
    if excess > total * REL_TOL:
        raise ParameterError(
            f"must sum to <= eps_rel = {total!r} (rounding tolerance {REL_TOL:g} relative); "
            f"the sum exceeds it by {excess!r}",
            field="budgets",
            limit=(
                f"a sum <= eps_rel = {total!r} (rounding tolerance {REL_TOL:g} relative; "
                "value: the excess)"
            ),
            value=excess,
        )
    for arr in (b, s, e):
        arr.setflags(write=False)
    return ReleaseParameters(bounds=b, scales=s, budgets=e, eps_rel=total)
