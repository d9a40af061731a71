"""CADR method "clip" against "ll" under the dp pipeline: a pre-registered evaluation on
fresh graphs (issue 20, claims D9/D3; helper V; docs/preregistration/V-clip-default.md).

    python scripts/V_clip_eval.py check
    python scripts/V_clip_eval.py capture SET SEEDS OUT.jsonl [--eps 0.5,1,2,3,5]
    python scripts/V_clip_eval.py compare OUT.jsonl [MORE.jsonl ...]
    python scripts/V_clip_eval.py crosscheck SET SEEDS [--eps ...]   (native clip, once landed)

"clip" is emulated in-process on ``collector.cadr_reference.private_run(graph, "ll",
"auto-dev", ε, 0.1, seed, pipeline="dp")`` by three patches, active only while the mode is
"clip" (``MODE``), so the "ll" runs are the tree's runs (``check`` verifies: bit-equal):

- ``cadr_reference._projected``: no NDOE codes and no LPEA negotiation; the kept degrees
  are ``min(d, θ)`` (it draws NO random numbers) and the Thm 3.5 terms
  ``|d − min(d, θ)| + θ/ε_dsr``;
- ``CadrBudget.for_pipeline``: ``dsr = dsr + ndoe + lpea`` (= ε − ε_θ; the θ-search part
  unchanged): the release is ``min(d, θ) + Laplace(θ/(ε − ε_θ))``;
- ``collector.degree_postprocess.kept_ratio``: 1.0 (a node keeps all of ``min(d, θ)``);
  ``post_process`` looks the name up in its module at call time (``check`` verifies).

The θ search's noise comes from its own generator (``[seed, 1]``), so ll and clip see the
same noisy counts; the histogram is read from those counts only, so it is expected to be
the same. The DSR noise stream differs (clip draws no NDOE/LPEA randomness): cells are
compared by means over run seeds.

``capture``: one row per (graph, ε, run seed, method ∈ {ll, clip}) as JSON lines.
``SET``: ``dev`` (graph seeds 3001-3005: debugging only, excluded), ``fresh`` (graph seeds
3101-3130: 20 graphs of n 25-150 and 10 of n 300-3000) or ``large`` (ego-Facebook,
wiki-Vote); ``tiny`` (exploratory, NOT pre-registered: 14 small fleets, n 10-77).
``compare``: the pre-registered criteria, tables per ε and per size band. ``crosscheck``:
helper P's native clip against this emulation, run by run.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator

import ldpfleet.collector.cadr_reference as cr
import ldpfleet.collector.degree_postprocess as dpp
import networkx as nx
import numpy as np
from ldpfleet.devices.graphs import Graph, load_graph
from ldpfleet.protocol import cadr_budget as cb

EPS_LIST = (0.5, 1.0, 2.0, 3.0, 5.0)
ALPHA = 0.1
METHODS = ("ll", "clip")
FACEBOOK_EPS3_LIMIT = 27.7  # criterion 4

MODE = {"m": "ll"}
_orig_projected = cr._projected
_orig_for_pipeline = cb.CadrBudget.for_pipeline.__func__
_orig_kept_ratio = dpp.kept_ratio
_calls = {"kept_ratio": 0}


class _Kept:
    """The projected graph's stand-in: only its ``degrees()`` is read downstream."""

    def __init__(self, degrees: np.ndarray) -> None:
        self._degrees = degrees

    def degrees(self) -> np.ndarray:
        return self._degrees


def _projected(graph, degrees, method, theta, budget, rng, bound, charges):
    if MODE["m"] == "clip":
        kept = np.minimum(degrees, theta)
        # since helper P's clip landed, _projected returns the kept degrees themselves
        out = kept if hasattr(cr, "RUN_METHODS") else _Kept(kept)
        return out, np.abs(degrees - kept) + theta / budget.dsr
    return _orig_projected(graph, degrees, method, theta, budget, rng, bound, charges)


def _for_pipeline(cls, eps, alpha, pipeline, searched, devices, *method):
    # *method: main's for_pipeline takes the run's method since helper P's clip landed
    budget = _orig_for_pipeline(cls, eps, alpha, pipeline, searched, devices, *method)
    if MODE["m"] == "clip":
        object.__setattr__(budget, "dsr", budget.dsr + budget.ndoe + budget.lpea)
    return budget


