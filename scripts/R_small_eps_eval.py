"""Helper R's pre-registered evaluation (docs/preregistration/R-small-eps.md): the widened
small-fleet test at ε <= SMALL_EPS_LOW (``SMALL_FLEET_SMALL_EPS_RATIO``) against main's
default (method clip, dp pipeline, θ auto-dev), on a fresh set of generated graphs.

    python scripts/R_small_eps_eval.py capture OUT.jsonl [--first 9001 --count 140]
    python scripts/R_small_eps_eval.py compare OUT.jsonl

A cell whose θ plan and budget split are the same under both arms is run once and recorded
for both (the run is the same function of the same inputs: identical by construction).
"""

import argparse
import json
import math

import networkx as nx
import numpy as np
from ldpfleet.collector.cadr_reference import private_run
from ldpfleet.collector.degree_postprocess import trivial_baselines
from ldpfleet.devices.graphs import Graph
from ldpfleet.protocol import cadr_budget as cb

FAMILIES = ("gnp-sparse", "gnp-dense", "ba", "ws", "plc", "stars", "two-comp")
EPS = (0.5, 0.75, 1.0, 2.0)
RUN_SEEDS = (9501, 9502, 9503)


def make_graph(seed: int) -> Graph:
    """Graph of family FAMILIES[(seed - 9001) % 7], n drawn log-uniform in 25..200 from seed."""
    rng = np.random.default_rng(seed)
    fam = FAMILIES[(seed - 9001) % len(FAMILIES)]
    n = round(math.exp(rng.uniform(math.log(25), math.log(200))))
    if fam == "gnp-sparse":
        g = nx.gnp_random_graph(n, 4 / (n - 1), seed=seed)
    elif fam == "gnp-dense":
        g = nx.gnp_random_graph(n, float(rng.uniform(0.15, 0.4)), seed=seed)
    elif fam == "ba":
        g = nx.barabasi_albert_graph(n, int(rng.integers(1, 4)), seed=seed)
    elif fam == "ws":
        g = nx.watts_strogatz_graph(n, int(rng.choice([4, 6])), 0.1, seed=seed)
    elif fam == "plc":
        g = nx.powerlaw_cluster_graph(n, int(rng.integers(1, 4)), 0.3, seed=seed)
    elif fam == "stars":  # k hubs in a path, the other nodes leaves of a random hub
        k = int(rng.integers(1, 5))
        g = nx.path_graph(k)
        for v in range(k, n):
            g.add_edge(v, int(rng.integers(0, k)))
    else:  # two components: two sparse G(n/2, p) halves
        a = n // 2
        g = nx.disjoint_union(
            nx.gnp_random_graph(a, 5 / max(a - 1, 1), seed=seed),
            nx.gnp_random_graph(n - a, 5 / max(n - a - 1, 1), seed=seed + 100000),
        )
    e = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2)
    return Graph.from_edges(n, e[:, 0], e[:, 1], name=f"{fam}-{n}-s{seed}")


def plan_key(eps: float, n: int):
    plan = cb.plan_theta("auto-dev", "dp", eps, 0.1, n, n - 1)
    b = cb.CadrBudget.for_pipeline(eps, 0.1, "dp", plan.searched, n, "clip")
    return (plan.rule, plan.chosen_by, b.theta, b.dsr)


def capture(out: str, first: int, count: int) -> None:
    with open(out, "w") as fh:
        for seed in range(first, first + count):
            G = make_graph(seed)
            b = trivial_baselines(G.degrees())
            for eps in EPS:
                cb.SMALL_FLEET_SMALL_EPS_RATIO = None
                k_main = plan_key(eps, G.n)
                main = [
                    private_run(G, "clip", "auto-dev", eps, 0.1, s, "dp").mae for s in RUN_SEEDS
                ]
                cb.SMALL_FLEET_SMALL_EPS_RATIO = RATIO
                k_rule = plan_key(eps, G.n)
                if k_rule == k_main:
                    rule = main
                else:
                    rule = [
                        private_run(G, "clip", "auto-dev", eps, 0.1, s, "dp").mae for s in RUN_SEEDS
                    ]
                row = dict(
                    graph=G.name,
                    n=G.n,
                    eps=eps,
                    changed=k_rule != k_main,
                    main_by=k_main[1],
                    main=float(np.mean(main)),
                    rule=float(np.mean(rule)),
                    zero=b["all_zero"]["mae"],
                    med=b["constant_median_oracle"]["mae"],
                )
                fh.write(json.dumps(row) + "\n")
                fh.flush()


def compare(path: str) -> None:
    with open(path) as fh:
        rows = [json.loads(x) for x in fh]
    print(f"cells {len(rows)}, changed {sum(r['changed'] for r in rows)}")
    for sel, name in ((rows, "all"), ([r for r in rows if r["changed"]], "changed")):
        for arm in ("main", "rule"):
            print(
                f"{name:8s} {arm}: summed MAE {sum(r[arm] for r in sel):.2f}, "
                f"above zeros {sum(r[arm] > r['zero'] for r in sel)}, "
                f"above median {sum(r[arm] > r['med'] for r in sel)}"
            )
        print(
            f"{name:8s} zeros {sum(r['zero'] for r in sel):.2f} "
            f"median {sum(r['med'] for r in sel):.2f}"
        )
    for eps in EPS:
        sel = [r for r in rows if r["eps"] == eps]
        z0 = sum(r["main"] > r["zero"] for r in sel)
        z1 = sum(r["rule"] > r["zero"] for r in sel)
        m0 = sum(r["main"] > r["med"] for r in sel)
        m1 = sum(r["rule"] > r["med"] for r in sel)
        print(
            f"eps {eps}: main {sum(r['main'] for r in sel):.2f} "
            f"rule {sum(r['rule'] for r in sel):.2f} "
            f"above zeros {z0} -> {z1}, "
            f"above median {m0} -> {m1}"
        )
    for r in rows:
        if r["changed"]:
            flag = " ABOVE-ZERO" if r["rule"] > r["zero"] else ""
            print(
                f"  {r['graph']:24s} eps {r['eps']}: {r['main']:.3f} -> {r['rule']:.3f} "
                f"(zeros {r['zero']:.3f}, median {r['med']:.3f}){flag}"
            )
    print(
        "(e) changed cells already under the small-fleet rule:",
        sum(r["changed"] and r["main_by"] == "small-fleet" for r in rows),
        "; (d) changed cells with n >= 500:",
        sum(r["changed"] and r["n"] >= 500 for r in rows),
    )


RATIO = 1.8
if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=("capture", "compare"))
    p.add_argument("out")
    p.add_argument("--first", type=int, default=9001)
    p.add_argument("--count", type=int, default=140)
    a = p.parse_args()
    capture(a.out, a.first, a.count) if a.cmd == "capture" else compare(a.out)
