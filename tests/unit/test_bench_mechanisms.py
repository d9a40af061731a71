"""``ldpfleet bench mechanisms``: every cell present, empirical MSE near the analytic one,
the markdown tables, and the command's exit codes."""

from __future__ import annotations

import json

import pytest
import typer
from ldpfleet.app.bench_mechanisms import (
    DISTRIBUTIONS,
    bench_mechanisms,
    bench_mechanisms_command,
    markdown,
)
from typer.testing import CliRunner


def test_cells_and_agreement_with_the_analytic_mse():
    result = bench_mechanisms(eps_list=(1.0, 4.0), sizes=(50, 400), trials=800, seed=1)
    rows = result["rows"]
    assert len(rows) == 6 * 2 * len(DISTRIBUTIONS) * 2
    for row in rows:
        assert row["mse"] > 0
        if row["analytic_mse"] is not None:
            # 800 trials: the MSE's relative sd is ~ sqrt(2 / 800) = 5% (more for the
            # heavy-tailed two-point Duchi law); 30% is > 5 sd
            assert row["mse"] == pytest.approx(row["analytic_mse"], rel=0.3), row
    table = markdown(result)
    assert table.count("| uniform | 1 |") == 2 and "| distribution | ε | sw | sw01 |" in table


def test_the_command_prints_json_and_refuses_bad_options():
    app = typer.Typer()
    app.command()(bench_mechanisms_command)
    runner = CliRunner()
    ok = runner.invoke(app, ["--sizes", "20", "--trials", "5", "--eps", "1"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["bench"] == "mechanisms"
    for bad in (["--distributions", "nope"], ["--mechanisms", "nope"], ["--eps", "x"]):
        assert runner.invoke(app, bad).exit_code == 2, bad
