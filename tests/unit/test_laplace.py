"""The Laplace stream mechanism: validation at the boundary, scale, unbiasedness, domain."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.laplace import TAIL, LaplaceMechanism
from ldpfleet.protocol.mechanisms import stream_mechanism


@pytest.mark.parametrize("eps", [0, -1, float("nan"), float("inf"), 50.0001, True, "1"])
def test_bad_eps_is_refused(eps):
    with pytest.raises(ParameterError) as info:
        LaplaceMechanism(eps)
    assert info.value.field == "eps"


def test_boundary_eps_is_accepted_and_registry_builds_it():
    assert LaplaceMechanism(50.0).scale == pytest.approx(0.02)
    assert isinstance(stream_mechanism("laplace", 1.0), LaplaceMechanism)
    with pytest.raises(ParameterError):
        stream_mechanism("gaussian", 1.0)


def test_unbiased_with_the_right_scale():
    mechanism, v, n = LaplaceMechanism(0.5), 0.3, 200_000
    y = mechanism.perturb(np.full(n, v), np.random.default_rng(1))
    # Laplace(b=2): sd = b*sqrt(2) = 2.83; the mean's sd is 2.83/sqrt(n) = 0.0063; a
    # two-sided 1e-6 false-failure rate needs 4.9 sd -> 0.031.
    assert abs(y.mean() - v) < 4.9 * 2 * math.sqrt(2) / math.sqrt(n)
    # mean absolute deviation of Laplace(b) is b; its sd is b/sqrt(n): 4.9 sd -> 0.022.
    assert abs(np.abs(y - v).mean() - 2.0) < 4.9 * 2.0 / math.sqrt(n)


def test_density_ratio_is_bounded_by_e_eps():
    mechanism = LaplaceMechanism(0.8)
    y = np.linspace(-5, 6, 1001)
    ratio = mechanism.density(y, 0.0) / mechanism.density(y, 1.0)
    assert ratio.max() == pytest.approx(math.exp(0.8))
    assert ratio.min() == pytest.approx(math.exp(-0.8))


def test_domain_refuses_only_impossible_values():
    mechanism = LaplaceMechanism(1.0)
    assert mechanism.in_domain(np.array([-TAIL + 0.01, 0.5, 1 + TAIL - 0.01])).all()
    assert not mechanism.in_domain(np.array([-TAIL - 0.01, np.nan, np.inf])).any()
    with pytest.raises(ParameterError):
        mechanism.perturb(np.array([1.5]), np.random.default_rng(0))
