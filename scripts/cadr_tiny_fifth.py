"""Tiny fleets, fifth fresh set: the no-search rule gated to ε >= 2 (issue 20, helper F).

    python scripts/cadr_tiny_fifth.py OUT.pkl

Pre-registration 5 (docs/cadr-private.md, "Small graphs: the limit and the guard";
committed before any run). The variant: the rule of ``scripts/cadr_tiny_third.py`` (no θ
search, θ = ⌈√D⌉, the search's budget back, where ``n < √K σ``) only at ε >= 2; below it
the θ search as today. Chosen after pre-registrations 3 (ungated) and 4 (ε >= 1) failed
criterion (b), from the by-ε tables of helper B's second set and the third and fourth
sets: at ε >= 2 the rule was better in aggregate on all three with no cell newly above
all zeros; at ε = 1 worse in aggregate on the fourth set and one cell newly above all
zeros there. A constant fitted on three sets: evaluated here on graphs and seeds none has
seen, and at ε = 10, which none ran.

Fifth set: ``FIFTH`` (fixed 2026-12-05 before any run; networkx seeds 1301-1315; no graph
of helper B's sets, the third or fourth set, or ``cadr_user_new_graphs.py``), seeds 15,
16, 17, ε in 1, 2, 3, 5, 10, α = 0.1, LL. Per run: today's dp pipeline and, where the
ungated rule fires, the rule's run.

Criterion (cell = graph × ε, mean over seeds 15-17), over the cells where the VARIANT
fires (ε >= 2): (a) the summed MAE and the summed excess over the constant true median both
lower than today's; (b) no cell where today is at or below all zeros and the variant
above. Also reported, not a criterion: the rule at ε = 1 on the same set.
"""

from __future__ import annotations

import sys

import networkx as nx

sys.path.insert(0, "scripts")
import cadr_tiny_fourth as fourth
import cadr_tiny_third as third

SEEDS = (15, 16, 17)
EPS_LIST = (1, 2, 3, 5, 10)
VARIANT_EPS_MIN = 2.0


def _undirected(g: nx.Graph) -> nx.Graph:
    return nx.Graph(g.to_undirected())


FIFTH = {  # fixed 2026-12-05 before any run (family, generator)
    "rtree-12": ("tree", lambda: nx.random_labeled_tree(12, seed=1301)),
    "rtree-23": ("tree", lambda: nx.random_labeled_tree(23, seed=1302)),
    "rary-3-16": ("tree", lambda: nx.full_rary_tree(3, 16)),
    "cycle-10": ("cycle", lambda: nx.cycle_graph(10)),
    "cycle-21": ("cycle", lambda: nx.cycle_graph(21)),
    "star-10": ("star", lambda: nx.star_graph(9)),
    "star-22": ("star", lambda: nx.star_graph(21)),
    "gnp-8-0.5": ("er", lambda: nx.gnp_random_graph(8, 0.5, seed=1303)),
    "gnp-14-0.35": ("er", lambda: nx.gnp_random_graph(14, 0.35, seed=1304)),
    "gnp-19-0.2": ("er", lambda: nx.gnp_random_graph(19, 0.2, seed=1305)),
    "gnp-21-0.1": ("er", lambda: nx.gnp_random_graph(21, 0.1, seed=1306)),
    "ba-10-m3": ("ba", lambda: nx.barabasi_albert_graph(10, 3, seed=1307)),
    "ba-15-m1": ("ba", lambda: nx.barabasi_albert_graph(15, 1, seed=1308)),
    "ba-22-m2": ("ba", lambda: nx.barabasi_albert_graph(22, 2, seed=1309)),
    "ws-16-k4": ("ws", lambda: nx.watts_strogatz_graph(16, 4, 0.5, seed=1310)),
    "ws-10-k2": ("ws", lambda: nx.watts_strogatz_graph(10, 2, 0.3, seed=1311)),
    "rr-4-16": ("regular", lambda: nx.random_regular_graph(4, 16, seed=1312)),
    "rr-6-14": ("regular", lambda: nx.random_regular_graph(6, 14, seed=1313)),
    "circulant-20-1-2-5": ("regular", lambda: nx.circulant_graph(20, [1, 2, 5])),
    "paley-17": ("regular", lambda: _undirected(nx.paley_graph(17))),
    "kbip-5-5": ("bipartite", lambda: nx.complete_bipartite_graph(5, 5)),
    "kbip-3-15": ("bipartite", lambda: nx.complete_bipartite_graph(3, 15)),
    "bip-7-9": ("bipartite", lambda: nx.bipartite.random_graph(7, 9, 0.3, seed=1314)),
    "two-k4-star8": ("two components", lambda: third._two(nx.complete_graph(4), nx.star_graph(8))),
    "two-cycle10-gnp8": (
        "two components",
        lambda: third._two(nx.cycle_graph(10), nx.gnp_random_graph(8, 0.5, seed=1315)),
    ),
    "tadpole-5-4": ("named", lambda: nx.tadpole_graph(5, 4)),
    "barbell-3-4": ("named", lambda: nx.barbell_graph(3, 4)),
    "multipartite-2-3-4": ("named", lambda: nx.complete_multipartite_graph(2, 3, 4)),
}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    fourth.FOURTH, fourth.SEEDS, third.EPS_LIST = FIFTH, SEEDS, EPS_LIST
    fourth.VARIANT_EPS_MIN = VARIANT_EPS_MIN
    fourth.main(sys.argv[1])
