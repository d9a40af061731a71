"""The unimodal-tail prior's gate (``UNIMODAL_RATIO_MAX``) where nobody measured it.

    python scripts/cadr_gate_eval.py capture SET SEEDS OUT.pkl   # SET: gcal, geval, large, held
    python scripts/cadr_gate_eval.py table RUNS.pkl [...] [--gate G]   # per cell and summed

``capture``: ``scripts/cadr_band_eval.py``'s capture (one ``private_run`` per graph, ε
and seed: dp, LL, θ auto-dev, α = 0.1, D = n − 1, the pipeline as on main) on the sets
below. ``table``: per run the per-node MAE of ``main`` (the gate at ``UNIMODAL_RATIO_MAX``
= 8, checked equal to the run's MAE), ``everywhere`` (no gate: the unimodal tail at every
count signal ratio), ``nowhere`` (plain ``degree_prior``: gate 0), ``gate G`` (with
``--gate``), the constant TRUE median and all zeros; per (graph, ε) cell the mean over
seeds; per family and summed; and a sweep of gate values (summed MAE, summed excess over
the constant median, cells above it, cells above all zeros). Issue 20, helper J,
2026-12-05; the sets and the rule are in docs/cadr-private.md ("The gate's
neighbourhood").
"""

from __future__ import annotations

import math
import pickle
import sys
from collections import defaultdict

import networkx as nx
import numpy as np

sys.path.insert(0, "scripts")
import cadr_band_eval as band
import cadr_small_capture as capture
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.devices.graphs import load_graph

_band_graphs = band._graphs
GATE_MAIN = 8.0
GATE_GRID = (0.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 16.0, math.inf)


def _sbm(sizes, p_in, p_out, seed):
    probs = [[p_in[i] if i == j else p_out for j in range(len(sizes))] for i in range(len(sizes))]
    return nx.stochastic_block_model(sizes, probs, seed=seed)


def _real_ball(name: str, n: int, seed: int):
    """The node-induced subgraph of ``name`` (ego-Facebook, wiki-Vote) on the first ``n``
    nodes a breadth-first search reaches from a node drawn with ``seed``."""
    g = load_graph(name)
    edges = g.edge_array()
    h = nx.Graph()
    h.add_nodes_from(range(g.n))
    h.add_edges_from(map(tuple, edges))
    rng = np.random.default_rng(seed)
    start = int(rng.choice(np.flatnonzero(g.degrees() > 0)))
    order = [start] + [v for _, v in nx.bfs_edges(h, start)]
    return h.subgraph(order[:n]).copy()


# Calibration set: fixed 2026-12-05 (helper J) before any run; networkx seeds 7101-7120,
# never used by an earlier set; n = 110-600 (count signal ratio ≈ 4-16).
GCAL = {
    "er-120-d6": lambda: nx.gnp_random_graph(120, 6 / 119, seed=7101),
    "er-330-d10": lambda: nx.gnp_random_graph(330, 10 / 329, seed=7102),
    "ba-180-m2": lambda: nx.barabasi_albert_graph(180, 2, seed=7103),
    "ba-420-m3": lambda: nx.barabasi_albert_graph(420, 3, seed=7104),
    "ws-250-k6": lambda: nx.watts_strogatz_graph(250, 6, 0.2, seed=7105),
    "ws-520-k10": lambda: nx.watts_strogatz_graph(520, 10, 0.1, seed=7106),
    "plc-200-m2": lambda: nx.powerlaw_cluster_graph(200, 2, 0.4, seed=7107),
    "plc-450-m4": lambda: nx.powerlaw_cluster_graph(450, 4, 0.3, seed=7108),
    "sbm-240-2blk": lambda: _sbm([80, 160], [0.15, 0.03], 0.005, 7109),
    "sbm-390-3blk": lambda: _sbm([100, 140, 150], [0.04, 0.1, 0.2], 0.004, 7110),
    "rr-160-d5": lambda: nx.random_regular_graph(5, 160, seed=7111),
    "rr-380-d8": lambda: nx.random_regular_graph(8, 380, seed=7112),
    "rgg-220-0.1": lambda: nx.random_geometric_graph(220, 0.1, seed=7113),
    "rgg-500-0.07": lambda: nx.random_geometric_graph(500, 0.07, seed=7114),
    "bip-60+200-p0.05": lambda: nx.bipartite.random_graph(60, 200, 0.05, seed=7115),
    "bip-100+350-p0.03": lambda: nx.bipartite.random_graph(100, 350, 0.03, seed=7116),
    "fb-ball-200": lambda: _real_ball("facebook", 200, 7117),
    "fb-ball-480": lambda: _real_ball("facebook", 480, 7118),
    "wiki-ball-260": lambda: _real_ball("wiki-vote", 260, 7119),
    "wiki-ball-560": lambda: _real_ball("wiki-vote", 560, 7120),
}

