"""Tiny fleets: a coarse, charged prior on the TRUE degrees (issue 20, helper I).

    python scripts/cadr_tiny_prior_coarse.py cal OUT.pkl     # F's fifth set (calibration)
    python scripts/cadr_tiny_prior_coarse.py fresh OUT.pkl   # the new set (evaluation)
    python scripts/cadr_tiny_prior_coarse.py oracle-cal OUT.pkl   # diagnostic: no count noise

Pre-registration 6 (docs/cadr-private.md, "Small graphs: the limit and the guard";
committed before any run). Where the landed small-fleet rule fires (``plan_theta`` chose
θ = ⌈√D⌉, no θ search) the release is the DSR values' own deconvolution: it estimates the
KEPT degrees. The candidate ``coarse3``: the same θ = ⌈√D⌉, but the budget split of a
searched run (``CadrBudget.for_pipeline(..., searched=True)``: the ε_θ today's search
would spend is spent again, the DSR gets what it gets when searching), and that ε_θ buys
a one-hot histogram of the true degree (clipped to D) over THREE public buckets,
thresholds ``[0, θ - 1]`` (``[0]`` when θ = 1): {0}, 1..θ-1, θ..D, with the θ search's
two-sided geometric noise (``noise_sum`` over ``noise_parties(n)``, generator
``[seed, 1]``). Its counts are the prior (``degree_prior``) and the histogram prior
(``histogram_prior``) of ``post_process``, exactly as a searched run reads its counts.
A new release: charged in the ledger under the θ label, and it would need a new message
(a coarse secure sum) in the fleet. Nothing fitted: K = 3 and the thresholds are public
functions of θ.

Sets: ``cal`` = helper F's fifth set (``cadr_tiny_fifth.FIFTH``, seeds 15-17, ε 1, 2,
3, 5, 10); ``fresh`` = ``FRESH`` below (fixed before any run; networkx seeds 1801-1818,
none in B's, F's third/fourth/fifth sets), seeds 18, 19, 20, ε 0.5, 1, 2, 3, 5. α = 0.1,
LL, D = n - 1.

Criterion (cell = graph × ε, mean over the three seeds; over the cells where the landed
rule fires), on the FRESH set: (a) summed MAE lower with ``coarse3`` than with the landed
rule (``private_run(..., "auto-dev", ..., "dp")`` on today's code); (b) strictly fewer
cells above all zeros (or both 0); (c) wherever the rule does not fire, ``coarse3``'s run
is bit-identical to the landed one (θ, every score, the charges). Land only if (a), (b)
and (c) hold; the calibration set's figures are reported beside, not a criterion.
"""

from __future__ import annotations

import pickle
import sys
from collections import defaultdict

import ldpfleet.collector.cadr_reference as ref
import networkx as nx
import numpy as np
from ldpfleet.collector.degree_postprocess import degree_prior, histogram_prior, post_process
from ldpfleet.protocol.cadr_budget import CadrBudget, plan_theta
from ldpfleet.protocol.cadr_theta_noise import noise_parties, noise_sum
from ldpfleet.protocol.dsr import dsr_release

sys.path.insert(0, "scripts")
import cadr_tiny_fifth as fifth
import cadr_tiny_third as third

