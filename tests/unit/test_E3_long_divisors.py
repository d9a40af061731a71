"""Step 2b (issue 19, helper E, round 3; docs/preregistration/E3-long-divisors.md): a smooth
cycle with a long period seen 10 times (a daily cycle sampled every 20 s over 10 days) was
answered as about three times its period at full confidence; the near divisors of the
refined winner are now tested exactly too."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave

T = 4320


def _daily_cycle(seed: int, eps0: float, cycles: int = 10) -> np.ndarray:
    """SW reports of a two-harmonic daily cycle (full range, jitter N(0, 0.02^2))."""
    rng = np.random.default_rng([606113, 31, seed])
    n = T * cycles
    u = (np.arange(n) / T + rng.random()) % 1.0
    cycle = np.sin(2 * np.pi * u) + 0.5 * np.sin(4 * np.pi * u + 6 * rng.random())
    clean = (cycle - cycle.min()) / np.ptp(cycle)
    clean = np.clip(clean + 0.02 * rng.standard_normal(n), 0.0, 1.0)
    return SquareWave(eps0).perturb(clean, rng)


@pytest.mark.parametrize(("seed", "eps0"), [(0, 5.0), (1, 2.0)])
def test_a_long_daily_cycle_is_answered_near_its_period_not_a_multiple(seed, eps0):
    reports = _daily_cycle(seed, eps0)
    est = P.detect_period(reports)
    # T^2 / n = 432 samples is the fundamental's resolution; the fault answered ~3 T
    assert est.period is not None and abs(est.period - T) <= 3, est.period


def test_without_step_2b_the_same_stream_is_answered_as_a_multiple(monkeypatch):
    """The fault the step mends (so the test above can fail): switched off, ~3 T."""
    reports = _daily_cycle(0, 5.0)
    monkeypatch.setattr(P, "DIVISOR_CANDIDATES", 0)
    est = P.detect_period(reports)
    assert est.period is not None and abs(est.period - 3 * T) <= 60, est.period


def test_an_abstention_is_not_turned_into_a_claim():
    """Step 2b runs only on a winner that passes step 4's gate: white SW noise of the same
    length abstains with or without it (same candidate too)."""
    rng = np.random.default_rng([606113, 32])
    reports = SquareWave(1.0).perturb(rng.random(43_200), rng)
    assert P.detect_period(reports).period is None
