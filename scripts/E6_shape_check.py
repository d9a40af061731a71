"""Helper E6 (issue 20, claim D9): diagnostics of the per-node prior's shape inside the
θ-search buckets on the E5 held-out graphs (development set only)."""

from __future__ import annotations

import json
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])


def joint_loglik(y, t, eps_dsr, p, reading, thresholds, n, sigma):
    """F(p) of collector.joint_prior's module docstring (Laplace constants dropped)."""
    from ldpfleet.collector.joint_prior import _bucket_of

    d = p.size - 1
    t = min(t, d)
    b = t / eps_dsr
    bucket = _bucket_of(thresholds, d)
    u = int(np.flatnonzero(bucket == bucket[t])[0])
    atoms = np.append(p[:t], p[t:].sum())
    dist = np.abs(np.asarray(y, float)[:, None] - np.arange(t + 1)[None, :])
    mn = dist.min(axis=1, keepdims=True)
    like = np.exp(-(dist - mn) / b) @ atoms
    ll = float(np.sum(np.log(np.maximum(like, 1e-300)) - mn[:, 0] / b))
    groups = np.minimum(bucket, bucket[t])
    ng = int(bucket[t]) + 1
    x = np.bincount(groups, weights=p, minlength=ng)
    r = np.bincount(groups, weights=reading, minlength=ng)
    top = max(reading[u:].sum(), 1e-300)
    share = np.bincount(bucket[u:] - bucket[u], weights=reading[u:]) / top
    c = np.full(ng, n * n / (2.0 * sigma * sigma))
    c[-1] *= float(np.sum(share**2)) if reading[u:].sum() > 0 else 1.0
    return ll - float(np.sum(c * (x - r) ** 2)), (t + 1) - ng


def probe(graph, eps, seed, steps=100):
    """One default run and its per-node release under the kept shape (as shipped) and the
    free shape, with the joint log-likelihood ratio of the two priors."""
    import ldpfleet.collector.degree_postprocess as dp
    from A2_decompose import recorded_run
    from ldpfleet.collector.bucket_denoise import noise_sd
    from ldpfleet.collector.joint_prior import joint_prior

    run_, seen = recorded_run(graph, eps, seed)
    d = np.asarray(seen["degrees"])
    y, t, e, s, bound = (seen[k] for k in ("released", "theta", "eps_dsr", "search", "bound"))
    n = d.size
    m_true = int(np.floor(np.median(d)))
    row = {
        "graph": graph.name,
        "n": n,
        "eps": eps,
        "seed": seed,
        "mae": run_.mae,
        "median": float(np.mean(np.abs(d - m_true))),
        "theta": t,
        "eps_dsr": e,
    }
    if not s or e < dp.JOINT_PER_NODE_EPS_MIN:
        return row
    args = (s["bucket_sums"], s["thresholds"], bound, n, s["eps"], s["noise_parties"])
    reading = dp.unimodal_degree_prior(*args)
    sd = noise_sd(s["eps"], n, s["noise_parties"])
    kept = joint_prior(y, t, e, reading, s["thresholds"], n, sd)
    free = joint_prior(y, t, e, reading, s["thresholds"], n, sd, free_shape=True, iterations=steps)
    lk, df = joint_loglik(y, t, e, kept, reading, s["thresholds"], n, sd)
    lf, _ = joint_loglik(y, t, e, free, reading, s["thresholds"], n, sd)

    def mae(p):
        est = dp.posterior_degree_medians(y, p, t, t / e, 1.0, dp._margin(1.0))
        return float(np.mean(np.abs(d - est)))

    from ldpfleet.collector.joint_prior import median_group_tilt

    tilts = {
        lv: mae(median_group_tilt(y, t, e, kept, s["thresholds"], lv)) for lv in (0.5, 0.05, 0.01)
    }
    row.update(
        kept=mae(kept),
        free=mae(free),
        lr=2 * (lf - lk),
        df=df,
        tilt=tilts,
        thresholds=[int(x) for x in s["thresholds"]][:12],
    )
    return row


def main(argv):
    from E5_heldout_graphs import GRAPH_SEED, as_graph, graph_specs

    names = argv[1].split(",")
    epss = [float(x) for x in argv[2].split(",")]
    seeds = [int(x) for x in argv[3].split(",")]
    specs = dict(graph_specs(GRAPH_SEED["heldout"]))
    for name in names:
        g = as_graph(specs[name](), name)
        for eps in epss:
            for seed in seeds:
                r = probe(g, eps, seed)
                print(
                    json.dumps(
                        {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    main(sys.argv)
