"""The Hybrid Mechanism's exact sampler: an exact coin ``P(PM) = alpha = 1 - exp(-eps/2)``
and two exact branches (PM's grid midpoints, Duchi's +-C).

Statistical thresholds: a count ``X ~ Binomial(n, p)`` is compared with ``n p`` in units of
``sqrt(n p (1 - p))`` at ``|z| <= 5.1`` (two-sided ``3.4e-7`` by the normal approximation,
``n p (1 - p) >= 2e4`` in every case), at most 3 comparisons per test: a false-failure rate
near 1e-6 (fixed seeds).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.protocol.hybrid import EPS_STAR, HybridMechanism

Z = 5.1


def _branches(mech: HybridMechanism, y: np.ndarray) -> np.ndarray:
    """True where a report is PM's (a grid midpoint of PM's range), False where it is
    Duchi's +-C; asserts every report is one of the two."""
    duchi = np.abs(y) == mech.duchi.bound
    pm = mech.piecewise
    position = (y - pm.output_low) / pm.cell - 0.5
    midpoint = position == np.rint(position)
    assert np.all(duchi | midpoint), "a report is neither +-C_Duchi nor a PM midpoint"
    assert not np.any(duchi & midpoint)
    return ~duchi


@pytest.mark.parametrize("eps", [1.0, 3.0])
def test_every_report_is_a_midpoint_or_plus_minus_c(eps):
    """Fails on the former sampler, whose PM branch reported l(t) + (u - q(l + C)) / p in
    doubles (off the grid, carrying the input's low bits)."""
    mech = HybridMechanism(eps)
    x = np.full(5000, 0.3)
    y = mech.perturb(x, np.random.default_rng(8))
    assert np.array_equal(y, mech.perturb(np.nextafter(x, 1.0), np.random.default_rng(8)))
    _branches(mech, y)


@pytest.mark.parametrize("eps", [0.7, 1.0, 4.0])
def test_the_coin_is_exactly_alpha(eps):
    mech = HybridMechanism(eps)
    n = 400_000
    y = mech.perturb(np.full(n, 0.6), np.random.default_rng(31))
    pm = int(_branches(mech, y).sum())
    alpha = -math.expm1(-eps / 2)
    assert mech.alpha == alpha
    assert abs(pm - n * alpha) <= Z * math.sqrt(n * alpha * (1 - alpha))


def test_below_eps_star_every_report_is_duchis():
    mech = HybridMechanism(0.5)
    assert EPS_STAR > 0.5 and mech.alpha == 0.0
    y = mech.perturb(np.random.default_rng(0).random(20_000), np.random.default_rng(1))
    assert not _branches(mech, y).any()


def test_scalar_and_empty_inputs_keep_their_shapes():
    mech = HybridMechanism(2.0)
    assert np.shape(mech.perturb(0.25, np.random.default_rng(0))) == ()
    assert mech.perturb(np.zeros(0), np.random.default_rng(0)).shape == (0,)
    assert mech.perturb(np.zeros((2, 3)), np.random.default_rng(0)).shape == (2, 3)


def test_each_report_is_estimated_by_its_branch():
    """Duchi's +-C by (y + 1) / 2, PM's midpoints by PM's grid estimate (slope gain)."""
    mech = HybridMechanism(2.0)
    y = mech.perturb(np.full(2000, 0.8), np.random.default_rng(2))
    pm = _branches(mech, y)
    est = mech.estimate(y)
    np.testing.assert_array_equal(est[~pm], (y[~pm] + 1.0) / 2.0)
    np.testing.assert_array_equal(est[pm], mech.piecewise.estimate(y[pm]))
    assert mech.piecewise.gain != 1.0  # so the two differ


@pytest.mark.parametrize("eps", [31.9, 32.0])
def test_duchis_reports_are_in_the_hybrids_domain_where_pm_rounds_to_one(eps):
    """Above eps ~ 31.9 PM's grid bound rounds to 1.0 (C_PM - 1 < half a cell) while the
    double C_Duchi is still above 1 (up to eps ~ 38.1): ``in_domain`` and ``output_high``,
    PM's range only, refused the Duchi branch's honest reports (``estimate_mean`` raised
    on them). Deterministic: Duchi's branch drawn directly."""
    mech = HybridMechanism(eps)
    assert mech.piecewise.bound == 1.0 < mech.duchi.bound
    y = mech.duchi.perturb(np.linspace(0.0, 1.0, 101), np.random.default_rng(3))
    assert mech.in_domain(y).all()
    assert mech.output_low <= y.min() and y.max() <= mech.output_high
    assert math.isfinite(mech.estimate_mean(y))  # raised: "not an output of the mechanism"
    assert not mech.in_domain(np.array([mech.duchi.bound * (1 + 1e-9)]))[0]
