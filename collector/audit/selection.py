"""Choosing the distinguishing test on the selection samples (seed 001, Section 3.4).

Theory of operation. For one witness statistic s, the candidate thresholds are +inf, every
observed selection value of s under D and D', and -inf. A test is (threshold t, tail d,
privacy direction p): the event is ``s(Y) >= t`` for d = +1 and ``s(Y) <= t`` for d = -1;
p = +1 bounds P_D[event] / P_D'[event], p = -1 the mirrored claim
P_D'[not event] / P_D[not event] (pure DP must hold both ways, so the complement event with
the worlds swapped is a valid test too). Every candidate is scored by the Clopper-Pearson
eps lower bound it would give on the SELECTION counts (same gamma and delta), which is
robust to the zero counts a plug-in ratio would blow up on; the best is returned. The
evaluation samples are never looked at here (adaptive selection would void the coverage).
Sorting makes the search O(N log N) instead of the O(N^2) scan the seed describes; above
2,048 distinct values the candidates are every k-th value by rank.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from ldpfleet.collector.audit.stats import check_delta, check_gamma
from ldpfleet.protocol.errors import ParameterError
from scipy.stats import beta as beta_dist

__all__ = ["DistinguishingTest", "event_counts", "select_test"]


@dataclass(frozen=True)
class DistinguishingTest:
    """The event chosen on selection data: ``s >= threshold`` (tail +1) or ``s <= threshold``
    (tail -1); ``privacy_direction`` +1 tests P_D[E] <= e^eps P_D'[E] + delta, -1 the
    mirrored P_D'[not E] <= e^eps P_D[not E] + delta. ``selection_eps`` is the bound it gave
    on the selection samples (not a certified figure)."""

    threshold: float
    tail: int
    privacy_direction: int
    selection_eps: float


def _as_scores(values: object, field: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ParameterError(
            "needs at least one sample", field=field, limit="at least one sample", value=values
        )
    if not np.all(np.isfinite(arr)):
        raise ParameterError(
            "witness values must be finite",
            field=field,
            limit="finite witness values (value: the first non-finite one)",
            value=float(arr[~np.isfinite(arr)][0]),
        )
    return arr


def event_counts(scores: np.ndarray, threshold: float, tail: int) -> int:
    """How many ``scores`` fall in the event of (threshold, tail)."""
    return int(np.count_nonzero(scores >= threshold if tail > 0 else scores <= threshold))


def _counts_at(sorted_scores: np.ndarray, thresholds: np.ndarray, tail: int) -> np.ndarray:
    if tail > 0:  # s >= t
        return sorted_scores.size - np.searchsorted(sorted_scores, thresholds, side="left")
    return np.searchsorted(sorted_scores, thresholds, side="right")  # s <= t


MAX_CANDIDATES = 2048


def _candidates(sorted_pooled: np.ndarray, max_candidates: int = MAX_CANDIDATES) -> np.ndarray:
    """+-inf and the observed values (``sorted_pooled``: both samples, sorted); above
    ``max_candidates`` distinct values, every k-th by rank (always keeping the smallest and
    largest), which keeps the search O(N log N) in the sample and bounded in
    Clopper-Pearson evaluations. Any selection rule that reads only the selection samples
    keeps the certified coverage; this one is just coarser."""
    distinct = np.ones(sorted_pooled.size, dtype=bool)
    distinct[1:] = sorted_pooled[1:] != sorted_pooled[:-1]
    values = sorted_pooled[distinct]
    if values.size > max_candidates:
        keep = np.unique(np.linspace(0, values.size - 1, max_candidates).round().astype(int))
        values = values[keep]
    return np.concatenate([[-np.inf], values, [np.inf]])


LOWER, UPPER = 0, 1  # the two sides of a Clopper-Pearson interval (index in _cp_tables)


def _cp_formula(side: int, n: int, level: float, k: np.ndarray) -> np.ndarray:
    """Clopper-Pearson bound at ``level`` for each count ``k`` of ``n`` (the formulas of
    ``stats``): ``side`` ``LOWER`` (0 at k = 0) or ``UPPER`` (1 at k = n). ``beta.ppf``
    works element by element, so an entry does not depend on the others asked with it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if side == LOWER:
            return np.where(k > 0, beta_dist.ppf(level, np.maximum(k, 1), n - k + 1), 0.0)
        return np.where(k < n, beta_dist.ppf(1.0 - level, k + 1, np.maximum(n - k, 1)), 1.0)


