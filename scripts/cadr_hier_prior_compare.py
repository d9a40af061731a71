"""Two-level (hierarchical) θ-search counts for the dp pipeline's degree prior (issue 20,
brief "hier", 2026-12-03).

``python scripts/cadr_hier_prior_compare.py --set accept|degenerate --eps 0.5,1,2,3,5
--seeds 0,1,2 --variants old,h4f50``: per graph, ε and seed one in-process
``private_run(g, "ll", "auto-dev", ε, 0.1, seed, pipeline="dp")`` per variant:

- ``old``: the pipeline as committed (one-hot over ``bucket_grid(D, bucket_count(n,
  ε_θ))``, two-sided geometric at ε_θ per entry);
- ``hS fF``: the device's vector is the concatenation of two one-hot vectors, the coarse
  grid as committed and a fine grid that splits every coarse bucket into ``min(S, width)``
  equal integer parts (nested: every coarse threshold is a fine one). L1 sensitivity 2
  per level; the coarse level is noised at ``(1 - F/100) ε_θ``, the fine one at ``F/100
  ε_θ`` (sequential composition: ε_θ in all). The collector combines the levels by
  weighted least squares (Hay, Rastogi, Miklau & Suciu, "Boosting the accuracy of
  differentially private histograms through consistency", VLDB 2010: the minimum-variance
  estimate consistent with the tree): inside coarse bucket ``j`` with ``s`` children,
  ``x_i = f_i + (c_j - Σ f) · v_f / (v_c + s v_f)`` (``v`` the noise variances, public);
  θ and the prior are then computed from the fine estimates exactly as the pipeline does
  from its bucket sums (``theta_from_counts``, ``degree_prior``);
- ``hS fF gG``: as ``hS fF``, but a coarse bucket keeps its fine split only where its
  combined mass exceeds ``G · sd_f · sqrt(s)`` (``sd_f`` the fine level's noise sd, ``s``
  its children); elsewhere its children are merged back (their summed estimate) — the
  fine noise stays out of the prior where there is little mass (a function of the DP
  outputs and public n, ε only);
- ``aS fF gG``: two secure sums (``adaptive_theta``): round 1 the committed one-hot at
  ``(1 - F/100) ε_θ``, round 2 the grid whose round-1 buckets above ``G`` noise sds are
  cut into ``S`` parts, at ``F/100 ε_θ``; combined as above.

The variants' noise is drawn from a second generator (seeded from the run's seed), after
the committed draw from the run's own generator, so the DSR draws are the same in every
variant whenever θ is (paired). The simulation draws the per-level noise at once
(``noise_sum``), the same law as the devices' Pólya shares.

Prints one JSON line per run in the format of ``scripts/cadr_bucket_grid_compare.py``;
``--summarise FILE...`` prints the table of ``cadr_bucket_grid_compare.py`` and the cells at
or below the constant median; ``--baselines`` instead a table with the constant-median and
all-zero baselines. Sets: ``accept`` (ego-Facebook and the held-out half of
``cadr_bucket_grid_compare.py``, wiki-Vote included), ``degenerate`` (the brief's degenerate
graphs: the variants were chosen on it), ``degenerate-held`` (fresh graphs of the same
kinds, run once after choosing). Results: docs/cadr-private.md, "Two-level θ-search
counts".
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import networkx as nx
import numpy as np
from ldpfleet.collector import cadr_reference
from ldpfleet.collector.theta_search import deviation_target
from ldpfleet.protocol.cadr_theta_noise import (
    bucket_count,
    bucket_grid,
    counts_above,
    noise_parties,
    noise_sum,
    share_ratio,
    theta_from_counts,
)

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cadr_bucket_grid_compare import HELD as GRID_HELD
from cadr_bucket_grid_compare import TUNE as GRID_TUNE
from cadr_bucket_grid_compare import _cliques, _nx, print_rows, summarise

ACCEPT = {"facebook": GRID_TUNE["facebook"], **GRID_HELD}
DEGENERATE = {
    "rr-400-d30": _nx("rr30", lambda: nx.random_regular_graph(30, 400, seed=11)),
    "rr-2000-d8": GRID_HELD["rr-2000-d8"],
    "rr-1000-d3": _nx("rr3", lambda: nx.random_regular_graph(3, 1000, seed=31)),
    "cliques-5x20": _nx("cl", lambda: _cliques([20] * 5)),
    "cliques-10-40-60": _nx("cl2", lambda: _cliques([10, 40, 60])),
    "k50": _nx("k50", lambda: nx.complete_graph(50)),
    "cliques-30-60": _nx("cl3", lambda: _cliques([30, 60])),
}

# fresh graphs of the same kinds, looked at once, after choosing the variants
DEGENERATE_HELD = {
    "rr-600-d20": _nx("rr20", lambda: nx.random_regular_graph(20, 600, seed=41)),
    "rr-300-d12": _nx("rr12", lambda: nx.random_regular_graph(12, 300, seed=42)),
    "cliques-6x25": _nx("cl4", lambda: _cliques([25] * 6)),
    "cliques-15-45-70": _nx("cl5", lambda: _cliques([15, 45, 70])),
    "k80": _nx("k80", lambda: nx.complete_graph(80)),
    "cliques-40-80": _nx("cl6", lambda: _cliques([40, 80])),
}


def fine_grid(coarse: list[int], bound: int, split: int) -> tuple[list[int], list[int]]:
    """The fine thresholds (every coarse bucket ``(lo, hi]`` cut into ``min(split,
    width)`` equal integer parts) and, per fine bucket, the index of its coarse bucket."""
    edges = [-1, *coarse, bound]
    fine: list[int] = []
    parent: list[int] = []
    for j in range(len(edges) - 1):
        lo, hi = edges[j], edges[j + 1]
        parts = max(1, min(split, hi - lo))
        cuts = sorted({lo + round((hi - lo) * i / parts) for i in range(1, parts)})
        cuts = [c for c in cuts if lo < c < hi]
        parent += [j] * (len(cuts) + 1)
        fine += cuts
        if j < len(coarse):
            fine.append(coarse[j])
    return fine, parent


def geometric_variance(eps: float, survivors: int, parties: int) -> float:
    """Variance of ``NB(s/m, 1 - a) - NB(s/m, 1 - a)``: ``2 (s/m) a / (1 - a)^2``."""
    a = float(share_ratio(eps))
    return 2.0 * survivors / parties * a / (1.0 - a) ** 2


def combine(coarse: np.ndarray, fine: np.ndarray, parent: list[int], vc: float, vf: float):
    """Weighted least squares over the two-level tree (Hay et al. 2010): the fine counts
    made consistent with their coarse parents."""
    par = np.asarray(parent)
    out = fine.astype(float).copy()
    for j in range(coarse.size):
        idx = np.flatnonzero(par == j)
        gap = coarse[j] - fine[idx].sum()
        out[idx] += gap * vf / (vc + idx.size * vf)
    return out


def gated(coarse_t, fine_t, parent, x, sd):
    """Keep a coarse bucket's fine split only where its combined mass exceeds ``gate``
    fine-noise sds per child (``gate · sd · sqrt(s)``); elsewhere merge its children back
    into the coarse bucket (their summed estimate): the noise of fine buckets where there
    is little mass stays out of the prior."""
    par = np.asarray(parent)
    edges_f = [*fine_t]
    keep_t = set(coarse_t)
    sums = []
    for j in range(len(coarse_t) + 1):
        idx = np.flatnonzero(par == j)
        total = float(x[idx].sum())
        if idx.size > 1 and total > sd * np.sqrt(idx.size):
            keep_t |= {edges_f[i] for i in idx[:-1]}  # the cuts inside bucket j
            sums += list(x[idx])
        else:
            sums.append(total)
    return sorted(keep_t), np.asarray(sums)


def hier_theta(split: int, fine_share: float, gate: float | None = None):
    """A ``dp_theta`` replacement: the committed draw (so the run's generator moves as
    before), then the two-level sums from a second generator; θ from the combination."""

    def dp_theta(degrees, budget, weight, rng, degree_bound=None):
        theta_old, search_old = REAL_DP_THETA(degrees, budget, weight, rng, degree_bound)
        n, bound = len(degrees), cadr_reference.public_bound(degrees, degree_bound)
        coarse_t = bucket_grid(bound, bucket_count(n, budget.theta))
        fine_t, parent = fine_grid(coarse_t, bound, split)
        rng2 = np.random.default_rng([SEED[0], 7919])
        parties = noise_parties(n)
        eps_c, eps_f = (1 - fine_share) * budget.theta, fine_share * budget.theta
        exact_c = np.bincount(np.searchsorted(coarse_t, degrees), minlength=len(coarse_t) + 1)
        exact_f = np.bincount(np.searchsorted(fine_t, degrees), minlength=len(fine_t) + 1)
        noisy_c = exact_c + noise_sum(rng2, n, parties, eps_c, exact_c.size)
        noisy_f = exact_f + noise_sum(rng2, n, parties, eps_f, exact_f.size)
        vc, vf = geometric_variance(eps_c, n, parties), geometric_variance(eps_f, n, parties)
        x = combine(noisy_c, noisy_f, parent, vc, vf)
        if gate is not None:
            fine_t, x = gated(coarse_t, fine_t, parent, x, gate * np.sqrt(vf))
        return _theta_and_search(x, fine_t, n, bound, budget, weight, search_old, theta_old)

    return dp_theta


def _theta_and_search(x, fine_t, n, bound, budget, weight, search_old, theta_old):
    """θ from the combined counts ``x`` over ``fine_t`` and the search record (both
    candidates end alike)."""
    target = deviation_target(n, budget.dsr, weight)
    theta = theta_from_counts(fine_t, counts_above(x), target, bound)
    return theta, {
        **search_old,
        "theta": theta,
        "thresholds": list(fine_t),
        "bucket_sums": x.tolist(),
        "theta_old": theta_old,
    }


def adaptive_theta(split: int, fine_share: float, gate: float):
    """Candidate (c), two secure sums: round 1 the committed one-hot at ``(1 - F) ε_θ``;
    round 2 a one-hot over the grid whose buckets with a round-1 count above ``G`` noise
    sds (and width > 1) are cut into ``min(S, width)`` parts, at ``F ε_θ``; the rounds
    combined by the same weighted least squares (an unsplit bucket: the inverse-variance
    mean of its two estimates). Round 2's grid is a function of round 1's DP output."""

    def dp_theta(degrees, budget, weight, rng, degree_bound=None):
        theta_old, search_old = REAL_DP_THETA(degrees, budget, weight, rng, degree_bound)
        n, bound = len(degrees), cadr_reference.public_bound(degrees, degree_bound)
        coarse_t = bucket_grid(bound, bucket_count(n, budget.theta))
        rng2 = np.random.default_rng([SEED[0], 7919])
        parties = noise_parties(n)
        eps_c, eps_f = (1 - fine_share) * budget.theta, fine_share * budget.theta
        vc, vf = geometric_variance(eps_c, n, parties), geometric_variance(eps_f, n, parties)
        exact_c = np.bincount(np.searchsorted(coarse_t, degrees), minlength=len(coarse_t) + 1)
        noisy_c = exact_c + noise_sum(rng2, n, parties, eps_c, exact_c.size)
        all_t, all_parent = fine_grid(coarse_t, bound, split)
        heavy = noisy_c > gate * np.sqrt(vc)
        keep = set(coarse_t) | {
            t for t, j in zip(all_t, all_parent, strict=False) if heavy[j] and t not in coarse_t
        }
        fine_t = sorted(keep)
        edges = [-1, *coarse_t, bound]
        parent = [int(np.searchsorted(edges, lo + 1, side="left")) - 1 for lo in [-1, *fine_t]]
        exact_f = np.bincount(np.searchsorted(fine_t, degrees), minlength=len(fine_t) + 1)
        noisy_f = exact_f + noise_sum(rng2, n, parties, eps_f, exact_f.size)
        x = combine(noisy_c, noisy_f, parent, vc, vf)
        return _theta_and_search(x, fine_t, n, bound, budget, weight, search_old, theta_old)

    return dp_theta


REAL_DP_THETA = cadr_reference.dp_theta
SEED = [0]


def run_one(graph, variant: str, eps: float, seed: int) -> dict:
    SEED[0] = seed
    if variant.startswith("a"):
        s, _, f = variant[1:].partition("f")
        f, _, g = f.partition("g")
        cadr_reference.dp_theta = adaptive_theta(int(s), float(f) / 100, float(g))
    elif variant != "old":
        s, _, f = variant[1:].partition("f")
        f, _, g = f.partition("g")
        cadr_reference.dp_theta = hier_theta(int(s), float(f) / 100, float(g) if g else None)
    started = time.process_time()
    try:
        run = cadr_reference.private_run(graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
    finally:
        cadr_reference.dp_theta = REAL_DP_THETA
    return {
        "variant": variant,
        "eps": eps,
        "seed": seed,
        "mae": run.mae,
        "hist_l1": run.histogram_l1,
        "hist_emd": run.histogram_emd,
        "theta": run.theta,
        "median_mae": run.baselines["constant_median_oracle"]["mae"],
        "zero_mae": run.baselines["all_zero"]["mae"],
        "buckets": len(run.theta_search["thresholds"]) + 1,
        "cpu": round(time.process_time() - started, 3),
    }


def below_median(paths: list[str], variants: tuple[str, ...]) -> str:
    """A table per cell (graph, ε; means over seeds): MAE per variant with the
    constant-true-median and all-zero baselines, then per variant the cells at or below
    the constant median."""
    rows = []
    for path in paths:
        with open(path) as lines:
            rows += [json.loads(line) for line in lines]
    cells: dict = {}
    for r in rows:
        cells.setdefault((r["graph"], r["eps"]), {}).setdefault(r["variant"], []).append(r)
    out = [
        "| graph | ε | "
        + " | ".join(f"MAE {v}" for v in variants)
        + " | constant true median | all zero | "
        + " | ".join(f"L1 {v}" for v in variants)
        + " |",
        "|---|---|" + "---|" * (2 * len(variants) + 2),
    ]
    for (graph, eps), by in cells.items():
        if not all(v in by for v in variants):
            continue
        first = by[variants[0]][0]
        out.append(
            f"| {graph} | {eps:g} | "
            + " | ".join(f"{np.mean([r['mae'] for r in by[v]]):.3f}" for v in variants)
            + f" | {first['median_mae']:.3f} | {first['zero_mae']:.2f} | "
            + " | ".join(f"{np.mean([r['hist_l1'] for r in by[v]]):.3f}" for v in variants)
            + " |"
        )
    out.append("")
    for v in variants:
        ok = tot = 0
        for by in cells.values():
            if all(w in by for w in variants):
                tot += 1
                mae = np.mean([r["mae"] for r in by[v]])
                ok += mae <= by[v][0]["median_mae"] + 1e-9
        out.append(f"{v}: cells at or below the constant median {ok} / {tot}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument(
        "--set", default="degenerate", choices=["accept", "degenerate", "degenerate-held"]
    )
    p.add_argument("--graphs", default="")
    p.add_argument("--eps", default="0.5,1,2,3,5")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--variants", default="old,h4f50")
    p.add_argument("--summarise", nargs="*", help="JSON-lines files: print the table only")
    p.add_argument(
        "--baselines",
        action="store_true",
        help="with --summarise: the table with the constant-median and all-zero baselines only",
    )
    a = p.parse_args(argv)
    variants = tuple(a.variants.split(","))
    if a.summarise:
        if not a.baselines:
            print(summarise(a.summarise, variants))
        print(below_median(a.summarise, variants))
        return 0
    table = {
        "accept": ACCEPT,
        "degenerate": DEGENERATE,
        "degenerate-held": DEGENERATE_HELD,
    }[a.set]
    names = a.graphs.split(",") if a.graphs else list(table)
    print_rows(
        table,
        names,
        a.eps,
        a.seeds,
        lambda graph, eps, seed: [run_one(graph, v, eps, seed) for v in variants],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
