"""Helper R: diagnose helper G's eps 0.5 failures (graph list of scripts/G_small_eps_scan.py,
rng seed 4471). For each run: n, eps_theta, eps_dsr, theta, theta_exact, MAE, all-zeros,
constant median, the release's median, the true median, the noisy counts.

    python scripts/R_diag.py
"""

import json
import sys

import networkx as nx
import numpy as np
from ldpfleet.collector.cadr_reference import private_run
from ldpfleet.collector.degree_postprocess import trivial_baselines
from ldpfleet.devices.graphs import Graph


def g_graphs():
    rng = np.random.default_rng(4471)
    out = []
    for _k in range(30):
        n = int(rng.integers(28, 61))
        s = int(rng.integers(1e6))
        g = nx.gnp_random_graph(n, 4 / (n - 1), seed=s)
        e = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2)
        out.append(Graph.from_edges(n, e[:, 0], e[:, 1], name=f"gnp{n}_{s}"))
    return out


if __name__ == "__main__":
    eps = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
    rows = []
    for G in g_graphs():
        d = G.degrees()
        b = trivial_baselines(d)
        for seed in range(5):
            r = private_run(G, "clip", "auto-dev", eps, 0.1, seed, "dp")
            s = r.theta_search
            rows.append(
                dict(
                    g=G.name,
                    n=G.n,
                    seed=seed,
                    eps_theta=s.get("eps"),
                    eps_dsr=r.spent.get("laplace"),
                    theta=r.theta,
                    theta_exact=s.get("theta_exact"),
                    mae=r.mae,
                    zero=b["all_zero"]["mae"],
                    med=b["constant_median_oracle"]["mae"],
                    dmax=int(d.max()),
                    dmed=float(np.median(d)),
                    thresholds=s.get("thresholds"),
                    counts=s.get("bucket_sums"),
                    exact=np.bincount(
                        np.searchsorted(s["thresholds"], d, side="left"),
                        minlength=len(s["thresholds"]) + 1,
                    ).tolist()
                    if s
                    else None,
                    by=r.theta_chosen_by,
                )
            )
    with open(f"/tmp/R/diag_{eps}.json", "w") as fh:
        json.dump(rows, fh)
    bad = [x for x in rows if x["mae"] > x["zero"]]
    print("runs above zero", len(bad), "of", len(rows))
    for x in rows[:3] + bad:
        print(
            x["g"],
            x["seed"],
            f"epsθ {x['eps_theta'] or 0:.3f} dsr {x['eps_dsr']:.3f}",
            "θ",
            x["theta"],
            "θex",
            x["theta_exact"],
            f"mae {x['mae']:.2f} zero {x['zero']:.2f} med {x['med']:.2f}",
            "dmax",
            x["dmax"],
        )
        print("   thr", x["thresholds"])
        print("   noisy", x["counts"])
        print("   exact", x["exact"])
