"""Helper A2 (issue 20, claim D9): why a dp release (method clip) on an Erdős–Rényi fleet
lands above the constant true median. Per run, the release is decomposed:

- ``pipe``: the release as shipped (``post_process_release``);
- ``const_prior``: every node at the per-node prior's median (what the release is when
  the DSR values carry nothing);
- ``oracle``: posterior medians (same θ, same DSR values, same margin) under the TRUE
  degree distribution as the prior;
- ``best_theta``: the least shipped-release MAE over θ' in θ ± 5 (same counts; DSR values
  redrawn from the run's own seed: for clip the generator draws nothing before DSR), and
  the oracle's at that θ'.

Calibration only (reads the true degrees). Writes one JSON line per run.

    python scripts/A2_decompose.py calib /tmp/A/calib.jsonl
    python scripts/A2_decompose.py table /tmp/A/calib.jsonl
    python scripts/A2_decompose.py remaining /tmp/A/remaining.jsonl   # post hoc, fresh set
"""

from __future__ import annotations

import json
import sys

import networkx as nx
import numpy as np


def as_graph(g, name):
    from ldpfleet.devices.graphs import Graph

    g = nx.convert_node_labels_to_integers(g)
    u, v = zip(*g.edges(), strict=True)
    return Graph.from_edges(g.number_of_nodes(), list(u), list(v), name=name)


def calib_cells():
    """Helper F's two ER sets (the first with its own seeds; the second with new graph
    seeds: F's were not recorded)."""
    cells = []
    for n in (500, 800, 1500, 3000):
        g = as_graph(nx.gnm_random_graph(n, int(3.75 * n), seed=500 + n), f"gnm375-{n}")
        cells.append((g, (1.0, 1.5, 2.0), range(1000, 1010)))
    i = 0
    for n in (500, 1000, 2000):
        for mean in (4, 7.5, 15, 30):
            g = as_graph(nx.gnm_random_graph(n, int(mean * n / 2), seed=2200 + i), f"gnm{mean}-{n}")
            i += 1
            cells.append((g, (1.0, 2.0, 3.0), range(2000, 2005)))
    return cells


def recorded_run(graph, eps, seed):
    """The default release (clip, auto-dev, dp) of ``graph`` and what its scoring saw (the
    true degrees, the released values, θ, ε_DSR, the search, the bound); also used by
    scripts/E5_heldout_graphs.py."""
    import ldpfleet.collector.cadr_reference as cr

    seen = {}
    original = cr._release_scores

    def recording(degrees, released, theta, eps_dsr, search, bound, ratio=None):
        seen.update(degrees=degrees, released=released, theta=theta, eps_dsr=eps_dsr,
                    search=search, bound=bound, ratio=ratio)  # fmt: skip
        return original(degrees, released, theta, eps_dsr, search, bound, ratio)

    cr._release_scores = recording
    try:
        run = cr.private_run(graph, "clip", "auto-dev", eps, 0.1, seed, pipeline="dp")
    finally:
        cr._release_scores = original
    return run, seen


def decompose(graph, eps, seed, hindsight=5):
    import ldpfleet.collector.degree_postprocess as dp
    from ldpfleet.collector.bucket_denoise import noise_sd
    from ldpfleet.protocol.dsr import dsr_release

    run, seen = recorded_run(graph, eps, seed)
    d = np.asarray(seen["degrees"])
    y, t, e, s, bound = (seen[k] for k in ("released", "theta", "eps_dsr", "search", "bound"))
    n = d.size
    m_true = int(np.floor(np.median(d)))
    base = float(np.mean(np.abs(d - m_true)))
    true_p = np.bincount(d, minlength=bound + 1)[: bound + 1] / n

    def mae(v):
        return float(np.mean(np.abs(d - np.asarray(v))))

    row = {"graph": graph.name, "n": n, "eps": eps, "seed": seed, "theta": t,
           "theta_exact": s.get("theta_exact"), "eps_dsr": e, "median": base,
           "m_true": m_true, "true_cdf": float(np.mean(d <= m_true)),
           "zero": float(np.mean(d)), "mae": run.mae}  # fmt: skip
    if not s:
        return row
    counts = dp.SearchCounts(s["bucket_sums"], s["thresholds"], bound, n, s["eps"],
                             s["noise_parties"])  # fmt: skip
    node, _ = dp.search_priors(s["bucket_sums"], s["thresholds"], bound, n, s["eps"],
                               s["noise_parties"], exact_releases=(y, t, e))  # fmt: skip
    reading = dp.unimodal_degree_prior(s["bucket_sums"], s["thresholds"], bound, n, s["eps"],
                                       s["noise_parties"])  # fmt: skip
    m_prior = int(np.searchsorted(np.cumsum(node), 0.5 - 1e-12))
    row.update(
        ratio=dp.count_signal_ratio(n, len(s["bucket_sums"]), s["eps"], s["noise_parties"]),
        sd=noise_sd(s["eps"], n, s["noise_parties"]),
        m_prior=m_prior,
        prior_cdf=float(np.cumsum(node)[m_true]),
        reading_cdf=float(np.cumsum(reading)[m_true]),
        raw_cdf=_raw_cdf(s, m_true, n),
        const_prior=mae(np.full(n, m_prior)),
        oracle=mae(dp.posterior_degree_medians(y, true_p, t, t / e, 1.0, dp._margin(1.0))),
        oracle_nomargin=mae(dp.posterior_degree_medians(y, true_p, t, t / e, 1.0, 0.0)),
        nomargin=mae(dp.posterior_degree_medians(y, node, t, t / e, 1.0, 0.0)),
    )
    best = (row["mae"], t, row["oracle"])
    for t2 in range(max(1, t - hindsight), t + hindsight + 1):
        if t2 == t:
            continue
        y2 = np.asarray(dsr_release(np.minimum(d, t2), t2, e, np.random.default_rng(seed)), float)
        post = dp.post_process_release(y2, t2, e, counts, 1.0)
        o2 = mae(dp.posterior_degree_medians(y2, true_p, t2, t2 / e, 1.0, dp._margin(1.0)))
        row.setdefault("by_theta", {})[t2] = [mae(post.estimates), o2]
        if mae(post.estimates) < best[0]:
            best = (mae(post.estimates), t2, o2)
    row["best_theta"], row["best_theta_mae"], row["best_theta_oracle"] = best[1], best[0], best[2]
    return row


