"""CADR-LDP's default pipeline on a demanding user's own graphs (2026-12-05, issue 20).

    python scripts/cadr_user_new_graphs.py --write DIR           # write the files only
    python scripts/cadr_user_new_graphs.py [--graphs LABEL,...] [--eps-list 0.5,1,2,3,5]
        [--seeds 0,1,2] [--method ll]                       # one JSON line per run
    python scripts/cadr_user_new_graphs.py --markdown RUNS.jsonl  # their table

Twenty graphs fixed before any run (networkx seeds 201-220; none of them in
``app.cadr_grid``'s GRID or HELD_OUT or ``scripts/cadr_user_graphs.py``): every family a
user may bring — preferential attachment, Holme-Kim, small world, regular, sparse and
dense G(n, p), complete bipartite, star, path, 2-d grid, karate club, Les Misérables,
Florentine families, Davis' southern women, a disconnected union, many isolated nodes, a
hub of degree n − 1, n from 2 to 20,000. Each is written in a format the docs accept
(``FORMATS``: label ids, duplicates, self loops, directed pairs — one or both directions —,
end-of-line comments, KONECT ``%`` headers, gzip, CRLF) and read back through the path of
``ldpfleet bench cadr --graph FILE`` (``scenario_graph_source`` + ``load_graph``). Isolated
nodes are written as self loops (``v v``), the only way an edge list names them.

Per graph, ε and seed: one in-process run of the default pipeline
(``collector.cadr_reference.private_run``: dp, LL, θ auto-dev, α = 0.1, D = n − 1): the
post-processed MAE ("ours"), the raw DSR release's MAE, the constant TRUE median (a
non-private oracle) and the all-zero release, histogram L1 and EMD, θ and θ on exact
counts, the ledger total.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

Edges = list[tuple[object, object]]


def _relabel(g) -> Edges:
    return [(u, v) for u, v in g.edges()]


def _union(*graphs) -> Edges:
    import networkx as nx

    return _relabel(nx.disjoint_union_all(graphs))


def _isolated(g, isolated: int) -> Edges:
    """``g``'s edges plus ``isolated`` nodes that only appear as self loops."""
    start = max(g.nodes) + 1
    return _relabel(g) + [(v, v) for v in range(start, start + isolated)]


def _hub(g) -> Edges:
    """``g`` plus one node joined to every other node (degree n − 1)."""
    hub = max(g.nodes) + 1
    return _relabel(g) + [(hub, v) for v in g.nodes]


def _named(g) -> Edges:
    """Label ids without spaces (Davis' women are 'Evelyn Jefferson')."""
    return [(str(u).replace(" ", "_"), str(v).replace(" ", "_")) for u, v in g.edges()]


def _graphs() -> dict[str, Callable[[], Edges]]:
    import networkx as nx

    return {
        "n2-one-edge": lambda: [(0, 1)],
        "path-3": lambda: _relabel(nx.path_graph(3)),
        "florentine": lambda: _named(nx.florentine_families_graph()),
        "karate": lambda: _relabel(nx.karate_club_graph()),
        "davis-women": lambda: _named(nx.davis_southern_women_graph()),
        "lesmis": lambda: _named(nx.les_miserables_graph()),
        "star-1000": lambda: _relabel(nx.star_graph(999)),
        "path-2000": lambda: _relabel(nx.path_graph(2000)),
        "grid-40x50": lambda: _relabel(
            nx.convert_node_labels_to_integers(nx.grid_2d_graph(40, 50))
        ),
        "kbip-30-400": lambda: _relabel(nx.complete_bipartite_graph(30, 400)),
        "rr-1000-d6": lambda: _relabel(nx.random_regular_graph(6, 1000, seed=204)),
        "ws-1200-k6-p0.2": lambda: _relabel(nx.watts_strogatz_graph(1200, 6, 0.2, seed=203)),
        "er-sparse-4000": lambda: _isolated(nx.gnp_random_graph(4000, 1.5 / 4000, seed=205), 0),
        "er-dense-500-p0.2": lambda: _relabel(nx.gnp_random_graph(500, 0.2, seed=206)),
        "ba-5000-m2": lambda: _relabel(nx.barabasi_albert_graph(5000, 2, seed=201)),
        "plc-2500-m4-p0.3": lambda: _relabel(nx.powerlaw_cluster_graph(2500, 4, 0.3, seed=202)),
        "union-disconnected": lambda: _union(
            nx.barabasi_albert_graph(600, 3, seed=207),
            nx.cycle_graph(300),
            nx.complete_graph(25),
            *[nx.path_graph(2) for _ in range(200)],
        ),
        "isolated-1200of2000": lambda: _isolated(nx.gnp_random_graph(800, 6 / 800, seed=208), 1200),
        "hub-ba-2000": lambda: _hub(nx.barabasi_albert_graph(1999, 3, seed=209)),
        "ba-20000-m3": lambda: _relabel(nx.barabasi_albert_graph(20000, 3, seed=210)),
    }


