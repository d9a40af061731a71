"""Tiny fleets: a larger share of ε for a histogram prior on the TRUE degrees (issue 20,
helper I, after pre-registration 6 failed).

    python scripts/cadr_tiny_prior_share.py cal X OUT.pkl     # F's fifth set, share X
    python scripts/cadr_tiny_prior_share.py fresh X OUT.pkl   # pre-registration 6's set
    python scripts/cadr_tiny_prior_share.py seventh X OUT.pkl # the seventh set (x = 0.85)
    python scripts/cadr_tiny_prior_share.py gated-eighth 0.85 OUT.pkl  # pre-registration 8

Candidate ``share(x)``: where the landed small-fleet rule fires, θ = ⌈√D⌉ as landed; the
budget ``CadrBudget(ε, α, THETA_FRACTION, x)`` (ε_θ = 0.6 αε + x ε, taken from DSR); ε_θ
buys the θ search's own one-hot bucket counts (``bucket_grid(D, bucket_count(n, ε_θ))``,
two-sided geometric noise over ``noise_parties(n)``), read exactly as a searched run reads
them (``degree_prior``, ``histogram_prior``). Elsewhere the landed run.
"""

from __future__ import annotations

import sys

import ldpfleet.collector.cadr_reference as ref
import networkx as nx
import numpy as np
from ldpfleet.collector.degree_postprocess import (
    SIGNAL_RATIO_MIN,
    count_signal_ratio,
    degree_prior,
    histogram_prior,
    post_process,
)
from ldpfleet.protocol.cadr_budget import THETA_FRACTION, CadrBudget, plan_theta
from ldpfleet.protocol.cadr_theta_noise import bucket_count, bucket_grid, noise_parties, noise_sum
from ldpfleet.protocol.dsr import dsr_release

sys.path.insert(0, "scripts")
import cadr_tiny_prior_coarse as coarse
import cadr_tiny_third as third

ALPHA = 0.1
SEVENTH = {  # fixed 2026-12-05 before any run (family, generator); networkx seeds 1901-1919
    "rtree-13": ("tree", lambda: nx.random_labeled_tree(13, seed=1901)),
    "rtree-21": ("tree", lambda: nx.random_labeled_tree(21, seed=1902)),
    "path-15": ("tree", lambda: nx.path_graph(15)),
    "cycle-12": ("cycle", lambda: nx.cycle_graph(12)),
    "cycle-23": ("cycle", lambda: nx.cycle_graph(23)),
    "star-16": ("star", lambda: nx.star_graph(15)),
    "star-19": ("star", lambda: nx.star_graph(18)),
    "wheel-17": ("star", lambda: nx.wheel_graph(17)),
    "gnp-11-0.4": ("er", lambda: nx.gnp_random_graph(11, 0.4, seed=1903)),
    "gnp-17-0.2": ("er", lambda: nx.gnp_random_graph(17, 0.2, seed=1904)),
    "gnp-21-0.35": ("er", lambda: nx.gnp_random_graph(21, 0.35, seed=1905)),
    "ba-14-m2": ("ba", lambda: nx.barabasi_albert_graph(14, 2, seed=1906)),
    "ba-21-m1": ("ba", lambda: nx.barabasi_albert_graph(21, 1, seed=1907)),
    "ba-16-m3": ("ba", lambda: nx.barabasi_albert_graph(16, 3, seed=1908)),
    "ws-13-k4": ("ws", lambda: nx.watts_strogatz_graph(13, 4, 0.3, seed=1909)),
    "ws-20-k6": ("ws", lambda: nx.watts_strogatz_graph(20, 6, 0.1, seed=1910)),
    "rr-5-12": ("regular", lambda: nx.random_regular_graph(5, 12, seed=1911)),
    "rr-3-20": ("regular", lambda: nx.random_regular_graph(3, 20, seed=1912)),
    "turan-15-5": ("regular", lambda: nx.turan_graph(15, 5)),
    "rr-4-20": ("regular", lambda: nx.random_regular_graph(4, 20, seed=1919)),
    "kbip-2-12": ("bipartite", lambda: nx.complete_bipartite_graph(2, 12)),
    "bip-9-9": ("bipartite", lambda: nx.bipartite.random_graph(9, 9, 0.3, seed=1913)),
    "two-k6-star7": ("two components", lambda: third._two(nx.complete_graph(6), nx.star_graph(7))),
    "two-cycle8-tree9": (
        "two components",
        lambda: third._two(nx.cycle_graph(8), nx.random_labeled_tree(9, seed=1914)),
    ),
    "rr-3-22": ("regular", lambda: nx.random_regular_graph(3, 22, seed=1917)),
    "plc-18": ("named", lambda: nx.powerlaw_cluster_graph(18, 2, 0.5, seed=1918)),
    "circulant-16-1-3": ("named", lambda: nx.circulant_graph(16, [1, 3])),
    # larger: the rule does not fire (criterion (c))
    "gnp-38-0.1": ("er", lambda: nx.gnp_random_graph(38, 0.1, seed=1915)),
    "ba-48-m2": ("ba", lambda: nx.barabasi_albert_graph(48, 2, seed=1916)),
    "cycle-45": ("cycle", lambda: nx.cycle_graph(45)),
}


