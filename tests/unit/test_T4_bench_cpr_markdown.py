"""Gaps found by helper T4's planted-bug hunt in ``ldpfleet bench cpr``'s markdown
(app/bench_cpr_markdown.py), the tables docs/period.md and docs/cpr.md quote: no test read
a cell of them (test_period.py checks that the grid table names its judgement and has an
``all`` row). Hand-made results with a different figure in every column; each test names
the mutants it kills."""

from __future__ import annotations

from ldpfleet.app.bench_cpr_grid import claims_upper95
from ldpfleet.app.bench_cpr_markdown import (
    false_claim_markdown,
    grid_markdown,
    held_out_markdown,
    markdown,
)


def _cell(source, dp, fv, acf, below_fv, below_acf, fallback=None, true_abstaining=None,
          abstain=0.0) -> dict:  # fmt: skip
    return {
        "source": source, "period": 25, "cycles": 12, "eps0": 1.0, "jitter": 0.02,
        "drift": 0.0,
        "accuracy": {"detect_period": dp, "folded_variance": fv, "autocorrelation": acf},
        "below_p": {"folded_variance": below_fv, "autocorrelation": below_acf},
        "abstain": abstain, "cosine_true_period": 0.05, "cosine_when_detected": 0.06,
        "cosine_fallback": fallback, "cosine_true_period_when_abstaining": true_abstaining,
    }  # fmt: skip


def _grid_result() -> dict:
    """Three cells (Bonferroni level 0.05 / 3): square below FV at p = 0.03 (below, not
    clearly); sine below FV at p = 0.01 (clearly), its count under FV's but above ACF's;
    a second sine cell not below anything."""
    grid = [
        _cell("square", 0.5, 0.8, 0.6, 0.03, 0.5, fallback=0.5, true_abstaining=0.3, abstain=0.1),
        _cell("sine", 0.7, 0.9, 0.4, 0.01, 0.9, fallback=0.45, true_abstaining=0.35, abstain=0.3),
        _cell("sine", 1.0, 0.9, 0.5, 0.9, 0.9),
    ]
    aperiodic = [
        {"kind": "ar1", "n": 300, "eps0": 5.0,
         "false_claims": {"detect_period": 0.02, "folded_variance": 1.0, "autocorrelation": 0.5}},
        {"kind": "white", "n": 100, "eps0": 2.0,
         "false_claims": {"detect_period": 0.1, "folded_variance": 0.3, "autocorrelation": 0.2}},
    ]  # fmt: skip
    speed = {"detect_period_ms_10k_median": 1.0, "detect_period_ms_10k_max": 2.0}
    return {"trials": 40, "aperiodic_trials": 40, "grid": grid, "aperiodic": aperiodic,
            "speed": speed}  # fmt: skip


def test_the_grid_summary_counts_and_means_per_source():
    """Kills BM2 (a cell counted "lower" only under BOTH baselines, ``min``), BM3 (a cell
    "below" only when below both, ``max`` of the p values), BM1 (no Bonferroni division:
    "clearly below" at p < 0.05) and BM10 (the median accuracy for the mean)."""
    lines = grid_markdown(_grid_result(), "cmd").splitlines()
    assert "| square | 1 | 1 | 1 | 0 | 50 | 80 | 60 |" in lines
    assert "| sine | 2 | 1 | 1 | 1 | 85 | 90 | 45 |" in lines
    assert "| **all** | 3 | 2 | 2 | 1 | 73 | 87 | 50 |" in lines


def test_the_cell_table_marks_and_columns():
    """Kills BM4 (the folded-variance and autocorrelation columns swapped), BM1 and BM3
    (the marks: ◂◂ below at p < 0.05, ✖ clearly below at p < 0.05 / cells)."""
    lines = grid_markdown(_grid_result(), "cmd").splitlines()
    head = "| {} | 25 | 12 | 1 | 0.02 | 0 | "
    assert head.format("square") + "50 ◂◂ | 80 | 60 | 10 | 0.050 | 0.060 | 0.500 |" in lines
    assert head.format("sine") + "70 ✖ | 90 | 40 | 30 | 0.050 | 0.060 | 0.450 |" in lines
    assert head.format("sine") + "100 | 90 | 50 | 0 | 0.050 | 0.060 | - |" in lines