ALPHA = 0.1
FRESH = {  # fixed 2026-12-05 before any run (family, generator)
    "rtree-11": ("tree", lambda: nx.random_labeled_tree(11, seed=1801)),
    "rtree-20": ("tree", lambda: nx.random_labeled_tree(20, seed=1802)),
    "btree-2-3": ("tree", lambda: nx.balanced_tree(2, 3)),
    "cycle-9": ("cycle", lambda: nx.cycle_graph(9)),
    "cycle-18": ("cycle", lambda: nx.cycle_graph(18)),
    "star-13": ("star", lambda: nx.star_graph(12)),
    "star-20": ("star", lambda: nx.star_graph(19)),
    "wheel-12": ("star", lambda: nx.wheel_graph(12)),
    "gnp-10-0.45": ("er", lambda: nx.gnp_random_graph(10, 0.45, seed=1803)),
    "gnp-16-0.25": ("er", lambda: nx.gnp_random_graph(16, 0.25, seed=1804)),
    "gnp-20-0.3": ("er", lambda: nx.gnp_random_graph(20, 0.3, seed=1805)),
    "ba-12-m2": ("ba", lambda: nx.barabasi_albert_graph(12, 2, seed=1806)),
    "ba-20-m1": ("ba", lambda: nx.barabasi_albert_graph(20, 1, seed=1807)),
    "ba-17-m4": ("ba", lambda: nx.barabasi_albert_graph(17, 4, seed=1808)),
    "ws-12-k4": ("ws", lambda: nx.watts_strogatz_graph(12, 4, 0.2, seed=1809)),
    "ws-19-k6": ("ws", lambda: nx.watts_strogatz_graph(19, 6, 0.2, seed=1810)),
    "rr-3-14": ("regular", lambda: nx.random_regular_graph(3, 14, seed=1811)),
    "rr-8-18": ("regular", lambda: nx.random_regular_graph(8, 18, seed=1812)),
    "turan-12-3": ("regular", lambda: nx.turan_graph(12, 3)),
    "petersen": ("regular", nx.petersen_graph),
    "kbip-4-9": ("bipartite", lambda: nx.complete_bipartite_graph(4, 9)),
    "bip-6-10": ("bipartite", lambda: nx.bipartite.random_graph(6, 10, 0.35, seed=1813)),
    "two-k5-path6": ("two components", lambda: third._two(nx.complete_graph(5), nx.path_graph(6))),
    "two-star6-gnp9": (
        "two components",
        lambda: third._two(nx.star_graph(6), nx.gnp_random_graph(9, 0.4, seed=1814)),
    ),
    "lollipop-5-6": ("named", lambda: nx.lollipop_graph(5, 6)),
    "frucht": ("named", nx.frucht_graph),
    "ladder-9": ("named", lambda: nx.ladder_graph(9)),
    # larger: the rule does not fire (criterion (c))
    "gnp-35-0.12": ("er", lambda: nx.gnp_random_graph(35, 0.12, seed=1815)),
    "ba-45-m2": ("ba", lambda: nx.barabasi_albert_graph(45, 2, seed=1816)),
    "rtree-40": ("tree", lambda: nx.random_labeled_tree(40, seed=1817)),
    "ws-50-k4": ("ws", lambda: nx.watts_strogatz_graph(50, 4, 0.2, seed=1818)),
}
SETS = {
    "cal": (fifth.FIFTH, (15, 16, 17), (1, 2, 3, 5, 10)),
    "fresh": (FRESH, (18, 19, 20), (0.5, 1, 2, 3, 5)),
}


def coarse_thresholds(theta: int) -> list[int]:
    """The three public buckets' thresholds: {0}, 1..θ-1, θ..D."""
    return [0] if theta <= 1 else [0, theta - 1]


def coarse3_run(graph, eps: float, seed: int, oracle: bool = False) -> dict:
    """The candidate: the landed run where the rule does not fire; where it fires, θ =
    ⌈√D⌉ with a searched run's split and the ε_θ spent on three coarse noisy counts, read
    as the prior. ``oracle``: the three counts without their noise (a diagnostic, not a
    private release). Returns ``third.figures``-like figures."""
    degrees = graph.degrees()
    bound = graph.n - 1
    plan = plan_theta("auto-dev", "dp", eps, ALPHA, graph.n, bound)
    if plan.chosen_by != "small-fleet":
        return third.figures(ref.private_run(graph, "ll", "auto-dev", eps, ALPHA, seed, "dp"))
    theta = int(plan.rule)
    budget = CadrBudget.for_pipeline(eps, ALPHA, "dp", True, graph.n)
    thresholds = coarse_thresholds(theta)
    exact = np.bincount(
        np.searchsorted(thresholds, np.minimum(degrees, bound), side="left"),
        minlength=len(thresholds) + 1,
    )
    parties = noise_parties(graph.n)
    noise = noise_sum(np.random.default_rng([seed, 1]), graph.n, parties, budget.theta, len(exact))
    noisy = exact + (0 * noise if oracle else noise)
    rng = np.random.default_rng(seed)
    charges = ref._Charges(budget.open_ledger("node"))
    charges.charge(ref.THETA_LABEL, budget.theta)
    kept, _ = ref._projected(graph, degrees, "ll", theta, budget, rng, bound, charges)
    charges.charge("laplace", budget.dsr)
    released = np.asarray(dsr_release(kept.degrees(), theta, budget.dsr, rng), dtype=float)
    args = (noisy, thresholds, bound, graph.n)
    prior = degree_prior(*args)
    hist = histogram_prior(*args, budget.theta, parties)
    post = post_process(released, theta, budget.dsr, prior, hist)
    scores = ref.score(degrees, post.estimates, post.histogram)
    return {"theta": theta, "mae": scores["mae"], "postprocessed": scores,
            "spent": dict(charges.spent)}  # fmt: skip