# Evaluation set: fixed 2026-12-05 (helper J) before any run; networkx seeds 7201-7222,
# never used by an earlier set; n = 130-600.
GEVAL = {
    "er-150-d8": lambda: nx.gnp_random_graph(150, 8 / 149, seed=7201),
    "er-400-d5": lambda: nx.gnp_random_graph(400, 5 / 399, seed=7202),
    "ba-260-m1": lambda: nx.barabasi_albert_graph(260, 1, seed=7203),
    "ba-560-m2": lambda: nx.barabasi_albert_graph(560, 2, seed=7204),
    "ws-140-k4": lambda: nx.watts_strogatz_graph(140, 4, 0.3, seed=7205),
    "ws-360-k8": lambda: nx.watts_strogatz_graph(360, 8, 0.25, seed=7206),
    "plc-300-m3": lambda: nx.powerlaw_cluster_graph(300, 3, 0.5, seed=7207),
    "plc-600-m2": lambda: nx.powerlaw_cluster_graph(600, 2, 0.2, seed=7208),
    "sbm-180-2blk": lambda: _sbm([60, 120], [0.3, 0.04], 0.01, 7209),
    "sbm-320-3blk": lambda: _sbm([80, 120, 120], [0.2, 0.06, 0.02], 0.003, 7210),
    "sbm-470-2blk": lambda: _sbm([150, 320], [0.08, 0.01], 0.002, 7211),
    "rr-200-d4": lambda: nx.random_regular_graph(4, 200, seed=7212),
    "rr-440-d12": lambda: nx.random_regular_graph(12, 440, seed=7213),
    "rgg-170-0.13": lambda: nx.random_geometric_graph(170, 0.13, seed=7214),
    "rgg-410-0.08": lambda: nx.random_geometric_graph(410, 0.08, seed=7215),
    "bip-40+160-p0.08": lambda: nx.bipartite.random_graph(40, 160, 0.08, seed=7216),
    "bip-150+300-p0.02": lambda: nx.bipartite.random_graph(150, 300, 0.02, seed=7217),
    "fb-ball-150": lambda: _real_ball("facebook", 150, 7218),
    "fb-ball-350": lambda: _real_ball("facebook", 350, 7219),
    "fb-ball-600": lambda: _real_ball("facebook", 600, 7220),
    "wiki-ball-180": lambda: _real_ball("wiki-vote", 180, 7221),
    "wiki-ball-420": lambda: _real_ball("wiki-vote", 420, 7222),
}


def _graphs(which: str):
    if which in ("gcal", "geval"):
        for name, make in (GCAL if which == "gcal" else GEVAL).items():
            yield name, capture._graph_of(make())
    else:
        yield from _band_graphs(which)


def family(graph: str) -> str:
    """The family of a graph's label: its text before the first '-'."""
    return graph.split("-")[0]


def ratio_of(r: dict) -> float | None:
    """The run's count signal ratio (None without a θ search)."""
    s = r["search"]
    if not s:
        return None
    return dpp.count_signal_ratio(
        len(r["degrees"]), len(s["bucket_sums"]), s["eps"], s["noise_parties"]
    )


def readings(r: dict) -> dict:
    """Per-node MAE of the plain prior, the ungated unimodal prior and the baselines."""
    d, y, t, e, s = r["degrees"], r["released"], r["theta"], r["eps_dsr"], r["search"]
    out = {"median": band._mae(d, np.floor(np.median(d))), "zero": band._mae(d, 0)}
    if not s:
        out["nowhere"] = out["everywhere"] = band._mae(d, dpp.post_process(y, t, e).estimates)
        return out
    args = (s["bucket_sums"], s["thresholds"], r["bound"], len(d))
    out["nowhere"] = band._mae(d, dpp.post_process(y, t, e, dpp.degree_prior(*args)).estimates)
    saved, dpp.UNIMODAL_RATIO_MAX = dpp.UNIMODAL_RATIO_MAX, math.inf
    try:
        shaped = dpp.unimodal_degree_prior(*args, s["eps"], s["noise_parties"])
    finally:
        dpp.UNIMODAL_RATIO_MAX = saved
    out["everywhere"] = band._mae(d, dpp.post_process(y, t, e, shaped).estimates)
    return out


def gated(x: dict, ratio: float | None, gate: float) -> float:
    """The MAE with the unimodal tail applied only where the ratio is below ``gate``."""
    return x["everywhere"] if ratio is not None and ratio < gate else x["nowhere"]


