"""Regular graphs under the default pipeline (clip, dp): how far a common degree inside a
wide θ-search bucket is released from itself (helper N, issue 20; exploration, no
pipeline change).

On a regular graph the constant true median is exact (MAE 0). The per-node prior spreads
each bucket's count over the bucket, so a degree inside a wide bucket is released near
the bucket's middle: K(100, 100) at D = 199 came out at MAE 16.4 at ε 0.5 and 1. This
prints, per graph and ε, the in-process release's MAE (mean over seeds), θ, and the
baselines (constant median, all zeros).

    python scripts/N_regular_buckets.py                # the table (seeds 0-2)
    python scripts/N_regular_buckets.py --seeds 5
"""

from __future__ import annotations

import argparse

import numpy as np
from ldpfleet.collector.cadr_reference import private_run
from ldpfleet.devices.graphs import Graph

EPS = (0.5, 1.0, 3.0)


def complete_bipartite(a: int, b: int) -> Graph:
    """K(a, b): every node of one side joined to every node of the other."""
    left, right = np.meshgrid(np.arange(a), a + np.arange(b), indexing="ij")
    return Graph.from_edges(a + b, left.ravel(), right.ravel(), name=f"K({a},{b})")


def random_regular(n: int, d: int, seed: int) -> Graph:
    """A random d-regular graph on n nodes (networkx)."""
    import networkx as nx

    edges = np.array(list(nx.random_regular_graph(d, n, seed=seed).edges()))
    return Graph.from_edges(n, edges[:, 0], edges[:, 1], name=f"rr-{n}-d{d}")


def graphs() -> list[Graph]:
    """The regular graphs of the table: K(d, d) for several d, random d-regular on 400."""
    shapes = [complete_bipartite(d, d) for d in (20, 50, 100, 150)]
    return shapes + [random_regular(400, d, 5) for d in (12, 30, 60, 100)]


def row(graph: Graph, eps: float, seeds: int) -> str:
    """One markdown row: MAE mean (min-max), θ values, the baselines."""
    runs = [private_run(graph, "clip", "auto-dev", eps, 0.1, s, "dp") for s in range(seeds)]
    maes = [r.mae for r in runs]
    base = runs[0].baselines
    degree = int(graph.degrees()[0])
    return (
        f"| {graph.name} | {degree} | {runs[0].degree_bound} | {eps:g} | "
        f"{np.mean(maes):.3f} ({min(maes):.3f}-{max(maes):.3f}) | "
        f"{sorted({r.theta for r in runs})} | {base['constant_median_oracle']['mae']:.3f} | "
        f"{base['all_zero']['mae']:.3f} |"
    )


def main(argv: list[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    print("| graph | d | D | ε | MAE mean (min-max) | θ | median | zeros |")
    print("|---|---|---|---|---|---|---|---|")
    for graph in graphs():
        for eps in EPS:
            print(row(graph, eps, args.seeds), flush=True)


if __name__ == "__main__":
    main()
