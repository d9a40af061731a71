"""Odd graphs through the default CADR pipeline (issue 20, helper N): a robustness battery.

Each odd graph (no edges, one node, one edge, complete, star, path, cycle, regular, two
components, isolated nodes plus a clique, complete bipartite, a hub on a sparse graph, a
large sparse graph, a file with self loops and duplicates) goes through

* ``ldpfleet bench cadr --graph FILE --runs 1`` (``ref``: the in-process reference),
* the same with ``--transport memory`` (``mem``: the device fleet protocol),
* ``ldpfleet run SCENARIO`` with a small scenario on the memory broker (``run``),

with ``[cadr] method = "auto"`` (clip under the dp pipeline) at ε 0.5, 1, 3, plus the
extreme ε 0.001 and 50 and just outside [0.001, 50], and the degree-bound rules (auto,
devices, graph-max, an integer below the maximum degree). Graphs an edge list cannot
express (isolated nodes: an edge list names only nodes with an edge) go through the
Python API (``private_run`` and ``run_cadr_fleet`` on the memory transport: ``api-ref``,
``api-mem``).

Checked per cell: no traceback; exit 0, or exit 2 with a one-sentence refusal (within
``LATE_REFUSAL_SECONDS``: before the fleet starts); the
ledger spent exactly ε (bench: the ``spent`` parts; run: every device's ledger); the JSON
has ``mae`` and both baselines (constant median, all zeros); MAE <= the all-zero MAE;
1 <= θ <= D; run: the released histogram sums to n and ``privacy_claim`` is present.

    python scripts/N_odd_graphs.py                 # the whole battery, a markdown table
    python scripts/N_odd_graphs.py --only star     # graphs whose name contains "star"
    python scripts/N_odd_graphs.py --quick         # ε 1 only, no extremes
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

WORK = Path("/tmp/N-odd")
EPS_MAIN = (0.5, 1.0, 3.0)
EPS_EXTREME = (0.001, 50.0, 0.0009, 50.5)
BIN = Path(sys.executable).parent / "ldpfleet"
# a refusal later than this came after devices started (a typed refusal on load takes the
# CLI's start-up, 1-5 s on the shared cores); a report flag, not a test
LATE_REFUSAL_SECONDS = 15.0


@dataclass
class Cell:
    """One (graph, ε, path, degree bound) run and what the checks found."""

    graph: str
    eps: float
    path: str
    bound: str = "auto"
    status: str = "?"
    mae: float | None = None
    median: float | None = None
    zeros: float | None = None
    theta: int | None = None
    bound_value: int | None = None
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    note: str = ""


def _edges_file(name: str, edges: list[tuple[int, int]], extra: str = "") -> Path:
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"{name}.txt"
    path.write_text(extra + "".join(f"{u} {v}\n" for u, v in edges))
    return path


def _complete(n: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def _regular(n: int, d: int, seed: int) -> list[tuple[int, int]]:
    import networkx as nx

    return list(nx.random_regular_graph(d, n, seed=seed).edges())


def _hub_on_sparse(n: int, seed: int) -> list[tuple[int, int]]:
    import networkx as nx

    sparse = nx.gnm_random_graph(n - 1, n - 1, seed=seed)  # ids 1..n-1 after the shift
    return [(u + 1, v + 1) for u, v in sparse.edges()] + [(0, i) for i in range(1, n)]


def _sparse_large(n: int, seed: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n, 3 * n)
    v = rng.integers(0, n, 3 * n)
    keep = u != v
    return list(zip(u[keep].tolist(), v[keep].tolist(), strict=True))


def file_graphs() -> dict[str, str]:
    """Name -> the ``--graph`` argument (a file, or a generator for refusals)."""
    loops_dups = [(1, 2), (2, 1), (1, 2), (2, 3), (3, 3), (4, 4), (3, 4), (4, 3)] + [
        (i, i + 1) for i in range(5, 40)
    ]
    graphs = {
        "no-edges(gen)": "erdos_renyi:n=50,p=0,seed=0",
        "single-node(gen)": "erdos_renyi:n=1,p=0.5,seed=0",
        "only-self-loops": str(_edges_file("only-self-loops", [(1, 1), (2, 2)])),
        "one-edge": str(_edges_file("one-edge", [(0, 1)])),
        "K5": str(_edges_file("K5", _complete(5))),
        "K30": str(_edges_file("K30", _complete(30))),
        "star10": str(_edges_file("star10", [(0, i) for i in range(1, 10)])),
        "star200": str(_edges_file("star200", [(0, i) for i in range(1, 200)])),
        "path100": str(_edges_file("path100", [(i, i + 1) for i in range(99)])),
        "cycle100": str(_edges_file("cycle100", [(i, (i + 1) % 100) for i in range(100)])),
        "4-regular200": str(_edges_file("4-regular200", _regular(200, 4, 7))),
        "two-K10": str(
            _edges_file("two-K10", _complete(10) + [(u + 10, v + 10) for u, v in _complete(10)])
        ),
        "K3,200": str(_edges_file("K3,200", [(i, 3 + j) for i in range(3) for j in range(200)])),
        "hub+sparse300": str(_edges_file("hub+sparse300", _hub_on_sparse(300, 3))),
        "loops+dups": str(_edges_file("loops+dups", loops_dups, "# self loops, duplicates\n")),
        "sparse20000": str(_edges_file("sparse20000", _sparse_large(20_000, 11))),
    }
    return graphs


def _cli(args: list[str], timeout: float = 900.0) -> tuple[int, str, str, float]:
    started = time.perf_counter()
    proc = subprocess.run(
        [str(BIN), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - started


def _refusal(cell: Cell, rc: int, err: str) -> bool:
    """Record a non-zero exit; True when it was one (typed: exit 2 and no traceback)."""
    if "Traceback" in err:
        cell.status = "TRACEBACK"
        cell.problems.append("traceback: " + err.strip().splitlines()[-1][:160])
        return True
    if rc == 0:
        return False
    cell.status = f"refused({rc})" if rc == 2 else f"EXIT {rc}"
    if rc != 2:
        cell.problems.append(f"exit {rc}")
    elif cell.seconds > LATE_REFUSAL_SECONDS:  # a refusal after the fleet started
        cell.problems.append(f"refused only after {cell.seconds:.0f} s")
    cell.note = " ".join(err.split())[:160]
    return True


def _common_checks(cell: Cell, result: dict, eps: float, n: int) -> None:
    """The checks on a private release's figures (bench JSON or results.json)."""
    base = result.get("baselines") or {}
    cell.mae = result.get("mae")
    cell.median = (base.get("constant_median_oracle") or {}).get("mae")
    cell.zeros = (base.get("all_zero") or {}).get("mae")
    if cell.mae is None or cell.median is None or cell.zeros is None:
        cell.problems.append("mae or a baseline missing")
    elif cell.mae > cell.zeros + 1e-9:
        cell.problems.append(f"MAE {cell.mae:.3f} > all-zero {cell.zeros:.3f}")
    theta = result.get("theta")
    cell.theta = theta[0] if isinstance(theta, list) else theta
    cell.bound_value = result.get("degree_bound")
    if cell.theta is None or cell.bound_value is None:
        cell.problems.append("θ or D missing")
    elif not 1 <= cell.theta <= max(cell.bound_value, 1):
        cell.problems.append(f"θ {cell.theta} outside 1..D={cell.bound_value}")
    for key in ("mae", "mse"):
        value = result.get(key)
        if value is not None and not math.isfinite(value):
            cell.problems.append(f"{key} not finite")


