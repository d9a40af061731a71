"""Step 11 of ``detect_period``: the permutation gate on quiet short streams
(``collector/period_permutation.py``; docs/preregistration/K2-quiet-permutation.md).

Streams are seeded here (seeds 7101-7106), never the evaluation blocks of the registration."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import period as P
from ldpfleet.collector import period_permutation as PP
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave


def _quiet(n: int, rng: np.random.Generator, level: float = 0.1, eps0: float = 5.0):
    """SW reports of a constant ``level`` + N(0, 0.03^2): exchangeable, quiet at eps0 >= 3."""
    return SquareWave(eps0).perturb(np.clip(level + 0.03 * rng.standard_normal(n), 0, 1), rng)


def _pulses(n: int, period: int, rng: np.random.Generator, eps0: float = 5.0):
    """A quiet level 0.1 with a pulse to 0.9 at one phase of every cycle: periodic, quiet."""
    clean = np.where(np.arange(n) % period == 3, 0.9, 0.1) + 0.03 * rng.standard_normal(n)
    return SquareWave(eps0).perturb(np.clip(clean, 0, 1), rng)


def test_the_permutation_p_value_is_uniform_on_exchangeable_quiet_streams(monkeypatch):
    """On i.i.d. reports the p-value is exact: with B = 99 and no curtailment, P(p <= 0.05) =
    5 / 100 exactly. 300 streams (n 60, level 0.1, eps0 5, seed 7101): X ~ Bin(300, 0.05),
    mean 15; P(X >= 37) = 5.1e-7 and P(X = 0) = 2.1e-7, so the bounds 1 <= X <= 36 fail a
    correct gate with probability < 1e-6. The parametric tail of the same maximum over ~20
    periods x 6 levels (no permutation), or the statistic read at the observed stream's best
    period only (no re-selection on the draws), puts X far above 36."""
    monkeypatch.setattr(PP, "PERMUTATION_DRAWS", 99)
    monkeypatch.setattr(PP, "PERMUTATION_ALPHA", 1.0)  # no curtailment: every p read in full
    rng = np.random.default_rng(7101)
    small = sum(PP.permutation_p(_quiet(60, rng), 3, 20) <= 0.05 for _ in range(300))
    assert 1 <= small <= 36, small


def test_the_gate_withdraws_claims_on_quiet_aperiodic_streams(monkeypatch):
    """200 quiet streams (n 90, level 0.1, eps0 5, seed 7102): without the gate the detector
    claims on some of them (why the gate exists); with it, fewer, every claim that stands
    passed the permutation test, and a withdrawn claim abstains naming it as ``candidate``
    with its permutation p-value above ``PERMUTATION_ALPHA``."""
    rng = np.random.default_rng(7102)
    streams = [_quiet(90, rng) for _ in range(200)]
    with_gate = [detect_period(x) for x in streams]
    monkeypatch.setattr(P, "PERMUTATION_STREAM", 0)  # gate off
    without = [detect_period(x).period for x in streams]
    assert sum(p is not None for p in without) > sum(e.period is not None for e in with_gate)
    withdrawn = 0
    for e, old in zip(with_gate, without, strict=True):
        if e.period is not None:
            assert e.permutation_p is not None and e.permutation_p <= P.PERMUTATION_ALPHA
            assert e.period == old
        elif old is not None:
            withdrawn += 1
            assert e.candidate == old and e.permutation_p > P.PERMUTATION_ALPHA
            assert e.confidence == 0.0 and e.p_value >= e.permutation_p
    assert withdrawn > 0


@pytest.mark.parametrize(("n", "period"), [(60, 12), (96, 12), (144, 12), (300, 25)])
def test_the_gate_keeps_a_strong_period_on_a_quiet_stream(n, period):
    """A pulse train on a quiet level (seed 7103) is quiet, so the gate runs, and its period
    is kept (p = 1 / 1000: no draw reaches it)."""
    x = _pulses(n, period, np.random.default_rng([7103, n]))
    assert PP.quiet_ratio(x) <= P.QUIET_WIDTH
    est = detect_period(x)
    assert est.period == period, est
    assert est.permutation_p == pytest.approx(1.0 / (P.PERMUTATION_DRAWS + 1))


def test_the_gate_is_skipped_above_the_cutoff_and_on_streams_that_are_not_quiet(monkeypatch):
    """n = PERMUTATION_STREAM + 1: never called (one comparison; the speed check's 10,000
    reports are untouched); n = PERMUTATION_STREAM: called. A periodic stream spread over its
    range (a sine, eps0 5) is not quiet: not called."""
    calls = []
    real = PP.permutation_p

    def spy(x, lo, hi):
        calls.append(x.size)
        return real(x, lo, hi)

    monkeypatch.setattr(PP, "permutation_p", spy)
    cut = P.PERMUTATION_STREAM
    rng = np.random.default_rng(7104)
    assert detect_period(_pulses(cut + 1, 12, rng)).period == 12
    assert calls == []
    assert detect_period(_pulses(cut, 12, rng)).period == 12
    assert calls == [cut]
    sine = 0.5 + 0.4 * np.sin(2 * np.pi * np.arange(120) / 12)
    x = SquareWave(5.0).perturb(sine, rng)
    assert PP.quiet_ratio(x) > P.QUIET_WIDTH
    assert detect_period(x).period == 12 and calls == [cut]


def test_curtailed_draws_give_the_decision_and_value_of_all_draws():
    """``permutation_p`` stops counting once the gate cannot pass; against all 999 draws
    counted in full (same generator, one block) the decision is the same, and so is the value
    where it passes (seed 7105: quiet streams and pulse trains)."""
    rng = np.random.default_rng(7105)
    streams = [_quiet(60, rng) for _ in range(6)] + [_pulses(60, 12, rng) for _ in range(2)]
    for x in streams:
        x = np.ldexp(x, -int(np.frexp(np.max(np.abs(x)))[1]))
        got = PP.permutation_p(x, 3, 20)
        draws = np.argsort(
            np.random.default_rng(PP._seed(x)).random((P.PERMUTATION_DRAWS, x.size)), axis=1
        )
        stats = PP.fold_statistic(np.vstack([x[None, :], x[draws]]), 3, 20)
        full = (1.0 + np.count_nonzero(stats[1:] >= stats[0])) / (P.PERMUTATION_DRAWS + 1)
        assert PP.gate_passes(got) == PP.gate_passes(full)
        if PP.gate_passes(full):
            assert got == full
        else:
            assert got <= full  # the count so far


def test_reaches_is_the_statistic_compared_with_the_observed():
    """``reaches`` (critical F per column, exact tail only near it) equals ``fold_statistic >=
    observed`` row for row, at observed values inside the draws' range (seed 7106)."""
    rng = np.random.default_rng(7106)
    x = _quiet(90, rng)
    rows = x[np.argsort(rng.random((300, x.size)), axis=1)]
    stats = PP.fold_statistic(rows, 3, 30)
    for q in (0.5, 0.9, 0.99):
        observed = float(np.quantile(stats, q))
        assert np.array_equal(PP.reaches(rows, 3, 30, observed), stats >= observed)
    assert np.array_equal(PP.reaches(rows, 3, 30, stats[7]), stats >= stats[7])


def test_quiet_ratio_reads_the_values_only():
    """Order-free, invariant under ``a + c x`` (c > 0); 1.0 for a constant; SW reports of a
    quiet level at eps0 5 are quiet, uniform reports are not."""
    rng = np.random.default_rng(7106)
    x = _quiet(90, rng)
    r = PP.quiet_ratio(x)
    assert r == pytest.approx(PP.quiet_ratio(rng.permutation(x)))
    assert r == pytest.approx(PP.quiet_ratio(3.0 + 2.5 * x))
    assert PP.quiet_ratio(np.full(10, 0.3)) == 1.0
    assert r <= P.QUIET_WIDTH < PP.quiet_ratio(rng.random(90))
