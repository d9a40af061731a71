"""Options whose default a reader could not learn from ``--help`` (review #2, helper R):
``audit --trials`` (a default per mechanism, 4,000 to 1,000,000), ``collector --out`` and
``fleet --out`` (where the outputs go when it is not given)."""

import re

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner


def _option_help(command: list[str], option: str) -> str:
    out = CliRunner().invoke(app, [*command, "--help"], terminal_width=400).output
    flat = [" ".join(re.sub("[│╭╮╰╯─]", " ", line).split()) for line in out.splitlines()]
    start = next(i for i, line in enumerate(flat) if line.startswith(option + " "))
    rows = [flat[start]]
    for line in flat[start + 1 :]:  # the help's wrapped lines, up to the next option
        if not line or line.startswith("-"):
            break
        rows.append(line)
    return " ".join(rows)


@pytest.mark.parametrize(
    ("command", "option", "words"),
    [
        (["audit"], "--trials", ["default: the mechanism's", "7,600 for laplace"]),
        (["collector"], "--out", ["default: runs/RUN"]),
        (["fleet"], "--out", ["default: runs/RUN/fleet-i-of-k"]),
    ],
)
def test_the_help_gives_the_default(command, option, words):
    text = _option_help(command, option)
    for word in words:
        assert word in text, text
