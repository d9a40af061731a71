"""Compare θ-search bucket grids of CADR-LDP's dp pipeline (brief "grid", 2026-12-03).

``python scripts/cadr_bucket_grid_compare.py --half tune|held|all --eps 0.5,1,2,3,5
--seeds 0,1,2 --variants old,new,max,oracle [--out FILE.jsonl]``: per graph, ε and seed one
in-process ``private_run(g, "ll", "auto-dev", ε, 0.1, seed, pipeline="dp", degree_bound=…)``
per variant, the variants alternating within each (graph, ε, seed):

- ``old``: D = n − 1, the grid before (``legacy_grid``: geometric in D^(j/B));
- ``new``: D = n − 1, ``protocol.cadr_theta_noise.bucket_grid`` as committed;
- ``max``: D = the graph's maximum degree (NOT private), the old grid;
- ``oracle``: D = n − 1 everywhere but the grid computed from the graph's maximum (a
  diagnostic: how much of the D = n − 1 cost is the grid's; NOT private).

Prints one JSON line per run (MAE, histogram L1/EMD, θ, constant-true-median MAE, CPU s).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import networkx as nx
import numpy as np
from ldpfleet.app.cadr_grid import _nx_graph, grid_graph
from ldpfleet.collector import cadr_reference
from ldpfleet.protocol import cadr_theta_noise


def legacy_grid(degree_bound: int, buckets: int = 48) -> list[int]:
    """The grid before 2026-12-03 (0, floor(D^(j/B)) for j < B, D - 1)."""
    d, b = degree_bound, buckets
    if d <= 2:
        return [0, 1]
    grid = {min(max(1, int(d ** (j / b))), d - 1) for j in range(b)} | {d - 1}
    return [0, *sorted(grid)]


def ratio_grid(pivot: int):
    """Candidate: the ratio of the old grid at D = min(D, pivot), extended to D."""

    def grid(degree_bound: int, buckets: int = 48) -> list[int]:
        d = degree_bound
        if d <= 2:
            return [0, 1]
        r = min(d, pivot) ** (1 / buckets)
        out, j = {d - 1}, 0
        while r**j < d - 1:
            out.add(max(1, int(r**j)))
            j += 1
        return [0, *sorted(out)]

    return grid


def split_grid(pivot: int, share: float):
    """Candidate: ``share`` of the B buckets geometric over [1, P], the rest over [P, D]."""

    def grid(degree_bound: int, buckets: int = 48) -> list[int]:
        d = degree_bound
        if d <= 2:
            return [0, 1]
        p = min(d, pivot)
        low = max(1, round(share * buckets)) if d > p else buckets
        out = {min(max(1, int(p ** (j / low))), d - 1) for j in range(low)} | {d - 1}
        high = buckets - low
        out |= {min(int(p * (d / p) ** (j / high)), d - 1) for j in range(high)} if high else set()
        return [0, *sorted(out)]

    return grid


def integer_then_geometric(cut: int):
    """Candidate: every integer 0..cut, then the remaining thresholds geometric to D - 1."""

    def grid(degree_bound: int, buckets: int = 48) -> list[int]:
        d = degree_bound
        if d <= 2:
            return [0, 1]
        if d - 1 <= buckets:
            return list(range(0, d))
        c = min(cut, d - 1)
        out = set(range(0, c + 1)) | {d - 1}
        m = buckets - c - 1
        out |= {min(int(c * ((d - 1) / c) ** (j / m)), d - 1) for j in range(1, m + 1)}
        return sorted(out)

    return grid


CANDIDATES = {
    "i16": integer_then_geometric(16),
    "i10": integer_then_geometric(10),
    "r64": ratio_grid(64),
    "r128": ratio_grid(128),
    "r256": ratio_grid(256),
    "s128": split_grid(128, 0.75),
    "s256": split_grid(256, 0.75),
    "s128x": split_grid(128, 0.875),
    "s64": split_grid(64, 0.75),
}


def _bimodal(n: int, seed: int):
    """Two blocks, mean degrees about 5 (2/3 of the nodes) and 60 (1/3)."""
    a, b = 2 * n // 3, n - 2 * n // 3
    p_aa, p_bb, p_ab = 4.0 / a, 59.0 / b, 0.5 / b
    g = nx.stochastic_block_model([a, b], [[p_aa, p_ab], [p_ab, p_bb]], seed=seed)
    return nx.convert_node_labels_to_integers(g)


def _nx(name: str, build):
    return lambda: _nx_graph(build(), name)


def _cliques(sizes: list[int]):
    """Disjoint cliques of the given sizes (every degree size - 1)."""
    g = nx.disjoint_union_all([nx.complete_graph(s) for s in sizes])
    return nx.convert_node_labels_to_integers(g)


def print_rows(graphs: dict, names, eps_list: str, seeds: str, rows_of) -> None:
    """One JSON line per row of ``rows_of(graph, eps, seed)`` for every named graph,
    budget and seed, tagged with the graph's name, size, maximum and median degree (the
    loop of the three comparison scripts)."""
    for name in names:
        graph = graphs[name]()
        d = graph.degrees()
        for eps in [float(e) for e in eps_list.split(",")]:
            for seed in [int(x) for x in seeds.split(",")]:
                for row in rows_of(graph, eps, seed):
                    row.update(graph=name, n=graph.n, gmax=int(d.max()))
                    row.update(gmedian=float(np.median(d)))
                    print(json.dumps(row), flush=True)


# tuned on: the brief's families, generator seeds of before
TUNE = {
    "facebook": lambda: grid_graph("facebook"),
    "ba-1000-m10": lambda: grid_graph("ba-1000-m10"),
    "er-1000-mean40": lambda: grid_graph("er-1000-mean40"),
    "ws-2000-k6": lambda: grid_graph("ws-2000-k6"),
    "stars-3000": lambda: grid_graph("stars-3000"),
    "rr-5000-d8": lambda: grid_graph("rr-5000-d8"),
    "sbm-bimodal-1983": _nx(
        "sbm_bimodal",
        lambda: nx.stochastic_block_model([1200, 800], [[0.003, 0.001], [0.001, 0.04]], seed=7),
    ),
}
# held out: never looked at while choosing the grid (fresh generator seeds 901..)
HELD = {
    "wiki-vote": lambda: grid_graph("wiki-vote"),
    "ba-3000-m2": _nx("ba", lambda: nx.barabasi_albert_graph(3000, 2, seed=901)),
    "er-2500-mean4": _nx("er", lambda: nx.gnp_random_graph(2500, 4 / 2499, seed=902)),
    "plc-3000-m3": _nx("plc", lambda: nx.powerlaw_cluster_graph(3000, 3, 0.3, seed=903)),
    "sbm-bimodal-3000": _nx("sbm3000", lambda: _bimodal(3000, 904)),
    "rr-2000-d8": _nx("rr", lambda: nx.random_regular_graph(8, 2000, seed=905)),
    "ws-3000-k6": _nx("ws", lambda: nx.watts_strogatz_graph(3000, 6, 0.2, seed=906)),
    "er-1500-mean40": _nx("er40", lambda: nx.gnp_random_graph(1500, 40 / 1499, seed=907)),
    "ba-2000-m10": _nx("ba10", lambda: nx.barabasi_albert_graph(2000, 10, seed=908)),
}


def run_one(graph, variant: str, eps: float, seed: int) -> dict:
    gmax = int(graph.degrees().max())
    new_grid = cadr_theta_noise.bucket_grid
    grids = {
        "old": legacy_grid,
        "new": new_grid,
        "max": legacy_grid,
        "oracle": lambda d, b: legacy_grid(gmax, b),
    }
    grids.update(CANDIDATES)
    cadr_reference.bucket_grid = grids[variant]
    try:
        started = time.process_time()
        run = cadr_reference.private_run(
            graph,
            "ll",
            "auto-dev",
            eps,
            0.1,
            seed,
            pipeline="dp",
            degree_bound="graph-max" if variant == "max" else "devices",
        )
        cpu = time.process_time() - started
    finally:
        cadr_reference.bucket_grid = new_grid
    pp = run.postprocessed
    return {
        "variant": variant,
        "eps": eps,
        "seed": seed,
        "mae": pp["mae"],
        "hist_l1": pp["histogram_l1"],
        "hist_emd": pp["histogram_emd"],
        "theta": run.theta,
        "median_mae": run.baselines["constant_median_oracle"]["mae"],
        "buckets": len(run.theta_search.get("thresholds", [])),
        "cpu": round(cpu, 3),
    }


def summarise(paths: list[str], variants: tuple[str, ...] = ("old", "new", "max")) -> str:
    """A markdown table from the JSON lines: per (graph, ε) the mean over seeds of the
    MAE, the histogram L1 and EMD per variant, the constant true median's MAE; then the
    mean and worst relative MAE change of each variant against ``old`` and the cells
    whose mean MAE is above the constant true median's."""
    rows = []
    for path in paths:
        with open(path) as lines:
            rows += [json.loads(line) for line in lines]
    cells: dict = {}
    for r in rows:
        cells.setdefault((r["graph"], r["eps"]), {}).setdefault(r["variant"], []).append(r)
    head = " | ".join(f"MAE {v}" for v in variants)
    out = [
        f"| graph | n | max deg | ε | {head} | L1 {' / '.join(variants)} "
        f"| EMD {' / '.join(variants)} | constant true median |",
        "|---|---|---|---|" + "---|" * len(variants) + "---|---|---|",
    ]
    change: dict = {v: [] for v in variants}
    above = dict.fromkeys(variants, 0)  # cells whose mean MAE is above the constant median
    totals: dict = {v: {"mae": [], "hist_l1": [], "hist_emd": []} for v in variants}
    graphs = list(dict.fromkeys(graph for graph, _ in cells))
    for (graph, eps), by in sorted(cells.items(), key=lambda c: (graphs.index(c[0][0]), c[0][1])):
        if not all(v in by for v in variants):
            continue
        mean = {v: {k: float(np.mean([r[k] for r in by[v]])) for k in totals[v]} for v in variants}
        first = by[variants[0]][0]
        for v in variants:
            change[v].append(_relative(mean[v]["mae"], mean["old"]["mae"]))
            for k in totals[v]:
                totals[v][k].append(mean[v][k])
            above[v] += mean[v]["mae"] > first["median_mae"] + 1e-9
        out.append(
            f"| {graph} | {first['n']:,} | {first['gmax']} | {eps:g} | "
            + " | ".join(f"{mean[v]['mae']:.3f}" for v in variants)
            + " | "
            + " / ".join(f"{mean[v]['hist_l1']:.3f}" for v in variants)
            + " | "
            + " / ".join(f"{mean[v]['hist_emd']:.2f}" for v in variants)
            + f" | {first['median_mae']:.3f} |"
        )
    out.append("")
    for v in variants:
        out.append(_aggregate(v, change[v], totals[v]) + f", above the constant median: {above[v]}")
    return "\n".join(out)


