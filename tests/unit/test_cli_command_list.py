"""The command lists of ``ldpfleet --help``, ``ldpfleet trace --help`` and ``ldpfleet bench
--help`` give each command one line on a wide terminal.

Before: a docstring's hard line breaks went into the listing, so that even at 300 columns
``scenarios`` read "the name `ldpfleet run NAME` takes and" / "the scenario's description."
on two lines, ``watch`` on three, ``merge`` and ``collector`` on four (33 lines for 14
commands); only the commands registered through ``_one_line_command`` were joined.
"""

import pytest
from ldpfleet.app.cli import app
from typer.main import get_command
from typer.testing import CliRunner


@pytest.mark.parametrize("group", [[], ["trace"], ["bench"]], ids=["ldpfleet", "trace", "bench"])
def test_one_line_per_command(group):
    command = get_command(app)
    for name in group:
        command = command.commands[name]
    out = CliRunner().invoke(app, [*group, "--help"], env={"COLUMNS": "400"}).output
    panel = out.split("─ Commands ─", 1)[1]
    rows = [line for line in panel.splitlines() if line.startswith("│")]
    assert len(rows) == len(command.commands), "\n".join(rows)
