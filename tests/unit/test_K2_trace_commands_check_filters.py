"""``trace stats``, ``trace show`` and ``trace export`` each refuse a ``--kind`` typo and a
``--device`` the trace never names (exit 2, one sentence), and accept a kind and device it
does hold: the checks helper K2 gathered into one function for the three commands."""

from __future__ import annotations

import sqlite3

import pytest
from ldpfleet.app.cli import app
from ldpfleet.broker.recorder import SCHEMA
from typer.testing import CliRunner

COMMANDS = ("stats", "show", "export")


def _trace(path):
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.execute(
        "INSERT INTO messages (time, topic, family, sender, recipient, kind, seq, bytes, "
        "payload) VALUES (1.0, 'ldp/r1/ctl/stage', 'ctl', 'collector', NULL, 'stage', NULL, "
        "2, x'7b7d')"
    )
    db.commit()
    db.close()
    return path


def _invoke(command, trace, *options):
    return CliRunner().invoke(app, ["trace", command, str(trace), *options])


@pytest.mark.parametrize("command", COMMANDS)
def test_a_kind_typo_is_refused(command, tmp_path):
    result = _invoke(command, _trace(tmp_path / "trace.sqlite"), "--kind", "stgae")
    assert result.exit_code == 2, result.output
    assert "'stgae' is not a message kind" in result.output, result.output
    assert "did you mean 'stage'" in result.output, result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_an_absent_device_is_refused(command, tmp_path):
    result = _invoke(command, _trace(tmp_path / "trace.sqlite"), "--device", "d9999")
    assert result.exit_code == 2, result.output
    assert "d9999" in result.output, result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_a_held_kind_and_device_are_accepted(command, tmp_path):
    trace = _trace(tmp_path / "trace.sqlite")
    result = _invoke(command, trace, "--kind", "stage", "--device", "collector")
    assert result.exit_code == 0, result.output
