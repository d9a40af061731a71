"""``bench cadr`` states the privacy claim of what it ran, on every transport (issue 20).

``ldpfleet run`` wrote the claim to results.json, but ``bench cadr``'s JSON had only
``degree_bound_source``: a bench user with ``--degree-bound graph-max`` (D covered by no ε)
or the negotiated ll saw no sentence saying what is and is not covered (helper N's note,
2026-12-06)."""

from __future__ import annotations

import json

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

GRAPH = "barabasi_albert:n=60,m=3"


def _bench(*extra: str) -> dict:
    args = ["bench", "cadr", "--graph", GRAPH, "--eps", "1", "--runs", "1", "--json", *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("transport", ["reference", "memory"])
def test_the_default_clip_run_claims_its_whole_view(transport):
    claim = _bench("--transport", transport)["privacy_claim"]
    assert claim["not_covered"] == []
    assert "IS ε-node-LDP" in claim["statement"]
    assert claim["charged_total"] == pytest.approx(1.0)


@pytest.mark.parametrize("transport", ["reference", "memory"])
def test_the_same_claim_in_process_and_over_the_fleet_for_ll(transport):
    claim = _bench("--transport", transport, "--method", "ll")["privacy_claim"]
    assert claim["not_covered"]  # the negotiated methods: node-LDP of the view not established
    assert "NOT" in claim["statement"]


def test_graph_max_degree_bound_is_named_uncovered():
    claim = _bench("--degree-bound", "graph-max")["privacy_claim"]
    uncovered = [part["part"] for part in claim["parts"] if part["covered"] == "no"]
    assert claim["not_covered"] == uncovered and "graph-max" in uncovered[0]
