"""Clopper-Pearson bounds and the audit's epsilon lower bound (seed 001, Section 3.5).

Theory of operation. A distinguishing test is an event Y of the mechanism's output. With
``k`` of ``n`` evaluation outputs from world D in Y, the one-sided Clopper-Pearson lower
bound at level ``gamma / 2`` is ``alpha_lo = Beta.ppf(gamma/2; k, n - k + 1)`` (0 when
k = 0); with ``k'`` of ``n'`` outputs from D' in Y the upper bound is
``beta_hi = Beta.ppf(1 - gamma/2; k' + 1, n' - k')`` (1 when k' = n'). By the union bound
both hold together with probability >= 1 - gamma, and an (eps, delta)-DP mechanism has
``alpha <= e^eps beta + delta``, so

    eps_LB = ln((alpha_lo - delta) / beta_hi)

is, with that probability, a lower bound on any eps the mechanism can satisfy (-inf when
``alpha_lo <= delta``). Sanity figure (reference page): 500 of 500 vs 0 of 500 at
gamma = 0.01 gives ln(0.005^(1/500) / (1 - 0.005^(1/500))) = 4.5419.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from ldpfleet.protocol.errors import ParameterError
from scipy.stats import beta as beta_dist

__all__ = [
    "MAX_TRIALS",
    "SEED_MAX",
    "check_delta",
    "check_gamma",
    "check_seed",
    "check_trials",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "eps_lower_bound",
    "largest_eps_lb",
    "runs_to_certify",
]


def is_integer(value) -> bool:
    """An integer, numpy's included (``numbers.Integral``), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def is_real(value) -> bool:
    """A real number, numpy's included (``numbers.Real``), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def check_gamma(gamma: float) -> float:
    """A confidence parameter in (0, 1)."""
    if not is_real(gamma) or not 0.0 < gamma < 1.0:
        raise ParameterError(
            f"must be in (0, 1), got {gamma!r}", field="gamma", limit="in (0, 1)", value=gamma
        )
    return float(gamma)


def check_delta(delta: float) -> float:
    """A delta in [0, 1)."""
    if not is_real(delta) or not 0.0 <= delta < 1.0:
        raise ParameterError(
            f"must be in [0, 1), got {delta!r}", field="delta", limit="in [0, 1)", value=delta
        )
    return float(delta)


# an audit's seed: as ``ldpfleet run``'s ([scenario] seed) and ``ldpfleet audit --seed``
SEED_MAX = 2**63 - 1
# Runs per world at most: the samples of a world are held in memory (10^7 floats, 80 MB;
# a pair search holds 21 selection sets), and 10^14 ended in a MemoryError traceback.
MAX_TRIALS = 10_000_000


def check_seed(seed: int) -> int:
    """An audit's seed (``numpy.random.SeedSequence``): an integer in 0 .. 2^63-1, the
    limit of ``ldpfleet run``'s seed; the command and the library share this rule (the
    library took 10**23, which the command refused)."""
    if not is_integer(seed) or not 0 <= seed <= SEED_MAX:
        raise ParameterError(
            f"must be an integer in 0 .. 2^63-1, got {seed!r}",
            field="seed",
            limit="an integer in 0 .. 2^63-1",
            value=seed,
        )
    return int(seed)


def check_trials(trials: int) -> int:
    """Runs per world of an audit: an integer in [2, ``MAX_TRIALS``]."""
    if not is_integer(trials) or not 2 <= trials <= MAX_TRIALS:
        raise ParameterError(
            f"must be an integer in [2, {MAX_TRIALS:,}] (runs per world), got {trials!r}",
            field="trials",
            limit=f"an integer in [2, {MAX_TRIALS:,}] (runs per world)",
            value=trials,
        )
    return int(trials)


def largest_eps_lb(n_d: int, n_dprime: int, *, gamma: float, delta: float = 0.0) -> float:
    """The largest ``eps_LB`` that ``n_d`` and ``n_dprime`` evaluation runs can certify at
    all (every run of D in the event, none of D'): an audit whose claim is at or above it
    cannot find a violation, whatever the mechanism does."""
    return eps_lower_bound(n_d, n_d, 0, n_dprime, gamma=gamma, delta=delta)[0]


def runs_to_certify(eps: float, *, gamma: float, delta: float = 0.0) -> int | None:
    """The fewest evaluation runs per world n with ``largest_eps_lb(n, n) > eps``: with
    a = (gamma/2)^(1/n), ((a - delta) / (1 - a) > e^eps) iff a > p = (e^eps + delta) /
    (1 + e^eps), i.e. n > ln(gamma/2) / ln(p). None if no n is enough (p >= 1)."""
    level = check_gamma(gamma) / 2.0
    p = (math.exp(eps) + check_delta(delta)) / (1.0 + math.exp(eps))
    if p >= 1.0:
        return None
    n = max(1, math.floor(math.log(level) / math.log(p)) + 1)
    while largest_eps_lb(n, n, gamma=gamma, delta=delta) <= eps:  # float rounding at the edge
        n += 1
    while n > 1 and largest_eps_lb(n - 1, n - 1, gamma=gamma, delta=delta) > eps:
        n -= 1
    return n


def _check_counts(k: int, n: int, field: str) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError(
            f"must be an integer >= 1, got {n!r}",
            field=f"{field}.n",
            limit="an integer >= 1",
            value=n,
        )
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= n:
        raise ParameterError(
            f"must be an integer in [0, {n}], got {k!r}",
            field=f"{field}.k",
            limit=f"an integer in [0, {n}]",
            value=k,
        )


def clopper_pearson_lower(k: int, n: int, level: float) -> float:
    """One-sided lower bound on a binomial proportion: P[p >= bound] >= 1 - level."""
    _check_counts(k, n, "lower")
    return 0.0 if k == 0 else float(beta_dist.ppf(level, k, n - k + 1))


def clopper_pearson_upper(k: int, n: int, level: float) -> float:
    """One-sided upper bound on a binomial proportion: P[p <= bound] >= 1 - level."""
    _check_counts(k, n, "upper")
    return 1.0 if k == n else float(beta_dist.ppf(1.0 - level, k + 1, n - k))


def eps_lower_bound(
    k_d: int, n_d: int, k_dprime: int, n_dprime: int, *, gamma: float, delta: float = 0.0
) -> tuple[float, float, float]:
    """``(eps_LB, alpha_lo, beta_hi)`` for an event hit ``k_d`` of ``n_d`` times under D and
    ``k_dprime`` of ``n_dprime`` times under D', each bound at level ``gamma / 2``."""
    level = check_gamma(gamma) / 2.0
    check_delta(delta)
    alpha_lo = clopper_pearson_lower(k_d, n_d, level)
    beta_hi = clopper_pearson_upper(k_dprime, n_dprime, level)
    if alpha_lo <= delta:
        return -math.inf, alpha_lo, beta_hi
    return math.log((alpha_lo - delta) / beta_hi), alpha_lo, beta_hi
