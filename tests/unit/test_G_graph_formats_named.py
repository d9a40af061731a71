"""A graph in another format than an edge list is named, with the line that converts it
(helper G's user trial, 2026-12-06): GraphML was "a header row of column names?", a Pajek
file "an isolated node? write it as a self loop, '*Edges' twice", and networkx's adjacency
list "the 3rd column looks like a weight". The suggested conversions are run here."""

from __future__ import annotations

import subprocess
import sys

import networkx as nx
import pytest
from ldpfleet.devices.graphs import load_edge_list
from ldpfleet.protocol.errors import ParameterError

GRAPH = nx.erdos_renyi_graph(40, 0.1, seed=3)


def _refusal(path) -> str:
    with pytest.raises(ParameterError) as info:
        load_edge_list(path)
    return str(info.value)


def _same_graph(path) -> None:
    g = load_edge_list(path)
    assert (g.n, g.edges()) == (GRAPH.number_of_nodes(), GRAPH.number_of_edges())
    assert sorted(g.degrees().tolist()) == sorted(d for _, d in GRAPH.degree())


@pytest.mark.parametrize(
    ("name", "write", "what"),
    [
        ("g.graphml", nx.write_graphml, "(an XML file (GraphML?), not an edge list"),
        ("g.net", nx.write_pajek, "(a Pajek .net file, not an edge list"),
        ("g.gml", nx.write_gml, "(a GML file, not an edge list"),
    ],
)
def test_a_networkx_format_is_named_and_its_conversion_works(tmp_path, name, write, what):
    write(GRAPH, tmp_path / name)
    message = _refusal(tmp_path / name)
    assert what in message and "header" not in message and "isolated" not in message, message
    command = message.split("e.g. python -c ", 1)[1].split("; its labels", 1)[0]
    code = command.strip('"')
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True)
    _same_graph(tmp_path / "edges.txt")


def test_an_adjacency_list_is_named_and_its_split_works(tmp_path):
    path = tmp_path / "adj.txt"
    path.write_text("\n".join(nx.generate_adjlist(GRAPH)) + "\n")
    message = _refusal(path)
    assert "an adjacency list, a node then its neighbours?" in message, message
    assert "looks like a weight" not in message
    command = message.split("e.g. ", 1)[1].removesuffix(")")
    subprocess.run(command, shell=True, cwd=tmp_path, check=True)
    _same_graph(tmp_path / "edges.txt")


@pytest.mark.parametrize(
    "body",
    [b"1 2 0.5\n2 3 1.5\n", b"1 2 1\n5\n", b"1 2 1\n2 3 1\n3 4 1\n", b"1 2 x\n2 3 4 5\n"],
)
def test_weighted_lists_are_not_called_adjacency_lists(tmp_path, body):
    path = tmp_path / "g.txt"
    path.write_bytes(body)
    assert "adjacency list" not in _refusal(path)


def test_a_konect_file_keeps_its_weight_hint(tmp_path):
    path = tmp_path / "out.x"
    path.write_bytes(b"% sym positive\n1 2 3\n2 3 1 1262304000\n")
    message = _refusal(path)
    assert "the KONECT header on line 1 says the edges carry 'positive' weights" in message
    assert "adjacency list" not in message
