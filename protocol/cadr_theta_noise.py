"""The differentially private θ search of CADR-LDP: noisy bucket counts by secure sum —
theory of operation.

The paper's searches (``collector.theta_search``; spec §1, Alg. 2-3) open exact secure
sums, so the collector learns exact counts ``#{i : d_i > t}``: aggregates, but covered by no
ε. Here every opened sum is itself ε_θ-DP (node-level: one device's whole adjacency list
may change), and its ε_θ is a named part of each device's budget
(``protocol.cadr_budget.CadrBudget.theta``), charged in its ledger.

Query: ONE round. The collector publishes thresholds ``t_1 < ... < t_k`` in ``[1, D]``
(``bucket_grid``: every integer up to 16, then geometric; ``k`` from ``bucket_count``: fewer
buckets when ``n · ε_θ`` is small); device ``i`` answers the one-hot
vector of its bucket (``bucket_vector``: entry ``j`` is ``[t_j < d_i <= t_(j+1)]`` with
``t_0 = -inf``, ``t_(k+1) = +inf``, length ``k + 1``). Changing one device's degree moves
its 1 from one entry to another: the L1 sensitivity of the summed vector is 2 whatever
``k``. The collector's counts above each threshold are suffix sums of the bucket counts
(``counts_above``), post-processing. (Asking the ``[d > t_j]`` bits instead would have
sensitivity ``k``, and an adaptive binary search one such sum per round: the one-hot
round is the cheapest in noise and in secure sums.)

Noise: the two-sided geometric mechanism (Ghosh, Roughgarden & Sundararajan, "Universally
utility-maximizing privacy mechanisms", STOC 2009): adding ``Z`` with
``P[Z = z] ∝ a^|z|``, ``a = exp(-ε_θ / 2)``, to each bucket count is ε_θ-DP for L1
sensitivity 2. It is added in a distributed way by Pólya shares: ``Geometric(1 - a)`` (the
number of failures before a success) is infinitely divisible — it is the negative
binomial ``NB(1, 1 - a)``, and the sum of ``m`` independent ``NB(1/m, 1 - a)`` (Pólya)
variables is ``NB(1, 1 - a)``; the difference of two independent ``Geometric(1 - a)`` is
the two-sided geometric. So each device adds ``NB(1/m, 1 - a) - NB(1/m, 1 - a)`` to each
entry (``polya_share``), and any ``m`` shares sum to exactly the mechanism's noise (the
distributed geometric mechanism of Goryczka & Xiong, "A comprehensive comparison of
multiparty secure additions with differential privacy", IEEE TDSC 2017).

Dropouts: ``m`` is the plan's ``noise_parties``, the fewest survivors the collector opens a
sum with (``ceil(NOISE_SURVIVAL · n)``; ``collector.cadr_fleet`` runs the secure sum with
``min_inputs = m``, so it aborts before unmasking fewer). A sum over ``s >= m`` survivors carries
``NB(s/m) - NB(s/m)`` = the mechanism's noise plus independent, data-independent extra
noise, so it is at least as private (post-processing); a dropped device's share is
missing, but so is its bucket. Each survivor adds noise for ``m``, not ``n``: the noise
stays sufficient with up to ``n - m`` dropouts, at the price of ``s/m`` times the
variance when all survive (1.11 with ``NOISE_SURVIVAL = 0.9``). Caveats: the shares of
honest devices only (devices that collude with the collector and reveal their shares
remove their part of the noise); in SecAgg+ a device sees only its neighbourhood, so the
"at least ``m`` survivors" rule is the collector's, not checked by each device.

Sampler (exact, issue 21): ``polya_share`` draws through ``protocol.samplers.
negative_binomial`` — integer arithmetic on the injected generator's uniform integers
(a Bernoulli factory for ``(1 - a)^(1/m)`` and a rejection step, both with rational
coins), so no floating point decides a share and the sum of ``m`` shares is the two-sided
geometric law exactly. That needs a rational ratio: ``share_ratio(eps)`` is
``protocol.samplers.geometric_ratio_bound(eps / 2)``, the smallest ``u / 2**30 >=
exp(-eps / 2)`` (a rigorous bound), so the mechanism actually run is ``eps'``-DP with
``eps' = 2 ln(1 / a) <= eps``: the ledger's charge of ``eps`` is an upper bound (the
difference is below ``2**-29``). Before it, numpy's floating-point gamma-Poisson
``negative_binomial`` drew the shares. The secure sum carries each answer as a
fixed-point integer in ``[-SHARE_BOUND, SHARE_BOUND + 1]``: a share beyond ``±2^24`` (far
beyond any realistic draw: ``P ≤ a^(2^24 m)``-small) would be clipped.

Choosing θ: ``theta_from_counts`` returns the smallest threshold whose noisy count above is
at most the target (``collector.theta_search.deviation_target``), ``D`` if none is. Pure
functions; randomness from the injected generator.

The supported top (``supported_top``, ``THETA_CAP_Z``; issue 20, helper A). The count
above ``t_j`` sums the noise of the ``k - j`` buckets above it (``k`` thresholds, ``j``
from 0): sd ``σ √(k - j)``, ``σ`` one bucket's. On fleets of a few dozen devices the
empty buckets above the largest degree are many and that sum often exceeds a target of a
dozen devices, so the search walked past every degree (docs/cadr-private.md, "Mid-size
fleets: error rising with ε": a θ above the largest degree in 24-26 of 69 runs at ε >= 1,
never with the exact counts), and a θ above every degree only adds Laplace noise of
scale ``θ / ε_dsr``.
With the counts' public noise sd ``σ`` (``noise_sd=``), θ is capped one bucket above the
highest bucket the counts SUPPORT: a bucket ``(t_j, t_(j+1)]`` is supported when its own
noisy sum is at least ``z σ`` or the noisy count above ``t_j`` is at least ``z σ √(k - j)``
(that count sums ``k - j`` bucket noises; either says "significantly more than 0 devices
above ``t_j``" at a one-sided ``z``: the bucket test sees a narrow dense bucket, the
suffix test a tail spread thin over many buckets); the cap is the upper edge of the NEXT
bucket, ``t_(j+2)`` (``hi`` past the last threshold), a bucket of slack for a tail that
thins out below the noise; no cap when no bucket is supported. ``THETA_CAP_Z = 4``: one
empty bucket's two-sided geometric noise reaches ``4 σ`` with probability ``a^(4σ) /
(1 + a) ≈ 1.8 · 10⁻³`` at ε_θ = 0.5 (3 σ: 8 · 10⁻³; all devices alive); chosen on the
calibration sets only (``scripts/cadr_band_eval.py`` ``band``, ``band2``;
``scripts/A_theta_cap.py``): z = 4 with the slack bucket had the lowest summed MAE of
z = 3, 4 with and without the slack; the cap at the supported bucket's own edge cut θ
below the hubs of small Barabási–Albert graphs. Exact counts are never capped.
Post-processing of the one noisy round: no budget, no new query; on large fleets the
supported top lies far above every θ the target picks and nothing changes. Status: OFF
(``THETA_CAP_Z = None``): pre-registered at z = 4, it FAILED on its evaluation set
(``scripts/A_theta_cap.py``, 150 fresh cells of n = 25-150: summed MAE 325.25 → 325.83,
cells above the constant true median 114 → 116; large fleets identical): a smaller θ
makes the releases informative, and the nodes then leave the prior's median for the
prior's noise spikes — the θ above every degree had been protecting them
(docs/cadr-private.md, "Mid-size fleets: θ above the largest degree").
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.samplers import geometric_ratio_bound, negative_binomial
from ldpfleet.protocol.validate import integer_at_least, positive_real

__all__ = [
    "BUCKETS",
    "NOISE_SURVIVAL",
    "SENSITIVITY",
    "SHARE_BOUND",
    "THETA_CAP_Z",
    "THETA_MECHANISM",
    "bucket_count",
    "bucket_grid",
    "bucket_vector",
    "counts_above",
    "geometric_ratio",
    "noise_parties",
    "noise_sd",
    "noise_sum",
    "polya_share",
    "share_ratio",
    "supported_top",
    "theta_from_counts",
]

BUCKETS = 48  # thresholds of the noisy θ search (at most; fewer distinct for small D)
MIN_BUCKETS = 16  # bucket_count's floor
INTEGER_CUT = 16  # bucket_grid: every degree 0..16 has a bucket of its own
NOISE_SURVIVAL = 0.9  # the collector opens a noisy sum only with >= 90% of devices alive
THETA_MECHANISM = "two-sided geometric by Pólya shares (protocol.cadr_theta_noise)"
SENSITIVITY = 2  # L1 change of the summed one-hot vector when one device's degree changes
SHARE_BOUND = 2**24  # fixed-point range of one device's noisy answer
# theta_from_counts caps θ one bucket above the highest bucket whose sum, or count above,
# is >= THETA_CAP_Z noise sds of it (module docstring, "The supported top"); None: no cap
THETA_CAP_Z: float | None = None  # failed its pre-registration at 4 (module docstring)


def noise_parties(n: int, survival: float = NOISE_SURVIVAL) -> int:
    """``m = ceil(survival · n)``: the shares that make up the whole noise (module
    docstring, Dropouts); at least 1."""
    nn = integer_at_least(n, "n", 1)
    s = positive_real(survival, "survival")
    if s > 1:
        raise ParameterError(
            f"must be in (0, 1], got {survival!r}",
            field="survival",
            limit="in (0, 1]",
            value=survival,
        )
    return max(1, math.ceil(s * nn - 1e-9))


def geometric_ratio(eps: float, sensitivity: int = SENSITIVITY) -> float:
    """``a = exp(-eps / sensitivity)`` of the two-sided geometric mechanism."""
    return math.exp(-positive_real(eps, "eps") / integer_at_least(sensitivity, "sensitivity", 1))


def noise_sd(eps_theta: float, survivors: int, parties: int) -> float:
    """The standard deviation of ``NB(s/m, 1 - a) - NB(s/m, 1 - a)``, ``a = exp(-ε_θ /
    2)``: ``sqrt(2 (s/m) a) / (1 - a)`` (a negative binomial ``NB(r, 1 - a)`` counting
    failures has variance ``r a / (1 - a)^2``)."""
    eps = positive_real(eps_theta, "eps_theta")
    s = integer_at_least(survivors, "survivors", 1)
    m = integer_at_least(parties, "parties", 1)
    a = math.exp(-eps / 2)
    return math.sqrt(2 * (s / m) * a) / (1 - a)


def bucket_count(devices: int, eps: float) -> int:
    """How many thresholds to ask for (the ``buckets`` of ``bucket_grid``): ``round(n ·
    eps / 8)`` within ``[MIN_BUCKETS, BUCKETS]``. Each bucket count carries noise of
    standard deviation ``≈ 2√2 / eps`` (the two-sided geometric for sensitivity 2, small
    eps), and the count of degrees below a threshold sums the noise of every bucket below
    it; ``n eps / 8`` buckets keep the summed standard deviations of all buckets near
    ``0.35 n`` — coarser buckets when the noise is large relative to ``n`` (the collector
    also reads the counts as a prior on the degrees: ``collector.degree_postprocess.
    degree_prior``). A function of the public ``n`` and eps only."""
    n = integer_at_least(devices, "devices", 1)
    e = positive_real(eps, "eps")
    return int(min(BUCKETS, max(MIN_BUCKETS, round(n * e / 8))))


def bucket_grid(degree_bound: int, buckets: int = BUCKETS) -> list[int]:
    """Ascending distinct thresholds in ``[0, D - 1]`` (``[0, 1]`` for ``D <= 2``): every
    integer ``0 .. c`` with ``c = min(INTEGER_CUT, D - 1, B // 3)``, then ``m = B - c - 1``
    thresholds geometric from ``c`` to ``D - 1`` (``floor(c · ((D - 1) / c)^(j / m))``,
    ``j = 1 .. m``), ``D - 1`` last; every integer ``0 .. D - 1`` when ``D - 1 <= B``. A
    function of the public ``D`` and ``B`` only, never of the graph: the thresholds are
    published in the plan, so the θ search's privacy claim (one ε_θ-DP round, module
    docstring) is unchanged.

    Why: with the public ``D = n - 1`` (``protocol.cadr_budget.resolve_degree_bound``) the
    grid of before (``floor(D^(j/B))``, ``j < B``) spent its ``B`` exponents on ``[1, n -
    1]``; the first ones collapse onto the same small integers (43 distinct of 48 at ``D =
    1999``), and degrees 8-16, where sparse graphs hold their mass, shared buckets of width
    2-3: the prior's histogram L1 on a Watts–Strogatz graph (k = 6, n = 2,000) rose from
    0.009 (``D`` = its maximum, 12) to 0.033. Every integer up to 16, then one constant
    ratio over the rest, uses all ``B`` thresholds (the ratio above 16 is about the old
    one's: 1.17 at ``D = 1999``); measured in docs/cadr-private.md ("The bucket grid").
    The cut is at most a third of the buckets: with ``c = min(16, B - 1)`` the smallest
    bucket count (``MIN_BUCKETS`` = 16, every graph of n <= 128 at eps <= 1) left the grid
    0..15 and ``D - 1``, one bucket for every degree from 16 to ``D - 1``: five cliques of
    20 (n = 100, every degree 19) had their prior spread over 16..98 and a release MAE of
    35.7 against the constant median's 0 (found by the prior-denoising measurement,
    docs/cadr-private.md). With ``B // 3``, ``B = 16`` gives 0..5 and ten geometric steps
    to ``D - 1`` (ratio ≈ 1.35 at ``D = 99``); ``B = 48`` keeps the measured 0..16.
    The threshold 0 gives degree 0 a bucket of its own (without it, degrees 0 and 1 shared
    one and the prior split it evenly: on a graph of stars, where most nodes are leaves of
    degree 1, half the leaves' prior mass sat at 0); ``D - 1`` gives the bound ``D`` one
    (a random 20-regular graph, ``D = 20``, had its every node in the bucket 18..20 and
    the prior's median at 19)."""
    d = integer_at_least(degree_bound, "degree_bound", 1)
    b = integer_at_least(buckets, "buckets", 1)
    if d <= 2:
        return [0, 1]
    if d - 1 <= b:
        return list(range(d))
    cut = max(1, min(INTEGER_CUT, d - 1, b // 3))  # 2/3 of the buckets stay geometric
    grid = set(range(cut + 1)) | {d - 1}
    steps = b - cut - 1
    top = d - 1
    if steps > 0 and cut > 0:
        grid |= {min(int(cut * (top / cut) ** (j / steps)), top) for j in range(1, steps + 1)}
    return sorted(grid)


def bucket_vector(degree: int, thresholds: list[int] | np.ndarray) -> np.ndarray:
    """The one-hot vector (length ``k + 1``) of the bucket of ``degree`` (module docstring):
    entry ``#{j : t_j < degree}``."""
    if type(thresholds) is list and type(degree) is int and degree >= 0:
        # a device's call (a query's int thresholds, its own degree): the same entry
        # counted in Python (exact int comparisons, as numpy's), without the array round trip
        below = 0
        for threshold in thresholds:
            if type(threshold) is not int:
                break  # anything else: numpy's comparison below
            if threshold < degree:
                below += 1
        else:
            out = np.zeros(len(thresholds) + 1)
            out[below] = 1.0
            return out
    t = np.asarray(thresholds)
    out = np.zeros(len(t) + 1)
    out[int(np.count_nonzero(t < integer_at_least(degree, "degree", 0)))] = 1.0
    return out


def share_ratio(eps: float, sensitivity: int = SENSITIVITY) -> Fraction:
    """The rational ratio the shares use: the smallest ``u / 2**30 >= exp(-eps /
    sensitivity)`` (module docstring, Sampler): ``eps' = sensitivity · ln(1/a) <= eps``."""
    if type(eps) is float and type(sensitivity) is int:  # a device's call: once per budget
        return _share_ratio_cached(eps, sensitivity)
    return _share_ratio(eps, sensitivity)


def _share_ratio(eps: float, sensitivity: int) -> Fraction:
    e = positive_real(eps, "eps")
    s = integer_at_least(sensitivity, "sensitivity", 1)
    return geometric_ratio_bound(Fraction(e) / s)


_share_ratio_cached = lru_cache(maxsize=256)(_share_ratio)  # errors are not cached


def polya_share(rng: np.random.Generator, parties: int, eps: float, size: int) -> np.ndarray:
    """One device's noise share per entry: ``NB(1/m, 1 - a) - NB(1/m, 1 - a)`` with
    ``m = parties`` and ``a = share_ratio(eps)``, drawn exactly (int64; any ``m`` shares
    sum to the two-sided geometric of ratio ``a``)."""
    # a device's call passes ints: checked here without the generic (ABC) test, same rule
    m = (
        parties
        if type(parties) is int and parties >= 1
        else integer_at_least(parties, "parties", 1)
    )
    a = share_ratio(eps)  # through the module: a bug planted in it is what the shares use
    k = size if type(size) is int and size >= 1 else integer_at_least(size, "size", 1)
    both = negative_binomial(rng, _unit_fraction(m), a, 2 * k)  # one call: half the overhead
    return both[:k] - both[k:]


@lru_cache(maxsize=256)
def _unit_fraction(m: int) -> Fraction:
    """``Fraction(1, m)``, made once per ``m`` (a share's shape)."""
    return Fraction(1, m)


def noise_sum(
    rng: np.random.Generator, survivors: int, parties: int, eps: float, size: int
) -> np.ndarray:
    """The sum of ``survivors`` devices' ``polya_share`` draws, drawn at once (the same
    law: ``NB(s/m, 1 - a) - NB(s/m, 1 - a)`` per entry, exactly): for simulations of the
    secure sum (``collector.cadr_reference``)."""
    s = integer_at_least(survivors, "survivors", 1)
    m = integer_at_least(parties, "parties", 1)
    a = share_ratio(eps)
    k = integer_at_least(size, "size", 1)
    both = negative_binomial(rng, Fraction(s, m), a, 2 * k)
    return both[:k] - both[k:]


def counts_above(bucket_sums: object) -> np.ndarray:
    """Noisy ``#{i : d_i > t_j}`` for each threshold from the (rounded) bucket sums: the
    suffix sums of entries ``j + 1 .. k`` (int64, length ``k``)."""
    sums = np.rint(np.asarray(bucket_sums, dtype=float)).astype(np.int64)
    if sums.ndim != 1 or sums.size < 2:
        raise ParameterError(
            "must hold k + 1 >= 2 bucket sums", field="bucket_sums",
            limit="a 1-d sequence of k + 1 >= 2 sums", value=f"shape {sums.shape}",
        )  # fmt: skip
    return np.cumsum(sums[::-1])[::-1][1:]


def supported_top(
    thresholds: list[int], above: np.ndarray, noise_sd: float, z: float, hi: int
) -> int | None:
    """The cap of θ from the noisy counts (module docstring, "The supported top"): take
    the highest ``j`` (``k`` thresholds) whose bucket ``(t_j, t_(j+1)]`` is supported —
    its own sum ``above[j] - above[j+1]`` (``above[k-1]`` for the last) at least
    ``z · noise_sd``, or the count above ``t_j`` at least ``z · noise_sd · √(k - j)``
    (it sums ``k - j`` bucket noises) — and return the upper edge of the NEXT bucket,
    ``t_(j+2)`` (``hi`` beyond the last threshold): one bucket of slack for a tail that
    thins out above the last bucket the noise lets one see. None when no bucket is
    supported."""
    _check_counts(thresholds, above)
    sd = positive_real(noise_sd, "noise_sd")
    zz = positive_real(z, "z")
    top = integer_at_least(hi, "hi", 1)
    counts = np.asarray(above, dtype=float)
    k = len(thresholds)
    own = np.append(counts[:-1] - counts[1:], counts[-1:])  # bucket (t_j, t_(j+1)]'s sum
    for j in range(k - 1, -1, -1):
        if own[j] >= zz * sd or counts[j] >= zz * sd * math.sqrt(k - j):
            return top if j + 2 >= k else int(thresholds[j + 2])
    return None


def theta_from_counts(
    thresholds: list[int],
    above: np.ndarray,
    target: float,
    hi: int,
    *,
    noise_sd: float | None = None,
    cap_z: float | None = THETA_CAP_Z,
) -> int:
    """The smallest threshold whose count above is ``<= target`` (at least 1: θ = 0 would
    release nothing); ``hi`` if none is. With the counts' public ``noise_sd`` (and
    ``cap_z`` not None): at most ``supported_top(..., cap_z, hi)`` (module docstring, "The
    supported top"); exact counts (no ``noise_sd``) are never capped."""
    _check_counts(thresholds, above)
    theta = integer_at_least(hi, "hi", 1)
    for t, count in zip(thresholds, above, strict=True):
        if count <= target:
            theta = max(1, int(t))
            break
    if noise_sd is not None and cap_z is not None:
        cap = supported_top(thresholds, above, noise_sd, cap_z, hi)
        if cap is not None:
            theta = min(theta, max(1, cap))
    return theta


def _check_counts(thresholds: list[int], above: np.ndarray) -> None:
    if len(thresholds) != len(above):
        raise ParameterError(
            f"{len(above)} counts for {len(thresholds)} thresholds", field="counts_above",
            limit=f"{len(thresholds)} counts (one per threshold)", value=len(above),
        )  # fmt: skip
