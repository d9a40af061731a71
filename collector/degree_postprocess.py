"""Post-processing of the DSR degree release at the collector (no extra budget).

DSR (``protocol.dsr``; Alg. 6 of the CADR-LDP spec, ``shared/reference/cadr-ldp.md``)
releases ``y_i = k_i + Lap(b)`` per node, ``k_i = clip(kept degree, 0, θ)`` an integer in
``0..θ`` and ``b = θ / eps_dsr`` public. Everything here reads only the ``y_i``, θ and b,
so by the post-processing property of differential privacy (Dwork & Roth, "The Algorithmic
Foundations of Differential Privacy", 2014, Prop. 2.1) it costs no budget.

1. ``deconvolve``: the degree distribution ``π`` over ``0..θ`` maximising the likelihood
   ``Π_i Σ_k π_k Lap(y_i - k; b)`` — the non-parametric maximum likelihood estimate of a
   mixing distribution (Kiefer & Wolfowitz, Ann. Math. Stat. 1956) computed by EM, which
   for a known convolution kernel is the Richardson-Lucy iteration (Richardson, JOSA 1972;
   Lucy, AJ 1974): ``π ← mean_i posterior_i`` with ``posterior_i(k) ∝ π_k exp(-|y_i - k|/b)``.
   Each step keeps ``π ≥ 0`` and ``Σ π = 1`` and never lowers the likelihood. It starts
   from the uniform distribution and runs a fixed ``ITERATIONS = 100`` steps —
   deterministic, and early stopping is the iteration's regularisation: the exact NPMLE is
   a few spikes, and run to convergence (3,000 steps) it raised the per-node MAE on
   ego-Facebook at eps = 1 from 30.7-31.1 (100 steps, seeds 0-2) to 31.8-33.1, above the
   constant median; 30 steps under-fit (wiki-Vote at eps = 0.5: 27.6 vs 27.0), 300 were
   within ±0.4 of 100 everywhere measured (eps 0.5 .. 5, both graphs).
2. ``posterior_medians``: per node the median of ``posterior_i`` under the estimated π (the
   Bayes estimate under absolute loss, so it minimises the expected per-node MAE if π were
   the true distribution of the ``k_i``): the smallest ``k`` with posterior CDF ``≥ 1/2``.
3. ``consistent_histogram``: ``n π`` rounded to integers that are non-negative and sum to
   exactly ``n`` (largest remainders; ties to the lower degree).

With the DP θ search's counts (pipeline "dp", issue 20): a prior on the TRUE degrees.
The θ search already released, ε_θ-DP, noisy counts of the true degrees per bucket of its
grid. Steps 1-2 above estimate the distribution of the clipped KEPT degrees ``k_i`` and
score them against the true ``d_i``: LPEA keeps fewer edges than ``min(d_i, θ)``, so the
median of the ``k_i`` lies below that of the ``d_i``, and at small ε the 100 EM steps
leave the estimate near its uniform start (the release was then above the constant-median
baseline: wiki-Vote at ε = 0.5, 27.4 against 26.75). ``degree_prior`` turns the bucket
counts into a distribution over ``0..D`` (noisy counts first made consistent with the
public number of devices — the least-squares projection onto ``Σ = n``, which removes the
noise's common part (opt-in, NOT used by the pipelines: with ``eps_theta=`` and
``parties=``, buckets below 3 noise sds are first read as empty when together they hold
no more than the noise's mass, ``collector.bucket_denoise``; it failed its acceptance
test, docs/cadr-private.md "Denoising the bucket counts") — then clipped at 0 and spread
over each bucket's degrees) and
``posterior_degree_medians`` releases per node the median of ``P(d | y_i) ∝ prior(d) ·
exp(-|y_i - r · min(d, θ)| / b)``: the model says a node of degree ``d`` keeps about ``r ·
min(d, θ)`` edges, with ``r = mean(y) / E_prior[min(d, θ)]`` (``kept_ratio``: ``mean(y)``
is an unbiased estimate of the mean kept degree, the Laplace noise having mean 0), clipped
to ``(0, 1]``. Properties: (a) it estimates ``d``, the scored quantity, not ``k``; (b)
under the model (prior = the true degree distribution, ``k = r · min(d, θ)``) the
posterior median is the Bayes rule for absolute error, so its expected MAE is at most that
of EVERY function of ``y_i``, every constant included — the true median too; (c) when
the releases carry little information (``b ≫ θ``) the likelihood is flat, the posterior is
the prior, and every node gets the PRIVATE median of the θ search — the release collapses
onto the best constant the collector knows instead of a middle of an under-fitted EM
estimate. The prior's error is the θ search's noise: fewer, wider buckets when ``n · ε_θ``
is small (``protocol.cadr_theta_noise.bucket_count``). The released histogram is then the
consistent histogram of the prior (true degrees over ``0..D``, beyond θ too) — in the
pipelines, of ``histogram_prior``: the same counts read by ``boot``
(``collector.bucket_isotonic.bootstrap_counts``, the projection's bias removed), their
mass above the top significant bucket (found by a gap-corrected scan up from the densest
bucket: ``collector.bucket_isotonic.top_significant_bucket``, then raised to the top of
any significant stretch above it: ``collector.bucket_isotonic.second_mode_top``, so a
real second mode stays) re-placed on a fitted geometric decay
(``collector.bucket_isotonic.geometric_tail_counts``; where ``count_signal_ratio`` is at
least ``UNIMODAL_RATIO_MAX``, with at most the free geometric fit's mass, the surplus back
to the buckets below: ``fitted_mass=True``), the per-node release unchanged
(docs/cadr-private.md, "Released histogram: boot reading, pre-registered (2026-12-05)",
"Released histogram: a geometric tail (helper B)", "Released histogram: the top
significant bucket under multiplicity (helper H)" and "Released histogram: a second mode
above the top significant bucket (helper J)").
Measured in
docs/cadr-private.md (MAE against the constant true median on five graphs, ε = 0.5 .. 5).

The margin (``MARGIN = 0.05``, ``posterior_degree_medians(margin=)``): a node is released
at the prior's median ``m`` unless its posterior puts at least ``1/2 + MARGIN`` on one side
of it (``P(d <= m - 1 | y) >= 1/2 + δ`` or ``P(d >= m + 1 | y) >= 1/2 + δ``); then at its
posterior median. Why: when the releases carry almost no information (ε ≤ 1 on graphs
whose degrees spread less than the Laplace scale) the Bayes rule's expected gain over
``m`` is near 0, but its realised gain over a finite fleet is ± a few thousandths (each
moved node's error changes by about ±1): the release then landed just above the constant
median as often as below (Erdős–Rényi n = 3,000 at ε = 1: 2.784-2.791 against 2.781; with
the TRUE prior too, 2.788). The cost, under the model: where ``m`` is kept although the
posterior median ``q`` differs, the expected excess is ``Σ_{j between q and m} |2F(j | y) -
1| <= 2δ |m - q|`` — at most 0.1 per degree of shift. Measured: ego-Facebook at ε = 3
26.72 → 26.74, Barabási–Albert at ε = 5 3.155 → 3.153. Method clip (``known_ratio``) uses
``CLIP_MARGIN = 0.02`` instead: the margin is centred on the prior's median, read from
the θ search's noisy counts, and where that median is one off (Erdős–Rényi fleets of 500-800
devices at ε = 1: the prior's CDF at the true median 0.45-0.48 against 0.51-0.52) 0.05 held
the whole fleet on it (helper A2, issue 20, claim D9; pre-registered, PASSED:
docs/preregistration/A2-clip-margin.md).

The small-fleet guard (``post_process(theta_noise=)``, issue 20; docs/cadr-private.md
"Small graphs: the limit and the guard"). The θ search's ``K`` counts each carry noise
of a public standard deviation ``σ`` (``collector.bucket_denoise.noise_sd`` of ε_θ and
the noise parties); when ``n < √K · σ`` (``count_signal_ratio`` below
``SIGNAL_RATIO_MIN = 1``: the summed noise is larger than the whole fleet) the counts
cannot place the ``n`` devices, and the prior spread from them puts its median, and the
tail that nodes at the cap θ are released in, anywhere in ``0..D`` (florentine, n = 15:
MAE 5.1 against 2.67 for all zeros). Then the per-node estimates do not read the prior:
they are the posterior medians of the DSR values' own deconvolution (steps 1-2 above,
as without a prior); the released histogram is unchanged. With the true degree
distribution as the prior (an oracle) the release was at or below the constant true
median in 64 of 65 small cells: the prior, not the releases, is what fails there. A
function of the releases and of public quantities (n, K, ε_θ, parties): no budget.
Status: opt-in, NOT used by the pipelines. Pre-registered, it beat the projection's
prior on its evaluation half (20 fresh graphs: summed MAE 203.8 → 189.4, cells above all
zeros 10 → 4) but not on a second fresh set of 23 tiny graphs (191.9 → 240.9, five cells
newly above all zeros): the gate ignores where the counts' mass lies (a regular graph's
one bucket of n devices is 3-4 σ), and the DSR values' own deconvolution estimates the
KEPT degrees below a θ drawn from noise. What held on both sets is a budget change (no θ
search there, θ = ⌈√D⌉): docs/cadr-private.md.

The unimodal tail (``unimodal_degree_prior``, issue 20, helper C; docs/cadr-private.md
"Mid-size fleets: the unimodal tail"). On fleets of 24-150 devices the θ search's counts
carry noise of sd σ ≈ 6 per bucket against a few devices per bucket, and the projection
``max(0, y_j - λ)`` keeps an empty high bucket's positive noise: a spike of 2-3 σ in a wide
bucket far above every degree. The capped nodes (release near ``r θ``) are then released
at the median of the prior's mass above θ, which the spike dominates — karate on the
fleet at ε = 3 (θ = 3): the bucket (26, 32] read 15, 80 % of the prior's tail lay at
27-32, and 14 of 34 nodes were released at 27 (MAE 10.03; the constant true median 2.35,
all zeros 4.59). ``unimodal_degree_prior`` reads the counts through
``collector.bucket_isotonic.unimodal_tail_counts``: their per-degree levels made
non-increasing above the densest bucket (least squares, the noise having one variance per
count), kept only when that fit is within the counts' public noise (a χ² test at level
``TAIL_FIT_LEVEL = 1e-3``; a real second mode — a block of isolated nodes beside a
community — fails it and keeps the projection). The mode is chosen only among buckets
whose noisy sum is at least ``MODE_Z = 3`` noise sds (all live ones when none is): the
argmax of count / width prefers narrow buckets, whose level is the noisiest, and a
spike in the width-1 last bucket ``(t_k, D]`` had been taken as the mode, so the fit
never reached it (sbm-80-2x40, ε = 5: five nodes released at degree 79, MAE 6.85 against
a constant median of 2.275; pre-registered, docs/cadr-private.md "Mid-size fleets: error
rising with ε": 120 fresh cells 259.5 → 247.2, cells above the constant median 58 → 56,
large fleets identical). A spike then pools with the empty
buckets below it and mostly projects away (karate's fleet run: MAE 2.94, no node above
the largest true degree). Only where ``count_signal_ratio`` is below
``UNIMODAL_RATIO_MAX = 8`` (every fleet of 24-150 devices measured: 1.0-6.1; every large
one: 12.7 and above; at ratios 4-16 the gate's value moves the summed MAE by under 0.25 %);
above it, ``degree_prior``. Same inputs as ``degree_prior`` plus
the noise law (ε_θ, parties): post-processing, no budget. Status: passed its second
pre-registration (115 fresh cells: summed MAE 222.8 → 207.2, cells above the constant true
median 54 → 44, none newly above all zeros, large graphs identical); the pipelines use it
(``search_priors``, read in ``post_process_release``: the one place where the in-process
reference and the fleet's collector post-process their release).

Choosing θ for the post-processed error (``noise_weight``). The paper's θ search minimises
``Σ_i max(0, d_i - θ) + n θ / eps_dsr`` (projection loss + the raw Laplace error ``b``).
After post-processing the per-node noise error is much smaller than ``b``; model it as
``c(eps_dsr) · θ / eps_dsr`` with ``c`` the ratio of the posterior median's expected
absolute error to ``b`` when the ``k_i`` are uniform on ``0..θ`` — a quantity of the public
``eps_dsr`` alone (scale-free: ``θ`` and ``b`` scale together), computed here by exact
summation over a fine grid. The search by Deviation then targets the count
``c n / eps_dsr`` instead of ``n / eps_dsr`` (``collector.theta_search.deviation_target``'s
``noise_weight``); it still reads only the θ search's counts. c is 0.11, 0.22, 0.40, 0.53,
0.69 at eps_dsr = 0.45, 0.9, 1.8, 2.7, 4.5 (alpha = 0.1, eps = 0.5 .. 5). The uniform prior
is a model, not the data: the measured post-processed optimum lies near the θ it gives
(docs/cadr-private.md).

Scoring helpers (simulator side, they read the true degrees): ``histogram_l1`` and
``histogram_emd`` compare two degree histograms as distributions (L1 = Σ_k |P(k) - Q(k)|;
EMD = the 1-Wasserstein distance in degree units, Σ_k |F_P(k) - F_Q(k)|), ``score`` gives
per-node MAE/MSE and both, and ``trivial_baselines`` the constant-median (the TRUE median:
a non-private oracle) and all-zero releases scored the same way.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from ldpfleet.collector.bucket_denoise import denoise_counts, noise_sd, simplex_projection
from ldpfleet.collector.joint_prior import ITERATIONS as JOINT_ITERATIONS
from ldpfleet.collector.joint_prior import checked_thresholds, joint_prior, median_group_tilt
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.validate import finite_reals, integer_at_least, positive_real

__all__ = [
    "CLIP_MARGIN",
    "JOINT_PER_NODE",
    "JOINT_PER_NODE_EPS_MIN",
    "MODE_Z",
    "PER_NODE_FREE_SHAPE",
    "PER_NODE_FREE_SHAPE_ITERATIONS",
    "PER_NODE_TAIL_FLOOR",
    "PROJECTION_RATIO_MIN",
    "SIGNAL_RATIO_MIN",
    "UNIMODAL_RATIO_MAX",
    "PostProcessed",
    "SearchCounts",
    "ThetaNoise",
    "consistent_histogram",
    "count_signal_ratio",
    "deconvolve",
    "degree_prior",
    "histogram_emd",
    "histogram_l1",
    "histogram_prior",
    "kept_ratio",
    "nb_shape_degree_prior",
    "noise_weight",
    "post_process",
    "post_process_release",
    "posterior_degree_medians",
    "posterior_medians",
    "projection_degree_prior",
    "score",
    "simplex_projection",
    "tail_floored",
    "trivial_baselines",
    "unimodal_degree_prior",
]

ITERATIONS = 100
MARGIN = 0.05  # leave the prior's median only when the posterior is 1/2 + MARGIN off it
# method clip (``post_process(known_ratio=)``, the exact model): its own margin, or None for
# MARGIN. The margin is centred on the prior's median, itself read from the θ search's noisy
# counts: where that median is one off (the prior's CDF at the true median ~0.03 off, the
# counts' noise at n = 500-800), 0.05 locks the fleet on it (helper A2, issue 20, claim D9;
# docs/preregistration/A2-clip-margin.md: PASSED on 192 fresh cells, cells above the
# constant median 17 -> 15, summed MAE -0.28 %; calibration: 0.01 and 0 trade that excess
# for knife-edge ones)
CLIP_MARGIN: float | None = 0.02
SIGNAL_RATIO_MIN = 1.0  # the counts are read per node only if n >= 1 x their summed noise sd
# the unimodal tail reads only counts weaker than this (count_signal_ratio): every mid-size
# fleet measured is below 6.2, every large one above 12.6; between 4 and 16 (210 fresh cells
# of n = 120-600) every gate from 0 to infinity is within 0.22 % of 8 in summed MAE, and
# infinity moves a large fleet by more than 0.5 % (docs/cadr-private.md, "The gate's
# neighbourhood")
UNIMODAL_RATIO_MAX = 8.0
# the unimodal tail's mode: only a bucket whose noisy sum is at least MODE_Z noise sds
# (significantly occupied) may be it, so a spike in the width-1 last bucket (t_k, D] is not
# (docs/cadr-private.md, "Mid-size fleets: error rising with ε"; not tuned: 3 sds)
MODE_Z = 3.0
# the per-node prior's reading of weak counts (count_signal_ratio below UNIMODAL_RATIO_MAX):
# "unimodal" (default) or "nb-shape" (opt-in, nb_shape_degree_prior; helper G, issue 20:
# docs/preregistration/G-nb-shape.md) or "projection" (opt-in, projection_degree_prior:
# the plain projection of the counts, no unimodal tail; helper H, docs/preregistration/
# H-projection.md)
PER_NODE_READINGS = ("unimodal", "nb-shape", "projection")
PER_NODE_READING = "unimodal"
# "projection" reads the counts by the plain projection only from this count_signal_ratio up
# (below it the unimodal tail's shape constraint is the better regulariser: calibration,
# graph seeds 2001-2060, ratios 0-2 at ε = 0.5 lost 1.48 summed MAE, ratios 2-8 gained)
PROJECTION_RATIO_MIN = 2.0
# nb-shape keeps its fit unless the misfit exceeds this upper chi-square quantile
NB_FIT_LEVEL = 0.01
# method "clip": the per-node prior re-weighted by the DSR values too (``joint_prior`` of
# ``unimodal_degree_prior``'s reading, as the histogram's is), where ε_dsr is at least
# JOINT_PER_NODE_EPS_MIN (below it the releases' Laplace scale is > 10 θ: on calibration,
# graph seeds 3301-3320 and 3401-3440, no run there gained and one tiny fleet lost; helper
# Y, issue 20, docs/preregistration/Y-joint-per-node.md)
JOINT_PER_NODE = True
JOINT_PER_NODE_EPS_MIN = 0.1
# where the per-node prior is the joint reading (above): its shape inside each bucket free
# too (``joint_prior(..., free_shape=True)``: the Kiefer-Wolfowitz nonparametric MLE of
# the degrees' law under the count term, the empirical-Bayes prior of a posterior median;
# Jiang & Zhang 2009, Koenker & Mizera 2014). Opt-in (helper O, issue 20; docs/
# preregistration/O-free-shape.md), with PER_NODE_FREE_SHAPE_ITERATIONS EM steps from the
# reading's shape (early stopping: the smoothing; calibration, graph seeds 3501-3540 and
# helper N's regular graphs: 10 / 20 / 30 / 50 / 100 steps gave summed MAE -0.21 / -0.34 /
# -0.22 / -0.30 / -0.02 % and -19 / - / -34 / -40 / -46 %, cells above the constant median
# by > 0.01 37 / 39 / 40 / 43 / 44 of base 37; only 10 kept that count on both sets).
# Off: its fresh evaluation FAILED (graph seeds 4501-4540: summed MAE +0.019 %, cells above
# the median 44 -> 46; it pays only on regular graphs inside wide buckets)
PER_NODE_FREE_SHAPE = False
PER_NODE_FREE_SHAPE_ITERATIONS = 10
# where the per-node prior is the joint reading (above): the shape inside the one θ-search
# bucket holding its median exponentially tilted by the DSR values' likelihood, kept only
# when the tilt's likelihood-ratio statistic passes chi-square(1) at this level
# (``joint_prior.median_group_tilt``; helper E6, issue 20, claim D9, docs/preregistration/
# E6-median-tilt.md: PASSED on 225 fresh cells, graph seeds 73001.., run seeds 20-22 — cells
# above the constant median 40 -> 38, none newly above, summed MAE -0.235 %, 6 of 675 runs
# changed, all equal-degree fleets inside a wide bucket at ε 3-5, each to MAE 0;
# ego-Facebook ε 3 identical). None: off
PER_NODE_MEDIAN_TILT_LEVEL: float | None = 0.05
# strong counts (count_signal_ratio >= UNIMODAL_RATIO_MAX): (z, floor) sets the noisy sum of
# every bucket above the densest one that is below z noise sds to floor before the
# projection, so the empty buckets' positive noise is not taken from the occupied ones (the
# plain projection lowered the prior's CDF at the true median by about 15 devices: G(500,
# 1875) at ε = 1, 0.489 against 0.514, release on median + 1 in 13 of 20 runs; helper F,
# issue 20, docs/preregistration/F-tail-floor.md: PASSED on a fresh set, summed MAE
# -0.039 %, cells above the constant median 4 -> 2; on since 2026-12-06). None: off (the
# plain projection)
PER_NODE_TAIL_FLOOR: tuple[float, float] | None = (2.0, 0.1)


def _released(values: object) -> np.ndarray:
    return finite_reals(values, "released")


def _kernel(y: np.ndarray, theta: int, scale: float) -> np.ndarray:
    """``exp(-|y_i - k| / b)`` per row, divided by its row maximum (no underflow)."""
    dist = np.abs(y[:, None] - np.arange(theta + 1)[None, :])
    return np.exp(-(dist - dist.min(axis=1, keepdims=True)) / scale)


def _posteriors(kernel: np.ndarray, prior: np.ndarray) -> np.ndarray:
    post = kernel * prior
    return post / post.sum(axis=1, keepdims=True)


def deconvolve(
    released: object, theta: int, scale: float, *, iterations: int = ITERATIONS
) -> np.ndarray:
    """``iterations`` EM (Richardson-Lucy) steps towards the NPMLE of the distribution of
    the ``k_i`` over ``0..θ``, from the uniform one (module docstring, 1): a float array of
    length ``θ + 1``, non-negative, summing to 1."""
    y = _released(released)
    t = integer_at_least(theta, "theta", 1)
    b = positive_real(scale, "scale")
    steps = integer_at_least(iterations, "iterations", 0)
    kernel = _kernel(y, t, b)
    prior = np.full(t + 1, 1.0 / (t + 1))
    for _ in range(steps):
        prior = _posteriors(kernel, prior).mean(axis=0)
        prior /= prior.sum()
    return prior


def posterior_medians(released: object, prior: np.ndarray, scale: float) -> np.ndarray:
    """Per release, the median of its posterior over ``0..θ`` (``θ = len(prior) - 1``)
    under ``prior``: the smallest ``k`` whose posterior CDF is ``≥ 1/2`` (int64)."""
    y = _released(released)
    p = _distribution_over(prior, "θ")
    post = _posteriors(_kernel(y, p.size - 1, positive_real(scale, "scale")), p)
    cdf = np.cumsum(post, axis=1)
    return np.minimum(np.sum(cdf < 0.5 - 1e-12, axis=1), p.size - 1).astype(np.int64)


def consistent_histogram(prior: np.ndarray, n: int) -> np.ndarray:
    """``n · prior`` as non-negative integers summing to exactly ``n`` (largest
    remainders, ties to the lower degree): the released degree histogram (int64)."""
    nn = integer_at_least(n, "n", 0)
    p = np.asarray(prior, dtype=float)
    if p.ndim != 1 or p.size == 0 or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        raise ParameterError(
            "must be non-negative and sum to 1",
            field="prior",
            limit="non-negative, summing to 1",
            value=prior,
        )
    exact = nn * p / p.sum()
    counts = np.floor(exact).astype(np.int64)
    short = nn - int(counts.sum())
    order = np.argsort(-(exact - counts), kind="stable")  # stable: lower degree first
    counts[order[:short]] += 1
    return counts


def degree_prior(
    bucket_sums: object,
    thresholds: list[int],
    degree_bound: int,
    devices: int,
    *,
    shaped: bool = True,
    eps_theta: float | None = None,
    parties: int | None = None,
) -> np.ndarray:
    """The distribution over ``0..D`` of the TRUE degrees from the DP θ search's noisy
    bucket sums (module docstring: projected onto ``{x >= 0, Σ x = devices}``, then each
    bucket's mass spread over its degrees ``(t_j, t_(j+1)]``; bucket 0 is ``0..t_0``, the
    last ``(t_k, D]``). ``shaped`` (default): within a bucket wider than one degree, in
    proportion to the piecewise-linear interpolation of the buckets' mean levels (mass /
    width at each bucket's centre) — the bucket keeps exactly its mass, but a bucket on a
    slope puts more of it on the side of its denser neighbour (a median inside a wide
    bucket was off by one in 25% of draws on an Erdős–Rényi graph of mean degree 40 at ε =
    0.5, 15% shaped); ``shaped=False``: evenly. With ``eps_theta`` and ``parties`` (the θ
    search's ε_θ and noise parties): the counts are first denoised by empirical Bayes
    (``collector.bucket_denoise.denoise_counts``) instead of the least-squares projection.
    Post-processing of the θ search's release: no budget."""
    d, n, ts, sums = _bucket_input(bucket_sums, thresholds, degree_bound, devices)
    if eps_theta is not None and parties is not None:
        consistent = denoise_counts(sums, n, eps_theta, parties)
    else:
        consistent = simplex_projection(sums, n)
    return _spread(consistent, ts, d, shaped)


def histogram_prior(
    bucket_sums: object,
    thresholds: list[int],
    degree_bound: int,
    devices: int,
    eps_theta: float,
    parties: int,
) -> np.ndarray:
    """The distribution over ``0..D`` the dp pipeline's released HISTOGRAM is rounded
    from: ``degree_prior``'s spreading of the θ search's counts read by ``boot``
    (``collector.bucket_isotonic.bootstrap_counts``: the projection with its bootstrap
    bias removed, fixed draws and seed) instead of the projection, their mass above the
    top significant bucket re-placed on a fitted geometric decay
    (``collector.bucket_isotonic.geometric_tail_counts``: the noise in the empty wide
    buckets up to ``D`` moves down to the tail, the tail's mass kept). The top
    significant bucket is found by a scan up from the densest bucket, at ``MODE_Z``
    noise sds for the next bucket and ``MODE_Z + ln(gap)/√2`` for a jump over ``gap − 1``
    insignificant ones (``collector.bucket_isotonic.top_significant_bucket``,
    ``gap_corrected=True``: one lucky empty far bucket no longer sets it), then raised
    to the top of any significant STRETCH above it (``collector.bucket_isotonic.
    second_mode_top`` at ``TAIL_LEVEL``: a real second mode whose buckets are each below
    the single-bucket thresholds stays where the counts put it instead of being re-placed
    as a falling tail). Where the counts carry signal (``count_signal_ratio`` at least
    ``UNIMODAL_RATIO_MAX``) the mass re-placed above g is at most the free geometric
    fit's, the surplus back to the buckets up to g, on the ratio tied to that mass
    (``geometric_tail_counts(fitted_mass=True)``: a far noise stretch that ``boot`` keeps
    no longer inflates the tail; docs/preregistration/B-tail-mass-gated.md). ``eps_theta``
    and ``parties``: the θ search's ε_θ and noise parties (its noise law). The per-node
    release keeps ``degree_prior``
    (docs/cadr-private.md, "Released histogram: boot reading, pre-registered
    (2026-12-05)", "Released histogram: a geometric tail (helper B)", "Released
    histogram: the top significant bucket under multiplicity (helper H)" and "Released
    histogram: a second mode above the top significant bucket (helper J)"; the tail
    mass: docs/preregistration/B-tail-mass-gated.md). Post-processing: no budget."""
    # imported here: bucket_isotonic loads scipy, which the CADR device shards (that
    # import this module through collector.cadr_fleet) must not pay for at start-up
    # (tests/unit/test_cli_imports.py: ~0.26 s of CPU per shard)
    from ldpfleet.collector.bucket_isotonic import (
        TAIL_LEVEL,
        bootstrap_counts,
        geometric_tail_counts,
    )

    d, n, ts, sums, eps, m = _noisy_bucket_input(
        bucket_sums, thresholds, degree_bound, devices, eps_theta, parties
    )
    counts = geometric_tail_counts(
        sums,
        bootstrap_counts(sums, n, eps, m),
        _bucket_widths(ts, d),
        noise_sd(eps, n, m),
        mode_z=MODE_Z,
        gap_corrected=True,
        stretch_level=TAIL_LEVEL,
        fitted_mass=count_signal_ratio(n, sums.size, eps, m) >= UNIMODAL_RATIO_MAX,
    )
    return _spread(counts, ts, d, True)


def unimodal_degree_prior(
    bucket_sums: object,
    thresholds: list[int],
    degree_bound: int,
    devices: int,
    eps_theta: float,
    parties: int,
) -> np.ndarray:
    """``degree_prior`` with the counts read by ``collector.bucket_isotonic.
    unimodal_tail_counts`` instead of the plain projection: the per-degree levels made
    non-increasing above the densest bucket when the noisy sums allow it within their
    noise (``eps_theta``, ``parties``: the θ search's noise law, of sd
    ``protocol.cadr_theta_noise.noise_sd(eps_theta, devices, parties)``), then spread as
    ``degree_prior`` does (module docstring, "The unimodal tail"). Post-processing of the
    θ search's release: no budget. Where the counts carry signal (``count_signal_ratio``
    at least ``UNIMODAL_RATIO_MAX``) the spikes are a negligible share of the fleet and
    this is ``degree_prior`` itself (the shape fit moved large fleets by up to 1.8 %:
    docs/cadr-private.md, "Mid-size fleets: the unimodal tail")."""
    from ldpfleet.collector.bucket_isotonic import unimodal_tail_counts  # scipy: see above

    d, n, ts, sums, eps, m = _noisy_bucket_input(
        bucket_sums, thresholds, degree_bound, devices, eps_theta, parties
    )
    if count_signal_ratio(n, sums.size, eps, m) >= UNIMODAL_RATIO_MAX:
        floored = tail_floored(sums, noise_sd(eps, n, m), PER_NODE_TAIL_FLOOR)
        return _spread(simplex_projection(floored, n), ts, d, True)
    sd = noise_sd(eps, n, m)
    counts, _ = unimodal_tail_counts(sums, _bucket_widths(ts, d), n, sd, mode_z=MODE_Z)
    return _spread(counts, ts, d, True)


def tail_floored(sums: np.ndarray, sd: float, rule: tuple[float, float] | None) -> np.ndarray:
    """``PER_NODE_TAIL_FLOOR``'s step: with ``rule = (z, floor)``, a copy of the noisy
    bucket ``sums`` where every bucket above the densest one whose sum is below ``z`` noise
    sds (``sd``) holds ``floor`` instead (support kept for the hubs, almost no mass); the
    sums themselves when ``rule`` is None. Post-processing: no budget."""
    if rule is None:
        return sums
    z, floor = rule
    out = np.array(sums, dtype=float)
    tail = np.arange(out.size) > int(np.argmax(out))
    out[tail & (out < z * sd)] = floor
    return out


def _bucket_widths(ts: list[int], d: int) -> np.ndarray:
    """The number of degrees in each bucket ``(t_(j-1), t_j]`` of ``0..D`` (``t_0 = -1``,
    the last bucket up to ``D``): 0 for a bucket past ``D``."""
    return np.diff(np.array([-1, *ts, d]))


def _bucket_input(
    bucket_sums: object, thresholds: list[int], degree_bound: int, devices: int
) -> tuple[int, int, list[int], np.ndarray]:
    """``degree_bound``, ``devices``, the thresholds and the sums, checked."""
    d = integer_at_least(degree_bound, "degree_bound", 1)
    n = integer_at_least(devices, "devices", 1)
    ts = checked_thresholds(thresholds, d)
    sums = np.asarray(bucket_sums, dtype=float).reshape(-1)
    if sums.size != len(ts) + 1 or not np.all(np.isfinite(sums)):
        raise ParameterError(
            f"must hold {len(ts) + 1} finite sums, got {sums.size}",
            field="bucket_sums",
            limit=f"{len(ts) + 1} finite sums",
            value=bucket_sums,
        )
    return d, n, ts, sums


def search_priors(
    bucket_sums: object,
    thresholds: list[int],
    degree_bound: int,
    devices: int,
    eps_theta: float,
    parties: int,
    *,
    exact_releases: tuple[object, int, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The dp pipeline's two readings of the DP θ search's noisy bucket sums, for
    ``post_process(released, θ, eps_dsr, prior, histogram_prior)``: the per-node prior
    (``unimodal_degree_prior``: docs/cadr-private.md, "Mid-size fleets: the unimodal tail")
    and the released histogram's (``histogram_prior``: "Released histogram: boot reading,
    pre-registered (2026-12-05)"). The fleet's collector and the in-process reference both
    ask here, so they read the counts alike. ``exact_releases = (released, θ, eps_dsr)``:
    the DSR values of a release whose model is exact (method "clip": ``min(d, θ) +
    Laplace(θ / eps_dsr)``); the histogram's reading is then re-weighted by them
    (``collector.joint_prior.joint_prior``: the joint likelihood of the bucket masses;
    docs/preregistration/T-joint-prior.md); with ``JOINT_PER_NODE`` (and ``eps_dsr`` at
    least ``JOINT_PER_NODE_EPS_MIN``) the per-node prior is re-weighted alike (helper Y,
    docs/preregistration/Y-joint-per-node.md), else unchanged. Post-processing: no budget."""
    args = (bucket_sums, thresholds, degree_bound, devices, eps_theta, parties)
    if PER_NODE_READING not in PER_NODE_READINGS:
        raise ParameterError(
            f"must be one of {PER_NODE_READINGS}, got {PER_NODE_READING!r}",
            field="PER_NODE_READING",
            limit=f"one of {PER_NODE_READINGS}",
            value=PER_NODE_READING,
        )
    per_node = {
        "unimodal": unimodal_degree_prior,
        "nb-shape": nb_shape_degree_prior,
        "projection": projection_degree_prior,
    }[PER_NODE_READING]
    node, hist = per_node(*args), histogram_prior(*args)
    if exact_releases is not None:
        released, theta, eps_dsr = exact_releases
        sd = noise_sd(eps_theta, devices, parties)
        hist = joint_prior(released, theta, eps_dsr, hist, thresholds, devices, sd)
        if JOINT_PER_NODE and eps_dsr >= JOINT_PER_NODE_EPS_MIN:
            node = joint_prior(
                released, theta, eps_dsr, node, thresholds, devices, sd,
                free_shape=PER_NODE_FREE_SHAPE, iterations=_per_node_steps(),
            )  # fmt: skip
            if PER_NODE_MEDIAN_TILT_LEVEL is not None:
                node = median_group_tilt(
                    released, theta, eps_dsr, node, thresholds, PER_NODE_MEDIAN_TILT_LEVEL
                )
    return node, hist


def _per_node_steps() -> int:
    """The per-node joint reading's EM steps: PER_NODE_FREE_SHAPE_ITERATIONS with the free
    shape, else ``joint_prior``'s own."""
    return PER_NODE_FREE_SHAPE_ITERATIONS if PER_NODE_FREE_SHAPE else JOINT_ITERATIONS


def projection_degree_prior(
    bucket_sums: object,
    thresholds: list[int],
    degree_bound: int,
    devices: int,
    eps_theta: float,
    parties: int,
) -> np.ndarray:
    """Opt-in per-node prior (``PER_NODE_READING = "projection"``): where the counts are
    moderately weak (``count_signal_ratio`` at least ``PROJECTION_RATIO_MIN`` and below
    ``UNIMODAL_RATIO_MAX``) the noisy bucket sums projected onto ``{x >= 0, Σ x = devices}``
    and spread as ``degree_prior`` does, with no unimodal tail; elsewhere
    ``unimodal_degree_prior`` (at ratios of ``UNIMODAL_RATIO_MAX`` and up that projection
    with ``PER_NODE_TAIL_FLOOR``'s floor, so large fleets read as by default).
    ``eps_theta`` and ``parties``: the θ search's noise law (helper H, issue 20,
    docs/preregistration/H-projection.md).
    Post-processing of the θ search's release: no budget."""
    d, n, ts, sums, eps, m = _noisy_bucket_input(
        bucket_sums, thresholds, degree_bound, devices, eps_theta, parties
    )
    ratio = count_signal_ratio(n, sums.size, eps, m)
    if ratio < PROJECTION_RATIO_MIN or ratio >= UNIMODAL_RATIO_MAX:
        return unimodal_degree_prior(bucket_sums, thresholds, degree_bound, devices, eps, m)
    return _spread(simplex_projection(sums, n), ts, d, True)


def nb_shape_degree_prior(
    bucket_sums: object,
    thresholds: list[int],
    degree_bound: int,
    devices: int,
    eps_theta: float,
    parties: int,
) -> np.ndarray:
    """Opt-in per-node prior (``PER_NODE_READING = "nb-shape"``): where the counts are weak
    (``count_signal_ratio`` below ``UNIMODAL_RATIO_MAX``) a negative binomial over ``0..D``
    (truncated at ``D``) fitted to the noisy bucket sums by least squares (every count's
    noise has the same public sd), kept when its misfit in sd² is below the upper
    ``NB_FIT_LEVEL`` chi-square quantile with ``K − 2`` degrees of freedom; otherwise, and
    where the counts carry signal, ``unimodal_degree_prior``. Two shape parameters pool
    all ``K`` buckets into the median (helper G, docs/preregistration/G-nb-shape.md).
    Post-processing of the θ search's release: no budget."""
    from scipy.special import chdtri  # scipy: see histogram_prior

    d, n, ts, sums, eps, m = _noisy_bucket_input(
        bucket_sums, thresholds, degree_bound, devices, eps_theta, parties
    )
    args = (bucket_sums, thresholds, degree_bound, devices, eps_theta, parties)
    if count_signal_ratio(n, sums.size, eps, m) >= UNIMODAL_RATIO_MAX or sums.size < 3:
        return unimodal_degree_prior(*args)
    prior, misfit = _nb_fit(sums, ts, d, n, noise_sd(eps, n, m))
    if misfit > chdtri(sums.size - 2, NB_FIT_LEVEL):
        return unimodal_degree_prior(*args)
    return prior


def _nb_pmf(mean: float, size: float, d: int) -> np.ndarray:
    """The negative binomial of ``mean`` and ``size`` over ``0..d``, renormalised."""
    from scipy.stats import nbinom

    pmf = nbinom.pmf(np.arange(d + 1), size, size / (size + mean))
    total = pmf.sum()
    return pmf / total if total > 0 and np.isfinite(total) else np.full(d + 1, 1.0 / (d + 1))


def _nb_fit(sums: np.ndarray, ts: list[int], d: int, n: int, sd: float) -> tuple[np.ndarray, float]:
    """The least-squares negative binomial (Nelder-Mead over log mean and log size from
    three starting sizes, the mean from the projection): its pmf and misfit in sd²."""
    from scipy.optimize import minimize

    bucket_of = np.searchsorted(ts, np.arange(d + 1), side="left")

    def misfit(params: np.ndarray) -> float:
        pmf = _nb_pmf(math.exp(params[0]), math.exp(params[1]), d)
        expected = n * np.bincount(bucket_of, weights=pmf, minlength=sums.size)
        return float(np.sum((sums - expected) ** 2)) / sd**2

    widths = _bucket_widths(ts, d)
    centres = np.array([-1, *ts]) + (widths + 1) / 2.0
    mean0 = max(0.5, float(simplex_projection(sums, n) @ centres) / n)
    best = None
    for log_size in (-0.5, 1.0, 3.0):
        found = minimize(
            misfit,
            np.array([math.log(mean0), log_size]),
            method="Nelder-Mead",
            options={"xatol": 1e-3, "fatol": 1e-3, "maxiter": 400},
        )
        if best is None or found.fun < best.fun:
            best = found
    return _nb_pmf(math.exp(best.x[0]), math.exp(best.x[1]), d), float(best.fun)


def _noisy_bucket_input(
    bucket_sums: object,
    thresholds: list[int],
    degree_bound: int,
    devices: int,
    eps_theta: float,
    parties: int,
) -> tuple[int, int, list[int], np.ndarray, float, int]:
    """``_bucket_input`` plus the θ search's noise law checked: ``eps_theta`` (ε_θ > 0) and
    ``parties`` (the noise parties, at least 1), each refused naming itself."""
    d, n, ts, sums = _bucket_input(bucket_sums, thresholds, degree_bound, devices)
    return (
        d,
        n,
        ts,
        sums,
        positive_real(eps_theta, "eps_theta"),
        integer_at_least(parties, "parties", 1),
    )


def _spread(consistent: np.ndarray, ts: list[int], d: int, shaped: bool) -> np.ndarray:
    """Consistent bucket counts spread over ``0..D`` (``degree_prior``), normalised."""
    edges = [-1, *ts, d]
    los = np.array([e + 1 for e in edges[:-1]], dtype=float)
    his = np.array(edges[1:], dtype=float)
    width = np.maximum(his - los + 1, 1.0)
    centres, levels = (los + his) / 2.0, consistent / width
    prior = np.zeros(d + 1)
    for j, count in enumerate(consistent):
        lo, hi = edges[j] + 1, edges[j + 1]
        if hi < lo or count <= 0:
            continue
        xs = np.arange(lo, hi + 1)
        shape = np.interp(xs, centres, levels) if shaped and xs.size > 1 else np.ones(xs.size)
        if shape.sum() <= 0:
            shape = np.ones(xs.size)
        prior[lo : hi + 1] += count * shape / shape.sum()
    if prior.sum() <= 0:
        # every unit of mass went to an empty bucket (t_k = D: degrees above the bound),
        # e.g. on a graph of one edge (D = 1): the counts say nothing, the prior is uniform
        # (it was 0 / 0, and the run stopped with "prior: must be a distribution")
        return np.full(d + 1, 1.0 / (d + 1))
    return prior / prior.sum()


def kept_ratio(released: object, prior: np.ndarray, theta: int) -> float:
    """``r = mean(y) / E_prior[min(d, θ)]`` clipped to ``[1e-6, 1]``: the share of
    ``min(d, θ)`` a node keeps on average (module docstring)."""
    y = _released(released)
    p = _distribution_over_degrees(prior)
    expected = float(p @ np.minimum(np.arange(p.size), integer_at_least(theta, "theta", 1)))
    if expected <= 0:
        return 1.0
    return float(min(1.0, max(1e-6, float(np.mean(y)) / expected)))


def _distribution_over_degrees(prior: object) -> np.ndarray:
    """``prior`` as a distribution over the degrees ``0..D`` (checked)."""
    return _distribution_over(prior, "D")


def _distribution_over(prior: object, top: str) -> np.ndarray:
    """``prior`` as floats, refused unless a distribution over ``0..top`` with ``top >= 1``
    (one dimension, at least two entries, non-negative, summing to 1); ``top`` names the
    largest value in the refusal (θ: the kept degrees, D: the true ones)."""
    p = np.asarray(prior, dtype=float)
    if p.ndim != 1 or p.size < 2 or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        wanted = f"a distribution over 0..{top} ({top} >= 1): non-negative, summing to 1"
        raise ParameterError(f"must be {wanted}", field="prior", limit=wanted, value=prior)
    return p


def posterior_degree_medians(
    released: object,
    prior: object,
    theta: int,
    scale: float,
    ratio: float,
    margin: float = 0.0,
) -> np.ndarray:
    """Per release ``y_i`` the median of ``P(d | y_i) ∝ prior(d) exp(-|y_i - r min(d, θ)|
    / b)`` over ``d`` in ``0..D`` (``D = len(prior) - 1``; module docstring), int64. The
    degrees ``>= θ`` share one likelihood, so a median among them is the prior's quantile
    inside that tail. ``margin = δ > 0``: the prior's median unless the posterior puts
    ``>= 1/2 + δ`` on one side of it (module docstring, "The margin")."""
    y = _released(released)
    p = _distribution_over_degrees(prior)
    t = min(integer_at_least(theta, "theta", 1), p.size - 1)
    b = positive_real(scale, "scale")
    r = positive_real(ratio, "ratio")
    head = np.append(p[:t], p[t:].sum())  # mass on k = 0 .. θ - 1 and on "d >= θ"
    dist = np.abs(y[:, None] - r * np.arange(t + 1)[None, :])
    post = np.exp(-(dist - dist.min(axis=1, keepdims=True)) / b) * head
    post /= post.sum(axis=1, keepdims=True)
    cdf = np.cumsum(post, axis=1)
    out = np.minimum(np.sum(cdf < 0.5 - 1e-12, axis=1), t).astype(np.int64)
    in_tail = np.flatnonzero(out == t)
    if in_tail.size and head[t] > 0:
        below = cdf[in_tail, t - 1] if t >= 1 else np.zeros(in_tail.size)
        share = (0.5 - below) / post[in_tail, t]  # the median's quantile inside the tail
        tail_cdf = np.cumsum(p[t:]) / head[t]
        out[in_tail] = t + np.minimum(
            np.searchsorted(tail_cdf, share - 1e-12, side="left"), p.size - 1 - t
        )
    if margin > 0:  # stay at the prior's median unless the posterior is clearly off it
        m = int(np.searchsorted(np.cumsum(p), 0.5 - 1e-12, side="left"))
        below, upto = _posterior_cdf(cdf, post, p, t, m - 1), _posterior_cdf(cdf, post, p, t, m)
        keep = (below < 0.5 + margin) & (upto > 0.5 - margin)
        out[keep] = m
    return out


def _posterior_cdf(cdf: np.ndarray, post: np.ndarray, p: np.ndarray, t: int, j: int) -> np.ndarray:
    """``P(d <= j | y_i)`` per node from the head posterior (``k = 0..θ-1`` and the tail
    ``d >= θ`` as one cell) and the prior's shape inside the tail."""
    if j < 0:
        return np.zeros(cdf.shape[0])
    if j < t:
        return cdf[:, j]
    tail = p[t:].sum()
    inside = float(p[t : j + 1].sum() / tail) if tail > 0 else 1.0
    return (cdf[:, t - 1] if t >= 1 else 0.0) + post[:, t] * inside


@dataclass(frozen=True)
class ThetaNoise:
    """The public noise law of the DP θ search's counts (``protocol.cadr_theta_noise``):
    its ``eps_theta``, its noise ``parties``, the number of ``buckets`` it opened (the
    thresholds plus one) and the ``survivors`` whose answers and shares are in its sums
    (None: as many as the DSR releases). ``post_process``'s small-fleet guard reads it
    (module docstring, "The small-fleet guard")."""

    eps_theta: float
    parties: int
    buckets: int
    survivors: int | None = None

    def __post_init__(self) -> None:
        positive_real(self.eps_theta, "eps_theta")
        integer_at_least(self.parties, "parties", 1)
        integer_at_least(self.buckets, "buckets", 2)
        if self.survivors is not None:
            integer_at_least(self.survivors, "survivors", 1)


def count_signal_ratio(devices: int, buckets: int, eps_theta: float, parties: int) -> float:
    """``n / (√K · σ)``: the number of devices against the standard deviation of the
    noise summed over the ``K`` bucket counts (``σ`` per count:
    ``collector.bucket_denoise.noise_sd``). Below 1 the noisy counts cannot even place
    the ``n`` devices: a function of public quantities only."""
    n = integer_at_least(devices, "devices", 1)
    k = integer_at_least(buckets, "buckets", 2)
    return n / (math.sqrt(k) * noise_sd(eps_theta, n, parties))


@dataclass(frozen=True)
class PostProcessed:
    """The post-processed release: the estimated distribution (over ``0..θ`` of the kept
    degrees, or with a ``degree_prior`` over ``0..D`` of the true degrees), the per-node
    estimates (in the order of the input releases) and the consistent histogram;
    ``kept_ratio`` is the model's r (None without a prior); ``prior_trusted``: False when
    the small-fleet guard released the estimates without the prior."""

    theta: int
    distribution: np.ndarray
    estimates: np.ndarray
    histogram: np.ndarray
    kept_ratio: float | None = None
    prior_trusted: bool = True


def post_process(
    released: object,
    theta: int,
    eps_dsr: float,
    prior: object | None = None,
    histogram_prior: object | None = None,
    *,
    theta_noise: ThetaNoise | None = None,
    known_ratio: float | None = None,
) -> PostProcessed:
    """Without ``prior``: deconvolve the releases (Laplace scale ``θ / eps_dsr``), then the
    posterior medians and the consistent histogram (module docstring, 1-3). With the
    ``degree_prior`` of the DP θ search: the posterior medians of the TRUE degrees under it
    and its consistent histogram (module docstring, "With the DP θ search's counts"); with
    ``histogram_prior`` too (``histogram_prior()``, the dp pipelines' release), the
    histogram is rounded from that one instead — the estimates do not change. With
    ``theta_noise`` (the θ search's public noise law): when ``count_signal_ratio`` is
    below ``SIGNAL_RATIO_MIN`` the estimates are the DSR values' own deconvolution's
    posterior medians (as without a prior), the histogram unchanged (module docstring,
    "The small-fleet guard"). ``known_ratio``: the model's ``r`` when it is known, not
    estimated (method "clip" releases ``min(d, θ) + Laplace`` exactly: ``r = 1``); None
    (every other method): ``kept_ratio``'s estimate."""
    y = _released(released)
    t = integer_at_least(theta, "theta", 1)
    scale = t / positive_real(eps_dsr, "eps_dsr")
    if prior is not None:
        p = _distribution_over_degrees(prior)
        h = p if histogram_prior is None else _distribution_over_degrees(histogram_prior)
        r = kept_ratio(y, p, t) if known_ratio is None else _known_ratio(known_ratio)
        if theta_noise is not None and not _counts_trusted(y.size, theta_noise):
            estimates = posterior_medians(y, deconvolve(y, t, scale), scale)
            return PostProcessed(t, p, estimates, consistent_histogram(h, y.size), r, False)
        return PostProcessed(
            theta=t,
            distribution=p,
            estimates=posterior_degree_medians(y, p, t, scale, r, _margin(known_ratio)),
            histogram=consistent_histogram(h, y.size),
            kept_ratio=r,
        )
    if histogram_prior is not None:
        raise ParameterError(
            "needs a prior for the estimates as well",
            field="histogram_prior",
            limit="None unless prior is given",
            value=histogram_prior,
        )
    if theta_noise is not None:
        raise ParameterError(
            "guards a prior's reading; there is no prior",
            field="theta_noise",
            limit="None unless prior is given",
            value=theta_noise,
        )
    k_prior = deconvolve(y, t, scale)
    return PostProcessed(
        theta=t,
        distribution=k_prior,
        estimates=posterior_medians(y, k_prior, scale),
        histogram=consistent_histogram(k_prior, y.size),
    )


@dataclass(frozen=True)
class SearchCounts:
    """What the DP θ search opened, as ``search_priors`` reads it: its noisy
    ``bucket_sums`` over ``thresholds``, the public ``degree_bound`` D, the ``devices``
    whose answers are in the sums, and the noise law (``eps_theta``, ``parties``)."""

    bucket_sums: object
    thresholds: list[int]
    degree_bound: int
    devices: int
    eps_theta: float
    parties: int


def post_process_release(
    released: object,
    theta: int,
    eps_dsr: float,
    counts: SearchCounts | None,
    known_ratio: float | None = None,
) -> PostProcessed:
    """The dp pipeline's post-processed release, the one place both pipelines make it
    (the in-process ``collector.cadr_reference`` and the fleet's ``collector.cadr_fleet``):
    the θ search's ``counts`` read by ``search_priors`` (None: no search, no prior), then
    ``post_process``. ``known_ratio``: the model's kept ratio when it is known — method
    "clip" (1): its releases follow their model exactly, so they also re-weight the
    counts' readings (``search_priors(exact_releases=)``); None (every other method): the
    ratio estimated, the readings from the counts alone."""
    prior = histogram = None
    if counts is not None:
        exact = None if known_ratio is None else (released, theta, eps_dsr)
        prior, histogram = search_priors(
            counts.bucket_sums, counts.thresholds, counts.degree_bound, counts.devices,
            counts.eps_theta, counts.parties, exact_releases=exact,
        )  # fmt: skip
    return post_process(released, theta, eps_dsr, prior, histogram, known_ratio=known_ratio)


def _margin(known_ratio: float | None) -> float:
    """The per-node release's margin: ``CLIP_MARGIN`` for a release whose kept ratio is
    known (method clip) when it is set, else ``MARGIN``."""
    if known_ratio is not None and CLIP_MARGIN is not None:
        return CLIP_MARGIN
    return MARGIN


def _known_ratio(ratio: float) -> float:
    """``post_process``'s ``known_ratio``, refused outside ``(0, 1]``."""
    r = positive_real(ratio, "known_ratio")
    if r > 1.0:
        raise ParameterError(
            f"must be in (0, 1], got {ratio!r}",
            field="known_ratio", limit="in (0, 1]", value=ratio,
        )  # fmt: skip
    return r


def _counts_trusted(releases: int, noise: ThetaNoise) -> bool:
    """The small-fleet guard's test (module docstring): ``count_signal_ratio >= 1``."""
    devices = releases if noise.survivors is None else noise.survivors
    ratio = count_signal_ratio(devices, noise.buckets, noise.eps_theta, noise.parties)
    return ratio >= SIGNAL_RATIO_MIN


@functools.lru_cache(maxsize=256)
def noise_weight(eps_dsr: float, grid: int = 200) -> float:
    """``c(eps_dsr)``: the posterior median's expected absolute error divided by the
    Laplace scale ``b``, for ``k`` uniform on ``0..grid`` and noise ``Lap(grid / eps_dsr)``
    (module docstring). Exact sum over ``k`` and a quadrature over ``y`` (step ``1/2``,
    ``y`` within 25 scales of ``[0, grid]``, where the density left out is below
    ``e^-25``): deterministic, in ``(0, 1)``; the same to 4 digits as step ``1/8`` and 40
    scales at eps_dsr = 0.45 .. 4.5."""
    e = positive_real(eps_dsr, "eps_dsr")
    m = integer_at_least(grid, "grid", 1)
    b = m / e
    step = 0.5
    ks = np.arange(m + 1)
    # The quadrature's points are y = -25 b + j step (j = 0, 1, ...) below m + 25 b + step.
    # Outside [0, m] every |y - k| has one sign, so p(y | k) factorises into e^(+-y/b) times
    # e^(-+k/b): the posterior (hence its median) is the same at every such y, and the
    # quadrature's sum over those y is a geometric series of e^(-|y - edge|/b) (closed form:
    # at eps_dsr = 1e-7 the y values alone would take 1.5 TiB). Only the 2m/step points
    # inside are done point by point: the same sum as the full (y x k) table.
    near = [math.fmod(25 * b, step), math.fmod(step - math.fmod(m + 25 * b, step), step)]
    inside = np.arange(step - near[0] if near[0] else step, m, step)  # the y in (0, m)
    inside = inside[inside < m]
    dens = np.exp(-np.abs(inside[:, None] - ks[None, :]) / b) / (2 * b)  # p(y | k)
    expected = float(np.sum(dens * np.abs(_posterior_median(dens)[:, None] - ks)))
    for side, edge, first in ((-1.0, 0, near[0]), (1.0, m, near[1])):
        shape = np.exp(side * (ks - edge) / b)  # p(y | k) up to a factor of y
        span = 25 * b - first + (step if side > 0 else 0.0)  # the points' distances to edge
        count = math.floor(span / step) + 1 if side < 0 else math.ceil(span / step)
        series = math.expm1(-count * step / b) / math.expm1(-step / b)  # sum of q^i, i < count
        weight = math.exp(-first / b) * series / (2 * b)
        median = _posterior_median(shape[None, :])[0]
        expected += weight * float(np.sum(shape * np.abs(median - ks)))
    return expected * step / (m + 1) / b  # E over k uniform and y | k, per unit of b


def _posterior_median(likelihood: np.ndarray) -> np.ndarray:
    """Per row, the median of the posterior under a uniform prior over the columns."""
    post = likelihood / likelihood.sum(axis=1, keepdims=True)
    return np.sum(np.cumsum(post, axis=1) < 0.5 - 1e-12, axis=1)


# --- scoring against the true degrees (the simulator's side) -------------------------------


def _distribution(histogram: np.ndarray, size: int) -> np.ndarray:
    h = np.zeros(size)
    h[: len(histogram)] = histogram
    total = h.sum()
    if total <= 0:
        raise ParameterError(
            "must hold at least one count",
            field="histogram",
            limit="a positive total count",
            value=histogram,
        )
    return h / total


def histogram_l1(true_degrees: object, histogram: object) -> float:
    """``Σ_k |P(k) - Q(k)|``: P the true degrees' distribution, Q = the histogram
    normalised (counts per degree ``0, 1, ...``)."""
    d = np.asarray(true_degrees, dtype=np.int64)
    h = np.asarray(histogram, dtype=float)
    size = max(int(d.max()) + 1, h.size)
    return float(np.abs(_distribution(np.bincount(d), size) - _distribution(h, size)).sum())


def histogram_emd(true_degrees: object, histogram: object) -> float:
    """The earth mover's (1-Wasserstein) distance between the true degrees' distribution
    and the normalised histogram, in degrees: ``Σ_k |F_P(k) - F_Q(k)|``."""
    d = np.asarray(true_degrees, dtype=np.int64)
    h = np.asarray(histogram, dtype=float)
    size = max(int(d.max()) + 1, h.size)
    cdf_p = np.cumsum(_distribution(np.bincount(d), size))
    cdf_q = np.cumsum(_distribution(h, size))
    return float(np.abs(cdf_p - cdf_q).sum())


def score(true_degrees: object, per_node: object, histogram: object) -> dict[str, float]:
    """Per-node MAE and MSE of a released sequence and the histogram's L1 and EMD."""
    d = np.asarray(true_degrees, dtype=float)
    v = np.asarray(per_node, dtype=float)
    return {
        "mae": float(np.mean(np.abs(d - v))),
        "mse": float(np.mean((d - v) ** 2)),
        "histogram_l1": histogram_l1(true_degrees, histogram),
        "histogram_emd": histogram_emd(true_degrees, histogram),
    }


def trivial_baselines(true_degrees: object) -> dict[str, dict[str, float]]:
    """Two releases that know nothing about any node, scored like ``score``:
    ``constant_median_oracle`` — every node gets the TRUE median degree (rounded down to
    an integer; a non-private oracle: no private release knows it) and the histogram puts
    all mass on it; ``all_zero`` — every node 0, all mass on degree 0."""
    d = np.asarray(true_degrees, dtype=np.int64)
    median = int(np.floor(np.median(d)))
    out = {}
    for name, value in (("constant_median_oracle", median), ("all_zero", 0)):
        hist = np.zeros(value + 1, dtype=np.int64)
        hist[value] = d.size
        out[name] = {**score(d, np.full(d.size, value), hist), "value": value}
    return out
