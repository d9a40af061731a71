"""Step 2b of ``detect_period`` (issue 19, helper K; docs/cpr.md, "Doubled periods: a common
scale in step 2"): a refined candidate ``c`` with ``|q - 2 c| <= 2`` replaces the exact-test
winner ``q`` when its whitened level p-value is at least as good.

The streams are helper G's (docs/cpr.md, "A doubled period at 8 cycles"): a sine of period
144 in 8 cycles, SW at eps0 = 2, ``rng = default_rng(seed)``, phase ``rng.random()``. Main
before step 2b answered 287 (seed 184) and 289 (seed 199)."""

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


def test_half_of_takes_the_half_only_when_its_level_p_value_is_as_good():
    reports = _g_stream(184)
    search = P._Search(reports, P._detrend(reports), 3, reports.size // 3, 0.01)
    level = {q: P._level_logp(search.power(q), search.dfd)[0] for q in (144, 287)}
    assert level[144] < level[287]  # the common scale prefers 144
    refined = [(-161.7, 287, 2), (-161.5, 144, 1), (-5.0, 355, 1)]
    assert search.half_of(refined[0], refined) == refined[1]
    # a candidate outside the window (|q - 2 c| > DOUBLE_WINDOW) is not a half
    assert search.half_of((-161.7, 291, 2), [(-161.7, 291, 2), (-161.5, 144, 1)])[1] == 291
    # the half must be at least as good on the level statistic
    assert search.half_of((-161.5, 144, 1), [(-161.5, 144, 1), (-100.0, 72, 1)])[1] == 144


def test_a_cycle_whose_halves_differ_keeps_its_doubled_period():
    """A period-120 cycle dominated by its harmonic 2 but with a significant harmonic 1:
    step 2b may hand the claim to 60, and step 3's multiple test must bring it back."""
    rng = np.random.default_rng(5)
    n, period = 960, 120
    t = np.arange(n)
    clean = 0.5 + 0.3 * np.sin(4 * np.pi * t / period) + 0.12 * np.sin(2 * np.pi * t / period)
    reports = SquareWave(5.0).perturb(clean, rng)
    assert P.detect_period(reports).period == period
