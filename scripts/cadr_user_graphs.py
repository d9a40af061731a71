"""CADR-LDP's default pipeline on graphs nobody tuned it to, read the way users' files are.

    python scripts/cadr_user_graphs.py [--graphs LABEL,...] [--eps-list 0.5,1,2,3,5]
        [--runs 1] [--method ll] [--jobs 1] [--json]
    python scripts/cadr_user_graphs.py --large [--eps-list ...]   # Enron-sized, in process

Every graph of ``USER_GRAPHS`` is built on the fly (networkx generators of families, sizes
and seeds that ``app.cadr_grid``'s GRID and HELD_OUT never used, and k-nearest-neighbour
graphs of two data sets in ``data/`` that no test reads: Raisin and Turkish music
emotion), *written to a file in one of the formats a user brings* (tab separated, KONECT
with ``%`` headers, gzip without its suffix, bzip2, xz, UTF-16, ...) and read back through
the path users take (``scenarios.cadr_run.scenario_graph_source`` then
``devices.graphs.load_graph``). Then, per graph and ε, ``--runs`` in-process runs of the
default pipeline (``collector.cadr_reference.private_run``: pipeline "dp", θ auto-dev,
α = 0.1, degree bound "auto"; seeds 0..runs-1). Per cell it prints the release's MAE
(mean, min, max) beside the constant TRUE-median (a non-private oracle) and all-zero
baselines, scored the same way by the same run, and at the end how many cells are at or
below the constant median. The graphs were fixed before any run (nothing tuned).
"""

from __future__ import annotations

import argparse
import bz2
import csv
import gzip
import json
import lzma
import os
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from ldpfleet.app.cadr_grid import mae_spread

DATA = Path(__file__).resolve().parent.parent / "data"


# --- the graphs (networkx graphs or (n, edges) from data) --------------------------------


def _nx(kind: str, **p) -> Callable[[], list[tuple[int, int]]]:
    def build() -> list[tuple[int, int]]:
        import networkx as nx

        if kind == "powerlaw_cluster":
            g = nx.powerlaw_cluster_graph(p["n"], p["m"], p["p"], seed=p["seed"])
        elif kind == "random_regular":
            g = nx.random_regular_graph(p["d"], p["n"], seed=p["seed"])
        elif kind == "sbm":
            k = len(p["sizes"])
            probs = [[p["p_in"] if i == j else p["p_out"] for j in range(k)] for i in range(k)]
            g = nx.stochastic_block_model(p["sizes"], probs, seed=p["seed"])
        elif kind == "watts_strogatz":
            g = nx.watts_strogatz_graph(p["n"], p["k"], p["p"], seed=p["seed"])
        elif kind == "barabasi_albert":
            g = nx.barabasi_albert_graph(p["n"], p["m"], seed=p["seed"])
        else:
            raise ValueError(kind)
        return list(g.edges())

    return build


def _numeric_rows(path: Path) -> np.ndarray:
    """The numeric columns of a CSV file (header row skipped, non-numeric columns dropped)."""
    with path.open(newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))[1:]
    columns = []
    for column in zip(*rows, strict=True):
        try:
            columns.append([float(x) for x in column])
        except ValueError:
            continue  # a class label
    return np.array(columns).T


