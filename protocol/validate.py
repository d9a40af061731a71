"""Parameter checks shared by every module that validates at construction (the OpenDP
habit): each raises ``ParameterError`` naming the field and the limit, with ``.limit``
and ``.value`` set (the rule and the refused value, as data)."""

from __future__ import annotations

import math
import numbers

from ldpfleet.protocol.errors import ParameterError


def positive_real(value: object, field: str) -> float:
    """``value`` as a float if it is a finite real number > 0."""
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
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(
            f"must be an integer >= {minimum}, got {value!r}",
            field=field,
            limit=f"an integer >= {minimum}",
            value=value,
        )
    return int(value)