def run(which: str, out: str) -> None:
    """Landed and candidate runs on one set; the table and the criteria. ``oracle-cal``,
    ``oracle-fresh``: the candidate with its three counts' noise removed (diagnostic)."""
    oracle = which.startswith("oracle-")
    graphs, seeds, eps_list = SETS[which.removeprefix("oracle-")]
    rows = []
    for name, (family, make) in graphs.items():
        graph = third.graph_of(make())
        degrees = graph.degrees()
        median = float(np.mean(np.abs(degrees - np.floor(np.median(degrees)))))
        for eps in eps_list:
            fires = third.rule_theta(eps, graph.n, graph.n - 1) is not None
            for seed in seeds:
                landed = third.figures(
                    ref.private_run(graph, "ll", "auto-dev", eps, ALPHA, seed, "dp")
                )
                cand = coarse3_run(graph, eps, seed, oracle)
                rows.append({"graph": name, "family": family, "n": graph.n, "eps": eps,
                             "seed": seed, "fires": fires, "median": median,
                             "zero": float(degrees.mean()), "landed": landed,
                             "cand": cand})  # fmt: skip
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)
    report(rows)


def report(rows: list[dict]) -> None:
    """Per fired cell: landed, candidate, constant median, all zeros; the criteria."""
    cells: dict = defaultdict(list)
    for row in rows:
        cells[(row["graph"], row["family"], row["n"], row["eps"])].append(row)
    print("| graph | family | n | ε | landed | coarse3 | median | zero |")
    print("|---|---|---|---|---|---|---|---|")
    tot: dict = defaultdict(float)
    identical = differs = 0
    for (name, family, n, eps), runs in cells.items():
        if not runs[0]["fires"]:
            for r in runs:
                same = r["cand"] == r["landed"]
                identical += same
                differs += not same
            continue
        landed = float(np.mean([r["landed"]["mae"] for r in runs]))
        cand = float(np.mean([r["cand"]["mae"] for r in runs]))
        median, zero = runs[0]["median"], runs[0]["zero"]
        print(f"| {name} | {family} | {n} | {eps:g} | {landed:.3f} | {cand:.3f} | "
              f"{median:.3f} | {zero:.3f} |")  # fmt: skip
        tot["cells"] += 1
        tot["landed"] += landed
        tot["cand"] += cand
        tot["median"] += median
        tot["zero"] += zero
        tot["landed above zero"] += landed > zero + 1e-9
        tot["cand above zero"] += cand > zero + 1e-9
        tot["newly above zero"] += landed <= zero + 1e-9 and cand > zero + 1e-9
        tot["better"] += cand < landed - 1e-12
        tot["worse"] += cand > landed + 1e-12
    print(f"\n{tot['cells']:.0f} fired cells: summed MAE landed {tot['landed']:.2f}, "
          f"coarse3 {tot['cand']:.2f}, constant median {tot['median']:.2f}, all zeros "
          f"{tot['zero']:.2f}")  # fmt: skip
    print(f"cells above all zeros: landed {tot['landed above zero']:.0f}, coarse3 "
          f"{tot['cand above zero']:.0f} (newly {tot['newly above zero']:.0f}); coarse3 "
          f"better in {tot['better']:.0f}, worse in {tot['worse']:.0f}")  # fmt: skip
    print(f"rule does not fire: {identical} runs identical, {differs} differ")
    a = tot["cand"] < tot["landed"]
    b = (
        tot["cand above zero"] < tot["landed above zero"]
        or tot["landed above zero"] == 0 == (tot["cand above zero"])
    )
    c = differs == 0
    print(f"criterion (a): {'holds' if a else 'FAILS'}; (b): {'holds' if b else 'FAILS'}; "
          f"(c): {'holds' if c else 'FAILS'}")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1].removeprefix("oracle-") not in SETS:
        raise SystemExit(__doc__)
    run(sys.argv[1], sys.argv[2])