def _kept_ratio(released, prior, theta):
    if MODE["m"] == "clip":
        _calls["kept_ratio"] += 1
        return 1.0
    return _orig_kept_ratio(released, prior, theta)


def install() -> None:
    """Patch the three functions (module docstring); idempotent."""
    cr._projected = _projected
    cb.CadrBudget.for_pipeline = classmethod(_for_pipeline)
    dpp.kept_ratio = _kept_ratio


def run(graph: Graph, method: str, eps: float, seed: int) -> cr.CadrRun:
    """One dp run of ``method`` (ll: the tree's; clip: the emulation)."""
    MODE["m"] = method
    try:
        return cr.private_run(graph, "ll", "auto-dev", eps, ALPHA, seed, pipeline="dp")
    finally:
        MODE["m"] = "ll"


# ---------------------------------------------------------------- graph sets


def _nx(g: nx.Graph) -> Graph:
    g = nx.convert_node_labels_to_integers(g)
    u, v = zip(*g.edges(), strict=False)
    return Graph.from_edges(g.number_of_nodes(), np.array(u), np.array(v))


def _sbm(sizes: list[int], p_in: float, p_out: float, seed: int) -> nx.Graph:
    k = len(sizes)
    probs = [[p_in if i == j else p_out for j in range(k)] for i in range(k)]
    return nx.stochastic_block_model(sizes, probs, seed=seed)


def _bimodal(sizes: list[int], p_in: list[float], p_out: float, seed: int) -> nx.Graph:
    """Blocks of different densities: a degree distribution with two modes."""
    k = len(sizes)
    probs = [[p_in[i] if i == j else p_out for j in range(k)] for i in range(k)]
    return nx.stochastic_block_model(sizes, probs, seed=seed)


_Maker = Callable[[], Graph]

# Development set: debugging only, then excluded (graph seeds 3001-3005).
DEV: dict[str, _Maker] = {
    "ba-60-m3": lambda: load_graph("barabasi_albert:n=60,m=3,seed=3001"),
    "er-120-p0.06": lambda: load_graph("erdos_renyi:n=120,p=0.06,seed=3002"),
    "plc-400-m3": lambda: load_graph("powerlaw_cluster:n=400,m=3,p=0.3,seed=3003"),
    "ws-1000-k8": lambda: load_graph("watts_strogatz:n=1000,k=8,p=0.2,seed=3004"),
    "bimodal-500": lambda: _nx(_bimodal([400, 100], [0.01, 0.3], 0.005, 3005)),
}

