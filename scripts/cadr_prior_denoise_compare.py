"""Compare estimators of the θ search's bucket counts for the dp pipeline's degree prior.

``python scripts/cadr_prior_denoise_compare.py --half tune|held|all --eps 0.5,1,3
--seeds 0,1,2 --variants old,t2,t3 [--graphs a,b]``: per graph, ε and seed ONE in-process
``private_run(g, "ll", "auto-dev", ε, 0.1, seed, pipeline="dp")``; its noisy bucket sums
and DSR releases are post-processed by every variant (paired: the same draws):

- ``old``: the least-squares projection onto ``{x >= 0, Σ x = n}``
  (``degree_postprocess.simplex_projection``);
- ``iso`` / ``isoraw``: ``collector.bucket_isotonic.isotonic_counts`` (the bounded
  isotonic fit of the cumulative counts, centred on ``Σ = n`` / raw);
- ``boot``: ``collector.bucket_isotonic.bootstrap_counts`` (the projection with its
  bootstrap bias removed from the cumulative counts);
- ``tail`` / ``tailiso``: ``collector.bucket_isotonic.tail_counts`` (the top stretch not
  significantly above 0 read as empty, the rest projected / isotonic);
- ``tK`` / ``tKzZ``: ``collector.bucket_denoise.denoise_counts`` with ``threshold_sds =
  K`` (buckets below K noise sds read as empty, the rest projected) and ``fit_sds = Z``
  (default: infinite, no goodness-of-fit test).

Prints one JSON line per (run, variant) in the format of
``scripts/cadr_bucket_grid_compare.py`` (whose ``--summarise`` makes the table).
"""

from __future__ import annotations

import argparse
import sys
import time

import networkx as nx
import numpy as np
from ldpfleet.collector import cadr_reference, degree_postprocess
from ldpfleet.collector.bucket_denoise import denoise_counts
from ldpfleet.collector.bucket_isotonic import bootstrap_counts, isotonic_counts, tail_counts

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cadr_bucket_grid_compare import HELD as GRID_HELD
from cadr_bucket_grid_compare import TUNE as GRID_TUNE
from cadr_bucket_grid_compare import _bimodal, _cliques, _nx, print_rows, summarise

TUNE = {
    "k50": _nx("k50", lambda: nx.complete_graph(50)),
    "rr-400-d30": _nx("rr30", lambda: nx.random_regular_graph(30, 400, seed=11)),
    "star-100": _nx("star", lambda: nx.star_graph(99)),
    "er-100-p0.1": _nx("er100", lambda: nx.gnp_random_graph(100, 0.1, seed=12)),
    "cliques-5x20": _nx("cl", lambda: _cliques([20] * 5)),
    "ba-150-m3": _nx("ba150", lambda: nx.barabasi_albert_graph(150, 3, seed=13)),
    **{k: GRID_TUNE[k] for k in ("facebook", "ba-1000-m10", "er-1000-mean40", "ws-2000-k6")},
}
HELD = {
    "k200": _nx("k200", lambda: nx.complete_graph(200)),
    "rr-2000-d8": GRID_HELD["rr-2000-d8"],
    "stars-3x50": _nx("stars", lambda: _stars(3, 50)),
    "er-300-p0.05": _nx("er300", lambda: nx.gnp_random_graph(300, 0.05, seed=21)),
    "cliques-10-40-60": _nx("cl2", lambda: _cliques([10, 40, 60])),
    "ba-200-m2": _nx("ba200", lambda: nx.barabasi_albert_graph(200, 2, seed=22)),
    "sbm-bimodal-300": _nx("sbm300", lambda: _bimodal(300, 23)),
    **{k: GRID_HELD[k] for k in ("wiki-vote", "ba-3000-m2", "er-2500-mean4", "plc-3000-m3")},
}


def _stars(count: int, leaves: int):
    g = nx.disjoint_union_all([nx.star_graph(leaves) for _ in range(count)])
    return nx.convert_node_labels_to_integers(g)


