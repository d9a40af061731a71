"""Power of the ``cadr-theta-count-dropout`` audit against its planted mutant (helper C).

The canary's output law is known in closed form (collector/audit/cadr_count_canary.py):
the witnesses read only the first and the last bucket, which are independent,

    first = [world D]  + N1,   last = [world D'] + N2,

with N1, N2 independent ``NB(r, 1 - a) - NB(r, 1 - a)``, ``a = share_ratio(eps)`` (the
exact rational the devices use), ``r = survivors / parties``: 9/9 = 1 correct (the
two-sided geometric), 9/10 under the mutant ``theta noise without the dropout margin``.
The other devices' one-hot 1s land in bucket 1, never in the first or the last.

The audit = selection (n_sel runs per world choose witness, threshold, tail and direction
by the selection set's Clopper-Pearson bound, ``selection.select_test``) + evaluation (the
chosen event counted on n_eval fresh runs per world, certified at gamma). For a FIXED
chosen event the evaluation's catch probability is computed exactly: the two hit counts
are Binomial(n_eval, p) with the event's exact probabilities p, and the verdict is a
violation iff ``ln(CP_lo(k_num) / CP_hi(k_den)) > eps``, so

    P[catch | event] = sum_k Binom(k; n, p_num) * BinomCDF(kmax(k); n, p_den),

kmax(k) the largest k_den whose upper bound is below CP_lo(k) e^-eps. The selection
step is the only simulated part: SELECTIONS selection sets drawn from the exact law (by
inverse CDF of the exact pmf, numpy's generator; the same law as the devices, other
draws), each scored by the real ``select_test`` over the four witnesses; the power is the
mean of the exact conditional catch probabilities (its Monte Carlo error is printed).

Usage: python scripts/C_dropout_power.py [EPS [SELECTIONS]] -> one table per gamma.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import numpy as np
from ldpfleet.collector.audit.selection import select_test
from ldpfleet.protocol.cadr_theta_noise import share_ratio
from scipy.special import gammaln
from scipy.stats import beta as beta_dist
from scipy.stats import binom

SUPPORT = 400  # |noise| values kept: the pmf beyond is < a^400 (< 1e-40 at eps >= 0.5)


def nb_pmf(r: float, a: float, top: int) -> np.ndarray:
    """P[NB(r, 1 - a) = x], x = 0..top: (r)_x / x! (1 - a)^r a^x."""
    x = np.arange(top + 1)
    log = gammaln(r + x) - gammaln(r) - gammaln(x + 1) + r * math.log1p(-a) + x * math.log(a)
    return np.exp(log)


def noise_pmf(r: float, a: float) -> tuple[np.ndarray, np.ndarray]:
    """Values -SUPPORT..SUPPORT and the pmf of NB(r) - NB(r)."""
    p = nb_pmf(r, a, SUPPORT)
    diff = np.convolve(p, p[::-1])  # index i <-> value i - SUPPORT
    return np.arange(-SUPPORT, SUPPORT + 1), diff / diff.sum()


def witness_laws(r: float, a: float):
    """Exact pmfs (value -> probability, as arrays) of each witness in D and in D'."""
    values, pmf = noise_pmf(r, a)
    cdf = np.cumsum(pmf)

    def at_least(t, shift):  # P[shift + N >= t]
        idx = np.searchsorted(values, t - shift, side="left")
        return 1.0 - (cdf[idx - 1] if idx > 0 else 0.0)

    def at_most(t, shift):  # P[shift + N <= t]
        idx = np.searchsorted(values, t - shift, side="right")
        return cdf[idx - 1] if idx > 0 else 0.0

    return values, pmf, at_least, at_most


def event_probability(witness: str, threshold: float, tail: int, world: str, law) -> float:
    """P[witness event] in ``world`` ('D' or "D'") under ``law`` (witness_laws)."""
    _values, pmf, at_least, at_most = law
    f_shift, l_shift = (1, 0) if world == "D" else (0, 1)
    if witness == "first bucket":
        return at_least(threshold, f_shift) if tail > 0 else at_most(threshold, f_shift)
    if witness == "last bucket":
        return at_least(threshold, l_shift) if tail > 0 else at_most(threshold, l_shift)
    if witness == "min(first, 1 - last bucket)":
        t = math.ceil(threshold) if tail > 0 else math.floor(threshold) + 1
        ge = at_least(t, f_shift) * at_most(1 - t, l_shift)  # P[min >= t]
        return ge if tail > 0 else 1.0 - ge
    # first minus last: shift (f - l) + N1 - N2, N1 - N2 = difference of two laws
    diff = np.convolve(pmf, pmf[::-1])
    dvalues = np.arange(-2 * SUPPORT, 2 * SUPPORT + 1) + (f_shift - l_shift)
    mask = dvalues >= threshold if tail > 0 else dvalues <= threshold
    return float(diff[mask].sum())


