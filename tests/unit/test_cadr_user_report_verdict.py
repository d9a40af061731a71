"""The run report says in words where the release stands against knowing nothing.

Helper B, 2026-12-05 (issue 20): karate club's fleet run at ε = 3 (seed 0) released
per-node MAE 10.03 where all zeros score 4.59 and the constant true median 2.35; the
report's table held the figures but nothing said the release was worse than both. These
tests fail on the code before (no such sentence).
"""

from __future__ import annotations

from ldpfleet.app.cadr_report import release_vs_baselines


def _results(released_mae: float, pipeline: str = "dp") -> dict:
    figure = {"mae": released_mae, "mse": 1.0, "histogram_l1": 0.5, "histogram_emd": 1.0}
    other = {"mae": 3.14, "mse": 1.0, "histogram_l1": 0.5, "histogram_emd": 1.0}
    return {
        "pipeline": pipeline,
        "raw": figure if pipeline == "paper" else other,
        "postprocessed": figure if pipeline == "dp" else other,
        "baselines": {
            "constant_median_oracle": {"mae": 2.353, "mse": 1.0, "value": 3},
            "all_zero": {"mae": 4.588, "mse": 1.0, "value": 0},
        },
    }


def test_a_release_worse_than_all_zeros_is_named_so():
    text = release_vs_baselines(_results(10.03))
    assert "worse than releasing 0 for every node" in text
    assert "10.030" in text and "4.588" in text


def test_a_release_above_the_constant_median_only_says_by_how_much():
    text = release_vs_baselines(_results(3.0))
    assert "above the constant true median" in text
    assert "+0.647" in text and "worse than releasing 0" not in text


def test_a_release_at_or_below_the_constant_median_says_so_under_either_pipeline():
    assert "at or below the constant true median" in release_vs_baselines(_results(2.0))
    text = release_vs_baselines(_results(2.353, pipeline="paper"))
    assert "at or below the constant true median" in text
