"""The lazy screening of detect_period (``_screen_lazy``) changes no result."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import period
from ldpfleet.protocol.sw import SquareWave


def _stream(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    if kind == "sine":
        clean = 0.5 + 0.3 * np.sin(2 * np.pi * t / 37)
    elif kind == "square":
        clean = np.where(t % 250 < 125, 0.8, 0.2)
    elif kind == "walk":
        walk = np.cumsum(rng.standard_normal(n))
        clean = (walk - walk.min()) / np.ptp(walk)
    else:
        clean = np.clip(0.5 + 0.2 * rng.standard_normal(n), 0.0, 1.0)
    return np.asarray(SquareWave(1.0).perturb(clean, rng), dtype=float)


def _same(a, b) -> bool:
    return (a.period, a.confidence, a.log_p, a.candidate, a.harmonics) == (
        b.period,
        b.confidence,
        b.log_p,
        b.candidate,
        b.harmonics,
    )


@pytest.mark.parametrize("kind", ["sine", "square", "walk", "white"])
@pytest.mark.parametrize("top", [2, 16, 128])
def test_lazy_screening_gives_the_full_screening_result(kind, top, monkeypatch):
    # top = 2 and 16 make the ranking run past the evaluated rows (the fallback path)
    y = _stream(kind, 4000, 3)
    monkeypatch.setattr(period, "LAZY_TOP", 10**9)
    full = period.detect_period(y)
    monkeypatch.setattr(period, "LAZY_TOP", top)
    assert _same(period.detect_period(y), full)


def test_lazy_rows_hold_the_full_values():
    y = _stream("sine", 4000, 4)
    xd = period._detrend(y)
    xw, _ = period._whiten(xd)
    periods = np.arange(3, y.size // 3 + 1)
    stats = period._screen_sums(xw, periods)
    dfd = (y.size // 2) / 3.0 - 3.0
    full = period._screen_logp(stats, dfd)
    lazy, exact = period._screen_lazy(stats, dfd)
    assert exact is not None and 0 < exact.sum() < exact.size
    assert np.array_equal(lazy[exact], full[exact])
    # every left-out row ranks after every evaluated one
    assert full[~exact].min(axis=1).min() > full[exact].min(axis=1).max()
