"""A run folder after a clean finish holds no ``-wal``/``-shm`` files (issue 22): the
collector's store and the trace recorder checkpoint and leave WAL mode when they close, so
the read-only readers that follow (report.html, ``ldpfleet trace``, ``trace verify``) do
not recreate them either. Stream, secure-sum and CADR-LDP runs, in-memory and embedded."""

from __future__ import annotations

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

from tests.conftest import ROOT

runner = CliRunner()

CADR = """
[scenario]
name = "clean-degrees"
seed = 2
[graph]
source = "barabasi_albert:n=20,m=2,seed=5"
[cadr]
theta = 3
trace = "all"
"""


def leftovers(out) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.endswith(("-wal", "-shm")))


def run_then_read(scenario, out, broker: str) -> None:
    result = runner.invoke(app, ["run", str(scenario), "--broker", broker, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "trace.sqlite").exists() and (out / "collector.sqlite").exists()
    assert leftovers(out) == []
    # the readers that come after a run: none of them leaves files behind
    for command in (
        ["report", str(out)],
        ["trace", "stats", str(out)],
        ["trace", "show", str(out), "--limit", "3"],
        ["trace", "verify", str(out)],
    ):
        assert runner.invoke(app, command).exit_code == 0, command
    assert leftovers(out) == []


def test_a_stream_run_leaves_no_wal_files(tmp_path):
    run_then_read(ROOT / "scenarios" / "quickstart.toml", tmp_path / "qs", "memory")


@pytest.mark.embedded
def test_a_stream_run_on_the_embedded_broker_leaves_no_wal_files(tmp_path):
    run_then_read(ROOT / "scenarios" / "quickstart.toml", tmp_path / "qs", "embedded")


def test_a_secure_sum_run_leaves_no_wal_files(tmp_path):
    scenario = tmp_path / "secure.toml"
    scenario.write_text(
        (ROOT / "scenarios" / "secure-sum.toml")
        .read_text()
        .replace("devices = 100", "devices = 12")
        .replace("steps = 200", "steps = 40")
    )
    run_then_read(scenario, tmp_path / "ss", "memory")


def test_a_cadr_run_leaves_no_wal_files(tmp_path):
    scenario = tmp_path / "cadr.toml"
    scenario.write_text(CADR)
    run_then_read(scenario, tmp_path / "cadr", "memory")


def test_a_run_into_a_used_folder_leaves_no_arrays_of_the_earlier_run(tmp_path):
    """An earlier run's reconstructions.npz / truth_sample.npz do not survive a run that
    writes none (they would sit beside results that never mention them)."""
    out = tmp_path / "qs"
    out.mkdir()
    for name in ("reconstructions.npz", "truth_sample.npz"):
        (out / name).write_bytes(b"stale")
    run_then_read(ROOT / "scenarios" / "quickstart.toml", out, "memory")
    assert not (out / "reconstructions.npz").exists()
    assert not (out / "truth_sample.npz").exists()
