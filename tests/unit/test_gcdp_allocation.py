"""GC-DP Algorithm 3 (collector/gcdp/allocation.py): Proposition 2, the Ada-DP / Risk-DP
reductions and the uniform Lap-DP split."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ldpfleet.collector.gcdp.allocation import (
    ada_allocation,
    allocate_budget,
    fit_total,
    risk_allocation,
    uniform_allocation,
)
from ldpfleet.collector.gcdp.validate import exact_excess
from ldpfleet.protocol.errors import ParameterError

unit = st.floats(0.0, 1.0)


@settings(max_examples=400, deadline=None)
@given(
    st.data(),
    st.integers(1, 40),
    st.floats(1e-3, 100.0),
    st.floats(1e-6, 0.999),
    st.floats(0.0, 3.0),
    st.floats(0.0, 3.0),
    st.floats(0.0, 3.0),
)
def test_proposition_2_floor_and_total(data, d, eps_rel, floor_frac, beta_r, beta_g, beta_u):
    """Seed 000, Proposition 2: every eps_k >= eps_min and sum_k eps_k = eps_rel; in floating
    point we require the exact total <= eps_rel and within 1e-12 relative of it."""
    scales = data.draw(hnp.arrays(float, d, elements=st.floats(0.0, 1e3)))
    utility = data.draw(hnp.arrays(float, d, elements=unit))
    m = data.draw(st.integers(1, 10))
    exposure = data.draw(hnp.arrays(float, m, elements=unit))
    amap = [data.draw(st.sets(st.integers(0, m - 1), min_size=1)) for _ in range(d)]
    eps_min = floor_frac * eps_rel / d
    if not eps_min > 0.0 or not eps_min < eps_rel / d:
        return
    eps = allocate_budget(
        eps_rel,
        scales,
        utility,
        exposure,
        amap,
        eps_min=eps_min,
        beta_r=beta_r,
        beta_g=beta_g,
        beta_u=beta_u,
    )
    assert eps.shape == (d,)
    assert np.all(eps >= eps_min)
    assert exact_excess(eps, eps_rel) <= 0.0  # the exact real sum, not a rounded one
    assert math.fsum(eps.tolist()) == pytest.approx(eps_rel, rel=1e-12)


def test_default_floor_is_table_5():
    eps = allocate_budget(1.0, np.full(4, 1.0), np.zeros(4), np.ones(4))
    np.testing.assert_allclose(eps, 0.25)  # all h_k equal
    skewed = allocate_budget(1.0, [1.0, 1.0], [0.0, 1.0], [0.0, 0.0])
    assert skewed.min() >= 1.0 / 200.0


def test_direction_of_each_effect():
    base = {"scales": [1.0, 1.0], "utility": [0.5, 0.5], "exposure_norm": [0.5, 0.5]}

    def alloc(**over):
        return allocate_budget(1.0, **{**base, **over})

    assert alloc(utility=[0.9, 0.1])[0] > 0.5  # more utility -> more budget
    assert alloc(exposure_norm=[0.9, 0.1])[0] < 0.5  # more exposure -> less budget
    assert alloc(scales=[2.0, 1.0])[0] < 0.5  # larger certified scale -> less budget


def test_ada_and_risk_are_the_stated_reductions():
    s, mu, r = [1.0, 2.0, 0.5], [0.2, 0.9, 0.4], [0.7, 0.1, 1.0]
    np.testing.assert_array_equal(
        ada_allocation(2.0, s, mu), allocate_budget(2.0, s, mu, r, beta_r=0.0)
    )
    np.testing.assert_array_equal(
        risk_allocation(2.0, s, r), allocate_budget(2.0, s, mu, r, beta_u=0.0)
    )


@pytest.mark.parametrize(("eps_rel", "d"), [(1.0, 10), (0.2, 3), (4.0, 7), (0.5, 561), (1.0, 1)])
def test_uniform_split_never_exceeds_the_total(eps_rel, d):
    eps = uniform_allocation(eps_rel, d)
    assert exact_excess(eps, eps_rel) <= 0.0
    np.testing.assert_allclose(eps, eps_rel / d, rtol=1e-12)


def test_fit_total_repairs_a_rounding_overshoot():
    naive = np.full(10, 0.1)
    assert exact_excess(naive, 1.0) > 0.0  # 0.1 is slightly above 1/10 in binary
    fixed = fit_total(naive, 1.0)
    assert exact_excess(fixed, 1.0) <= 0.0
    assert np.count_nonzero(fixed != naive) == 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"eps_min": 0.25}, "eps_min"),  # = eps_rel / d: must be strictly below
        ({"eps_min": 0.3}, "eps_min"),
        ({"eps_min": 0.0}, "eps_min"),
        ({"eps_min": -0.1}, "eps_min"),
        ({"eps_rel": 0.0}, "eps_rel"),
        ({"eps_rel": float("inf")}, "eps_rel"),
        ({"utility": [0.1, 1.2, 0.0, 0.0]}, "utility[1]"),
        ({"exposure_norm": [0.1, -0.2, 0.0, 0.0]}, "exposure[1]"),
        ({"scales": [1.0, float("nan"), 1.0, 1.0]}, "scales[1]"),
        ({"scales": [1.0, -1.0, 1.0, 1.0]}, "scales[1]"),
        ({"utility": [0.1, 0.1]}, "utility"),
        ({"beta_u": -1.0}, "beta_u"),
        ({"eta": 0.0}, "eta"),
    ],
)
def test_invalid_allocation_parameters_are_refused(kwargs, field):
    args = {
        "eps_rel": 1.0,
        "scales": [1.0] * 4,
        "utility": [0.5] * 4,
        "exposure_norm": [0.5] * 4,
        **kwargs,
    }
    with pytest.raises(ParameterError) as info:
        allocate_budget(**args)
    assert info.value.field == field
    assert field.split("[")[0] in str(info.value)


def test_exposure_offset_eta_is_the_seed_formula_exactly():
    # The seed's h_k = (mu+eta)^bu / ((r+eta)^br (s+eta)^bg + eta), evaluated by hand.
    s, mu, r = np.array([0.2, 0.05, 0.1]), np.array([0.3, 0.9, 0.6]), np.array([0.0, 1.0, 0.4])
    eta, floor = 1e-8, 1.0 / 300.0
    h = (mu + eta) ** 0.7 / ((r + eta) ** 1.0 * (s + eta) ** 1.0 + eta)
    expected = floor + (1.0 - 3 * floor) * h / h.sum()
    got = allocate_budget(1.0, s, mu, r, exposure_offset=eta)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # ... and it shows the degeneracy the offset exists for: the r = 0 coordinate takes
    # everything above the floor although its utility is the lowest.
    assert got[0] > 1.0 - 3 * floor - 1e-6


def test_default_exposure_offset_bounds_the_exposure_effect_to_two():
    # Equal utility and scales: h differs only through (r + 1); r in {0, 1} -> ratio 2.
    eps = allocate_budget(1.0, [0.1, 0.1], [0.5, 0.5], [0.0, 1.0], eps_min=1e-6)
    share = (eps - 1e-6) / (1.0 - 2e-6)
    assert share[0] / share[1] == pytest.approx(2.0, rel=1e-6)  # eta terms: ~1e-7


def test_exposure_offset_must_be_positive():
    with pytest.raises(ParameterError) as info:
        allocate_budget(1.0, [1.0], [0.5], [0.5], exposure_offset=0.0)
    assert info.value.field == "exposure_offset"