def test_the_false_claims_worst_cell_and_the_weighted_fallback():
    """Kills BM5 (the best aperiodic cell named as the worst) and BM6 (the fallback's cost
    averaged over cells unweighted: (0.2 + 0.1) / 2 = 0.150, where weighting by the
    abstention rates 0.1 and 0.3 gives (0.02 + 0.03) / 0.4 = 0.125)."""
    text = grid_markdown(_grid_result(), "cmd")
    assert (
        "detect_period claims a period on 6.00 % of all aperiodic trials; worst cell 10.0 % "
        "(white, n = 100, ε0 = 2)." in text
    )
    assert "| ar1 | 300 | 5 | 2.0 | 100.0 | 50.0 |" in text
    assert "cells weighted by their abstention rate: +0.125." in text


def test_the_held_out_table_gives_the_upper_bound():
    """Kills BM7: the pooled row's "95 % upper bound" column printed the rate again."""
    rows = [
        {"kind": "ar1", "n": 100, "eps0": 1.0, "claims": 1, "trials": 20, "rate": 0.05},
        {"kind": "ar1", "n": 200, "eps0": 1.0, "claims": 0, "trials": 30, "rate": 0.0},
    ]
    text = held_out_markdown(rows, "cmd")
    upper = 100 * claims_upper95(1, 50)
    assert f"| ar1 | 1 / 50 | 2.00 | {upper:.2f} | 5.0 (n = 100, ε0 = 1) |" in text
    assert "| ar1 | 100 | 1 / 20 |" in text and "| ar1 | 200 | 0 / 30 |" in text


def test_the_false_claim_table_columns():
    """Kills BM8: the rate and its upper bound swapped."""
    row = {"kind": "ar1", "n": 150, "eps0": 5.0, "trials": 50, "claims": 1, "rate": 0.02,
           "upper95": 0.1, "p_rate_ge_1pct": 0.91}  # fmt: skip
    assert "| ar1 | 150 | 5 | 50 | 1 | 2.00 | 10.00 | 0.91 |" in false_claim_markdown([row], "c")


def test_each_dataset_table_holds_its_own_figures():
    """Kills BM9: the cosine table of one dataset read the cells of every dataset (the last
    dataset's figures shown under the first's heading)."""
    result = {
        "n": 1000, "trials": 5, "datasets": ["a", "b"], "cosine_w": 10,
        "detection": [
            {"dataset": "a", "eps": 1.0, "w": 10, "accuracy": 0.5},
            {"dataset": "a", "eps": 2.0, "w": 10, "accuracy": 0.75},
            {"dataset": "b", "eps": 1.0, "w": 10, "accuracy": 0.25},
            {"dataset": "b", "eps": 2.0, "w": 10, "accuracy": 1.0},
        ],
        "cosine": [
            {"dataset": "a", "method": "cpr", "eps": 1.0, "mean": 0.1},
            {"dataset": "b", "method": "cpr", "eps": 1.0, "mean": 0.2},
        ],
        "speed": {"cpr_ms_per_stream_10k_median": 5},
    }  # fmt: skip
    lines = markdown(result, "cmd").splitlines()
    first = lines.index("**Mean cosine distance, a, w = 10** (lower is better)")
    second = lines.index("**Mean cosine distance, b, w = 10** (lower is better)")
    assert lines[first + 4] == "| cpr | 0.100 |" and lines[second + 4] == "| cpr | 0.200 |"
    detection = lines.index("**Detection accuracy (%), a**")
    assert lines[detection + 4] == "| 10 | 50 | 75 |"
