"""An edge list written by networkx (``nx.write_edgelist(G, path)``, whose default
``data=True`` ends every line in the edge's attribute dict, ``{}`` for none) loads; one
with attributes is refused naming networkx and ``data=False`` (helper B2)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from ldpfleet.devices.graphs import load_edge_list
from ldpfleet.protocol.errors import ParameterError


def test_networkx_default_edge_list_loads(tmp_path):
    """Before: "line 1: expected two node ids, got '0 5 {}' (3 columns: ...)"."""
    g = nx.barabasi_albert_graph(60, 2, seed=3)
    path = tmp_path / "ba.edges"
    nx.write_edgelist(g, path)  # "0 2 {}" a line
    assert path.read_text().splitlines()[0].endswith(" {}")
    loaded = load_edge_list(path)
    assert (loaded.n, loaded.edges()) == (g.number_of_nodes(), g.number_of_edges())
    assert np.array_equal(np.sort(loaded.degrees()), np.sort([d for _, d in g.degree()]))


def test_networkx_edge_attributes_are_refused_with_the_writer_option(tmp_path):
    g = nx.Graph()
    g.add_edge(1, 2)
    g.add_edge(2, 3, weight=0.5)
    path = tmp_path / "w.edges"
    nx.write_edgelist(g, path)
    with pytest.raises(ParameterError) as caught:
        load_edge_list(path)
    shown = "\"2 3 {'weight': 0.5}\""
    assert f"line 2: expected two node ids, got {shown}" in caught.value.reason
    assert "nx.write_edgelist(G, path, data=False)" in caught.value.reason


def test_braces_inside_a_label_are_not_edge_data(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text("a{} b\nb c{}\n")
    loaded = load_edge_list(path)
    assert loaded.n == 3 and loaded.edges() == 2  # a{}, b, c{}
