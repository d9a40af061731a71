"""Small ε: the dp pipeline's small-fleet θ rule on larger fleets (issue 20, helper E).

    python scripts/cadr_small_eps_grid.py cal   OUT.json    # calibration graphs, seeds 0-2
    python scripts/cadr_small_eps_grid.py fresh OUT.json    # fresh graphs, seeds 10-12
    python scripts/cadr_small_eps_grid.py table OUT.json    # the markdown tables of a run

``protocol.cadr_budget.small_fleet_theta`` skips the θ search and runs θ = ⌈√D⌉ when
``n < √K σ``. At small ε that fires on large fleets (n ≤ 142 at ε = 0.1, 1,428 at 0.01,
2,858 at 0.005). For every graph and every ε in ``EPS_GRID`` where it fires (D = n - 1),
and three seeds, in process (``collector.cadr_reference.private_run``, method ll,
α = 0.1), the per-node MAE of:

- ``rule``: the pipeline as it is (θ = ⌈√D⌉, no search);
- ``search``: the θ search forced on (``cadr_small_capture.searching_always``; only where
  ε >= ``theta_search_min_eps``: at ε = 0.005 no search can run);
- ``theta=K``: the same no-search split with a given θ = K (other public θ choices);
- ``median``: every node the TRUE median degree (a non-private oracle);
- ``zero``: every node 0.

Graph families: Erdős–Rényi, Barabási–Albert, Watts–Strogatz, powerlaw cluster, SBM,
random regular, random trees, and node-induced subgraphs of ego-Facebook and wiki-Vote
(random node sets: sparse; BFS balls: dense regions). The calibration and fresh sets use
different sizes, generator seeds and run seeds.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

import ldpfleet.collector.cadr_reference as ref
import networkx as nx
import numpy as np
from ldpfleet.protocol.cadr_budget import small_fleet_theta, theta_search_min_eps

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cadr_small_capture as cap

ALPHA = 0.1
EPS_GRID = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
FIXED_THETAS = (1, 2, 4, 8)
SETS = {  # sizes, generator seed base and run seeds, fixed before any run
    "cal": {"sizes": (40, 100, 250, 600, 1400, 2500), "graph_seed": 100, "seeds": (0, 1, 2)},
    "fresh": {"sizes": (30, 70, 180, 450, 1000, 2000), "graph_seed": 500, "seeds": (10, 11, 12)},
}
DATA = Path(__file__).resolve().parent.parent / "data"
REAL = {
    "facebook": DATA / "snap-ego-facebook" / "facebook_combined.txt.gz",
    "wiki": DATA / "snap-wiki-vote" / "Wiki-Vote.txt.gz",
}


def _real(name: str) -> nx.Graph:
    """A SNAP edge list as an undirected simple graph."""
    with gzip.open(REAL[name], "rt") as fh:
        g = nx.read_edgelist((ln for ln in fh if not ln.startswith("#")), nodetype=int)
    g = nx.Graph(g)
    g.remove_edges_from(nx.selfloop_edges(g))
    return g


def _random_nodes(g: nx.Graph, n: int, seed: int) -> nx.Graph:
    """The subgraph induced by n uniformly random nodes."""
    nodes = np.random.default_rng(seed).choice(sorted(g.nodes), size=n, replace=False)
    return g.subgraph(nodes.tolist()).copy()


def _bfs_ball(g: nx.Graph, n: int, seed: int) -> nx.Graph:
    """The subgraph induced by the first n nodes of a BFS from a random node."""
    rng = np.random.default_rng(seed)
    nodes = sorted(g.nodes)
    while True:
        start = nodes[int(rng.integers(len(nodes)))]
        ball = []
        for node in nx.bfs_tree(g, start):
            ball.append(node)
            if len(ball) == n:
                return g.subgraph(ball).copy()


def graphs(set_name: str):
    """(family, name, networkx graph) of one set."""
    spec = SETS[set_name]
    base = spec["graph_seed"]
    real = {name: _real(name) for name in REAL}
    for i, n in enumerate(spec["sizes"]):
        s = base + 10 * i
        yield "ER", f"er-{n}", nx.gnp_random_graph(n, min(1.0, 6.0 / n), seed=s)
        yield "BA", f"ba-{n}", nx.barabasi_albert_graph(n, 3, seed=s + 1)
        yield "WS", f"ws-{n}", nx.watts_strogatz_graph(n, 6, 0.2, seed=s + 2)
        yield "PLC", f"plc-{n}", nx.powerlaw_cluster_graph(n, 3, 0.3, seed=s + 3)
        sizes = [n // 4] * 3 + [n - 3 * (n // 4)]
        probs = [[min(1.0, 8.0 / n) if a == b else min(1.0, 1.0 / n) for b in range(4)]
                 for a in range(4)]  # fmt: skip
        yield "SBM", f"sbm-{n}", nx.stochastic_block_model(sizes, probs, seed=s + 4)
        yield "RR", f"rr-{n}", nx.random_regular_graph(4, n, seed=s + 5)
        yield "tree", f"tree-{n}", nx.random_labeled_tree(n, seed=s + 6)
        if n >= 200:
            for name, g in real.items():
                yield "real", f"{name}-rand-{n}", _random_nodes(g, n, s + 7)
                yield "real", f"{name}-bfs-{n}", _bfs_ball(g, n, s + 8)


def _mae(graph, theta_rule, eps: float, seed: int) -> float:
    return float(ref.private_run(graph, "ll", theta_rule, eps, ALPHA, seed, pipeline="dp").mae)


def measure(set_name: str, out: str) -> None:
    """Run one set and write its rows (one per graph, ε and seed) as JSON."""
    rows = []
    search_floor = theta_search_min_eps(ALPHA)
    for family, name, g in graphs(set_name):
        graph = cap._graph_of(g)
        degrees = graph.degrees()
        base = ref.trivial_baselines(degrees)
        for eps in EPS_GRID:
            rule_theta = small_fleet_theta(eps, ALPHA, graph.n, graph.n - 1)
            if rule_theta is None:
                continue
            for seed in SETS[set_name]["seeds"]:
                run = ref.private_run(graph, "ll", "auto-dev", eps, ALPHA, seed, pipeline="dp")
                assert run.theta_chosen_by == "small-fleet", (name, eps)
                row = {"family": family, "graph": name, "n": graph.n, "eps": eps, "seed": seed,
                       "rule_theta": run.theta, "rule": float(run.mae),
                       "median": base["constant_median_oracle"]["mae"],
                       "zero": base["all_zero"]["mae"], "search": None}  # fmt: skip
                if eps >= search_floor:
                    with cap.searching_always():
                        searched = ref.private_run(graph, "ll", "auto-dev", eps, ALPHA, seed, "dp")
                    row["search"], row["search_theta"] = float(searched.mae), searched.theta
                for theta in FIXED_THETAS:
                    row[f"theta={theta}"] = _mae(graph, theta, eps, seed)
                rows.append(row)
            print(name, graph.n, eps, {k: round(v, 2) for k, v in row.items()
                                        if isinstance(v, float)}, flush=True)  # fmt: skip
    Path(out).write_text(json.dumps(rows, indent=1))


def cells(rows: list[dict]) -> dict:
    """Mean over seeds per (family, graph, n, ε)."""
    grouped = defaultdict(list)
    for r in rows:
        grouped[(r["family"], r["graph"], r["n"], r["eps"])].append(r)
    keys = ["rule", "search", *(f"theta={t}" for t in FIXED_THETAS), "median", "zero"]
    out = {}
    for cell, runs in grouped.items():
        out[cell] = {
            k: (None if runs[0][k] is None else float(np.mean([r[k] for r in runs]))) for k in keys
        }
    return out


def table(path: str) -> None:
    """Print the summed and per-family summaries of a run."""
    by_cell = cells(json.loads(Path(path).read_text()))
    keys = list(next(iter(by_cell.values())))
    print(f"{len(by_cell)} cells (graph × ε where the rule fires; mean of 3 seeds)\n")
    for label, select in (
        ("all cells", lambda c, v: True),
        ("cells with a search (ε >= 0.005814)", lambda c, v: v["search"] is not None),
    ):
        chosen = {c: v for c, v in by_cell.items() if select(c, v)}
        print(f"{label}: {len(chosen)}")
        print("| | " + " | ".join(keys) + " |\n|" + "---|" * (len(keys) + 1))
        for stat in ("summed MAE", "cells above median", "cells above zero"):
            vals = []
            for k in keys:
                xs = [v for v in chosen.values() if v[k] is not None]
                if not xs:
                    vals.append("–")
                elif stat == "summed MAE":
                    vals.append(f"{sum(v[k] for v in xs):.1f}")
                elif stat == "cells above median":
                    vals.append(str(sum(v[k] > v["median"] + 1e-9 for v in xs)))
                else:
                    vals.append(str(sum(v[k] > v["zero"] + 1e-9 for v in xs)))
            print(f"| {stat} | " + " | ".join(vals) + " |")
        print()
    print("per family, summed MAE over all cells (search: over its cells; rule there):")
    print("| family | cells | " + " | ".join(keys) + " | rule (search cells) |")
    print("|" + "---|" * (len(keys) + 3))
    for family in sorted({c[0] for c in by_cell}):
        chosen = [v for c, v in by_cell.items() if c[0] == family]
        vals = [f"{sum(v[k] for v in chosen if v[k] is not None):.1f}" for k in keys]
        rule_s = sum(v["rule"] for v in chosen if v["search"] is not None)
        print(f"| {family} | {len(chosen)} | " + " | ".join(vals) + f" | {rule_s:.1f} |")
    print("\nper n band (sum):")
    for lo, hi in ((0, 100), (100, 500), (500, 1500), (1500, 4000)):
        chosen = [v for c, v in by_cell.items() if lo <= c[2] < hi]
        if chosen:
            print(
                f"- n in [{lo},{hi}): {len(chosen)} cells; "
                + ", ".join(
                    f"{k} {sum(v[k] for v in chosen if v[k] is not None):.1f}" for k in keys
                )
            )


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in ("cal", "fresh", "table"):
        raise SystemExit(__doc__)
    if sys.argv[1] == "table":
        table(sys.argv[2])
    else:
        measure(sys.argv[1], sys.argv[2])


if __name__ == "__main__":
    main()
