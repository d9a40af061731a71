"""Choosing the projection threshold θ — the pure math of the two searches.

CADR-LDP (``/work/shared/reference/cadr-ldp.md``; Zhang et al., arXiv 2507.10627) projects
every degree onto ``[0, θ]`` so the DSR release (Laplace mechanism, Dwork et al., TCC 2006)
has sensitivity θ and noise of scale ``θ / eps_dsr``. A small θ loses edges (projection
error), a large θ adds noise; both searches trade these off. They only need SUMS over the
devices, which the collector obtains by secure aggregation (wired in later); this module
takes those sums as callables and is pure (no I/O, no randomness).

Search by Sum (Alg. 2). For a candidate θ each device reports its local error
``local_error(d_i, θ, eps_dsr) = max(0, d_i - θ) + θ / eps_dsr``: the projection loss
``d_i - min(d_i, θ)`` it would suffer if it kept exactly ``min(d_i, θ)`` edges (the best any
projection can do; LPEA may keep fewer, so this is the optimistic loss) plus the expected
absolute Laplace error ``E|Lap(θ / eps_dsr)| = θ / eps_dsr``. The collector securely sums
the errors for every candidate and takes the argmin (``theta_by_sum``; ties go to the
smaller θ, which has less noise for the same total). One secure aggregation per candidate.

Search by Deviation (Alg. 3). Minimise ``f(θ) = sum_i max(0, d_i - θ) + n θ / eps_dsr``.
For integers, ``f(θ + 1) - f(θ) = n / eps_dsr - #{i : d_i > θ}``, and the count is
non-increasing in θ, so ``f`` decreases while the count exceeds ``n / eps_dsr`` and never
decreases afterwards: the smallest θ with ``#{i : d_i > θ} <= n / eps_dsr`` is the smallest
minimiser (a θ whose count equals the target ties with θ + 1; the smaller is kept). This is
the ``(1 - 1/eps_dsr)`` quantile of the degrees. ``theta_by_deviation`` binary-searches it on
``[lo, hi]``: broadcast a probe θ, each device answers ``r_i = [d_i > θ]``, the collector
securely sums the ``r_i``; ``ceil(log2(hi - lo + 1))`` rounds at most. If every probe below
``hi`` fails, ``hi`` is returned (``f`` decreases on all of ``[lo, hi]``; pick
``hi >= max degree``, e.g. ``n - 1``, so that the count at ``hi`` is 0).

Clamp rule for ``eps_dsr <= 1`` (``deviation_target``): the target ``n / eps_dsr`` is
clamped to ``[0, n]``, the range of the count it is compared with. For ``eps_dsr > 1`` it is
already inside (``n / eps_dsr < n``). For ``eps_dsr <= 1`` the quantile ``1 - 1/eps_dsr <= 0``
is undefined and the target becomes ``n``: every θ satisfies ``count <= n``, so the answer is
``lo`` — exactly the minimiser of ``f``, since raising θ by one costs ``n / eps_dsr >= n`` in
noise while saving at most ``n`` in projection loss. ``theta_by_deviation`` then returns
``(lo, 0)`` without any round (no probe could change the answer, so none is spent).

What the collector learns: exact secure sums reveal aggregates — the total local error per
candidate θ, and ``#{i : d_i > θ}`` per probe — never an individual degree. Those counts are
NOT differentially private as computed here; if the aggregate must be DP too, devices can add
distributed noise (e.g. each adds a share of a discrete Laplace / Skellam so the sum carries
the full noise) before the secure sum. θ then enters DSR as a public parameter.

The Thm 3.5 bound (``thm35_bound``) is the spec's per-device error bound
``|τ_i| + V_i + b`` with ``τ_i = d_i - min(d_i, θ)``, ``V_i = |U1| e^e' / (e^e' - 1)^2`` (the
exact variance of Warner's debiased count, Warner 1965; ``e' = alpha eps / 2``) and
``b = θ / eps_dsr``. It is reproduced as written: note that ``V_i`` is a variance (a squared
count) entering a mean-absolute-error bound; by Jensen ``E|c' - c| <= sqrt(V_i)``, so the
written bound is conservative whenever ``V_i >= 1``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence

from ldpfleet.protocol.errors import LocalProtocolError, ParameterError, RemoteProtocolError
from ldpfleet.protocol.validate import integer_at_least, positive_real

__all__ = [
    "DeviationSearch",
    "deviation_target",
    "local_error",
    "theta_by_deviation",
    "theta_by_sum",
    "thm35_bound",
]


def local_error(degree: int, theta: int, eps_dsr: float) -> float:
    """Alg. 2's per-device error ``max(0, degree - theta) + theta / eps_dsr`` (module
    docstring): optimistic projection loss plus the expected absolute Laplace error."""
    d = integer_at_least(degree, "degree", 0)
    t = integer_at_least(theta, "theta", 1)
    e = positive_real(eps_dsr, "eps_dsr")
    return float(max(0, d - t)) + t / e


def theta_by_sum(candidates: Iterable[int], sum_of_errors: Callable[[int], float]) -> int:
    """The candidate θ minimising ``sum_of_errors(θ)`` (the securely summed local errors);
    ties go to the smaller θ. Each distinct candidate is evaluated once, in ascending order.
    A sum that is not a finite real is refused (``RemoteProtocolError``)."""
    try:
        raw = list(candidates)
    except TypeError:
        raise ParameterError(
            f"must be an iterable of integers, got {candidates!r}", field="candidates",
            limit="an iterable of integers >= 1", value=candidates,
        ) from None  # fmt: skip
    if not raw:
        raise ParameterError(
            "must hold at least one θ", field="candidates", limit="at least one θ", value=raw
        )
    thetas = sorted({integer_at_least(c, f"candidates[{i}]", 1) for i, c in enumerate(raw)})
    best: int | None = None
    best_sum = math.inf
    for theta in thetas:
        total = sum_of_errors(theta)
        if (
            isinstance(total, bool)
            or not isinstance(total, numbers.Real)
            or not math.isfinite(total)
        ):
            raise RemoteProtocolError(
                f"sum of errors for θ = {theta} must be a finite real, got {total!r}",
                field="sum_of_errors",
            )
        if best is None or total < best_sum:  # strict: an equal sum keeps the smaller θ
            best, best_sum = theta, float(total)
    assert best is not None
    return best


def deviation_target(n: int, eps_dsr: float, noise_weight: float = 1.0) -> float:
    """The count target ``noise_weight · n / eps_dsr`` clamped to ``[0, n]`` (module
    docstring; ``n`` for ``eps_dsr <= noise_weight``). ``noise_weight = 1`` is the paper's
    objective (the raw Laplace error ``θ / eps_dsr``); a smaller weight charges the noise
    at the post-processed release's smaller error (``collector.degree_postprocess.
    noise_weight``), which moves θ up."""
    nn = integer_at_least(n, "n", 1)
    e = positive_real(eps_dsr, "eps_dsr")
    w = positive_real(noise_weight, "noise_weight")
    return min(float(nn), w * nn / e)


class DeviationSearch:
    """The search by Deviation as a sans-I/O question/answer loop (module docstring).

    ``query()`` gives the thresholds to ask next (``None``: done, ``theta`` holds the
    answer); ``observe(counts)`` takes ``#{i : d_i > t}`` for each of them, in order. With
    ``fanout = 1`` each question is the binary-search midpoint (one secure sum of one bit
    per device); ``fanout = k`` asks ``k`` evenly spaced thresholds at once (one secure sum
    of ``k`` bits per device) and needs about ``log_(k+1)`` rounds instead of ``log_2``: the
    collector then learns up to ``k`` counts per round instead of one. ``spacing =
    "geometric"`` places the ``k`` thresholds evenly on a log scale between the bounds
    (``lo (hi/lo)^(j/(k+1))``): degrees are heavy-tailed, so the answer usually sits far
    below the middle of ``[1, D]``, and the geometric grid brackets it in fewer rounds
    (ego-Facebook, ``fanout = 7``: 3 rounds instead of 4 with the even grid). Every spacing
    finds the same θ: each round only narrows a bracket around the smallest qualifying θ.
    """

    def __init__(
        self,
        lo: int,
        hi: int,
        n: int,
        eps_dsr: float,
        *,
        fanout: int = 1,
        spacing: str = "linear",
        noise_weight: float = 1.0,
    ) -> None:
        if spacing not in ("linear", "geometric"):
            raise ParameterError(
                f"must be 'linear' or 'geometric', got {spacing!r}", field="spacing",
                limit="'linear' or 'geometric'", value=spacing,
            )  # fmt: skip
        self.spacing = spacing
        self.lo = integer_at_least(lo, "lo", 1)
        self.hi = integer_at_least(hi, "hi", self.lo)
        self.n = integer_at_least(n, "n", 1)
        self.fanout = integer_at_least(fanout, "fanout", 1)
        self.target = deviation_target(self.n, eps_dsr, noise_weight)
        self.rounds = 0
        self._asked: list[int] | None = None
        if self.target >= self.n:  # eps_dsr <= 1: lo is the minimiser, no probe needed
            self.hi = self.lo

    @property
    def theta(self) -> int | None:
        """The answer, once the search is over."""
        return self.lo if self.lo >= self.hi else None

    def query(self) -> list[int] | None:
        """The thresholds to count next, ascending (None when the search is over)."""
        if self.lo >= self.hi:
            return None
        if self._asked is None:
            a, b, k = self.lo, self.hi, self.fanout
            if self.spacing == "geometric":
                grid = (int(a * (b / a) ** (j / (k + 1))) for j in range(1, k + 1))
                self._asked = sorted({min(max(t, a), b - 1) for t in grid})
            else:
                self._asked = sorted({a + ((b - a) * j) // (k + 1) for j in range(1, k + 1)})
        return list(self._asked)

    def observe(self, counts: Sequence[int]) -> None:
        """The counts above each threshold of the last ``query()``."""
        asked = self._asked
        if asked is None:
            raise LocalProtocolError("observe() without a pending query()")
        if len(counts) != len(asked):
            raise RemoteProtocolError(
                f"{len(counts)} counts for {len(asked)} thresholds", field="count_above"
            )
        for t, count in zip(asked, counts, strict=True):
            if (
                isinstance(count, bool)
                or not isinstance(count, numbers.Integral)
                or not 0 <= count <= self.n
            ):
                raise RemoteProtocolError(
                    f"count above θ = {t} must be an integer in [0, {self.n}], got {count!r}",
                    field="count_above",
                )
        self.rounds += 1
        self._asked = None
        for t, count in zip(asked, counts, strict=True):
            if count <= self.target:
                self.hi = t
                return
            self.lo = t + 1


def theta_by_deviation(
    lo: int,
    hi: int,
    count_above: Callable[[int], int],
    n: int,
    eps_dsr: float,
    noise_weight: float = 1.0,
) -> tuple[int, int]:
    """Binary search on ``[lo, hi]`` for the smallest θ with
    ``count_above(θ) = #{i : d_i > θ} <= deviation_target(n, eps_dsr)`` (``hi`` if no
    smaller θ qualifies). Returns ``(θ, rounds)``, ``rounds`` = calls to ``count_above``
    (one secure sum each), at most ``ceil(log2(hi - lo + 1))``. A count outside
    ``0 .. n`` is refused (``RemoteProtocolError``). (``DeviationSearch`` is the same
    search as a question/answer object, for callers whose sums arrive asynchronously.)"""
    search = DeviationSearch(lo, hi, n, eps_dsr, noise_weight=noise_weight)
    while (thresholds := search.query()) is not None:
        search.observe([count_above(t) for t in thresholds])
    assert search.theta is not None
    return search.theta, search.rounds


def thm35_bound(degree: int, theta: int, asked: int, eps_prime: float, eps_dsr: float) -> float:
    """Thm 3.5: ``|d - min(d, θ)| + asked e^e' / (e^e' - 1)^2 + θ / eps_dsr`` (the middle
    term equals ``WarnerRR(e').variance_bound(asked)``)."""
    d = integer_at_least(degree, "degree", 0)
    t = integer_at_least(theta, "theta", 1)
    u1 = integer_at_least(asked, "asked", 0)
    ep = positive_real(eps_prime, "eps_prime")
    b = t / positive_real(eps_dsr, "eps_dsr")
    # e^x / (e^x - 1)^2 written as e^-x / (1 - e^-x)^2: no overflow for any x > 0
    variance = u1 * math.exp(-ep) / math.expm1(-ep) ** 2
    return float(abs(d - min(d, t))) + variance + b