# Evaluation set, fixed in docs/preregistration/V-clip-default.md before any run on it:
# graph seeds 3101-3130; 20 graphs of n 25-150, 10 of n 300-3000.
FRESH: dict[str, _Maker] = {
    # mid-size fleets, n 25-150 (families of scripts/A2_signal.py)
    "sbm-80-2x40": lambda: _nx(_sbm([40, 40], 0.25, 0.03, 3101)),
    "sbm-126-3x42": lambda: _nx(_sbm([42] * 3, 0.2, 0.015, 3102)),
    "sbm-52-12+40": lambda: _nx(_sbm([12, 40], 0.6, 0.04, 3103)),
    "ba-31-m2": lambda: load_graph("barabasi_albert:n=31,m=2,seed=3104"),
    "ba-84-m3": lambda: load_graph("barabasi_albert:n=84,m=3,seed=3105"),
    "ba-145-m4": lambda: load_graph("barabasi_albert:n=145,m=4,seed=3106"),
    "er-36-p0.25": lambda: load_graph("erdos_renyi:n=36,p=0.25,seed=3107"),
    "er-102-p0.07": lambda: load_graph("erdos_renyi:n=102,p=0.07,seed=3108"),
    "er-64-p0.4": lambda: load_graph("erdos_renyi:n=64,p=0.4,seed=3109"),
    "plc-46-m2": lambda: load_graph("powerlaw_cluster:n=46,m=2,p=0.3,seed=3110"),
    "plc-118-m3": lambda: load_graph("powerlaw_cluster:n=118,m=3,p=0.5,seed=3111"),
    "ws-40-k6": lambda: load_graph("watts_strogatz:n=40,k=6,p=0.3,seed=3112"),
    "ws-96-k4": lambda: load_graph("watts_strogatz:n=96,k=4,p=0.2,seed=3113"),
    "ws-138-k10": lambda: load_graph("watts_strogatz:n=138,k=10,p=0.4,seed=3114"),
    "rr-60-d5": lambda: _nx(nx.random_regular_graph(5, 60, seed=3115)),
    "rgg-90-0.16": lambda: _nx(nx.random_geometric_graph(90, 0.16, seed=3116)),
    "tree-random-75": lambda: _nx(nx.random_labeled_tree(75, seed=3117)),
    "bip-30+80-p0.1": lambda: _nx(nx.bipartite.random_graph(30, 80, 0.1, seed=3118)),
    "caveman-6x12": lambda: _nx(nx.relaxed_caveman_graph(6, 12, 0.2, seed=3119)),
    "bimodal-110": lambda: _nx(_bimodal([80, 30], [0.04, 0.5], 0.02, 3120)),
    # larger graphs, n 300-3000
    "ba-2500-m3": lambda: load_graph("barabasi_albert:n=2500,m=3,seed=3121"),
    "ba-600-m6": lambda: load_graph("barabasi_albert:n=600,m=6,seed=3122"),
    "er-1500-p0.005": lambda: load_graph("erdos_renyi:n=1500,p=0.005,seed=3123"),
    "er-350-p0.1": lambda: load_graph("erdos_renyi:n=350,p=0.1,seed=3124"),
    "plc-3000-m4": lambda: load_graph("powerlaw_cluster:n=3000,m=4,p=0.3,seed=3125"),
    "plc-800-m2": lambda: load_graph("powerlaw_cluster:n=800,m=2,p=0.6,seed=3126"),
    "ws-2000-k10": lambda: load_graph("watts_strogatz:n=2000,k=10,p=0.2,seed=3127"),
    "ws-450-k6": lambda: load_graph("watts_strogatz:n=450,k=6,p=0.05,seed=3128"),
    "sbm-1200-4x300": lambda: _nx(_sbm([300] * 4, 0.03, 0.002, 3129)),
    "bimodal-900": lambda: _nx(_bimodal([700, 200], [0.008, 0.15], 0.004, 3130)),
}

LARGE: dict[str, _Maker] = {
    "facebook": lambda: load_graph("facebook"),
    "wiki-vote": lambda: load_graph("wiki-vote"),
}

# Exploratory only, NOT pre-registered (run after the evaluation): small fleets, n 10-77
# (named networkx graphs seen before in docs/cadr-private.md, and graph seeds 3201-3208).
TINY: dict[str, _Maker] = {
    "karate": lambda: _nx(nx.karate_club_graph()),
    "florentine": lambda: _nx(nx.florentine_families_graph()),
    "davis": lambda: _nx(nx.davis_southern_women_graph()),
    "lesmis": lambda: _nx(nx.les_miserables_graph()),
    "kite": lambda: _nx(nx.krackhardt_kite_graph()),
    "petersen": lambda: _nx(nx.petersen_graph()),
    "ba-12-m2": lambda: load_graph("barabasi_albert:n=12,m=2,seed=3201"),
    "ba-20-m3": lambda: load_graph("barabasi_albert:n=20,m=3,seed=3202"),
    "er-15-p0.3": lambda: load_graph("erdos_renyi:n=15,p=0.3,seed=3203"),
    "er-24-p0.2": lambda: load_graph("erdos_renyi:n=24,p=0.2,seed=3204"),
    "plc-18-m2": lambda: load_graph("powerlaw_cluster:n=18,m=2,p=0.4,seed=3205"),
    "ws-16-k4": lambda: load_graph("watts_strogatz:n=16,k=4,p=0.3,seed=3206"),
    "ws-22-k6": lambda: load_graph("watts_strogatz:n=22,k=6,p=0.2,seed=3207"),
    "sbm-20-8+12": lambda: _nx(_sbm([8, 12], 0.6, 0.05, 3208)),
}

