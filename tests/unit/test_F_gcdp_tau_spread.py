"""``bench gcdp`` reports how firmly its draws choose τ (helper F,
docs/preregistration/F-tau-spread.md): over seeds 0..19 on the shipped files the chosen τ
took four of the five grid values, each choice mostly within its draws' noise. Reporting
only: the chosen τ and every figure the bench printed before are unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.app.gcdp_datasets import prepare
from ldpfleet.collector.gcdp.constants import TAU_GRID

from tests.unit.test_bench_gcdp import WINDOW, synthetic_frame


@pytest.fixture(scope="module")
def prep():
    return prepare("occupancy", (*synthetic_frame(900, 1), *synthetic_frame(600, 2)), WINDOW)


def _old_select_tau(prep, draws, seed):
    """The rule as ``select_tau`` computed it before the per-draw rows were kept (its code
    at 451dd073): each tau's ``_mean_f1`` on the validation windows, stream 2."""
    sel = prep.selection or prep
    val_f, val_l = sel.validation_windows
    scores = {}
    for tau in TAU_GRID:
        cal = bench._calibrate_prepared(sel, tau)
        scores[tau] = bench._mean_f1("GC-DP", sel, val_f, val_l, cal, 1.0, draws, seed, None, 2)[0]
    return max(TAU_GRID, key=lambda t: (scores[t], -t)), scores


@pytest.mark.parametrize("seed", [0, 1, 13])
def test_select_tau_is_unchanged(prep, seed):
    assert bench.select_tau(prep, 4, seed) == _old_select_tau(prep, 4, seed)


def test_the_bench_prints_the_draws_spread_and_the_margin(prep):
    frame = (*synthetic_frame(900, 1), *synthetic_frame(600, 2))
    out = bench.bench_gcdp(data=frame, methods=("GC-DP",), eps_list=(1.0,), draws=4, seed=3,
                           window=WINDOW, timing=False)  # fmt: skip
    cal = out["calibration"]
    tau, scores = _old_select_tau(prep, 4, 3)
    assert cal["tau"] == tau
    assert cal["tau_validation_f1"] == {str(t): round(v, 4) for t, v in scores.items()}
    rows = bench.tau_validation_draws(prep, 4, 3)
    assert cal["tau_validation_f1_std"] == {str(t): round(float(np.std(r)), 4)
                                            for t, r in rows.items()}  # fmt: skip
    for t, r in rows.items():  # the rows are the draws the means were taken over
        assert round(float(np.mean(r)), 4) == cal["tau_validation_f1"][str(t)]
    assert cal["tau_margin"] == bench.tau_margin(rows, tau)


def test_tau_margin_pairs_the_draws_and_names_a_choice_within_noise():
    rows = {
        0.10: np.array([90.0, 92.0, 94.0, 96.0]),
        0.15: np.array([91.0, 92.5, 94.5, 96.5]),  # +0.5 on average, paired sd 0.5
        0.20: np.array([91.0, 92.5, 94.5, 96.5]),  # the same draws as 0.15
        0.25: np.array([80.0, 80.0, 80.0, 80.0]),
    }
    tau, _ = bench.chosen_tau(rows)
    assert tau == 0.15  # ties -> smaller
    margin = bench.tau_margin(rows, tau)
    assert margin["same_draws"] == [0.20] and margin["runner_up"] == 0.10
    assert margin["f1_difference"] == 0.625
    # differences 1, 0.5, 0.5, 0.5: sd (ddof 1) 0.25, / sqrt(4) = 0.125
    assert margin["standard_error"] == 0.125
    assert margin["note"] is None  # 0.625 >= 2 x 0.125: a firm choice on these draws
    rows[0.10] = rows[0.15] - np.array([0.0, 1.0, 0.0, 1.0])  # +0.5 +- 0.29
    margin = bench.tau_margin(rows, 0.15)
    assert margin["note"] and "another --seed may choose 0.1" in margin["note"]


def test_tau_margin_with_one_draw_or_one_distinct_choice():
    one = {0.10: np.array([90.0]), 0.15: np.array([95.0])}
    assert bench.tau_margin(one, 0.15)["standard_error"] is None
    assert "another --seed" in bench.tau_margin(one, 0.15)["note"]
    same = {t: np.array([90.0, 91.0]) for t in TAU_GRID}
    margin = bench.tau_margin(same, 0.10)
    assert margin["runner_up"] is None and margin["same_draws"] == list(TAU_GRID[1:])
    assert margin["note"] is None
