"""Gaps found by helper T4's planted-bug hunt in ``ldpfleet bench cadr``'s sweep
(app/cadr_sweep.py), whose tables docs/cadr-private.md quotes: the cells average every
run, the near-minimum band is 2√2 standard errors wide, the gap to the lowest method is
the reference's excess over the winner, relative to the winner. Hand-made rows; each test
names the mutants it kills."""

from __future__ import annotations

import math

import pytest
from ldpfleet.app import cadr_sweep as cs


def _run(mae: float) -> dict:
    figures = dict.fromkeys(cs.METRICS, 1.0)
    return {**figures, "mae": mae, "seconds": 0.5, "spent": 2.0}


def test_a_cell_averages_every_run(monkeypatch):
    """Kills SW4: a cell's figures were one run's (the first seed's), with no standard
    error, under a table that says "runs per cell"."""
    monkeypatch.setattr(cs, "_run_cells", lambda graph, jobs, workers: [_run(j[4]) for j in jobs])
    cells, cpu = cs._cells(None, [("ll", 5, 1.0)], 0.1, [1, 2, 3], 1)
    cell = cells[("ll", 5, 1.0)]
    assert cell["mae"] == 2.0 and cell["mae_se"] == pytest.approx(1 / math.sqrt(3))
    assert cpu == 1.5 and cell["spent"] == 2.0


def _row(method: str, theta: int, mae: float, se: float, spent: float = 2.0) -> dict:
    return {"method": method, "theta": theta, "mae": mae, "mae_se": se, "mse": mae**2,
            "mse_se": se, "spent": spent}  # fmt: skip


def test_the_near_minimum_band_is_two_root_two_standard_errors():
    """Kills SW3 (the band 2 standard errors wide: θ = 3, 0.5 above the minimum with a
    standard error 0.2, is within 2√2 · 0.2 = 0.566) and SW11 (the budget spent read from
    the first row, another method's)."""
    rows = [_row("ra", t, 9.0, 0.1, spent=1.0) for t in (1, 2, 3, 4)]
    rows += [_row("ll", t, mae, se) for t, mae, se in
             ((1, 5.0, 0.1), (2, 4.0, 0.2), (3, 4.5, 0.1), (4, 6.0, 0.1))]  # fmt: skip
    summary = cs._method_summary(rows, "ll", {"by_sum": 2, "by_deviation": 3})
    assert summary["argmin_mae"] == 2 and summary["near_min_thetas"] == [2, 3]
    assert summary["mae_at_by_deviation"] == 4.5 and summary["spent"] == 2.0


def test_the_gap_to_the_lowest_method():
    """Kills SW7 (the gap's sign turned: the winner's MAE minus the reference's) and SW8
    (the relative gap taken of the reference's MAE instead of the winner's)."""
    rows = [_row("ll", 1, 3.0, 0.3), _row("ra", 1, 2.0, 0.4)]
    lowest, not_lowest = cs._lowest_by_theta(rows, [1], "ll")
    assert lowest == [{"theta": 1, "method": "ra"}]
    (gap,) = not_lowest
    assert gap["gap"] == 1.0 and gap["relative_gap"] == 0.5
    assert gap["gap_in_se"] == pytest.approx(2.0)


def test_the_winner_counts_are_per_method():
    """Kills SW12: every method's winner count was the number of θ."""
    sweep = {"reference": "ll", "reference_lowest_count": 1, "thetas": [1, 2],
             "lowest": [{"theta": 1, "method": "ra"}, {"theta": 2, "method": "ll"}],
             "reference_not_lowest": []}  # fmt: skip
    assert "Winner counts: LL 1, RA 1." in "\n".join(cs._winner_lines(sweep, ["ll", "ra"]))


def test_the_choice_table_gives_each_chosen_thetas_own_mae():
    """Kills SW9: the MAE beside θ by Deviation was the MAE at θ by Sum."""
    figures = {"argmin_mae": 2, "mae_at_argmin": 4.0, "mae_se_at_argmin": 0.2,
               "near_min_thetas": [2, 3], "by_sum": 3, "mae_at_by_sum": 4.5,
               "by_deviation": 4, "mae_at_by_deviation": 6.0, "argmin_mse": 2,
               "mse_at_argmin": 16.0}  # fmt: skip
    lines = cs._choice_table({"methods": {"ll": figures}}, ["ll"])
    assert "| LL | 2 | 4.00 ± 0.20 | 2–3 | 3 | 4.50 | 4 | 6.00 | 2 | 16 |" in lines
