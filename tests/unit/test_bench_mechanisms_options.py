"""``ldpfleet bench mechanisms`` names the option of a bad value (``error: --eps: …``), as
every other command does; it printed the parameter's field (``error: eps: …``)."""

from __future__ import annotations

import pytest
import typer
from ldpfleet.app.bench_commands import bench_mechanisms_command
from typer.testing import CliRunner


@pytest.mark.parametrize(
    "args, line",
    [
        (["--eps", "-1"], "error: --eps: must be in (0, 50], got -1.0"),
        (["--eps", "x"], "error: --eps: not a number: 'x'"),
        (["--sizes", "0"], "error: --sizes: must be whole numbers 1 .. 10,000,000, got '0'"),
        (["--trials", "0"], "error: --trials: must be at least 2"),
        (["--seed", "-1"], "error: --seed: must be 0 .. 2^63-1, got -1"),
        (["--distributions", "nope"], "error: --distributions: must be among uniform"),
        (["--mechanisms", "nope"], "error: --mechanisms: 'nope' is not a built-in"),
        (["--mechanisms", "sw,,raw"], "error: --mechanisms: an empty entry in 'sw,,raw'"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_option(args, line):
    app = typer.Typer()
    app.command()(bench_mechanisms_command)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    [printed] = result.stderr.strip().splitlines()
    assert printed.startswith(line), printed