def _knn(path: Path, k: int) -> Callable[[], list[tuple[int, int]]]:
    """The k-nearest-neighbour graph of the standardised rows of a CSV file (an edge when
    either row is among the other's k nearest): a graph from real data, degree >= k."""

    def build() -> list[tuple[int, int]]:
        x = _numeric_rows(path)
        x = (x - x.mean(axis=0)) / np.where(x.std(axis=0) > 0, x.std(axis=0), 1)
        d = ((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2)
        np.fill_diagonal(d, np.inf)
        nearest = np.argsort(d, axis=1)[:, :k]
        return [(i, int(j)) for i in range(len(x)) for j in nearest[i]]

    return build


USER_GRAPHS: dict[str, Callable[[], list[tuple[int, int]]]] = {
    "plc-800-m3-p0.1": _nx("powerlaw_cluster", n=800, m=3, p=0.1, seed=101),
    "plc-4000-m1-p0.8": _nx("powerlaw_cluster", n=4000, m=1, p=0.8, seed=102),
    "rr-2000-d4": _nx("random_regular", n=2000, d=4, seed=103),
    "rr-300-d12": _nx("random_regular", n=300, d=12, seed=104),
    "sbm-2400": _nx("sbm", sizes=[200, 800, 1400], p_in=0.01, p_out=0.002, seed=105),
    "sbm-1000-dense": _nx("sbm", sizes=[250] * 4, p_in=0.08, p_out=0.005, seed=106),
    "ws-3000-k4-p0.05": _nx("watts_strogatz", n=3000, k=4, p=0.05, seed=107),
    "ws-800-k16-p0.3": _nx("watts_strogatz", n=800, k=16, p=0.3, seed=108),
    "ba-600-m2": _nx("barabasi_albert", n=600, m=2, seed=109),
    "ba-8000-m3": _nx("barabasi_albert", n=8000, m=3, seed=110),
    "ba-3000-m12": _nx("barabasi_albert", n=3000, m=12, seed=111),
    "raisin-knn5": _knn(DATA / "uci-raisin" / "Raisin_Dataset.csv", 5),
    "music-knn8": _knn(DATA / "uci-turkish-music-emotion" / "Acoustic_Features.csv", 8),
}


# --- the file formats users bring ----------------------------------------------------------


def _text(edges: list[tuple[int, int]], sep: str, comment: str, offset: int) -> str:
    body = "".join(f"{u + offset}{sep}{v + offset}\n" for u, v in edges)
    return f"{comment} written by scripts/cadr_user_graphs.py\n{body}"


FORMATS: dict[str, tuple[str, Callable[[list[tuple[int, int]]], bytes]]] = {
    "snap-tab": ("g.txt", lambda e: _text(e, "\t", "#", 0).encode()),
    "konect": (
        "out.g",
        lambda e: (f"% sym unweighted\n% {len(e)} x x\n" + _text(e, " ", "%", 1)).encode(),
    ),
    "gzip-no-suffix": ("g.edges", lambda e: gzip.compress(_text(e, " ", "#", 0).encode())),
    "bzip2": ("g.txt.bz2", lambda e: bz2.compress(_text(e, "\t", "#", 7).encode())),
    "xz": ("g.xz", lambda e: lzma.compress(_text(e, " ", "%", 0).encode())),
    "utf-16-crlf": (
        "g.txt",
        lambda e: _text(e, "\t", "#", 0).replace("\n", "\r\n").encode("utf-16"),
    ),
}


def user_graph(label: str, folder: Path):
    """``USER_GRAPHS[label]`` written in its format (``FORMATS``, by the label's position)
    under ``folder`` and read back the way ``bench cadr --graph FILE`` reads it."""
    from ldpfleet.devices.graphs import load_graph
    from ldpfleet.scenarios.cadr_run import scenario_graph_source

    edges = USER_GRAPHS[label]()
    fmt = list(FORMATS)[list(USER_GRAPHS).index(label) % len(FORMATS)]
    file_name, write = FORMATS[fmt]
    path = folder / f"{label}-{file_name}"
    path.write_bytes(write(edges))
    return load_graph(scenario_graph_source(str(path), None)), fmt


def run_cell(label: str, eps: float, seed: int, method: str) -> dict:
    """One default-pipeline run on ``label`` at ``eps``: MAE beside the baselines."""
    from ldpfleet.collector.cadr_reference import private_run

    with tempfile.TemporaryDirectory(prefix="cadr-user-graphs-") as folder:
        graph, fmt = user_graph(label, Path(folder))
    run = private_run(graph, method, "auto-dev", eps, 0.1, seed, pipeline="dp")
    return {
        "graph": label,
        "format": fmt,
        "n": graph.n,
        "edges": graph.edges(),
        "max_degree": int(graph.degrees().max()),
        "eps": eps,
        "seed": seed,
        "mae": run.mae,
        "median": run.baselines["constant_median_oracle"]["mae"],
        "zero": run.baselines["all_zero"]["mae"],
        "seconds": run.seconds,
    }


def cells(rows: list[dict]) -> list[dict]:
    """Rows grouped per (graph, ε), in ``USER_GRAPHS`` order."""
    out = []
    for label in USER_GRAPHS:
        for eps in sorted({r["eps"] for r in rows if r["graph"] == label}):
            rs = [r for r in rows if r["graph"] == label and r["eps"] == eps]
            out.append(
                {
                    **{k: rs[0][k] for k in ("graph", "format", "n", "edges", "max_degree")},
                    "eps": eps,
                    **mae_spread(rs),
                }
            )
    return out


def markdown(table: list[dict]) -> str:
    lines = [
        "| graph (file format) | n | edges | max deg | ε | MAE dp, mean (min–max) "
        "| MAE constant true median | MAE all zero |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in table:
        lines.append(
            f"| {c['graph']} ({c['format']}) | {c['n']:,} | {c['edges']:,} | {c['max_degree']} "
            f"| {c['eps']:g} | {c['mae_mean']:.4f} ({c['mae_min']:.4f}–{c['mae_max']:.4f}) "
            f"| {c['median']:.4f} | {c['zero']:.3f} |"
        )
    return "\n".join(lines)


def measure_large(eps: float, n: int = 36_692, m: int = 5, seed: int = 112) -> dict:
    """An Enron-sized graph (SNAP email-Enron: 36,692 nodes, 183,831 edges; here Holme-Kim
    powerlaw_cluster(n, m, 0.2)), written as gzip without a suffix, loaded through the
    users' path and run once (seed 0) in this process: wall and CPU seconds of the load and
    of the run, peak RSS of the process."""
    import resource

    import networkx as nx
    from ldpfleet.collector.cadr_reference import private_run
    from ldpfleet.devices.graphs import load_graph
    from ldpfleet.scenarios.cadr_run import scenario_graph_source

    g = nx.powerlaw_cluster_graph(n, m, 0.2, seed=seed)
    with tempfile.TemporaryDirectory(prefix="cadr-large-") as folder:
        path = Path(folder) / "enron-sized.edges"
        path.write_bytes(gzip.compress("".join(f"{u}\t{v}\n" for u, v in g.edges()).encode()))
        wall, cpu = time.perf_counter(), time.process_time()
        graph = load_graph(scenario_graph_source(str(path), None))
        load_wall, load_cpu = time.perf_counter() - wall, time.process_time() - cpu
    wall, cpu = time.perf_counter(), time.process_time()
    run = private_run(graph, "ll", "auto-dev", eps, 0.1, 0, pipeline="dp")
    return {
        "n": graph.n,
        "edges": graph.edges(),
        "max_degree": int(graph.degrees().max()),
        "eps": eps,
        "load_wall": round(load_wall, 2),
        "load_cpu": round(load_cpu, 2),
        "run_wall": round(time.perf_counter() - wall, 2),
        "run_cpu": round(time.process_time() - cpu, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "mae": run.mae,
        "median": run.baselines["constant_median_oracle"]["mae"],
        "zero": run.baselines["all_zero"]["mae"],
        "theta": run.theta,
        "load_average": os.getloadavg(),
    }


def _tied(a: float, b: float) -> bool:
    """Equal up to float rounding (a mean of equal MAEs may differ from them in the last bit)."""
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/cadr_user_graphs.py")
    ap.add_argument("--graphs", default=",".join(USER_GRAPHS))
    ap.add_argument("--eps-list", default="0.5,1,2,3,5")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--method", default="ll")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--large", action="store_true", help="the Enron-sized measurement only")
    args = ap.parse_args(argv)
    if args.large:
        for eps in (float(e) for e in args.eps_list.split(",")):
            print(json.dumps(measure_large(eps)), flush=True)
        return 0
    graphs = [g for g in args.graphs.split(",") if g]
    unknown = [g for g in graphs if g not in USER_GRAPHS]
    if unknown:
        print(f"--graphs: unknown {unknown}; known: {', '.join(USER_GRAPHS)}", file=sys.stderr)
        return 2
    eps_list = [float(e) for e in args.eps_list.split(",")]
    tasks = [(g, e, s, args.method) for g in graphs for e in eps_list for s in range(args.runs)]
    started, cpu_started = time.perf_counter(), os.times()
    rows = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for row in pool.map(run_cell, *zip(*tasks, strict=True)):
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)  # progress, one run a line
    table = cells(rows)
    cpu = os.times()
    cpu_seconds = sum(getattr(cpu, k) - getattr(cpu_started, k) for k in
                      ("user", "system", "children_user", "children_system"))  # fmt: skip
    tied = sum(_tied(c["mae_mean"], c["median"]) for c in table)
    below = sum(
        c["mae_mean"] < c["median"] and not _tied(c["mae_mean"], c["median"]) for c in table
    )
    every_run = sum(c["mae_max"] <= c["median"] or _tied(c["mae_max"], c["median"]) for c in table)
    if args.json:
        print(json.dumps({"cells": table, "rows": rows}, indent=1))
    else:
        print(markdown(table))
    print(
        f"\n{len(table)} cells, {len(rows)} runs, method {args.method}, pipeline dp: mean MAE "
        f"at or below the constant median in {below + tied} of {len(table)} cells ({below} "
        f"below, {tied} equal to 1e-9), above it in {len(table) - below - tied}; every run at "
        f"or below it in {every_run}; {time.perf_counter() - started:.0f} s wall, "
        f"{cpu_seconds:.0f} s CPU, load average {os.getloadavg()[0]:.2f}",
        file=sys.stderr if args.json else sys.stdout,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
