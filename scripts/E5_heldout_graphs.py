"""Helper E5 (issue 20, claim D9): the default private release (pipeline dp, method clip,
θ by ``auto-dev``, α = 0.1: exactly what ``ldpfleet bench cadr`` runs in process) against
the constant TRUE median on graph families the earlier grids were not tuned on.

Every cell is (graph, ε) with ε in {0.5, 1, 2, 3, 5} and run seeds 0, 1, 2 (``bench cadr
--runs 3``'s seeds); the graphs are built from graph seeds 71001.. (not used by any earlier
script). Per cell: the release's mean per-node MAE, the constant true median's MAE and the
all-zeros MAE (``trivial_baselines``, as ``bench cadr`` prints them) and the ratio release /
median. A cell is "above" when its mean MAE is above the median's (by > 1e-9).

    nice -n 5 python scripts/E5_heldout_graphs.py run /tmp/E5/heldout.jsonl
    python scripts/E5_heldout_graphs.py table /tmp/E5/heldout.jsonl [--json]
    nice -n 5 python scripts/E5_heldout_graphs.py decompose /tmp/E5/heldout.jsonl /tmp/E5/dec.jsonl
    python scripts/E5_heldout_graphs.py causes /tmp/E5/dec.jsonl
    nice -n 5 python scripts/E5_heldout_graphs.py spikes /tmp/E5/spikes.jsonl
    nice -n 5 python scripts/E5_heldout_graphs.py arms OUT.jsonl [--set fresh] [--seeds 10,11,12]
        # arms needs docs/preregistration/E5-floor-above-top.diff applied (the rule FAILED)
    python scripts/E5_heldout_graphs.py compare OUT.jsonl    # PER_NODE_TAIL_FLOOR_ABOVE_TOP

``run --set fresh`` builds the same families from graph seeds 72001.. (a pre-registered
evaluation's fresh set) and ``--seeds`` takes other run seeds. ``decompose`` re-makes every
run of every cell above (the same seeds, so the same release) and splits its excess:
the small-fleet rule (no θ search), the tail floor (the release without
``PER_NODE_TAIL_FLOOR`` is at or below the median), the per-node prior (the oracle —
posterior medians under the TRUE degree law, same θ, same DSR values, same margin — is at
or below the median; "prior median" when the prior's median is not the true one, else
"prior shape"), θ (the oracle at the best θ' in θ ± 5 is at or below it) or DSR noise
(none of these: even the true law with these DSR values is above). Reads the true degrees
only to score and to decompose.
"""

from __future__ import annotations

import json
import math
import sys
from functools import partial

import networkx as nx
import numpy as np

EPSILONS = (0.5, 1.0, 2.0, 3.0, 5.0)
SEEDS = (0, 1, 2)
GRAPH_SEED = {"heldout": 71000, "fresh": 72000}


def as_graph(g, name):
    """A networkx graph as an ldpfleet ``Graph`` (nodes renumbered, isolated nodes kept)."""
    from ldpfleet.devices.graphs import Graph

    g = nx.convert_node_labels_to_integers(g)
    edges = list(g.edges())
    u = [a for a, _ in edges]
    v = [b for _, b in edges]
    return Graph.from_edges(g.number_of_nodes(), u, v, name=name)


def heavy_tail(n, exponent, seed):
    """A simple graph from a configuration model with power-law degrees (exponent
    ``exponent``, at least 1, at most n - 1; multi-edges merged, loops dropped)."""
    seq = nx.utils.powerlaw_sequence(n, exponent, seed=seed)
    deg = [min(n - 1, max(1, round(x))) for x in seq]
    if sum(deg) % 2:
        deg[0] += 1
    g = nx.Graph(nx.configuration_model(deg, seed=seed))
    g.remove_edges_from(nx.selfloop_edges(g))
    return g


def with_isolated(g, extra):
    """``g`` plus ``extra`` isolated nodes."""
    g = nx.convert_node_labels_to_integers(g)
    g.add_nodes_from(range(g.number_of_nodes(), g.number_of_nodes() + extra))
    return g


def clique_union(sizes):
    """Disjoint cliques of the given sizes."""
    return nx.disjoint_union_all([nx.complete_graph(k) for k in sizes])