GRAPHS = _graphs()

# --- the file formats the docs accept ----------------------------------------------------


def _lines(edges: Edges, sep: str = " ", both: bool = False, offset: int = 0) -> list[str]:
    out = []
    for u, v in edges:
        a, b = (u + offset, v + offset) if isinstance(u, int) else (u, v)
        out.append(f"{a}{sep}{b}")
        if both and u != v:
            out.append(f"{b}{sep}{a}")
    return out


def _snap_both(e: Edges) -> bytes:  # SNAP: tabs, both directions, '#' header
    return (
        "# Directed graph\n# FromNodeId\tToNodeId\n" + "\n".join(_lines(e, "\t", True)) + "\n"
    ).encode()


def _dups_loops(e: Edges) -> bytes:  # every edge twice, a self loop per 7th, end comments
    lines = []
    for i, line in enumerate(_lines(e)):
        lines += [line + "  # friends", line]
        if i % 7 == 0:
            u = line.split()[0]
            lines.append(f"{u} {u}")
    return ("\n".join(lines) + "\n").encode()


def _konect(e: Edges) -> bytes:  # KONECT: '%' headers, ids from 1, one direction
    return (
        f"% sym unweighted\n% {len(e)} x x\n" + "\n".join(_lines(e, " ", False, 1)) + "\n"
    ).encode()


def _gzip_crlf(e: Edges) -> bytes:  # gzip without suffix, CRLF, ids shifted by 10**12
    return gzip.compress(("\r\n".join(_lines(e, " ", False, 10**12)) + "\r\n").encode())


FORMATS: dict[str, tuple[str, Callable[[Edges], bytes]]] = {
    "snap-both-directions": ("g.txt", _snap_both),
    "duplicates-selfloops-comments": ("g.edges", _dups_loops),
    "konect": ("out.g", _konect),
    "gzip-crlf-big-ids": ("g.dat", _gzip_crlf),
}


def graph_format(label: str) -> str:
    """The file format ``label`` is written in (by its position in ``GRAPHS``)."""
    return list(FORMATS)[list(GRAPHS).index(label) % len(FORMATS)]


def write_graph(label: str, folder: Path) -> Path:
    """``GRAPHS[label]`` written under ``folder`` in its format; returns the path."""
    name, write = FORMATS[graph_format(label)]
    path = folder / f"{label}-{name}"
    path.write_bytes(write(GRAPHS[label]()))
    return path


def load(path: Path):
    """Read back the way ``ldpfleet bench cadr --graph FILE`` reads it."""
    from ldpfleet.devices.graphs import load_graph
    from ldpfleet.scenarios.cadr_run import scenario_graph_source

    return load_graph(scenario_graph_source(str(path), None))


