"""Exponential mechanism and the NDOE degree-rank encoding — theory of operation.

Exponential mechanism (McSherry & Talwar, "Mechanism Design via Differential Privacy",
FOCS 2007). Given a finite candidate set ``O`` and a score ``u(x, o)`` whose change between
neighbouring inputs is at most ``Du`` for every ``o`` (the sensitivity), output ``o`` with

    P(o | x) = exp(eps u(x, o) / (2 Du)) / sum_o' exp(eps u(x, o') / (2 Du)).

For neighbours ``x, x'`` the numerator changes by at most ``e^(eps/2)`` and the normaliser by
at most ``e^(eps/2)``, so ``P(o | x) / P(o | x') <= e^eps`` for every ``o``: pure ``eps``-DP in
the sense of Dwork et al. ("Calibrating Noise to Sensitivity in Private Data Analysis",
TCC 2006), here applied locally (each device randomizes its own input). Probabilities are
computed stably by subtracting ``max_o u(x, o)`` from every score before exponentiating (the
shift cancels in the ratio), so no score range can overflow; entries far below the maximum
may underflow to 0 in ``probabilities`` (the float view, for analysis and tests).

Sampling is exact (``samplers.exponential_choice``), not the inverse CDF of one double: the
budget and scores are taken as exact rationals (``rate = eps / (2 Du)``, a ``Fraction``),
a candidate ``k`` is proposed uniformly from the generator's bits and accepted with an exact
``Bernoulli(exp(-rate (max_o u(x, o) - u(x, k))))`` (Canonne, Kamath and Steinke's
Algorithm 1 on that rational), else proposed again. The output law is exactly the one
above, every candidate keeps a positive probability however small, and the ratio bound
``e^eps`` holds exactly. The former sampler compared ``rng.random()`` (a multiple of
``2**-53``) with a float CDF: a candidate whose weight fell below the CDF's rounding (e.g.
``exp(-250)`` next to 1) was never output, so for two inputs that swap such scores the
ratio of its probabilities was unbounded. Cost: expected ``n / sum_o exp(-gap_o) <= n``
rounds for ``n`` candidates, a few microseconds each (module ``protocol.samplers``). The
module is pure (no global RNG, no I/O).

NDOE (Neighbour Degree Order Encoding, Alg. 4 of the CADR-LDP spec,
``/work/shared/reference/cadr-ldp.md``; Zhang et al., arXiv 2507.10627). The collector
publishes ordered partitions ``P_1 .. P_|O|`` of the public degree range ``[d_min, d_max]``
(``ndoe_partitions``). Device ``i`` samples its code ``o_i`` from the exponential mechanism
with score ``u(d_i, j) = -|d_i - median(P_j)|`` (``ndoe_scores``), budget ``alpha eps / 2``,
and sensitivity ``Du = d_max - d_min`` (``ndoe_sensitivity``), then sends ``o_i`` to every
neighbour: a noisy degree rank.

Why ``Du = d_max - d_min``: CADR-LDP protects node-LDP neighbours, i.e. two adjacency
vectors that may differ in ALL bits, so ANY two degrees of the public range are neighbouring
inputs (unlike edge-LDP, where the degree moves by 1). For ``d, d'`` in the range and any
``j``, ``|u(d, j) - u(d', j)| = ||d - m_j| - |d' - m_j|| <= |d - d'| <= d_max - d_min`` by the
reverse triangle inequality. A degree outside the published range is first clamped into it
(a fixed, public, data-independent map), so the bound — and the privacy guarantee — holds for
every possible input.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.samplers import exponential_choice
from ldpfleet.protocol.validate import integer_at_least, positive_real, real_array

__all__ = [
    "ExponentialMechanism",
    "ndoe_partitions",
    "ndoe_scores",
    "ndoe_sensitivity",
]


def _check_scores(scores: object) -> np.ndarray:
    if (
        type(scores) is np.ndarray
        and scores.dtype == np.float64
        and scores.ndim == 1
        and scores.size
        and np.isfinite(scores).all()
    ):  # the common case (an NDOE score vector), the same array the general path returns;
        # about half of its cost (helper A, 2026-12-07: 6.4 of 172 s of degree-connected)
        return scores
    s = real_array(scores, "scores")
    if s.ndim == 0 or s.shape[-1] == 0:
        raise ParameterError(
            "must be a non-empty array (one score per candidate)",
            field="scores",
            limit="a non-empty array (one score per candidate); value is the shape",
            value=s.shape,
        )
    bad = ~np.isfinite(s)
    if np.any(bad):
        idx = int(np.flatnonzero(bad.reshape(-1))[0])
        raise ParameterError(
            f"must be finite, got {s.reshape(-1)[idx]!r}",
            field=f"scores[{idx}]",
            limit="finite",
            value=s.reshape(-1)[idx],
        )
    return s


@dataclass(frozen=True)
class ExponentialMechanism:
    """The exponential mechanism with budget ``eps`` for scores of sensitivity
    ``sensitivity`` over a finite candidate set (candidate ``k`` has score ``scores[k]``)."""

    eps: float
    sensitivity: float
    rate: Fraction = field(init=False, repr=False, compare=False)  # eps / (2 Du), exactly

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", positive_real(self.eps, "eps"))
        object.__setattr__(self, "sensitivity", positive_real(self.sensitivity, "sensitivity"))
        rate = Fraction(self.eps) / (2 * Fraction(self.sensitivity))
        object.__setattr__(self, "rate", rate)

    def probabilities(self, scores: Sequence[float] | np.ndarray) -> np.ndarray:
        """``exp(eps s_k / (2 Du))`` normalised over the last axis (max-shifted first).

        ``scores`` is one score per candidate (or a stack of such rows: the last axis indexes
        candidates). All scores must be finite."""
        s = _check_scores(scores)
        w = (self.eps / (2.0 * self.sensitivity)) * (s - s.max(axis=-1, keepdims=True))
        weights = np.exp(w)  # the best candidate has weight exactly 1, so the sum is >= 1
        return weights / weights.sum(axis=-1, keepdims=True)

    def sample(self, scores: Sequence[float] | np.ndarray, rng: np.random.Generator) -> int:
        """Index of the sampled candidate, drawn exactly with probability ``exp(rate s_k) /
        sum_j exp(rate s_j)`` (``rate = eps / (2 Du)``; the scores and the budget as exact
        rationals: module docstring, ``samplers.exponential_choice``)."""
        s = _check_scores(scores)
        if s.ndim != 1:
            raise ParameterError(
                f"must be one-dimensional, got shape {s.shape}",
                field="scores",
                limit="one-dimensional; value is the shape",
                value=s.shape,
            )
        return exponential_choice(rng, s, self.rate)


def ndoe_partitions(d_min: int, d_max: int, parts: int) -> list[tuple[int, int]]:
    """Split the integer degree range ``[d_min, d_max]`` into ``parts`` ordered, contiguous,
    non-empty partitions, returned as inclusive bounds ``(lo_j, hi_j)``.

    Sizes are as equal as possible: with ``R = d_max - d_min + 1`` degrees, the first
    ``R mod parts`` partitions hold ``ceil(R / parts)`` degrees and the rest
    ``floor(R / parts)`` (the ``numpy.array_split`` rule), so sizes differ by at most 1 and
    ``lo_1 = d_min``, ``hi_j + 1 = lo_(j+1)``, ``hi_|O| = d_max``. Needs integers
    ``0 <= d_min < d_max`` (a one-point range would give sensitivity 0 and carries no
    information) and ``1 <= parts <= R`` (no empty partition).
    """
    lo = integer_at_least(d_min, "d_min", 0)
    hi = integer_at_least(d_max, "d_max", lo + 1)
    size = hi - lo + 1
    k = integer_at_least(parts, "parts", 1)
    if k > size:
        raise ParameterError(
            f"must be <= the number of degrees in [{lo}, {hi}] ({size}), got {parts!r}",
            field="parts",
            limit=f"<= the number of degrees in [{lo}, {hi}] ({size})",
            value=parts,
        )
    base, extra = divmod(size, k)
    out: list[tuple[int, int]] = []
    start = lo
    for j in range(k):
        width = base + (1 if j < extra else 0)
        out.append((start, start + width - 1))
        start += width
    return out


def _check_partitions(partitions: Sequence[tuple[int, int]]) -> np.ndarray:
    """Partitions as an ``(k, 2)`` int array, refusing gaps, overlaps, disorder."""
    try:
        arr = [(p[0], p[1]) for p in partitions]
    except (TypeError, IndexError, KeyError):
        raise ParameterError(
            "must be a sequence of (lo, hi) pairs",
            field="partitions",
            limit="a sequence of (lo, hi) pairs",
            value=partitions,
        ) from None
    if not arr:
        raise ParameterError(
            "must hold at least one partition",
            field="partitions",
            limit="at least one partition",
            value=partitions,
        )
    prev_hi: int | None = None
    for j, (lo, hi) in enumerate(arr):
        for v in (lo, hi):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ParameterError(
                    f"bounds must be integers, got {(lo, hi)!r}",
                    field=f"partitions[{j}]",
                    limit="integer bounds",
                    value=(lo, hi),
                )
        if lo < 0 or hi < lo:
            raise ParameterError(
                f"need 0 <= lo <= hi, got {(lo, hi)!r}",
                field=f"partitions[{j}]",
                limit="0 <= lo <= hi",
                value=(lo, hi),
            )
        if prev_hi is not None and lo != prev_hi + 1:
            raise ParameterError(
                f"must start right after the previous partition (at {prev_hi + 1}), "
                f"got {(lo, hi)!r}",
                field=f"partitions[{j}]",
                limit=f"lo == {prev_hi + 1} (right after the previous partition)",
                value=(lo, hi),
            )
        prev_hi = hi
    return np.array(arr, dtype=np.int64)


def ndoe_sensitivity(partitions: Sequence[tuple[int, int]]) -> int:
    """``Du = d_max - d_min`` of the range covered by ``partitions`` (module docstring)."""
    p = _check_partitions(partitions)
    du = int(p[-1, 1] - p[0, 0])
    if du < 1:
        raise ParameterError(
            "must cover at least two degrees",
            field="partitions",
            limit="cover at least two degrees",
            value=partitions,
        )
    return du


def ndoe_scores(degree: int, partitions: Sequence[tuple[int, int]]) -> np.ndarray:
    """``u(d, j) = -|d - median(P_j)|`` for every partition ``j`` (float array).

    ``median(P_j)`` is the median of the integers ``lo_j .. hi_j``, i.e. ``(lo_j + hi_j) / 2``
    (a half-integer for an even-sized partition). ``degree`` (an integer >= 0) is clamped
    into ``[d_min, d_max]`` first so that the sensitivity bound ``d_max - d_min`` holds."""
    d = integer_at_least(degree, "degree", 0)
    p = _check_partitions(partitions)
    clamped = min(max(d, int(p[0, 0])), int(p[-1, 1]))
    medians = (p[:, 0] + p[:, 1]) / 2.0
    return -np.abs(clamped - medians)
