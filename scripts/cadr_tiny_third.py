"""Tiny fleets, third fresh set: the pre-registered no-search rule (issue 20, helper F).

    python scripts/cadr_tiny_third.py evaluate OUT.pkl   # criteria (a) and (b), + today's runs
    python scripts/cadr_tiny_third.py identity OUT.pkl   # criterion (c), after landing

The rule (pre-registration 2 of docs/cadr-private.md, "Small graphs: the limit and the
guard"): when ``n < √K σ`` (``σ`` the public sd of one bucket count of the dp θ search at
its ε_θ, ``K`` its buckets; public n, ε, α, D), run no θ search, take θ = ⌈√D⌉ (D the
public degree bound, n − 1 by default) and give the search's budget back (the split of a
given θ: ``CadrBudget.for_pipeline(..., searched=False)``).

``evaluate`` runs, per graph of ``THIRD`` (fixed 2026-12-05 before any run; networkx
seeds 1101-1118; none of them in helper B's three sets or ``cadr_user_new_graphs.py``),
ε in 0.5, 1, 2, 3, 5 and seeds 9, 10, 11: today's dp pipeline
(``private_run(graph, "ll", "auto-dev", ε, 0.1, seed, "dp")``) and, where the rule fires,
the rule's run (the same call with the integer θ = ⌈√D⌉: what the landed rule runs), with
the constant true median and all zeros beside them; and today's runs of ego-Facebook and
wiki-Vote at the same ε and seeds. It pickles every run's figures (θ, MAE, raw MAE,
post-processed scores) for ``identity``.

``identity`` re-runs every cell with the code on disk (``auto-dev``) and checks: where the
rule does not fire, θ and every score bit-identical to the pickled run; where it fires,
identical to the pickled rule's run.

Adoption criterion (cell = graph × ε, mean over seeds 9-11; committed before any run):
(a) over the cells where the rule fires, the summed MAE AND the summed excess over the
constant true median both lower with the rule than today; (b) no cell where today is at
or below all zeros and the rule above; (c) ``identity`` passes (every cell where the rule
does not fire, among them every third-set graph with n >= 28 and ego-Facebook and
wiki-Vote at every ε, unchanged to the last bit). Adopt only if (a), (b) and (c) hold.
"""

from __future__ import annotations

import pickle
import sys
from collections import defaultdict

import ldpfleet.collector.cadr_reference as ref
import networkx as nx
import numpy as np
from ldpfleet.devices.graphs import Graph, load_graph

sys.path.insert(0, "scripts")
from cadr_small_capture import searching_always  # "today": the pipeline before the rule

EPS_LIST = (0.5, 1, 2, 3, 5)
SEEDS = (9, 10, 11)
ALPHA = 0.1


def _two(a: nx.Graph, b: nx.Graph) -> nx.Graph:
    """Two components: ``a`` and ``b`` side by side."""
    return nx.disjoint_union(a, b)


