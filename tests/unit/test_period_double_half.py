"""Step 3a of ``detect_period`` (issue 19, helper K; docs/cpr.md, "Doubled periods: a common
scale in step 2", fourth version): an odd period ``q`` moves to the better of its two near
halves ``(q -+ 1) / 2`` when that half's whitened level p-value is at least as good and the
harmonics of ``q`` off the even ones are not significant.

The streams are helper G's (docs/cpr.md, "A doubled period at 8 cycles"): a sine of period
144 in 8 cycles, SW at eps0 = 2, ``rng = default_rng(seed)``, phase ``rng.random()``. Before
step 3a the detector answered 287 (seed 184) and 289 (seed 199)."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave


def _g_stream(seed: int, period: int = 144, cycles: int = 8, eps0: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = period * cycles
    clean = 0.5 + 0.5 * np.sin(2 * np.pi * (np.arange(n) / period + rng.random()))
    return SquareWave(eps0).perturb(clean, rng)


@pytest.mark.parametrize("seed", [184, 199])
def test_sine_at_eight_cycles_answers_its_period_not_twice_it(seed):
    assert P.detect_period(_g_stream(seed)).period == 144


def test_an_odd_period_whose_halves_differ_is_kept():
    """Period 121 in 4 cycles, dominated by its harmonic 2 (period 60.5) with a weak harmonic
    1: the near half 60 scores as well on the level statistic (without the odd-harmonic
    condition step 3a answers 60 here), but harmonic 1 of 121 is significant, so 121
    stays."""
    rng = np.random.default_rng(5)
    n, period = 121 * 4, 121
    t = np.arange(n)
    clean = 0.5 + 0.3 * np.sin(4 * np.pi * t / period) + 0.06 * np.sin(2 * np.pi * t / period)
    reports = SquareWave(5.0).perturb(clean, rng)
    assert P.detect_period(reports).period == period
