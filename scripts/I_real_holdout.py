"""Held-out check of today's three CADR changes on real small graphs (issue 20, helper I).

    python scripts/I_real_holdout.py capture OUT.pkl [--old-mid-cap]
    python scripts/I_real_holdout.py compare OLD.pkl NEW.pkl

Evaluation only; no product change. The three changes (docs/cadr-private.md, last three
sections): helper B's geometric tail of the released histogram (d61f944), helper H's
top significant bucket under multiplicity (68e04f6) and helper A's ε_θ cap 1.5 for
fleets of 25-150 devices from ε = 1 up (37597c5). "old" is the tree at 2d93049 (before
all three), "new" is main at 37597c5; ``capture`` runs with whichever ``ldpfleet`` the
interpreter imports (``/work/venv-I-old`` = a worktree at 2d93049, ``/work/venv-I`` = main),
so the same file captures both. ``--old-mid-cap`` (new tree only, a decomposition): main
with ``MID_FLEET_THETA_EPS_CAP = 0.5``, i.e. B + H without A.

Set, fixed in this file before any run (the graphs no CADR evaluation of today used;
each was in earlier, older calibration sets — docs/cadr-private.md "Small graphs: the
limit and the guard" — but in none of A's, B's or H's sets): networkx's real graphs
karate (n 34), les misérables (77, weights dropped), davis southern women (32,
bipartite), florentine families (15: below 25, A's rule must not touch it), plus one
derived graph: the 54 Intel Lab mote positions (data/intel-lab/mote_locs.txt, metres)
joined when at most ``MOTE_RADIUS_M`` = 6 m apart (a unit-disk graph on real positions;
its edges are NOT a measured network; 6 m fixed before any run, not tuned). No real
graph of 100-2,000 nodes exists in data/ or /work/shared/data that was not already used
(ego-Facebook and wiki-Vote were used by A, B and H). ε ∈ {0.5, 1, 2, 3, 5}; run seeds
91-95 (never used before); dp pipeline, LL, θ auto-dev, α = 0.1, D = n − 1:
``collector.cadr_reference.private_run`` exactly as the bench's in-process path.

``compare``: per (graph, ε) cell the mean over the five seeds of per-node MAE, histogram
L1 and EMD, old and new, against the constant TRUE median (per-node and histogram) and
all zeros; counts of cells above the constant median (MAE) and of cells whose EMD is
above the constant median histogram's, old and new.

RESULT (2026-12-05; /tmp/I-doc.md has the table): 25 cells, old → new: summed MAE 65.27 →
56.87 (constant median 54.80, all zeros 113.93), cells above the median 19 → 13, above all
zeros 0 → 0; L1 24.41 → 17.91; EMD 73.42 → 36.35 (median 54.80), cells with EMD above the
median's 16 → 7 (all at ε <= 1). Florentine and every ε <= 1 per-node figure identical.
A alone (``--old-mid-cap`` vs main) on its 12 cells (n 32-77, ε >= 2): MAE 34.89 → 26.49
(median 29.88), above 9 → 3, 10 better / 2 worse (intel ε = 2 0.863 → 0.900, newly above
0.889; lesmis ε = 3 3.761 → 3.886). B + H alone: EMD 73.42 → 64.58 (B 63.19, H +1.39),
L1 +0.5 %, cells above 16 → 16; the loss is les misérables ε >= 1 (2.08 → 2.42 → 2.76, L1
+15 %): a bimodal degree law (17 nodes of degree 1, a second mode at 8-13) whose second
mode is re-placed as a geometric tail when g stops at the densest bucket (seed 92).
"""

from __future__ import annotations

import pickle
import sys
import time
from collections import defaultdict
from pathlib import Path

import networkx as nx
import numpy as np
from ldpfleet.collector import cadr_reference as ref
from ldpfleet.devices.graphs import Graph

EPS_LIST = (0.5, 1, 2, 3, 5)
SEEDS = (91, 92, 93, 94, 95)
MOTE_RADIUS_M = 6.0
MOTE_LOCATIONS = Path(__file__).resolve().parents[1] / "data" / "intel-lab" / "mote_locs.txt"


def _intel_motes() -> nx.Graph:
    """The Intel Lab motes joined within ``MOTE_RADIUS_M`` metres (module docstring)."""
    rows = [line.split() for line in MOTE_LOCATIONS.read_text().splitlines() if line.strip()]
    xy = {int(r[0]): (float(r[1]), float(r[2])) for r in rows}
    g = nx.Graph()
    g.add_nodes_from(xy)
    ids = sorted(xy)
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if np.hypot(xy[a][0] - xy[b][0], xy[a][1] - xy[b][1]) <= MOTE_RADIUS_M:
                g.add_edge(a, b)
    return g


GRAPHS = {
    "karate": nx.karate_club_graph,
    "lesmis": nx.les_miserables_graph,
    "davis": nx.davis_southern_women_graph,
    "florentine": nx.florentine_families_graph,
    "intel-motes-6m": _intel_motes,
}


def graph_of(g: nx.Graph) -> Graph:
    """The networkx graph as ldpfleet's ``Graph`` (labels to 0..n-1, weights dropped)."""
    g = nx.convert_node_labels_to_integers(nx.Graph(g))
    u, v = zip(*g.edges(), strict=False)
    return Graph.from_edges(g.number_of_nodes(), np.array(u), np.array(v))


