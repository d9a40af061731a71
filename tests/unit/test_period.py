"""Tests of cycle recovery (collector/period.py): the shift discrepancy against a naive loop,
exact recovery on clean and lightly noised periodic streams, detection accuracy on Square Wave
privatised streams, low confidence on aperiodic input, and the edge cases.

Every statistical test uses FIXED seeds, so it is deterministic: a threshold below is the
measured result minus a margin that only absorbs platform rounding (FFT/BLAS differences can
flip a borderline trial), not sampling luck. The measured figures are quoted next to each one.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ldpfleet.collector.period import (
    MAX_SCALES,
    PeriodEstimate,
    _candidates,
    detect_period,
    shift_discrepancy,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.sw import SquareWave

PERIODS = (7, 12, 24, 50, 97)
LENGTHS = (1000, 5000, 10000)
SHAPES = ("sine", "square", "sawtooth", "harmonic", "random")


# -- helpers ---------------------------------------------------------------------------------


def naive_discrepancy(x: list[float], period: int) -> float:
    """Delta_T by the definition: a loop over every sample pair."""
    n = len(x)
    total = 0.0
    for t in range(n - period):
        total += (x[t + period] - x[t]) ** 2
    return total / (n - period)


def periodic_stream(shape: str, period: int, n: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(n)
    phase = 2.0 * np.pi * t / period
    if shape == "sine":
        return np.sin(phase)
    if shape == "square":
        return np.where(t % period < period / 2, 1.0, -1.0)
    if shape == "sawtooth":
        return (t % period) / period
    if shape == "harmonic":  # strong second harmonic
        return np.sin(phase) + 0.9 * np.sin(2.0 * phase)
    if shape == "random":  # a random template of length T repeated
        return rng.random(period)[t % period]
    raise AssertionError(shape)


def max_period_for(period: int, n: int) -> int | None:
    """The default range (n // 18) when it holds the period, else a range up to 2T."""
    return None if period <= n // 18 else 2 * period


def smooth_template(period: int, rng: np.random.Generator, harmonics: int = 4) -> np.ndarray:
    """A random smooth cycle in [0, 1]: harmonics 1..4 with Gaussian coefficients of scale 1/j,
    min-max normalised (the fundamental usually, not always, dominates)."""
    coef = np.zeros(period // 2 + 1, dtype=complex)
    j = np.arange(1, harmonics + 1)
    coef[j] = (rng.normal(size=harmonics) + 1j * rng.normal(size=harmonics)) / j
    cycle = np.fft.irfft(coef, period)
    return (cycle - cycle.min()) / (cycle.max() - cycle.min())


def sw_stream(eps0: float, period: int | None, n: int, seed: int) -> np.ndarray:
    """SW reports (eps0, variant "sw") of a repeated smooth template, or of iid uniform values
    in [0, 1] when ``period`` is None."""
    rng = np.random.default_rng(seed)
    sw = SquareWave(eps0, "sw")
    if period is None:
        return sw.perturb(rng.random(n), rng)
    return sw.perturb(smooth_template(period, rng)[np.arange(n) % period], rng)


def check_invariants(est: PeriodEstimate, n: int, min_cycles: int = 3) -> None:
    assert 0.0 <= est.confidence <= 1.0
    assert sum(est.votes.values()) <= len(est.scales) <= MAX_SCALES
    assert list(est.scales) == [n // k for k in range(1, len(est.scales) + 1)]
    if est.period is None:
        assert est.confidence == 0.0 and est.votes == {}
    else:
        assert est.confidence == est.votes[est.period] / len(est.scales)
        assert max(est.votes.values()) == est.votes[est.period]


# -- shift discrepancy -----------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    x=st.lists(
        st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, allow_subnormal=False),
        min_size=1,
        max_size=120,
    ),
)
def test_shift_discrepancy_matches_naive_loop(data, x):
    n = len(x)
    periods = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=12))
    fast = shift_discrepancy(np.array(x), np.array(periods))
    assert fast.shape == (len(periods),)
    xc = np.array(x) - np.mean(x)
    energy = float(np.sum(xc * xc))
    for value, period in zip(fast, periods, strict=True):
        expected = naive_discrepancy(x, period)
        # FFT rounding is relative to the total energy, spread over the n - T pairs
        tol = 1e-10 * (energy + 1.0) / (n - period) + 1e-9 * expected
        assert abs(value - expected) <= tol, (period, value, expected)


def test_shift_discrepancy_keeps_shape_and_is_zero_at_the_period():
    x = np.tile(np.random.default_rng(0).random(12), 50)
    periods = np.array([[12, 24], [36, 5]])
    out = shift_discrepancy(x, periods)
    assert out.shape == (2, 2)
    assert np.all(out[[0, 0, 1], [0, 1, 0]] < 1e-12)
    assert out[1, 1] > 1e-3
    assert shift_discrepancy(x, np.array([], dtype=int)).shape == (0,)
    assert shift_discrepancy(x, np.array([0]))[0] == 0.0


