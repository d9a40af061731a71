"""A bulk run's collector process killed with SIGKILL (helper C; last session's user).

Old: the runner waited for the gateways' whole ``stage_timeout`` (600 s) with nobody
storing their reports, then died on a FileNotFoundError traceback for the collector's
summary.json. Now it notices the collector's end, stops every other process of the run
(and what is left of the killed collector's session: its reconstruction pool's workers)
and raises ``BulkRunFailed`` naming the collector, its pid and its exit code.

The run is a child process (``RUNNER`` below: ``run_bulk_scenario`` on the embedded
broker, printing the sentence) so that the test can kill one of its collectors. Events
only: the kill comes once the collector stored rows (or opened its reconstructions file);
the ``stage_timeout`` of 600 s is what the old code waited for, the hang guard bounds a
hung run and is never the thing tested.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.test_bulk_parity_ctrl_c import RECONSTRUCTING, SLOW_BULK, _processes_naming

HANG_GUARD = 240.0  # seconds; far below the 600-s stage_timeout the old code waited for

RUNNER = """
import asyncio, sys
from ldpfleet.scenarios.bulk_run import BulkRunFailed, run_bulk_scenario
from ldpfleet.scenarios.schema import load_scenario
try:
    asyncio.run(run_bulk_scenario(load_scenario(sys.argv[1]), broker="embedded",
                                  out_dir=sys.argv[2]))
except BulkRunFailed as failed:
    print("failed:", failed.sentence, flush=True)
    raise SystemExit(1)
"""


def _collector_pid(out: Path, partition: int) -> int | None:
    """The pid of the run's collector process of ``partition`` (its command line names
    the partition's folder, and it leads its process group), or None."""
    folder = str(out / f"p{partition}")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            leader = os.getpgid(int(entry.name)) == int(entry.name)
        except OSError:  # it ended meanwhile
            continue
        text = [w.decode(errors="replace") for w in words]
        # the collector leads its session; its pool's workers share its command line
        if "collector" in text and folder in text and leader:
            return int(entry.name)
    return None


def _wait_for(path: Path, process: subprocess.Popen, *, rows: bool) -> None:
    """Until ``path`` exists (with ``rows``: holds rows): an event, polled."""
    guard = time.monotonic() + HANG_GUARD
    while not (path.exists() and (not rows or path.stat().st_size > 0)):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < guard, f"hang guard: no {path}"
        time.sleep(0.02)


# when the collector of partition 0 is killed: while its partition streams (paced
# gateways: the stream would last 1,000 s), or while its process pool reconstructs after
# the stage (the pool's workers must not outlive it)
MOMENTS = {
    "streaming": (SLOW_BULK, "p0/reports.bin", True),
    "reconstructing": (RECONSTRUCTING, "p0/reconstructions.npz", False),
}


@pytest.mark.slow
@pytest.mark.parametrize("moment", sorted(MOMENTS))
def test_a_killed_bulk_collector_ends_the_run_at_once_naming_it(tmp_path, moment):
    text, name, rows = MOMENTS[moment]
    scenario = tmp_path / "bulk.toml"
    scenario.write_text(text.replace("[collector]\n", "[collector]\nstage_timeout = 600\n"))
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(scenario), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait_for(out / name, process, rows=rows)
        pid = _collector_pid(out, 0)
        assert pid is not None, "no collector process of partition 0"
        os.kill(pid, signal.SIGKILL)
        # within the hang guard, far below the 600-s stage_timeout the old code waited for
        output, _ = process.communicate(timeout=HANG_GUARD)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    said = output.decode()
    assert process.returncode == 1, said
    assert "Traceback" not in said and "never retrieved" not in said, said
    lines = [line for line in said.splitlines() if line.strip()]
    assert len(lines) == 1, said
    partition = "partition 0" if "partitions = 2" in text else "the run"
    assert lines[0].startswith(f"failed: the bulk collector process of {partition} (pid {pid})")
    assert lines[0].endswith("ended with exit code -9 (SIGKILL)"), lines[0]
    assert not (out / "results.json").exists()
    assert _processes_naming(str(out)) == []  # no collector, gateway or pool worker left
