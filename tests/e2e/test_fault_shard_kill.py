"""Fault tests (issue 21): devices that survive their process (``[fleet] state_dir``).

The collector (``ldpfleet collector``) and two fleet shards (``ldpfleet fleet --shard i/2``)
run as separate processes against Mosquitto. Mid-stream, ``kill -9`` ends shard 1 (and, in
the second test, the collector at the same moment); the same commands are started again.
Every device of the killed shard resumes from its state file: the run ends with 0 lost,
every report stored exactly once with the values of a clean run, the ledgers of a clean run
(nothing privatised or charged twice), and the re-sent batches counted as duplicates.

The kill is triggered by what the collector has committed (rows of shard 1's devices in its
store), never by a sleep.
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

pytestmark = [pytest.mark.faults, pytest.mark.mosquitto]

DEVICES = 20
BATCHES = 40  # 200 steps / batch_steps 5
EXPECTED = DEVICES * BATCHES
SAFETY = 120.0  # seconds: bound on any one wait (a hang fails instead of blocking)

# the quickstart with 20 devices paced at 25 ms a step (about 5 s of streaming), quick
# retransmissions, so the kill lands mid-stream and the recovery does not wait long
SCENARIO = (
    (ROOT / "scenarios" / "quickstart.toml")
    .read_text()
    .replace("devices = 50", f"devices = {DEVICES}")
    .replace("batch_steps = 5 ", "step_seconds = 0.025\nretransmit_after = 1.0\nbatch_steps = 5 ")
)
CLI = [sys.executable, "-m", "ldpfleet.app.cli"]


def stored_rows(path: Path) -> list[tuple[str, int, bytes]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return list(db.execute("SELECT device, seq, vals FROM reports ORDER BY device, seq"))


def shard1_stored(path: Path) -> int:
    """Rows of shard 1's devices (odd indices) committed so far."""
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            devices = [d for (d,) in db.execute("SELECT device FROM reports")]
    except sqlite3.OperationalError:  # created, schema not yet committed
        return 0
    return sum(1 for d in devices if int(d[1:]) % 2 == 1)


