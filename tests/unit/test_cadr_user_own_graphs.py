"""A user's own graphs through the CADR-LDP path (2026-12-05, issue 20, helper B).

The edge-list shapes of ``scripts/cadr_user_new_graphs.py`` (label ids, every edge twice,
self loops, end-of-line comments, both directions, ids above 2^32, gzip with CRLF, isolated
nodes written as self loops) read back to the graph that was written, and the default
pipeline runs on the smallest graphs (n = 2, 3) with its baselines, an exact ledger and a
release inside [0, D]. Regression tests: they pass on the code as it stands.
"""

from __future__ import annotations

import gzip

import networkx as nx
import numpy as np
import pytest
from ldpfleet.collector.cadr_reference import private_run
from ldpfleet.devices.graphs import Graph, load_graph
from ldpfleet.scenarios.cadr_run import scenario_graph_source


def _read(path) -> Graph:
    return load_graph(scenario_graph_source(str(path), None))


def _degrees(graph: nx.Graph) -> list[int]:
    return sorted(d for _, d in graph.degree())


def test_labels_duplicates_self_loops_and_comments_read_back(tmp_path):
    g = nx.florentine_families_graph()
    lines = ["# Florentine families, every edge twice, both directions"]
    for i, (u, v) in enumerate(g.edges()):
        lines += [f"{u} {v}  # married", f"{v}\t{u}", f"{u} {v}"]
        if i % 3 == 0:
            lines.append(f"{u} {u}")
    path = tmp_path / "florentine.edges"
    path.write_text("\n".join(lines) + "\n")
    graph = _read(path)
    assert (graph.n, graph.edges()) == (g.number_of_nodes(), g.number_of_edges())
    assert sorted(graph.degrees().tolist()) == _degrees(g)


def test_isolated_nodes_written_as_self_loops_are_devices_of_degree_zero(tmp_path):
    g = nx.gnp_random_graph(50, 0.1, seed=208)
    lines = [f"{u} {v}" for u, v in g.edges()] + [f"{v} {v}" for v in range(50, 80)]
    path = tmp_path / "isolated.txt"
    path.write_text("\n".join(lines) + "\n")
    graph = _read(path)
    touched = {x for e in g.edges() for x in e}
    assert graph.n == len(touched) + 30
    assert int((graph.degrees() == 0).sum()) == 30


def test_gzip_without_suffix_crlf_and_large_ids_read_back(tmp_path):
    g = nx.barabasi_albert_graph(300, 2, seed=201)
    text = "\r\n".join(f"{u + 10**12} {v + 10**12}" for u, v in g.edges()) + "\r\n"
    path = tmp_path / "g.dat"
    path.write_bytes(gzip.compress(text.encode()))
    graph = _read(path)
    assert (graph.n, graph.edges()) == (300, g.number_of_edges())
    assert sorted(graph.degrees().tolist()) == _degrees(g)


@pytest.mark.parametrize("edges", [[(0, 1)], [(0, 1), (1, 2)]], ids=["n2", "path3"])
@pytest.mark.parametrize("eps", [0.5, 5.0])
def test_the_smallest_graphs_run_with_baselines_and_an_exact_ledger(edges, eps):
    u, v = zip(*edges, strict=True)
    graph = Graph.from_edges(max(u + v) + 1, np.array(u), np.array(v))
    run = private_run(graph, "ll", "auto-dev", eps, 0.1, 0, pipeline="dp")
    assert sum(run.spent.values()) == pytest.approx(eps, abs=1e-12)
    assert set(run.baselines) == {"constant_median_oracle", "all_zero"}
    assert 1 <= run.theta <= graph.n - 1
    for name in ("raw", "postprocessed"):
        assert np.isfinite(run.__dict__[name]["mae"])
    assert 0 <= run.mae <= graph.n - 1  # every estimate lies in [0, D], D = n - 1
