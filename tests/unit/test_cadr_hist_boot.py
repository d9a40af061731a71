"""The released degree histogram reads the θ search's counts by ``boot`` (issue 20, helper
I; docs/cadr-private.md "Released histogram: boot reading, pre-registered (2026-12-05)"),
the per-node release still by the projection, in the fleet and the in-process reference."""

import networkx as nx
import numpy as np
import pytest
from ldpfleet.collector import cadr_reference as ref
from ldpfleet.collector.bucket_isotonic import bootstrap_counts
from ldpfleet.collector.cadr_fleet import CadrOutcome, _post_process
from ldpfleet.collector.degree_postprocess import (
    consistent_histogram,
    degree_prior,
    histogram_prior,
    post_process,
    score,
)
from ldpfleet.devices.graphs import Graph
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.protocol.errors import ParameterError


def _graph(n=400, m=3, seed=5):
    g = nx.barabasi_albert_graph(n, m, seed=seed)
    e = np.array(list(g.edges()))
    return Graph.from_edges(n, e[:, 0], e[:, 1])


@pytest.fixture(scope="module")
def run():
    """One dp run (seed 3, ε = 1) and its θ search (what the collector opened)."""
    g = _graph()
    r = ref.private_run(g, "ll", "auto-dev", 1.0, 0.1, 3, pipeline="dp")
    return g, r


def test_histogram_prior_spreads_the_boot_counts_like_degree_prior():
    sums, ts, n = [30.0, -4.0, 50.0, 9.0, 3.0], [1, 3, 7, 15], 80
    boot = bootstrap_counts(sums, n, 0.5, 9)
    # the spreading of degree_prior, fed the boot counts instead of the projection's
    want = degree_prior(boot, ts, 20, n)
    np.testing.assert_allclose(histogram_prior(sums, ts, 20, n, 0.5, 9), want)
    with pytest.raises(ParameterError, match="eps_theta"):
        histogram_prior(sums, ts, 20, n, 0.0, 9)


def test_a_histogram_prior_changes_the_histogram_only():
    rng = np.random.default_rng(0)
    y = rng.laplace(4.0, 3.0, 300)
    sums, ts = [20.0, 80.0, 120.0, 60.0, 25.0, -5.0], [1, 3, 6, 10, 40]
    prior = degree_prior(sums, ts, 299, 300)
    hist_p = histogram_prior(sums, ts, 299, 300, 1.0, 5)
    old, new = post_process(y, 12, 1.0, prior), post_process(y, 12, 1.0, prior, hist_p)
    np.testing.assert_array_equal(new.estimates, old.estimates)
    np.testing.assert_array_equal(new.histogram, consistent_histogram(hist_p, 300))
    assert new.histogram.sum() == 300 and not np.array_equal(new.histogram, old.histogram)
    with pytest.raises(ParameterError, match="histogram_prior"):
        post_process(y, 12, 1.0, None, hist_p)


def test_the_reference_releases_the_boot_histogram_and_the_old_sequence(run):
    g, r = run
    s, d, bound = r.theta_search, g.degrees(), r.degree_bound
    assert {"eps", "noise_parties", "bucket_sums", "thresholds"} <= set(s)
    prior = degree_prior(s["bucket_sums"], s["thresholds"], bound, g.n)
    boot = histogram_prior(s["bucket_sums"], s["thresholds"], bound, g.n, s["eps"],
                           s["noise_parties"])  # fmt: skip
    hist = consistent_histogram(boot, g.n)
    assert r.histogram_emd == pytest.approx(score(d, d, hist)["histogram_emd"], abs=1e-12)
    assert r.histogram_l1 == pytest.approx(score(d, d, hist)["histogram_l1"], abs=1e-12)
    # the per-node release: still the projection's prior (its MAE recomputed from scratch)
    assert r.histogram_emd != score(d, d, consistent_histogram(prior, g.n))["histogram_emd"]


def test_fleet_and_reference_post_process_the_same_search_identically(run):
    g, r = run
    s, bound, d = r.theta_search, r.degree_bound, g.degrees()
    rng = np.random.default_rng(1)
    released = rng.laplace(np.minimum(d, r.theta), r.theta / 0.9)
    budget = CadrBudget.for_pipeline(1.0, 0.1, "dp", True, g.n)
    names = [f"d{i}" for i in range(g.n)]
    outcome = CadrOutcome(theta=r.theta, theta_rule="auto-dev", theta_rounds=1, pipeline="dp")
    outcome.released = dict(zip(names, released.tolist(), strict=True))
    outcome.theta_queries = [
        {"bucket_sums": s["bucket_sums"], "thresholds": s["thresholds"], "survivors": g.n}
    ]
    _post_process(outcome, budget.dsr, bound, budget.theta, s["noise_parties"])
    assert budget.theta == s["eps"]
    _, want = ref._release_scores(d, released, r.theta, budget.dsr, s, bound)
    got = score(d, [outcome.estimates[x] for x in names], outcome.estimate_histogram)
    assert got == want
    # the per-node estimates are those of the projection's prior alone
    prior = degree_prior(s["bucket_sums"], s["thresholds"], bound, g.n)
    old = post_process(released, r.theta, budget.dsr, prior)
    assert [outcome.estimates[x] for x in names] == old.estimates.tolist()
