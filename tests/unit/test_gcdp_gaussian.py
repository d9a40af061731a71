"""Analytic Gaussian mechanism (collector/gcdp/gaussian.py; Balle & Wang 2018, Thm 8)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ldpfleet.collector.gcdp.gaussian import analytic_gaussian_delta, analytic_gaussian_sigma
from ldpfleet.protocol.errors import ParameterError


@settings(max_examples=300, deadline=None)
@given(st.floats(0.01, 20.0), st.floats(1e-12, 0.5), st.floats(1e-3, 1e3))
def test_sigma_satisfies_the_delta_condition_and_a_smaller_one_does_not(eps, delta, sens):
    sigma = analytic_gaussian_sigma(eps, delta, sens)
    assert analytic_gaussian_delta(sigma, eps, sens) <= delta
    assert analytic_gaussian_delta(sigma * (1.0 - 1e-7), eps, sens) > delta


def test_known_value_and_tighter_than_the_classical_bound():
    # Balle & Wang 2018: eps = 1, delta = 1e-5, sensitivity 1 gives sigma ~ 3.73
    sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert sigma == pytest.approx(3.7306, abs=1e-4)
    assert sigma < math.sqrt(2.0 * math.log(1.25 / 1e-5))  # classical: 4.84


def test_sigma_scales_linearly_with_sensitivity():
    one = analytic_gaussian_sigma(0.5, 1e-6, 1.0)
    assert analytic_gaussian_sigma(0.5, 1e-6, 7.0) == pytest.approx(7.0 * one, rel=1e-12)


def test_delta_decreases_in_sigma():
    values = [analytic_gaussian_delta(s, 1.0, 1.0) for s in (0.1, 0.5, 1.0, 2.0, 5.0, 20.0)]
    assert values == sorted(values, reverse=True)
    assert 0.0 <= values[-1] < values[0] <= 1.0


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((0.0, 1e-5, 1.0), "eps"),
        ((1.0, 0.0, 1.0), "delta"),
        ((1.0, 1.0, 1.0), "delta"),
        ((1.0, 1e-5, -1.0), "l2_sensitivity"),
        ((float("nan"), 1e-5, 1.0), "eps"),
    ],
)
def test_invalid_gaussian_parameters_are_refused(args, field):
    with pytest.raises(ParameterError) as info:
        analytic_gaussian_sigma(*args)
    assert info.value.field == field