@functools.lru_cache(maxsize=64)
def _cp_tables(n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson lower and upper bounds at ``level`` for k = 0..n hits of n
    (``_cp_formula``), computed once per (n, level): a selection scores many candidate
    events on samples of one size, and the input-pair search (``input_pairs``) scores
    hundreds of pairs, so a table lookup replaces a ``beta.ppf`` per candidate."""
    k = np.arange(n + 1)
    lower, upper = _cp_formula(LOWER, n, level, k), _cp_formula(UPPER, n, level, k)
    lower.flags.writeable = upper.flags.writeable = False
    return lower, upper


@functools.lru_cache(maxsize=64)
def _cp_filled(n: int, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``_cp_tables(n, level)`` filled on demand: (lower, upper, lower known, upper known)
    for k = 0..n. A selection reads the bounds at its candidates' counts only (at most
    ``MAX_CANDIDATES`` + 2 a tail and direction), and ``beta.ppf`` is computed element by
    element, so the entries computed are the table's, bit for bit
    (tests/unit/test_A_cp_on_demand.py); the whole table of ``gau-dp``'s 500,000 selection
    runs took ~3 s of CPU in every worker process that audited it (helper A, 2026-12-07
    evening)."""
    return np.zeros(n + 1), np.zeros(n + 1), np.zeros(n + 1, bool), np.zeros(n + 1, bool)


def _cp_on_demand(side: int, n: int, level: float, k: np.ndarray) -> np.ndarray:
    """``_cp_tables(n, level)[side][k]``, computing only the entries not known yet."""
    filled = _cp_filled(n, level)
    values, known = filled[side], filled[2 + side]
    need = k[~known[k]]
    if need.size:
        need = np.unique(need)
        values[need] = _cp_formula(side, n, level, need)
        known[need] = True
    return values[k]


def _cp_lower(n: int, level: float, k: np.ndarray) -> np.ndarray:
    """``_cp_tables(n, level)[0][k]`` on demand (``_cp_on_demand``)."""
    return _cp_on_demand(LOWER, n, level, k)


def _cp_upper(n: int, level: float, k: np.ndarray) -> np.ndarray:
    """``_cp_tables(n, level)[1][k]`` on demand (``_cp_on_demand``)."""
    return _cp_on_demand(UPPER, n, level, k)


def _bounds(k_num, n_num, k_den, n_den, gamma: float, delta: float) -> np.ndarray:
    """Vectorised ``stats.eps_lower_bound`` over candidate counts (the same formulas, read
    from ``_cp_tables``' entries, computed on demand: ``_cp_filled``)."""
    level = gamma / 2.0
    lo = _cp_lower(int(n_num), level, np.asarray(k_num))
    hi = _cp_upper(int(n_den), level, np.asarray(k_den))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lo > delta, np.log((lo - delta) / hi), -np.inf)


def select_test(
    scores_d: object,
    scores_dprime: object,
    *,
    gamma: float,
    delta: float = 0.0,
    max_candidates: int = MAX_CANDIDATES,
) -> DistinguishingTest:
    """The (threshold, tail, privacy direction) with the largest selection-set eps bound
    (ties: the first in the order tail +1, -1; direction +1, -1; ascending threshold);
    at most ``max_candidates`` thresholds by rank (the input-pair search screens pairs
    with fewer)."""
    a = np.sort(_as_scores(scores_d, "scores_d"))
    b = np.sort(_as_scores(scores_dprime, "scores_dprime"))
    check_gamma(gamma)
    check_delta(delta)
    thresholds = _candidates(np.sort(np.concatenate([a, b])), max_candidates)
    best = DistinguishingTest(math.inf, 1, 1, -math.inf)
    for tail in (1, -1):
        in_a, in_b = _counts_at(a, thresholds, tail), _counts_at(b, thresholds, tail)
        for direction in (1, -1):
            # p = +1: event E with worlds (D, D'); p = -1: its complement with (D', D)
            if direction > 0:
                k_num, n_num, k_den, n_den = in_a, a.size, in_b, b.size
            else:
                k_num, n_num, k_den, n_den = b.size - in_b, b.size, a.size - in_a, a.size
            bounds = _bounds(k_num, n_num, k_den, n_den, gamma, delta)
            index = int(np.argmax(bounds))
            if bounds[index] > best.selection_eps:
                best = DistinguishingTest(
                    float(thresholds[index]), tail, direction, float(bounds[index])
                )
    return best
