"""The dp pipeline's release is post-processed in ONE place for both pipelines:
``degree_postprocess.post_process_release`` (helper K). The in-process reference
(``cadr_reference._release_scores``) and the fleet's collector (``cadr_fleet._post_process``)
both hand it the θ search's counts (``SearchCounts``) and the known kept ratio (clip: 1,
others: None); it reads the counts by ``search_priors`` (clip's releases re-weighting them:
``exact_releases``) and post-processes by ``post_process``. Every test here fails on the
code before it (no ``post_process_release`` / ``SearchCounts``; each pipeline made the
clip-or-not decision itself)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from ldpfleet.collector import cadr_fleet
from ldpfleet.collector import cadr_reference as ref
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.cadr_fleet import CadrOutcome
from ldpfleet.devices.graphs import Graph
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.protocol.errors import ParameterError

THRESHOLDS = [1, 3, 7, 15, 31]
SUMS = [12.0, 60.0, 90.0, 70.0, 25.0, -3.0]
COUNTS = dpp.SearchCounts(SUMS, THRESHOLDS, 119, 250, 0.8, 40)


def _releases(theta: int = 9, eps_dsr: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(7)
    degrees = rng.geometric(0.2, 250).clip(0, 119)
    return rng.laplace(np.minimum(degrees, theta), theta / eps_dsr)


def _assert_same(a: dpp.PostProcessed, b: dpp.PostProcessed) -> None:
    np.testing.assert_array_equal(a.estimates, b.estimates)
    np.testing.assert_array_equal(a.histogram, b.histogram)
    np.testing.assert_array_equal(a.distribution, b.distribution)
    assert a.kept_ratio == b.kept_ratio and a.theta == b.theta


def test_known_ratio_feeds_the_releases_to_the_readings_and_fixes_r():
    y = _releases()
    exact = (y, 9, 2.0)
    node, hist = dpp.search_priors(SUMS, THRESHOLDS, 119, 250, 0.8, 40, exact_releases=exact)
    want = dpp.post_process(y, 9, 2.0, node, hist, known_ratio=1.0)
    got = dpp.post_process_release(y, 9, 2.0, COUNTS, known_ratio=1.0)
    _assert_same(got, want)
    assert got.kept_ratio == 1.0


def test_no_known_ratio_reads_the_counts_alone_and_estimates_r():
    y = _releases()
    node, hist = dpp.search_priors(SUMS, THRESHOLDS, 119, 250, 0.8, 40)
    want = dpp.post_process(y, 9, 2.0, node, hist)
    got = dpp.post_process_release(y, 9, 2.0, COUNTS)
    _assert_same(got, want)
    # the two branches differ here (else the tests above could not tell them apart)
    clip = dpp.post_process_release(y, 9, 2.0, COUNTS, known_ratio=1.0)
    assert not np.array_equal(clip.histogram, got.histogram) or clip.kept_ratio != got.kept_ratio


def test_without_counts_the_releases_are_deconvolved_alone():
    y = _releases()
    _assert_same(dpp.post_process_release(y, 9, 2.0, None), dpp.post_process(y, 9, 2.0))
    known = dpp.post_process_release(y, 9, 2.0, None, known_ratio=1.0)
    _assert_same(known, dpp.post_process(y, 9, 2.0))  # no prior: no ratio to fix


def _spy(monkeypatch) -> list[tuple]:
    calls: list[tuple] = []
    original = dpp.post_process_release

    def spy(released, theta, eps_dsr, counts, known_ratio=None):
        calls.append((theta, eps_dsr, counts, known_ratio))
        return original(released, theta, eps_dsr, counts, known_ratio)

    monkeypatch.setattr(dpp, "post_process_release", spy)
    monkeypatch.setattr(ref, "post_process_release", spy)
    monkeypatch.setattr(cadr_fleet, "post_process_release", spy)
    return calls


@pytest.mark.parametrize(("method", "ratio"), [("clip", 1.0), ("ll", None)])
def test_the_reference_post_processes_in_the_one_place(monkeypatch, method, ratio):
    calls = _spy(monkeypatch)
    g = nx.barabasi_albert_graph(120, 3, seed=2)
    e = np.array(list(g.edges()))
    graph = Graph.from_edges(120, e[:, 0], e[:, 1])
    run = ref.private_run(graph, method, "auto-dev", 2.0, 0.1, 4, pipeline="dp")
    s = run.theta_search
    assert calls == [
        (
            run.theta,
            CadrBudget.for_pipeline(2.0, 0.1, "dp", True, 120, method).dsr,
            dpp.SearchCounts(
                s["bucket_sums"], s["thresholds"], run.degree_bound, 120, s["eps"],
                s["noise_parties"],
            ),
            ratio,
        )
    ]  # fmt: skip


@pytest.mark.parametrize("ratio", [1.0, None])
def test_the_fleet_post_processes_in_the_one_place(monkeypatch, ratio):
    calls = _spy(monkeypatch)
    y = _releases()
    outcome = CadrOutcome(theta=9, theta_rule="auto-dev", theta_rounds=1, pipeline="dp")
    outcome.released = {f"d{i}": v for i, v in enumerate(y.tolist())}
    outcome.theta_queries = [{"bucket_sums": SUMS, "thresholds": THRESHOLDS, "survivors": 250}]
    cadr_fleet._post_process(outcome, 2.0, 119, 0.8, 40, ratio)
    assert calls == [(9, 2.0, COUNTS, ratio)]
    want = dpp.post_process_release(y, 9, 2.0, COUNTS, ratio)
    assert list(outcome.estimates.values()) == want.estimates.tolist()
    assert outcome.estimate_histogram == want.histogram.tolist()


@pytest.mark.parametrize(
    ("call", "top"),
    [
        (lambda: dpp.posterior_medians([1.0], [0.5, 0.4], 1.0), "θ"),  # the kept degrees
        (lambda: dpp.kept_ratio([1.0], [1.0], 1), "D"),  # the true degrees: one entry
        (lambda: dpp.post_process([1.0], 2, 1.0, [0.7, -0.1, 0.4]), "D"),
    ],
)
def test_a_prior_that_is_no_distribution_is_refused_naming_its_range(call, top):
    wanted = f"a distribution over 0..{top} ({top} >= 1): non-negative, summing to 1"
    with pytest.raises(ParameterError) as refused:
        call()
    err = refused.value
    assert (err.field, err.limit, err.value is not None) == ("prior", wanted, True)
    assert str(err) == f"prior: must be {wanted}"
