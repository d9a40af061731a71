"""The fleet and the in-process reference both read the θ search's counts with the unimodal
tail for the per-node prior (issue 20, helper C; docs/cadr-private.md "Mid-size fleets: the
unimodal tail"): on karate (n = 34, a mid-size fleet: the rule's gate is open) the estimates
are post_process under ``unimodal_degree_prior``, which differs from ``degree_prior`` there,
so the test fails if either call site reads the plain projection again."""

import networkx as nx
import numpy as np
import pytest
from ldpfleet.collector import cadr_reference as ref
from ldpfleet.collector.cadr_fleet import CadrOutcome, _post_process
from ldpfleet.collector.degree_postprocess import (
    degree_prior,
    post_process,
    score,
    unimodal_degree_prior,
)
from ldpfleet.devices.graphs import Graph
from ldpfleet.protocol.cadr_budget import CadrBudget


@pytest.fixture(scope="module")
def karate():
    """A dp run on karate at ε = 3 (seed 1: θ by the search; with the mid-size ε_θ of
    1.5, seed 0's two priors happened to give the same MAE), its θ search and releases."""
    nxg = nx.karate_club_graph()
    e = np.array(list(nxg.edges()))
    g = Graph.from_edges(nxg.number_of_nodes(), e[:, 0], e[:, 1])
    r = ref.private_run(g, "ll", "auto-dev", 3.0, 0.1, 1, pipeline="dp")
    assert r.theta_chosen_by == "search"
    s = r.theta_search
    released = np.random.default_rng(7).laplace(np.minimum(g.degrees(), r.theta), r.theta / 2.5)
    return g, r, s, released


def _priors(g, r, s):
    args = (s["bucket_sums"], s["thresholds"], r.degree_bound, g.n)
    plain = degree_prior(*args)
    unimodal = unimodal_degree_prior(*args, s["eps"], s["noise_parties"])
    assert not np.allclose(plain, unimodal)  # else this test could not fail
    return plain, unimodal


def test_the_fleet_releases_under_the_unimodal_prior(karate):
    g, r, s, released = karate
    plain, unimodal = _priors(g, r, s)
    budget = CadrBudget.for_pipeline(3.0, 0.1, "dp", True, g.n)
    names = [f"d{i}" for i in range(g.n)]
    outcome = CadrOutcome(theta=r.theta, theta_rule="auto-dev", theta_rounds=1, pipeline="dp")
    outcome.released = dict(zip(names, released.tolist(), strict=True))
    outcome.theta_queries = [
        {"bucket_sums": s["bucket_sums"], "thresholds": s["thresholds"], "survivors": g.n}
    ]
    _post_process(outcome, budget.dsr, r.degree_bound, budget.theta, s["noise_parties"])
    got = [outcome.estimates[x] for x in names]
    assert got == post_process(released, r.theta, budget.dsr, unimodal).estimates.tolist()
    assert got != post_process(released, r.theta, budget.dsr, plain).estimates.tolist()


def test_the_reference_scores_the_unimodal_prior(karate):
    g, r, s, released = karate
    plain, unimodal = _priors(g, r, s)
    budget = CadrBudget.for_pipeline(3.0, 0.1, "dp", True, g.n)
    d = g.degrees()
    _, got = ref._release_scores(d, released, r.theta, budget.dsr, s, r.degree_bound)
    want = post_process(released, r.theta, budget.dsr, unimodal).estimates
    old = post_process(released, r.theta, budget.dsr, plain).estimates
    assert got["mae"] == pytest.approx(score(d, want, d)["mae"], abs=1e-12)
    assert score(d, want, d)["mae"] != score(d, old, d)["mae"]
