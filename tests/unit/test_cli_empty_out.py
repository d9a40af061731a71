"""``-o ""`` / ``--out ""`` (helper Q): an empty output path was read as the current
directory (Path("") is Path(".")), so ``ldpfleet run -o ""`` wrote its outputs into the
working folder. Every output option refuses it, naming the option (exit 2)."""

from __future__ import annotations

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

from tests.conftest import ROOT

QUICK = str(ROOT / "scenarios" / "quickstart.toml")


@pytest.mark.parametrize(
    "args",
    [
        ["run", QUICK, "-o", ""],
        ["run", QUICK, "--out", ""],
        ["certs", "--out", ""],
        ["mosquitto-config", "-o", ""],
        ["collector", QUICK, "-o", ""],
        ["fleet", QUICK, "-o", ""],
        ["merge", "a", "b", "-o", ""],
        ["bench", "fleet", "--broker", "memory", "-o", ""],
        ["trace", "export", "t.sqlite", "-o", ""],
    ],
)
def test_an_empty_output_path_is_refused_naming_the_option(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "'--out'" in result.output or "'--output'" in result.output, result.output
    assert "empty" in result.output, result.output
    assert list(tmp_path.iterdir()) == []  # nothing written into the working folder