def run_cell(graph, label: str, eps: float, seed: int, method: str) -> dict:
    """One default-pipeline run: ours, raw, the two baselines, θ, histogram errors."""
    from ldpfleet.collector.cadr_reference import private_run

    started = time.process_time()
    run = private_run(graph, method, "auto-dev", eps, 0.1, seed, pipeline="dp")
    return {
        "graph": label,
        "format": graph_format(label),
        "n": graph.n,
        "edges": graph.edges(),
        "max_degree": int(graph.degrees().max()),
        "eps": eps,
        "seed": seed,
        "theta": run.theta,
        "theta_exact": run.theta_search.get("theta_exact"),
        "mae": run.mae,
        "raw": run.raw["mae"],
        "median": run.baselines["constant_median_oracle"]["mae"],
        "zero": run.baselines["all_zero"]["mae"],
        "histogram_l1": run.histogram_l1,
        "histogram_emd": run.histogram_emd,
        "spent": round(sum(run.spent.values()), 12),
        "cpu": round(time.process_time() - started, 2),
    }


def markdown(rows: list[dict]) -> str:
    """The held-out table of docs/cadr-private.md: per (graph, ε) the means over seeds of
    ours (the post-processed release; worst seed beside it), the raw DSR release, the
    constant TRUE median (oracle) and all zero; ▲ when a seed's release is above the
    constant median."""
    lines = [
        "| graph (format) | n | ε | ours, mean (worst) | raw release | constant median "
        "| all zero | hist. L1 / EMD | θ (exact) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    cells: dict[tuple[str, float], list[dict]] = {}
    for r in rows:
        cells.setdefault((r["graph"], r["eps"]), []).append(r)
    for (label, eps), rs in cells.items():
        mean = {
            k: sum(r[k] for r in rs) / len(rs)
            for k in ("mae", "raw", "histogram_l1", "histogram_emd")
        }
        worst, median = max(r["mae"] for r in rs), rs[0]["median"]
        mark = " ▲" if worst > median + 1e-9 * max(1.0, median) else ""
        thetas = "/".join(str(r["theta"]) for r in rs)
        n, zero, exact = rs[0]["n"], rs[0]["zero"], rs[0]["theta_exact"]
        lines.append(
            f"| {label} ({rs[0]['format']}) | {n:,} | {eps:g} "
            f"| {mean['mae']:.3f} ({worst:.3f}){mark} | {mean['raw']:.2f} | {median:.3f} "
            f"| {zero:.3f} | {mean['histogram_l1']:.3f} / {mean['histogram_emd']:.2f} "
            f"| {thetas} ({exact}) |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/cadr_user_new_graphs.py")
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--eps-list", default="0.5,1,2,3,5")
    ap.add_argument("--seeds", default="0,1,2")  # one line of JSON per run on stdout
    ap.add_argument("--method", default="ll")
    ap.add_argument("--write", metavar="DIR", help="write the files to DIR and stop")
    ap.add_argument("--markdown", metavar="JSONL", help="the table of a run's output, and stop")
    args = ap.parse_args(argv)
    labels = [g for g in args.graphs.split(",") if g]
    unknown = [g for g in labels if g not in GRAPHS]
    if unknown:
        print(f"--graphs: unknown {unknown}; known: {', '.join(GRAPHS)}", file=sys.stderr)
        return 2
    if args.markdown:
        print(markdown([json.loads(line) for line in Path(args.markdown).read_text().splitlines()]))
        return 0
    if args.write:
        folder = Path(args.write)
        folder.mkdir(parents=True, exist_ok=True)
        for label in labels:
            print(write_graph(label, folder))
        return 0
    eps_list = [float(e) for e in args.eps_list.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    started = time.perf_counter()
    for label in labels:
        with tempfile.TemporaryDirectory(prefix="cadr-user-new-") as folder:
            graph = load(write_graph(label, Path(folder)))
        for eps in eps_list:
            for seed in seeds:
                print(json.dumps(run_cell(graph, label, eps, seed, args.method)), flush=True)
    print(
        f"{time.perf_counter() - started:.0f} s wall, load {os.getloadavg()[0]:.2f}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