def isolated_gnm(n, m, extra, seed):
    """G(n, m) plus ``extra`` isolated nodes."""
    return with_isolated(nx.gnm_random_graph(n, m, seed=seed), extra)


def isolated_ba(n, m, extra, seed):
    """Barabási–Albert (n, m) plus ``extra`` isolated nodes."""
    return with_isolated(nx.barabasi_albert_graph(n, m, seed=seed), extra)


def graph_specs(base):
    """(name, builder) of every graph; ``base`` offsets every generator seed (one seed per
    seeded graph, in this order)."""
    s = iter(range(base + 1, base + 1000))
    specs = [
        ("ws-60-k4", partial(nx.watts_strogatz_graph, 60, 4, 0.2, seed=next(s))),
        ("ws-300-k4", partial(nx.watts_strogatz_graph, 300, 4, 0.1, seed=next(s))),
        ("ws-1000-k10", partial(nx.watts_strogatz_graph, 1000, 10, 0.05, seed=next(s))),
        ("ws-3000-k6", partial(nx.watts_strogatz_graph, 3000, 6, 0.3, seed=next(s))),
    ]
    for n, m in ((1000, 1), (500, 2), (2000, 3), (200, 5), (5000, 7), (800, 10), (60, 2)):
        specs.append((f"ba-{n}-m{m}", partial(nx.barabasi_albert_graph, n, m, seed=next(s))))
    specs += [
        ("plc-1500-m3", partial(nx.powerlaw_cluster_graph, 1500, 3, 0.5, seed=next(s))),
        ("plc-400-m6", partial(nx.powerlaw_cluster_graph, 400, 6, 0.2, seed=next(s))),
    ]
    for n, d in ((100, 10), (500, 3), (2000, 6), (1000, 20)):
        specs.append((f"rreg-{n}-d{d}", partial(nx.random_regular_graph, d, n, seed=next(s))))
    two = [[0.05, 0.005], [0.005, 0.05]]
    three = [[0.004, 0.001, 0.0], [0.001, 0.05, 0.02], [0.0, 0.02, 0.4]]
    specs += [
        ("sbm-600-2x300", partial(nx.stochastic_block_model, [300, 300], two, seed=next(s))),
        ("sbm-1250-3", partial(nx.stochastic_block_model, [1000, 200, 50], three, seed=next(s))),
        ("sbm-80-2x40", partial(nx.stochastic_block_model, [40, 40], [[0.3, 0.02], [0.02, 0.1]],
                                seed=next(s))),
    ]  # fmt: skip
    for n, x in ((1000, 2.1), (3000, 2.5), (1000, 3.0), (300, 2.5)):
        specs.append((f"cm-{n}-g{x}", partial(heavy_tail, n, x, next(s))))
    specs += [
        ("grid-6x6", partial(nx.grid_2d_graph, 6, 6)),
        ("grid-30x30", partial(nx.grid_2d_graph, 30, 30)),
        ("grid-70x70", partial(nx.grid_2d_graph, 70, 70)),
        ("tree-rand-1000", partial(nx.random_labeled_tree, 1000, seed=next(s))),
        ("tree-bal-3-6", partial(nx.balanced_tree, 3, 6)),
        ("tree-bin-2000", partial(nx.full_rary_tree, 2, 2000)),
        ("kbip-20x200", partial(nx.complete_bipartite_graph, 20, 200)),
        ("bip-300x900", partial(nx.bipartite.random_graph, 300, 900, 0.01, seed=next(s))),
        ("star-100", partial(nx.star_graph, 99)),
        ("star-2000", partial(nx.star_graph, 1999)),
        ("wheel-500", partial(nx.wheel_graph, 500)),
        ("cliques-50x6", partial(nx.caveman_graph, 50, 6)),
        ("cliques-20x25", partial(nx.caveman_graph, 20, 25)),
        ("cliques-mixed", partial(clique_union, [3] * 100 + [10] * 30 + [40] * 5)),
        ("karate", nx.karate_club_graph),
        ("les-miserables", nx.les_miserables_graph),
        ("florentine", nx.florentine_families_graph),
        ("davis", nx.davis_southern_women_graph),
        ("iso-gnm-300+700", partial(isolated_gnm, 300, 1200, 700, next(s))),
        ("iso-ba-500+1500", partial(isolated_ba, 500, 3, 1500, next(s))),
        ("iso-gnm-1000+1000", partial(isolated_gnm, 1000, 3000, 1000, next(s))),
    ]
    return specs


