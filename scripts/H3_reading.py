"""Weak-count fleets at ε ≈ 1: the per-node prior read by the plain projection where the
count-signal ratio is in [PROJECTION_RATIO_MIN, UNIMODAL_RATIO_MAX) (issue 20, claims row
D9; helper H; docs/preregistration/H-projection.md).

    python scripts/H3_reading.py capture SET SEEDS OUT.pkl --reading main|projection|exact
    python scripts/H3_reading.py compare MAIN.pkl RULE.pkl

SET: ``fresh-h`` (``FRESH_H`` below: graph seeds 2701-2730, helper H's pre-registered
evaluation set) or any set of ``scripts/G_reading.py`` (``calib``, ``large``, ...).
``capture`` and ``compare`` are ``scripts/G_reading.py``'s (``projection`` is a tree
reading: ``degree_postprocess.PER_NODE_READING`` is set, nothing patched).
"""

from __future__ import annotations

import sys

import networkx as nx

sys.path.insert(0, "scripts")
import A2_signal as a2
import cadr_small_capture as capture
import G_reading as g

# Helper H's evaluation set, fixed before any run on it: graph seeds 2701-2730, never used
# before; 25 graphs of n 25-150 (the weak-count band) and 5 of n 160-240 (the border).
FRESH_H = {
    "sbm-56-2x28": lambda: a2._sbm([28, 28], 0.35, 0.04, 2701),
    "sbm-96-32+64": lambda: a2._sbm([32, 64], 0.3, 0.02, 2702),
    "sbm-42-14+28": lambda: a2._sbm([14, 28], 0.45, 0.05, 2703),
    "sbm-144-3x48": lambda: a2._sbm([48] * 3, 0.2, 0.01, 2704),
    "ba-27-m2": lambda: nx.barabasi_albert_graph(27, 2, seed=2705),
    "ba-78-m3": lambda: nx.barabasi_albert_graph(78, 3, seed=2706),
    "ba-136-m5": lambda: nx.barabasi_albert_graph(136, 5, seed=2707),
    "er-38-p0.2": lambda: nx.gnp_random_graph(38, 0.2, seed=2708),
    "er-92-p0.06": lambda: nx.gnp_random_graph(92, 0.06, seed=2709),
    "er-64-p0.35": lambda: nx.gnp_random_graph(64, 0.35, seed=2710),
    "gnm-120-500": lambda: nx.gnm_random_graph(120, 500, seed=2711),
    "plc-48-m3": lambda: nx.powerlaw_cluster_graph(48, 3, 0.3, seed=2712),
    "plc-112-m2": lambda: nx.powerlaw_cluster_graph(112, 2, 0.4, seed=2713),
    "ws-44-k6": lambda: nx.watts_strogatz_graph(44, 6, 0.3, seed=2714),
    "ws-100-k4": lambda: nx.watts_strogatz_graph(100, 4, 0.2, seed=2715),
    "ws-126-k8": lambda: nx.watts_strogatz_graph(126, 8, 0.3, seed=2716),
    "rr-32-d5": lambda: nx.random_regular_graph(5, 32, seed=2717),
    "rr-104-d6": lambda: nx.random_regular_graph(6, 104, seed=2718),
    "rgg-70-0.19": lambda: nx.random_geometric_graph(70, 0.19, seed=2719),
    "rgg-124-0.12": lambda: nx.random_geometric_graph(124, 0.12, seed=2720),
    "tree-random-68": lambda: nx.random_labeled_tree(68, seed=2721),
    "bip-35+75-p0.09": lambda: nx.bipartite.random_graph(35, 75, 0.09, seed=2722),
    "caveman-7x11": lambda: nx.relaxed_caveman_graph(7, 11, 0.2, seed=2723),
    "er-29-p0.3": lambda: nx.gnp_random_graph(29, 0.3, seed=2724),
    "ba-82-m1": lambda: nx.barabasi_albert_graph(82, 1, seed=2725),
    "ba-165-m2": lambda: nx.barabasi_albert_graph(165, 2, seed=2726),
    "er-185-p0.04": lambda: nx.gnp_random_graph(185, 0.04, seed=2727),
    "ws-205-k6": lambda: nx.watts_strogatz_graph(205, 6, 0.2, seed=2728),
    "plc-225-m3": lambda: nx.powerlaw_cluster_graph(225, 3, 0.3, seed=2729),
    "rgg-235-0.09": lambda: nx.random_geometric_graph(235, 0.09, seed=2730),
}

_g_graphs = g._graphs


def _graphs(which):
    if which == "fresh-h":
        for name, make in FRESH_H.items():
            yield name, capture._graph_of(make())
    else:
        yield from _g_graphs(which)


g._graphs = _graphs

if __name__ == "__main__":
    g.main()
