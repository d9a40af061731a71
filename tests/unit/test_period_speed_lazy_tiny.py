"""The lazy screening's bound below the 1e-300 switch of ``_log_sf`` (issue 19, helper A):
strongly periodic streams no longer evaluate every F tail, and nothing changes."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import period
from ldpfleet.protocol.sw import SquareWave


def _strong_stream(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(10_000)
    clean = np.where(t % 1000 < 300, 0.9, 0.1)
    return np.asarray(SquareWave(5.0).perturb(clean, rng), dtype=float)


def _stats(y: np.ndarray):
    xw, _ = period._whiten(period._detrend(period._scale_free(y)))
    periods = np.arange(3, y.size // 3 + 1)
    return period._screen_sums(xw, periods), (y.size // 2) / 3.0 - 3.0


def test_strong_stream_screens_lazily_with_the_full_values():
    stats, dfd = _stats(_strong_stream(1))
    full = period._screen_logp(stats, dfd)
    assert full.min() < period.LAZY_TINY  # the case main evaluated in full
    lazy, exact = period._screen_lazy(stats, dfd)
    assert exact is not None and 0 < exact.sum() < exact.size
    assert np.array_equal(lazy[exact], full[exact])
    # every left-out row ranks after every evaluated one
    assert full[~exact].min(axis=1).min() > full[exact].min(axis=1).max()


@pytest.mark.parametrize("seed", [1, 2])
def test_strong_stream_same_estimate_as_full_screening(seed, monkeypatch):
    y = _strong_stream(seed)
    monkeypatch.setattr(period, "LAZY_TOP", 10**9)
    full = period.detect_period(y)
    monkeypatch.setattr(period, "LAZY_TOP", 128)
    lazy = period.detect_period(y)
    assert dataclass_fields(lazy) == dataclass_fields(full)


def dataclass_fields(estimate) -> tuple:
    return tuple(getattr(estimate, f) for f in estimate.__dataclass_fields__)


@pytest.mark.parametrize("level", [1.0, 4.0, 16.0, 32.0, 700.0])
@pytest.mark.parametrize("dfd", [20.0, 100.0, 500.0, 1664.0])
def test_column_bound_holds_across_the_switch(level, dfd):
    # sums on both sides of the 1e-300 switch, finely through fdtrc's inaccurate band
    # (at 16-32 harmonics and 200-1,000 denominator degrees of freedom fdtrc falls below its
    # own leading term there): every smaller sum's log tail is >= the bound that the
    # largest sums give (the property _screen_lazy relies on)
    coarse = np.geomspace(level * 1.5, level * 1e20, 4000)
    logp = period._log_sf(coarse, np.full(coarse.size, level), dfd)
    band = np.flatnonzero((logp > -900.0) & (logp < -500.0))
    low, high = coarse[max(band[0] - 1, 0)], coarse[min(band[-1] + 1, coarse.size - 1)]
    grid = np.concatenate((coarse, np.linspace(low, high, 20_000)))
    grid.sort()
    logp = period._log_sf(grid, np.full(grid.size, level), dfd)
    assert logp.min() < np.log(1e-300) < logp.max()  # the switch lies inside the grid
    lowest = np.minimum.accumulate(logp)
    proven = 0
    for cut in range(100, grid.size, 37):
        bound = period._column_bound(grid[cut:], logp[cut:], level, dfd)
        proven += bool(np.isfinite(bound))
        assert lowest[cut] >= bound - 1e-9 * (1.0 + abs(bound))
    assert proven > 100