def one_run(graph, eps, seed):
    """The default in-process release of ``bench cadr`` (clip, dp, auto-dev, α = 0.1)."""
    from ldpfleet.collector.cadr_reference import private_run

    r = private_run(graph, "clip", "auto-dev", eps, 0.1, seed, pipeline="dp")
    b = r.baselines
    return {
        "graph": graph.name, "n": int(graph.n), "eps": eps, "seed": seed, "mae": r.mae,
        "median": b["constant_median_oracle"]["mae"], "zero": b["all_zero"]["mae"],
        "theta": int(r.theta), "chosen_by": r.theta_chosen_by,
    }  # fmt: skip


def run(out, which="heldout", seeds=SEEDS):
    with open(out, "w") as f:
        for name, build in graph_specs(GRAPH_SEED[which]):
            graph = as_graph(build(), name)
            for eps in EPSILONS:
                for seed in seeds:
                    f.write(json.dumps(one_run(graph, eps, seed)) + "\n")
            f.flush()
            print(name, graph.n, flush=True)


def cells(rows):
    """Per (graph, ε): the runs' means and the ratio release / median."""
    by = {}
    for r in rows:
        by.setdefault((r["graph"], r["eps"]), []).append(r)
    out = []
    for (g, e), rr in by.items():
        mae = float(np.mean([r["mae"] for r in rr]))
        med, zero = rr[0]["median"], rr[0]["zero"]
        out.append({
            "graph": g, "n": rr[0]["n"], "eps": e, "runs": len(rr), "mae": mae, "median": med,
            "zero": zero, "ratio": mae / med if med > 0 else (math.inf if mae > 0 else 1.0),
            "above": mae > med + 1e-9, "runs_above": sum(r["mae"] > med + 1e-9 for r in rr),
            "above_zero": mae > zero + 1e-9, "thetas": sorted({r["theta"] for r in rr}),
            "chosen_by": rr[0]["chosen_by"],
        })  # fmt: skip
    return out


