"""GC-DP Algorithm 1 (collector/gcdp/correlation.py, graph.py): lag-aware scores, the greedy
symmetric degree cap, normalised adjacency, exposure, isolated nodes, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ldpfleet.collector.gcdp.correlation import lagged_abs_pearson, lagged_correlations
from ldpfleet.collector.gcdp.graph import build_calibration_graph, calibrate_from_data
from ldpfleet.protocol.errors import ParameterError
from scipy.stats import pearsonr

# --- scores --------------------------------------------------------------------------------


def test_lagged_correlation_matches_scipy_pairwise():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 4))
    stacked = lagged_correlations(x, 3)
    for lag in range(-3, 4):
        for i in range(4):
            for j in range(4):
                if lag >= 0:
                    a, b = x[: 40 - lag, i], x[lag:, j]
                else:
                    a, b = x[-lag:, i], x[: 40 + lag, j]
                want = abs(pearsonr(a, b).statistic)
                assert stacked[lag + 3, i, j] == pytest.approx(want, abs=1e-12)


def test_lag_is_detected_and_weighted_by_lambda():
    rng = np.random.default_rng(2)
    z = rng.normal(size=405)
    x = np.column_stack([z[5:], z[3:403], rng.normal(size=400)])  # node 1 leads node 0 by 2
    s = lagged_abs_pearson(x, lag_window=3, lam=0.6)
    rho0 = abs(np.corrcoef(x[:, 0], x[:, 1])[0, 1])
    assert s[0, 1] == pytest.approx(0.6 * rho0 + 0.4 * 1.0, abs=1e-12)
    # without the lag window (the "w/o lag" ablation) only the synchronous term remains
    assert lagged_abs_pearson(x, lag_window=0, lam=0.6)[0, 1] == pytest.approx(rho0, abs=1e-12)


def test_zero_variance_and_too_short_series_score_zero():
    x = np.column_stack([np.arange(6.0), np.full(6, 3.0), np.arange(6.0) ** 2])
    s = lagged_abs_pearson(x, lag_window=5)
    assert s[0, 1] == s[1, 2] == 0.0  # constant channel
    assert lagged_correlations(x, 5)[0].max() == 0.0  # lag 5 leaves one aligned pair
    assert lagged_correlations(x, 5)[10].max() == 0.0


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(float, st.tuples(st.integers(1, 12), st.integers(1, 6)), elements=st.floats(-5, 5))
)
def test_scores_are_symmetric_bounded_with_zero_diagonal(x):
    s = lagged_abs_pearson(x, lag_window=3)
    assert np.array_equal(s, s.T)
    assert np.all(np.diag(s) == 0.0)
    assert np.all((s >= 0.0) & (s <= 1.0))


def test_bounds_clip_before_correlating():
    x = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [100.0, -100.0]])
    clipped = lagged_abs_pearson(x, lag_window=0, bounds=([0.0, 0.0], [2.0, 2.0]))
    assert clipped[0, 1] == pytest.approx(abs(np.corrcoef([0, 1, 2, 2], [0, 1, 2, 0])[0, 1]))


@pytest.mark.parametrize(
    ("data", "field"),
    [(np.ones(5), "data"), (np.array([[1.0, np.nan], [2.0, 3.0]]), "data"), ("x", "data")],
)
def test_bad_data_is_refused(data, field):
    with pytest.raises(ParameterError) as info:
        lagged_abs_pearson(data)
    assert info.value.field == field


# --- degree cap ----------------------------------------------------------------------------


@st.composite
def score_matrices(draw):
    m = draw(st.integers(1, 12))
    # a small value set forces many exact ties, exercising the lexicographic tie-break
    vals = draw(st.lists(st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.5, 0.9, 1.0]), min_size=m * m))
    s = np.array(vals[: m * m]).reshape(m, m) if len(vals) >= m * m else np.zeros((m, m))
    upper = np.triu(s, k=1)
    return upper + upper.T


@settings(max_examples=300, deadline=None)
@given(score_matrices(), st.sampled_from([0.0, 0.1, 0.3, 0.6]), st.integers(1, 5))
def test_degree_cap_is_never_exceeded_and_greedy_is_maximal(s, tau, cap):
    g = build_calibration_graph(s, tau=tau, degree_cap=cap, alpha=0.7)
    counts = g.edge_counts()
    assert counts.max(initial=0) <= cap
    assert np.array_equal(g.weights, g.weights.T)
    for i, j in g.edges:
        assert i < j and g.weights[i, j] == s[i, j] >= tau
    # every rejected positive candidate had an endpoint already at the cap
    accepted = set(g.edges)
    m = s.shape[0]
    for i in range(m):
        for j in range(i + 1, m):
            if s[i, j] >= tau and s[i, j] > 0 and (i, j) not in accepted:
                assert counts[i] == cap or counts[j] == cap
    # acceptance order: non-increasing scores, lexicographic among ties
    keys = [(-s[i, j], i, j) for i, j in g.edges]
    assert keys == sorted(keys)
    assert np.all((g.exposure_norm >= 0.0) & (g.exposure_norm <= 1.0))


def test_lexicographic_tie_break_decides_which_edge_survives():
    s = np.zeros((4, 4))
    for i, j in [(0, 1), (0, 2), (0, 3)]:
        s[i, j] = s[j, i] = 0.5
    g = build_calibration_graph(s, tau=0.1, degree_cap=2)
    assert g.edges == ((0, 1), (0, 2))
    assert g.edge_counts().tolist() == [2, 1, 1, 0]


def test_isolated_nodes_get_zero_rows_and_zero_exposure():
    s = np.zeros((4, 4))
    s[0, 1] = s[1, 0] = 0.8
    s[2, 3] = s[3, 2] = 0.05  # below threshold: never reinstated
    g = build_calibration_graph(s, tau=0.15, degree_cap=5, alpha=0.7)
    assert g.edges == ((0, 1),)
    assert np.all(g.normalized[2:] == 0.0) and np.all(g.normalized[:, 2:] == 0.0)
    assert g.normalized[0, 1] == pytest.approx(0.8 / np.sqrt(0.8 * 0.8))
    assert g.degree.tolist() == [0.8, 0.8, 0.0, 0.0]
    assert g.exposure_norm.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert np.all(np.isfinite(g.exposure))


def test_all_isolated_or_all_equal_exposure_normalises_to_zero():
    assert np.all(build_calibration_graph(np.zeros((3, 3))).exposure_norm == 0.0)
    one = build_calibration_graph(np.zeros((1, 1)))
    assert one.edges == () and one.exposure_norm.tolist() == [0.0]
    ring = np.zeros((3, 3)) + 0.5 - 0.5 * np.eye(3)  # triangle: all exposures equal
    assert np.all(build_calibration_graph(ring, tau=0.1).exposure_norm == 0.0)


def test_exposure_formula_by_hand():
    s = np.zeros((3, 3))
    s[0, 1] = s[1, 0] = 0.6
    s[1, 2] = s[2, 1] = 0.4
    g = build_calibration_graph(s, tau=0.1, degree_cap=5, alpha=0.7)
    d = np.array([0.6, 1.0, 0.4])
    wt = s / np.sqrt(np.outer(d, d))  # D^-1/2 W D^-1/2 (no isolated node here)
    r = 0.7 * d + 0.3 * (wt @ d)
    np.testing.assert_allclose(g.exposure, r, rtol=1e-12)
    np.testing.assert_allclose(g.exposure_norm, (r - r.min()) / (r.max() - r.min()), rtol=1e-12)


def test_calibration_is_deterministic():
    x = np.random.default_rng(5).normal(size=(200, 9))
    x[:, 3] = x[:, 0] + 0.1 * x[:, 3]
    a, b = calibrate_from_data(x, tau=0.05), calibrate_from_data(x.copy(), tau=0.05)
    assert a.edges == b.edges
    assert np.array_equal(a.weights, b.weights) and np.array_equal(a.exposure_norm, b.exposure_norm)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tau": 1.5}, "tau"),
        ({"degree_cap": 0}, "degree_cap"),
        ({"alpha": -0.1}, "alpha"),
    ],
)
def test_bad_graph_parameters_are_refused(kwargs, field):
    with pytest.raises(ParameterError) as info:
        build_calibration_graph(np.zeros((2, 2)), **kwargs)
    assert info.value.field == field


@pytest.mark.parametrize(
    "scores", [np.array([[0, 0.2], [0.3, 0]]), np.array([[0, 2.0], [2.0, 0]]), np.zeros((2, 3))]
)
def test_bad_score_matrices_are_refused(scores):
    with pytest.raises(ParameterError) as info:
        build_calibration_graph(scores)
    assert info.value.field == "scores"
