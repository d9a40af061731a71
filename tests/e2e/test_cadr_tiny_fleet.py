"""The small-fleet rule on the fleet (issue 20): a dp run of a 15-device graph with
``theta = "auto-dev"`` opens no θ-search sum, takes θ = ⌈√D⌉ = 4 as the in-process
reference does, charges every ledger NDOE + LPEA + DSR = ε, and results.json's claim names
the rule. Fails on the code before the rule (the fleet searched θ: one bucket-count sum,
a ledger of four charges, a θ drawn from the noise)."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import cadr_reference as ref
from ldpfleet.collector.degree_postprocess import post_process
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.cadr_budget import PART_NAMES, SMALL_FLEET_THETA_CLAIM, CadrBudget
from ldpfleet.scenarios.cadr_run import run_cadr_fleet

GRAPH = generate("erdos_renyi", 15, seed=4, p=0.3)
EPS = 3.0


def _check_tiny_run(result: dict) -> None:
    """Everything a dp run under the small-fleet rule promises."""
    assert (result["theta"], result["theta_chosen_by"]) == (4, "small-fleet")
    assert result["theta_rule"] == "auto-dev"  # the configured rule, kept as configured
    assert result["theta_queries"] == [] and result["theta_search"] is None
    budget = CadrBudget.for_pipeline(EPS, 0.1, "dp", False, GRAPH.n)  # a given θ's split
    assert result["budget"] == budget.as_dict() and "theta" not in result["budget"]
    assert sum(result["budget"].values()) == pytest.approx(EPS)
    assert result["ledger_exact"] and result["refused_by_devices"] == 0
    for ledger in result["ledgers"].values():
        node = ledger["accounts"]["node"]
        assert node["charges"] == 3 and node["spent"] == pytest.approx(EPS)  # NDOE, LPEA, DSR
    claim = result["privacy_claim"]
    theta_row = next(p for p in claim["parts"] if p["part"].startswith("θ"))
    assert theta_row["part"] == SMALL_FLEET_THETA_CLAIM
    assert (theta_row["eps"], theta_row["charged"]) == (0.0, False)
    assert claim["charged_total"] == pytest.approx(EPS)
    # the release: the DSR values' own deconvolution (no θ-search counts, no prior)
    names = list(result["per_device"])
    released = np.array([result["released"][name] for name in names])
    post = post_process(released, 4, budget.dsr)
    assert [result["per_device"][name]["estimate"] for name in names] == post.estimates.tolist()
    assert result["estimate_histogram"] == post.histogram.tolist()


async def test_a_tiny_fleet_on_memory_runs_the_rule_like_the_in_process_reference():
    result = await run_cadr_fleet(GRAPH, theta="auto-dev", seed=5, eps=EPS)  # pipeline dp
    _check_tiny_run(result)
    in_process = ref.private_run(GRAPH, "ll", "auto-dev", EPS, 0.1, 5, pipeline="dp")
    assert (in_process.theta, in_process.theta_chosen_by) == (4, "small-fleet")
    spent = {PART_NAMES[label]: eps for label, eps in in_process.spent.items()}
    assert spent == result["budget"]  # the same split, charged the same way


async def test_the_paper_pipeline_on_a_tiny_fleet_still_searches_exactly():
    result = await run_cadr_fleet(GRAPH, theta="auto-dev", seed=5, eps=EPS, pipeline="paper")
    assert result["theta_chosen_by"] == "search" and result["theta_queries"]
    assert result["theta_rounds"] > 0 and result["ledger_exact"]


@pytest.mark.slow
async def test_a_tiny_fleet_on_mosquitto_gives_the_memory_release(mosquitto_url):
    memory = await run_cadr_fleet(GRAPH, theta="auto-dev", seed=6, eps=EPS)
    mosquitto = await run_cadr_fleet(GRAPH, broker=mosquitto_url, theta="auto-dev", seed=6)
    _check_tiny_run(mosquitto)
    assert mosquitto["broker"] == "mqtt" and mosquitto["released"] == memory["released"]