def _raw_cdf(s, m, n):
    """The raw noisy sums' share of buckets holding degrees <= m (where m is a threshold)."""
    ts = np.asarray(s["thresholds"])
    sums = np.asarray(s["bucket_sums"], float)
    j = int(np.searchsorted(ts, m, side="left"))  # the bucket holding m
    if j < ts.size and ts[j] != m:
        return None
    return float(sums[: j + 1].sum() / n)


def calib(out):
    with open(out, "w") as f:
        for graph, epss, seeds in calib_cells():
            for eps in epss:
                for seed in seeds:
                    f.write(json.dumps(decompose(graph, eps, seed)) + "\n")
                    f.flush()
            print(graph.name, flush=True)


def remaining(out):
    """Post hoc, after the fresh evaluation (docs/preregistration/A2-clip-margin.md): the
    fresh cells still above the constant median with CLIP_MARGIN on, decomposed alike."""
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from A2_margin import fresh_cells

    wanted = {("gnm5-600", 1.0), ("gnm20-600", 0.5), ("ws-250", 1.5), ("ws-250", 2.0),
              ("ws-250", 3.0), ("ws-250", 5.0), ("plc-250", 1.0), ("ws-700", 3.0),
              ("ba-80", 1.0), ("ba-1600", 0.5)}  # fmt: skip
    with open(out, "w") as f:
        for graph, epss, seeds in fresh_cells():
            for eps in epss:
                if (graph.name, eps) in wanted:
                    for seed in seeds:
                        f.write(json.dumps(decompose(graph, eps, seed)) + "\n")
            f.flush()


def table(path):
    with open(path) as f:
        rows = [json.loads(x) for x in f]
    above = [r for r in rows if r["mae"] > r["median"] + 1e-9]
    print(f"{len(above)} of {len(rows)} runs above the constant median")
    cause = {}
    for r in above:
        if r.get("m_prior") is None:
            c = "no-search"
        elif r["oracle"] <= r["median"] + 1e-9:
            c = "prior" if r["m_prior"] != r["m_true"] else "prior (same median)"
        elif r["best_theta_oracle"] <= r["median"] + 1e-9:
            c = "theta"
        else:
            c = "median-step"
        cause[c] = cause.get(c, 0) + 1
        print(f"  {r['graph']:>14} eps {r['eps']} seed {r['seed']}: mae {r['mae']:.4f} median "
              f"{r['median']:.4f} (+{r['mae'] - r['median']:.4f}) theta {r['theta']} "
              f"(exact {r['theta_exact']}, best {r['best_theta']} {r['best_theta_mae']:.4f}) "
              f"oracle {r['oracle']:.4f} const_prior {r['const_prior']:.4f} m {r['m_true']}/"
              f"{r['m_prior']} cdf true {r['true_cdf']:.3f} prior {r['prior_cdf']:.3f} "
              f"reading {r['reading_cdf']:.3f} raw {r['raw_cdf']}")  # fmt: skip
    print(cause)
    # the prior's CDF at the true median: bias over all runs by graph
    by = {}
    for r in rows:
        if r.get("prior_cdf") is None:
            continue
        by.setdefault(r["graph"], []).append(r)
    print(
        "graph: true CDF at m | prior CDF mean (sd) | reading | raw | runs m_prior != m"
        " | oracle above"
    )
    for g, rr in by.items():
        raw = [r["raw_cdf"] for r in rr if r["raw_cdf"] is not None]
        print(f"  {g:>14}: {rr[0]['true_cdf']:.4f} | {np.mean([r['prior_cdf'] for r in rr]):.4f} "
              f"({np.std([r['prior_cdf'] for r in rr]):.4f}) | "
              f"{np.mean([r['reading_cdf'] for r in rr]):.4f} | "
              f"{np.mean(raw) if raw else float('nan'):.4f} | "
              f"{sum(r['m_prior'] != r['m_true'] for r in rr)}/{len(rr)} | "
              f"{sum(r['oracle'] > r['median'] + 1e-9 for r in rr)}")  # fmt: skip
    for k in ("mae", "oracle", "const_prior", "nomargin", "best_theta_mae", "median"):
        print(f"  summed {k}: {sum(r.get(k, r['mae']) for r in rows):.3f}")


if __name__ == "__main__":
    {"calib": calib, "table": table, "remaining": remaining}[sys.argv[1]](sys.argv[2])
