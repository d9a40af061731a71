"""CADR-LDP end to end, in one process: the reference the fleet protocol must match.

Every step is the node-local computation of the CADR-LDP spec (shared/reference/
cadr-ldp.md); only the message passing is replaced by function calls, and the secure sums
of the θ searches by exact sums (what the collector learns from secure aggregation). The
device fleet over MQTT (next step of issue 5) must reproduce these numbers for the same
seeds; until then this is what ``ldpfleet bench cadr`` measures.

Budget (``protocol.cadr_budget``): ε_ndoe = αε/2, ε_lpea = αε/2, ε_dsr = (1-α)ε.

Per run, for method ``ll``/``lh`` (LPEA-LOW/HIGH with privacy):

1. θ: given, or by Deviation (binary search on the secure count of d_i > θ) or by Sum
   (argmin over θ of the secure sum of local errors), searching θ in [1, D] with ε_dsr,
   D the public degree bound (the graph's maximum degree, assumed public). The dp
   pipeline's search is DP (``dp_theta``), and a fleet too small for it takes θ = ⌈√D⌉
   with no search (``protocol.cadr_budget.plan_theta``, "Tiny fleets").
2. NDOE: the collector publishes ``NDOE_PARTS`` ordered partitions of [0, D]; each node
   samples its code with the exponential mechanism at ε_ndoe (score -|d - median(P_j)|,
   sensitivity D).
3. LPEA: ``collector.projection.lpea`` with codes as the sort key, Warner randomized
   response at ε_lpea as the acceptance answer, the debiased yes-count, and the pool of
   all requested neighbours ordered by code; the hard cap holds at both endpoints.
4. DSR: kept degree clipped to [0, θ] plus Laplace(θ/ε_dsr).

Private baselines: an equal-DSR-budget comparison. Every private method releases DSR at
the SAME ε_dsr = (1-α)ε, and every θ search uses that same ε_dsr, so for a given θ all
methods add exactly the same release noise Laplace(θ/ε_dsr): differences between methods
come only from the projection (how many and which edges each node keeps). A baseline does
not get to spend the αε it does not use on a finer release — that would compare budget
splits, not projections (and did: with the whole ε for DSR, RA and ER could beat LL by
nothing but smaller noise). Concretely:

- ``ra`` (RANDOM-ADD, private): negotiates exactly like LPEA — same rounds, Warner RR
  answers at ε_lpea = αε/2, debiased yes-count, hard cap at both endpoints — but with no
  NDOE codes: a node walks its requested neighbours in uniformly random order (constant
  sort key; ``lpea`` shuffles before its stable sort). Its NDOE share αε/2 stays unspent.
- ``er`` (EDGE-REMOVE): the non-private-style local deletion of
  ``collector.projection.edge_remove`` (random node order, each over-full node deletes
  random incident edges down to θ), then DSR at ε_dsr. Its αε stays unspent. (The deletion
  itself is not randomised: a node's kept degree depends on its neighbours' deletions. It
  is the paper's baseline, kept as such; only its DSR release is private.)

- ``clip`` (no negotiation; ``protocol.cadr_budget``, "Method clip"): no NDOE, no LPEA,
  no projection — each node releases ``clip(d_i, 0, θ) + Laplace(θ/ε_dsr)`` of its OWN
  degree, ε_dsr = ε - ε_θ (the whole ε under "paper" or a given θ): NOT the equal-DSR
  comparison above (it spends the αε the others negotiate with on its release), the whole
  view ε-node-LDP. The post-processing knows its kept ratio is 1.

Each run charges a per-node ``PrivacyLedger`` (one total account of ε) with the budget of
every mechanism it actually invokes, at the point of use: ``CadrRun.spent`` maps the
mechanism label (exponential / warner_rr / laplace) to its ε, so ll/lh spend ε, ra
(1-α/2)ε and er (1-α)ε.

Metrics against the true degrees: degree sequence MAE and MSE of the released values,
degree distribution L1 distance after rounding and clipping to [0, θ], kept-edge ratio, θ,
and the mean Thm 3.5 bound (ER has no RR term: |τ_i| + θ/ε_dsr).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
from ldpfleet.collector.degree_postprocess import (
    SearchCounts,
    noise_weight,
    post_process_release,
    score,
    trivial_baselines,
)
from ldpfleet.collector.projection import (
    edge_remove,
    kept_edge_ratio,
    lpea,
)
from ldpfleet.collector.theta_search import (
    deviation_target,
    theta_by_deviation,
    theta_by_sum,
    thm35_bound,
)
from ldpfleet.devices.graphs import Graph
from ldpfleet.protocol.cadr_budget import (
    ACCOUNT,
    PART_NAMES,
    THETA_LABEL,
    CadrBudget,
    known_kept_ratio,
    negotiates,
    plan_theta,
    privacy_claim,
    resolve_degree_bound,
)
from ldpfleet.protocol.cadr_theta_noise import (
    THETA_MECHANISM,
    bucket_count,
    bucket_grid,
    counts_above,
    noise_parties,
    noise_sum,
    theta_from_counts,
)
from ldpfleet.protocol.dsr import dsr_release, post_process_distribution
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.exponential import ExponentialMechanism, ndoe_partitions, ndoe_scores
from ldpfleet.protocol.ledger import PrivacyLedger
from ldpfleet.protocol.rr import WarnerRR

NDOE_PARTS = 16
# the projection methods, compared at an equal DSR budget (module docstring; ``bench
# cadr-sweep`` enumerates these); ``RUN_METHODS`` adds clip, which spends the αε they
# negotiate with on its release (protocol.cadr_budget, "Method clip")
METHODS = ("ll", "lh", "ra", "er")
RUN_METHODS = (*METHODS, "clip")
PIPELINES = ("dp", "paper")


@dataclass(frozen=True)
class CadrRun:
    """One private run's figures; ``spent``: ε charged per mechanism label."""

    method: str
    theta: int
    theta_rounds: int
    mae: float
    mse: float
    distribution_l1: float
    kept_edge_ratio: float
    bound_mean: float
    seconds: float
    spent: dict[str, float] = field(default_factory=dict)
    pipeline: str = "paper"
    histogram_l1: float = 0.0
    histogram_emd: float = 0.0
    raw: dict[str, float] = field(default_factory=dict)
    postprocessed: dict[str, float] = field(default_factory=dict)
    baselines: dict[str, dict[str, float]] = field(default_factory=dict)
    theta_search: dict = field(default_factory=dict)
    degree_bound: int = 0  # the public D (protocol.cadr_budget.resolve_degree_bound)
    degree_bound_source: str = ""
    # who chose θ (protocol.cadr_budget.plan_theta): configured, search or small-fleet
    theta_chosen_by: str = ""
    # what the run's messages would show a collector, part by part (protocol.cadr_budget)
    privacy_claim: dict = field(default_factory=dict)