THIRD = {  # fixed 2026-12-05 before any run (family, generator)
    "rtree-14": ("tree", lambda: nx.random_labeled_tree(14, seed=1101)),
    "btree-3-2": ("tree", lambda: nx.balanced_tree(3, 2)),
    "cycle-13": ("cycle", lambda: nx.cycle_graph(13)),
    "cycle-25": ("cycle", lambda: nx.cycle_graph(25)),
    "star-8": ("star", lambda: nx.star_graph(7)),
    "star-26": ("star", lambda: nx.star_graph(25)),
    "gnp-12-0.5": ("er", lambda: nx.gnp_random_graph(12, 0.5, seed=1102)),
    "gnp-15-0.3": ("er", lambda: nx.gnp_random_graph(15, 0.3, seed=1103)),
    "gnp-22-0.15": ("er", lambda: nx.gnp_random_graph(22, 0.15, seed=1104)),
    "ba-18-m3": ("ba", lambda: nx.barabasi_albert_graph(18, 3, seed=1105)),
    "ba-24-m1": ("ba", lambda: nx.barabasi_albert_graph(24, 1, seed=1106)),
    "ws-14-k4": ("ws", lambda: nx.watts_strogatz_graph(14, 4, 0.1, seed=1107)),
    "ws-22-k6": ("ws", lambda: nx.watts_strogatz_graph(22, 6, 0.3, seed=1108)),
    "rr-3-18": ("regular", lambda: nx.random_regular_graph(3, 18, seed=1109)),
    "rr-4-10": ("regular", lambda: nx.random_regular_graph(4, 10, seed=1110)),
    "moebius-kantor": ("regular", nx.moebius_kantor_graph),
    "truncated-cube": ("regular", nx.truncated_cube_graph),
    "circular-ladder-7": ("regular", lambda: nx.circular_ladder_graph(7)),
    "kbip-4-6": ("bipartite", lambda: nx.complete_bipartite_graph(4, 6)),
    "bip-8-12": ("bipartite", lambda: nx.bipartite.random_graph(8, 12, 0.3, seed=1111)),
    "two-cycle6-path7": ("two components", lambda: _two(nx.cycle_graph(6), nx.path_graph(7))),
    "two-gnp10-star5": (
        "two components",
        lambda: _two(nx.gnp_random_graph(10, 0.4, seed=1112), nx.star_graph(5)),
    ),
    "mycielski-4": ("named", lambda: nx.mycielski_graph(4)),
    "house-x": ("named", nx.house_x_graph),
    # n >= 28: the rule never fires there; criterion (c)
    "gnp-40-0.1": ("er", lambda: nx.gnp_random_graph(40, 0.1, seed=1113)),
    "ba-50-m2": ("ba", lambda: nx.barabasi_albert_graph(50, 2, seed=1114)),
    "ws-36-k4": ("ws", lambda: nx.watts_strogatz_graph(36, 4, 0.2, seed=1115)),
    "rr-3-30": ("regular", lambda: nx.random_regular_graph(3, 30, seed=1116)),
    "rtree-45": ("tree", lambda: nx.random_labeled_tree(45, seed=1117)),
    "two-ba20-cycle15": (
        "two components",
        lambda: _two(nx.barabasi_albert_graph(20, 2, seed=1118), nx.cycle_graph(15)),
    ),
    "cycle-60": ("cycle", lambda: nx.cycle_graph(60)),
    "kbip-10-25": ("bipartite", lambda: nx.complete_bipartite_graph(10, 25)),
}
LARGE = ("facebook", "wiki-vote")


def graph_of(g: nx.Graph) -> Graph:
    """A networkx graph as the pipeline's ``Graph`` (nodes 0..n-1)."""
    g = nx.convert_node_labels_to_integers(g)
    u, v = zip(*g.edges(), strict=False)
    return Graph.from_edges(g.number_of_nodes(), np.array(u), np.array(v))


def rule_theta(eps: float, n: int, bound: int) -> int | None:
    """The rule's θ (⌈√D⌉) where it fires, else None: the landed
    ``protocol.cadr_budget.small_fleet_theta`` when it exists, else helper B's body of it
    (``scripts/cadr_small_no_search.py``, the pre-registered rule)."""
    try:
        from ldpfleet.protocol.cadr_budget import small_fleet_theta
    except ImportError:
        sys.path.insert(0, "scripts")
        from cadr_small_no_search import small_fleet_theta
    return small_fleet_theta(eps, ALPHA, n, bound)


def figures(run) -> dict:
    """What ``identity`` compares: θ, the release's scores, raw and post-processed."""
    return {
        "theta": run.theta,
        "mae": run.mae,
        "mse": run.mse,
        "histogram_l1": run.histogram_l1,
        "raw": dict(run.raw),
        "postprocessed": dict(run.postprocessed),
        "spent": dict(run.spent),
    }


def _graphs():
    for name, (family, make) in THIRD.items():
        yield name, family, graph_of(make())
    for name in LARGE:
        yield name, "large", load_graph(name)


def evaluate(out: str) -> None:
    """Today's runs and the rule's runs; the per-cell table and the criteria (a), (b)."""
    rows = []
    for name, family, graph in _graphs():
        degrees = graph.degrees()
        median = float(np.mean(np.abs(degrees - np.floor(np.median(degrees)))))
        zero = float(degrees.mean())
        for eps in EPS_LIST:
            theta = rule_theta(eps, graph.n, graph.n - 1)  # D = n - 1 (the dp default)
            for seed in SEEDS:
                with searching_always():
                    today = ref.private_run(graph, "ll", "auto-dev", eps, ALPHA, seed, "dp")
                row = {"graph": name, "family": family, "n": graph.n, "eps": eps}
                row |= {"seed": seed, "median": median, "zero": zero, "rule_theta": theta}
                row["today"] = figures(today)
                if theta is not None:
                    rule = ref.private_run(graph, "ll", theta, eps, ALPHA, seed, "dp")
                    row["rule"] = figures(rule)
                rows.append(row)
                print(name, graph.n, eps, seed, today.theta, theta, flush=True)
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)
    report(rows)


