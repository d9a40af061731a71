"""Step 9b: 4-5 whole cycles of a 96-127-sample stream (issue 19, helper M, 2026-12-06;
collector/period.py step 9b, docs/preregistration/M-short-anova-cycles-v2.md).

Where steps 4-8 abstain on a stream of ``SHORT_STREAM`` to ``SHORT_CYCLES_STREAM`` samples,
the refused candidate is claimed if it has 4-5 whole cycles and is also the best phase
ANOVA at ``SHORT_CYCLES_ALPHA`` (Bonferroni over the periods with >= 3 whole cycles).
Calibrated on seed 99001 (``scripts/M_collect.py``, ``scripts/M_rules.py``), evaluated on
seeds 99301/99302/99311; the streams here use seed 99401, none of those. Level 5e-4 and the
neighbour margin ``SHORT_CYCLES_MARGIN`` (helper M2, docs/preregistration/
M2-cycles-maxstat.md): calibrated on seeds 99501-99504, evaluated on 99601/99602/99611.
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import period as P
from ldpfleet.collector.period import (
    SHORT_CYCLES_STREAM,
    SHORT_CYCLES_WINDOW,
    SHORT_STREAM,
    detect_period,
)
from ldpfleet.protocol.sw import SquareWave

from tests.unit.test_period_short_penalty import KINDS, _aperiodic

SEED = 99401


def _smooth_reports(period: int, n: int, trial: int, eps0: float = 5.0) -> np.ndarray:
    """A two-harmonic cycle (amplitude jitter 0.02), SW reports at ``eps0``."""
    rng = np.random.default_rng([SEED, period, n, trial])
    t = np.arange(n)
    clean = 0.5 + 0.4 * np.sin(2 * np.pi * t / period) + 0.1 * np.sin(4 * np.pi * t / period)
    clean = np.clip(clean + 0.02 * rng.standard_normal(n), 0.0, 1.0)
    return SquareWave(eps0).perturb(clean, rng)


def _search(reports: np.ndarray) -> P._Search:
    arr = P._scale_free(np.asarray(reports, dtype=float))
    n = arr.size
    return P._Search(arr, P._detrend(arr), 3, n // 3, P.DEFAULT_ALPHA)


def test_step_nine_b_reaches_96_to_127_samples():
    """Fails on main (no such constants)."""
    assert (SHORT_STREAM, SHORT_CYCLES_STREAM, SHORT_CYCLES_WINDOW) == (96, 128, (4, 5))


def test_step_nine_b_level_and_neighbour_margin():
    """Fails on main (level 2e-4, no margin)."""
    assert (P.SHORT_CYCLES_ALPHA, P.SHORT_CYCLES_MARGIN) == (5e-4, 1.0)


def test_a_stream_between_the_old_and_new_level_is_claimed():
    """A 4.3-cycle stream whose adjusted ANOVA p-value (2.8e-4) lies between main's level
    2e-4 and 5e-4, its margin over T +- 1 2.4: main abstains (fails there)."""
    estimate = detect_period(_smooth_reports(23, 100, 24))
    assert estimate.period == 23
    assert 2e-4 < estimate.p_value < P.SHORT_CYCLES_ALPHA


def test_a_winner_its_neighbour_nearly_ties_is_refused():
    """A 4.3-cycle stream whose ANOVA winner 23 (adjusted p 2.8e-9) beats its neighbour's
    log p-value by only 0.19 < 1: refused (main claims 23: fails there; claimed again at
    margin 0 in the next test)."""
    reports = _smooth_reports(23, 100, 13)
    assert detect_period(reports).period is None
    assert _search(reports).cycles_claim(23) is None


def test_the_margin_is_the_boundary(monkeypatch):
    """The pinned stream (23, 100, trial 2) beats its neighbours by 1.33 in log p-value:
    claimed at a margin just below that, refused just above."""
    search = _search(_smooth_reports(23, 100, 2))
    periods, values = search.anova_scan()
    at = list(periods).index(23)
    lead = min(values[at - 1], values[at + 1]) - values[at]
    assert 1.0 < lead < 2.0
    monkeypatch.setattr(P, "SHORT_CYCLES_MARGIN", lead - 0.01)
    assert search.cycles_claim(23).period == 23
    monkeypatch.setattr(P, "SHORT_CYCLES_MARGIN", lead + 0.01)
    assert search.cycles_claim(23) is None
    monkeypatch.setattr(P, "SHORT_CYCLES_MARGIN", 0.0)
    assert _search(_smooth_reports(23, 100, 13)).cycles_claim(23).period == 23


# the first trials (of 300 searched, seed 99401) where main abstained and step 9b claims
FOUR_CYCLES_FOUND = [(23, 100, 2), (23, 100, 8), (25, 110, 4), (25, 110, 11)]


@pytest.mark.parametrize(("period", "n", "trial"), FOUR_CYCLES_FOUND)
def test_a_four_cycle_stream_is_claimed_by_step_nine_b(period, n, trial):
    """Two-harmonic cycles with 4.3-4.4 cycles at eps0 = 5 on which main abstains (the
    few-cycles penalty ``(4.35 / 12) ** 6``): fails on main (period None)."""
    estimate = detect_period(_smooth_reports(period, n, trial))
    assert estimate.period == period
    assert 0.0 < estimate.p_value < P.SHORT_CYCLES_ALPHA


def test_step_nine_b_refuses_a_candidate_outside_four_to_five_cycles():
    """The same claimable stream: its true period is claimed, a candidate with 6 or 3 whole
    cycles is not, whatever its ANOVA (and a candidate that is not the ANOVA's best)."""
    search = _search(_smooth_reports(23, 100, 2))
    assert search.cycles_claim(23).period == 23
    assert search.cycles_claim(16) is None  # 6 whole cycles
    assert search.cycles_claim(30) is None  # 3 whole cycles
    assert search.cycles_claim(21) is None  # 4 cycles, not the ANOVA's best
    assert search.cycles_claim(None) is None


@pytest.mark.parametrize("n", [SHORT_STREAM - 1, SHORT_CYCLES_STREAM])
def test_step_nine_b_is_not_tried_outside_its_lengths(monkeypatch, n):
    """Below 96 samples step 9 applies, from 128 on neither: ``cycles_claim`` is never
    called (the stream abstains with its candidate refused)."""

    def refuse(self, candidate):
        raise AssertionError(f"step 9b called at n = {self.n}")

    monkeypatch.setattr(P._Search, "cycles_claim", refuse)
    for trial in range(5):
        detect_period(np.random.default_rng([SEED, 1, n, trial]).random(n))


def test_step_nine_b_is_tried_inside_its_lengths(monkeypatch):
    """The converse of the test above (so that it can fail): at 100 samples an abstaining
    white stream reaches ``cycles_claim``."""
    calls = []
    monkeypatch.setattr(P._Search, "cycles_claim", lambda self, c: calls.append(c))
    detect_period(np.random.default_rng([SEED, 1, 100, 0]).random(100))
    assert calls


@pytest.mark.slow
def test_false_claims_at_96_to_127_samples_stay_below_their_bound():
    """2,400 streams: the eight aperiodic families x n = 96, 100, 110, 120, 127 ... (5
    lengths) x eps0 = 1, 5 x 30 trials (SW reports).

    Threshold: the smallest ``k`` with ``P(Bin(2400, 0.005) >= k) <= 1e-6`` is 33
    (``scipy.stats.binom.sf(32, 2400, 0.005) < 1e-6``), so a detector whose true rate on
    these families is 0.5 % fails with probability < 1e-6 (measured on the evaluation
    seed 99301 at n 96-127: main and step 9b at 2e-4 both well below 0.5 %, docs/
    preregistration/M-short-anova-cycles-v2.md); a true rate of 2 % fails with
    probability 0.99 (``binom.sf(32, 2400, 0.02)``). Measured on these streams: main 3,
    with step 9b at 2e-4 3, at 5e-4 with the neighbour margin (helper M2) 5."""
    claims = 0
    for ki, kind in enumerate(KINDS):
        for n in (96, 100, 110, 120, 127):
            for eps0 in (1.0, 5.0):
                for trial in range(30):
                    rng = np.random.default_rng([SEED, 2, ki, n, int(eps0 * 10), trial])
                    x = SquareWave(eps0).perturb(_aperiodic(kind, n, rng), rng)
                    claims += detect_period(x).period is not None
    assert claims < 33, claims
