"""``ldpfleet trace export -o FILE`` must not write over the trace it exports, nor over any
other SQLite database (helper Q's held-out QA: ``-o RUN/trace.sqlite`` truncated the run's
signed trace to 0 bytes before reading it, then died in an OperationalError traceback)."""

from __future__ import annotations

import sqlite3

from ldpfleet.app.cli import app
from ldpfleet.broker.recorder import SCHEMA
from typer.testing import CliRunner


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


def test_the_trace_itself_is_refused_and_kept(tmp_path):
    trace = _trace(tmp_path / "trace.sqlite")
    before = trace.read_bytes()
    for source in (tmp_path, trace):
        result = CliRunner().invoke(app, ["trace", "export", str(source), "-o", str(trace)])
        assert result.exit_code == 2, result.output
        assert "is the trace being exported" in result.output, result.output
        assert trace.read_bytes() == before


def test_another_database_is_refused_and_kept(tmp_path):
    trace = _trace(tmp_path / "trace.sqlite")
    store = _trace(tmp_path / "collector.sqlite")
    before = store.read_bytes()
    result = CliRunner().invoke(app, ["trace", "export", str(trace), "-o", str(store)])
    assert result.exit_code == 2 and "SQLite database" in result.output, result.output
    assert store.read_bytes() == before


def test_an_existing_text_file_is_still_overwritten(tmp_path):
    trace = _trace(tmp_path / "trace.sqlite")
    out = tmp_path / "export.jsonl"
    out.write_text("old\n")
    result = CliRunner().invoke(app, ["trace", "export", str(trace), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "old" not in out.read_text() and "stage" in out.read_text()