def bench_cell(name: str, graph: str, eps: float, path: str, bound: str = "auto") -> Cell:
    """``ldpfleet bench cadr`` on ``graph`` (path ``ref`` or ``mem``)."""
    cell = Cell(name, eps, path, bound)
    args = ["bench", "cadr", "--graph", graph, "--eps", repr(eps), "--runs", "1"]
    args += ["--degree-bound", bound]
    if path == "mem":
        args += ["--transport", "memory"]
    rc, out, err, cell.seconds = _cli(args)
    if _refusal(cell, rc, err):
        return cell
    result = json.loads(out.strip().splitlines()[-1])
    spent = sum((result.get("spent") or {}).values())
    if abs(spent - eps) > 1e-9 * max(1.0, eps):
        cell.problems.append(f"spent {spent!r} != eps {eps!r}")
    _common_checks(cell, result, eps, result["nodes"])
    cell.status = "ok" if not cell.problems else "FAIL"
    cell.note = f"n={result['nodes']} m={result['edges']} by={result.get('theta_chosen_by')}"
    return cell


SCENARIO = """[scenario]
name = "odd-{slug}"
seed = 0
[graph]
source = {source}
[cadr]
method = "auto"
eps = {eps!r}
degree_bound = {bound}
[broker]
url = "memory"
"""


