"""Square Wave's stated ``variance(x)`` at large budgets (helper U2, a user's day).

``ldpfleet bench mechanisms --mechanisms sw --eps 40`` exited 2 blaming the built-in:
"'sw' variance answered -7.56e-14 for input 2 ...: it must be a finite value >= 0". The
variance was computed from moments about 0, ``E[y^2] - E[y]^2`` with ``w1^3 - w0^3`` for a
window of width 2 GRID near 1: a difference of two cubes of size 1 whose rounding (1e-16,
times the window's density 2^19) swamps the true variance (~2e-13). Moments about the
window's centre are exact there."""

from fractions import Fraction as F

import numpy as np
import pytest
from ldpfleet.app.bench_mechanisms import bench_mechanisms
from ldpfleet.protocol.sw import GRID, SquareWave

INPUTS = (0.0, 0.001, 0.3, 0.5, 0.97, 1.0)


def _exact(mech: SquareWave, v: float) -> float:
    """The variance of one report's estimate in exact rationals (every parameter is a
    double, read exactly): density q on [low, high] plus (p - q) on [w0, w0 + 2b], minus
    GRID^2 / 12 (cell midpoints), over the estimate's scale (2 b (p - q))^2."""
    w0 = F(float(mech._window_start(np.array([round(v / GRID) * GRID]))[0])) + F(mech.output_low)
    w1, low, high = w0 + 2 * F(mech.b), F(mech.output_low), F(mech.output_high)
    q, gap = F(mech.q), F(mech.gap)

    def moment(k: int) -> F:
        return (q * (high ** (k + 1) - low ** (k + 1)) + gap * (w1 ** (k + 1) - w0 ** (k + 1))) / (
            k + 1
        )

    # the law's mass q (high - low) + 2 b gap is 1 only up to the rounding of the doubles
    # q and gap (1 - 1.1e-16 at eps 50): moments about 0 of an unnormalised law are off by
    # (1 - mass) E[y]^2, 1e-16, which is 5e-4 of the variance there (review R5)
    mass = q * (high - low) + gap * (w1 - w0)
    spread = moment(2) / mass - (moment(1) / mass) ** 2 - F(GRID) ** 2 / 12
    return float(spread / (2 * F(mech.b) * gap) ** 2)


def _about_zero(mech: SquareWave, v: float) -> float:
    """The former float computation (moments about 0)."""
    w0 = float(mech._window_start(np.array([round(v / GRID) * GRID]))[0]) + mech.output_low
    w1, low, high = w0 + 2.0 * mech.b, mech.output_low, mech.output_high

    def moment(k: int) -> float:
        outside = mech.q * (high ** (k + 1) - low ** (k + 1))
        return (outside + mech.gap * (w1 ** (k + 1) - w0 ** (k + 1))) / (k + 1)

    return (moment(2) - moment(1) ** 2 - GRID**2 / 12.0) / (2.0 * mech.b * mech.gap) ** 2


@pytest.mark.parametrize("variant", ["sw", "sw01"])
@pytest.mark.parametrize("eps", [0.01, 0.5, 2.0, 5.0, 10.0, 20.0, 25.0, 30.0, 40.0, 50.0])
def test_the_variance_is_the_exact_one_at_every_budget(variant, eps):
    mech = SquareWave(eps, variant)
    assert np.all(mech.variance(np.linspace(0.0, 1.0, 1001)) > 0.0)
    for v in INPUTS:
        got = float(mech.variance(np.array([v]))[0])
        # abs=0: pytest.approx's default abs=1e-12 exceeds every variance at eps >= 20
        # (~2e-13), where the relative test alone says anything (review R5)
        assert got == pytest.approx(_exact(mech, v), rel=1e-9, abs=0.0), v


@pytest.mark.parametrize("variant", ["sw", "sw01"])
@pytest.mark.parametrize("eps", [0.01, 0.5, 2.0, 5.0])
def test_ordinary_budgets_keep_their_figures(variant, eps):
    # the bench's analytic column (docs/mechanisms.md, eps 0.5-4, 3 digits) cannot move:
    # the two computations agree to 1e-12 there (measured 2e-14 at eps 5)
    mech = SquareWave(eps, variant)
    for v in INPUTS:
        assert float(mech.variance(np.array([v]))[0]) == pytest.approx(
            _about_zero(mech, v), rel=1e-12
        )


def test_bench_mechanisms_runs_sw_at_the_largest_budgets():
    result = bench_mechanisms(
        mechanisms=("sw", "sw01"), eps_list=(40.0, 50.0), sizes=(100,),
        distributions=("uniform",), trials=2,
    )  # fmt: skip
    assert all(r["analytic_mse"] > 0.0 for r in result["rows"])
