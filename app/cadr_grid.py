"""The dp pipeline against knowing nothing, on a wide grid of graphs (issue 20).

``python -m ldpfleet.app.cadr_grid [--graphs NAME,...] [--eps-list ...] [--runs R]
[--method M] [--jobs J] [--markdown]``: for every graph of ``GRID`` (picked before any
measurement on it, nothing tuned to it: Erdős–Rényi of several densities, sparse ones of
mean degree 2-4 included; Barabási–Albert m 1..10; powerlaw cluster; Watts–Strogatz;
stochastic block model; random regular graphs, where every degree is equal and the
constant median is exact; a graph of stars of Zipf sizes, very skewed; ego-Facebook and
wiki-Vote) and every ε, ``R`` in-process runs (``collector.cadr_reference.private_run``,
pipeline "dp", seeds 0..R-1) of one method; per cell the release's MAE (mean, min and
max over the runs) beside the constant TRUE median (a non-private oracle) and all-zero
baselines, and the worst run minus the median. The generators' own seeds are fixed in
``GRID``; n from 500 to 10,000.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np
from ldpfleet.collector.pools import interruptible_pool
from ldpfleet.protocol.cadr_budget import DEFAULT_METHODS

__all__ = ["ALL_GRAPHS", "GRID", "HELD_OUT", "grid_graph", "main", "run_cell"]


def _nx_graph(g, name: str):
    from ldpfleet.devices.graphs import Graph

    e = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2)
    return Graph.from_edges(g.number_of_nodes(), e[:, 0], e[:, 1], name=name)


def _stars(n: int, seed: int):
    """Disjoint stars of Zipf(2)-distributed sizes (at least 1 leaf) filling ``n`` nodes,
    plus one edge between consecutive hubs: most nodes are leaves of degree 1, a few hubs
    carry hundreds of edges."""
    from ldpfleet.devices.graphs import Graph

    rng = np.random.default_rng(seed)
    u, v, hubs, node = [], [], [], 0
    while node < n - 1:
        leaves = int(min(rng.zipf(2.0), 500, n - node - 1))
        hubs.append(node)
        for j in range(1, leaves + 1):
            u.append(node)
            v.append(node + j)
        node += leaves + 1
    for a, b in itertools.pairwise(hubs):
        u.append(a)
        v.append(b)
    return Graph.from_edges(n, np.array(u), np.array(v), name=f"stars(n={n},seed={seed})")


def _gen(kind: str, **params) -> Callable[[], object]:
    def build():
        import networkx as nx
        from ldpfleet.devices.graphs import generate

        label = ",".join(f"{k}={v}" for k, v in params.items())
        if kind in ("erdos_renyi", "barabasi_albert", "powerlaw_cluster", "watts_strogatz"):
            p = dict(params)
            n, seed = p.pop("n"), p.pop("seed")
            return generate(kind, n, seed=seed, **p)
        if kind == "random_regular":
            g = nx.random_regular_graph(params["d"], params["n"], seed=params["seed"])
        elif kind == "sbm":
            sizes, n = params["sizes"], sum(params["sizes"])
            k = len(sizes)
            probs = [[params["p_in"] if i == j else params["p_out"] for j in range(k)]
                     for i in range(k)]  # fmt: skip
            g = nx.stochastic_block_model(sizes, probs, seed=params["seed"])
            g = nx.convert_node_labels_to_integers(g)
            assert g.number_of_nodes() == n
        elif kind == "stars":
            return _stars(params["n"], params["seed"])
        elif kind == "geometric":
            g = nx.random_geometric_graph(params["n"], params["radius"], seed=params["seed"])
        elif kind == "lognormal":
            rng = np.random.default_rng(params["seed"])
            degrees = np.maximum(
                1, np.rint(rng.lognormal(params["mu"], params["sigma"], params["n"]))
            ).astype(int)
            degrees[0] += int(degrees.sum() % 2)  # an even sum
            g = nx.Graph(nx.configuration_model(degrees.tolist(), seed=params["seed"]))
            g.remove_edges_from(nx.selfloop_edges(g))  # a simple graph (loops, multi-edges cut)
        else:
            raise ValueError(kind)
        return _nx_graph(g, f"{kind}({label})")

    return build


def _snap(name: str) -> Callable[[], object]:
    def build():
        from ldpfleet.devices.graphs import NAMED_GRAPHS

        return NAMED_GRAPHS[name]()

    return build


# the grid: (label, builder); chosen before any measurement, not tuned (module docstring)
GRID: dict[str, Callable[[], object]] = {
    "er-500-mean3": _gen("erdos_renyi", n=500, p=3 / 499, seed=11),
    "er-2000-mean2": _gen("erdos_renyi", n=2000, p=2 / 1999, seed=12),
    "er-3000-p0.004": _gen("erdos_renyi", n=3000, p=0.004, seed=2),
    "er-10000-mean4": _gen("erdos_renyi", n=10000, p=4 / 9999, seed=13),
    "er-1000-mean40": _gen("erdos_renyi", n=1000, p=0.04, seed=14),
    "ba-2000-m1": _gen("barabasi_albert", n=2000, m=1, seed=21),
    "ba-4000-m4": _gen("barabasi_albert", n=4000, m=4, seed=1),
    "ba-1000-m10": _gen("barabasi_albert", n=1000, m=10, seed=22),
    "plc-6000-m2": _gen("powerlaw_cluster", n=6000, m=2, p=0.5, seed=3),
    "plc-1500-m5": _gen("powerlaw_cluster", n=1500, m=5, p=0.3, seed=31),
    "ws-2000-k6": _gen("watts_strogatz", n=2000, k=6, p=0.1, seed=41),
    "ws-5000-k10": _gen("watts_strogatz", n=5000, k=10, p=0.5, seed=42),
    "sbm-3000": _gen("sbm", sizes=[500, 1000, 1500], p_in=0.02, p_out=0.001, seed=51),
    "rr-1000-d3": _gen("random_regular", n=1000, d=3, seed=61),
    "rr-5000-d8": _gen("random_regular", n=5000, d=8, seed=62),
    "rr-600-d20": _gen("random_regular", n=600, d=20, seed=63),
    "stars-3000": _gen("stars", n=3000, seed=71),
    "facebook": _snap("facebook"),
    "wiki-vote": _snap("wiki-vote"),
}

# held out (issue 20, third step): families and seeds the grid never used, added after the
# small-ε rule was chosen on part of GRID; run with ``--graphs`` (``--graphs new`` for all)
HELD_OUT: dict[str, Callable[[], object]] = {
    "rgg-2000-r0.05": _gen("geometric", n=2000, radius=0.05, seed=81),
    "lognormal-3000": _gen("lognormal", n=3000, mu=2.0, sigma=0.8, seed=82),
    "ba-2500-m7": _gen("barabasi_albert", n=2500, m=7, seed=83),
}
ALL_GRAPHS = {**GRID, **HELD_OUT}


def grid_graph(label: str):
    """The graph ``label`` of ``GRID`` or ``HELD_OUT``."""
    return ALL_GRAPHS[label]()


def run_cell(label: str, eps: float, seed: int, method: str, alpha: float = 0.1) -> dict:
    """One dp run of ``method`` on ``GRID[label]`` at ``eps``: MAE, θ, ε_θ, baselines."""
    from ldpfleet.collector.cadr_reference import private_run

    graph = grid_graph(label)
    run = private_run(graph, method, "auto-dev", eps, alpha, seed, pipeline="dp")
    return {
        "graph": label,
        "n": graph.n,
        "eps": eps,
        "seed": seed,
        "mae": run.mae,
        "theta": run.theta,
        "eps_theta": run.theta_search.get("eps"),
        "median": run.baselines["constant_median_oracle"]["mae"],
        "zero": run.baselines["all_zero"]["mae"],
        "seconds": run.seconds,
    }


def mae_spread(runs: list[dict]) -> dict:
    """The runs of one (graph, ε) cell summarised: the mean, min and max of their ``mae``,
    and the baselines (the same in every run) ``median`` and ``zero``."""
    maes = [r["mae"] for r in runs]
    return {
        "runs": len(runs),
        "mae_mean": float(np.mean(maes)),
        "mae_min": min(maes),
        "mae_max": max(maes),
        "median": runs[0]["median"],
        "zero": runs[0]["zero"],
    }


def _cells(rows: list[dict]) -> list[dict]:
    out = []
    keys = sorted(
        {(r["graph"], r["eps"]) for r in rows},
        key=lambda k: (list(ALL_GRAPHS).index(k[0]), k[1]),
    )
    for g, e in keys:
        rs = [r for r in rows if r["graph"] == g and r["eps"] == e]
        spread = mae_spread(rs)
        out.append(
            {
                "graph": g,
                "n": rs[0]["n"],
                "eps": e,
                "eps_theta": rs[0]["eps_theta"],
                **spread,
                "worst_minus_median": spread["mae_max"] - spread["median"],
                "mean_minus_median": spread["mae_mean"] - spread["median"],
            }
        )
    return out


def markdown(cells: list[dict]) -> str:
    lines = [
        "| graph | n | ε | ε_θ | MAE dp, mean (min–max) | MAE constant true median (oracle) "
        "| MAE all zero | worst run − median |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        lines.append(
            f"| {c['graph']} | {c['n']:,} | {c['eps']:g} | {c['eps_theta']:.3g} | "
            f"{c['mae_mean']:.3f} ({c['mae_min']:.3f}–{c['mae_max']:.3f}) | {c['median']:.3f} | "
            f"{c['zero']:.3f} | {c['worst_minus_median']:+.3f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ldpfleet.app.cadr_grid")
    ap.add_argument("--graphs", default=",".join(GRID))
    ap.add_argument("--eps-list", default="0.5,1,2,3,5")
    ap.add_argument("--runs", type=int, default=3)
    # the dp pipeline's default method (clip since 2026-12-06); the grids measured
    # before then ran "ll", and their commands in docs/cadr-private.md say so
    ap.add_argument("--method", default=DEFAULT_METHODS["dp"])
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    graphs = [g for g in args.graphs.split(",") if g]
    graphs = [x for g in graphs for x in (HELD_OUT if g == "new" else [g])]
    unknown = [g for g in graphs if g not in ALL_GRAPHS]
    if unknown:
        print(f"--graphs: unknown {unknown}; known: {', '.join(ALL_GRAPHS)}", file=sys.stderr)
        return 2
    eps_list = [float(e) for e in args.eps_list.split(",")]
    tasks = [(g, e, s, args.method) for g in graphs for e in eps_list for s in range(args.runs)]
    started = time.perf_counter()
    rows = []
    with interruptible_pool(max_workers=args.jobs) as pool:
        for row in pool.map(run_cell, *zip(*tasks, strict=True)):
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)  # progress, one run a line
    cells = _cells(rows)
    if args.json:
        print(json.dumps({"cells": cells, "rows": rows}, indent=1))
    else:
        print(markdown(cells))
        above = [c for c in cells if c["mean_minus_median"] > 0]
        print(
            f"\n{len(cells)} cells, {len(rows)} runs, method {args.method}, "
            f"{time.perf_counter() - started:.0f} s wall; mean above the median in "
            f"{len(above)} cell(s), worst run above it in "
            f"{sum(c['worst_minus_median'] > 0 for c in cells)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
