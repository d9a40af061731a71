"""GC-DP Algorithm 2 (collector/gcdp/sensitivity.py): analytic certificates, masking
deltas, compression sets, the empirical score and Proposition 1 (s_k >= B_k)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ldpfleet.collector.gcdp.graph import build_calibration_graph
from ldpfleet.collector.gcdp.sensitivity import (
    clipped_range_bound,
    compression_set,
    count_bound,
    empirical_influence,
    histogram_bound,
    l2_certificate,
    masking_deltas,
    mean_bound,
    release_scales,
)
from ldpfleet.protocol.errors import ParameterError

unit = st.floats(0.0, 1.0)


@st.composite
def graphs(draw, m=None):
    m = m or draw(st.integers(1, 8))
    upper = np.triu(draw(hnp.arrays(float, (m, m), elements=unit)), k=1)
    tau = draw(st.sampled_from([0.0, 0.2, 0.5]))
    cap = draw(st.integers(1, 4))
    return build_calibration_graph(upper + upper.T, tau=tau, degree_cap=cap, alpha=0.7)


# --- Proposition 1: s_k >= B_k whatever the empirical side does ------------------------------


@settings(max_examples=200, deadline=None)
@given(
    graphs(),
    st.data(),
    st.floats(0.0, 5.0),
    unit,
    st.floats(1.0, 10.0),
    st.floats(1e-3, 10.0),
    st.booleans(),
)
def test_proposition_1_scales_dominate_certified_bounds(g, data, gamma, tau_c, kappa, g_max, comp):
    """Seed 000, Proposition 1: for every coordinate s_k >= B_k, for ANY graph, masking
    deltas, compression choice and gamma, tau_c, kappa, g_max; xi_k <= g_max always."""
    m = g.n_nodes
    d = data.draw(st.integers(1, 6))
    deltas = data.draw(hnp.arrays(float, (m, d), elements=st.floats(0.0, 100.0)))
    amap = [data.draw(st.sets(st.integers(0, m - 1), min_size=1)) for _ in range(d)]
    bounds = data.draw(hnp.arrays(float, d, elements=st.floats(0.0, 50.0)))
    xi = empirical_influence(
        deltas, g, amap, gamma=gamma, tau_c=tau_c, kappa=kappa, g_max=g_max, compress=comp
    )
    assert np.all((xi >= 0.0) & (xi <= g_max))
    scales = release_scales(bounds, xi)
    assert np.all(scales >= bounds)
    assert np.all(scales == np.maximum(bounds, xi))


def test_release_scales_without_empirical_score_are_the_bounds():
    assert release_scales([0.0, 2.0]).tolist() == [0.0, 2.0]


# --- analytic certificates hold against brute-force neighbours ------------------------------


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(1, 30), st.integers(0, 5))
def test_analytic_certificates_bound_every_neighbour(data, n, changed):
    """B >= |q(D) - q(D')| for D, D' differing in at most ``changed`` records."""
    changed = min(changed, n)
    low, high = -2.0, 3.0
    x = np.array(data.draw(st.lists(st.floats(low, high), min_size=n, max_size=n)))
    idx = data.draw(st.lists(st.integers(0, n - 1), min_size=changed, max_size=changed))
    y = x.copy()
    y[idx] = data.draw(st.lists(st.floats(low, high), min_size=len(idx), max_size=len(idx)))
    assert abs(x.mean() - y.mean()) <= mean_bound(low, high, n, changed) * (1 + 1e-12) + 1e-12
    count = lambda v: int(np.sum(v > 0.5))  # noqa: E731
    assert abs(count(x) - count(y)) <= count_bound(changed)
    bins = np.linspace(low, high, 6)
    hx, hy = np.histogram(x, bins)[0], np.histogram(y, bins)[0]
    assert np.max(np.abs(hx - hy)) <= histogram_bound(changed)
    assert abs(np.clip(x.sum(), 0, 1) - np.clip(y.sum(), 0, 1)) <= clipped_range_bound(0, 1)


def test_certificate_values_and_l2():
    assert mean_bound(0.0, 10.0, 5) == 2.0
    assert mean_bound(0.0, 10.0, 5, changed_records=9) == 10.0  # capped at the range
    assert count_bound() == histogram_bound() == 1.0
    assert clipped_range_bound(-1.0, 1.5) == 2.5
    assert l2_certificate([3.0, 4.0]) == 5.0


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: mean_bound(1.0, 1.0, 3), "high"),
        (lambda: mean_bound(0.0, 1.0, 0), "n"),
        (lambda: count_bound(-1), "changed_records"),
        (lambda: clipped_range_bound(float("nan"), 1.0), "low"),
        (lambda: l2_certificate([1.0, -1.0]), "bounds[1]"),
        (lambda: release_scales([1.0, 2.0], [0.5]), "empirical"),
    ],
)
def test_bad_certificate_inputs_are_refused(call, field):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.field == field


# --- masking, compression, empirical influence -----------------------------------------------


def test_masking_deltas_measure_projected_change_per_node():
    x = np.array([[1.0, 2.0, 0.0], [3.0, 4.0, 0.0]])

    def column_means(arr):
        return arr.mean(axis=0)

    deltas = masking_deltas(column_means, x, low=0.0, high=2.5, mask_values=0.0)
    # coordinate 1 is clipped at 2.5 before and 0 after masking node 1
    assert deltas.tolist() == [[2.0, 0.0, 0.0], [0.0, 2.5, 0.0], [0.0, 0.0, 0.0]]


def _chain():
    s = np.zeros((4, 4))
    for i, j, v in [(0, 1, 0.9), (0, 2, 0.9), (0, 3, 0.3), (1, 2, 0.95)]:
        s[i, j] = s[j, i] = v
    return build_calibration_graph(s, tau=0.1, degree_cap=5, alpha=0.7)


def test_compression_keeps_one_representative_of_a_near_collinear_pair():
    g = _chain()
    # neighbours of node 0: 1, 2, 3; S_12 = 0.95 >= tau_c, exposure of 1 and 2 is equal,
    # so the smaller index (1) represents the pair; 3 is not similar to 1
    assert g.exposure_norm[1] == g.exposure_norm[2]
    assert compression_set(g, (0,), tau_c=0.85) == (1, 3)
    assert compression_set(g, (0,), tau_c=0.99) == (1, 2, 3)
    assert compression_set(g, (0,), tau_c=0.85, compress=False) == (1, 2, 3)


def test_empirical_influence_formula_by_hand():
    g = _chain()
    deltas = np.array([[0.1], [0.2], [0.3], [0.4]])
    xi = empirical_influence(deltas, g, [[0]], gamma=1.2, tau_c=0.85, kappa=1.0, g_max=10.0)
    spread = g.normalized[0, 1] * 0.2 + g.normalized[0, 3] * 0.4
    assert xi[0] == pytest.approx(0.1 + 1.2 * g.exposure_norm[0] * spread, rel=1e-12)
    capped = empirical_influence(deltas, g, [[0]], gamma=1.2, kappa=3.0, g_max=0.05)
    assert capped.tolist() == [0.05]


def test_isolated_node_influence_is_its_own_delta():
    g = build_calibration_graph(np.zeros((2, 2)))
    xi = empirical_influence(np.array([[0.3, 0.0], [0.0, 0.7]]), g, kappa=2.0, g_max=1.0)
    assert xi.tolist() == [0.6, 1.0]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"coordinate_map": [[0], [5]]}, "coordinate_map[1]"),
        ({"coordinate_map": [[0]]}, "coordinate_map"),
        ({"kappa": 0.5}, "kappa"),
        ({"g_max": 0.0}, "g_max"),
        ({"gamma": -1.0}, "gamma"),
        ({"tau_c": 2.0}, "tau_c"),
    ],
)
def test_bad_influence_parameters_are_refused(kwargs, field):
    g = _chain()
    with pytest.raises(ParameterError) as info:
        empirical_influence(np.zeros((4, 2)), g, **{"coordinate_map": [[0], [1]], **kwargs})
    assert info.value.field == field


def test_coordinate_map_is_required_when_d_differs_from_m():
    with pytest.raises(ParameterError) as info:
        empirical_influence(np.zeros((4, 2)), _chain())
    assert info.value.field == "coordinate_map"
