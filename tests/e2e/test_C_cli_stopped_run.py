"""``ldpfleet run`` stopped by an error that is not the user's (a full disk, a bug) once
the run started: one sentence naming the part of the run that raised it and exit 1 (the
documented "ran, but the result is not what it should be"), not a traceback of
``ExceptionGroup: unhandled errors in a TaskGroup`` (helper C)."""

from __future__ import annotations

from ldpfleet.app.cli import app
from ldpfleet.collector.service import CollectorService
from typer.testing import CliRunner

from tests.e2e.test_C_one_error import SCENARIO


def test_cli_an_internal_error_is_one_sentence_and_exit_1(tmp_path, monkeypatch):
    async def full_disk(self):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(CollectorService, "run", full_disk)
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    result = CliRunner().invoke(
        app, ["run", str(scenario), "--broker", "memory", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "ExceptionGroup" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    assert "OSError: [Errno 28] No space left on device" in lines[0]
    assert "raised by the collector" in lines[0]
