"""The fleet's dp run (memory transport) releases the ``boot`` histogram and the
projection's per-node estimates (issue 20, helper I; docs/cadr.md, "What is released")."""

import numpy as np
from ldpfleet.collector.degree_postprocess import (
    consistent_histogram,
    degree_prior,
    histogram_prior,
    post_process,
    score,
)
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.scenarios.cadr_run import run_cadr_fleet

GRAPH = generate("barabasi_albert", 40, seed=5, m=3)


async def test_the_fleet_releases_the_boot_histogram_and_the_old_estimates():
    result = await run_cadr_fleet(GRAPH, theta="auto-dev", seed=3)  # pipeline "dp"
    (query,) = result["theta_queries"]
    search, bound, degrees = result["theta_search"], result["degree_bound"], GRAPH.degrees()
    args = (query["bucket_sums"], query["thresholds"], bound, GRAPH.n)
    eps_dsr = CadrBudget.for_pipeline(3.0, 0.1, "dp", True, GRAPH.n).dsr
    names = list(result["per_device"])
    released = [result["released"][name] for name in names]
    old = post_process(released, result["theta"], eps_dsr, degree_prior(*args))
    # the per-node release is the projection's, as before
    assert [result["per_device"][x]["estimate"] for x in names] == old.estimates.tolist()
    boot = histogram_prior(*args, search["eps"], search["noise_parties"])
    assert result["estimate_histogram"] == consistent_histogram(boot, GRAPH.n).tolist()
    assert result["estimate_histogram"] != old.histogram.tolist()  # fails on the old code
    want = score(degrees, old.estimates, np.array(result["estimate_histogram"]))
    assert result["histogram_emd"] == want["histogram_emd"] and result["mae"] == want["mae"]
