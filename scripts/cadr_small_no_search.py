"""Tiny fleets: is the θ search worth its ε_θ where its counts cannot place the fleet?

    python scripts/cadr_small_no_search.py cal        # cal + fresh graphs, seeds 0-5
    python scripts/cadr_small_no_search.py fresh2     # new tiny graphs, seeds 6-8

Per graph, ε in 0.5, 1, 2, 3, 5 and seed, for the runs where the small-fleet guard fires
(``n < √K σ``: ``collector.degree_postprocess.count_signal_ratio`` below 1, a function of
the public n, ε_θ, K and parties, known before the θ search): the dp pipeline with the
guard (``guard``) against the same budget WITHOUT a θ search — θ a public function of D
(``D``, ``half`` = ⌊D/2⌋, ``sqrt`` = ⌈√D⌉), its ε_θ given to DSR (``private_run`` with an
integer θ: ``CadrBudget.for_pipeline(..., searched=False)``) and the release the DSR
values' own deconvolution's posterior medians. Needs a change of the budget split
(``protocol/cadr_budget.py``, outside helper B's brief): measured here, not landed.
Issue 20, helper B, 2026-12-05; docs/cadr-private.md "Small graphs: the limit and the
guard".
"""

from __future__ import annotations

import sys
from collections import defaultdict

import ldpfleet.collector.cadr_reference as ref
import networkx as nx
import numpy as np
from ldpfleet.collector import degree_postprocess as dpp

sys.path.insert(0, "scripts")
import cadr_small_capture as cap

# the rule this script measured before it landed: one definition, protocol.cadr_budget's
from ldpfleet.protocol.cadr_budget import small_fleet_theta

RULES = {"D": lambda d: d, "half": lambda d: max(1, d // 2), "sqrt": lambda d: math_sqrt(d)}


def math_sqrt(d: int) -> int:
    """⌈√D⌉, at least 1."""
    return max(1, int(np.ceil(np.sqrt(d))))


FRESH2 = {  # fixed 2026-12-05 before any run (networkx seeds 701-703)
    "tetrahedral": nx.tetrahedral_graph,
    "cubical": nx.cubical_graph,
    "dodecahedral": nx.dodecahedral_graph,
    "icosahedral": nx.icosahedral_graph,
    "truncated-tetrahedron": nx.truncated_tetrahedron_graph,
    "sedgewick-maze": nx.sedgewick_maze_graph,
    "pappus": nx.pappus_graph,
    "house": nx.house_graph,
    "diamond": nx.diamond_graph,
    "dgm-3": lambda: nx.dorogovtsev_goltsev_mendes_graph(3),
    "gnp-18-0.25": lambda: nx.gnp_random_graph(18, 0.25, seed=701),
    "ba-16-m2": lambda: nx.barabasi_albert_graph(16, 2, seed=702),
    "ws-20-k4": lambda: nx.watts_strogatz_graph(20, 4, 0.3, seed=703),
    "star-20": lambda: nx.star_graph(19),
    "path-10": lambda: nx.path_graph(10),
    "wheel-10": lambda: nx.wheel_graph(10),
    "complete-7": lambda: nx.complete_graph(7),
    "kbip-3-9": lambda: nx.complete_bipartite_graph(3, 9),
    "ladder-8": lambda: nx.ladder_graph(8),
    "hypercube-4": lambda: nx.hypercube_graph(4),
    "grid-4x5": lambda: nx.grid_2d_graph(4, 5),
    "tree-2-3": lambda: nx.balanced_tree(2, 3),
    "barbell-4-3": lambda: nx.barbell_graph(4, 3),
}


def _graphs(which: str):
    if which == "cal":
        for set_name in ("cal", "fresh"):
            for name, make in cap._sets()[set_name].items():
                yield name, cap._graph_of(make()), (0, 1, 2) if set_name == "cal" else (3, 4, 5)
    elif which == "fresh2":
        for name, make in FRESH2.items():
            yield name, cap._graph_of(make()), (6, 7, 8)
    else:
        raise SystemExit(f"set: {which!r} is not cal or fresh2")


def main() -> None:
    cap.ref._release_scores = cap._spy
    cells: dict = defaultdict(list)
    for name, graph, seeds in _graphs(sys.argv[1]):
        degrees = graph.degrees()
        median_mae = float(np.mean(np.abs(degrees - np.floor(np.median(degrees)))))
        for eps in cap.EPS_LIST:
            for seed in seeds:
                with cap.searching_always():  # "today": the pipeline before the rule
                    run = ref.private_run(graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
                c, s = cap.captured, cap.captured["search"]
                noise = dpp.ThetaNoise(s["eps"], s["noise_parties"], len(s["bucket_sums"]))
                prior = dpp.degree_prior(s["bucket_sums"], s["thresholds"], c["bound"], graph.n)
                post = dpp.post_process(
                    c["released"], c["theta"], c["eps_dsr"], prior, theta_noise=noise
                )
                fires = small_fleet_theta(eps, 0.1, graph.n, c["bound"]) is not None
                assert fires == (not post.prior_trusted), (name, eps, seed)
                if post.prior_trusted:
                    continue
                row = {"ours": run.mae, "median": median_mae, "zero": float(degrees.mean())}
                row["guard"] = float(np.mean(np.abs(degrees - post.estimates)))
                for label, rule in RULES.items():
                    theta = rule(graph.n - 1)
                    row[label] = ref.private_run(graph, "ll", theta, eps, 0.1, seed, "dp").mae
                cells[(name, graph.n, eps)].append(row)
    _report(cells)


def _report(cells: dict) -> None:
    keys = ["ours", "guard", *RULES, "median", "zero"]
    print("| graph | n | ε | " + " | ".join(keys) + " |")
    print("|" + "---|" * (len(keys) + 3))
    total: dict = defaultdict(float)
    for (name, n, eps), runs in cells.items():
        m = {k: float(np.mean([r[k] for r in runs])) for k in keys}
        print(f"| {name} | {n} | {eps:g} | " + " | ".join(f"{m[k]:.3f}" for k in keys) + " |")
        for k in keys:
            total[f"{k} sum"] += m[k]
            total[f"{k} excess"] += max(0.0, m[k] - m["median"])
            total[f"{k} above zero"] += m[k] > m["zero"] + 1e-9
    print(f"\n{len(cells)} cells with a guarded run (mean over its guarded seeds):")
    for k in keys:
        print(
            f"- {k}: "
            + ", ".join(f"{x} {total[f'{k} {x}']:.2f}" for x in ("sum", "excess", "above zero"))
        )


if __name__ == "__main__":
    main()