def _ledger_spent(ledgers, cell: Cell, eps: float) -> float:
    """Every device's spent ε (ledger.json's shape); a problem unless all equal ``eps``."""
    spent = [acc["spent"] for dev in ledgers for acc in dev["accounts"].values()]
    if not spent or any(abs(s - eps) > 1e-9 * max(1, eps) for s in spent):
        low, high = (min(spent), max(spent)) if spent else (None, None)
        cell.problems.append(f"ledger spent {low}..{high} != eps {eps}")
    return eps if spent else float("nan")


def run_cell(name: str, graph: str, eps: float, bound: str = "auto") -> Cell:
    """``ldpfleet run`` of a small scenario on ``graph`` over the memory broker."""
    cell = Cell(name, eps, "run", bound)
    slug = "".join(c if c.isalnum() else "-" for c in f"{name}-{eps}-{bound}")
    folder = WORK / "runs" / slug
    scenario = WORK / f"{slug}.toml"
    bound_toml = bound if bound.isdigit() else json.dumps(bound)
    scenario.write_text(
        SCENARIO.format(slug=slug, source=json.dumps(graph), eps=eps, bound=bound_toml)
    )
    rc, _out, err, cell.seconds = _cli(["run", str(scenario), "-o", str(folder)])
    if _refusal(cell, rc, err):
        if folder.exists() and rc == 2:
            cell.problems.append("a refused run left its output folder")
        return cell
    result = json.loads((folder / "results.json").read_text())
    ledger = json.loads((folder / "ledger.json").read_text())
    if len(ledger) != result["devices"]:
        cell.problems.append(f"{len(ledger)} ledgers for {result['devices']} devices")
    _ledger_spent(ledger.values(), cell, eps)
    n = result["devices"]
    for key in ("histogram", "estimate_histogram"):
        if sum(result.get(key) or []) != n:
            cell.problems.append(f"{key} sums to {sum(result.get(key) or [])} != n {n}")
    if not (result.get("privacy_claim") or {}).get("parts"):
        cell.problems.append("privacy_claim missing")
    _common_checks(cell, result, eps, n)
    cell.status = "ok" if not cell.problems else "FAIL"
    cell.note = f"n={n} m={result['edges']} by={result.get('theta_chosen_by')}"
    return cell


def api_graphs() -> dict[str, object]:
    """Graphs an edge list cannot express: isolated nodes (Python API only)."""
    from ldpfleet.devices.graphs import Graph

    clique = np.array(_complete(20))
    return {
        "single-node(api)": Graph.from_edges(1, np.array([], int), np.array([], int)),
        "no-edges50(api)": Graph.from_edges(50, np.array([], int), np.array([], int)),
        "isolated480+K20(api)": Graph.from_edges(500, clique[:, 0], clique[:, 1]),
    }


def api_cell(name: str, graph, eps: float, path: str) -> Cell:
    """``private_run`` (``api-ref``) or ``run_cadr_fleet`` on memory (``api-mem``)."""
    import traceback

    from ldpfleet.collector.cadr_reference import private_run, summarise
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.scenarios.cadr_run import run_cadr_fleet
    from ldpfleet.scenarios.loop import run as run_loop

    cell = Cell(name, eps, path)
    started = time.perf_counter()
    try:
        if path == "api-ref":
            result = summarise([private_run(graph, "clip", "auto-dev", eps, 0.1, 0, "dp")])
            spent = sum(result["spent"].values())
        else:
            result = run_loop(run_cadr_fleet(graph, broker="memory", method="clip", eps=eps))
            spent = _ledger_spent(result["ledgers"].values(), cell, eps)
    except ParameterError as error:
        cell.status = "refused(typed)"
        cell.note = f"{error.field}: {error.reason[:120]}"
        return cell
    except Exception as error:  # the battery reports any crash
        cell.status = "TRACEBACK"
        cell.problems.append(f"{type(error).__name__}: {error}"[:160])
        traceback.print_exc(limit=3)
        return cell
    finally:
        cell.seconds = time.perf_counter() - started
    if abs(spent - eps) > 1e-9 * max(1.0, eps):
        cell.problems.append(f"spent {spent!r} != eps {eps!r}")
    if path == "api-mem" and sum(result.get("estimate_histogram") or []) != graph.n:
        cell.problems.append("estimate_histogram does not sum to n")
    _common_checks(cell, result, eps, graph.n)
    cell.status = "ok" if not cell.problems else "FAIL"
    return cell