def run_all(graph, variants: list[str], eps: float, seed: int) -> list[dict]:
    """One private run; every variant post-processes its released data."""
    captured: dict = {}
    dpp = degree_postprocess
    real_prior = dpp.degree_prior  # variant "old"
    real_search, real_post = dpp.search_priors, dpp.post_process

    def search(sums, thresholds, bound, n, *rest, **kw):
        captured.update(sums=sums, thresholds=thresholds, bound=bound, n=n)
        return real_search(sums, thresholds, bound, n, *rest, **kw)

    def post(released, theta, eps_dsr, *rest, **kw):
        captured.update(released=released, theta=theta, eps_dsr=eps_dsr)
        return real_post(released, theta, eps_dsr, *rest, **kw)

    # both pipelines read the counts and post-process in dpp.post_process_release, which
    # looks search_priors and post_process up in its module at call time
    dpp.search_priors, dpp.post_process = search, post
    try:
        run = cadr_reference.private_run(graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
    finally:
        dpp.search_priors, dpp.post_process = real_search, real_post
    captured.update(eps_theta=run.theta_search["eps"], parties=run.theta_search["noise_parties"])
    degrees = graph.degrees()
    rows = []
    for v in variants:
        started = time.process_time()
        c = captured
        if v == "old":
            p = real_prior(c["sums"], c["thresholds"], c["bound"], c["n"])
        elif v in COUNTS:
            p = _prior_from_counts(COUNTS[v](c), c)
        else:
            k, _, z = v[1:].partition("z")
            counts = denoise_counts(
                captured["sums"],
                captured["n"],
                captured["eps_theta"],
                captured["parties"],
                threshold_sds=float(k),
                fit_sds=float(z or "inf"),
            )
            p = _prior_from_counts(counts, captured)
        pp = real_post(captured["released"], captured["theta"], captured["eps_dsr"], p)
        s = degree_postprocess.score(degrees, pp.estimates, pp.histogram)
        rows.append(
            {
                "variant": v,
                "eps": eps,
                "seed": seed,
                "mae": s["mae"],
                "hist_l1": s["histogram_l1"],
                "hist_emd": s["histogram_emd"],
                "theta": run.theta,
                "median_mae": run.baselines["constant_median_oracle"]["mae"],
                "buckets": len(captured["thresholds"]) + 1,
                "cpu": round(time.process_time() - started, 3),
            }
        )
    return rows


COUNTS = {  # the cumulative-count estimators of collector.bucket_isotonic
    "iso": lambda c: isotonic_counts(c["sums"], c["n"]),
    "isoraw": lambda c: isotonic_counts(c["sums"], c["n"], centre=False),
    "boot": lambda c: bootstrap_counts(c["sums"], c["n"], c["eps_theta"], c["parties"]),
    "tail": lambda c: tail_counts(c["sums"], c["n"], c["eps_theta"], c["parties"]),
    "tailiso": lambda c: tail_counts(
        c["sums"], c["n"], c["eps_theta"], c["parties"], isotonic=True
    ),
}


def _prior_from_counts(counts: np.ndarray, c: dict) -> np.ndarray:
    """``degree_prior`` spreading the given counts (a zero-noise projection of them)."""
    return degree_postprocess.degree_prior(counts, c["thresholds"], c["bound"], c["n"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--half", default="tune", choices=["tune", "held", "all"])
    p.add_argument("--graphs", default="")
    p.add_argument("--eps", default="0.5,0.75,1,2,3,5")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--variants", default="old,t2,t3")
    p.add_argument("--summarise", nargs="*", help="JSON-lines files: print the table only")
    a = p.parse_args(argv)
    if a.summarise:
        print(summarise(a.summarise, tuple(a.variants.split(","))))
        return 0
    table = {"tune": TUNE, "held": HELD, "all": {**TUNE, **HELD}}[a.half]
    names = a.graphs.split(",") if a.graphs else list(table)
    variants = a.variants.split(",")
    print_rows(
        {**TUNE, **HELD},
        names,
        a.eps,
        a.seeds,
        lambda graph, eps, seed: run_all(graph, variants, eps, seed),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
