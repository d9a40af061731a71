"""Clip's small-ε split over the memory transport (helper Z): the fleet's devices learn
the split from the plan (theta_fraction, theta_extra) and charge exactly what the
in-process reference charges."""

from __future__ import annotations

import pytest
from ldpfleet.collector.cadr_reference import private_run
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol import cadr_budget as cb
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.scenarios.cadr_run import run_cadr_fleet

GRAPH = generate("barabasi_albert", 60, seed=5, m=3)


async def test_a_memory_fleet_run_charges_the_references_small_eps_split(monkeypatch):
    monkeypatch.setattr(cb, "CLIP_DSR_USEFUL_EPS", 0.2)
    eps = 0.75
    budget = CadrBudget.for_pipeline(eps, 0.1, "dp", True, GRAPH.n, "clip")
    assert budget.dsr == pytest.approx(0.05 * eps)  # the rule fires at n = 60, ε = 0.75
    fleet = await run_cadr_fleet(GRAPH, method="clip", theta="auto-dev", eps=eps, seed=2)
    ref = private_run(GRAPH, "clip", "auto-dev", eps, 0.1, 2, pipeline="dp")
    assert fleet["budget"] == {"theta": budget.theta, "dsr": budget.dsr} == budget.as_dict()
    assert fleet["ledger_exact"] and fleet["ledger_min"] == fleet["ledger_max"] == eps
    assert ref.spent == {"geometric": budget.theta, "laplace": budget.dsr}


async def test_a_memory_fleet_run_charges_the_references_weak_count_split(monkeypatch):
    """Helper L's limited rule (``CLIP_SMALL_EPS_MAX_DEVICES``): the fleet's collector
    computes the split from its member count, the devices from the plan; both charge what
    the reference (graph.n) charges."""
    monkeypatch.setattr(cb, "CLIP_SMALL_EPS_MAX_DEVICES", 150)
    eps = 0.75
    budget = CadrBudget.for_pipeline(eps, 0.1, "dp", True, GRAPH.n, "clip")
    assert budget.dsr == pytest.approx(0.05 * eps)  # fires at n = 60, ε = 0.75 (ll: 0.105)
    fleet = await run_cadr_fleet(GRAPH, method="clip", theta="auto-dev", eps=eps, seed=3)
    ref = private_run(GRAPH, "clip", "auto-dev", eps, 0.1, 3, pipeline="dp")
    assert fleet["budget"] == {"theta": budget.theta, "dsr": budget.dsr} == budget.as_dict()
    assert fleet["ledger_exact"] and fleet["ledger_min"] == fleet["ledger_max"] == eps
    assert ref.spent == {"geometric": budget.theta, "laplace": budget.dsr}
