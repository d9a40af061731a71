"""Helper A2 (issue 20, claim D9): the per-node release's margin (``degree_postprocess.
MARGIN``) under method clip, arm against arm on the SAME runs: each run (``private_run``,
clip, dp, in process) is made once, its DSR values and θ-search counts captured, and the
release re-made with each margin (the per-node prior does not depend on it). Reads the true
degrees only to score.

    python scripts/A2_margin.py calib /tmp/A/mcal.jsonl          # calibration sets
    python scripts/A2_margin.py fresh /tmp/A/fresh.jsonl         # the pre-registered set
    python scripts/A2_margin.py named /tmp/A/named.jsonl         # ego-Facebook, wiki-Vote
    python scripts/A2_margin.py compare /tmp/A/fresh.jsonl 0.05 0.0
"""

from __future__ import annotations

import collections
import json
import sys

import networkx as nx
import numpy as np

MARGINS = (0.05, 0.02, 0.01, 0.0)


def as_graph(g, name):
    from ldpfleet.devices.graphs import Graph

    g = nx.convert_node_labels_to_integers(g)
    u, v = zip(*g.edges(), strict=True)
    return Graph.from_edges(g.number_of_nodes(), list(u), list(v), name=name)


def calib_cells():
    """Helper F's G(n, 3.75 n) set (graph seeds 500 + n) and a G(n, m) set of graph seeds
    2200 + i (both seen in scripts/A2_decompose.py), plus other families (seen)."""
    out = []
    for n in (500, 800, 1500, 3000):
        out.append((as_graph(nx.gnm_random_graph(n, int(3.75 * n), seed=500 + n),
                             f"gnm375-{n}"), (1.0, 1.5, 2.0), range(1000, 1010)))  # fmt: skip
    i = 0
    for n in (500, 1000, 2000):
        for mean in (4, 7.5, 15, 30):
            g = nx.gnm_random_graph(n, int(mean * n / 2), seed=2200 + i)
            out.append((as_graph(g, f"gnm{mean}-{n}"), (1.0, 2.0, 3.0), range(2000, 2005)))
            i += 1
    for n in (60, 150, 400, 1200):
        for kind, g in (
            ("ws", nx.watts_strogatz_graph(n, 6, 0.3, seed=2300 + n)),
            ("plc", nx.powerlaw_cluster_graph(n, 3, 0.2, seed=2400 + n)),
            ("ba", nx.barabasi_albert_graph(n, 3, seed=2500 + n)),
        ):
            out.append((as_graph(g, f"{kind}-{n}"), (0.5, 1.0, 2.0, 5.0), range(2000, 2003)))
    return out


def fresh_cells():
    """The pre-registered fresh set (docs/preregistration/A2-clip-margin.md)."""
    out = []
    i = 0
    for n in (600, 900, 1300, 1800, 2500):
        for mean in (5, 9, 12, 20):
            g = nx.gnm_random_graph(n, int(mean * n / 2), seed=9301 + i)
            out.append((as_graph(g, f"gnm{mean}-{n}"), (0.5, 1.0, 1.5, 2.0, 3.0, 5.0),
                        range(9401, 9404)))  # fmt: skip
            i += 1
    for n in (80, 250, 700, 1600):
        for kind, make in (
            ("ws", lambda n, s: nx.watts_strogatz_graph(n, 8, 0.2, seed=s)),
            ("plc", lambda n, s: nx.powerlaw_cluster_graph(n, 4, 0.3, seed=s)),
            ("ba", lambda n, s: nx.barabasi_albert_graph(n, 2, seed=s)),
        ):
            out.append((as_graph(make(n, 9351 + i), f"{kind}-{n}"),
                        (0.5, 1.0, 1.5, 2.0, 3.0, 5.0), range(9401, 9404)))  # fmt: skip
            i += 1
    return out


def named_cells():
    from ldpfleet.devices.graphs import load_graph

    return [(load_graph(name), (1.0, 3.0), range(3)) for name in ("facebook", "wiki-vote")]


