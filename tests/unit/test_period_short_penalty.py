"""Short streams: the rules for streams shorter than ``SHORT_STREAM`` samples (issue 19,
helper A, 2026-12-05; collector/period.py step 4, "Short streams", and step 9; docs/cpr.md
"Short streams: the limit").

Below 96 samples a period with ``k < 12`` cycles must pass ``alpha (k / 12) ** 3`` instead of
``alpha (k / 12) ** 6``, and where the gates abstain the phase ANOVA of step 9 may claim at
``SHORT_ANOVA_ALPHA``. Calibrated on seed 88001 (``scripts/cpr_short_sweep.py``), evaluated
on seed 88011 (``scripts/cpr_short_ab.py``); the streams here use seed 88021, neither of
those.
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.app.cpr_period_baselines import autocorrelation_period, folded_variance_period
from ldpfleet.collector.period import (
    PENALTY_SLOPE,
    PERMUTATION_ALPHA,
    SHORT_ANOVA_ALPHA,
    SHORT_PENALTY_SLOPE,
    SHORT_STREAM,
    anova_logp,
    detect_period,
    few_cycles_penalty,
)
from ldpfleet.protocol.sw import SquareWave
from scipy import signal, stats

SEED = 88021


def test_streams_below_short_stream_samples_pay_the_short_slope():
    """Fails on main (``few_cycles_penalty`` took no length)."""
    assert SHORT_STREAM == 96
    assert few_cycles_penalty(3.0, 24) == pytest.approx(-SHORT_PENALTY_SLOPE * np.log(4.0))
    assert few_cycles_penalty(3.0, SHORT_STREAM - 1) == pytest.approx(-3.0 * np.log(4.0))
    assert few_cycles_penalty(3.0, SHORT_STREAM) == pytest.approx(-PENALTY_SLOPE * np.log(4.0))
    assert few_cycles_penalty(3.0) == pytest.approx(-6.0 * np.log(4.0))
    assert few_cycles_penalty(12.0, 24) == 0.0
    assert few_cycles_penalty(30.0, 90) == 0.0


def _pulse_reports(period: int, n: int, trial: int, eps0: float = 5.0) -> np.ndarray:
    rng = np.random.default_rng([SEED, 1, period, n, trial])
    t = np.arange(n)
    clean = np.clip((t % period < 2).astype(float) + 0.02 * rng.standard_normal(n), 0.0, 1.0)
    return SquareWave(eps0).perturb(clean, rng)


# the first trials (of 300 searched) where main abstained with the true period as its
# candidate and the short slope claims it; (8, 24, 174), (12, 36, 183) and (16, 50, 6) were
# here too: step 11's permutation gate withdraws them (3 quiet cycles, permutation p 0.007-
# 0.011); what the issue asks of such streams is pinned by the two batch tests below
# (docs/preregistration/K3-quiet-gate-issue-criteria.md)
SHORT_FOUND = [(25, 75, 70)]


@pytest.mark.parametrize(("period", "n", "trial"), SHORT_FOUND)
def test_a_short_pulse_train_is_found_with_the_short_slope(period, n, trial):
    """Pulse trains (duty 2 samples, SW eps0 = 5) with 3 cycles on which main abstained with
    the true period as its candidate (it did not pass ``alpha (k / 12) ** 6``): fails on
    main (period None)."""
    estimate = detect_period(_pulse_reports(period, n, trial))
    assert estimate.period == period
    assert estimate.candidate == period


@pytest.mark.parametrize(("period", "n", "trial"), [(12, 36, 1)])  # 8-24-3, 16-50-3: step 11
def test_step_nine_claims_a_short_pulse_train_by_its_phase_anova(period, n, trial):
    """Pulse trains on which main abstained and steps 4-8 still abstain: step 9 claims the
    period whose phase ANOVA is smallest (``log_p`` is its p-value) because that p-value
    times the periods searched is below ``SHORT_ANOVA_ALPHA``. Fails on main."""
    reports = _pulse_reports(period, n, trial)
    estimate = detect_period(reports)
    assert estimate.period == period
    cycles = n // period
    logp = float(
        np.log(stats.f_oneway(*reports[: cycles * period].reshape(cycles, period).T).pvalue)
    )
    assert estimate.log_p == pytest.approx(logp, rel=1e-9)
    assert estimate.p_value == pytest.approx(np.exp(logp) * (n // 3 - 2), rel=1e-9)
    assert estimate.p_value < SHORT_ANOVA_ALPHA


def test_on_three_cycle_pulse_trains_the_gate_only_withdraws_claims():
    """The tests' own 3-cycle pulse trains ((8, 24), (12, 36), (16, 50), eps0 5, trials
    1,000-1,039): step 11 never names another period; a claim it withdraws abstains naming it
    as ``candidate`` with its permutation p above ``PERMUTATION_ALPHA``; it withdraws some
    (the known cost: 3 quiet cycles are near the permutation test's reach). Fails if the gate
    is off (nothing withdrawn) or if it replaced a claim by another period."""
    withdrawn = 0
    for period, n in ((8, 24), (12, 36), (16, 50)):
        for trial in range(1000, 1040):
            estimate = detect_period(_pulse_reports(period, n, trial))
            if estimate.permutation_p is None:
                continue  # the gate did not run (no claim, or not quiet)
            if estimate.period is None:
                withdrawn += 1
                assert estimate.candidate is not None
                assert estimate.permutation_p > PERMUTATION_ALPHA
            else:
                assert estimate.permutation_p <= PERMUTATION_ALPHA
    assert withdrawn > 0


@pytest.mark.parametrize(("period", "n"), [(8, 64), (16, 96)])
def test_a_quiet_pulse_train_with_more_cycles_is_found_at_least_as_often_as_the_baselines(
    period, n
):
    """Their shape with 8 and 6 cycles (eps0 5, trials 1,000-1,099, quiet: the gate checks
    every claim): ``detect_period`` with step 11 is exact at least as often as each baseline
    of issue 19 (folded variance, autocorrelation) up to a margin 4.75 sqrt(d), d the streams
    where the two disagree (a one-sided normal bound on the paired difference under equal
    accuracy, false failure ~1e-6); measured (K3): 99 / 98 / 85 and 96 / 95 / 83 of 100
    (ours / fv / ac), margins 8.2 / 19.0 and 12.6 / 20.7. And step 11 withdraws none of them
    (99 and 96 exact either way). Fails when the gate withdraws these claims (e.g.
    ``PERMUTATION_ALPHA`` 1e-4, below 1 / (B + 1))."""
    ours = {"fv": [], "ac": []}
    hits = []
    withdrawn = 0
    for trial in range(1000, 1100):
        reports = _pulse_reports(period, n, trial)
        estimate = detect_period(reports)
        hits.append(estimate.period == period)
        withdrawn += estimate.period is None and estimate.permutation_p is not None
        ours["fv"].append(folded_variance_period(reports) == period)
        ours["ac"].append(autocorrelation_period(reports) == period)
    hits = np.array(hits)
    assert withdrawn == 0
    for name, base in ours.items():
        base = np.array(base)
        disagree = int((hits != base).sum())
        assert hits.sum() - base.sum() >= -4.75 * np.sqrt(max(disagree, 1)), name


def test_anova_logp_is_the_one_way_anova_of_the_whole_cycles():
    rng = np.random.default_rng([SEED, 3])
    for n, period in ((24, 8), (31, 7), (95, 13), (60, 30)):
        x = rng.random(n)
        cycles = n // period
        expected = stats.f_oneway(*x[: cycles * period].reshape(cycles, period).T).pvalue
        assert anova_logp(x, period) == pytest.approx(np.log(expected), rel=1e-9)


def test_step_nine_is_not_tried_from_short_stream_samples_on():
    """A stream of 96 samples whose best phase ANOVA would pass step 9's level but not the
    gates keeps main's abstention (step 9 reaches only n < SHORT_STREAM)."""
    t = np.arange(SHORT_STREAM)
    found = 0
    for trial in range(40):
        rng = np.random.default_rng([SEED, 4, trial])
        clean = np.clip((t % 32 < 2) + 0.02 * rng.standard_normal(t.size), 0.0, 1.0)
        reports = SquareWave(2.0).perturb(clean, rng)
        estimate = detect_period(reports)
        best = min(anova_logp(reports, q) for q in range(3, SHORT_STREAM // 3 + 1))
        if estimate.period is None and np.exp(best) * (SHORT_STREAM // 3 - 2) < SHORT_ANOVA_ALPHA:
            found += 1
    assert found > 0  # streams step 9 would claim, left abstaining at n = SHORT_STREAM


def _aperiodic(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """The eight aperiodic families of ``scripts/cpr_short_limit.py``, in [0, 1]."""

    def norm(v):
        return (v - v.min()) / (v.max() - v.min())

    if kind == "white":
        return rng.random(n)
    if kind == "random_walk":
        return norm(np.cumsum(rng.standard_normal(n)))
    if kind.startswith("ar1_"):
        phi = float(kind.removeprefix("ar1_"))
        return norm(signal.lfilter([1.0], [1.0, -phi], rng.standard_normal(n + 200))[200:])
    if kind == "trend":
        return np.clip(np.linspace(0.2, 0.8, n) + 0.05 * rng.standard_normal(n), 0, 1)
    if kind == "level_shift":
        level = np.where(np.arange(n) < rng.integers(1, n), 0.3, 0.7)
        return np.clip(level + 0.05 * rng.standard_normal(n), 0, 1)
    if kind == "student_t2":
        return norm(rng.standard_t(2.0, n))
    raise ValueError(kind)


KINDS = (
    "white",
    "random_walk",
    "ar1_0.7",
    "ar1_0.9",
    "ar1_0.95",
    "trend",
    "level_shift",
    "student_t2",
)


@pytest.mark.slow
def test_false_claims_on_short_aperiodic_streams_stay_below_their_bound():
    """6,000 streams: 8 families x n = 24, 36, 50, 64, 75 x eps0 = 1, 5 x 75 trials (SW
    reports), all below ``SHORT_STREAM``.

    Threshold: the smallest ``k`` with ``P(Bin(6000, 0.005) >= k) <= 1e-6`` is 60
    (``scipy.stats.binom.sf(59, 6000, 0.005) = 8.6e-7``), so a detector whose true rate on
    these families is 0.5 % fails with probability < 1e-6 (measured: 0.33 % of 12,000
    streams at n 24-75 on the evaluation seed 88011, worst family over n 24-200 0.37 %;
    main's 0.14 %);
    60 / 6,000 = 1 %, so passing also keeps the pooled rate near or below the 1 % the
    detector promises (a true rate of 1 % passes with probability 0.48). Measured on these
    streams: main 14, now 25 (docs/cpr.md, "Short streams: the limit")."""
    claims = 0
    for ki, kind in enumerate(KINDS):
        for n in (24, 36, 50, 64, 75):
            for eps0 in (1.0, 5.0):
                for trial in range(75):
                    rng = np.random.default_rng([SEED, 2, ki, n, int(eps0 * 10), trial])
                    x = SquareWave(eps0).perturb(_aperiodic(kind, n, rng), rng)
                    claims += detect_period(x).period is not None
    assert claims < 60, claims