@pytest.mark.parametrize("periods", [[-1], [600], [1.5], [np.nan]])
def test_shift_discrepancy_refuses_bad_periods(periods):
    with pytest.raises(ParameterError) as info:
        shift_discrepancy(np.zeros(600), np.array(periods))
    assert info.value.field == "periods"


def test_shift_discrepancy_refuses_nan_naming_the_sample():
    x = np.ones(10)
    x[4] = np.nan
    with pytest.raises(ValueError, match=r"x\[4\]"):
        shift_discrepancy(x, np.array([1]))


# -- exact recovery ----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("period", PERIODS)
def test_clean_periodic_streams_are_recovered_exactly(shape, n, period):
    x = periodic_stream(shape, period, n, np.random.default_rng(1000 * period + n))
    est = detect_period(x, max_period=max_period_for(period, n))
    check_invariants(est, n)
    assert est.period == period, est
    assert est.confidence == 1.0, est


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("period", PERIODS)
def test_lightly_noised_periodic_streams_are_recovered_exactly(shape, n, period):
    """Gaussian noise of standard deviation 0.1 x the amplitude ((max - min) / 2); one fixed
    seed per case (measured: all 75 cases exact, also for five further seeds each)."""
    rng = np.random.default_rng(7 * period + n + SHAPES.index(shape))
    x = periodic_stream(shape, period, n, rng)
    amplitude = (x.max() - x.min()) / 2.0
    noisy = x + 0.1 * amplitude * rng.normal(size=n)
    est = detect_period(noisy, max_period=max_period_for(period, n))
    check_invariants(est, n)
    assert est.period == period, est


@pytest.mark.parametrize("period", [12, 24, 50])
def test_a_peak_on_the_second_harmonic_is_traced_back_to_the_period(period):
    """The second harmonic dominates, and only the strongest peak is probed: the spectrum
    points at T/2 and only the multiples check (2c) finds T."""
    t = np.arange(5000)
    phase = 2.0 * np.pi * t / period
    x = 0.3 * np.sin(phase) + np.sin(2.0 * phase)
    est = detect_period(x, top_peaks=1)
    assert est.period == period, est


@pytest.mark.parametrize("shape", ["sine", "random"])
def test_periodic_stream_on_a_strong_linear_trend_is_recovered(shape):
    """A ramp ten times the signal's range; the aperiodic counterpart (where the detrend is
    essential) is ``test_white_noise_on_a_linear_trend_gets_no_period``."""
    n, period = 5000, 24
    x = periodic_stream(shape, period, n, np.random.default_rng(5))
    trend = 10.0 * (x.max() - x.min()) * np.arange(n) / n
    est = detect_period(x + trend + 3.0)
    assert est.period == period, est
    assert est.confidence == 1.0


def test_affine_rescaling_does_not_change_the_estimate():
    rng = np.random.default_rng(11)
    x = periodic_stream("random", 24, 3000, rng) + 0.5 * rng.normal(size=3000)
    ref = detect_period(x)
    assert ref.period == 24
    for scale, offset in [(1e-6, 0.0), (1e6, -3e6), (-2.0, 7.0)]:
        est = detect_period(scale * x + offset)
        assert (est.period, est.votes) == (ref.period, ref.votes)


# -- Square Wave privatised streams -------------------------------------------------------------


def test_sw_privatised_streams_at_eps0_1_are_detected():
    """eps0 = 1, T = 24, n = 2000, 100 seeded trials: measured 98/100 exact (mean confidence
    0.985; 96% over 200 other seeds). The seeds are fixed, so the count is deterministic and
    the margin of 8 trials only absorbs platform rounding; even for fresh seeds a detector with
    the measured 96% accuracy would score <= 89/100 with binomial probability 0.002."""
    hits, confidence = 0, []
    for seed in range(100):
        y = sw_stream(1.0, 24, 2000, seed)
        est = detect_period(y)
        check_invariants(est, 2000)
        hits += est.period == 24
        confidence.append(est.confidence)
    assert hits >= 90, hits
    assert np.mean(confidence) >= 0.9


def test_sw_privatised_longer_streams_with_longer_period_are_detected():
    """eps0 = 1, T = 50, n = 5000, 30 seeded trials: measured 30/30."""
    hits = sum(detect_period(sw_stream(1.0, 50, 5000, 500 + s)).period == 50 for s in range(30))
    assert hits >= 27, hits


def test_sw_privatised_streams_at_moderate_privacy():
    """eps0 = 0.5, T = 24, n = 5000, 100 seeded trials: measured 94/100 exact. Without the
    significance gate on extended multiples (m >= 4) the count drops to 81. For fresh seeds a
    94%-accurate detector would score <= 86 with binomial probability 0.003."""
    hits = sum(detect_period(sw_stream(0.5, 24, 5000, 1000 + s)).period == 24 for s in range(100))
    assert hits >= 87, hits


