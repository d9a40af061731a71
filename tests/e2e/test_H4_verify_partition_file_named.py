"""``trace verify`` names the partition trace a broken row is in: ``ldpfleet run`` of a
partitioned scenario on a real broker (embedded here) keeps ``trace.sqlite`` and one
``trace-p{p}.sqlite`` per worker, each numbering its rows from 1,
so ``MISMATCH row 40 trace: chain_broken`` (helper H's user trial, an edit of
trace-p1.sqlite) did not say which file's row 40."""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from ldpfleet.app.cli import app
from ldpfleet.app.trace_verify import verify_run
from typer.testing import CliRunner

from tests.tiny_scenarios import stream_text

pytestmark = pytest.mark.slow  # a partitioned run on the embedded broker: ~5 s of setup

PARTITIONED = stream_text(
    "h4-parts",
    devices=4,
    steps=20,
    eps=1.0,
    shape="square",
    period=6,
    extra="[collector]\npartitions = 2",
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("parts")
    (base / "parts.toml").write_text(PARTITIONED)
    out = base / "run"
    args = ["run", str(base / "parts.toml"), "--broker", "embedded", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


def test_the_clean_run_verifies(run_dir):
    assert (run_dir / "trace-p1.sqlite").exists()
    report = verify_run(run_dir)
    assert report.ok, report.mismatches


@pytest.mark.parametrize("name", ["trace-p1.sqlite", "trace.sqlite"])
def test_a_broken_row_names_its_file(run_dir, tmp_path, name):
    target = tmp_path / "run"
    shutil.copytree(run_dir, target)
    with sqlite3.connect(target / name) as db:
        db.execute("UPDATE messages SET payload = CAST(payload || X'20' AS BLOB) WHERE id = 2")
    report = verify_run(target)
    (found,) = [m for m in report.mismatches if m.reason == "chain_broken"]
    assert found.row == 2
    assert found.device == ("trace" if name == "trace.sqlite" else name)
    result = CliRunner().invoke(app, ["trace", "verify", str(target)])
    assert result.exit_code == 1, result.output
    label = "trace" if name == "trace.sqlite" else name
    assert f"MISMATCH row 2 {label}: chain_broken: " in result.output
