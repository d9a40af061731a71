"""Mid-size fleets (n = 24-150): the dp release with the unimodal-tail prior against main.

    python scripts/cadr_band_eval.py capture SET SEEDS OUT.pkl   # SET: band (fresh graphs)
    python scripts/cadr_band_eval.py table RUNS.pkl [...] [--min-n 24]  # main vs unimodal

``capture``: one ``collector.cadr_reference.private_run`` per graph, ε and seed (dp, LL, θ
auto-dev, α = 0.1, D = n − 1; the pipeline as it is on main, small-fleet θ rule included),
with the post-processing inputs spied on (``scripts/cadr_small_capture.py``); ``SET`` is
``band`` or ``band2`` (below, each fixed 2026-12-05 before any run on it) or any set of that
script (``cal``, ``fresh``, ``large``, ``held``). ``table``: per run, the per-node MAE of
``main`` (``post_process`` with ``degree_prior``, checked equal to the run's MAE) and
``unimodal`` (``post_process`` with ``unimodal_degree_prior``: the same DSR releases, θ and
counts), the constant TRUE median (a non-private oracle) and all zeros; per (graph, ε) cell
the mean over the seeds; then the pre-registered criterion's figures (docs/cadr-private.md,
"Mid-size fleets: the unimodal tail"). Issue 20, helper C, 2026-12-05.
"""

from __future__ import annotations

import pickle
import sys
import time
from collections import defaultdict

import networkx as nx
import numpy as np

sys.path.insert(0, "scripts")
import cadr_small_capture as capture
from ldpfleet.collector import degree_postprocess as dpp

# The evaluation set: fixed 2026-12-05 (helper C) before any run; networkx seeds 901-916,
# never used by an earlier set; n from 24 to 140.
BAND = {
    "sbm-60-2x30": lambda: nx.stochastic_block_model(
        [30, 30], [[0.2, 0.02], [0.02, 0.2]], seed=901
    ),
    "sbm-90-20+70": lambda: nx.stochastic_block_model(
        [20, 70], [[0.5, 0.03], [0.03, 0.05]], seed=902
    ),
    "sbm-120-3x40": lambda: nx.stochastic_block_model(
        [40, 40, 40], [[0.15, 0.01, 0.01], [0.01, 0.15, 0.01], [0.01, 0.01, 0.15]], seed=903
    ),
    "rgg-50-0.2": lambda: nx.random_geometric_graph(50, 0.2, seed=904),
    "rgg-130-0.15": lambda: nx.random_geometric_graph(130, 0.15, seed=905),
    "plc-40-m2": lambda: nx.powerlaw_cluster_graph(40, 2, 0.5, seed=906),
    "plc-120-m3": lambda: nx.powerlaw_cluster_graph(120, 3, 0.2, seed=907),
    "rr-30-d3": lambda: nx.random_regular_graph(3, 30, seed=908),
    "rr-100-d6": lambda: nx.random_regular_graph(6, 100, seed=909),
    "tree-random-80": lambda: nx.random_labeled_tree(80, seed=910),
    "tree-3-3": lambda: nx.balanced_tree(3, 3),
    "ws-30-k4": lambda: nx.watts_strogatz_graph(30, 4, 0.1, seed=911),
    "ws-140-k8": lambda: nx.watts_strogatz_graph(140, 8, 0.3, seed=912),
    "ba-26-m2": lambda: nx.barabasi_albert_graph(26, 2, seed=913),
    "ba-110-m1": lambda: nx.barabasi_albert_graph(110, 1, seed=914),
    "ba-75-m4": lambda: nx.barabasi_albert_graph(75, 4, seed=915),
    "gnp-100-0.05": lambda: nx.gnp_random_graph(100, 0.05, seed=916),
    "truncated-cube": nx.truncated_cube_graph,
    "hoffman-singleton": nx.hoffman_singleton_graph,
    "grid-6x8": lambda: nx.grid_2d_graph(6, 8),
    "barbell-12-10": lambda: nx.barbell_graph(12, 10),
}

# The second evaluation set (pre-registration 2): fixed 2026-12-05 (helper C) before any
# run; networkx seeds 931-947, never used by an earlier set; n from 25 to 150.
BAND2 = {
    "sbm-80-2x40": lambda: nx.stochastic_block_model(
        [40, 40], [[0.25, 0.05], [0.05, 0.25]], seed=931
    ),
    "sbm-150-3x50-mixed": lambda: nx.stochastic_block_model(
        [50, 50, 50], [[0.1, 0.01, 0.01], [0.01, 0.2, 0.01], [0.01, 0.01, 0.3]], seed=932
    ),
    "sbm-45-15+30": lambda: nx.stochastic_block_model(
        [15, 30], [[0.6, 0.05], [0.05, 0.1]], seed=933
    ),
    "rgg-70-0.18": lambda: nx.random_geometric_graph(70, 0.18, seed=934),
    "rgg-100-0.12": lambda: nx.random_geometric_graph(100, 0.12, seed=935),
    "plc-60-m2": lambda: nx.powerlaw_cluster_graph(60, 2, 0.6, seed=936),
    "plc-150-m1": lambda: nx.powerlaw_cluster_graph(150, 1, 0.3, seed=937),
    "rr-40-d4": lambda: nx.random_regular_graph(4, 40, seed=938),
    "rr-144-d3": lambda: nx.random_regular_graph(3, 144, seed=939),
    "tree-random-50": lambda: nx.random_labeled_tree(50, seed=940),
    "tree-random-140": lambda: nx.random_labeled_tree(140, seed=941),
    "tree-2-6": lambda: nx.balanced_tree(2, 6),
    "ws-60-k6": lambda: nx.watts_strogatz_graph(60, 6, 0.05, seed=942),
    "ws-90-k4": lambda: nx.watts_strogatz_graph(90, 4, 0.5, seed=943),
    "ba-35-m3": lambda: nx.barabasi_albert_graph(35, 3, seed=944),
    "ba-140-m2": lambda: nx.barabasi_albert_graph(140, 2, seed=945),
    "gnp-50-0.15": lambda: nx.gnp_random_graph(50, 0.15, seed=946),
    "gnm-120-240": lambda: nx.gnm_random_graph(120, 240, seed=947),
    "grid-5x5": lambda: nx.grid_2d_graph(5, 5),
    "hypercube-5": lambda: nx.hypercube_graph(5),
    "circular-ladder-40": lambda: nx.circular_ladder_graph(40),
    "lollipop-20-30": lambda: nx.lollipop_graph(20, 30),
    "kbip-5-30": lambda: nx.complete_bipartite_graph(5, 30),
}