def test_sw_noise_at_eps0_005_gets_no_confident_period():
    """An aperiodic iid stream in [0, 1] privatised at eps0 = 0.05 (n = 2000), 100 trials.
    Measured: no trial reports a period (mean confidence 0). The assertions
    (mean confidence < 0.05, at most 3 trials reporting anything, never confidence >= 0.5,
    no period reported twice) fail if scales vote for unverified candidates."""
    reported = []
    confidence = []
    for seed in range(100):
        y = sw_stream(0.05, None, 2000, 20_000 + seed)
        est = detect_period(y)
        check_invariants(est, 2000)
        confidence.append(est.confidence)
        if est.period is not None:
            reported.append(est.period)
    assert np.mean(confidence) < 0.05
    assert max(confidence) < 0.5
    assert len(reported) <= 3, reported
    assert len(set(reported)) == len(reported), reported


def test_white_noise_gets_lower_confidence_than_periodic_input():
    """Gaussian white noise vs the same noise plus a sine (amplitude 1, noise sd 1), 50 trials
    each, n = 2000. Measured mean confidence: noise 0.00, periodic 1.00."""
    noise_conf, periodic_conf = [], []
    t = np.arange(2000)
    for seed in range(50):
        e = np.random.default_rng(30_000 + seed).normal(size=2000)
        noise_conf.append(detect_period(e).confidence)
        est = detect_period(np.sin(2.0 * np.pi * t / 24) + e)
        periodic_conf.append(est.confidence if est.period == 24 else 0.0)
    assert np.mean(noise_conf) < 0.05
    assert np.mean(periodic_conf) > 0.9
    assert np.mean(noise_conf) < np.mean(periodic_conf)


def test_white_noise_on_a_linear_trend_gets_no_period():
    """White noise (sd 1) on a ramp rising by 2 over n = 2000, 30 trials. Measured with the
    linear detrend: 1/30 trials report a period (mean confidence 0.02); without it the trend
    inflates the variance, every D_T drops below the white-noise level and ~all trials vote."""
    confidence = []
    for seed in range(30):
        rng = np.random.default_rng(40_000 + seed)
        x = rng.normal(size=2000) + 2.0 * np.arange(2000) / 2000
        confidence.append(detect_period(x).confidence)
    assert np.mean(confidence) < 0.1
    assert np.count_nonzero(confidence) <= 3


def test_significant_lines_restrict_the_candidates_to_their_common_multiples():
    """White-box check of step 3: lines at periods 24 (fundamental) and 8 (third harmonic),
    both significant, leave only the multiples of 24; with only the harmonic significant the
    harmonic's own periods come back."""
    length = 2400
    f_hat = np.array([length / 24, length / 8])
    ints, peak, mult = _candidates(f_hat, np.array([True, True]), length, 2, 100)
    assert set(ints.tolist()) == {24, 48, 72, 96}
    assert np.all(ints == np.rint(length / f_hat[peak] * mult))
    ints, _, _ = _candidates(f_hat, np.array([False, True]), length, 2, 100)
    assert {8, 16, 24}.issubset(set(ints.tolist()))


# -- edge cases ----------------------------------------------------------------------------------


@pytest.mark.parametrize("x", [np.full(1000, 3.5), np.zeros(1000), np.linspace(-2.0, 5.0, 1000)])
def test_constant_or_linear_stream_has_no_period(x):
    est = detect_period(x)
    assert est.period is None
    assert est.confidence == 0.0
    assert est.votes == {}


@pytest.mark.parametrize("n", [0, 1, 3])
def test_stream_shorter_than_two_min_periods_has_no_period(n):
    est = detect_period(np.arange(n, dtype=float) % 2)
    assert est == PeriodEstimate(None, 0.0, {}, ())


def test_max_period_is_clipped_to_the_stream():
    x = periodic_stream("sine", 24, 600, np.random.default_rng(0))
    est = detect_period(x, max_period=10_000)
    assert est.scales == (600,)
    assert est.period == 24


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_sample_is_refused_naming_the_field(bad):
    x = np.sin(np.arange(500.0))
    x[3] = bad
    with pytest.raises(ValueError, match=r"x\[3\]") as info:
        detect_period(x)
    assert isinstance(info.value, ParameterError)
    assert info.value.field == "x[3]"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"min_period": 1}, "min_period"),
        ({"min_period": True}, "min_period"),
        ({"min_period": 2.0}, "min_period"),
        ({"max_period": 3, "min_period": 4}, "max_period"),
        ({"top_peaks": 0}, "top_peaks"),
        ({"min_cycles": 1}, "min_cycles"),
    ],
)
def test_bad_parameters_are_refused_naming_the_field(kwargs, field):
    with pytest.raises(ParameterError) as info:
        detect_period(np.sin(np.arange(500.0)), **kwargs)
    assert info.value.field == field


def test_two_dimensional_input_is_refused():
    with pytest.raises(ParameterError) as info:
        detect_period(np.zeros((10, 10)))
    assert info.value.field == "x"


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 1500),
    seed=st.integers(0, 2**32 - 1),
    period=st.integers(2, 80),
    noise=st.floats(0.0, 3.0),
)
def test_estimate_invariants_on_arbitrary_streams(n, seed, period, noise):
    rng = np.random.default_rng(seed)
    x = periodic_stream("random", period, n, rng) + noise * rng.normal(size=n)
    est = detect_period(x)
    if est.scales:
        check_invariants(est, n)
    else:
        assert est.period is None
