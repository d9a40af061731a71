"""Held-out (issue 19, u5): ``ldpfleet bench cpr`` refuses what it cannot evaluate with one
line naming the option, the limit and the value (``--trials 0``, ``--w 0``, ``--n 0`` and
``--seed -1`` ended in tracebacks, ``--trials -3`` printed NaN means, ``--cosine-w -2`` was
reported as a bad ``eps``, and the ``--grid`` path was outside the error handler)."""

from __future__ import annotations

import pytest
from ldpfleet.app.bench_cpr import (
    GRID_EPS0,
    GRID_SHAPES,
    GRID_SOURCES,
    MIN_LENGTH,
    bench_cpr,
    bench_period_grid,
    grid_cells,
)
from ldpfleet.app.cli import app
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

SMALL = dict(detection_eps=(1.0,), detection_w=(5,), cosine_eps=(1.0,), trials=1, n=300,
             fleet_streams=0)  # fmt: skip


@pytest.mark.parametrize(
    ("change", "field", "text"),
    [
        ({"trials": 0}, "trials", ">= 1, got 0"),
        ({"trials": -3}, "trials", ">= 1, got -3"),
        ({"n": 0}, "n", f">= {MIN_LENGTH}, got 0"),
        ({"n": 100}, "n", f">= {MIN_LENGTH}, got 100"),
        ({"seed": -1}, "seed", ">= 0, got -1"),
        ({"fleet_streams": -5}, "fleet_streams", ">= 0, got -5"),
        ({"detection_w": (0,)}, "w", ">= 1, got 0"),
        ({"detection_w": ()}, "w", "at least one"),
        ({"cosine_w": -2}, "cosine_w", ">= 1, got -2"),
        ({"detection_eps": (-1.0,)}, "eps", "> 0, got -1.0"),
        ({"detection_eps": (float("nan"),)}, "eps", "got nan"),
        ({"cosine_eps": (float("inf"),)}, "cosine_eps", "got inf"),
        ({"detection_eps": (300.0,)}, "eps", "<= 50 x the window (5)"),
        ({"trials": True}, "trials", "got True"),
    ],
)
def test_bench_cpr_refuses_bad_arguments_naming_the_field(change, field, text):
    with pytest.raises(ParameterError) as info:
        bench_cpr(("synthetic",), **{**SMALL, **change})
    assert info.value.field == field
    assert text in str(info.value)


@pytest.mark.parametrize(
    ("change", "field"),
    [({"trials": 0}, "grid_trials"), ({"aperiodic_trials": -1}, "aperiodic_trials"),
     ({"seed": -2}, "seed")],
)  # fmt: skip
def test_the_grid_refuses_bad_counts_before_starting(change, field):
    with pytest.raises(ParameterError) as info:
        bench_period_grid(**change)
    assert info.value.field == field


@pytest.mark.parametrize(
    "args",
    [["--trials", "0"], ["--w", "0"], ["--grid", "--grid-trials", "0"]],
)
def test_the_command_prints_one_line_and_exits_2(args):
    out = CliRunner().invoke(app, ["bench", "cpr", *args])
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    assert "must be an integer >= " in out.output


def test_the_grid_runs_only_the_cells_asked_for():
    """``--grid-source``, ``--grid-shape`` and ``--grid-eps0`` restrict the hour-long grid to
    a user's own cells (a drift cell only where its shape is asked for)."""
    cells = grid_cells([(24, 10), (144, 12)], ["square"], [2.0])
    assert {(c[0], c[1], c[2], c[3]) for c in cells} == {
        ("square", 24, 10, 2.0),
        ("square", 144, 12, 2.0),
    }
    assert len(cells) == 2 + 2  # (144, 12) has its two drift variants too
    assert grid_cells() == grid_cells(GRID_SHAPES, GRID_SOURCES, GRID_EPS0)


@pytest.mark.parametrize(
    ("change", "field", "text"),
    [
        ({"shapes": [(1, 10)]}, "grid_shape period", ">= 2, got 1"),
        ({"shapes": [(24, 2)]}, "grid_shape cycles", ">= 3, got 2"),
        ({"shapes": [(10**6, 3)]}, "grid_shape", "at most 1,000,000 samples"),
        ({"shapes": []}, "grid_shape", "at least one"),
        ({"sources": ["sine"]}, "grid_source", "'sine' is not one of darwin"),
        ({"eps0": [0.0]}, "grid_eps0", "> 0, got 0.0"),
    ],
)
def test_the_grid_refuses_bad_cells_naming_the_option(change, field, text):
    with pytest.raises(ParameterError) as info:
        bench_period_grid(**change)
    assert info.value.field == field and text in str(info.value)


def test_a_bad_grid_shape_on_the_command_line_is_one_line():
    out = CliRunner().invoke(app, ["bench", "cpr", "--grid", "--grid-shape", "24x10"])
    assert out.exit_code == 2 and "must be PERIOD,CYCLES, got '24x10'" in out.output, out.output