def read(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def table(path, as_json=False):
    cc = cells(read(path))
    above = [c for c in cc if c["above"]]
    finite = [c for c in cc if math.isfinite(c["ratio"])]
    worst = max(finite, key=lambda c: c["ratio"])
    summary = {
        "cells": len(cc), "cells_above": len(above),
        "runs": sum(c["runs"] for c in cc), "runs_above": sum(c["runs_above"] for c in cc),
        "cells_above_zero": sum(c["above_zero"] for c in cc),
        "summed_mae": sum(c["mae"] for c in cc), "summed_median": sum(c["median"] for c in cc),
        "summed_zero": sum(c["zero"] for c in cc),
        "worst": {k: worst[k] for k in ("graph", "n", "eps", "ratio", "mae", "median")},
        "above_by_eps": {str(e): sum(c["above"] for c in above if c["eps"] == e) for e in EPSILONS},
    }  # fmt: skip
    if as_json:
        print(json.dumps({"summary": summary, "cells": cc}, indent=1))
        return
    heads = " | ".join(f"ε = {e:g}" for e in EPSILONS)
    print(f"| graph | n | θ (seeds 0-2) | {heads} | median | zeros |")
    print("|---|---|---|" + "---|" * len(EPSILONS) + "---|---|")
    by = {}
    for c in cc:
        by.setdefault(c["graph"], {})[c["eps"]] = c
    for g, row in by.items():
        first = next(iter(row.values()))
        ths = sorted({t for c in row.values() for t in c["thetas"]})
        th = f"{ths[0]}-{ths[-1]}" if len(ths) > 1 else str(ths[0])
        if first["chosen_by"] == "small-fleet":
            th += " (small-fleet)"
        vals = []
        for e in EPSILONS:
            c = row[e]
            v = f"{c['mae']:.3f} ({c['ratio']:.3f})"
            vals.append(f"**{v}**" if c["above"] else v)
        tail = f"{first['median']:.3f} | {first['zero']:.3f}"
        print(f"| {g} | {first['n']} | {th} | " + " | ".join(vals) + f" | {tail} |")
    print()
    print(json.dumps(summary))


def decompose_run(graph, eps, seed, hindsight=5):
    """One run re-made and its excess over the median split (module docstring)."""
    import ldpfleet.collector.degree_postprocess as dp
    from A2_decompose import recorded_run  # scripts/ is on the path: run as a script
    from ldpfleet.protocol.dsr import dsr_release

    run_, seen = recorded_run(graph, eps, seed)
    d = np.asarray(seen["degrees"])
    y, t, e, s, bound = (seen[k] for k in ("released", "theta", "eps_dsr", "search", "bound"))
    n = d.size
    m_true = int(np.floor(np.median(d)))
    med = float(np.mean(np.abs(d - m_true)))
    true_p = np.bincount(d, minlength=bound + 1)[: bound + 1] / n

    def mae(v):
        return float(np.mean(np.abs(d - np.asarray(v))))

    def oracle(y_, t_):
        return mae(dp.posterior_degree_medians(y_, true_p, t_, t_ / e, 1.0, dp._margin(1.0)))

    row = {"graph": graph.name, "n": n, "eps": eps, "seed": seed, "mae": run_.mae,
           "median": med, "m_true": m_true, "true_cdf": float(np.mean(d <= m_true)),
           "theta": t, "eps_dsr": e, "chosen_by": run_.theta_chosen_by,
           "oracle": oracle(y, t)}  # fmt: skip
    counts = None
    if s:
        counts = dp.SearchCounts(s["bucket_sums"], s["thresholds"], bound, n, s["eps"],
                                 s["noise_parties"])  # fmt: skip
        node, _ = dp.search_priors(s["bucket_sums"], s["thresholds"], bound, n, s["eps"],
                                   s["noise_parties"], exact_releases=(y, t, e))  # fmt: skip
        cdf = np.cumsum(node)
        m_prior = int(np.searchsorted(cdf, 0.5 - 1e-12))
        saved = dp.PER_NODE_TAIL_FLOOR
        dp.PER_NODE_TAIL_FLOOR = None
        try:
            row["nofloor"] = mae(dp.post_process_release(y, t, e, counts, 1.0).estimates)
        finally:
            dp.PER_NODE_TAIL_FLOOR = saved
        row.update(
            m_prior=m_prior, prior_cdf=float(cdf[m_true]), const_prior=mae(np.full(n, m_prior)),
            ratio_signal=dp.count_signal_ratio(
                n, len(s["bucket_sums"]), s["eps"], s["noise_parties"]
            ),
            buckets=len(s["bucket_sums"]), thresholds=list(map(int, s["thresholds"])),
            theta_exact=s.get("theta_exact"),
        )  # fmt: skip
    best = (row["oracle"], t, y)  # the θ' in θ ± hindsight whose oracle is least
    for t2 in range(max(1, t - hindsight), t + hindsight + 1):
        if t2 == t:
            continue
        y2 = np.asarray(dsr_release(np.minimum(d, t2), t2, e, np.random.default_rng(seed)), float)
        if oracle(y2, t2) < best[0]:
            best = (oracle(y2, t2), t2, y2)
    row["best_theta"], row["best_theta_oracle"] = best[1], best[0]
    row["best_theta_mae"] = (
        row["mae"] if best[1] == t
        else mae(dp.post_process_release(best[2], best[1], e, counts, 1.0).estimates)
    )  # fmt: skip
    row["cause"] = cause(row)
    return row


def cause(r):
    """The first of: small-fleet rule, tail floor, prior median, prior shape, θ, DSR noise."""
    tol = 1e-9
    if r["chosen_by"] == "small-fleet":
        return "small-fleet"
    if r["mae"] <= r["median"] + tol:
        return "not above"
    if r.get("nofloor") is not None and r["nofloor"] <= r["median"] + tol:
        return "tail floor"
    if r["oracle"] <= r["median"] + tol:
        return "prior median" if r.get("m_prior") != r["m_true"] else "prior shape"
    if r["best_theta_oracle"] <= r["median"] + tol:
        return "theta"
    return "DSR noise"


def decompose(path, out):
    cc = [c for c in cells(read(path)) if c["above"]]
    wanted = {(c["graph"], c["eps"]) for c in cc}
    seeds = sorted({r["seed"] for r in read(path)})
    which = "fresh" if "fresh" in path else "heldout"
    with open(out, "w") as f:
        for name, build in graph_specs(GRAPH_SEED[which]):
            epss = [e for e in EPSILONS if (name, e) in wanted]
            if not epss:
                continue
            graph = as_graph(build(), name)
            for eps in epss:
                for seed in seeds:
                    f.write(json.dumps(decompose_run(graph, eps, seed)) + "\n")
            f.flush()
            print(name, flush=True)


def causes(path):
    rows = read(path)
    tally = {}
    for r in rows:
        tally[r["cause"]] = tally.get(r["cause"], 0) + 1
    print(json.dumps(tally))
    print(
        "| graph | n | ε | seed | MAE | median | oracle (true law) | m true / prior "
        "| prior CDF at m (true) | θ (best θ') | no floor | cause |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        nf = f"{r['nofloor']:.4f}" if r.get("nofloor") is not None else "—"
        prior = f"{r['prior_cdf']:.3f}" if "prior_cdf" in r else "—"
        pc = f"{prior} ({r['true_cdf']:.3f})"
        print(f"| {r['graph']} | {r['n']} | {r['eps']:g} | {r['seed']} | {r['mae']:.4f} | "
              f"{r['median']:.4f} | {r['oracle']:.4f} | {r['m_true']} / {r.get('m_prior', '—')} | "
              f"{pc} | {r['theta']} ({r['best_theta']}) | {nf} | {r['cause']} |")  # fmt: skip


def arms_run(graph, eps, seed):
    """One default run, its release re-made with ``PER_NODE_TAIL_FLOOR_ABOVE_TOP`` off
    (``base``, the run as shipped) and on (``rule``) from the SAME DSR values and counts
    (θ does not read the per-node prior)."""
    import ldpfleet.collector.cadr_reference as cr
    import ldpfleet.collector.degree_postprocess as dp

    if not hasattr(dp, "PER_NODE_TAIL_FLOOR_ABOVE_TOP"):
        raise SystemExit("arms: git apply docs/preregistration/E5-floor-above-top.diff first")
    seen = {}
    original = cr._release_scores

    def recording(degrees, released, theta, eps_dsr, search, bound, ratio=None):
        seen.update(degrees=degrees, released=released, theta=theta, eps_dsr=eps_dsr,
                    search=search, bound=bound)  # fmt: skip
        return original(degrees, released, theta, eps_dsr, search, bound, ratio)

    saved = dp.PER_NODE_TAIL_FLOOR_ABOVE_TOP
    dp.PER_NODE_TAIL_FLOOR_ABOVE_TOP = False
    cr._release_scores = recording
    try:
        row = one_run(graph, eps, seed)
    finally:
        cr._release_scores = original
    row["base"] = row["mae"]
    row["rule"] = row["mae"]
    s = seen["search"]
    if not s:
        dp.PER_NODE_TAIL_FLOOR_ABOVE_TOP = saved
        return row
    d, y, t, e = seen["degrees"], seen["released"], seen["theta"], seen["eps_dsr"]
    args = (s["bucket_sums"], s["thresholds"], seen["bound"], d.size, s["eps"],
            s["noise_parties"])  # fmt: skip
    try:
        before = dp.unimodal_degree_prior(*args)
        dp.PER_NODE_TAIL_FLOOR_ABOVE_TOP = True
        after = dp.unimodal_degree_prior(*args)
        if not np.array_equal(before, after):
            counts = dp.SearchCounts(*args)
            est = dp.post_process_release(y, t, e, counts, 1.0).estimates
            row["rule"] = float(np.mean(np.abs(d - est)))
            row["changed"] = True
    finally:
        dp.PER_NODE_TAIL_FLOOR_ABOVE_TOP = saved
    return row


def arms(out, which, seeds):
    with open(out, "w") as f:
        for name, build in graph_specs(GRAPH_SEED[which]):
            graph = as_graph(build(), name)
            for eps in EPSILONS:
                for seed in seeds:
                    f.write(json.dumps(arms_run(graph, eps, seed)) + "\n")
            f.flush()
            print(name, graph.n, flush=True)


def compare(path):
    """Both arms per cell (means over the run seeds): cells above the constant median,
    summed MAE, cells newly above, runs changed (docs/preregistration/E5-floor-above-top.md)."""
    rows = read(path)
    out = {}
    for arm in ("base", "rule"):
        cc = cells([{**r, "mae": r[arm]} for r in rows])
        out[arm] = {
            "cells_above": sorted((c["graph"], c["eps"]) for c in cc if c["above"]),
            "summed_mae": sum(c["mae"] for c in cc),
            "cells_above_zero": sum(c["above_zero"] for c in cc),
            "cells": len(cc),
        }
    base_above, rule_above = set(out["base"]["cells_above"]), set(out["rule"]["cells_above"])
    newly, gone = sorted(rule_above - base_above), sorted(base_above - rule_above)
    changed = [r for r in rows if r.get("changed")]
    delta = out["rule"]["summed_mae"] / out["base"]["summed_mae"] - 1
    print(f"cells {out['base']['cells']}, runs {len(rows)}, runs changed {len(changed)}")
    for arm in ("base", "rule"):
        o = out[arm]
        print(f"  {arm}: cells above the constant median {len(o['cells_above'])}, summed MAE "
              f"{o['summed_mae']:.4f}, cells above all zeros {o['cells_above_zero']}")  # fmt: skip
    print(f"  summed MAE change {100 * delta:+.3f} %; newly above {newly}; no longer above {gone}")
    for r in changed:
        print(f"    {r['graph']} ε {r['eps']:g} seed {r['seed']}: {r['base']:.4f} -> "
              f"{r['rule']:.4f} (median {r['median']:.4f})")  # fmt: skip
    passed = (len(out["rule"]["cells_above"]) < len(out["base"]["cells_above"])
              and delta <= 0.005 and not newly)  # fmt: skip
    print("PASSED" if passed else "FAILED")


SPIKE_GRAPHS = ("plc-400-m6", "ba-200-m5", "ba-800-m10", "plc-1500-m3", "cm-1000-g2.1")


def spikes(out, seeds=range(100, 140), epsilons=(3.0, 5.0)):
    """How often a run lands far above the median on the heavy-tailed held-out graphs
    (the lone-spike failure of plc-400-m6 at ε = 5, seed 2): run seeds 100-139, one line a
    run, and per (graph, ε) the runs above the median and above 1.2 x it."""
    specs = dict(graph_specs(GRAPH_SEED["heldout"]))
    with open(out, "w") as f:
        for name in SPIKE_GRAPHS:
            graph = as_graph(specs[name](), name)
            for eps in epsilons:
                rr = [one_run(graph, eps, seed) for seed in seeds]
                for r in rr:
                    f.write(json.dumps(r) + "\n")
                above = sum(r["mae"] > r["median"] + 1e-9 for r in rr)
                far = [r for r in rr if r["mae"] > 1.2 * r["median"]]
                print(f"{name} ε {eps:g}: {len(rr)} runs, above the median {above}, "
                      f"above 1.2 x median {len(far)} "
                      f"{[(r['seed'], round(r['mae'], 3), r['theta']) for r in far]}, "
                      f"mean MAE {np.mean([r['mae'] for r in rr]):.4f} median "
                      f"{rr[0]['median']:.4f}", flush=True)  # fmt: skip


def main(argv):
    cmd = argv[1]
    if cmd == "run":
        which = (
            "fresh" if "--set" in argv and argv[argv.index("--set") + 1] == "fresh" else "heldout"
        )
        seeds = SEEDS
        if "--seeds" in argv:
            seeds = tuple(int(x) for x in argv[argv.index("--seeds") + 1].split(","))
        run(argv[2], which, seeds)
    elif cmd == "table":
        table(argv[2], "--json" in argv)
    elif cmd == "decompose":
        decompose(argv[2], argv[3])
    elif cmd == "arms":
        which = (
            "fresh" if "--set" in argv and argv[argv.index("--set") + 1] == "fresh" else "heldout"
        )
        seeds = SEEDS
        if "--seeds" in argv:
            seeds = tuple(int(x) for x in argv[argv.index("--seeds") + 1].split(","))
        arms(argv[2], which, seeds)
    elif cmd == "compare":
        compare(argv[2])
    elif cmd == "spikes":
        spikes(argv[2])
    elif cmd == "causes":
        causes(argv[2])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