def public_bound(degrees: np.ndarray, degree_bound: int | None) -> int:
    """The degree bound D: ``degree_bound`` when given, else the graph's maximum degree (at
    least 1; ``private_run`` passes the run's resolved bound)."""
    if degree_bound is not None:
        return int(degree_bound)
    return max(int(degrees.max()), 1)


def sum_of_local_errors(degrees: np.ndarray, theta: int, eps_dsr: float) -> float:
    """``sum_i local_error(d_i, θ, eps_dsr)`` (``collector.theta_search.local_error``):
    the per-device values are computed with the same floating operations, vectorised, and
    added left to right in device order as ``sum`` over the per-device calls would."""
    errors = np.maximum(degrees - theta, 0).astype(float) + theta / eps_dsr
    return float(sum(errors.tolist()))


def choose_theta(
    degrees: np.ndarray,
    rule: str | int,
    eps_dsr: float,
    weight: float = 1.0,
    degree_bound: int | None = None,
) -> tuple[int, int]:
    """θ and the number of secure-sum rounds the search used (0 for a given θ).
    ``weight``: the Deviation search's noise weight (1 = the paper's objective; the
    "dp" pipeline passes ``degree_postprocess.noise_weight(eps_dsr)``)."""
    if isinstance(rule, int):
        return rule, 0
    bound = public_bound(degrees, degree_bound)
    if rule == "auto-dev":
        return theta_by_deviation(
            1, bound, lambda t: int(np.sum(degrees > t)), len(degrees), eps_dsr, weight
        )
    if rule == "auto-sum":
        candidates = range(1, bound + 1)
        total = lambda t: sum_of_local_errors(degrees, t, eps_dsr)  # noqa: E731
        return theta_by_sum(candidates, total), len(candidates)
    raise ValueError(f"theta: {rule!r} is not an integer, auto-sum or auto-dev")