def _graphs(which: str):
    if which in ("band", "band2"):
        for name, make in (BAND if which == "band" else BAND2).items():
            yield name, capture._graph_of(make())
    else:
        yield from capture._graphs(which)


def capture_runs(which: str, seeds: list[int], out: str) -> None:
    """The runs' post-processing inputs (module docstring), pickled to ``out``."""
    capture.ref._release_scores = capture._spy
    rows = []
    for name, graph in _graphs(which):
        for eps in capture.EPS_LIST:
            for seed in seeds:
                capture.captured.clear()
                started = time.process_time()
                run = capture.ref.private_run(
                    graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp"
                )
                row = {"graph": name, "n": graph.n, "eps": eps, "seed": seed, "mae": run.mae}
                rows.append({**row, "cpu": time.process_time() - started, **capture.captured})
                print(name, graph.n, eps, seed, run.theta, round(run.mae, 4), flush=True)
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)


def _mae(d, v) -> float:
    return float(np.mean(np.abs(np.asarray(d, float) - np.asarray(v, float))))


def readings(r: dict) -> dict:
    """Per-node MAE of main, unimodal and the two baselines for one captured run."""
    d, y, t, e, s = r["degrees"], r["released"], r["theta"], r["eps_dsr"], r["search"]
    out = {"median": _mae(d, np.floor(np.median(d))), "zero": _mae(d, 0)}
    if not s:  # no θ search (small-fleet rule): no prior, both readings are the same
        out["main"] = out["unimodal"] = _mae(d, dpp.post_process(y, t, e).estimates)
        return out
    args = (s["bucket_sums"], s["thresholds"], r["bound"], len(d))
    out["main"] = _mae(d, dpp.post_process(y, t, e, dpp.degree_prior(*args)).estimates)
    shaped = dpp.unimodal_degree_prior(*args, s["eps"], s["noise_parties"])
    out["unimodal"] = _mae(d, dpp.post_process(y, t, e, shaped).estimates)
    return out


def table(rows: list[dict]) -> None:
    """Per cell (markdown) and the criterion's figures."""
    cells = defaultdict(list)
    for r in rows:
        x = readings(r)
        assert abs(x["main"] - r["mae"]) < 1e-9, (r["graph"], x["main"], r["mae"])
        cells[(r["graph"], r["n"], r["eps"])].append(x)
    keys = ("main", "unimodal", "median", "zero")
    print("| graph | n | ε | main | unimodal | constant median | all zero |")
    print("|---|---|---|---|---|---|---|")
    tot, newly_zero, worse = defaultdict(float), [], []
    for key, runs in cells.items():
        m = {k: float(np.mean([x[k] for x in runs])) for k in keys}
        print(
            f"| {key[0]} | {key[1]} | {key[2]:g} | "
            + " | ".join(f"{m[k]:.3f}" for k in keys)
            + " |"
        )
        for k in keys:
            tot[f"{k} sum"] += m[k]
        for k in ("main", "unimodal"):
            tot[f"{k} excess over median"] += max(0.0, m[k] - m["median"])
            tot[f"{k} cells above median"] += m[k] > m["median"] + 1e-9
            tot[f"{k} cells above zeros"] += m[k] > m["zero"] + 1e-9
        tot["cells better"] += m["unimodal"] < m["main"] - 1e-9
        tot["cells worse"] += m["unimodal"] > m["main"] + 1e-9
        if m["main"] <= m["zero"] + 1e-9 < m["unimodal"]:
            newly_zero.append(key)
        if m["unimodal"] > m["main"] * 1.005 + 1e-9:
            worse.append((key, round(m["main"], 4), round(m["unimodal"], 4)))
    print(f"\ncells {len(cells)}: " + "; ".join(f"{k} {v:.3f}" for k, v in tot.items()))
    print(f"cells newly above all zeros: {newly_zero}")
    print(f"cells worse than main by more than 0.5 %: {worse}")


def main() -> None:
    mode = sys.argv[1]
    if mode == "capture":
        capture_runs(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4])
    elif mode == "table":
        args, min_n = sys.argv[2:], 0
        if "--min-n" in args:  # e.g. the calibration captures' fleets that main searches
            at = args.index("--min-n")
            min_n, args = int(args[at + 1]), args[:at] + args[at + 2 :]
        rows = []
        for path in args:
            with open(path, "rb") as fh:
                rows += [r for r in pickle.load(fh) if r["n"] >= min_n]
        table(rows)
    else:
        raise SystemExit(f"mode: {mode!r} is not capture or table")


if __name__ == "__main__":
    main()
