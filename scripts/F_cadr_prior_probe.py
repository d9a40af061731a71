"""Helper F (issue 20): a calibration probe, NOT a pre-registered evaluation, of one
candidate against the per-node prior's low bias on large fleets (docs/cadr-private.md,
"User graphs through the installed command (helper F)").

Where the θ search's counts are strong (``count_signal_ratio >= UNIMODAL_RATIO_MAX``) the
per-node prior is the noisy bucket sums projected onto {x >= 0, Σx = n}: the positive
noise of the empty buckets above the degrees in use stays, and the projection takes it from
every occupied bucket, so the prior's CDF at the true median is low by about 15 devices
(G(n, 3.75n), ε = 1: 0.490 against 0.514 at n = 500) and the release, about the prior's
median for every device at ε = 1, lands on median + 1.

Candidate "floor": before the projection, the sums of the buckets above the densest one
that are below ``Z`` noise sds are set to ``FLOOR`` (kept as support for hubs, with
almost no mass). Arms: default and floor, same graphs, same run seeds. Monkeypatches
``degree_postprocess.unimodal_degree_prior``; nothing in the package changes.

    python scripts/F_cadr_prior_probe.py --seeds 3 --out /tmp/F-trial/probe.json
"""

from __future__ import annotations

import argparse
import json

import networkx as nx
import numpy as np

Z = 2.0
FLOOR = 0.1


def graphs(base: int) -> list:
    from ldpfleet.devices.graphs import Graph

    out = []
    for n in (500, 1000, 2000):
        for kind, g in (
            ("gnm", nx.gnm_random_graph(n, int(3.75 * n), seed=base + n)),
            ("ws", nx.watts_strogatz_graph(n, 6, 0.3, seed=base + 1 + n)),
            ("plc", nx.powerlaw_cluster_graph(n, 3, 0.2, seed=base + 2 + n)),
            ("ba", nx.barabasi_albert_graph(n, 4, seed=base + 3 + n)),
        ):
            g = nx.convert_node_labels_to_integers(g)
            u, v = zip(*g.edges(), strict=True)
            out.append(Graph.from_edges(n, list(u), list(v), name=f"{kind}{n}"))
    return out


def floor_prior(original):
    import ldpfleet.collector.degree_postprocess as dp

    def prior(bucket_sums, thresholds, degree_bound, devices, eps_theta, parties):
        d, n, ts, sums, eps, m = dp._noisy_bucket_input(
            bucket_sums, thresholds, degree_bound, devices, eps_theta, parties
        )
        if dp.count_signal_ratio(n, sums.size, eps, m) < dp.UNIMODAL_RATIO_MAX:
            return original(bucket_sums, thresholds, degree_bound, devices, eps_theta, parties)
        sd = dp.noise_sd(eps, n, m)
        s = sums.copy()
        top = int(np.argmax(s))
        tail = np.arange(s.size) > top
        s[tail & (s < Z * sd)] = FLOOR
        return dp._spread(dp.simplex_projection(s, n), ts, d, True)

    return prior


