"""``ldpfleet collector --coordinator`` / ``--partition p/P`` (issue 23): the partitioned
collector side started by hand as separate programs, as on separate hosts
(docs/separate-processes.md), merged with ``ldpfleet merge`` and verified; flags that do not
fit the scenario's ``[collector] partitions`` are refused with one sentence (exit 2)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.test_partitions import STREAM, with_partitions
from tests.e2e.test_sides import BASE, Processes, broker_process, broker_url  # noqa: F401

SAFETY = 300  # seconds: a hang fails the test instead of blocking the suite


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """One ``ldpfleet`` command as its own process, its output captured."""
    return subprocess.run([*BASE, *args], cwd=cwd, capture_output=True, text=True, timeout=SAFETY)


def _said(done: subprocess.CompletedProcess) -> str:
    """What the command printed (stdout and stderr), whitespace folded to single spaces."""
    return " ".join((done.stdout + done.stderr).split())


def _write(tmp_path: Path, count: int) -> Path:
    path = tmp_path / f"p{count}.toml"
    path.write_text(with_partitions(STREAM, count) if count > 1 else STREAM)
    return path


@pytest.mark.parametrize(
    ("count", "flags", "needle"),
    [
        (2, [], "run one --coordinator and --partition p/2"),
        (2, ["--partition", "0/3"], "must be p/2"),
        (2, ["--partition", "zero"], "must be p/P"),
        (2, ["--coordinator", "--partition", "0/2"], "not both"),
        (1, ["--coordinator"], "needs [collector] partitions > 1"),
    ],
)
def test_flags_that_do_not_fit_the_scenario_are_refused(tmp_path, count, flags, needle):
    scenario = _write(tmp_path, count)
    done = _cli(
        "collector", str(scenario), "-b", "mqtt://127.0.0.1:9", "--run", "r1",
        "-o", str(tmp_path / "out"), *flags,
    )  # fmt: skip
    text = _said(done)
    assert done.returncode == 2, text
    assert needle in text, text
    assert "partition" in text  # the field is named


@pytest.mark.slow
def test_coordinator_two_workers_and_a_shard_by_hand_merge_and_verify(tmp_path, broker_url):  # noqa: F811
    scenario = _write(tmp_path, 2)
    run = f"pcli{time.monotonic_ns() % 10**6}"
    common = [str(scenario), "-b", broker_url, "--run", run, "--seed", "5"]
    procs = Processes(tmp_path)
    try:
        procs.spawn("p1", "collector", *common, "--partition", "1/2", "-o", "p1")
        procs.spawn("coordinator", "collector", *common, "--coordinator", "-o", "coord")
        procs.spawn("fleet", "fleet", *common, "--shard", "0/1", "-o", "f0")
        procs.spawn("p0", "collector", *common, "--partition", "0/2", "-o", "p0")
        for name, proc in procs.procs.items():
            assert proc.wait(timeout=SAFETY) == 0, (name, procs.logs())
    finally:
        procs.close()
    assert "coordinator for run" in procs.log("coordinator")
    assert "partition worker 0/2" in procs.log("p0")
    merged = _cli("merge", "coord", "p0", "p1", "f0", "--out", "all", cwd=tmp_path)
    assert merged.returncode == 0, _said(merged)
    results = json.loads((tmp_path / "all" / "results.json").read_text())
    assert results["devices_complete"] == results["devices"] == 16
    assert results["reports_lost"] == 0 and results["reports_received"] > 0
    assert len(results["trace"]["partitions"]) == 2  # one signed trace per worker
    verify = _cli("trace", "verify", "all", cwd=tmp_path)
    assert verify.returncode == 0, _said(verify)


def test_credentials_for_another_partition_count_are_refused(tmp_path):
    from ldpfleet.broker.auth import Credentials

    scenario = _write(tmp_path, 2)
    creds = Credentials.generate("r1", [f"d{i}" for i in range(16)]).save(tmp_path / "c.json")
    for command in (
        ["collector", str(scenario), "--coordinator"],
        ["fleet", str(scenario), "--shard", "0/1"],
    ):
        done = _cli(
            *command, "-b", "mqtt://127.0.0.1:9", "--run", "r1",
            "--credentials", str(creds), "-o", str(tmp_path / "out"),
        )  # fmt: skip
        text = _said(done)
        assert done.returncode == 2, text
        assert "is for 1 collector partition(s), but the scenario has" in text, text


@pytest.mark.slow
def test_bench_fleet_with_partitions_reports_cpu_per_report_and_each_worker():
    done = _cli(
        "bench", "fleet", "--devices", "40", "--steps", "10", "--partitions", "2",
        "--connection", "gateway",
    )  # fmt: skip
    assert done.returncode == 0, _said(done)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["partitions"] == 2 and figures["lost"] == 0
    assert figures["messages"] == 40 * 2  # 10 steps in batches of w = 5
    assert len(figures["peak_rss_mb"]["partitions"]) == 2
    assert figures["cpu_seconds"] > 0 and figures["cpu_us_per_report"] > 0


def test_bench_fleet_refuses_partitions_on_the_memory_broker():
    done = _cli(
        "bench", "fleet", "--devices", "4", "--steps", "5", "--partitions", "2",
        "--broker", "memory",
    )  # fmt: skip
    text = _said(done)
    assert done.returncode == 2, text
    assert "partitions" in text and "not memory" in text