SETS = {"dev": DEV, "fresh": FRESH, "large": LARGE, "tiny": TINY}


def band(name: str, n: int) -> str:
    """The size band a graph is reported in."""
    if name in LARGE:
        return "real"
    if name in TINY:
        return "tiny (<= 77, exploratory)"
    return "mid (25-150)" if n <= 150 else "large (300-3000)"


def graphs(which: str) -> Iterator[tuple[str, Graph]]:
    """(name, graph) of a set, in its fixed order."""
    if which not in SETS:
        raise SystemExit(f"SET: {which!r} is not one of {', '.join(SETS)}")
    for name, make in SETS[which].items():
        yield name, make()


# ---------------------------------------------------------------- capture


def row_of(name: str, graph: Graph, eps: float, seed: int, method: str) -> dict:
    """One run's row."""
    started = time.process_time()
    r = run(graph, method, eps, seed)
    degrees = graph.degrees()
    return {
        "graph": name, "n": graph.n, "band": band(name, graph.n), "eps": eps, "seed": seed,
        "method": method, "mae": r.mae, "mse": r.mse, "histogram_l1": r.histogram_l1,
        "histogram_emd": r.histogram_emd, "raw_mae": r.raw["mae"], "theta": r.theta,
        "theta_exact": r.theta_search.get("theta_exact"), "chosen_by": r.theta_chosen_by,
        "kept_edge_ratio": r.kept_edge_ratio, "spent": r.spent,
        "max_degree": int(degrees.max()),
        "median": r.baselines["constant_median_oracle"]["mae"],
        "zero": r.baselines["all_zero"]["mae"],
        "median_mse": r.baselines["constant_median_oracle"]["mse"],
        "zero_mse": r.baselines["all_zero"]["mse"],
        "cpu": time.process_time() - started,
    }  # fmt: skip


def capture(which: str, seeds: list[int], out: str, eps_list: tuple[float, ...]) -> None:
    """Every (graph, ε, seed, method) of the set, one JSON line each, appended as it runs."""
    install()
    started = time.process_time()
    with open(out, "w") as fh:
        for name, graph in graphs(which):
            for eps in eps_list:
                for seed in seeds:
                    for method in METHODS:
                        fh.write(json.dumps(row_of(name, graph, eps, seed, method)) + "\n")
                fh.flush()
            print(f"{name} n={graph.n} cpu {time.process_time() - started:.1f}s", flush=True)
    print(out, f"cpu {time.process_time() - started:.1f}s", flush=True)


# ---------------------------------------------------------------- check


def check() -> None:
    """The emulation's checks on one cell: ll patched == ll unpatched (every field but the
    timing); post_process reads ``kept_ratio`` at call time; clip's budget and ledger."""
    graph = DEV["ba-60-m3"]()
    eps, seeds = 1.0, (301, 302, 303)
    before = [cr.private_run(graph, "ll", "auto-dev", eps, ALPHA, s, pipeline="dp") for s in seeds]
    install()
    after = [run(graph, "ll", eps, s) for s in seeds]
    for a, b in zip(before, after, strict=True):
        da, db = cr.as_dict(a), cr.as_dict(b)
        da.pop("seconds"), db.pop("seconds")
        assert json.dumps(da, sort_keys=True, default=str) == json.dumps(
            db, sort_keys=True, default=str
        ), "ll with the patches installed differs from the tree's ll"
    print("ll patched == ll unpatched on", len(seeds), "runs: OK (mae", [a.mae for a in after], ")")
    calls = _calls["kept_ratio"]
    clip = [run(graph, "clip", eps, s) for s in seeds]
    assert _calls["kept_ratio"] == calls + len(seeds), "post_process did not call kept_ratio"
    print("post_process looked kept_ratio up at call time:", len(seeds), "calls")
    for r in clip:  # clip charges the θ search and one Laplace release, ε in all
        assert set(r.spent) <= {cb.THETA_LABEL, "laplace"}, r.spent
        assert abs(sum(r.spent.values()) - eps) < 1e-12, r.spent
        assert r.theta_search["eps"] == before[0].theta_search["eps"]
    print("clip spent", clip[0].spent, "sum", sum(clip[0].spent.values()))
    print("clip mae", [r.mae for r in clip], "ll mae", [r.mae for r in after])
    same_hist = all(
        a.histogram_emd == c.histogram_emd and a.histogram_l1 == c.histogram_l1
        for a, c in zip(after, clip, strict=True)
    )
    print("histogram identical ll vs clip (same θ-search counts):", same_hist)


