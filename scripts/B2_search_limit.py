"""A SEARCHING limit on the grid's (50, 3) cells (issue 19, claim C2, helper B, 2026-12-06).

``B2_limit50.py`` tells each statistic T = 50; a detector must search. Here each statistic is
computed at every period 3 .. 50 (the range every detector searches at n = 150), turned into
a p-value under white noise (analytic), and the stream's smallest p-value is compared with a
threshold SIMULATED so that the worst of eight aperiodic families claims in 1 % of its
streams (a max-statistic threshold: no Bonferroni, no few-cycles penalty; the threshold is
fitted on the null streams themselves, so the limit is slightly optimistic). A stream counts
as exact when the period with the smallest p-value is 50 and passes. No detector that reads
one of these statistics and keeps C3's 1 % on every family can be expected above this count.

Statistics per period: ``ours`` (detect_period's exact test, step 2: whitened harmonic sums
over the within-phase mean square, best harmonic level), ``anova`` (one-way ANOVA of the
phases over the whole cycles of the raw reports, F(T - 1, kT - T)), ``low`` (the first two
harmonics of the detrended fold over the stream's variance, Gamma(2)).

``held`` mode: the same on the held-out user cells at (T, n) = (23, 100) below a baseline
(``scripts/cpr_user_heldout.py``'s streams, fresh seeds ``[FRESH_SEED, cell index, trial]``).

Run: ``nice -n 5 python scripts/B2_search_limit.py NULL FRESH [held] > OUT.txt``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ldpfleet.app.cpr_grid_streams import grid_stream, grid_template, trial_rng
from ldpfleet.app.cpr_period_baselines import autocorrelation_period, folded_variance_period
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_user_heldout as held
from B2_limit50 import BELOW, PERIOD, N
from cpr_short_limit import FAMILIES, LEVEL, null_stream

NULL_SEED = 55011
FRESH_SEED = 55012
HELD_BELOW = (  # scripts/B2_causes.py held, 2026-12-06: the (23, 100) cells below
    ("intel_humidity", 1.0),
    ("raisin_ecc", 5.0),
    ("decay", 5.0),
    ("am", 5.0),
    ("counts", 5.0),
)
PERIODS = np.arange(3, N // 3 + 1)
NAMES = ("ours", "anova", "low")


def logps(x: np.ndarray) -> np.ndarray:
    """(3, len(PERIODS)) log p-values of the three statistics at every period."""
    n = x.size
    arr = P._scale_free(x)
    xd = P._detrend(arr)
    xw, _ = P._whiten(xd)
    t = np.arange(n)
    centred = xd - xd.mean()
    var = float(centred @ centred) / n
    out = np.empty((3, PERIODS.size))
    for i, period in enumerate(PERIODS):
        power = P._harmonic_power(xw, t, int(period))
        out[0, i] = P._level_logp(power / P._within_scale(xw, t, int(period)), (n - period) / 2)[0]
        k = n // period
        seg = arr[: k * period].reshape(k, period)
        between = k * float(np.sum((seg.mean(axis=0) - seg.mean()) ** 2)) / (period - 1)
        within = float(np.sum((seg - seg.mean(axis=0)) ** 2)) / (k * period - period)
        out[1, i] = stats.f.logsf(between / max(within, 1e-300), period - 1, k * period - period)
        low = float(np.sum(P._harmonic_power(centred, t, int(period))[:2])) / max(var, 1e-300)
        out[2, i] = stats.gamma.logsf(low, min(2, (period - 1) // 2))
    return out


def grid_fresh(source: str, eps0: float, trials: int):
    tag = f"{source}/{PERIOD}/3/{eps0}/0.02/0.0"
    for trial in range(trials):
        rng = trial_rng(FRESH_SEED, "grid", trial, tag)
        yield SquareWave(eps0).perturb(
            grid_stream(grid_template(source, PERIOD, rng), N, rng, 0.02, 0.0), rng
        )


def held_fresh(source: str, eps0: float, trials: int):
    cell = (source, 23, 100, eps0)
    index = held.periodic_cells().index(cell)
    for trial in range(trials):
        rng = np.random.default_rng([FRESH_SEED, index, trial])
        yield SquareWave(eps0).perturb(held.clean_stream(source, 23, 100, rng), rng)


def main(null_trials: int, fresh_trials: int, mode: str = "grid") -> None:
    global PERIODS
    n, period, below, fresh = N, PERIOD, BELOW, grid_fresh
    if mode == "held":
        n, period, below, fresh = 100, 23, HELD_BELOW, held_fresh
        PERIODS = np.arange(3, n // 3 + 1)
    for eps0 in sorted({e for _, e in below}):
        worst = np.full(3, -np.inf)
        for fi, family in enumerate(FAMILIES):
            mins = []
            for trial in range(null_trials):
                rng = np.random.default_rng([NULL_SEED, fi, int(eps0 * 10), trial])
                mins.append(
                    logps(SquareWave(eps0).perturb(null_stream(family, n, rng), rng)).min(1)
                )
            q = np.quantile(np.array(mins), LEVEL, axis=0)  # 1 % of min log p below q
            worst = np.where(np.isfinite(worst), np.minimum(worst, q), q)
        print(
            f"eps0 {eps0}: thresholds (log p) {dict(zip(NAMES, np.round(worst, 2), strict=True))}",
            flush=True,
        )
        for source, e in below:
            if e != eps0:
                continue
            hits = dict.fromkeys(NAMES, 0)
            base = {"ours_detect": 0, "fv": 0, "ac": 0}
            for x in fresh(source, eps0, fresh_trials):
                lp = logps(x)
                for j, name in enumerate(NAMES):
                    i = int(np.argmin(lp[j]))
                    hits[name] += PERIODS[i] == period and lp[j, i] < worst[j]
                base["ours_detect"] += P.detect_period(x).period == period
                base["fv"] += folded_variance_period(x) == period
                base["ac"] += autocorrelation_period(x) == period
            best = max(hits.values())
            verdict = "reachable" if best >= max(base["fv"], base["ac"]) else "OUT OF REACH"
            print(f"  {source} eps0 {eps0}: {base} searching {hits} -> {verdict}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:4])
