"""`` (did you mean 'occupancy'?)``: the nearest known name for a misspelt one."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def near_miss(name: object, known: Iterable[str], cutoff: float = 0.6) -> str:
    """`` (did you mean 'laplace'?)`` for a name close to a known one, else ''."""
    text = str(name)
    close = difflib.get_close_matches(text, [str(k) for k in known], n=1, cutoff=cutoff)
    return f" (did you mean {close[0]!r}?)" if close and close[0] != text else ""