def dp_theta(
    degrees: np.ndarray,
    budget: CadrBudget,
    weight: float,
    rng: np.random.Generator,
    degree_bound: int | None = None,
) -> tuple[int, dict]:
    """The DP θ search (``protocol.cadr_theta_noise``) with every device surviving: the
    bucket counts over ``bucket_grid(D, bucket_count(n, ε_θ))`` plus the sum of the n
    devices' Pólya shares for ``noise_parties(n)`` (drawn at once from ``rng``), θ from the
    noisy counts above. Returns θ and the search's figures (with ``theta_exact``: the same
    rule on the true counts, the non-private optimum; ``thresholds`` and the noisy
    ``bucket_sums``: what the collector opened, the post-processing's prior)."""
    n, bound = len(degrees), public_bound(degrees, degree_bound)
    thresholds = bucket_grid(bound, bucket_count(n, budget.theta))
    exact = np.bincount(
        np.searchsorted(thresholds, degrees, side="left"), minlength=len(thresholds) + 1
    )
    parties = noise_parties(n)
    noisy = exact + noise_sum(rng, n, parties, budget.theta, len(exact))
    target = deviation_target(n, budget.dsr, weight)
    theta = theta_from_counts(thresholds, counts_above(noisy), target, bound)
    return theta, {
        "eps": budget.theta,
        "noise_parties": parties,
        "theta": theta,
        "theta_exact": theta_from_counts(thresholds, counts_above(exact), target, bound),
        "thresholds": list(thresholds),
        "bucket_sums": noisy.tolist(),
    }


def ndoe_codes(
    degrees: np.ndarray,
    eps_ndoe: float,
    rng: np.random.Generator,
    degree_bound: int | None = None,
) -> np.ndarray:
    """Every node's NDOE code (one exponential-mechanism draw each, in node order).

    Scores depend on the degree only, so they are computed once per distinct degree."""
    bound = public_bound(degrees, degree_bound)
    partitions = ndoe_partitions(0, bound, min(NDOE_PARTS, bound + 1))
    mechanism = ExponentialMechanism(eps_ndoe, bound)
    scores: dict[int, np.ndarray] = {}
    codes = np.empty(len(degrees), dtype=np.int64)
    for i, d in enumerate(np.minimum(degrees, bound).tolist()):  # a device clips to D
        if d not in scores:
            scores[d] = ndoe_scores(d, partitions)
        codes[i] = mechanism.sample(scores[d], rng)
    return codes


def negotiate(
    graph: Graph,
    theta: int,
    rng: np.random.Generator,
    rr: WarnerRR,
    *,
    order: str = "low",
    codes: np.ndarray | None = None,
) -> tuple[Graph, np.ndarray]:
    """Private LPEA negotiation: Warner RR answers, debiased counts, the pool of all
    requested neighbours ordered by ``codes`` (``None``: uniformly random order, the
    private RANDOM-ADD). Returns the kept graph and, per node, the most neighbours it
    asked in one request (``|U1|`` of the Thm 3.5 bound)."""
    asked = np.zeros(graph.n)
    em1 = math.expm1(rr.eps)

    def accept(i, candidates, kept_deg, theta_, rng_):
        asked[i] = max(asked[i], len(candidates))
        return rr.respond(kept_deg < theta_, rng_)

    def count(answers: np.ndarray) -> float:
        # WarnerRR.debias_count's arithmetic, without its per-call validation
        # (0 <= yes <= asked by construction); the same floating operations in the same order
        return (int(answers.sum()) * (em1 + 2.0) - len(answers)) / em1

    if codes is None:

        def key(i: int, candidates: np.ndarray) -> np.ndarray:
            return np.zeros(len(candidates))

    else:

        def key(i: int, candidates: np.ndarray) -> np.ndarray:
            return codes[candidates]

    kept = lpea(graph, theta, rng, order=order, key=key, accept=accept, count=count, pool="all")
    return kept, asked


