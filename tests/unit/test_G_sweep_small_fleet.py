"""The sweep's θ-accuracy table on a fleet the small-fleet rule takes (helper G's user
trial, 2026-12-06): its 'rule' row measured a θ search no dp run makes there (a 10-node
graph at ε = 0.5 and 2: `bench cadr` reports theta_chosen_by = "small-fleet", θ = 3), with
nothing saying so. The row now carries ``small_fleet_theta`` (the run's θ) and the table
says "rule, not run (θ = 3)"; a fleet that searches keeps ``small_fleet_theta`` None."""

from __future__ import annotations

import networkx as nx
import numpy as np
from ldpfleet.app.cadr_sweep import _theta_accuracy_lines, theta_accuracy
from ldpfleet.collector.cadr_reference import private_run
from ldpfleet.devices.graphs import Graph


def _graph(n: int, p: float, seed: int) -> Graph:
    g = nx.gnp_random_graph(n, p, seed=seed)
    e = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2)
    return Graph.from_edges(n, e[:, 0], e[:, 1], name=f"gnp{n}")


def test_the_rule_row_of_a_tiny_fleet_names_the_small_fleet_theta() -> None:
    graph = _graph(10, 0.4, 10)
    acc = theta_accuracy(graph, [0.5, 2.0], 0.1, draws=2)
    rules = [r for r in acc["rows"] if r["fraction"] is None]
    for row in rules:
        run = private_run(graph, "clip", "auto-dev", row["eps"], 0.1, 0, "dp")
        assert run.theta_chosen_by == "small-fleet"
        assert row["small_fleet_theta"] == run.theta == 3
    fixed = [r for r in acc["rows"] if r["fraction"] is not None]
    assert all(r["small_fleet_theta"] is None for r in fixed)
    text = "\n".join(_theta_accuracy_lines(acc))
    assert text.count("| rule, not run (θ = 3) |") == 2


def test_a_fleet_that_searches_keeps_the_plain_rule_row() -> None:
    graph = _graph(100, 0.06, 11)
    acc = theta_accuracy(graph, [2.0], 0.1, draws=2)
    rule = next(r for r in acc["rows"] if r["fraction"] is None)
    assert private_run(graph, "clip", "auto-dev", 2.0, 0.1, 0, "dp").theta_chosen_by == "search"
    assert rule["small_fleet_theta"] is None
    text = "\n".join(_theta_accuracy_lines(acc))
    assert "| 2 | rule | " in text and "| rule, not run" not in text
