"""``ldpfleet run`` of a bulk scenario whose collector died (``BulkRunFailed``): one line
naming the collector and its exit code, exit 1, no traceback (helper C's app/cli.py patch).
Old: a BulkRunFailed traceback."""

from __future__ import annotations

from ldpfleet.app.cli import app
from ldpfleet.scenarios import bulk_run
from typer.testing import CliRunner

from tests.conftest import ROOT


def test_a_dead_bulk_collector_is_one_line_and_exit_1(tmp_path, monkeypatch):
    sentence = (
        "the bulk collector process of partition 0 (pid 42) ended with exit code -9 (SIGKILL)"
    )

    async def dies(*args, **kwargs):
        raise bulk_run.BulkRunFailed(sentence)

    monkeypatch.setattr(bulk_run, "run_bulk_scenario", dies)
    scenario = tmp_path / "q.toml"
    text = (ROOT / "scenarios" / "quickstart.toml").read_text()
    scenario.write_text(text.replace("[fleet]\n", '[fleet]\nconnection = "bulk"\n', 1))
    result = CliRunner().invoke(
        app, ["run", str(scenario), "-b", "memory", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [f"error: {sentence}"], result.output
