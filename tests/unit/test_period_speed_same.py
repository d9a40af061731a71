"""Issue 19's speed work must not change an answer: the fast phase sums of
``collector/period.py`` (``_phase_sums``, a reshaped reduction instead of ``np.bincount`` on
``t % period``) give the same values bit for bit, and so do the folds built on them.

The references below are the formulas before the change, verbatim. The end-to-end check
(every estimate field on 3,540 streams and on the 100 speed streams) is
``scripts/cpr_period_same.py`` and ``scripts/cpr_speed_same.py same``."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import period as P


def _bincount_sums(x: np.ndarray, period: int) -> np.ndarray:
    return np.bincount(np.arange(x.size) % period, weights=x, minlength=period)


def _old_detrend_at(x: np.ndarray, period: int) -> np.ndarray:
    phases = np.arange(x.size) % period
    counts = P._phase_counts(x.size, period)[0]
    trend = P._quadratic_basis(x.size)[:, 1:]

    def within(v):
        return v - (np.bincount(phases, weights=v, minlength=period) / counts)[phases]

    basis = np.stack([within(trend[:, 0]), within(trend[:, 1])], axis=1)
    coef, *_ = np.linalg.lstsq(basis, within(x), rcond=None)
    return x - trend @ coef


def _old_fold_energy(xs: np.ndarray, period: int, harmonics: int) -> float:
    t = np.arange(xs.size)
    sums = np.bincount(t % period, weights=xs, minlength=period)
    spec = P._rfft(sums / P._phase_counts(xs.size, period)[1])[1 : P._limit(harmonics, period) + 1]
    return 2.0 * float(np.sum(spec.real**2 + spec.imag**2)) / period


def _old_harmonic_power(xw: np.ndarray, period: int) -> np.ndarray:
    folded = np.bincount(np.arange(xw.size) % period, weights=xw, minlength=period)
    spec = P._rfft(folded)[1 : (period - 1) // 2 + 1]
    return (spec.real**2 + spec.imag**2) / xw.size


def _same(a, b) -> bool:
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


@pytest.mark.parametrize("n", [1, 5, 9, 150, 300, 1001, 10_000, 20_011])
def test_phase_sums_match_bincount_bit_for_bit(n):
    rng = np.random.default_rng([19, n])
    # wide magnitudes (rounding order shows), signed zeros (bincount starts from +0.0)
    x = rng.standard_normal(n) * np.exp(rng.normal(0.0, 20.0, n))
    x[rng.integers(0, n, 3)] = -0.0
    periods = {*range(1, 121), n // 3, n // 2, n - 1, n, n + 1, n + 7}
    for period in sorted(p for p in periods if p >= 1):
        assert _same(P._phase_sums(x, period), _bincount_sums(x, period)), period


def test_phase_sums_of_strided_and_non_float_input():
    rng = np.random.default_rng(190)
    wide = rng.standard_normal((3001, 2))
    for period in (2, 3, 37, 144, 1000, 2999):
        assert _same(P._phase_sums(wide[:, 1], period), _bincount_sums(wide[:, 1], period))
    ints = rng.integers(-5, 5, 500)
    assert _same(P._phase_sums(ints, 7), _bincount_sums(ints, 7))


def _streams():
    """A few dozen streams of the kinds the settle step folds: SW reports of periodic and
    aperiodic signals, at n where the periods have 3 to 300 cycles."""
    rng = np.random.default_rng(1919)
    for n in (300, 3000, 10_000):
        for period in (7, 37, 144, 997, 1000):
            if 3 * period > n:
                continue
            t = np.arange(n)
            clean = 0.5 + 0.4 * np.sin(2 * np.pi * t / period) + 0.05 * rng.standard_normal(n)
            reports = clean + rng.standard_normal(n) * rng.choice([0.1, 1.0, 3.0])
            yield period, reports


def test_folds_match_the_bincount_formulas_bit_for_bit():
    cases = 0
    for period, x in _streams():
        for q in (period - 2, period - 1, period, period + 1, period + 3, 2 * period + 1):
            xs = P._detrend_at(x, period)
            assert _same(xs, _old_detrend_at(x, period)), (x.size, period)
            for harmonics in (1, 4, 16, 128):
                assert _same(
                    P._fold_energy(xs, np.arange(x.size), q, harmonics),
                    _old_fold_energy(xs, q, harmonics),
                ), (x.size, q, harmonics)
            assert _same(P._harmonic_power(x, np.arange(x.size), q), _old_harmonic_power(x, q))
            cases += 1
    assert cases >= 60


def test_detect_period_answer_recorded_before_the_change():
    """The estimate of the code before the change (commit 238ee82) on one long-period
    stream, every field (floats by repr)."""
    rng = np.random.default_rng(7)
    t = np.arange(10_000)
    x = (np.sin(2 * np.pi * t / 1000) > 0).astype(float) + rng.standard_normal(t.size)
    e = P.detect_period(x)
    assert (e.period, e.candidate, e.harmonics, e.tests, e.max_period) == (
        1000,
        1000,
        8,
        23191,
        3333,
    )
    assert (e.confidence, dict(e.votes), tuple(e.scales)) == (1.0, {1000: 1}, (10000,))
    assert (repr(e.p_value), repr(e.log_p)) == ("7.503063021056224e-260", "-606.7083323898311")