def fresh_graphs() -> list:
    """The pre-registered fresh set (docs/preregistration/F-tail-floor.md): 20 graphs."""
    from ldpfleet.devices.graphs import Graph

    kinds = {
        "gnm": lambda n, s: nx.gnm_random_graph(n, int(3.75 * n), seed=s),
        "ba": lambda n, s: nx.barabasi_albert_graph(n, 3, seed=s),
        "ws": lambda n, s: nx.watts_strogatz_graph(n, 6, 0.3, seed=s),
        "plc": lambda n, s: nx.powerlaw_cluster_graph(n, 3, 0.2, seed=s),
        "sbm": lambda n, s: nx.Graph(nx.stochastic_block_model(
            [n - n // 10, n // 10], [[4 / n, 0.5 / n], [0.5 / n, 0.2]], seed=s)),
    }  # fmt: skip
    out, i = [], 0
    for kind, make in kinds.items():
        for n in (300, 700, 1500, 3000):
            g = nx.convert_node_labels_to_integers(make(n, 8101 + i))
            i += 1
            u, v = zip(*g.edges(), strict=True)
            out.append(Graph.from_edges(g.number_of_nodes(), list(u), list(v), name=f"{kind}{n}"))
    return out


def fresh(out: str) -> None:
    """The pre-registered evaluation, run once; prints the five criteria."""
    import ldpfleet.collector.degree_postprocess as dp
    from ldpfleet.collector.cadr_reference import private_run
    from ldpfleet.devices.graphs import load_graph

    def cell(graph, eps, seeds, arm):
        dp.PER_NODE_TAIL_FLOOR = None if arm == "baseline" else (Z, FLOOR)
        try:
            runs = [private_run(graph, "clip", "auto-dev", eps, 0.1, s, pipeline="dp")
                    for s in seeds]  # fmt: skip
        finally:
            dp.PER_NODE_TAIL_FLOOR = None
        b = runs[0].baselines
        return {"graph": graph.name, "eps": eps, "arm": arm,
                "mae": float(np.mean([r.mae for r in runs])),
                "mse": float(np.mean([r.mse for r in runs])),
                "emd": float(np.mean([r.histogram_emd for r in runs])),
                "median": b["constant_median_oracle"]["mae"],
                "zero": b["all_zero"]["mae"]}  # fmt: skip

    rows = []
    for graph in fresh_graphs():
        for eps in (0.5, 1.0, 2.0, 3.0, 5.0):
            for arm in ("baseline", "candidate"):
                rows.append(cell(graph, eps, range(5001, 5004), arm))
        print(graph.name, flush=True)
    named = []
    for name in ("facebook", "wiki-vote"):
        g = load_graph(name)
        for eps in (1.0, 3.0):
            for arm in ("baseline", "candidate"):
                named.append(cell(g, eps, range(3), arm))
    with open(out, "w") as f:
        json.dump({"rows": rows, "named": named}, f, indent=1)
    base = [r for r in rows if r["arm"] == "baseline"]
    cand = [r for r in rows if r["arm"] == "candidate"]
    mae0, mae1 = sum(r["mae"] for r in base), sum(r["mae"] for r in cand)
    mse0, mse1 = sum(r["mse"] for r in base), sum(r["mse"] for r in cand)
    above0 = sum(r["mae"] > r["median"] + 1e-9 for r in base)
    above1 = sum(r["mae"] > r["median"] + 1e-9 for r in cand)
    newly = sum(b["mae"] <= b["zero"] < c["mae"] for b, c in zip(base, cand, strict=True))
    nb = [r for r in named if r["arm"] == "baseline"]
    nc = [r for r in named if r["arm"] == "candidate"]
    named_ok = all(c["mae"] <= 1.005 * b["mae"] for b, c in zip(nb, nc, strict=True))
    print(f"1. summed MAE {mae0:.4f} -> {mae1:.4f}: {'PASS' if mae1 < mae0 else 'FAIL'}")
    print(f"2. cells above the median {above0} -> {above1}: "
          f"{'PASS' if above1 <= above0 else 'FAIL'}")  # fmt: skip
    print(f"3. cells newly above all zeros {newly}: {'PASS' if newly == 0 else 'FAIL'}")
    print(f"4. summed MSE {mse0:.3f} -> {mse1:.3f}: {'PASS' if mse1 <= 1.01 * mse0 else 'FAIL'}")
    for b, c in zip(nb, nc, strict=True):
        print(f"   {b['graph']} eps {b['eps']}: {b['mae']:.4f} -> {c['mae']:.4f}")
    print(f"5. named graphs within +0.5 %: {'PASS' if named_ok else 'FAIL'}")
    print(f"   summed EMD {sum(r['emd'] for r in base):.3f} -> {sum(r['emd'] for r in cand):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--base", type=int, default=7100)
    ap.add_argument("--out", default="/tmp/F-trial/probe.json")
    ap.add_argument("--fresh", action="store_true", help="the pre-registered evaluation")
    a = ap.parse_args()
    if a.fresh:
        fresh(a.out)
        return
    import ldpfleet.collector.degree_postprocess as dp
    from ldpfleet.collector.cadr_reference import private_run

    original = dp.unimodal_degree_prior
    rows = []
    for graph in graphs(a.base):
        for eps in (1.0, 2.0, 3.0):
            for arm in ("default", "floor"):
                dp.unimodal_degree_prior = original if arm == "default" else floor_prior(original)
                try:
                    runs = [private_run(graph, "clip", "auto-dev", eps, 0.1, 4000 + s,
                                        pipeline="dp") for s in range(a.seeds)]  # fmt: skip
                finally:
                    dp.unimodal_degree_prior = original
                med = runs[0].baselines["constant_median_oracle"]["mae"]
                rows.append({"graph": graph.name, "eps": eps, "arm": arm, "median": med,
                             "mae": float(np.mean([r.mae for r in runs])),
                             "above": sum(r.mae > med + 1e-9 for r in runs),
                             "emd": float(np.mean([r.histogram_emd for r in runs]))})  # fmt: skip
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)
    for arm in ("default", "floor"):
        rr = [r for r in rows if r["arm"] == arm]
        print(f"{arm}: summed MAE {sum(r['mae'] for r in rr):.3f}, runs above the median "
              f"{sum(r['above'] for r in rr)} of {len(rr) * a.seeds}, cells with a mean above "
              f"{sum(r['mae'] > r['median'] + 1e-9 for r in rr)} of {len(rr)}")  # fmt: skip
    by = {(r["graph"], r["eps"], r["arm"]): r for r in rows}
    for g, e, _ in sorted(k for k in by if k[2] == "default"):
        d0, d1 = by[(g, e, "default")], by[(g, e, "floor")]
        if abs(d0["mae"] - d1["mae"]) > 1e-9:
            print(f"  {g} eps {e}: {d0['mae']:.4f} -> {d1['mae']:.4f} (median {d0['median']:.4f}"
                  f"; above {d0['above']} -> {d1['above']})")  # fmt: skip


if __name__ == "__main__":
    main()