def _fmt(value) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def table(cells: list[Cell]) -> str:
    """The battery's markdown table."""
    lines = [
        "| graph | ε | path | D rule | status | MAE | median | zeros | θ (D) | s | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        theta = f"{_fmt(c.theta)} ({_fmt(c.bound_value)})"
        note = "; ".join(c.problems) or c.note
        lines.append(
            f"| {c.graph} | {c.eps:g} | {c.path} | {c.bound} | {c.status} | {_fmt(c.mae)} | "
            f"{_fmt(c.median)} | {_fmt(c.zeros)} | {theta} | {c.seconds:.1f} | {note} |"
        )
    return "\n".join(lines)


def compact_table(cells: list[Cell]) -> str:
    """One row per (graph, ε, D rule): each path's status, MAE, θ and seconds side by side,
    with the baselines (the same on every path)."""
    rows: dict[tuple, dict[str, Cell]] = {}
    for c in cells:
        rows.setdefault((c.graph, c.eps, c.bound), {})[c.path] = c
    lines = [
        "| graph | ε | D rule | median | zeros | ref: MAE θ s | mem: MAE θ s | run: MAE θ s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (graph, eps, bound), paths in rows.items():
        first = next(iter(paths.values()))
        shown = []
        for path in ("ref", "mem", "run", "api-ref", "api-mem"):
            c = paths.get(path)
            if c is None:
                continue
            head = "" if c.status == "ok" else f"**{c.status}** "
            shown.append(f"{head}{_fmt(c.mae)} θ{_fmt(c.theta)} {c.seconds:.1f}s")
        shown += [""] * (3 - len(shown))
        lines.append(
            f"| {graph} | {eps:g} | {bound} | {_fmt(first.median)} | {_fmt(first.zeros)} | "
            + " | ".join(shown[:3])
            + " |"
        )
    return "\n".join(lines)


def battery(only: str | None, quick: bool) -> list[Cell]:
    """Every cell of the battery (see the module docstring)."""
    cells: list[Cell] = []
    eps_list = (1.0,) if quick else EPS_MAIN

    def keep(name: str) -> bool:
        return only is None or only in name

    for name, graph in file_graphs().items():
        if not keep(name):
            continue
        for eps in (1.0,) if name == "sparse20000" else eps_list:
            for path in ("ref", "mem"):
                cells.append(_log(bench_cell(name, graph, eps, path)))
            cells.append(_log(run_cell(name, graph, eps)))
    for name, graph in api_graphs().items():
        if keep(name):
            for eps in eps_list:
                for path in ("api-ref", "api-mem"):
                    cells.append(_log(api_cell(name, graph, eps, path)))
    if not quick:
        cells += _extremes(keep)
        cells += _bounds(keep)
    return cells


def _extremes(keep) -> list[Cell]:
    cells = []
    graphs = file_graphs()
    for name in ("K30", "star200", "one-edge"):
        if keep(name):
            for eps in EPS_EXTREME:
                for path in ("ref", "mem"):
                    cells.append(_log(bench_cell(name, graphs[name], eps, path)))
                cells.append(_log(run_cell(name, graphs[name], eps)))
    return cells


def _bounds(keep) -> list[Cell]:
    cells = []
    graphs = file_graphs()
    for name, below in (("star200", "20"), ("hub+sparse300", "10"), ("K3,200", "50")):
        if keep(name):
            for bound in ("devices", "graph-max", below, "0"):
                for path in ("ref", "mem"):
                    cells.append(_log(bench_cell(name, graphs[name], 1.0, path, bound)))
                cells.append(_log(run_cell(name, graphs[name], 1.0, bound)))
    return cells


def _log(cell: Cell) -> Cell:
    print(table([cell]).splitlines()[-1], file=sys.stderr, flush=True)
    return cell


def main(argv: list[str] | None = None) -> None:
    """Run the battery; print the table and a one-line summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="graphs whose name contains this")
    parser.add_argument("--quick", action="store_true", help="ε 1 only, no extremes")
    parser.add_argument("--json", type=Path, help="also write the cells as JSON here")
    parser.add_argument("--compact", type=Path, help="print the compact table of this JSON")
    args = parser.parse_args(argv)
    if args.compact:
        print(compact_table([Cell(**c) for c in json.loads(args.compact.read_text())]))
        return
    cells = battery(args.only, args.quick)
    print(table(cells))
    bad = [c for c in cells if c.problems]
    print(f"\n{len(cells)} cells, {len(bad)} with a problem")
    if args.json:
        args.json.write_text(json.dumps([c.__dict__ for c in cells], indent=1))


if __name__ == "__main__":
    main()
