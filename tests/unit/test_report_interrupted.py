"""Ctrl-C while report.html is written.

Before: ``ldpfleet run`` interrupted after the run, while drawing the page, printed the
summary table and exited 130 with no word (typer's silent exit): results.json was complete,
report.html absent, and nothing said so; and ``write_report`` wrote the page in place, so
an interruption mid-write left a truncated report.html that looks like the run's page.
Now the page is written to a temporary file and renamed, and the run says what happened.
"""

from pathlib import Path

import pytest
from ldpfleet.app import report
from ldpfleet.app.cli import app
from typer.testing import CliRunner


def test_an_interrupted_write_leaves_the_old_page_and_no_half_page(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "build_report", lambda out_dir, progress=None: "<html>" * 1000)
    (tmp_path / "report.html").write_text("OLD")
    real = Path.write_text

    def half_then_ctrl_c(self, data, *args, **kwargs):
        real(self, data[: len(data) // 2], *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", half_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        report.write_report(tmp_path)
    monkeypatch.setattr(Path, "write_text", real)
    assert (tmp_path / "report.html").read_text() == "OLD"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


@pytest.mark.slow
def test_run_says_the_page_was_interrupted_and_how_to_write_it(tmp_path, monkeypatch):
    def interrupted(out_dir, progress=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "write_report", interrupted)
    out = tmp_path / "qs"
    result = CliRunner().invoke(app, ["run", "quickstart", "-b", "memory", "--out", str(out)])
    assert result.exit_code == 130, result.output
    text = " ".join(result.output.split())
    assert f"interrupted while writing report.html; the run's outputs are complete in {out}" in (
        text
    )
    assert f"ldpfleet report {out}" in text
    assert (out / "results.json").exists() and not (out / "report.html").exists()