EIGHTH = {  # fixed 2026-12-05 before any run (family, generator); networkx seeds 2001-2019
    "rtree-10": ("tree", lambda: nx.random_labeled_tree(10, seed=2001)),
    "rtree-17": ("tree", lambda: nx.random_labeled_tree(17, seed=2002)),
    "rtree-22": ("tree", lambda: nx.random_labeled_tree(22, seed=2003)),
    "path-11": ("tree", lambda: nx.path_graph(11)),
    "cycle-14": ("cycle", lambda: nx.cycle_graph(14)),
    "cycle-19": ("cycle", lambda: nx.cycle_graph(19)),
    "star-14": ("star", lambda: nx.star_graph(13)),
    "wheel-9": ("star", lambda: nx.wheel_graph(9)),
    "gnp-9-0.5": ("er", lambda: nx.gnp_random_graph(9, 0.5, seed=2004)),
    "gnp-15-0.25": ("er", lambda: nx.gnp_random_graph(15, 0.25, seed=2005)),
    "gnp-22-0.2": ("er", lambda: nx.gnp_random_graph(22, 0.2, seed=2006)),
    "ba-11-m2": ("ba", lambda: nx.barabasi_albert_graph(11, 2, seed=2007)),
    "ba-18-m1": ("ba", lambda: nx.barabasi_albert_graph(18, 1, seed=2008)),
    "ba-23-m3": ("ba", lambda: nx.barabasi_albert_graph(23, 3, seed=2009)),
    "ws-15-k4": ("ws", lambda: nx.watts_strogatz_graph(15, 4, 0.4, seed=2010)),
    "ws-21-k2": ("ws", lambda: nx.watts_strogatz_graph(21, 2, 0.2, seed=2011)),
    "rr-4-14": ("regular", lambda: nx.random_regular_graph(4, 14, seed=2012)),
    "rr-7-16": ("regular", lambda: nx.random_regular_graph(7, 16, seed=2013)),
    "turan-14-2": ("regular", lambda: nx.turan_graph(14, 2)),
    "circular-ladder-8": ("regular", lambda: nx.circular_ladder_graph(8)),
    "kbip-3-8": ("bipartite", lambda: nx.complete_bipartite_graph(3, 8)),
    "bip-8-10": ("bipartite", lambda: nx.bipartite.random_graph(8, 10, 0.25, seed=2014)),
    "two-k3-tree12": (
        "two components",
        lambda: third._two(nx.complete_graph(3), nx.random_labeled_tree(12, seed=2015)),
    ),
    "two-star9-cycle7": ("two components", lambda: third._two(nx.star_graph(9), nx.cycle_graph(7))),
    "plc-20": ("named", lambda: nx.powerlaw_cluster_graph(20, 3, 0.3, seed=2016)),
    "ladder-7": ("named", lambda: nx.ladder_graph(7)),
    "gnm-16-30": ("named", lambda: nx.gnm_random_graph(16, 30, seed=2017)),
    # larger: the rule does not fire (criterion (c))
    "gnp-42-0.1": ("er", lambda: nx.gnp_random_graph(42, 0.1, seed=2018)),
    "rtree-50": ("tree", lambda: nx.random_labeled_tree(50, seed=2019)),
    "cycle-40": ("cycle", lambda: nx.cycle_graph(40)),
}


def share_run(graph, eps: float, seed: int, extra: float, gated: bool = False) -> dict:
    """The candidate ``share(extra)`` (module docstring); figures like ``coarse3_run``.
    ``gated`` (pre-registration 8): only where its own counts pass the small-fleet guard's
    test, ``count_signal_ratio(n, K, ε_θ, parties) >= SIGNAL_RATIO_MIN``; else landed."""
    degrees = graph.degrees()
    bound = graph.n - 1
    plan = plan_theta("auto-dev", "dp", eps, ALPHA, graph.n, bound)
    if plan.chosen_by != "small-fleet":
        return third.figures(ref.private_run(graph, "ll", "auto-dev", eps, ALPHA, seed, "dp"))
    theta = int(plan.rule)
    budget = CadrBudget(eps, ALPHA, THETA_FRACTION, extra)
    thresholds = bucket_grid(bound, bucket_count(graph.n, budget.theta))
    exact = np.bincount(
        np.searchsorted(thresholds, np.minimum(degrees, bound), side="left"),
        minlength=len(thresholds) + 1,
    )
    parties = noise_parties(graph.n)
    if gated and count_signal_ratio(graph.n, len(exact), budget.theta, parties) < (
        SIGNAL_RATIO_MIN
    ):
        return third.figures(ref.private_run(graph, "ll", "auto-dev", eps, ALPHA, seed, "dp"))
    rng_h = np.random.default_rng([seed, 1])
    noisy = exact + noise_sum(rng_h, graph.n, parties, budget.theta, len(exact))
    rng = np.random.default_rng(seed)
    charges = ref._Charges(budget.open_ledger("node"))
    charges.charge(ref.THETA_LABEL, budget.theta)
    kept, _ = ref._projected(graph, degrees, "ll", theta, budget, rng, bound, charges)
    charges.charge("laplace", budget.dsr)
    released = np.asarray(dsr_release(kept.degrees(), theta, budget.dsr, rng), dtype=float)
    args = (noisy, list(thresholds), bound, graph.n)
    prior = degree_prior(*args)
    hist = histogram_prior(*args, budget.theta, parties)
    post = post_process(released, theta, budget.dsr, prior, hist)
    scores = ref.score(degrees, post.estimates, post.histogram)
    return {"theta": theta, "mae": scores["mae"], "postprocessed": scores,
            "spent": dict(charges.spent)}  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    x = float(sys.argv[2])
    coarse.SETS["seventh"] = (SEVENTH, (21, 22, 23), (0.5, 1, 2, 3, 5))
    coarse.SETS["eighth"] = (EIGHTH, (24, 25, 26), (0.5, 1, 2, 3, 5))
    gated = sys.argv[1].startswith("gated-")
    coarse.coarse3_run = lambda graph, eps, seed, oracle=False: share_run(
        graph, eps, seed, x, gated
    )
    coarse.run(sys.argv[1].removeprefix("gated-"), sys.argv[3])
