"""A run whose trace.sqlite is damaged past its first page (helper S, new-user trial).

Found: with 3,000 bytes of a quickstart run's trace overwritten in its middle (the size
unchanged, so the file still opens), ``ldpfleet trace stats / show / follow / export`` and
``ldpfleet report`` ended in an ``sqlite3.DatabaseError: database disk image is malformed``
traceback (``trace verify`` already said "cannot be read"). A trace cut short is refused
on opening by every command ("is not an ldpfleet trace"): SQLite compares the file's
size with its header.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3

import pytest
from ldpfleet.app.cli import app
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from typer.testing import CliRunner

STREAM = """
[scenario]
name = "damaged"
seed = 3
[fleet]
devices = 4
[stream]
steps = 200
eps = 1.0
w = 4
[source]
kind = "synthetic"
bounds = [-1.0, 1.0]
"""
# the leaf pages of the messages table (SQLite's dbstat table)
LEAVES = "SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY pageno"


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    out = tmp_path_factory.mktemp("damaged") / "run"
    asyncio.run(run_scenario(parse_scenario(STREAM), broker="memory", out_dir=out))
    return out


@pytest.fixture
def damaged(clean, tmp_path):
    """A copy of the run whose trace has a leaf page of its messages overwritten (the
    middle one: the file opens and its first rows read, a whole scan fails)."""
    out = tmp_path / "run"
    shutil.copytree(clean, out)
    trace = out / "trace.sqlite"
    db = sqlite3.connect(trace)
    (size,) = db.execute("PRAGMA page_size").fetchone()
    leaves = [p for (p,) in db.execute(LEAVES)]
    db.close()
    assert len(leaves) >= 3, leaves
    page = leaves[len(leaves) // 2]  # SQLite numbers pages from 1
    with trace.open("r+b") as handle:
        handle.seek((page - 1) * size)
        handle.write(b"\xff" * size)
    return out


COMMANDS = {
    "stats": ["trace", "stats", "{out}"],
    "show": ["trace", "show", "{out}", "--limit", "0"],
    "follow": ["trace", "follow", "{out}", "d0001"],
    "export": ["trace", "export", "{out}", "-o", "{out}/export.jsonl"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_trace_commands_say_the_file_is_damaged(damaged, command):
    args = [a.format(out=damaged) for a in COMMANDS[command]]
    result = CliRunner().invoke(app, args)
    text = " ".join(result.output.split())
    assert result.exit_code == 2, text
    assert "Traceback" not in text and not isinstance(result.exception, AssertionError)
    assert f"{damaged / 'trace.sqlite'} cannot be read (" in text, text
    assert "the file is damaged (cut short, or edited outside ldpfleet)" in text, text


def test_report_says_which_files_may_be_damaged(damaged):
    result = CliRunner().invoke(app, ["report", str(damaged)])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, text
    assert f"cannot read the run's SQLite files in {damaged} (" in text, text
    assert f"`ldpfleet trace verify {damaged}` checks the trace" in text, text


def test_the_clean_copy_still_reads(clean):
    for command in sorted(COMMANDS):
        if command == "export":
            continue
        args = [a.format(out=clean) for a in COMMANDS[command]]
        assert CliRunner().invoke(app, args).exit_code == 0, command