def draw(rng, law, n: int, world: str) -> np.ndarray:
    """n outputs (first, last) of the canary in ``world``, from the exact law."""
    values, pmf, _, _ = law
    f_shift, l_shift = (1, 0) if world == "D" else (0, 1)
    n1 = rng.choice(values, size=n, p=pmf)
    n2 = rng.choice(values, size=n, p=pmf)
    return np.stack([f_shift + n1, l_shift + n2], axis=1)


WITNESSES = {
    "first minus last bucket": lambda y: y[:, 0] - y[:, 1],
    "first bucket": lambda y: y[:, 0],
    "last bucket": lambda y: y[:, 1],
    "min(first, 1 - last bucket)": lambda y: np.minimum(y[:, 0], 1 - y[:, 1]),
}


def exact_catch(p_num: float, p_den: float, n: int, eps: float, gamma: float) -> float:
    """P[ln(CP_lo(k_num) / CP_hi(k_den)) > eps], k ~ Binomial(n, p), exactly."""
    level = gamma / 2
    k = np.arange(n + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = np.where(k > 0, beta_dist.ppf(level, np.maximum(k, 1), n - k + 1), 0.0)
        upper = np.where(k < n, beta_dist.ppf(1 - level, k + 1, np.maximum(n - k, 1)), 1.0)
    # kmax(k_num): the number of k_den with upper[k_den] < lower[k_num] e^-eps (upper rises)
    count = np.searchsorted(upper, lower * math.exp(-eps), side="left")
    den_cdf = np.concatenate([[0.0], np.cumsum(binom.pmf(k, n, p_den))])
    return float(np.sum(binom.pmf(k, n, p_num) * den_cdf[count]))


def power(eps: float, trials: int, gamma: float, r: float, selections: int, seed: int = 1):
    a = float(share_ratio(eps))
    law = witness_laws(r, a)
    n_sel, n_eval = trials // 2, trials - trials // 2
    rng = np.random.default_rng(seed)
    catches, chosen = [], {}
    for _ in range(selections):
        sel_d, sel_dp = draw(rng, law, n_sel, "D"), draw(rng, law, n_sel, "D'")
        best = None
        for name, w in WITNESSES.items():
            test = select_test(w(sel_d), w(sel_dp), gamma=gamma)
            if best is None or test.selection_eps > best[1].selection_eps:
                best = (name, test)
        name, test = best
        p_d = event_probability(name, test.threshold, test.tail, "D", law)
        p_dp = event_probability(name, test.threshold, test.tail, "D'", law)
        if test.privacy_direction > 0:
            p_num, p_den = p_d, p_dp
        else:
            p_num, p_den = 1 - p_dp, 1 - p_d
        key = (name, test.threshold, test.tail, test.privacy_direction)
        chosen[key] = chosen.get(key, 0) + 1
        catches.append(exact_catch(p_num, p_den, n_eval, eps, gamma))
    c = np.array(catches)
    return c.mean(), c.std(ddof=1) / math.sqrt(c.size), chosen


def quadrant(eps: float, r: float) -> tuple[float, float]:
    """P[first >= 1, last <= 0] in D and in D' (the canary's designed event, t = 1)."""
    law = witness_laws(r, float(share_ratio(eps)))
    name = "min(first, 1 - last bucket)"
    return event_probability(name, 1, 1, "D", law), event_probability(name, 1, 1, "D'", law)


if __name__ == "__main__":
    eps = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    selections = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    for label, r in (("correct", 1.0), ("mutant", 0.9)):
        p_d, p_dp = quadrant(eps, r)
        print(f"{label}: P_D = {p_d:.5f}, P_D' = {p_dp:.5f}, log-ratio - eps = "
              f"{math.log(p_d / p_dp) - eps:+.4f}")  # fmt: skip
    gammas = [float(Fraction(g)) for g in sys.argv[3:]] or [0.05 / 85, 0.05 / 87, 0.05 / 42]
    for gamma in gammas:
        for trials in (20_000, 30_000, 40_000, 60_000, 80_000):
            mean, se, chosen = power(eps, trials, gamma, 0.9, selections)
            top = max(chosen.items(), key=lambda kv: kv[1])
            print(f"gamma {gamma:.3g} trials {trials}: catch {mean:.6f} (MC se {se:.1e}); "
                  f"most chosen {top[0]} x{top[1]}/{selections}")  # fmt: skip
