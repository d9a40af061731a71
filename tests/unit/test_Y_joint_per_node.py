"""Method "clip": the per-node prior re-weighted by the DSR values too (issue 20, helper Y;
``degree_postprocess.JOINT_PER_NODE``, docs/preregistration/Y-joint-per-node.md). The
per-node reading becomes its ``joint_prior`` where ε_dsr >= ``JOINT_PER_NODE_EPS_MIN``;
the histogram is unchanged; the fleet's collector and the reference read alike."""

import numpy as np
import pytest
from ldpfleet.collector import cadr_reference as cr
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.joint_prior import joint_prior
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.scenarios.cadr_run import run_cadr_fleet

from tests.cadr_fixtures import clip_theta_search, joint_readings


@pytest.mark.parametrize("eps_dsr", [4.0, 0.05])
def test_the_flag_reweights_the_per_node_reading_above_the_gate(monkeypatch, eps_dsr):
    degrees, search, rng = clip_theta_search()
    n, theta = degrees.size, 12
    released = np.minimum(degrees, theta) + rng.laplace(0.0, theta / eps_dsr, n)
    args = (search["bucket_sums"], search["thresholds"], n - 1, n, search["eps"])
    unimodal = dpp.unimodal_degree_prior(*args, search["noise_parties"])
    sd = noise_sd(search["eps"], n, search["noise_parties"])
    monkeypatch.setattr(dpp, "PER_NODE_MEDIAN_TILT_LEVEL", None)  # E6's tilt: its own test
    monkeypatch.setattr(dpp, "JOINT_PER_NODE", False)
    off_node, off_hist = joint_readings(search, n, released, theta, eps_dsr)
    monkeypatch.setattr(dpp, "JOINT_PER_NODE", True)
    on_node, on_hist = joint_readings(search, n, released, theta, eps_dsr)
    np.testing.assert_array_equal(off_node, unimodal)
    np.testing.assert_array_equal(on_hist, off_hist)  # the histogram: unchanged
    if eps_dsr >= dpp.JOINT_PER_NODE_EPS_MIN:
        want = joint_prior(released, theta, eps_dsr, unimodal, search["thresholds"], n, sd)
        np.testing.assert_array_equal(on_node, want)
        assert not np.array_equal(on_node, unimodal)  # the flag does something here
    else:  # below the gate: today's prior
        np.testing.assert_array_equal(on_node, unimodal)


def test_without_exact_releases_the_flag_changes_nothing(monkeypatch):
    degrees, search, _ = clip_theta_search()
    n = degrees.size
    args = (search["bucket_sums"], search["thresholds"], n - 1, n, search["eps"])
    monkeypatch.setattr(dpp, "JOINT_PER_NODE", True)
    node, _ = dpp.search_priors(*args, search["noise_parties"])
    np.testing.assert_array_equal(node, dpp.unimodal_degree_prior(*args, search["noise_parties"]))


GRAPH = generate("barabasi_albert", 40, seed=5, m=3)


@pytest.mark.parametrize("flag", [False, True, None])
async def test_the_fleet_and_the_reference_give_the_same_per_node_estimates(monkeypatch, flag):
    if flag is None:  # the default: on (the pre-registered evaluation passed)
        flag = True
    else:
        monkeypatch.setattr(dpp, "JOINT_PER_NODE", flag)
    result = await run_cadr_fleet(GRAPH, method="clip", theta="auto-dev", seed=3, eps=5.0)
    (query,) = result["theta_queries"]
    search, bound, theta = result["theta_search"], result["degree_bound"], result["theta"]
    n = query["survivors"]
    eps_dsr = CadrBudget.for_pipeline(5.0, 0.1, "dp", True, GRAPH.n, "clip").dsr
    names = list(result["per_device"])
    released = np.array([result["released"][name] for name in names])
    args = (query["bucket_sums"], query["thresholds"], bound, n, search["eps"])
    node, hist = dpp.search_priors(
        *args, search["noise_parties"], exact_releases=(released, theta, eps_dsr)
    )
    post = dpp.post_process(released, theta, eps_dsr, node, hist, known_ratio=1.0)
    fleet = [result["per_device"][x]["estimate"] for x in names]
    assert fleet == post.estimates.tolist()
    # the reference's post-processing of the same releases scores the same estimates
    ref_search = {**search, "bucket_sums": query["bucket_sums"], "thresholds": query["thresholds"]}
    degrees = np.array([result["per_device"][x]["degree"] for x in names])
    _, ref = cr._release_scores(degrees, released, theta, eps_dsr, ref_search, bound, 1.0)
    assert ref["mae"] == dpp.score(degrees, post.estimates, post.histogram)["mae"]
    unimodal = dpp.unimodal_degree_prior(*args, search["noise_parties"])
    old = dpp.post_process(released, theta, eps_dsr, unimodal, hist, known_ratio=1.0)
    assert (fleet != old.estimates.tolist()) == flag  # the flag reaches the fleet