def runs(graph, eps, seed):
    """One run's scores under each margin in MARGINS (the shipped release is MARGIN's)."""
    import ldpfleet.collector.cadr_reference as cr
    import ldpfleet.collector.degree_postprocess as dp

    seen = {}
    original = cr._release_scores

    def recording(degrees, released, theta, eps_dsr, search, bound, ratio=None):
        seen.update(args=(degrees, released, theta, eps_dsr, search, bound, ratio))
        return original(degrees, released, theta, eps_dsr, search, bound, ratio)

    cr._release_scores = recording
    try:
        run = cr.private_run(graph, "clip", "auto-dev", eps, 0.1, seed, pipeline="dp")
    finally:
        cr._release_scores = original
    out = {"graph": graph.name, "n": graph.n, "eps": eps, "seed": seed, "theta": run.theta,
           "shipped": run.mae, "shipped_mse": run.mse,
           "median": run.baselines["constant_median_oracle"]["mae"],
           "zero": run.baselines["all_zero"]["mae"]}  # fmt: skip
    degrees, y, t, e, s, bound, _ = seen["args"]
    if not s:  # no θ search (the small-fleet rule): the release has no prior; one arm
        for m in MARGINS:
            out[f"mae_{m}"], out[f"mse_{m}"] = run.mae, run.mse
        return out
    d = np.asarray(degrees, dtype=float)
    node, _ = dp.search_priors(s["bucket_sums"], s["thresholds"], bound, len(d), s["eps"],
                               s["noise_parties"], exact_releases=(y, t, e))  # fmt: skip
    for m in MARGINS:
        est = dp.posterior_degree_medians(y, node, t, t / e, 1.0, m)
        out[f"mae_{m}"] = float(np.mean(np.abs(d - est)))
        out[f"mse_{m}"] = float(np.mean((d - est) ** 2))
    assert abs(out[f"mae_{dp.MARGIN}"] - run.mae) < 1e-12, (out, run.mae)
    return out


def collect(cells, path):
    with open(path, "w") as f:
        for graph, epss, seeds in cells:
            for eps in epss:
                for seed in seeds:
                    f.write(json.dumps(runs(graph, eps, seed)) + "\n")
            f.flush()
            print(graph.name, flush=True)


def compare(path, a="0.05", b="0.0"):
    with open(path) as f:
        rows = [json.loads(x) for x in f]
    cells = collections.defaultdict(list)
    for r in rows:
        cells[(r["graph"], r["eps"])].append(r)

    def mean(c, k):
        return sum(r[k] for r in c) / len(c)

    print(f"{len(rows)} runs, {len(cells)} cells; arms margin {a} (A) and {b} (B)")
    stats = {}
    for arm in (a, b):
        k = f"mae_{arm}"
        above = [c for c in cells.values() if mean(c, k) > c[0]["median"] + 1e-9]
        zero = [c for c in cells.values() if mean(c, k) > c[0]["zero"] + 1e-9]
        stats[arm] = {
            "summed_mae": sum(mean(c, k) for c in cells.values()),
            "summed_mse": sum(mean(c, f"mse_{arm}") for c in cells.values()),
            "cells_above": len(above),
            "excess": sum(mean(c, k) - c[0]["median"] for c in above),
            "runs_above": sum(r[k] > r["median"] + 1e-9 for r in rows),
            "cells_above_zero": len(zero),
        }
        shown = (f"{x} {y:.4f}" if isinstance(y, float) else f"{x} {y}"
                 for x, y in stats[arm].items())  # fmt: skip
        print(f"  margin {arm}: " + ", ".join(shown))
    newly = [key for key, c in cells.items()
             if mean(c, f"mae_{a}") <= c[0]["zero"] < mean(c, f"mae_{b}")]  # fmt: skip
    print(f"  cells newly above all zeros: {len(newly)} {newly}")
    fam = collections.defaultdict(lambda: [0, 0, 0])
    for (g, e), c in cells.items():
        f = fam[(g.split("-")[0].rstrip("0123456789.") or g, e)]
        f[0] += 1
        f[1] += mean(c, f"mae_{a}") > c[0]["median"] + 1e-9
        f[2] += mean(c, f"mae_{b}") > c[0]["median"] + 1e-9
    print("  family x eps: cells, above (A), above (B)")
    for key in sorted(fam):
        print(f"    {key[0]:>8} eps {key[1]}: {fam[key][0]} cells, {fam[key][1]} -> {fam[key][2]}")
    return stats


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "compare":
        compare(path, *sys.argv[3:5])
    else:
        collect({"calib": calib_cells, "fresh": fresh_cells, "named": named_cells}[cmd](), path)


if __name__ == "__main__":
    main()
