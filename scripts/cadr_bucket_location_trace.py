"""Why a regular graph inside one wide θ-search bucket is released off by the same amount at
every node (issue 20; docs/cadr-private.md "rr-300-d12: a regular graph
inside one wide bucket").

    python scripts/cadr_bucket_location_trace.py [--graph rr-300-d12] [--eps-list 0.5,1,2,3,5]
        [--seeds 0,1,2]

Per ε and seed: one default dp run (``collector.cadr_reference.private_run``: LL, θ
auto-dev, α = 0.1, D = n − 1) on a random d-regular graph, traced at the post-processing
(``collector.degree_postprocess.post_process`` is wrapped to record its inputs; nothing in
the pipeline changes). Printed: ε_θ, the number of thresholds, the bucket that holds degree
d, θ, the prior's median, the fitted kept ratio r and the true one (mean kept degree over
mean min(d, θ)), the release's MAE — then counterfactuals on the same releases that name the
cause (each reads something the collector does not know, except "bound"):

- ``true prior``: the posterior medians with the TRUE degree distribution as the prior (r
  fitted as the pipeline does);
- ``EM r=1``: the prior's mass redistributed INSIDE each bucket (bucket masses fixed) by 100
  EM steps on the DSR releases, with the kept ratio fixed at its true value 1;
- ``EM r fit``: the same EM with r refitted from mean(y) at every step (what the collector
  could do): the within-bucket location and r are confounded;
- ``bound``: LPEA's deterministic floor on r, ``1 − E[max(0, d − θ)] / E[min(d, θ)]`` under
  the noisy prior (an edge is dropped only at an endpoint at its cap θ, which drops at most
  d − θ), and the EM with r held at max(fit, bound).
"""

from __future__ import annotations

import argparse

import numpy as np

GRAPHS = {  # label: (n, d, networkx seed) — rr-300-d12 is scripts/cadr_user_graphs.py's
    "rr-300-d12": (300, 12, 104),
    "rr-600-d12": (600, 12, 104),
    "rr-1500-d12": (1500, 12, 104),
    "rr-300-d8": (300, 8, 104),
}


def regular_graph(n: int, d: int, seed: int):
    """networkx's random_regular_graph(d, n, seed) as an ldpfleet Graph."""
    import networkx as nx
    from ldpfleet.devices.graphs import Graph

    edges = np.array(list(nx.random_regular_graph(d, n, seed=seed).edges()), dtype=np.int64)
    return Graph.from_edges(n, edges[:, 0], edges[:, 1])


def within_bucket_em(y, prior, edges, theta, scale, ratio_of, steps=100):
    """EM on the distribution over 0..D with every bucket's mass held fixed: only the shape
    inside buckets moves. ``ratio_of(q)``: the kept ratio used at each step."""
    q = prior.copy()
    capped = np.minimum(np.arange(q.size), theta)
    spans = [(edges[j] + 1, edges[j + 1]) for j in range(len(edges) - 1)]
    masses = [q[lo : hi + 1].sum() for lo, hi in spans]
    for _ in range(steps):
        r = ratio_of(q)
        post = np.exp(-np.abs(y[:, None] - r * capped[None, :]) / scale) * q
        new = (post / post.sum(axis=1, keepdims=True)).mean(axis=0)
        for (lo, hi), mass in zip(spans, masses, strict=True):
            inside = new[lo : hi + 1].sum()
            if inside > 0:
                new[lo : hi + 1] *= mass / inside
        q = new / new.sum()
    return q, ratio_of(q)