class Sides:
    """The collector and the two shards as processes, with their logs."""

    def __init__(self, folder: Path, scenario: Path, broker: str, run: str) -> None:
        self.folder = folder
        self.collector = [*CLI, "collector", str(scenario), "-b", broker, "--run", run]
        self.collector += ["--out", str(folder / "col")]
        self.fleets = [
            [*CLI, "fleet", str(scenario), "-b", broker, "--run", run, "--shard", f"{i}/2",
             "--out", str(folder / f"f{i}")]
            for i in range(2)
        ]  # fmt: skip
        self.procs: list[subprocess.Popen] = []
        self.handles = []

    def spawn(self, command: list[str], log: str) -> subprocess.Popen:
        self.handles.append((self.folder / log).open("wb"))
        proc = subprocess.Popen(
            command, cwd=self.folder, stdout=self.handles[-1], stderr=subprocess.STDOUT
        )
        self.procs.append(proc)
        return proc

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.folder.glob("*.log"))
        )

    def wait_until(self, condition, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + SAFETY
        while not condition():
            assert proc.poll() is None and time.monotonic() < deadline, self.logs()
            time.sleep(0.01)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for handle in self.handles:
            handle.close()


def kill9(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL


@pytest.fixture
def clean(tmp_path) -> tuple[Path, dict, dict]:
    """The scenario file, and a clean in-process run of it (same seed) with its ledger."""
    path = tmp_path / "fault.toml"
    path.write_text(SCENARIO)
    assert "step_seconds = 0.025" in SCENARIO
    out = tmp_path / "clean"
    result = CliRunner().invoke(app, ["run", str(path), "--broker", "memory", "--out", str(out)])
    assert result.exit_code == 0, result.output
    reference = json.loads((out / "results.json").read_text())
    assert reference["reports_received"] == EXPECTED
    return path, reference, json.loads((out / "ledger.json").read_text())


def check_resumed(tmp_path: Path, reference: dict, clean_ledger: dict) -> None:
    results = json.loads((tmp_path / "col" / "results.json").read_text())
    assert results["reports_lost"] == 0 and results["missing_batches"] == {}
    assert results["reports_received"] == EXPECTED and results["reports_rejected"] == 0
    assert results["devices_complete"] == DEVICES
    rows = stored_rows(tmp_path / "col" / "collector.sqlite")
    keys = [(device, seq) for device, seq, _ in rows]
    assert len(keys) == len(set(keys)) == EXPECTED  # each report stored exactly once
    assert rows == stored_rows(tmp_path / "clean" / "collector.sqlite")  # the clean values
    clean_estimates = {d: r["mean_estimate"] for d, r in reference["per_device"].items()}
    assert results["mean_estimates"] == clean_estimates
    # nothing charged twice: every device's ledger is the clean run's
    ledgers = {}
    for i in range(2):
        ledgers |= json.loads((tmp_path / f"f{i}" / "ledger.json").read_text())["devices"]
    assert ledgers == clean_ledger["devices"]
    outcomes = json.loads((tmp_path / "f1" / "outcomes.json").read_text())
    assert all(device["state"] == "done" for device in outcomes["devices"])
    # a clean finish leaves no state file behind
    assert not (tmp_path / "f1" / "device-state.sqlite").exists()


def test_a_shard_killed_mid_stream_resumes_its_devices(mosquitto_url, clean, tmp_path):
    scenario, reference, clean_ledger = clean
    sides = Sides(tmp_path, scenario, mosquitto_url, f"shardkill-{secrets.token_hex(3)}")
    store = tmp_path / "col" / "collector.sqlite"
    try:
        collector = sides.spawn(sides.collector, "collector.log")
        sides.wait_until(
            lambda: "listening on" in (tmp_path / "collector.log").read_text(), collector
        )
        shard0 = sides.spawn(sides.fleets[0], "fleet0.log")
        shard1 = sides.spawn(sides.fleets[1], "fleet1-a.log")
        sides.wait_until(lambda: shard1_stored(store) >= EXPECTED // 8, shard1)
        kill9(shard1)
        killed_at = shard1_stored(store)
        assert killed_at < EXPECTED // 2, f"shard 1 had finished before the kill ({killed_at})"
        assert (tmp_path / "f1" / "device-state.sqlite").exists()
        again = sides.spawn(sides.fleets[1], "fleet1-b.log")
        for proc in (again, shard0, collector):
            assert proc.wait(timeout=SAFETY) == 0, sides.logs()
    finally:
        sides.close()
    assert "resumed" in (tmp_path / "fleet1-b.log").read_text()
    check_resumed(tmp_path, reference, clean_ledger)


def test_the_collector_and_a_shard_killed_at_once_both_resume(mosquitto_url, clean, tmp_path):
    scenario, reference, clean_ledger = clean
    sides = Sides(tmp_path, scenario, mosquitto_url, f"bothkill-{secrets.token_hex(3)}")
    store = tmp_path / "col" / "collector.sqlite"
    try:
        collector = sides.spawn(sides.collector, "collector-a.log")
        log = tmp_path / "collector-a.log"
        sides.wait_until(lambda: "listening on" in log.read_text(), collector)
        shard0 = sides.spawn(sides.fleets[0], "fleet0.log")
        shard1 = sides.spawn(sides.fleets[1], "fleet1-a.log")
        sides.wait_until(lambda: shard1_stored(store) >= EXPECTED // 8, shard1)
        kill9(shard1)
        kill9(collector)
        assert shard1_stored(store) < EXPECTED // 2
        collector = sides.spawn(sides.collector, "collector-b.log")
        again = sides.spawn(sides.fleets[1], "fleet1-b.log")
        for proc in (again, shard0, collector):
            assert proc.wait(timeout=SAFETY) == 0, sides.logs()
    finally:
        sides.close()
    check_resumed(tmp_path, reference, clean_ledger)
