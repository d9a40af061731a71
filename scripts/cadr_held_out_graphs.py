"""Two held-out graphs for the CADR-LDP release, measured against the trivial baselines.

Built 2026-12-04 by a QA helper to resemble SNAP graphs the project never used, after the
pipeline's rules were fixed (nothing was tuned on them):

- ``ca-like``: a synthetic co-authorship graph (papers are cliques of 2-25 co-authors,
  author productivity Pareto(1.6)), mean degree 5.5, written SNAP-style (``#`` comments,
  tabs, both directions listed, non-contiguous ids ``7 u + 3``);
- ``caveman``: networkx ``relaxed_caveman_graph(400, 8, 0.2, seed=7)``.

Run: ``python scripts/cadr_held_out_graphs.py OUT_DIR`` writes the two edge lists to
OUT_DIR and prints one JSON line per (graph, eps, seed): the dp pipeline's per-node MAE
(``collector.cadr_reference.private_run``, LL, θ auto-dev, α = 0.1) beside the constant
TRUE median (a non-private oracle) and the all-zero release.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np
from ldpfleet.collector.cadr_reference import private_run
from ldpfleet.devices.graphs import load_edge_list


def write_ca_like(path: Path, n: int = 4500, mean_degree: float = 5.5) -> None:
    """Co-authorship-like edge list: add paper cliques until the mean degree is reached."""
    rng = np.random.default_rng(2027)
    weights = rng.pareto(1.6, n) + 1.0
    weights /= weights.sum()
    edges: set[tuple[int, int]] = set()
    papers = 0
    while 2 * len(edges) / n < mean_degree:
        size = min(1 + rng.geometric(0.45), 25)
        authors = np.unique(rng.choice(n, size=size, p=weights))
        edges.update((int(a), int(b)) for i, a in enumerate(authors) for b in authors[i + 1 :])
        papers += 1
    lines = [f"# Undirected graph: ca-like (synthetic co-authorship, {papers} papers)",
             "# FromNodeId\tToNodeId"]  # fmt: skip
    for u, v in sorted(edges):
        lines += [f"{7 * u + 3}\t{7 * v + 3}", f"{7 * v + 3}\t{7 * u + 3}"]
    path.write_text("\n".join(lines) + "\n")


def write_caveman(path: Path) -> None:
    graph = nx.relaxed_caveman_graph(400, 8, 0.2, seed=7)
    lines = ["# relaxed caveman l=400 k=8 p=0.2"] + [f"{u}\t{v}" for u, v in graph.edges()]
    path.write_text("\n".join(lines) + "\n")


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_ca_like(out / "ca-like.txt")
    write_caveman(out / "caveman.txt")
    for name in ("ca-like.txt", "caveman.txt"):
        graph = load_edge_list(out / name)
        for eps in (0.5, 1, 2, 3, 5):
            for seed in (0, 1, 2):
                started = time.perf_counter()
                run = private_run(graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
                row = {
                    "graph": name, "n": graph.n, "eps": eps, "seed": seed,
                    "theta": run.theta, "mae": run.mae,
                    "constant_median": run.baselines["constant_median_oracle"]["mae"],
                    "all_zero": run.baselines["all_zero"]["mae"],
                    "histogram_l1": run.histogram_l1,
                    "seconds": round(time.perf_counter() - started, 1),
                }  # fmt: skip
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "held-out-graphs")