def crosscheck(which: str, seeds: list[int], eps_list: tuple[float, ...]) -> bool:
    """A native "clip" (``private_run(graph, "clip", ...)``, once helper P's method is in
    ``cadr_reference.METHODS``) against this emulation, run by run: MAE, MSE, θ and the
    histogram's EMD. The emulation draws the θ-search noise from ``[seed, 1]`` and the
    Laplace noise first from ``default_rng(seed)``; a native clip drawing alike is
    bit-equal, one drawing otherwise differs run by run but should agree in the means."""
    if "clip" not in getattr(cr, "RUN_METHODS", cr.METHODS):
        print(
            "no native clip: cadr_reference.RUN_METHODS =", getattr(cr, "RUN_METHODS", cr.METHODS)
        )
        return False
    install()
    equal = total = 0
    sums = defaultdict(float)
    for _name, graph in graphs(which):
        for eps in eps_list:
            for seed in seeds:
                MODE["m"] = "ll"
                native = cr.private_run(graph, "clip", "auto-dev", eps, ALPHA, seed, pipeline="dp")
                emulated = run(graph, "clip", eps, seed)
                same = (native.mae, native.mse, native.theta, native.histogram_emd) == (
                    emulated.mae,
                    emulated.mse,
                    emulated.theta,
                    emulated.histogram_emd,
                )
                equal, total = equal + same, total + 1
                sums["native"] += native.mae
                sums["emulated"] += emulated.mae
    print(f"{equal} of {total} runs bit-equal; summed MAE native {sums['native']:.3f}, "
          f"emulated {sums['emulated']:.3f}")  # fmt: skip
    return equal == total


# ---------------------------------------------------------------- compare


def _load(paths: list[str]) -> list[dict]:
    rows = []
    for path in paths:
        with open(path) as fh:
            rows.extend(json.loads(line) for line in fh if line.strip())
    return rows


def cells(rows: list[dict]) -> dict[tuple, dict]:
    """Per (graph, ε): means over run seeds per method, and the baselines."""
    by: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by[(r["graph"], r["eps"])][r["method"]].append(r)
    out = {}
    for key, per in by.items():
        ll, clip = per["ll"], per["clip"]
        assert sorted(x["seed"] for x in ll) == sorted(x["seed"] for x in clip), key
        cell = {"n": ll[0]["n"], "band": ll[0]["band"], "median": ll[0]["median"],
                "zero": ll[0]["zero"], "median_mse": ll[0]["median_mse"],
                "zero_mse": ll[0]["zero_mse"], "seeds": len(ll)}  # fmt: skip
        for m, runs in (("ll", ll), ("clip", clip)):
            for k in ("mae", "mse", "histogram_l1", "histogram_emd", "raw_mae"):
                cell[f"{m} {k}"] = float(np.mean([x[k] for x in runs]))
            cell[f"{m} theta"] = "/".join(str(x["theta"]) for x in runs)
        out[key] = cell
    return out


def _sums(group: list[dict]) -> dict[str, float]:
    s: dict[str, float] = defaultdict(float)
    for c in group:
        s["cells"] += 1
        for k in ("median", "zero", "median_mse", "zero_mse"):
            s[k] += c[k]
        for m in METHODS:
            for k in ("mae", "mse", "histogram_l1", "histogram_emd", "raw_mae"):
                s[f"{m} {k}"] += c[f"{m} {k}"]
            s[f"{m} above median"] += c[f"{m} mae"] > c["median"]
            s[f"{m} above zeros"] += c[f"{m} mae"] > c["zero"]
        s["clip better"] += c["clip mae"] < c["ll mae"]
        s["clip worse"] += c["clip mae"] > c["ll mae"]
    return s