def capture_runs(out: str) -> None:
    """One row per (graph, ε, seed): the run's figures and the two baselines."""
    rows = []
    for name, make in GRAPHS.items():
        graph = graph_of(make())
        degrees = graph.degrees()
        for eps in EPS_LIST:
            for seed in SEEDS:
                started = time.process_time()
                run = ref.private_run(graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
                median = run.baselines["constant_median_oracle"]
                zero = run.baselines["all_zero"]
                rows.append(
                    {
                        "graph": name, "n": graph.n, "eps": eps, "seed": seed,
                        "mae": run.mae, "l1": run.histogram_l1, "emd": run.histogram_emd,
                        "theta": run.theta, "chosen_by": run.theta_chosen_by,
                        "eps_theta": run.theta_search.get("eps", 0.0),
                        "max_degree": int(degrees.max()),
                        "median_mae": median["mae"], "median_l1": median["histogram_l1"],
                        "median_emd": median["histogram_emd"], "zero_mae": zero["mae"],
                        "zero_emd": zero["histogram_emd"],
                        "cpu": time.process_time() - started, "source": ref.__file__,
                    }
                )  # fmt: skip
                print(name, graph.n, eps, seed, run.theta, round(run.mae, 4), flush=True)
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)


def _cells(rows: list[dict]) -> dict:
    cells = defaultdict(list)
    for r in rows:
        cells[(r["graph"], r["n"], r["eps"])].append(r)
    return cells


def _mean(runs: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in runs]))


def compare(old_rows: list[dict], new_rows: list[dict]) -> None:
    """Per cell old vs new against the baselines (markdown), then the totals."""
    old_cells, new_cells = _cells(old_rows), _cells(new_rows)
    assert old_cells.keys() == new_cells.keys()
    print(
        "| graph | n | ε | MAE old | MAE new | MAE median | MAE zeros | L1 old | L1 new |"
        " L1 median | EMD old | EMD new | EMD median | ε_θ old → new | θ old / new |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    tot: dict = defaultdict(float)
    for key in old_cells:
        a, b = old_cells[key], new_cells[key]
        assert [r["seed"] for r in a] == [r["seed"] for r in b]
        m = {f"{k} {w}": _mean(runs, k) for w, runs in (("old", a), ("new", b))
             for k in ("mae", "l1", "emd")}  # fmt: skip
        for k in ("median_mae", "zero_mae", "median_l1", "median_emd"):
            m[k] = a[0][k]
        eps_t = f"{a[0]['eps_theta']:.3g} → {b[0]['eps_theta']:.3g}"
        thetas = "/".join(str(r["theta"]) for r in a) + " · " + "/".join(str(r["theta"]) for r in b)
        print(
            f"| {key[0]} | {key[1]} | {key[2]:g} | {m['mae old']:.3f} | {m['mae new']:.3f} | "
            f"{m['median_mae']:.3f} | {m['zero_mae']:.3f} | {m['l1 old']:.3f} | "
            f"{m['l1 new']:.3f} | {m['median_l1']:.3f} | {m['emd old']:.3f} | "
            f"{m['emd new']:.3f} | {m['median_emd']:.3f} | {eps_t} | {thetas} |"
        )
        groups = [tot, tot.setdefault(f"eps {key[2]:g}", defaultdict(float))]
        groups.append(tot.setdefault(f"graph {key[0]}", defaultdict(float)))
        for where in groups:
            where["cells"] += 1
            for k, v in m.items():
                where[f"sum {k}"] += v
            for w in ("old", "new"):
                where[f"MAE above median {w}"] += m[f"mae {w}"] > m["median_mae"] + 1e-9
                where[f"MAE above zeros {w}"] += m[f"mae {w}"] > m["zero_mae"] + 1e-9
                where[f"EMD above median {w}"] += m[f"emd {w}"] > m["median_emd"] + 1e-9
            for k in ("mae", "l1", "emd"):
                where[f"{k} better"] += m[f"{k} new"] < m[f"{k} old"] - 1e-9
                where[f"{k} worse"] += m[f"{k} new"] > m[f"{k} old"] + 1e-9
    for label, where in tot.items():
        if isinstance(where, dict):
            print(f"\n{label}: " + "; ".join(f"{k} {v:.3f}" for k, v in where.items()))
    print("\nall: " + "; ".join(f"{k} {v:.3f}" for k, v in tot.items() if not isinstance(v, dict)))


def _load(path: str) -> list[dict]:
    with open(path, "rb") as fh:
        return pickle.load(fh)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "capture":
        if "--old-mid-cap" in sys.argv:
            from ldpfleet.protocol import cadr_budget

            cadr_budget.MID_FLEET_THETA_EPS_CAP = cadr_budget.THETA_EPS_CAP
        capture_runs(sys.argv[2])
    elif mode == "compare":
        compare(_load(sys.argv[2]), _load(sys.argv[3]))
    else:
        raise SystemExit(f"mode: {mode!r} is not capture or compare")


if __name__ == "__main__":
    main()
