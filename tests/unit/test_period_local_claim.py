"""Step 8 of ``detect_period``, the local claim route (issue 19, phase jumps; module
docstring of collector/period.py, step 8): the gate and the divisor move.

The streams are calibration streams (seeds 901: phase jumps, 902: aperiodic), never the
evaluation seeds of docs/cpr.md (779, 405, 0, 2031) nor the grid's."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.app.bench_cpr import aperiodic_stream, grid_template, trial_rng
from ldpfleet.app.cpr_phase_jumps import cells, jump_stream
from ldpfleet.collector.period import _explained_by, detect_period
from ldpfleet.protocol.sw import SquareWave


def _jump_reports(index: int, trial: int) -> np.ndarray:
    """The phase-jump check's stream of cell ``index``, trial ``trial``, at seed 901."""
    kind, period, cycles, eps0, jumps = cells()[index]
    rng = np.random.default_rng([901, index, trial])
    clean = jump_stream(grid_template(kind, period, rng), period * cycles, jumps, rng)
    return SquareWave(eps0).perturb(clean, rng)


@pytest.mark.parametrize(
    ("index", "trial", "old"),
    [(98, 3, 6), (99, 8, 6), (146, 7, 4)],  # two_harmonics x2, darwin; T = 12, 8 cycles
)
def test_the_route_keeps_a_lag_that_its_divisor_does_not_explain(index, trial, old):
    """The lag of largest autocorrelation is the true 12; the old divisor move (any prime
    divisor within the rename margin that passed the gate) went to ``old`` (6 or 4), whose
    harmonics are only the even (or every third) harmonics of 12. The new move asks the
    harmonics of 12 off the multiples of 12 / q to be insignificant (whole-stream and
    segment-wise folds): they hold the cycle's fundamental, so 12 stays."""
    est = detect_period(_jump_reports(index, trial))
    assert est.period == 12, (index, trial, old, est)


@pytest.mark.parametrize(("index", "trial", "period"), [(9, 7, 12), (116, 0, 24)])
def test_the_route_moves_to_a_divisor_that_explains_the_lag(index, trial, period):
    """Square T = 12, 40 cycles, eps0 = 1, 2 jumps (lag maximum 24) and two harmonics
    T = 24, 40 cycles, eps0 = 1, 1 jump (lag maximum 96): the lag's harmonics off the
    divisor's are noise, and the divisor passes the gate."""
    assert detect_period(_jump_reports(index, trial)).period == period


@pytest.mark.parametrize(
    "cell",
    ["ar1_0.9/300/5.0/60", "trend/300/5.0/66", "ar1_0.98/300/5.0/83", "ar1_slow/1000/5.0/164"],
)
def test_the_route_abstains_on_aperiodic_streams_the_old_gate_passed(cell):
    """SW reports of aperiodic streams (seed 902) on which the old step 8 claimed (97, 9,
    86, 66): the exact test at few cycles of a red background (97, 86: 3 cycles at n =
    300) is no longer part of the route, and the segment-wise test must pass at alpha / 2,
    alpha / 20 when the lag has 12 cycles or more (9 at n = 300, 66 at n = 1,000)."""
    kind, n, eps0, trial = cell.split("/")
    rng = trial_rng(902, "aperiodic", int(trial), f"{kind}/{n}/{eps0}")
    reports = SquareWave(float(eps0)).perturb(aperiodic_stream(kind, int(n), rng), rng)
    est = detect_period(reports)
    assert est.period is None, (cell, est)


def test_a_divisor_explains_a_lag_only_without_energy_off_its_harmonics():
    """``_explained_by``: a noise-free period-12 sine plus white noise, seen at lag 24,
    is explained by 12 (24's odd harmonics are noise); the same stream with a period-24
    component of a fifth of the amplitude is not (harmonic 1 of 24 holds it)."""
    rng = np.random.default_rng(3)
    t = np.arange(960)
    noise = rng.standard_normal(t.size)
    base = np.sin(2 * np.pi * t / 12) + noise
    assert _explained_by(base, 24, 2)
    assert not _explained_by(base + 0.2 * np.sin(2 * np.pi * t / 24), 24, 2)
