"""Step 12 of ``detect_period`` (helper L, docs/preregistration/L-level-shift.md): a claim
that a level-shift model explains is withdrawn; a cycle with a level shift keeps its claim."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import period as P
from ldpfleet.collector.period_levelshift import fold_ss, shift_residual, step_fit
from scipy import stats


@pytest.mark.parametrize("n", [300, 500, 1000, 2000])
def test_middle_step_is_not_a_period(n):
    """Helper U4's stream: claimed as n / 4 before step 12."""
    x = np.r_[np.zeros(n // 2), np.ones(n - n // 2)]
    est = P.detect_period(x)
    assert est.period is None
    assert est.confidence == 0.0


@pytest.mark.parametrize("n", [300, 1000])
@pytest.mark.parametrize(
    ("a", "b", "h2"), [(1 / 3, 2 / 3, 0.5), (0.25, 0.75, 1.0), (0.2, 0.6, 0.25)]
)
def test_two_shifts_are_not_a_period(n, a, b, h2):
    """Noise-free staircases: claimed as n / 3, n / 4, n / 5 before step 12."""
    t = np.arange(n)
    x = 0.5 * (t >= int(a * n)) + h2 * (t >= int(b * n))
    assert P.detect_period(x).period is None


@pytest.mark.parametrize("n", [300, 1000])
def test_ramp_then_flat_is_not_a_period(n):
    """A ramp to the middle, then flat (claimed as 71 of 300, 117 of 1,000 before step 12;
    the step model alone kept them: the hinge fit removes them)."""
    t = np.arange(n)
    assert P.detect_period(np.minimum(t, n // 2) / (n // 2)).period is None


def test_noisy_middle_steps_claim_at_most_the_false_claim_rate():
    """A unit middle step plus Gaussian noise sd 0.05, n = 1,000, seeds 0-99 (fixed). Under
    claim C3's rate of at most 1 % per stream the claims are Binomial(100, 0.01) at worst;
    the bound is the smallest k with P(X > k) <= 1e-6 (binom.isf), so a detector that keeps
    C3 fails this test with probability below 1e-6. Without step 12 the noisy middle steps
    were claimed as n / 4 (U4: 4 of 30 seeds)."""
    bound = int(stats.binom.isf(1e-6, 100, 0.01))
    claims = 0
    for seed in range(100):
        rng = np.random.default_rng([7321, seed])
        x = np.r_[np.zeros(500), np.ones(500)] + rng.normal(0.0, 0.05, 1000)
        claims += P.detect_period(x).period is not None
    assert claims <= bound


@pytest.mark.parametrize("period", [25, 37, 144])
def test_a_cycle_with_a_level_shift_keeps_its_period(period):
    """A square wave of amplitude 1 with a shift of 2 at 40 %: the step explains more than the
    fold, the rerun on the residual finds the cycle, and the claim stands."""
    n = period * 12
    t = np.arange(n)
    x = (t % period < period / 2).astype(float) + 2.0 * (t >= 0.4 * n)
    assert shift_residual(x, period) is not None  # the rerun is exercised
    assert P.detect_period(x).period == period


def test_step_fit_finds_the_changepoints_and_fold_ss_sees_none():
    t = np.arange(600)
    x = 1.0 * (t >= 200) - 0.5 * (t >= 450)
    fit = step_fit(x)
    assert np.allclose(fit, x)
    assert fold_ss(np.r_[np.zeros(500), np.ones(500)], 250) == pytest.approx(0.0, abs=1e-9)