def cells_of(rows: list[dict], gate: float | None) -> dict:
    """Per (graph, n, ε): mean over seeds of every reading, and the cell's ratio."""
    cells = defaultdict(list)
    for r in rows:
        if "_readings" not in r:  # computed once per run: the sweep reads every run 13 times
            r["_readings"] = readings(r)
        x, ratio = dict(r["_readings"]), ratio_of(r)
        x["main"] = gated(x, ratio, GATE_MAIN)
        assert abs(x["main"] - r["mae"]) < 1e-9, (r["graph"], r["eps"], x["main"], r["mae"])
        if gate is not None:
            x["gate"] = gated(x, ratio, gate)
        x["ratio"] = ratio if ratio is not None else float("nan")
        cells[(r["graph"], r["n"], r["eps"])].append(x)
    return {k: {f: float(np.mean([x[f] for x in v])) for f in v[0]} for k, v in cells.items()}


def _criterion(cells: dict, key: str) -> dict:
    out = {"sum": 0.0, "excess": 0.0, "above median": 0, "above zeros": 0}
    for m in cells.values():
        out["sum"] += m[key]
        out["excess"] += max(0.0, m[key] - m["median"])
        out["above median"] += m[key] > m["median"] + 1e-9
        out["above zeros"] += m[key] > m["zero"] + 1e-9
    return out


def sweep(rows: list[dict]) -> None:
    """Summed figures per gate value of GATE_GRID."""
    print("\n| gate | summed MAE | excess over median | cells above median | above zeros |")
    print("|---|---|---|---|---|")
    for g in GATE_GRID:
        c = _criterion(cells_of(rows, g), "gate")
        counts = f"{c['above median']} | {c['above zeros']}"
        print(f"| {g:g} | {c['sum']:.3f} | {c['excess']:.3f} | {counts} |")


def table(rows: list[dict], gate: float | None) -> None:
    """Per cell, per family, summed (markdown) and the criterion's figures."""
    cells = cells_of(rows, gate)
    keys = (
        ["main", "everywhere", "nowhere"]
        + (["gate"] if gate is not None else [])
        + ["median", "zero"]
    )
    print("| graph | n | ε | ratio | " + " | ".join(keys) + " |")
    print("|---|---|---|---|" + "---|" * len(keys))
    fam = defaultdict(lambda: defaultdict(float))
    for (g, n, eps), m in cells.items():
        print(
            f"| {g} | {n} | {eps:g} | {m['ratio']:.1f} | "
            + " | ".join(f"{m[k]:.3f}" for k in keys)
            + " |"
        )
        for k in keys:
            fam[family(g)][k] += m[k]
            fam["SUM"][k] += m[k]
    print("\n| family | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for f, v in sorted(fam.items(), key=lambda item: item[0] == "SUM"):  # SUM last
        print(f"| {f} | " + " | ".join(f"{v[k]:.3f}" for k in keys) + " |")
    print()
    for k in keys[: len(keys) - 2]:
        c = _criterion(cells, k)
        print(
            f"{k}: "
            + "; ".join(
                f"{a} {b:.3f}" if isinstance(b, float) else f"{a} {b}" for a, b in c.items()
            )
        )
    if gate is not None:
        newly = [k for k, m in cells.items() if m["main"] <= m["zero"] + 1e-9 < m["gate"]]
        worse = [
            (k, round(m["main"], 3), round(m["gate"], 3))
            for k, m in cells.items()
            if m["gate"] > m["main"] * 1.005 + 1e-9
        ]
        print(f"gate {gate:g}: cells newly above all zeros: {newly}")
        print(f"gate {gate:g}: cells worse than main by more than 0.5 %: {worse}")


def paired(rows: list[dict]) -> None:
    """Per run, everywhere and nowhere minus main: runs that differ, mean, its standard
    error (runs taken as independent, although a graph's seeds share it), better, worse."""
    for other in ("everywhere", "nowhere"):
        diff = []
        for r in rows:
            x = r.get("_readings") or readings(r)
            diff.append(x[other] - gated(x, ratio_of(r), GATE_MAIN))
        d = np.array(diff)
        moved = d[np.abs(d) > 1e-12]
        se = d.std(ddof=1) / np.sqrt(d.size)
        print(
            f"{other} - main per run: {d.size} runs, {moved.size} differ, mean {d.mean():.4f}"
            f" (se {se:.4f}), {int((moved < 0).sum())} better, {int((moved > 0).sum())} worse"
        )


def main() -> None:
    mode = sys.argv[1]
    if mode == "capture":
        band._graphs = _graphs  # capture_runs reads the graphs through band._graphs
        band.capture_runs(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4])
    elif mode == "table":
        args, gate = sys.argv[2:], None
        if "--gate" in args:
            at = args.index("--gate")
            gate, args = float(args[at + 1]), args[:at] + args[at + 2 :]
        rows = []
        for path in args:
            with open(path, "rb") as fh:
                rows += pickle.load(fh)
        table(rows, gate)
        sweep(rows)
        paired(rows)
    else:
        raise SystemExit(f"mode: {mode!r} is not capture or table")


if __name__ == "__main__":
    main()