def _relative(value: float, base: float) -> float:
    """``value / base - 1``; 0 when both are 0 (a tie), +inf when only ``base`` is."""
    if base > 0:
        return value / base - 1
    return 0.0 if value == 0 else float("inf")


def _aggregate(variant: str, change: list[float], totals: dict) -> str:
    """One line: the variant's summed MAE, mean L1 / EMD over the cells and its relative
    MAE change against ``old`` (median, worst, cells worse by more than 1 %)."""
    c = np.array(change) * 100
    return (
        f"{variant}: cells {len(c)}, summed MAE {sum(totals['mae']):.3f}, mean L1 "
        f"{np.mean(totals['hist_l1']):.4f}, mean EMD {np.mean(totals['hist_emd']):.2f}; "
        f"MAE vs old: median {np.median(c):+.2f} %, worst {c.max():+.2f} %, "
        f"best {c.min():+.2f} %, worse by > 1 %: {int(np.sum(c > 1))}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--half", default="tune", choices=["tune", "held", "all"])
    p.add_argument("--graphs", default="")
    p.add_argument("--eps", default="0.5,1,2,3,5")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--variants", default="old,new,max,oracle")
    p.add_argument("--summarise", nargs="*", help="JSON-lines files: print the table only")
    a = p.parse_args(argv)
    if a.summarise:
        print(summarise(a.summarise, tuple(a.variants.split(","))))
        return 0
    table = {"tune": TUNE, "held": HELD, "all": {**TUNE, **HELD}}[a.half]
    names = a.graphs.split(",") if a.graphs else list(table)
    variants = a.variants.split(",")
    print_rows(
        {**TUNE, **HELD},
        names,
        a.eps,
        a.seeds,
        lambda graph, eps, seed: [run_one(graph, v, eps, seed) for v in variants],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
