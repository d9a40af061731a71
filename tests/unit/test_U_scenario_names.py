"""A scenario named without its `.toml` (helper U, a new user's session):
`ldpfleet run mine` beside `mine.toml` said only "scenario file mine does not exist", and
`ldpfleet run faults` beside the user's own `faults.toml` ran the built-in `faults` without
a word. Now the first says "did you mean the file `mine.toml`?", the second warns that the
built-in ran instead of the folder's file."""

from __future__ import annotations

import pytest
from ldpfleet.app.cli import app
from ldpfleet.scenarios.builtin import scenario_root, shadowed_file
from ldpfleet.scenarios.schema import ScenarioError, load_scenario
from typer.testing import CliRunner


def _one_line(output: str) -> str:
    return " ".join(output.replace("│", " ").split())


def test_a_name_without_toml_points_at_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.toml").write_text((scenario_root() / "quickstart.toml").read_text())
    with pytest.raises(ScenarioError) as refused:
        load_scenario("mine")
    assert "did you mean the file `mine.toml`?" in str(refused.value)
    result = CliRunner().invoke(app, ["run", "mine", "--broker", "memory", "--out", "o"])
    assert result.exit_code == 2 and "did you mean the file `mine.toml`?" in result.output


def test_a_built_in_name_beside_a_file_of_that_name_warns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quickstart.toml").write_text((scenario_root() / "quickstart.toml").read_text())
    assert shadowed_file("quickstart") is not None
    assert shadowed_file("quickstart.toml") is None  # the file itself: nothing shadowed
    assert shadowed_file("mine") is None  # no built-in of that name
    # a --credentials file that does not exist stops the run right after the warning (the
    # scenario loads, then the credentials are read): no 7-second quickstart run
    result = CliRunner().invoke(
        app, ["run", "quickstart", "--broker", "memory", "--out", "o", "--credentials", "no.json"]
    )
    assert result.exit_code == 2, result.output
    said = _one_line(result.output)
    assert "warning: quickstart is the built-in scenario; this folder's quickstart.toml" in said
    assert "is not run" in said, said


def test_no_warning_without_a_local_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert shadowed_file("quickstart") is None
