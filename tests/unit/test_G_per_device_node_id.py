"""results.json's per_device names each device's node in the user's graph file
(helper G's user trial, 2026-12-06): devices are n00 .. in sorted id order, and a graph of
labels (``dev_a dev_b``) or of sparse integer ids had no way back from a device's release
to the node it belongs to. A generator graph has no file ids and no ``node_id``."""

from __future__ import annotations

import networkx as nx
import pytest

import ldpfleet

SCENARIO = """
[scenario]
name = "ids"
seed = 1
[graph]
source = "{source}"
[cadr]
eps = 2.0
[broker]
url = "memory"
"""


def _write_graph(path, label) -> dict:
    g = nx.gnp_random_graph(30, 0.2, seed=7)
    path.write_text("".join(f"{label(u)} {label(v)}\n" for u, v in g.edges()))
    return {label(u): d for u, d in g.degree()}


@pytest.mark.parametrize(
    "label", [lambda i: f"dev_{i:02d}", lambda i: 1000 + 37 * i], ids=["labels", "integers"]
)
def test_node_id_maps_each_device_back_to_its_node(tmp_path, label) -> None:
    degrees = _write_graph(tmp_path / "g.txt", label)
    (tmp_path / "s.toml").write_text(SCENARIO.format(source="g.txt"))
    results = ldpfleet.run(str(tmp_path / "s.toml"), broker="memory", out_dir=tmp_path / "o")
    per_device = results["per_device"]
    ids = [entry["node_id"] for entry in per_device.values()]
    assert ids == sorted(degrees)  # devices in sorted id order
    assert all(entry["degree"] == degrees[entry["node_id"]] for entry in per_device.values())


def test_a_generator_graph_has_no_node_id(tmp_path) -> None:
    (tmp_path / "s.toml").write_text(SCENARIO.format(source="barabasi_albert:n=30,m=2,seed=1"))
    results = ldpfleet.run(str(tmp_path / "s.toml"), broker="memory", out_dir=tmp_path / "o")
    assert all("node_id" not in entry for entry in results["per_device"].values())
