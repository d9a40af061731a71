"""Step 3c (issue 19, helper D): an amplitude-modulated cycle keeps its period T instead of
moving to a multiple m T, and a true multiple still moves (tier 1: seeded, no clock).

Mechanism (docs/cpr.md, "Amplitude modulation: step 3c"): the envelope times the cycle's
mean level is slow aperiodic power; on the stream detrended jointly with the fold at T it sits
on the lowest harmonics of m T (j = 1, 2, not multiples of m), which step 3's multiple test
read as significant. The whitened stream's background fit absorbs it: a move now also needs
the added harmonics, whitened, at ``ALPHA_CORROBORATE``."""

from __future__ import annotations

import numpy as np
from ldpfleet.app.bench_cpr import grid_stream
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave


def _am_clean(period: int, n: int, ratio: float, rng: np.random.Generator) -> np.ndarray:
    """``scripts/D_am_calibration.am_stream``: two harmonics, jitter 0.02, envelope
    ``0.55 + 0.45 sin(2 pi t / (ratio T) + phase)``."""
    u = (np.arange(period) / period + rng.random()) % 1.0
    cycle = np.sin(2 * np.pi * u) + 0.6 * np.sin(4 * np.pi * u + 6 * rng.random())
    cycle = (cycle - cycle.min()) / np.ptp(cycle)
    base = grid_stream(cycle, n, rng, 0.02, 0.0)
    phase = 6 * rng.random()
    envelope = 0.55 + 0.45 * np.sin(2 * np.pi * np.arange(n) / (ratio * period) + phase)
    return np.clip(base * envelope, 0.0, 1.0)


def test_a_noise_free_modulated_cycle_answers_its_period():
    # before step 3c: 401 (the multiple's harmonic 1, detrended, log p far below the level;
    # whitened, not significant)
    x = _am_clean(200, 3000, 2.3, np.random.default_rng([71050]))
    assert P.detect_period(x).period == 200


def test_a_noisy_modulated_cycle_answers_its_period():
    # SW reports at eps0 = 5 of an envelope of period 9 T; before step 3c: 598 (3 T)
    rng = np.random.default_rng([71001, 200, 3000, 90, 50])
    y = SquareWave(5.0).perturb(_am_clean(200, 3000, 9.0, rng), rng)
    assert P.detect_period(y).period == 200


def test_a_true_doubled_period_still_moves_to_it():
    """Period 200 in 8 cycles, its energy on harmonic 2 (period 100), harmonic 1 weak: the
    refinement finds 100, step 3 moves to 200 (the added harmonic 1 significant on both
    readings)."""
    rng = np.random.default_rng([71001, 200, 8, 5, 2, 30])
    t = np.arange(200 * 8)
    u = 2 * np.pi * t / 200
    clean = 0.5 + 0.3 * np.sin(2 * u + 6 * rng.random()) + 0.03 * np.sin(u + 6 * rng.random())
    clean = np.clip(clean + 0.02 * rng.standard_normal(t.size), 0, 1)
    assert P.detect_period(SquareWave(5.0).perturb(clean, rng)).period == 200


def test_the_veto_needs_the_whitened_reading_to_be_weak():
    """``_fundamental`` returns the vetoed multiple as its third value: the detrended reading
    moved, the whitened one did not corroborate; with a corroborating whitened reading the
    move is made."""
    x = _am_clean(200, 3000, 2.3, np.random.default_rng([71050]))
    arr = np.asarray(x, dtype=float)
    search = P._Search(arr, P._detrend(arr), 2, arr.size // 3, 0.01)
    args = (search.power, search.whole)
    rest = (search.xs_at, 2, arr.size // 3)
    base, final, vetoed = P._fundamental(200, 2, *args, search.whitened_whole, *rest)
    assert (base, final) == (200, 200) and vetoed is not None and abs(vetoed - 400) <= 2
    loud = lambda q: 100.0 * np.ones((q - 1) // 2)  # noqa: E731  (every harmonic a line)
    assert P._fundamental(200, 2, *args, loud, *rest) == (200, vetoed, None)
