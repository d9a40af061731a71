"""``ldpfleet run``'s summary puts the per-device means' error beside what a constant guess
scores: the quickstart printed "mean abs error of device means 4.618" alone, where a constant
at mid-bounds scores 0.147 (results.json had it; the console did not)."""

import io

from ldpfleet.app import cli
from rich.console import Console


def _render(renderable) -> str:
    console = Console(file=io.StringIO(), width=300, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def _results(accuracy: dict, **extra) -> dict:
    """A finished stream run's results.json as the summary reads it (``extra``: more keys,
    e.g. ``stream``)."""
    return extra | {
        "run": "r1",
        "broker": {"kind": "memory"},
        "stages": {"stream": {"status": "complete", "seconds": 1.0}},
        "devices": 2,
        "devices_complete": 2,
        "reports_received": 4,
        "reports_expected": 4,
        "reports_lost": 0,
        "reports_rejected": 0,
        "trace": {"messages": 5},
        "warnings": [],
        "accuracy": accuracy,
    }


def test_the_constant_guess_and_the_clipped_error_are_beside_the_error():
    accuracy = {
        "mean_abs_error": 4.6176,
        "baselines": {
            "constant": {"value": 20.0, "mean_abs_error": 0.14723},
            "clipped_to_bounds": {"mean_abs_error": 3.2, "max_abs_error": 5.0},
        },
    }
    text = _render(cli._summary_table(_results(accuracy)))
    assert "4.618 (clipped to the bounds 3.2; worse than a constant guess 0.1472)" in text


def test_clipping_that_changes_nothing_is_not_repeated():
    accuracy = {
        "mean_abs_error": 0.5,
        "baselines": {
            "constant": {"value": 0.5, "mean_abs_error": 2.0},
            "clipped_to_bounds": {"mean_abs_error": 0.5, "max_abs_error": 1.0},
        },
    }
    text = _render(cli._summary_table(_results(accuracy)))
    assert "0.5 (a constant guess 2)" in text


def test_results_without_baselines_print_the_error_alone():
    text = _render(cli._summary_table(_results({"mean_abs_error": 1.25})))
    assert "1.25" in text and "constant" not in text


def test_a_tie_with_the_constant_is_not_called_better():
    """Equal errors: the private means bought nothing, so "worse than" is said (>=)."""
    accuracy = {
        "mean_abs_error": 2.0,
        "baselines": {"constant": {"value": 0.5, "mean_abs_error": 2.0}},
    }
    text = _render(cli._summary_table(_results(accuracy)))
    assert "2 (worse than a constant guess 2)" in text


def test_the_clipped_estimates_beating_the_constant_are_not_called_worse():
    accuracy = {
        "mean_abs_error": 3.0,
        "baselines": {
            "constant": {"value": 0.5, "mean_abs_error": 2.0},
            "clipped_to_bounds": {"mean_abs_error": 1.5, "max_abs_error": 2.0},
        },
    }
    text = _render(cli._summary_table(_results(accuracy)))
    assert "3 (clipped to the bounds 1.5; a constant guess 2)" in text


def test_a_clipped_error_of_zero_counts_as_beating_the_constant():
    """0.0 is an error, not a missing one (``or math.inf`` read it as absent)."""
    accuracy = {
        "mean_abs_error": 3.0,
        "baselines": {
            "constant": {"value": 0.5, "mean_abs_error": 2.0},
            "clipped_to_bounds": {"mean_abs_error": 0.0, "max_abs_error": 0.0},
        },
    }
    text = _render(cli._summary_table(_results(accuracy)))
    assert "3 (clipped to the bounds 0; a constant guess 2)" in text
