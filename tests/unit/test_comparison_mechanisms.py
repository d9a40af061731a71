"""The comparison stream mechanisms (Duchi et al.; PM and HM of Wang et al., ICDE 2019):
unbiased, outputs in domain, analytic variance, the audit passes at the claim, and the same
mechanism built with 2 eps inside is caught."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.collector.audit.battery import BATTERY, FUNCTION_LEVEL, run_audit
from ldpfleet.protocol.duchi import DuchiMechanism
from ldpfleet.protocol.hybrid import EPS_STAR, HybridMechanism
from ldpfleet.protocol.mechanisms import stream_mechanism
from ldpfleet.protocol.piecewise import PiecewiseMechanism

from tests.unit.audit_mutants import MUTANTS

NAMES = ("duchi", "piecewise", "hybrid")
EPSILONS = (0.3, 1.0, 4.0)
N = 200_000
# Unbiasedness threshold. The mean of N independent per-report estimates has standard error
# sigma / sqrt(N), with sigma^2 <= the mechanism's worst-case variance over the inputs (its
# analytic ``variance`` at x = 0 or 1, checked against the sample variance below). By the
# CLT, P(|mean - x| > Z sigma / sqrt(N)) = 2 (1 - Phi(Z)); Z = 4.9 gives 9.6e-7, i.e. a
# false-failure rate of about 1e-6 per check (the seeds are fixed, so the outcome is too).
Z = 4.9


def _worst_sd(mech) -> float:
    return math.sqrt(float(np.max(mech.variance(np.array([0.0, 0.5, 1.0])))))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("v", [0.0, 0.25, 1.0])
def test_estimate_mean_is_unbiased(name, eps, v):
    mech = stream_mechanism(name, eps)
    y = mech.perturb(np.full(N, v), np.random.default_rng(11))
    assert abs(mech.estimate_mean(y) - v) <= Z * _worst_sd(mech) / math.sqrt(N)


@pytest.mark.parametrize("name", NAMES)
def test_unbiased_for_a_skewed_population(name):
    rng = np.random.default_rng(5)
    x = rng.beta(0.5, 3.0, N)
    mech = stream_mechanism(name, 1.0)
    assert abs(mech.estimate_mean(mech.perturb(x, rng)) - x.mean()) <= Z * _worst_sd(
        mech
    ) / math.sqrt(N)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", EPSILONS)
def test_analytic_variance_matches_the_sample(name, eps):
    # the sample variance of N draws has relative sd about sqrt(2 / N) ~ 0.3% (for the
    # two-point Duchi law sqrt((kurtosis - 1) / N) < 1%): 5% is > 5 sd
    mech = stream_mechanism(name, eps)
    for v in (0.0, 0.7):
        est = mech.estimate(mech.perturb(np.full(N, v), np.random.default_rng(2)))
        assert np.var(est) == pytest.approx(float(mech.variance(np.array([v]))[0]), rel=0.05)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", (0.01, 0.5, 1.0, 8.0, 50.0))
def test_outputs_finite_and_in_domain(name, eps):
    mech = stream_mechanism(name, eps)
    x = np.random.default_rng(0).random(20_000)
    x[:2] = 0.0, 1.0
    y = mech.perturb(x, np.random.default_rng(1))
    assert y.shape == x.shape and np.all(np.isfinite(y)) and np.all(mech.in_domain(y))
    assert np.all((y >= mech.output_low) & (y <= mech.output_high))
    assert not mech.in_domain(np.array([mech.output_high * 1.01 + 1e-9]))[0]


def test_the_closed_forms():
    d = DuchiMechanism(1.0)
    assert d.bound == pytest.approx((math.e + 1) / (math.e - 1))
    assert d.prob_high(np.array([1.0]))[0] == pytest.approx(math.e / (math.e + 1))
    pm = PiecewiseMechanism(2.0)
    e2 = math.e
    assert pm.bound == pytest.approx((e2 + 1) / (e2 - 1))
    assert pm.p / pm.q == pytest.approx(math.exp(2.0))
    left, right = pm.centre(np.array([1.0]))
    assert (left[0], right[0]) == pytest.approx((1.0, pm.bound))
    # total mass 1: p (C - 1) + q (C + 1)
    assert pm.p * (pm.bound - 1) + pm.q * (pm.bound + 1) == pytest.approx(1.0)
    assert abs(EPS_STAR - 0.61) < 0.005
    assert HybridMechanism(0.5).alpha == 0.0
    assert HybridMechanism(2.0).alpha == pytest.approx(1 - math.exp(-1.0))


def test_pm_density_ratio_is_e_eps():
    pm = PiecewiseMechanism(1.5)
    y = np.linspace(-pm.bound, pm.bound, 1001)
    ratio = pm.density(y, 0.0) / pm.density(y, 1.0)
    assert np.max(ratio) == pytest.approx(math.exp(1.5)) and np.min(ratio) == pytest.approx(
        math.exp(-1.5)
    )


def test_same_seed_same_reports():
    for name in NAMES:
        mech = stream_mechanism(name, 1.0)
        a = mech.perturb(np.full(50, 0.3), np.random.default_rng(9))
        b = mech.perturb(np.full(50, 0.3), np.random.default_rng(9))
        assert np.array_equal(a, b)


def test_in_the_battery_at_function_level():
    assert set(NAMES) <= set(FUNCTION_LEVEL) <= set(BATTERY)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", (0.5, 1.0, 2.0))
def test_the_audit_passes_at_the_claimed_eps(name, eps):
    result = run_audit(name, eps, trials=4000, gamma=0.05, seed=1)
    assert result.verdict == "inconclusive", result
    assert result.eps_lb <= eps


@pytest.mark.parametrize("name", [m for m in MUTANTS if "built with 2 eps" in m])
def test_built_with_double_eps_is_a_violation(name, monkeypatch):
    apply, mechanism, eps, trials = MUTANTS[name]
    apply(monkeypatch)
    assert stream_mechanism(mechanism, eps).eps == eps  # it still claims eps
    broken = run_audit(mechanism, eps, trials=trials, gamma=0.05, seed=3)
    assert broken.verdict == "violation" and broken.eps_lb > eps, broken
