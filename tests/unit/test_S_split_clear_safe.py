"""A run in separate processes (the embedded broker, the default) into ``--out .`` beside
the user's own ``collector/`` folder (helper S): ``split_run._clear`` removed it whole,
with the user's files (``ldpfleet run quickstart --out .`` in a checkout of this
repository deleted its ``collector/`` package). Now only folders holding nothing but a
run's files go (``runner.remove_run_piece``)."""

from __future__ import annotations

import json

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

STREAM = """
[scenario]
name = "split-clear"
seed = 3
[fleet]
devices = 3
[stream]
steps = 12
eps = 1.0
w = 4
[source]
kind = "synthetic"
bounds = [-1.0, 1.0]
"""


@pytest.mark.embedded
def test_a_split_run_leaves_a_users_collector_folder(tmp_path):
    (tmp_path / "collector").mkdir()
    (tmp_path / "collector" / "service.py").write_text("x = 1\n")
    (tmp_path / "fleet-5-of-9").mkdir()
    (tmp_path / "fleet-5-of-9" / "ledger.json").write_text("{}")  # a stale piece: removed
    scenario = tmp_path / "elsewhere" / "s.toml"
    scenario.parent.mkdir()
    scenario.write_text(STREAM)
    result = CliRunner().invoke(app, ["run", str(scenario), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["reports_lost"] == 0
    assert (tmp_path / "collector" / "service.py").read_text() == "x = 1\n"
    assert not (tmp_path / "fleet-5-of-9").exists()
