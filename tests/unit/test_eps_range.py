"""The range of a per-report budget for the built-in mechanisms (held-out QA, helper S).

Square Wave at eps0 below ~1.1e-16 had p == q (e^eps rounds to 1): every estimate was
NaN and the refusal, where there was one, named ``estimate_mean`` instead of the budget;
PM at 1e-300 divided by zero in ``variance``, Duchi overflowed (``OverflowError``), Laplace's
``variance`` was infinite below ~1e-10, and Laplace/Duchi/PM/HM scenarios at
``eps = 1e-290`` were accepted. Every built-in now refuses eps below ``EPS_MIN`` with a
``ParameterError`` naming ``eps``, the smallest budget that works and the value, at every
entry point (constructor, ``get_mechanism``, scenario, audit, ``bench cpr``); at
``EPS_MIN`` and ``EPS_MAX`` every method answers finite numbers, and the estimators keep
their scale exact (``p - q`` from ``expm1``, not from two rounded densities).
"""

from __future__ import annotations

import warnings
from decimal import Decimal, getcontext

import numpy as np
import pytest
from ldpfleet.protocol.duchi import DuchiMechanism
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.hybrid import HybridMechanism
from ldpfleet.protocol.laplace import LaplaceMechanism
from ldpfleet.protocol.mechanism_contract import EPS_MAX, EPS_MIN
from ldpfleet.protocol.piecewise import PiecewiseMechanism
from ldpfleet.protocol.rr import WarnerRR
from ldpfleet.protocol.sw import SquareWave
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

BUILDERS = {
    "sw": SquareWave,
    "sw01": lambda eps: SquareWave(eps, "sw01"),
    "laplace": LaplaceMechanism,
    "duchi": DuchiMechanism,
    "piecewise": PiecewiseMechanism,
    "hybrid": HybridMechanism,
}
TOO_SMALL = (1e-300, 1e-100, 1e-20, 1e-16, 9.99e-13, 5e-324)


def _names_the_floor(message: str, value: float) -> None:
    assert "eps" in message and f"{EPS_MIN:g}" in message and repr(value) in message, message


def test_the_floor():
    assert EPS_MIN == 1e-12 and EPS_MAX == 50.0


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("eps", TOO_SMALL)
def test_constructors_refuse_a_budget_below_the_floor(name, eps):
    with pytest.raises(ParameterError) as caught:
        BUILDERS[name](eps)
    assert caught.value.field == "eps"
    _names_the_floor(str(caught.value), eps)


@pytest.mark.parametrize("eps", TOO_SMALL)
def test_warner_rr_refuses_a_budget_below_the_floor(eps):
    with pytest.raises(ParameterError) as caught:
        WarnerRR(eps)
    _names_the_floor(str(caught.value), eps)


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("eps", [EPS_MIN, 1e-8, 32.0, 49.99, EPS_MAX])
def test_every_method_is_finite_at_the_ends_of_the_range(name, eps):
    mech = BUILDERS[name](eps)
    x = np.linspace(0.0, 1.0, 257)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = mech.perturb(x, np.random.default_rng(0))
        ends = np.array([mech.output_low, mech.output_high])
        values = [y, mech.estimate(y), mech.estimate(ends), mech.variance(x)]
        values.append([mech.estimate_mean(y)])
        if hasattr(mech, "density"):  # Duchi's outputs are two atoms: no density
            values.append(mech.density(y, 0.3))
    for value in values:
        assert np.all(np.isfinite(value)), (name, eps, value)
    assert mech.in_domain(y).all()


def _exact_gap(eps: float, variant: str) -> float:
    """p - q of Square Wave with 60-digit decimals (b from the reference formula, rounded to
    the mechanism's grid of 2**-20 cells as protocol/sw.py does)."""
    getcontext().prec = 60
    x = Decimal(repr(eps))
    e = x.exp()
    b = (x * e - e + 1) / (2 * e * (e - 1 - x))
    b = Decimal(min(max(1, round(float(b) * 2**20)), 2**19 - 1)) / 2**20  # on SW's grid
    q = 1 / (2 * b * e + 1) if variant == "sw" else 1 / (1 + 2 * b * (e - 1))
    return float(q * (e - 1)), float(b)


@pytest.mark.parametrize("variant", ["sw", "sw01"])
@pytest.mark.parametrize("eps", [EPS_MIN, 1e-10, 1e-7])
def test_square_wave_estimates_keep_their_scale_at_tiny_budgets(variant, eps):
    """The estimate divides by 2b(p - q); p and q are ~1/2 in float64, so their difference
    lost ~1.1e-16 / eps of its relative precision (measured 1.1e-4 at 1e-12: every
    estimate was off by that factor). From expm1 it is exact to rounding."""
    mech = SquareWave(eps, variant)
    gap, b = _exact_gap(eps, variant)
    centre = mech.estimate(np.array([0.0]))[0]
    slope = mech.estimate(np.array([1.0]))[0] - centre  # 1 / (2b(p - q))
    assert slope * 2.0 * b * gap == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("eps", [1e-12, 1e-8, 1e-6])
