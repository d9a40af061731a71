"""The selection's Clopper-Pearson bounds are computed on demand (helper A, 2026-12-07
evening, claim A6): ``_cp_lower`` / ``_cp_upper`` fill the entries of ``_cp_tables(n,
level)`` a selection reads and no others. ``beta.ppf`` works element by element, so every
entry is the table's, bit for bit, whatever order and chunks it is asked in; and
``select_test`` picks the same test as with the whole tables (``_frozen_bounds``, the code
before). ``gau-dp`` selects on 500,000 runs a world: the whole table was ~3 s of CPU in
each worker process of ``audit all``; a selection now computes a few thousand entries."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.audit import selection
from ldpfleet.collector.audit.selection import select_test

LEVEL = 0.05 / 88 / 2  # audit all's per-audit gamma, halved as _bounds does


def _frozen_bounds(k_num, n_num, k_den, n_den, gamma: float, delta: float) -> np.ndarray:
    level = gamma / 2.0
    lo = selection._cp_tables(int(n_num), level)[0][k_num]
    hi = selection._cp_tables(int(n_den), level)[1][k_den]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lo > delta, np.log((lo - delta) / hi), -np.inf)


@pytest.mark.parametrize("n", [1, 2, 100, 1000, 3000, 20000])
def test_entries_on_demand_are_the_table_bit_for_bit(n):
    selection._cp_filled.cache_clear()
    lower, upper = selection._cp_tables(n, LEVEL)
    order = np.random.default_rng(n).permutation(n + 1)
    for chunk in np.array_split(order, 5):
        chunk = np.concatenate([chunk, chunk[:3]])  # repeats, asked again
        assert np.array_equal(selection._cp_lower(n, LEVEL, chunk), lower[chunk])
        assert np.array_equal(selection._cp_upper(n, LEVEL, chunk), upper[chunk])
    filled_lower, filled_upper, known_lower, known_upper = selection._cp_filled(n, LEVEL)
    assert known_lower.all() and known_upper.all()
    assert np.array_equal(filled_lower, lower) and np.array_equal(filled_upper, upper)


def test_a_large_selection_computes_few_entries_and_the_same_ones():
    n = 200_000  # gau-dp selects on 500,000 a world
    selection._cp_filled.cache_clear()
    rng = np.random.default_rng(7)
    a = rng.normal(0.0, 1.0, n)
    b = rng.normal(0.05, 1.0, n)
    got = select_test(a, b, gamma=2 * LEVEL)
    _, _, known_lower, known_upper = selection._cp_filled(n, LEVEL)
    assert 0 < known_lower.sum() < n // 20 and 0 < known_upper.sum() < n // 20
    lower, upper = selection._cp_tables(n, LEVEL)
    filled_lower, filled_upper = selection._cp_filled(n, LEVEL)[:2]
    assert np.array_equal(filled_lower[known_lower], lower[known_lower])
    assert np.array_equal(filled_upper[known_upper], upper[known_upper])
    assert got.selection_eps > 0


@pytest.mark.parametrize("seed", range(6))
def test_select_test_is_the_frozen_one(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([50, 400, 3000]))
    a = np.round(rng.normal(0.0, 1.0, n), int(rng.integers(0, 3)))
    b = np.round(rng.normal(0.3, 1.0, n), int(rng.integers(0, 3)))
    for delta in (0.0, 1e-5):
        selection._cp_filled.cache_clear()
        got = select_test(a, b, gamma=0.01, delta=delta)
        with monkeypatch.context() as m:
            m.setattr(selection, "_bounds", _frozen_bounds)
            want = select_test(a, b, gamma=0.01, delta=delta)
        assert got == want
