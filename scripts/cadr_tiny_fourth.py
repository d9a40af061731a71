"""Tiny fleets, fourth fresh set: the no-search rule gated to ε >= 1 (issue 20, helper F).

    python scripts/cadr_tiny_fourth.py OUT.pkl

Pre-registration 4 (docs/cadr-private.md, "Small graphs: the limit and the guard";
committed before any run). The variant: the rule of ``scripts/cadr_tiny_third.py`` (no θ
search, θ = ⌈√D⌉, the search's budget back, where ``n < √K σ``) only at ε >=
``protocol.cadr_budget.SMALL_EPS_HIGH`` (1, where the dp split stops giving the θ search
most of ε); below it the θ search as today. Chosen after pre-registration 3 failed, on
helper B's second set and the third set (both: mixed at ε = 0.5, better from ε = 1 up).

Fourth set: ``FOURTH`` (fixed 2026-12-05 before any run; networkx seeds 1201-1213; no
graph of helper B's sets, of the third set or of ``cadr_user_new_graphs.py``), seeds 12,
13, 14, ε in 0.5, 1, 2, 3, 5, α = 0.1, LL. Per run: today's dp pipeline and, where the
ungated rule fires, the rule's run (``private_run`` with the integer θ = ⌈√D⌉); the gated
variant is the rule's run at ε >= 1 and today's below.

Criterion (cell = graph × ε, mean over seeds 12-14), over the cells where the VARIANT
fires: (a) the summed MAE and the summed excess over the constant true median both lower
than today's; (b) no cell where today is at or below all zeros and the variant above.
Where it does not fire it is today's pipeline by construction. Also reported, not a
criterion: the ungated rule (pre-registration 3's) on the same set, by ε.
"""

from __future__ import annotations

import pickle
import sys

import networkx as nx
import numpy as np

sys.path.insert(0, "scripts")
import cadr_tiny_third as third

SEEDS = (12, 13, 14)
VARIANT_EPS_MIN = 1.0  # protocol.cadr_budget.SMALL_EPS_HIGH

FOURTH = {  # fixed 2026-12-05 before any run (family, generator)
    "rtree-9": ("tree", lambda: nx.random_labeled_tree(9, seed=1201)),
    "rtree-20": ("tree", lambda: nx.random_labeled_tree(20, seed=1202)),
    "btree-4-2": ("tree", lambda: nx.balanced_tree(4, 2)),
    "cycle-6": ("cycle", lambda: nx.cycle_graph(6)),
    "cycle-18": ("cycle", lambda: nx.cycle_graph(18)),
    "star-6": ("star", lambda: nx.star_graph(5)),
    "star-17": ("star", lambda: nx.star_graph(16)),
    "gnp-10-0.4": ("er", lambda: nx.gnp_random_graph(10, 0.4, seed=1203)),
    "gnp-17-0.25": ("er", lambda: nx.gnp_random_graph(17, 0.25, seed=1204)),
    "gnp-23-0.12": ("er", lambda: nx.gnp_random_graph(23, 0.12, seed=1205)),
    "ba-12-m2": ("ba", lambda: nx.barabasi_albert_graph(12, 2, seed=1206)),
    "ba-21-m2": ("ba", lambda: nx.barabasi_albert_graph(21, 2, seed=1207)),
    "ws-12-k4": ("ws", lambda: nx.watts_strogatz_graph(12, 4, 0.2, seed=1208)),
    "ws-19-k4": ("ws", lambda: nx.watts_strogatz_graph(19, 4, 0.1, seed=1209)),
    "rr-5-12": ("regular", lambda: nx.random_regular_graph(5, 12, seed=1210)),
    "rr-3-22": ("regular", lambda: nx.random_regular_graph(3, 22, seed=1211)),
    "circulant-15-1-4": ("regular", lambda: nx.circulant_graph(15, [1, 4])),
    "turan-12-3": ("regular", lambda: nx.turan_graph(12, 3)),
    "kbip-2-10": ("bipartite", lambda: nx.complete_bipartite_graph(2, 10)),
    "bip-6-10": ("bipartite", lambda: nx.bipartite.random_graph(6, 10, 0.35, seed=1212)),
    "two-k5-cycle9": (
        "two components",
        lambda: third._two(nx.complete_graph(5), nx.cycle_graph(9)),
    ),
    "two-ba12-path8": (
        "two components",
        lambda: third._two(nx.barabasi_albert_graph(12, 1, seed=1213), nx.path_graph(8)),
    ),
    "windmill-4-3": ("named", lambda: nx.windmill_graph(4, 3)),
    "grid-3x6": ("named", lambda: nx.grid_2d_graph(3, 6)),
    "lollipop-4-6": ("named", lambda: nx.lollipop_graph(4, 6)),
}


def main(out: str) -> None:
    """Every run's figures (pickled) and the criterion's table."""
    rows = []
    for name, (family, make) in FOURTH.items():
        graph = third.graph_of(make())
        degrees = graph.degrees()
        median = float(np.mean(np.abs(degrees - np.floor(np.median(degrees)))))
        for eps in third.EPS_LIST:
            theta = third.rule_theta(eps, graph.n, graph.n - 1)
            for seed in SEEDS:
                with third.searching_always():  # "today": the pipeline before the rule
                    today = third.ref.private_run(graph, "ll", "auto-dev", eps, 0.1, seed, "dp")
                row = {"graph": name, "family": family, "n": graph.n, "eps": eps, "seed": seed}
                row |= {"median": median, "zero": float(degrees.mean()), "rule_theta": theta}
                row["today"] = third.figures(today)
                if theta is not None:
                    rule = third.ref.private_run(graph, "ll", theta, eps, 0.1, seed, "dp")
                    row["rule"] = third.figures(rule)
                rows.append(row)
                print(name, graph.n, eps, seed, today.theta, theta, flush=True)
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)
    print("\n## the gated variant (criterion)")
    third.report([r for r in rows if r["eps"] >= VARIANT_EPS_MIN])
    print("\n## the ungated rule (pre-registration 3's; not a criterion)")
    third.report(rows)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