def report(rows: list[dict]) -> None:
    """The per-cell table (fired cells) and the criteria's figures."""
    cells: dict = defaultdict(list)
    for row in rows:
        cells[(row["graph"], row["family"], row["n"], row["eps"])].append(row)
    print("| graph | family | n | ε | θ today (seeds) | today | rule (θ) | median | zero |")
    print("|---|---|---|---|---|---|---|---|---|")
    total: dict = defaultdict(float)
    by_family: dict = defaultdict(lambda: [0.0, 0.0])
    for (name, family, n, eps), runs in cells.items():
        if runs[0]["rule_theta"] is None:
            continue
        today = float(np.mean([r["today"]["mae"] for r in runs]))
        rule = float(np.mean([r["rule"]["mae"] for r in runs]))
        median, zero = runs[0]["median"], runs[0]["zero"]
        thetas = "/".join(str(r["today"]["theta"]) for r in runs)
        print(
            f"| {name} | {family} | {n} | {eps:g} | {thetas} | {today:.3f} | "
            f"{rule:.3f} ({runs[0]['rule_theta']}) | {median:.3f} | {zero:.3f} |"
        )
        total["cells"] += 1
        for key, value in (("today", today), ("rule", rule)):
            total[f"{key} sum"] += value
            total[f"{key} excess"] += max(0.0, value - median)
            total[f"{key} above zero"] += value > zero + 1e-9
        total["median sum"] += median
        total["zero sum"] += zero
        total["newly above zero"] += today <= zero + 1e-9 and rule > zero + 1e-9
        total["better"] += rule < today - 1e-12
        total["worse"] += rule > today + 1e-12
        by_family[family][0] += today
        by_family[family][1] += rule
    seeds = sorted({row["seed"] for row in rows})
    print(f"\n{total['cells']:.0f} cells where the rule fires (means over seeds {seeds}):")
    for key in ("today", "rule"):
        print(
            f"- {key}: summed MAE {total[f'{key} sum']:.2f}, summed excess over the "
            f"constant median {total[f'{key} excess']:.2f}, cells above all zeros "
            f"{total[f'{key} above zero']:.0f}"
        )
    print(f"- constant median {total['median sum']:.2f}, all zeros {total['zero sum']:.2f}")
    print(f"- rule better in {total['better']:.0f} cells, worse in {total['worse']:.0f}")
    print(f"- cells newly above all zeros: {total['newly above zero']:.0f}")
    print("- by family (today -> rule): " + "; ".join(
        f"{f} {a:.2f} -> {b:.2f}" for f, (a, b) in by_family.items()
    ))  # fmt: skip
    a = total["rule sum"] < total["today sum"] and total["rule excess"] < total["today excess"]
    b = total["newly above zero"] == 0
    print(f"criterion (a): {'holds' if a else 'FAILS'}; (b): {'holds' if b else 'FAILS'}")
    fired = sum(r["rule_theta"] is not None for r in rows)
    print(f"runs where the rule fires: {fired} of {len(rows)}")


def identity(saved: str) -> None:
    """Criterion (c): the code on disk against the pickled runs, cell by cell."""
    with open(saved, "rb") as fh:
        rows = pickle.load(fh)
    graphs = {name: graph for name, _, graph in _graphs()}
    unchanged = same_as_rule = 0
    bad = []
    for row in rows:
        run = ref.private_run(graphs[row["graph"]], "ll", "auto-dev", row["eps"], ALPHA,
                              row["seed"], "dp")  # fmt: skip
        expected = row["rule"] if row["rule_theta"] is not None else row["today"]
        if figures(run) != expected:
            bad.append((row["graph"], row["eps"], row["seed"], figures(run)["mae"]))
        elif row["rule_theta"] is None:
            unchanged += 1
        else:
            same_as_rule += 1
    print(f"rule does not fire: {unchanged} runs bit-identical to today's")
    print(f"rule fires: {same_as_rule} runs identical to the rule's pre-registered runs")
    print(f"criterion (c): {'holds' if not bad else f'FAILS on {bad[:10]}'}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("evaluate", "identity"):
        raise SystemExit(__doc__)
    {"evaluate": evaluate, "identity": identity}[sys.argv[1]](sys.argv[2])
