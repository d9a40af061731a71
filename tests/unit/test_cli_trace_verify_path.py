"""Held-out CLI QA (helper Q): ``ldpfleet trace verify FILE.sqlite`` said "no trace.sqlite
in <parent>", and a file lying next to a run's trace.sqlite verified that trace instead.
The entry accepts a run directory or its trace.sqlite / results.json / ledger.json, and
refuses any other file (or a missing path) naming what to give, exit status 2."""

from __future__ import annotations

from ldpfleet.app.cli import app
from typer.testing import CliRunner


def _verify(*paths):
    return CliRunner().invoke(app, ["trace", "verify", *map(str, paths)])


def test_another_file_is_refused_naming_what_to_give(tmp_path):
    (tmp_path / "trace.sqlite").write_bytes(b"")  # a run's trace beside it: not used
    copy = tmp_path / "mytrace.sqlite"
    copy.write_bytes(b"SQLite format 3\x00")
    out = _verify(copy)
    assert out.exit_code == 2, out.output
    text = " ".join(out.output.split())
    assert "is not a run's trace.sqlite" in text and "give the run's output directory" in text
    assert "not mytrace.sqlite" in text


def test_a_missing_path_is_named(tmp_path):
    out = _verify(tmp_path / "nowhere")
    assert out.exit_code == 2 and "nowhere does not exist" in " ".join(out.output.split())


def test_the_trace_file_stands_for_its_directory(tmp_path):
    trace = tmp_path / "trace.sqlite"
    trace.write_bytes(b"")
    out = _verify(trace)  # the directory has no results.json: that is what is said
    assert out.exit_code == 2, out.output
    assert f"no results.json in {tmp_path}" in " ".join(out.output.split())
