"""The in-process CADR-LDP reference: θ rules, invariants, and LL's non-private edge."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.cadr_reference import METHODS, choose_theta, private_run, summarise
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.errors import ParameterError


@pytest.fixture(scope="module")
def graph():
    return generate("barabasi_albert", 400, seed=3, m=6)


def test_theta_by_deviation_is_the_quantile(graph):
    degrees = graph.degrees()
    theta, rounds = choose_theta(degrees, "auto-dev", 2.7)
    # smallest θ with #{d > θ} <= n / eps_dsr
    brute = min(t for t in range(1, int(degrees.max()) + 1) if np.sum(degrees > t) <= 400 / 2.7)
    assert theta == brute and 1 <= rounds <= int(np.ceil(np.log2(degrees.max()))) + 1
    assert choose_theta(degrees, 12, 2.7) == (12, 0)
    with pytest.raises(ValueError, match="theta"):
        choose_theta(degrees, "auto-magic", 2.7)


@pytest.mark.parametrize("method", METHODS)
def test_private_runs_are_deterministic_and_bounded(graph, method):
    first = private_run(graph, method, 20, 3.0, 0.1, seed=5)
    again = private_run(graph, method, 20, 3.0, 0.1, seed=5)
    assert first.mae == again.mae and first.theta == 20
    assert 0 < first.kept_edge_ratio <= 1
    assert np.isfinite(first.mse) and first.mse >= first.mae**2 - 1e-9  # Jensen
    summary = summarise([first, again])
    assert summary["runs"] == 2 and summary["theta"] == [20]


def test_a_larger_budget_lowers_the_error(graph):
    # Laplace scale θ/ε_dsr shrinks with ε: over 5 seeds the mean MAE at ε = 10 is below
    # that at ε = 1 by far more than run-to-run noise (measured ~2x apart).
    low = np.mean([private_run(graph, "ll", 20, 1.0, 0.1, s).mae for s in range(5)])
    high = np.mean([private_run(graph, "ll", 20, 10.0, 0.1, s).mae for s in range(5)])
    assert high < low


def test_the_pipelines_release_the_raw_or_the_post_processed_sequence(graph):
    paper = private_run(graph, "ll", "auto-dev", 3.0, 0.1, seed=2, pipeline="paper")
    dp = private_run(graph, "ll", "auto-dev", 3.0, 0.1, seed=2, pipeline="dp")
    assert paper.mae == paper.raw["mae"] and paper.distribution_l1 == paper.raw["histogram_l1"]
    assert (
        dp.mae == dp.postprocessed["mae"] and dp.histogram_emd == dp.postprocessed["histogram_emd"]
    )
    assert dp.theta > paper.theta  # θ aimed at the smaller post-processed noise error
    assert paper.baselines == dp.baselines
    assert set(dp.baselines) == {"constant_median_oracle", "all_zero"}
    summary = summarise([dp])
    assert summary["pipeline"] == "dp" and summary["postprocessed"]["mae"] == dp.mae
    with pytest.raises(ValueError, match="pipeline"):
        private_run(graph, "ll", 20, 3.0, 0.1, seed=2, pipeline="fast")


def test_the_dp_run_publishes_n_minus_one_and_the_paper_run_the_graph_maximum(graph):
    dp = private_run(graph, "ll", "auto-dev", 3.0, 0.1, seed=2, pipeline="dp")
    paper = private_run(graph, "ll", "auto-dev", 3.0, 0.1, seed=2, pipeline="paper")
    assert (dp.degree_bound, dp.degree_bound_source) == (graph.n - 1, "devices")
    assert (paper.degree_bound, paper.degree_bound_source) == (
        int(graph.degrees().max()),
        "graph-max",
    )
    assert max(dp.theta_search["thresholds"]) == graph.n - 2  # bucket_grid(D): up to D - 1
    clipped = private_run(graph, "ll", "auto-dev", 3.0, 0.1, seed=2, pipeline="dp", degree_bound=9)
    assert clipped.degree_bound == 9 and clipped.theta <= 9
    assert summarise([dp])["degree_bound"] == graph.n - 1


def test_the_dp_run_publishes_the_same_public_parameters_whatever_the_degrees():
    # two graphs on the same 400 devices, maximum degrees far apart: the plan's D and the
    # θ search's thresholds (which every device and the collector see) are equal
    dense = generate("barabasi_albert", 400, seed=3, m=6)
    sparse = generate("erdos_renyi", 400, seed=3, p=0.01)
    assert dense.degrees().max() != sparse.degrees().max()
    a, b = (
        private_run(g, "ll", "auto-dev", 3.0, 0.1, seed=2, pipeline="dp") for g in (dense, sparse)
    )
    assert a.degree_bound == b.degree_bound == 399
    assert a.theta_search["thresholds"] == b.theta_search["thresholds"]


def test_the_in_process_reference_refuses_a_tiny_eps_with_a_typed_error():
    # the in-process reference with a given θ: ZeroDivisionError in thm35_bound (1e-300),
    # ValueError "math domain error" in noise_weight (1e-308), OverflowError (paper, 1e-310)
    graph = generate("barabasi_albert", 40, seed=1, m=2)
    for eps, pipeline in ((1e-300, "dp"), (1e-308, "dp"), (1e-310, "paper")):
        with pytest.raises(ParameterError) as err:
            private_run(graph, "ll", 5, eps, 0.1, seed=1, pipeline=pipeline)
        assert err.value.field == "eps"