def _table(title: str, groups: dict) -> None:
    print(f"\n### {title}\n")
    print(
        "| group | cells | ll MAE | clip MAE | const. median | all zeros | ll > median | "
        "clip > median | clip better/worse | ll MSE | clip MSE | ll hist L1 | clip hist L1 | "
        "ll EMD | clip EMD |"
    )
    print("|---" * 15 + "|")
    for label, group in groups.items():
        s = _sums(group)
        print(
            f"| {label} | {s['cells']:.0f} | {s['ll mae']:.3f} | {s['clip mae']:.3f} | "
            f"{s['median']:.3f} | {s['zero']:.3f} | {s['ll above median']:.0f} | "
            f"{s['clip above median']:.0f} | {s['clip better']:.0f}/{s['clip worse']:.0f} | "
            f"{s['ll mse']:.1f} | {s['clip mse']:.1f} | {s['ll histogram_l1']:.3f} | "
            f"{s['clip histogram_l1']:.3f} | {s['ll histogram_emd']:.3f} | "
            f"{s['clip histogram_emd']:.3f} |"
        )


def compare(rows: list[dict]) -> bool:
    """Print the per-cell table, the tables per ε and per band, and the four criteria."""
    cs = cells(rows)
    print("| graph | n | ε | ll MAE | clip MAE | const. median | all zeros | θ ll | θ clip |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (g, eps), c in cs.items():
        print(
            f"| {g} | {c['n']} | {eps:g} | {c['ll mae']:.3f} | {c['clip mae']:.3f} | "
            f"{c['median']:.3f} | {c['zero']:.3f} | {c['ll theta']} | {c['clip theta']} |"
        )
    all_cells = list(cs.values())
    _table("Per ε", {f"ε = {e:g}": [c for (g, x), c in cs.items() if x == e]
                     for e in sorted({k[1] for k in cs})})  # fmt: skip
    _table("Per size band", {b: [c for c in all_cells if c["band"] == b]
                             for b in sorted({c["band"] for c in all_cells})})  # fmt: skip
    _table("All cells", {"all": all_cells})
    s = _sums(all_cells)
    newly = [(g, e) for (g, e), c in cs.items() if c["ll mae"] <= c["zero"] < c["clip mae"]]
    fb = cs.get(("facebook", 3.0))
    crit = {
        "1 summed MAE clip <= ll": (s["clip mae"] <= s["ll mae"],
                                    f"{s['clip mae']:.3f} vs {s['ll mae']:.3f}"),
        "2 cells above median clip <= ll": (s["clip above median"] <= s["ll above median"],
                                            f"{s['clip above median']:.0f} vs "
                                            f"{s['ll above median']:.0f}"),
        "3 no cell newly above all zeros": (not newly, f"{newly}"),
        "4 facebook ε=3 clip MAE <= 27.7": (
            fb is not None and fb["clip mae"] <= FACEBOOK_EPS3_LIMIT,
            "missing" if fb is None else f"{fb['clip mae']:.3f} (ll {fb['ll mae']:.3f})",
        ),
    }  # fmt: skip
    print("\n### Criteria\n")
    for label, (ok, text) in crit.items():
        print(f"- {label}: {'PASS' if ok else 'FAIL'} ({text})")
    passed = all(ok for ok, _ in crit.values())
    print(f"\nOVERALL: {'PASS' if passed else 'FAIL'}")
    return passed


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "check":
        check()
    elif mode == "capture":
        eps_list = EPS_LIST
        if "--eps" in sys.argv:
            eps_list = tuple(float(e) for e in sys.argv[sys.argv.index("--eps") + 1].split(","))
        capture(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4], eps_list)
    elif mode == "crosscheck":
        eps_list = EPS_LIST
        if "--eps" in sys.argv:
            eps_list = tuple(float(e) for e in sys.argv[sys.argv.index("--eps") + 1].split(","))
        sys.exit(
            0 if crosscheck(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], eps_list) else 1
        )
    elif mode == "compare":
        compare(_load([a for a in sys.argv[2:] if not a.startswith("--")]))
    else:
        raise SystemExit(
            "usage: V_clip_eval.py check | capture SET SEEDS OUT | compare OUT... | "
            "crosscheck SET SEEDS"
        )


if __name__ == "__main__":
    main()