def trace(graph, eps: float, seed: int) -> dict:
    """One traced run and its counterfactuals (module docstring)."""
    import ldpfleet.collector.cadr_reference as cr
    import ldpfleet.collector.degree_postprocess as dpp
    from ldpfleet.collector.degree_postprocess import (
        MARGIN,
        kept_ratio,
        posterior_degree_medians,
    )

    seen: dict = {}
    original = dpp.post_process

    def recording(released, theta, eps_dsr, prior=None, *rest, **options):
        seen.update(y=np.asarray(released, dtype=float), eps_dsr=eps_dsr, prior=prior)
        return original(released, theta, eps_dsr, prior, *rest, **options)

    # both pipelines post-process in dpp.post_process_release, which looks post_process up
    # in its module at call time
    dpp.post_process = recording
    try:
        run = cr.private_run(graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
    finally:
        dpp.post_process = original
    degrees, theta, y, p = graph.degrees(), run.theta, seen["y"], seen["prior"]
    scale = theta / seen["eps_dsr"]
    thresholds = run.theta_search["thresholds"]
    edges = [-1, *thresholds, run.degree_bound]
    d = int(degrees[0])
    j = int(np.searchsorted(thresholds, d, side="left"))
    capped = np.minimum(np.arange(p.size), theta)

    def mae(prior, ratio):
        est = posterior_degree_medians(y, prior, theta, scale, ratio, MARGIN)
        return float(np.mean(np.abs(est - degrees)))

    def median(q):
        return int(np.searchsorted(np.cumsum(q), 0.5 - 1e-12))

    truth = np.bincount(degrees, minlength=p.size).astype(float)
    truth /= truth.sum()
    r_fit = kept_ratio(y, p, theta)
    bound = 1 - float(p @ np.maximum(np.arange(p.size) - theta, 0)) / float(p @ capped)
    em_true, _ = within_bucket_em(y, p, edges, theta, scale, lambda q: 1.0)
    em_fit, r_em = within_bucket_em(y, p, edges, theta, scale, lambda q: kept_ratio(y, q, theta))
    held = max(r_fit, bound)
    em_bound, _ = within_bucket_em(y, p, edges, theta, scale, lambda q: held)
    return {
        "eps": eps,
        "seed": seed,
        "eps_theta": run.theta_search["eps"],
        "thresholds": len(thresholds),
        "bucket": f"{edges[j] + 1}..{edges[j + 1]}",
        "theta": theta,
        "prior_median": median(p),
        "r_fit": r_fit,
        "r_true": float(np.mean(y) / np.mean(np.minimum(degrees, theta))),
        "mae": run.mae,
        "true_prior": mae(truth, kept_ratio(y, truth, theta)),
        "em_r1": mae(em_true, 1.0),
        "em_r1_median": median(em_true),
        "em_rfit": mae(em_fit, r_em),
        "em_rfit_median": median(em_fit),
        "bound": bound,
        "em_bound": mae(em_bound, held),
    }


def main(argv: list[str] | None = None) -> int:
    """Print one row per (ε, seed) (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="rr-300-d12", choices=sorted(GRAPHS))
    ap.add_argument("--eps-list", default="0.5,1,2,3,5")
    ap.add_argument("--seeds", default="0,1,2")
    args = ap.parse_args(argv)
    n, d, seed = GRAPHS[args.graph]
    graph = regular_graph(n, d, seed)
    head = (
        "eps seed eps_th B bucket theta prior_med r_fit r_true MAE | true_prior "
        "EM_r1(med) EM_rfit(med) bound EM_bound"
    )
    print(head)
    for eps in (float(e) for e in args.eps_list.split(",")):
        for s in (int(x) for x in args.seeds.split(",")):
            r = trace(graph, eps, s)
            print(
                f"{r['eps']:g} {r['seed']} {r['eps_theta']:.3f} {r['thresholds']} {r['bucket']} "
                f"{r['theta']} {r['prior_median']} {r['r_fit']:.3f} {r['r_true']:.3f} "
                f"{r['mae']:.3f} | {r['true_prior']:.3f} {r['em_r1']:.3f}({r['em_r1_median']}) "
                f"{r['em_rfit']:.3f}({r['em_rfit_median']}) {r['bound']:.3f} {r['em_bound']:.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
