"""Method "clip" releases the histogram of the joint reading (issue 20, helper T;
collector.joint_prior, docs/preregistration/T-joint-prior.md): the fleet's collector and
the in-process reference re-weight the θ search's histogram reading by the DSR values;
the per-node estimates and every other method are unchanged."""

import numpy as np
from ldpfleet.collector import cadr_reference as cr
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.degree_postprocess import (
    consistent_histogram,
    histogram_prior,
    post_process,
    score,
    search_priors,
)
from ldpfleet.collector.joint_prior import joint_prior
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.scenarios.cadr_run import run_cadr_fleet

GRAPH = generate("barabasi_albert", 40, seed=5, m=3)


async def test_the_clip_fleet_releases_the_joint_histogram_and_the_old_estimates(monkeypatch):
    # the per-node prior's own re-weighting (JOINT_PER_NODE, on by default since helper Y):
    # tests/unit/test_Y_joint_per_node.py; here the histogram's alone
    monkeypatch.setattr(dpp, "JOINT_PER_NODE", False)
    result = await run_cadr_fleet(GRAPH, method="clip", theta="auto-dev", seed=3)
    (query,) = result["theta_queries"]
    search, bound = result["theta_search"], result["degree_bound"]
    eps, parties, n = search["eps"], search["noise_parties"], query["survivors"]
    args = (query["bucket_sums"], query["thresholds"], bound, n, eps, parties)
    eps_dsr = CadrBudget.for_pipeline(3.0, 0.1, "dp", True, GRAPH.n, "clip").dsr
    names = list(result["per_device"])
    released = np.array([result["released"][name] for name in names])
    prior, boot = search_priors(*args)
    old = post_process(released, result["theta"], eps_dsr, prior, boot, known_ratio=1.0)
    assert [result["per_device"][x]["estimate"] for x in names] == old.estimates.tolist()
    joint = joint_prior(
        released, result["theta"], eps_dsr, boot, query["thresholds"], n, noise_sd(eps, n, parties)
    )
    assert result["estimate_histogram"] == consistent_histogram(joint, GRAPH.n).tolist()
    assert result["estimate_histogram"] != old.histogram.tolist()  # fails without the wiring


def test_the_reference_reads_the_releases_for_clip_only():
    graph = generate("barabasi_albert", 200, seed=5, m=3)
    degrees, n = graph.degrees(), graph.n
    rng = np.random.default_rng(0)
    theta, eps_dsr, bound = 12, 4.0, n - 1
    budget = CadrBudget.for_pipeline(5.0, 0.1, "dp", True, n, "clip")
    _, search = cr.dp_theta(degrees, budget, 1.0, rng, bound)
    released = np.minimum(degrees, theta) + rng.laplace(0.0, theta / eps_dsr, degrees.size)
    args = (search["bucket_sums"], search["thresholds"], bound, n, search["eps"])
    boot = histogram_prior(*args, search["noise_parties"])
    sd = noise_sd(search["eps"], n, search["noise_parties"])
    joint = joint_prior(released, theta, eps_dsr, boot, search["thresholds"], n, sd)

    def emd(prior: np.ndarray) -> float:
        return score(degrees, [0], consistent_histogram(prior, n))["histogram_emd"]

    _, clip = cr._release_scores(degrees, released, theta, eps_dsr, search, bound, 1.0)
    _, other = cr._release_scores(degrees, released, theta, eps_dsr, search, bound, None)
    assert clip["histogram_emd"] == emd(joint)  # 0.62 when written
    assert other["histogram_emd"] == emd(boot)  # 1.21: the two differ
    assert emd(joint) != emd(boot)
