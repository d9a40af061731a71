"""CADR-LDP end to end, in one process: the reference the fleet protocol must match.

Every step is the node-local computation of the CADR-LDP spec (shared/reference/
cadr-ldp.md); only the message passing is replaced by function calls, and the secure sums
of the θ searches by exact sums (what the collector learns from secure aggregation). The
device fleet over MQTT (next step of issue 5) must reproduce these numbers for the same
seeds; until then this is what ``ldpfleet bench cadr`` measures.

Per run, for method ``ll``/``lh`` (LPEA-LOW/HIGH with privacy):

1. Budget: ε_ndoe = αε/2, ε_lpea = αε/2, ε_dsr = (1-α)ε (``protocol.cadr_budget``).
2. θ: given, or by Deviation (binary search on the secure count of d_i > θ) or by Sum
   (argmin over θ of the secure sum of local errors), searching θ in [1, D], with D the
   public degree bound (the graph's maximum degree, assumed public).
3. NDOE: the collector publishes ``NDOE_PARTS`` ordered partitions of [0, D]; each node
   samples its code with the exponential mechanism at ε_ndoe (score -|d - median(P_j)|,
   sensitivity D).
4. LPEA: ``collector.projection.lpea`` with codes as the sort key, Warner randomized
   response at ε_lpea as the acceptance answer, the debiased yes-count, and the pool of
   all requested neighbours ordered by code; the hard cap holds at both endpoints.
5. DSR: kept degree clipped to [0, θ] plus Laplace(θ/ε_dsr).

``ra`` and ``er`` (private baselines): the non-private projection, then DSR with the
whole ε (they spend nothing on NDOE/LPEA). Metrics against the true degrees: degree
sequence MAE and MSE of the released values, degree distribution L1 distance after
rounding and clipping to [0, θ], kept-edge ratio, θ, and the mean Thm 3.5 bound.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from collector.projection import (
    degree_distribution_mae,
    edge_remove,
    kept_edge_ratio,
    lpea,
    random_add,
)
from collector.theta_search import local_error, theta_by_deviation, theta_by_sum, thm35_bound
from devices.graphs import Graph
from protocol.cadr_budget import CadrBudget
from protocol.dsr import dsr_release, post_process_distribution
from protocol.exponential import ExponentialMechanism, ndoe_partitions, ndoe_scores
from protocol.rr import WarnerRR

NDOE_PARTS = 16
METHODS = ("ll", "lh", "ra", "er")


@dataclass(frozen=True)
class CadrRun:
    """One private run's figures."""

    method: str
    theta: int
    theta_rounds: int
    mae: float
    mse: float
    distribution_l1: float
    kept_edge_ratio: float
    bound_mean: float
    seconds: float


def choose_theta(degrees: np.ndarray, rule: str | int, eps_dsr: float) -> tuple[int, int]:
    """θ and the number of secure-sum rounds the search used (0 for a given θ)."""
    if isinstance(rule, int):
        return rule, 0
    bound = int(degrees.max())
    if rule == "auto-dev":
        return theta_by_deviation(
            1, bound, lambda t: int(np.sum(degrees > t)), len(degrees), eps_dsr
        )
    if rule == "auto-sum":
        candidates = range(1, bound + 1)
        total = lambda t: float(sum(local_error(int(d), t, eps_dsr) for d in degrees))  # noqa: E731
        return theta_by_sum(candidates, total), len(candidates)
    raise ValueError(f"theta: {rule!r} is not an integer, auto-sum or auto-dev")


def private_run(
    graph: Graph, method: str, theta_rule: str | int, eps: float, alpha: float, seed: int
) -> CadrRun:
    """One CADR-LDP run (see the module docstring)."""
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    budget = CadrBudget(eps, alpha)
    degrees = graph.degrees()
    private = method in ("ll", "lh")
    eps_dsr = budget.dsr if private else eps
    theta, rounds = choose_theta(degrees, theta_rule, eps_dsr)
    bound_terms = np.zeros(graph.n)
    if private:
        partitions = ndoe_partitions(0, max(int(degrees.max()), 1), NDOE_PARTS)
        mechanism = ExponentialMechanism(budget.ndoe, max(int(degrees.max()), 1))
        codes = np.array([mechanism.sample(ndoe_scores(int(d), partitions), rng) for d in degrees])
        rr = WarnerRR(budget.lpea)
        asked = np.zeros(graph.n)

        def accept(i, candidates, kept_deg, theta_, rng_):
            asked[i] = max(asked[i], len(candidates))
            return rr.respond(kept_deg < theta_, rng_)

        kept = lpea(
            graph,
            theta,
            rng,
            order="low" if method == "ll" else "high",
            key=lambda i, candidates: codes[candidates],
            accept=accept,
            count=lambda answers: float(rr.debias_count(int(answers.sum()), len(answers))),
            pool="all",
        )
        bound_terms = np.array(
            [
                thm35_bound(int(d), theta, int(a), budget.lpea, eps_dsr)
                for d, a in zip(degrees, asked, strict=True)
            ]
        )
    else:
        kept = (random_add if method == "ra" else edge_remove)(graph, theta, rng)
        bound_terms = np.abs(degrees - np.minimum(degrees, theta)) + theta / eps_dsr
    kept_deg = kept.degrees()
    released = np.asarray(dsr_release(kept_deg, theta, eps_dsr, rng), dtype=float)
    histogram = post_process_distribution(released, theta)
    rounded = np.repeat(np.arange(theta + 1), histogram)
    return CadrRun(
        method=method,
        theta=theta,
        theta_rounds=rounds,
        mae=float(np.mean(np.abs(degrees - released))),
        mse=float(np.mean((degrees - released) ** 2)),
        distribution_l1=degree_distribution_mae(degrees, rounded, reduce="sum"),
        kept_edge_ratio=kept_edge_ratio(degrees, kept_deg),
        bound_mean=float(np.mean(bound_terms)),
        seconds=time.perf_counter() - started,
    )


def summarise(runs: list[CadrRun]) -> dict:
    """Means over runs (θ: the values seen)."""
    out = {"runs": len(runs), "theta": sorted({r.theta for r in runs})}
    for name in ("mae", "mse", "distribution_l1", "kept_edge_ratio", "bound_mean", "seconds"):
        out[name] = float(np.mean([getattr(r, name) for r in runs]))
    out["theta_rounds"] = runs[0].theta_rounds if runs else 0
    return out


def as_dict(run: CadrRun) -> dict:
    """A JSON-ready run."""
    return asdict(run)
