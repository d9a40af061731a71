"""Bucket counts from the θ search's noisy sums through their cumulative counts (no budget).

The θ search opens ``y_j = x_j + Z_j`` per degree bucket ``j = 0..K-1`` (``x_j`` the true
count, ``Z_j`` independent, mean 0, sd ``σ``: ``collector.bucket_denoise``). The prior's
median, the dp release at small ε, is where the cumulative count ``F_j = Σ_{i<=j} x_i``
crosses ``n / 2``; what matters is an unbiased ``F_j`` near the median.

Why not the least-squares projection onto ``{x >= 0, Σ x = n}`` (``simplex_projection``,
the default): it returns ``max(0, y_j - λ)``, so an empty bucket keeps ``E[max(0, Z_j -
λ)] > 0`` and the occupied ones pay for it through ``λ``: on ego-Facebook at ε = 0.5 the
count below the median was 16.7 devices low on average (docs/cadr-private.md, "Knife-edge
medians").

Estimators here (pure functions of the sums, ``n`` and, for the tail test, ``ε_θ`` and the
noise parties — post-processing):

- ``isotonic_counts`` (``centre=True``): ``v = y - (Σ y - n) / K`` (the least-squares
  projection onto ``Σ = n`` WITHOUT clipping: linear, so unbiased, and the best linear
  unbiased estimate for independent equal-variance noise), its cumulative sums ``c_j``
  (a pinned random walk: ``c_{K-1} = n``), the isotonic regression of ``c_0..c_{K-2}``
  (pool adjacent violators, Ayer et al. 1955; least squares onto non-decreasing
  sequences) clipped to ``[0, n]`` — for constant bounds the clipped isotonic fit is the
  bounded isotonic fit — and the differences. Each pooled block keeps its local mean, so
  where the true ``F`` rises steeply (the median, on any graph with mass there) the fit is
  the unbiased ``c_j`` itself; only flat stretches (empty buckets) are pooled.
  ``centre=False``: the raw cumulative sums (also unbiased, but the noise of every bucket
  below ``j`` instead of the bridge's ``j (K - j) / K``).
- ``bootstrap_counts``: the default projection's cumulative counts minus their bias,
  estimated by a parametric bootstrap (Efron & Tibshirani, "An Introduction to the
  Bootstrap", 1993, ch. 10): ``BOOTSTRAP_DRAWS`` fresh draws of the secure sum's exact
  noise law around the projected counts, projected again; the mean shift of each
  cumulative count is its bias at the plug-in counts. Then the bounded isotonic fit and
  the differences, as above. The draws come from a fixed seed: deterministic, and the
  noise is public randomness (no budget). Needs ``ε_θ`` and the noise parties.
- ``unimodal_tail_counts`` (issue 20, helper C): the counts' per-degree levels made
  non-increasing from the densest bucket upward (a degree distribution falls above its
  mode; with ``mode_z``: the densest among the buckets whose noisy sum is at least
  ``mode_z`` noise sds), fitted by least squares on the counts (equal noise variance per
  bucket: pool adjacent violators on the levels with weights ``width²``), kept only if the fit's
  residual is within the noise (``Σ (y_j - fit_j)² / σ²`` at most the ``1 - TAIL_FIT_LEVEL``
  quantile of a χ² with one degree of freedom per fitted bucket: when the true levels do
  fall, the least-squares fit is at least as close to ``y`` as the truth is, whose
  residual is ``σ²`` χ²-like), then projected onto ``{x >= 0, Σ x = n}``. What it
  removes: an isolated positive noise spike in an empty high bucket, which the projection
  keeps and the per-node posterior then places every capped node in (karate's fleet at ε
  = 3: 14 of 34 nodes released at 27; docs/cadr-private.md, "Mid-size fleets: the
  unimodal tail").
- ``geometric_tail_counts`` (issue 20, helper B): any counts with their mass above the
  top significant bucket (``mode_z`` noise sds) kept but re-placed on the least-squares
  geometric decay of the noisy sums there (ratio at most ``TAIL_DECAY_MAX``): the noise
  the counts keep in the empty wide buckets up to ``D`` moves down to the tail, where a
  sparse real tail's mass also stays. No test, nothing removed: helpers G's and H's cuts
  removed the real tail with the noise (docs/cadr-private.md).
- ``top_significant_bucket`` (issue 20, helper H): that top significant bucket, either
  the highest one at ``mode_z`` sds (helper B) or (``gap_corrected``) by a scan up from
  the densest bucket whose threshold for a jump over ``k − 1`` insignificant buckets is
  ``mode_z + ln k / √2`` sds (Bonferroni for ``k`` tests under the noise's Laplace-like
  tail): among ~30 truly empty buckets above a graph one reached 3 sds in about one θ
  search in five and set g far above the tail; with the scan that rate is ≈ 0.03.
- ``second_mode_top`` (issue 20, helper J): g raised to the top of any significant
  STRETCH of buckets above it (a scan up from g; a stretch starting ``k`` buckets above
  g passes at level ``TAIL_LEVEL / (k (k + 1))`` shared over its lengths, against the
  Laplace-like tail): a real second mode above the densest bucket, each of whose
  buckets is below 3 sds (les misérables at ε = 1: 17 nodes of degree 1, ~30 at 8-13),
  is kept where the counts put it instead of being re-placed as a falling tail.
- ``geometric_tail_counts(fitted_mass=True)`` (issue 20, helper B round 2): the mass
  re-placed above g is at most the free geometric fit's, the surplus back to the buckets
  up to g, on the ratio tied to the kept mass — a far noise stretch the counts keep (wiki-
  Vote at ε = 1-2: 156 devices re-placed above g against 50 true) no longer inflates the
  tail. The pipelines use it where ``count_signal_ratio`` is at least
  ``UNIMODAL_RATIO_MAX`` (docs/preregistration/B-tail-mass-gated.md; everywhere it failed
  on L1: B-tail-mass.md).
- ``empty_tail_start``: the first bucket of the largest top stretch whose noisy total is
  NOT significantly above 0 (a Chernoff bound on the exact noise law, familywise level
  ``TAIL_LEVEL`` over the ``K`` stretches; no tuning), and ``tail_counts``: those buckets
  read as 0, the rest by ``simplex_projection`` or ``isotonic_counts``.

Status: ``bootstrap_counts`` then ``geometric_tail_counts`` (g by the gap-corrected
``top_significant_bucket``, raised by ``second_mode_top``) read the dp pipelines'
released HISTOGRAM only
(``degree_postprocess.histogram_prior``; the per-node prior stays the projection's), each
adopted by a pre-registered rule (docs/cadr-private.md, "Released histogram: boot reading,
pre-registered (2026-12-05)", "Released histogram: a geometric tail (helper B)",
"Released histogram: the top significant bucket under multiplicity (helper H)",
"Released histogram: a second mode above the top significant bucket (helper J)"); the
others are NOT used by the pipelines (issue 20,
docs/cadr-private.md "Less biased bucket counts from the θ search"). As a per-node prior
``bootstrap_counts`` won the paired comparison's tune half
(as many cells above the constant true median as the projection, lower EMD) but had one
cell more on the held half; ``isotonic_counts`` is unbiased but noisier (the clipped
buckets' noise no longer drops out of the ``Σ = n`` correction); the tail test lacks
power, so real sparse top buckets are read as empty and their mass moves below the
median (+38 to +87 devices).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from ldpfleet.collector.bucket_denoise import bucket_sums_array, simplex_projection
from ldpfleet.protocol.cadr_theta_noise import noise_sum
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.validate import integer_at_least, positive_real
from scipy.optimize import isotonic_regression as scipy_isotonic

__all__ = [
    "BOOTSTRAP_DRAWS",
    "TAIL_DECAY_MAX",
    "TAIL_LEVEL",
    "bootstrap_counts",
    "empty_tail_start",
    "geometric_tail_counts",
    "isotonic_counts",
    "isotonic_regression",
    "second_mode_top",
    "tail_counts",
    "tail_threshold",
    "top_significant_bucket",
    "unimodal_tail_counts",
]

BOOTSTRAP_DRAWS = 200  # the bias's Monte Carlo error: sd(count below) / sqrt(200), ~1.7
TAIL_LEVEL = 0.05  # P(a truly empty top stretch is read as occupied) <= this, familywise
TAIL_FIT_LEVEL = 1e-3  # P(a truly falling tail's fit is rejected as misfit) <= this (chi²)
# geometric_tail_counts: the largest count ratio between neighbouring tail buckets. On the
# grid's geometric part (ratio r ≈ 1.17-1.22 between thresholds) a power-law tail of
# exponent γ has the ratio r^(1 - γ); 0.9 allows γ down to ≈ 1.6, heavier than any degree
# tail measured (γ > 2 keeps the mean degree finite). Not tuned: the calibration's best
# was 0.8 (docs/cadr-private.md, "Released histogram: a geometric tail (helper B)")
TAIL_DECAY_MAX = 0.9


def isotonic_regression(values: object) -> np.ndarray:
    """The least-squares non-decreasing fit of ``values`` (equal weights; pool adjacent
    violators, ``scipy.optimize.isotonic_regression``)."""
    return scipy_isotonic(np.asarray(values, dtype=float).reshape(-1)).x


def _counts_from_cumulative(below: np.ndarray, devices: int) -> np.ndarray:
    """Bucket counts from estimates of the cumulative counts below each bucket boundary:
    their isotonic fit, clipped to ``[0, devices]``, differenced with 0 and ``devices`` at
    the ends (non-negative, summing to ``devices``)."""
    inner = np.clip(isotonic_regression(below), 0.0, float(devices))
    return np.diff(np.concatenate(([0.0], inner, [float(devices)])))


def isotonic_counts(bucket_sums: object, devices: int, *, centre: bool = True) -> np.ndarray:
    """Non-negative bucket counts summing to ``devices`` from the noisy ``bucket_sums``
    through the bounded isotonic fit of their cumulative counts (module docstring).
    Noise-free sums of non-negative counts summing to ``devices`` come back exactly."""
    n = integer_at_least(devices, "devices", 1)
    y = bucket_sums_array(bucket_sums)
    if centre:
        y = y - (y.sum() - n) / y.size
    return _counts_from_cumulative(np.cumsum(y)[:-1], n)


def unimodal_tail_counts(
    bucket_sums: object,
    widths: object,
    devices: int,
    noise_sd: float,
    *,
    level: float = TAIL_FIT_LEVEL,
    mode_z: float | None = None,
) -> tuple[np.ndarray, bool]:
    """The bucket counts with a non-increasing tail (module docstring): non-negative,
    summing to ``devices``, and whether the falling fit was kept (False: the plain
    projection ``simplex_projection(bucket_sums, devices)``, the data contradict a falling
    tail beyond the noise). ``widths``: the number of degrees in each bucket (0 for an
    empty last bucket, left as it is); ``noise_sd``: the public sd of one count's noise
    (``protocol.cadr_theta_noise.noise_sd``). The mode is the bucket of the highest
    projected count per degree (the lowest such bucket on ties); with ``mode_z = z``, among
    the buckets whose noisy sum is at least ``z · noise_sd`` (significantly occupied; all
    live buckets when none is), so a noise spike in a narrow empty bucket cannot be the
    mode (docs/cadr-private.md, "Mid-size fleets: error rising with ε"). A function of
    the noisy sums and public quantities: post-processing, no budget."""
    from scipy.special import chdtri  # beside scipy.optimize, already loaded here

    n = integer_at_least(devices, "devices", 1)
    y = bucket_sums_array(bucket_sums)
    w = np.asarray(widths, dtype=float).reshape(-1)
    if w.size != y.size or np.any(w < 0) or not np.all(np.isfinite(w)) or not np.any(w > 0):
        raise ParameterError(
            f"must be {y.size} non-negative bucket widths, not all 0, got {w.size}",
            field="widths",
            limit=f"{y.size} finite non-negative widths, not all 0",
            value=widths,
        )
    sd = positive_real(noise_sd, "noise_sd")
    alpha = positive_real(level, "level")
    if alpha >= 1:
        raise ParameterError(
            f"must be below 1, got {level!r}", field="level", limit="in (0, 1)", value=level
        )
    projected = simplex_projection(y, n)
    live = w > 0
    levels = np.where(live, projected / np.maximum(w, 1.0), -np.inf)
    if mode_z is not None:
        occupied = y >= mode_z * sd  # significantly occupied: the mode's candidates
        if np.any(live & occupied):
            levels = np.where(occupied, levels, -np.inf)
    fitted = np.flatnonzero(live & (np.arange(y.size) >= int(np.argmax(levels))))
    fit = y.copy()
    falling = scipy_isotonic(y[fitted] / w[fitted], weights=w[fitted] ** 2, increasing=False)
    fit[fitted] = falling.x * w[fitted]
    misfit = float(np.sum((y[fitted] - fit[fitted]) ** 2)) / sd**2
    if misfit > chdtri(fitted.size, alpha):
        return projected, False
    return simplex_projection(fit, n), True


def bootstrap_counts(
    bucket_sums: object,
    devices: int,
    eps_theta: float,
    parties: int,
    *,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = 0,
) -> np.ndarray:
    """The projection's counts with the bootstrap bias of their cumulative counts removed
    (module docstring), non-negative and summing to ``devices``. ``draws`` noise vectors
    of the secure sum's law (``noise_sum`` with ``devices`` survivors, ``parties``,
    ``eps_theta``) from ``default_rng(seed)``."""
    n = integer_at_least(devices, "devices", 1)
    y = bucket_sums_array(bucket_sums)
    b = integer_at_least(draws, "draws", 1)
    m = integer_at_least(parties, "parties", 1)
    x = simplex_projection(y, n)
    noise = noise_sum(np.random.default_rng(seed), n, m, eps_theta, b * y.size)
    again = np.zeros(y.size - 1)
    for z in noise.reshape(b, y.size):
        again += np.cumsum(simplex_projection(x + z, n))[:-1]
    below = np.cumsum(x)[:-1]
    corrected = below - (again / b - below)
    return _counts_from_cumulative(corrected, n)


def _decay_grid(decay_max: float) -> np.ndarray:
    """The candidate ratios ``0, 0.01, ..., decay_max`` (the last one included)."""
    steps = math.floor(decay_max * 100 + 1e-9)
    return np.unique(np.append(np.arange(steps + 1) / 100.0, decay_max))


def _geometric_fit(tail_sums: np.ndarray, decay_max: float) -> tuple[float, float]:
    """The least-squares fit ``a ρ^i`` (``a >= 0``, ``i = 0, 1, ...``) to ``tail_sums``
    over ``_decay_grid``: ``(ρ, a)``. For each ``ρ`` the best ``a`` in closed form,
    ``max(0, <y, ρ^i> / <ρ^i, ρ^i>)``; the lowest ``ρ`` on ties (``a = 0``: every ``ρ``
    fits alike, and 0 keeps the tail compact)."""

    def free(basis: np.ndarray) -> tuple[float, np.ndarray]:
        a = max(0.0, float(tail_sums @ basis) / float(basis @ basis))
        return a, a * basis

    return _least_squares_ratio(tail_sums, decay_max, free)


def _fitted_decay(tail_sums: np.ndarray, decay_max: float) -> float:
    """The ratio ``ρ`` of ``_geometric_fit`` (the free least-squares geometric fit)."""
    return _geometric_fit(tail_sums, decay_max)[0]


def _tied_decay(tail_sums: np.ndarray, mass: float, decay_max: float) -> float:
    """The ratio ``ρ`` over ``_decay_grid`` whose placement of ``mass``, ``mass ρ^i / Σ_j
    ρ^j``, is the least-squares fit to ``tail_sums`` (the amplitude TIED to the mass that
    is placed, not free); the lowest ``ρ`` on ties."""

    def tied(shape: np.ndarray) -> tuple[float, np.ndarray]:
        return mass, mass * shape / shape.sum()

    return _least_squares_ratio(tail_sums, decay_max, tied)[0]


def _least_squares_ratio(
    tail_sums: np.ndarray,
    decay_max: float,
    fit: Callable[[np.ndarray], tuple[float, np.ndarray]],
) -> tuple[float, float]:
    """The ``ρ`` of ``_decay_grid`` whose ``fit(ρ^i)`` (an amplitude and the fitted sums)
    has the least squared misfit to ``tail_sums``, the lowest on ties: ``(ρ, amplitude)``."""
    index = np.arange(tail_sums.size)
    best, best_amplitude, best_misfit = 0.0, 0.0, math.inf
    for rho in _decay_grid(decay_max):
        amplitude, fitted = fit(rho**index)  # 0**0 = 1: ρ = 0 puts all in the first bucket
        misfit = float(np.sum((tail_sums - fitted) ** 2))
        if misfit < best_misfit - 1e-12:
            best, best_amplitude, best_misfit = float(rho), amplitude, misfit
    return best, best_amplitude


def top_significant_bucket(
    bucket_sums: object, noise_sd: float, *, mode_z: float, gap_corrected: bool = False
) -> int | None:
    """The top significant bucket ``g`` of ``geometric_tail_counts``; ``None`` when no
    bucket's noisy sum reaches ``mode_z · noise_sd``.

    ``gap_corrected=False`` (helper B): the highest bucket whose noisy sum is at least
    ``mode_z · noise_sd``. Among the ~30 truly empty buckets above a graph's maximum one
    reaches 3 sds by chance in about one θ search in five, and then ``g`` sits far above
    the tail.

    ``gap_corrected=True`` (issue 20, helper H): a scan up from the densest bucket. From
    the current ``g`` (first the densest bucket, if it reaches ``mode_z``), the next
    ``g`` is the lowest ``j > g`` with ``y_j >= (mode_z + ln(j − g) / √2) · noise_sd``;
    the scan stops when no ``j`` qualifies. A jump over ``k − 1`` insignificant buckets is
    a choice among ``k`` candidates, so its threshold is Bonferroni's for ``k`` tests
    under the noise's Laplace-like tail (``P(Z >= zσ) ≈ ½ e^(−√2 z)``: ``k`` times the
    tail at ``mode_z + ln k / √2`` is the tail at ``mode_z``). A contiguous run of
    significant buckets (``k = 1``) is taken at ``mode_z`` as before; a lone spike ``k``
    buckets above the run needs ``ln k / √2`` more sds (``k = 30``: 5.4). With every
    bucket above the run empty, noise moves ``g`` with probability at most ``Σ_k P(Z >=
    (mode_z + ln k / √2) σ)`` ≈ ``½ e^(−3√2) H_N`` ≈ 0.033 for ``N = 48`` empty buckets
    (the harmonic number ``H_N``), against ``1 − (1 − ½ e^(−3√2))^N`` ≈ 0.29 for the
    highest-bucket rule, and far buckets, whose noise costs the most EMD, least often."""
    y = bucket_sums_array(bucket_sums)
    sd = positive_real(noise_sd, "noise_sd")
    z = positive_real(mode_z, "mode_z")
    if not gap_corrected:
        significant = np.flatnonzero(y >= z * sd)
        return int(significant[-1]) if significant.size else None
    top = int(np.argmax(y))
    if y[top] < z * sd:
        return None
    while True:
        gaps = np.arange(1, y.size - top)
        passing = np.flatnonzero(y[top + 1 :] >= (z + np.log(gaps) / math.sqrt(2)) * sd)
        if not passing.size:
            return top
        top += 1 + int(passing[0])


def second_mode_top(bucket_sums: object, top: int, noise_sd: float, *, level: float) -> int:
    """``top`` raised to the top of any significant STRETCH of buckets above it (issue 20,
    helper J): a real second mode above the top significant bucket, whose buckets are
    each below the single-bucket thresholds but whose summed noisy count is not noise.

    A scan up from ``g = top``: a stretch ``[j, j']`` (``g < j <= j' < K``) starting ``k =
    j − g`` buckets above ``g`` passes when ``Σ_(i=j..j') y_i >= z_k · noise_sd ·
    √(j' − j + 1)``, ``z_k = ln(k (k + 1) (K − j) / (2 · level)) / √2``: the level
    ``level / (k (k + 1))`` spent on the start ``k`` (α-spending, ``Σ_k 1/(k(k+1)) = 1``:
    a far start, whose false alarm costs the most EMD, gets the least), shared by
    Bonferroni over the ``K − j`` lengths, each against the noise's Laplace-like tail
    ``P(Z >= zσ) ≈ ½ e^(−√2 z)`` (a sum of ``L >= 2`` buckets over ``σ√L`` has a lighter
    one). At the lowest start with a passing stretch, ``g`` moves to that start's
    shortest passing stretch's top; the scan repeats above the new ``g`` and stops when
    nothing passes. With every bucket above ``top`` pure noise, ``g`` moves with
    probability at most about ``level``. A function of the noisy sums and public
    quantities: post-processing, no budget."""
    y = bucket_sums_array(bucket_sums)
    g = integer_at_least(top, "top", 0)
    if g >= y.size:
        raise ParameterError(
            f"must be a bucket in [0, {y.size - 1}], got {top!r}",
            field="top",
            limit=f"a bucket in [0, {y.size - 1}]",
            value=top,
        )
    sd = positive_real(noise_sd, "noise_sd")
    alpha = positive_real(level, "level")
    if alpha >= 1:
        raise ParameterError(
            f"must be below 1, got {level!r}", field="level", limit="in (0, 1)", value=level
        )
    while True:
        moved = _lowest_passing_stretch_top(y, g, sd, alpha)
        if moved is None:
            return g
        g = moved


def _lowest_passing_stretch_top(y: np.ndarray, g: int, sd: float, alpha: float) -> int | None:
    """The top of the shortest passing stretch at the lowest start above ``g`` passing
    ``second_mode_top``'s thresholds, or None."""
    for start in range(g + 1, y.size):
        k = start - g
        z = math.log(k * (k + 1) * (y.size - start) / (2 * alpha)) / math.sqrt(2)
        lengths = np.arange(1, y.size - start + 1)
        passing = np.flatnonzero(np.cumsum(y[start:]) >= z * sd * np.sqrt(lengths))
        if passing.size:
            return start + int(passing[0])
    return None


def geometric_tail_counts(
    bucket_sums: object,
    counts: object,
    widths: object,
    noise_sd: float,
    *,
    mode_z: float,
    decay_max: float = TAIL_DECAY_MAX,
    gap_corrected: bool = False,
    stretch_level: float | None = None,
    fitted_mass: bool = False,
) -> np.ndarray:
    """``counts`` (non-negative bucket counts, e.g. ``bootstrap_counts``) with the mass
    above the top significant bucket re-placed on a geometric decay (issue 20, helper B).

    The top significant bucket ``g`` is the highest whose noisy sum is at least ``mode_z
    · noise_sd``. Above it a real degree tail is sparse (a few devices per bucket, each
    below the noise), and the truly empty wide buckets up to ``D`` hold noise that the
    counts keep and the spreading puts at degrees far above the graph's maximum. Neither
    a per-bucket nor a whole-tail test tells the two apart (docs/cadr-private.md, helpers
    G and H). Here nothing is tested and no mass is removed: the counts' own tail mass
    ``M = Σ_(i>g) counts_i`` stays, only its PLACE changes — to ``M ρ^i / Σ ρ^i`` in the
    ``i``-th bucket above ``g`` (buckets of width 0 get none), ``ρ`` the least-squares
    geometric decay of the noisy sums above ``g`` (``_fitted_decay``, ``ρ`` at most
    ``decay_max``). A falling tail (every degree distribution's above its mode; a power
    law's counts fall geometrically on the grid's geometric buckets) keeps its mass near
    ``g`` where the sums say it is, and a noise spike far up moves down to the tail.
    Buckets up to ``g``, the total and non-negativity are unchanged; no significant
    bucket, or none above ``g``: ``counts`` as they are. ``widths``: the number of degrees
    per bucket. ``gap_corrected``: ``g`` chosen by ``top_significant_bucket``'s scan with
    its multiplicity correction instead of as the highest significant bucket.
    ``stretch_level``: ``g`` then raised by ``second_mode_top`` at that level (a real
    second mode above ``g`` kept where the counts put it; None: not). ``fitted_mass``
    (issue 20, helper B round 2; docs/preregistration/B-tail-mass.md): the mass kept above
    ``g`` is at most ``F = a Σ_i ρ^i``, the mass of the free least-squares fit ``a ρ^i``
    to the noisy sums there (``_geometric_fit``); the surplus ``M − min(M, F)`` goes back
    to the buckets up to ``g`` in proportion to their counts (none when they hold
    nothing), and the kept mass is placed on the ratio whose placement of exactly that
    mass fits the sums best (``_tied_decay``) — a far noise stretch that ``counts`` kept no
    longer inflates the tail, and one negative sum just above ``g`` no longer collapses
    the ratio to 0. A function of the noisy sums and public quantities: post-processing,
    no budget."""
    if not isinstance(fitted_mass, (bool, np.bool_)):
        raise ParameterError(
            f"must be True or False, got {fitted_mass!r}",
            field="fitted_mass",
            limit="True or False",
            value=fitted_mass,
        )
    y = bucket_sums_array(bucket_sums)
    x = _same_size_array(counts, y.size, "counts")
    w = _same_size_array(widths, y.size, "widths")
    sd = positive_real(noise_sd, "noise_sd")
    z = positive_real(mode_z, "mode_z")
    rho_max = float(decay_max) if isinstance(decay_max, (int, float)) else math.nan
    if not 0.0 <= rho_max < 1.0:
        raise ParameterError(
            f"must be in [0, 1), got {decay_max!r}",
            field="decay_max",
            limit="in [0, 1)",
            value=decay_max,
        )
    top = top_significant_bucket(y, sd, mode_z=z, gap_corrected=gap_corrected)
    if stretch_level is not None:
        level = float(stretch_level) if isinstance(stretch_level, (int, float)) else math.nan
        if not 0.0 < level < 1.0:
            raise ParameterError(
                f"must be in (0, 1), got {stretch_level!r}",
                field="stretch_level",
                limit="in (0, 1)",
                value=stretch_level,
            )
        if top is not None:
            top = second_mode_top(y, top, sd, level=level)
    if top is None or top >= y.size - 1:
        return x
    live = w[top + 1 :] > 0
    mass = float(x[top + 1 :].sum())
    if mass <= 0 or not np.any(live):
        return x
    out = x.copy()
    tail_sums = y[top + 1 :][live]
    if fitted_mass:
        mass, rho = _fitted_tail_mass(out, top, mass, tail_sums, rho_max)
    else:
        rho = _fitted_decay(tail_sums, rho_max)
    shape = np.zeros(live.size)
    shape[live] = rho ** np.arange(int(live.sum()))  # 0**0 = 1: ρ = 0, all in the first
    out[top + 1 :] = mass * shape / shape.sum()
    return out


def _fitted_tail_mass(
    out: np.ndarray, top: int, mass: float, tail_sums: np.ndarray, rho_max: float
) -> tuple[float, float]:
    """``geometric_tail_counts(fitted_mass=True)``: the mass kept above ``top`` (at most
    the free geometric fit's) and its tied ratio; the surplus is added to ``out[: top +
    1]`` in place, in proportion to those counts."""
    head = out[: top + 1]
    head_total = float(head.sum())
    free_rho, amplitude = _geometric_fit(tail_sums, rho_max)
    fitted = amplitude * float(np.sum(free_rho ** np.arange(tail_sums.size)))
    kept = min(mass, fitted) if head_total > 0 else mass
    if kept < mass:
        out[: top + 1] = head + (mass - kept) * head / head_total
    return kept, _tied_decay(tail_sums, kept, rho_max) if kept > 0 else 0.0


def _same_size_array(values: object, size: int, field: str) -> np.ndarray:
    """``values`` as a float array of ``size`` finite non-negative numbers, or an error
    naming ``field``, the size wanted and what came."""
    try:
        v = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ParameterError(
            f"must be {size} real numbers, got {values!r}",
            field=field,
            limit=f"{size} finite non-negative numbers",
            value=values,
        ) from None
    if v.size != size or not np.all(np.isfinite(v)) or np.any(v < 0):
        raise ParameterError(
            f"must be {size} finite non-negative numbers, got {v.size} values "
            f"(minimum {v.min() if v.size else None})",
            field=field,
            limit=f"{size} finite non-negative numbers",
            value=values,
        )
    return v


def _log_mgf(t: np.ndarray, ratio: float, shape: float) -> np.ndarray:
    """``log E[e^(tD)]`` of ``D = A - B``, ``A, B ~ NB(shape, 1 - a)`` (failures),
    ``|t| < -log a``: ``shape · log((1 - a)^2 / ((1 - a e^t)(1 - a e^-t)))``."""
    a = ratio
    return shape * (2 * math.log1p(-a) - np.log1p(-a * np.exp(t)) - np.log1p(-a * np.exp(-t)))


def tail_threshold(buckets: int, eps_theta: float, shape: float, level: float) -> float:
    """The smallest ``c`` (to 1e-6) with ``min_t E[e^(tD)] e^(-tc) <= level`` for the noise
    ``D`` of ``buckets`` bucket sums (``NB(buckets · shape, 1 - a) - NB(...)``, ``a =
    exp(-ε_θ / 2)``): by Chernoff ``P(D >= c) <= level``. The minimum over ``t`` is taken
    on a grid of 512 points of ``(0, -log a)``; any ``t`` gives a valid bound, so the grid
    only makes ``c`` (slightly) larger, never the level's guarantee weaker."""
    k = integer_at_least(buckets, "buckets", 1)
    a = math.exp(-positive_real(eps_theta, "eps_theta") / 2)
    r = k * positive_real(shape, "shape")
    lv = positive_real(level, "level")
    if lv >= 1:
        raise ParameterError(
            f"must be in (0, 1), got {level!r}", field="level", limit="in (0, 1)", value=level
        )
    ts = -math.log(a) * np.arange(1, 513) / 513
    logm = _log_mgf(ts, a, r)
    target = math.log(lv)

    def bound(c: float) -> float:
        return float(np.min(logm - ts * c))

    lo, hi = 0.0, 1.0
    while bound(hi) > target:
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-6:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if bound(mid) <= target else (mid, hi)
    return hi


def empty_tail_start(
    bucket_sums: object,
    devices: int,
    eps_theta: float,
    parties: int,
    *,
    level: float = TAIL_LEVEL,
) -> int:
    """The first bucket of the top stretch read as empty: ``1 + max{j : Σ_{i>=j} y_i >=
    c_(K-j)}`` with ``c_k`` the Chernoff threshold for ``k`` buckets at ``level / K``
    (Bonferroni over the ``K`` stretches: a truly empty top is read as occupied with
    probability at most ``level``); ``K`` when the last bucket's own sum is significant,
    0 when no stretch is."""
    y = bucket_sums_array(bucket_sums)
    n = integer_at_least(devices, "devices", 1)
    m = integer_at_least(parties, "parties", 1)
    k = y.size
    tails = np.cumsum(y[::-1])  # tails[i] = the sum of the top i + 1 buckets
    for size in range(1, k + 1):
        if tails[size - 1] >= tail_threshold(size, eps_theta, n / m, level / k):
            return k - size + 1
    return 0


def tail_counts(
    bucket_sums: object,
    devices: int,
    eps_theta: float,
    parties: int,
    *,
    isotonic: bool = False,
    level: float = TAIL_LEVEL,
) -> np.ndarray:
    """The buckets from ``empty_tail_start`` up set to 0, the others read by
    ``simplex_projection`` (or ``isotonic_counts``); all buckets so read when no stretch
    is significant. Non-negative, summing to ``devices``."""
    y = bucket_sums_array(bucket_sums)
    n = integer_at_least(devices, "devices", 1)
    start = empty_tail_start(y, n, eps_theta, parties, level=level)
    if start == 0:
        start = y.size
    out = np.zeros(y.size)
    out[:start] = isotonic_counts(y[:start], n) if isotonic else simplex_projection(y[:start], n)
    return out
