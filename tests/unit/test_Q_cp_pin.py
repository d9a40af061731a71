"""A pin of the selection's Clopper-Pearson bounds (``collector.audit.selection``: the whole
tables ``_cp_tables`` and the on-demand entries ``_cp_lower`` / ``_cp_upper``), written
before helper Q gives the lower and upper on-demand functions one shared core: every
entry over a grid of (k, n, level) — k = 0 and k = n included, asked in shuffled chunks
with repeats so the on-demand cache is exercised — hashed bit for bit, equal after."""

from __future__ import annotations

import hashlib

import numpy as np
from ldpfleet.collector.audit import selection

SIZES = (1, 2, 3, 7, 50, 401, 5000)
LEVELS = (0.025, 0.05 / 88 / 2, 1e-6, 0.3)
# sha256 of the entries below, before the refactor (main a4dee010)
CP_DIGEST = "4f48dd73b0e3d64288c3c34d9a11d3cae2920ca74cbc37092edcd80332ad4ce6"


def _ks(n: int) -> np.ndarray:
    """Every k for small n; for large n the ends, their neighbours and 300 drawn."""
    if n <= 401:
        return np.arange(n + 1)
    drawn = np.random.default_rng(n).integers(0, n + 1, 300)
    return np.concatenate([[0, 1, n - 1, n], drawn])


def _digest() -> str:
    h = hashlib.sha256()
    for n in SIZES:
        for level in LEVELS:
            selection._cp_filled.cache_clear()
            selection._cp_tables.cache_clear()
            lower, upper = selection._cp_tables(n, level)
            h.update(lower.tobytes() + upper.tobytes())
            ks = _ks(n)
            order = np.random.default_rng([n, 1]).permutation(ks)
            for chunk in np.array_split(order, 3):
                chunk = np.concatenate([chunk, chunk[:2]])  # asked again: read from the cache
                got_lower = selection._cp_lower(n, level, chunk)
                got_upper = selection._cp_upper(n, level, chunk)
                h.update(chunk.tobytes() + got_lower.tobytes() + got_upper.tobytes())
            h.update(selection._cp_lower(n, level, ks).tobytes())
            h.update(selection._cp_upper(n, level, ks).tobytes())
            for array in selection._cp_filled(n, level):
                h.update(array.tobytes())
    return h.hexdigest()


def test_every_bound_is_the_pinned_one():
    assert _digest() == CP_DIGEST
