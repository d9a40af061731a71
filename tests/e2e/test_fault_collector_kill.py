"""Fault test (issue 8, item 2a): ``kill -9`` the collector mid-stream and restart it.

The collector and the fleet run as separate processes against Mosquitto. Once the
collector has committed some but not all reports to its SQLite store, it is killed with
SIGKILL and restarted with the same command (same run id, same output directory), so it
reopens its store and its persistent MQTT session. The final results must equal a clean
in-process run with the same seed: every report stored exactly once, none lost, the
retransmitted ones counted as duplicates and never as data.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

from tests.conftest import ROOT

pytestmark = pytest.mark.faults

DEVICES = 20
BATCHES = 40  # 200 steps / batch_steps 5
EXPECTED = DEVICES * BATCHES
# seconds: bound on a wait that must not pass unless something hangs (a collector start
# costs about 1 s of CPU; one Python start took 13.5 s of wall time at load 9)
HANG_GUARD = 180.0

# the quickstart, with 20 devices paced at 25 ms a step (about 5 s of streaming) and quick
# retransmissions, so the kill lands mid-stream and the recovery does not wait long
SCENARIO = (
    (ROOT / "scenarios" / "quickstart.toml")
    .read_text()
    .replace("devices = 50", f"devices = {DEVICES}")
    .replace("batch_steps = 5 ", "step_seconds = 0.025\nretransmit_after = 1.0\nbatch_steps = 5 ")
)


def stored_rows(path: Path) -> list[tuple[str, int, bytes]]:
    """Every (device, seq, values) in a collector store."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return list(db.execute("SELECT device, seq, vals FROM reports ORDER BY device, seq"))


def stored_count(path: Path) -> int:
    """Rows committed so far (0 while the store does not exist yet)."""
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute("SELECT count(*) FROM reports").fetchone()[0]
    except sqlite3.OperationalError:  # created but the schema not yet committed
        return 0


@pytest.fixture
def scenario(tmp_path) -> Path:
    path = tmp_path / "fault.toml"
    path.write_text(SCENARIO)
    assert "step_seconds = 0.025" in SCENARIO and f"devices = {DEVICES}" in SCENARIO
    return path


@pytest.mark.mosquitto
def test_collector_killed_mid_stream_and_restarted_loses_and_doubles_nothing(
    mosquitto_url, scenario, tmp_path
):
    # the clean reference: the same scenario and seed, in-process on the memory transport
    clean = tmp_path / "clean"
    result = CliRunner().invoke(
        app, ["run", str(scenario), "--broker", "memory", "--out", str(clean)]
    )
    assert result.exit_code == 0, result.output
    reference = json.loads((clean / "results.json").read_text())
    assert reference["reports_received"] == EXPECTED and reference["reports_lost"] == 0

    run = f"kill9-{secrets.token_hex(3)}"
    out = tmp_path / "col"
    store = out / "collector.sqlite"
    base = [sys.executable, "-m", "ldpfleet.app.cli"]
    collector_cmd = [*base, "collector", str(scenario), "--broker", mosquitto_url]
    collector_cmd += ["--run", run, "--out", str(out)]
    fleet_cmd = [*base, "fleet", str(scenario), "--broker", mosquitto_url, "--run", run]
    fleet_cmd += ["--out", str(tmp_path / "fleet")]

    handles = []

    def spawn(cmd: list[str], log: str) -> subprocess.Popen:
        handles.append((tmp_path / log).open("wb"))
        return subprocess.Popen(cmd, cwd=tmp_path, stdout=handles[-1], stderr=subprocess.STDOUT)

    def logs() -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(tmp_path.glob("*.log"))
        )

    first = spawn(collector_cmd, "collector-1.log")
    procs = [first]
    try:
        # the fleet starts once the collector is subscribed (its recorder's line is printed)
        deadline = time.monotonic() + HANG_GUARD
        while "listening on" not in (tmp_path / "collector-1.log").read_text(errors="replace"):
            assert first.poll() is None and time.monotonic() < deadline, logs()
            time.sleep(0.05)
        fleet = spawn(fleet_cmd, "fleet.log")
        procs.append(fleet)

        # kill -9 once some, but far from all, reports are committed
        deadline = time.monotonic() + HANG_GUARD
        while (killed_at := stored_count(store)) < EXPECTED // 5:
            assert first.poll() is None and time.monotonic() < deadline, logs()
            time.sleep(0.01)
        os.kill(first.pid, signal.SIGKILL)
        assert first.wait(timeout=10) == -signal.SIGKILL
        assert killed_at < EXPECTED, f"the stream had ended before the kill ({killed_at})"
        persisted_before = stored_count(store)

        second = spawn(collector_cmd, "collector-2.log")
        procs.append(second)
        assert second.wait(timeout=120) == 0, logs()
        assert fleet.wait(timeout=60) == 0, logs()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for handle in handles:
            handle.close()

    assert 0 < persisted_before < EXPECTED, persisted_before
    results = json.loads((out / "results.json").read_text())
    assert results["reports_lost"] == 0 and results["missing_batches"] == {}
    assert results["reports_received"] == EXPECTED
    assert results["devices_complete"] == DEVICES and results["reports_rejected"] == 0

    # every expected report stored exactly once, with the clean run's values
    rows = stored_rows(store)
    keys = [(device, seq) for device, seq, _ in rows]
    assert len(keys) == len(set(keys)) == EXPECTED
    assert set(keys) == {(f"d{i:04d}", seq) for i in range(DEVICES) for seq in range(BATCHES)}
    assert rows == stored_rows(clean / "collector.sqlite")

    # the final estimates are the clean run's: nothing replayed was counted as data
    clean_estimates = {d: r["mean_estimate"] for d, r in reference["per_device"].items()}
    assert len(clean_estimates) == DEVICES
    assert results["mean_estimates"] == clean_estimates
