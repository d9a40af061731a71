"""The report's outcome line puts the baselines beside a CADR-LDP release's MAE (helper H's
user trial: the line gave "degree MAE 2.43" alone, while results.json's
``baselines.constant_median_oracle.mae`` was 2.43 too)."""

from __future__ import annotations

from ldpfleet.app.report import _accuracy_figures

CADR = {
    "stage_seconds": {"dsr": 0.1},
    "released": {"n0000": 1.0},
    "mae": 2.433333333333333,
    "mse": 19.566666666666666,
    "distribution_l1": 0.36666666666666664,
    "baselines": {
        "constant_median_oracle": {"mae": 2.433333333333333, "value": 4},
        "all_zero": {"mae": 5.7, "value": 0},
    },
}


def test_the_baselines_stand_beside_the_mae():
    (line,) = [f for f in _accuracy_figures(CADR) if f.startswith("degree MAE")]
    assert line == (
        "degree MAE 2.43 (the true median for every node, a non-private oracle: 2.43; "
        "0 for every node: 5.7), MSE 19.6, distribution L1 0.367"
    )


def test_a_results_without_baselines_keeps_the_old_line():
    results = {k: v for k, v in CADR.items() if k != "baselines"}
    (line,) = [f for f in _accuracy_figures(results) if f.startswith("degree MAE")]
    assert line == "degree MAE 2.43, MSE 19.6, distribution L1 0.367"


def test_a_malformed_baseline_is_left_out():
    results = CADR | {"baselines": {"constant_median_oracle": {"mae": "x"}, "all_zero": None}}
    (line,) = [f for f in _accuracy_figures(results) if f.startswith("degree MAE")]
    assert line == "degree MAE 2.43, MSE 19.6, distribution L1 0.367"
