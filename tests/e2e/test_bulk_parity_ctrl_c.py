"""Ctrl-C on a bulk run over a real broker (``[fleet] connection = "bulk"``: one process
per partition collector and per gateway shard, ``scenarios/bulk_run.py``).

The terminal's SIGINT reaches the whole foreground process group. The bulk runner's
children took it too: each printed its own ``KeyboardInterrupt`` traceback (and
"Task exception was never retrieved"), and the runner never said "interrupted". As a
per-device run (tests/e2e/test_ctrl_c_split_run.py): every child ignores SIGINT, the
runner stops them itself, prints "interrupted" once and exits 130, leaving no process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import sigint_as_in_a_terminal

HANG_GUARD = 120.0  # seconds: never the thing tested, only a bound on a hung run

SLOW_BULK = """
[scenario]
name = "bulk-ctrl-c"
seed = 3
[fleet]
devices = 400
connection = "bulk"
gateway_devices = 100
shards = 2
[stream]
steps = 100000
eps = 2.0
w = 5
batch_steps = 5
step_seconds = 0.01
[source]
kind = "synthetic"
shape = "sine"
period = [6, 10]
amplitude = 1.0
noise = 0.1
bounds = [-1.5, 1.5]
[collector]
partitions = 2
"""


# unpaced, with CPR: the collector's process pool is still reconstructing when Ctrl-C comes
# (its reconstructions.npz is opened as the stage ends; 6,000 streams take seconds of CPU)
RECONSTRUCTING = (
    SLOW_BULK.replace("devices = 400", "devices = 6000")
    .replace("gateway_devices = 100", "gateway_devices = 3000")
    .replace("steps = 100000", "steps = 100")
    .replace("step_seconds = 0.01", 'reconstruct = "cpr"')
    .replace("partitions = 2", "partitions = 1")
)


def _wait_for(path: Path, process: subprocess.Popen, *, rows: bool) -> None:
    """Until ``path`` exists (with ``rows``: holds rows): an event, polled."""
    guard = time.monotonic() + HANG_GUARD
    while not (path.exists() and (not rows or path.stat().st_size > 0)):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < guard, f"hang guard: no {path}"
        time.sleep(0.02)


def _processes_naming(text: str) -> list[str]:
    """Command lines of the running processes that contain ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if text in cmdline:
            found.append(cmdline)
    return found


# when Ctrl-C comes: while the runner starts its children (plan.json is written just before
# the collectors are spawned: a child still importing took the SIGINT as a
# KeyboardInterrupt), or once a partition has stored rows (the stream is running)
MOMENTS = {
    "children_starting": (SLOW_BULK, "plan.json", False),
    "streaming": (SLOW_BULK, "p0/reports.bin", True),
    # the collector stopped by the runner (SIGTERM) left its pool's workers running,
    # orphaned, holding the run's output pipe open
    "reconstructing": (RECONSTRUCTING, "p0/reconstructions.npz", False),
}


@pytest.mark.slow
@pytest.mark.parametrize("moment", sorted(MOMENTS))
def test_ctrl_c_on_a_bulk_run_says_interrupted_and_leaves_no_process(tmp_path, moment):
    scenario = tmp_path / "slow-bulk.toml"
    text, name, rows = MOMENTS[moment]
    scenario.write_text(text)
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "ldpfleet.app.cli", "run", str(scenario), "-b", "embedded",
         "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        preexec_fn=sigint_as_in_a_terminal,  # SIGINT not inherited ignored
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    try:
        _wait_for(out / name, process, rows=rows)
        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=HANG_GUARD)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    text = output.decode()
    assert process.returncode == 130, text
    assert text.count("interrupted") == 1, text
    assert "Traceback" not in text, text
    assert "never retrieved" not in text, text
    with pytest.raises(ProcessLookupError):  # every child of the run has ended
        os.killpg(process.pid, 0)
    assert _processes_naming(str(out)) == []  # the children run in sessions of their own