def private_run(
    graph: Graph,
    method: str,
    theta_rule: str | int,
    eps: float,
    alpha: float,
    seed: int,
    pipeline: str = "paper",
    degree_bound: int | str = "auto",
) -> CadrRun:
    """One CADR-LDP run (see the module docstring). ``pipeline = "paper"``: the paper's
    θ objective, and the raw DSR values are the release (``mae``); ``"dp"``: θ by
    Deviation aims at the post-processed error and the release is the post-processed
    one (``collector.degree_postprocess``: posterior medians and the consistent
    histogram). Both report ``raw``, ``postprocessed`` and the trivial ``baselines``.
    ``degree_bound``: ``[cadr] degree_bound`` (``protocol.cadr_budget.
    resolve_degree_bound``; "auto": ``n - 1`` under "dp", the graph's maximum under
    "paper"). Under "dp", ``"auto-dev"`` on a fleet too small for the θ search's counts
    (``protocol.cadr_budget.plan_theta``: ``n < √K σ``) searches nothing: θ = ⌈√D⌉, the
    split of a given θ (``CadrRun.theta_chosen_by`` = ``"small-fleet"``)."""
    _check_run(method, theta_rule, pipeline)
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    degrees = graph.degrees()
    bound, bound_source = resolve_degree_bound(
        degree_bound, pipeline, len(degrees), int(degrees.max()) if degrees.size else 0
    )
    # a fleet too small for its θ search's counts takes θ = ⌈√D⌉ and searches nothing
    plan = plan_theta(theta_rule, pipeline, eps, alpha, graph.n, bound)
    theta_rule = plan.rule
    budget = CadrBudget.for_pipeline(eps, alpha, pipeline, plan.searched, graph.n, method)
    charges = _Charges(budget.open_ledger("node"))
    eps_dsr = budget.dsr
    weight = noise_weight(eps_dsr) if pipeline == "dp" else 1.0
    search: dict = {}
    if budget.theta > 0:  # the DP θ search, its noise from its own generator
        charges.charge(THETA_LABEL, budget.theta)
        theta, search = dp_theta(degrees, budget, weight, np.random.default_rng([seed, 1]), bound)
        rounds = 1
    else:
        theta, rounds = choose_theta(degrees, theta_rule, eps_dsr, weight, bound)
    kept_deg, bound_terms = _projected(graph, degrees, method, theta, budget, rng, bound, charges)
    charges.charge("laplace", eps_dsr)
    released = np.asarray(dsr_release(kept_deg, theta, eps_dsr, rng), dtype=float)
    ratio = known_kept_ratio(method)
    raw, pp = _release_scores(degrees, released, theta, eps_dsr, search, bound, ratio)
    final = pp if pipeline == "dp" else raw
    return CadrRun(
        method=method,
        theta=theta,
        theta_rounds=rounds,
        mae=final["mae"],
        mse=final["mse"],
        distribution_l1=final["histogram_l1"],
        kept_edge_ratio=kept_edge_ratio(degrees, kept_deg),
        bound_mean=float(np.mean(bound_terms)),
        seconds=time.perf_counter() - started,
        spent=charges.spent,
        pipeline=pipeline,
        histogram_l1=final["histogram_l1"],
        histogram_emd=final["histogram_emd"],
        raw=raw,
        postprocessed=pp,
        baselines=trivial_baselines(degrees),
        theta_search=search,
        degree_bound=bound,
        degree_bound_source=bound_source,
        theta_chosen_by=plan.chosen_by,
        privacy_claim=privacy_claim(
            budget,
            method,
            theta_searched=plan.searched,
            degree_bound=(bound, bound_source),
            small_fleet=plan.small_fleet,
        ),
    )


def _check_run(method: str, theta_rule: str | int, pipeline: str) -> None:
    """Refuse an unknown method or pipeline, and the dp pipeline with the Sum search."""
    if method not in RUN_METHODS:
        raise ParameterError(
            f"{method!r} is not one of {', '.join(RUN_METHODS)}",
            field="method", limit=", ".join(RUN_METHODS), value=method,
        )  # fmt: skip
    if pipeline not in PIPELINES:
        raise ParameterError(
            f"{pipeline!r} is not one of {', '.join(PIPELINES)}",
            field="pipeline", limit=", ".join(PIPELINES), value=pipeline,
        )  # fmt: skip
    if pipeline == "dp" and theta_rule == "auto-sum":
        raise ParameterError(
            "the dp pipeline searches θ by Deviation (auto-dev) or takes a given θ; "
            '"auto-sum" needs pipeline "paper"',
            field="theta", limit='auto-dev or an integer >= 1 under pipeline "dp"',
            value=theta_rule,
        )  # fmt: skip


@dataclass
class _Charges:
    """A run's node ledger and what it charged per mechanism label (``CadrRun.spent``)."""

    ledger: PrivacyLedger
    spent: dict[str, float] = field(default_factory=dict)

    def charge(self, label: str, eps_used: float) -> None:
        """Charge ``eps_used`` to the node account under ``label``."""
        self.ledger.charge(ACCOUNT, eps_used, mechanism=label)
        self.spent[label] = self.spent.get(label, 0.0) + eps_used