def test_laplace_variance_at_tiny_budgets(eps):
    """2 p / (1 - p)^2 with p = exp(-GRID eps): 1 - p from exp lost its precision below
    ~1e-4 (inf below ~1.1e-10); the variance is 2 / eps^2 up to GRID^2 / 6."""
    mech = LaplaceMechanism(eps)
    assert mech.variance(np.array([0.5]))[0] == pytest.approx(2.0 / eps**2, rel=1e-9)


STREAM = """\
[scenario]
name = "eps-range"
seed = 3
[fleet]
devices = 2
[stream]
mechanism = "{mechanism}"
steps = 40
eps = {eps}
w = 5
[source]
kind = "synthetic"
shape = "sine"
period = 10
amplitude = 1.0
bounds = [-1.0, 1.0]
"""


@pytest.mark.parametrize("mechanism", sorted(BUILDERS))
def test_scenarios_refuse_a_per_report_budget_below_the_floor(mechanism):
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(STREAM.format(mechanism=mechanism, eps="1e-290"))
    message = str(caught.value)
    assert message.startswith("stream.eps:") and f"below {EPS_MIN:g}" in message, message
    assert "1e-290 / 5 = 2e-291" in message and "stream.eps >= 5e-12" in message, message


def test_a_scenario_at_the_floor_loads():
    for mechanism in BUILDERS:
        parse_scenario(STREAM.format(mechanism=mechanism, eps=repr(5 * EPS_MIN)))


@pytest.mark.parametrize("entry", ["sw", "laplace", "duchi", "piecewise"])
def test_audit_entries_refuse_a_budget_below_the_floor(entry):
    import ldpfleet

    with pytest.raises(ParameterError) as caught:
        ldpfleet.run_audit(entry, 1e-300, trials=100)
    _names_the_floor(str(caught.value), 1e-300)


def test_bench_cpr_refuses_a_budget_below_the_floor():
    from ldpfleet.app.bench_cpr import _grid_budgets, check_bench_args

    with pytest.raises(ParameterError) as caught:
        _grid_budgets((1.0, 1e-300))
    assert caught.value.field == "grid_eps0"
    _names_the_floor(str(caught.value), 1e-300)

    with pytest.raises(ParameterError) as caught:
        check_bench_args(detection_eps=(1.0,), detection_w=(1,), cosine_eps=(1e-11,), cosine_w=20)
    assert caught.value.field == "cosine_eps"
    assert f"{EPS_MIN:g}" in str(caught.value) and "1e-11" in str(caught.value)


# --- estimate_mean on reports no device could send (held-out QA, helper S) -----------------
# Every built-in returned NaN (with a RuntimeWarning) for no reports, NaN for a NaN report,
# and a number for a report outside its output range (SW: 1e9 gave 2.7e9): a mis-read,
# not a refusal.


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize(
    ("reports", "field"),
    [([], "y"), ([0.5, float("nan")], "y[1]"), ([1e9], "y[0]"), ([[0.5], [1e9]], "y[1, 0]")],
)
def test_estimate_mean_refuses_what_no_device_sends(name, reports, field):
    mech = BUILDERS[name](1.0)
    good = mech.perturb(np.full(np.shape(reports), 0.5), np.random.default_rng(0))
    mask = np.isnan(np.asarray(reports, dtype=float)) | (np.asarray(reports, dtype=float) > 1e8)
    y = np.where(mask, reports, good) if np.size(reports) else reports
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ParameterError) as caught:
            mech.estimate_mean(y)
    assert caught.value.field == field, caught.value


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_estimate_mean_reads_lists_and_2d_reports(name):
    mech = BUILDERS[name](1.0)
    y = mech.perturb(np.full(6, 0.5), np.random.default_rng(0))
    expected = mech.estimate_mean(y)
    assert mech.estimate_mean(list(y)) == expected
    assert mech.estimate_mean(y.reshape(2, 3)) == pytest.approx(expected, rel=1e-12)


# --- Duchi's coin at huge budgets (held-out QA, helper S) -----------------------------------
# Duchi's report WAS +C iff a 53-bit uniform r < 1/2 + t/(2C); the rare answer's probability
# 1/(e^eps + 1) fell below the uniform's resolution 2**-53 above eps ~36.7 and rounded to 0:
# at eps = 40, 10**6 inputs x = 0 gave 0 reports +C and inputs x = 1 only +C, an infinite
# privacy loss under a claim of 40 (HM's Duchi branch likewise up to 50), hence a cap of 32.
# The coin is exact now (samplers.rr_lie) and the cap is gone (helper B): Duchi's law at
# eps = 40 and 50 is tested in tests/unit/test_duchi_huge_eps.py.
