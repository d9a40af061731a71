"""Parameter checks shared by every module that validates at construction (the OpenDP
habit): each raises ``ParameterError`` naming the field and the limit, with ``.limit``
and ``.value`` set (the rule and the refused value, as data)."""

from __future__ import annotations

import math
import numbers

import numpy as np
from ldpfleet.protocol.errors import ParameterError


def positive_real(value: object, field: str) -> float:
    """``value`` as a float if it is a finite real number > 0."""
    if type(value) is float and 0.0 < value < math.inf:  # the common case, same result
        return value
    limit = "a finite real number > 0"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(
            f"must be a real number, got {value!r}", field=field, limit=limit, value=value
        )
    out = float(value)
    if not math.isfinite(out) or out <= 0.0:
        raise ParameterError(
            f"must be finite and > 0, got {value!r}", field=field, limit=limit, value=value
        )
    return out


def integer_at_least(value: object, field: str, minimum: int) -> int:
    """``value`` as an int if it is an integer (not a bool) >= ``minimum``."""
    if type(value) is int and value >= minimum:  # the common case, same result
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(
            f"must be an integer >= {minimum}, got {value!r}",
            field=field,
            limit=f"an integer >= {minimum}",
            value=value,
        )
    return int(value)


def integer_in(value: object, field: str, low: int, high: int) -> int:
    """``value`` as an int if it is an integer (not a bool) in ``[low, high]``; the refusal
    names ``field`` and the range (``high`` with thousands separators)."""
    if type(value) is int and low <= value <= high:  # the common case, same result
        return value
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or not low <= value <= high
    ):
        raise ParameterError(
            f"must be an integer in [{low:,}, {high:,}], got {value!r}",
            field=field,
            limit=f"an integer in [{low:,}, {high:,}]",
            value=value,
        )
    return int(value)


def integer_counts(value: object, field: str) -> np.ndarray:
    """``value`` as an array (0-d for a scalar) of non-negative integer counts, its integer
    dtype kept; bools are refused. A negative entry is named by its value (the first one)."""
    counts = np.asarray(value)
    if counts.dtype == np.bool_ or not np.issubdtype(counts.dtype, np.integer):
        raise ParameterError(
            f"must be an integer count (or array of them), got {value!r}",
            field=field,
            limit="an integer count (or array of them)",
            value=value,
        )
    if np.any(counts < 0):
        flat = counts.reshape(-1)
        raise ParameterError(
            f"must be >= 0, got {value!r}",
            field=field,
            limit=">= 0 (every entry; value is the first entry below 0)",
            value=int(flat[np.argmax(flat < 0)]),
        )
    return counts


def real_array(
    values: object, field: str, *, copy: bool = False, limit: str = "an array of real numbers"
) -> np.ndarray:
    """``values`` as a float array (any shape; a copy if ``copy``, else the caller's own
    float array where it is one), or a refusal ``must be <limit>`` when they do not convert."""
    try:
        return np.array(values, dtype=float) if copy else np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(
            f"must be {limit}, got {values!r}", field=field, limit=limit, value=values
        ) from None


def finite_reals(values: object, field: str) -> np.ndarray:
    """``values`` as a flat float array of at least one entry, every one finite; the first
    non-finite entry is named by its index (``field[i]``)."""
    arr = real_array(values, field).reshape(-1)
    if arr.size == 0:
        raise ParameterError(
            "must hold at least one value", field=field, limit="at least one value", value=values
        )
    refuse_first_flagged(arr, ~np.isfinite(arr), field, rule="finite", limit="a finite real number")
    return arr


def refuse_first_flagged(
    arr: np.ndarray, flagged: np.ndarray, field: str, *, rule: str, limit: str | None = None
) -> None:
    """Refuse the first entry of the 1-D ``arr`` that ``flagged`` (a boolean mask of the
    same shape) marks: ``field[i]: must be <rule>, got <entry>``, the entry as a float its
    value and ``limit`` (``rule`` unless given) its limit."""
    hits = np.flatnonzero(flagged)
    if hits.size:
        i = int(hits[0])
        entry = float(arr[i])  # its repr is "-0.5", numpy 2's "np.float64(-0.5)"
        raise ParameterError(
            f"must be {rule}, got {entry!r}",
            field=f"{field}[{i}]",
            limit=rule if limit is None else limit,
            value=entry,
        )