def _projected(
    graph: Graph, degrees: np.ndarray, method: str, theta: int, budget: CadrBudget,
    rng: np.random.Generator, bound: int, charges: _Charges,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The kept degrees after the projection to degree ≤ θ (NDOE codes and the LPEA
    negotiation for ll, lh and ra; EDGE-REMOVE for er; clip: no projection, ``min(d, θ)``,
    drawing nothing) and each node's Thm 3.5 bound term (er and clip: ``|d - min(d, θ)| +
    θ / ε_dsr``, no RR term)."""
    eps_dsr = budget.dsr
    clipped = np.minimum(degrees, theta)
    if not negotiates(method):  # clip: each device's own degree, clipped by DSR
        return clipped, np.abs(degrees - clipped) + theta / eps_dsr
    if method == "er":
        kept = edge_remove(graph, theta, rng)
        return kept.degrees(), np.abs(degrees - clipped) + theta / eps_dsr
    codes = None  # ra: no NDOE codes, candidates in uniformly random order
    if method in ("ll", "lh"):
        codes = ndoe_codes(degrees, budget.ndoe, rng, bound)
        charges.charge("exponential", budget.ndoe)
    rr = WarnerRR(budget.lpea)
    charges.charge("warner_rr", rr.eps)
    order = "high" if method == "lh" else "low"
    kept, asked = negotiate(graph, theta, rng, rr, order=order, codes=codes)
    terms = [
        thm35_bound(int(d), theta, int(a), rr.eps, eps_dsr)
        for d, a in zip(degrees, asked, strict=True)
    ]
    return kept.degrees(), np.array(terms)


def _release_scores(
    degrees: np.ndarray, released: np.ndarray, theta: int, eps_dsr: float, search: dict,
    bound: int, ratio: float | None = None,
) -> tuple[dict, dict]:  # fmt: skip
    """Scores of the raw release (its values and clipped histogram) and of the
    post-processed one (``degree_postprocess.post_process_release``: the dp θ search's
    noisy counts, when there was one, as the prior; ``ratio``: the known kept ratio,
    clip's 1, else None: estimated)."""
    histogram = post_process_distribution(released, theta)
    raw = score(degrees, released, histogram)
    counts = None
    if search:  # the dp pipeline's θ search: its noisy counts are a prior on the degrees
        counts = SearchCounts(
            search["bucket_sums"], search["thresholds"], bound, len(degrees), search["eps"],
            search["noise_parties"],
        )  # fmt: skip
    post = post_process_release(released, theta, eps_dsr, counts, ratio)
    return raw, score(degrees, post.estimates, post.histogram)


def summarise(runs: list[CadrRun]) -> dict:
    """Means over runs (θ: the values seen; ``spent``: the first run's, the same for all)."""
    out = {"runs": len(runs), "theta": sorted({r.theta for r in runs})}
    for name in ("mae", "mse", "distribution_l1", "kept_edge_ratio", "bound_mean", "seconds"):
        out[name] = float(np.mean([getattr(r, name) for r in runs]))
    out["theta_rounds"] = runs[0].theta_rounds if runs else 0
    # by budget part (theta, ndoe, lpea, dsr: the fleet's keys); by mechanism label beside it
    out["spent"] = {PART_NAMES[k]: v for k, v in runs[0].spent.items()} if runs else {}
    out["spent_by_mechanism"] = dict(runs[0].spent) if runs else {}
    if runs:
        out["pipeline"] = runs[0].pipeline
        out["degree_bound"] = runs[0].degree_bound
        out["degree_bound_source"] = runs[0].degree_bound_source
        out["theta_chosen_by"] = runs[0].theta_chosen_by
        out["privacy_claim"] = runs[0].privacy_claim  # the same split and rule every seed
        for name in ("histogram_l1", "histogram_emd"):
            out[name] = float(np.mean([getattr(r, name) for r in runs]))
        for name in ("raw", "postprocessed"):
            out[name] = _mean_dicts([getattr(r, name) for r in runs])
        out["baselines"] = dict(runs[0].baselines)  # they do not depend on the run
        if runs[0].theta_search:
            first = runs[0].theta_search
            out["theta_search"] = {
                "eps": first["eps"],
                "mechanism": THETA_MECHANISM,
                "noise_parties": first["noise_parties"],
                "theta_exact": first["theta_exact"],
                "thetas": [r.theta_search["theta"] for r in runs],
            }
    return out


def _mean_dicts(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: float(np.mean([row[key] for row in rows])) for key in rows[0]} if rows else {}


def as_dict(run: CadrRun) -> dict:
    """A JSON-ready run."""
    return asdict(run)
