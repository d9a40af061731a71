"""``bench cpr --grid --grid-shape PERIOD,CYCLES``: a refused number says which of the two
it is; "--grid-shape: must be an integer >= 3, got 2" did not (helper P, 2026-12-06)."""

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner


@pytest.mark.parametrize(
    ("shape", "line"),
    [
        ("24,2", "error: --grid-shape: must be an integer >= 3, got 2 (the cycles)"),
        ("1,5", "error: --grid-shape: must be an integer >= 2, got 1 (the period)"),
    ],
)
def test_the_refused_part_is_named(shape, line):
    out = CliRunner().invoke(app, ["bench", "cpr", "--grid", "--grid-shape", shape])
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert line in " ".join(out.output.split()), out.output
