"""The ``[secure_sum]`` stage opens under one rule in one process and split across processes.

Before (review of helper C, 2026-12-06): ``ldpfleet run --broker memory``
(``scenarios.runner``) ran no SecAgg agent for a device that crashed for good in the stream
stage, while the split run (``--broker embedded``: the collector side as a process of its
own, ``scenarios.sides``) started an agent for every device of each shard — so with
scenarios/faults.toml (2 devices never return) the one-process run summed 48 survivors and
the split run 50, the two gone devices' inputs included. Now both open the stage through
``protocol.stage_opening`` and pick the devices through ``scenarios.secure_sum_stage``: the
same survivors, the same dropped devices, the same exact total.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import ROOT

CLI = [sys.executable, "-m", "ldpfleet.app.cli"]
SAFETY = 300  # seconds: a hang fails the test instead of blocking the suite
# The two never-returning devices are absent: each path waits out the join deadline and
# the advertise stage's (stage_timeout each); 10 s keeps a starved machine's live devices
# in (a join or a reply moves the deadline on, up to 4 x stage_timeout). The split
# collector closes its stream stage when the fleet shard says its devices are done
# (protocol.fleet_done), as the one-process runner does when its fleet task ends, so the
# default [collector] stage_timeout (600 s) is never waited for
# (tests/e2e/test_B_split_fleet_done.py).
SCENARIO = (ROOT / "scenarios" / "faults.toml").read_text().replace(
    "hostile_messages = 2000\n", ""
) + "\n[secure_sum]\ndim = 8\nstage_timeout = 10.0\n"
KEYS = ("devices", "aborted", "exact", "dropped_devices", "survivors", "total", "max_abs_error")


@pytest.mark.slow
@pytest.mark.embedded
@pytest.mark.faults
def test_one_process_and_split_runs_sum_the_same_devices(tmp_path):
    path = tmp_path / "faults-sum.toml"
    split = run_split_cli(SCENARIO, path)
    one = asyncio.run(
        run_scenario(parse_scenario(SCENARIO, path), broker="memory", out_dir=tmp_path / "one")
    )
    gone = sorted(one["faults"]["outcome"]["never_returned"])
    assert len(gone) == 2
    assert one["secure_sum"]["dropped_devices"] == gone
    assert one["secure_sum"]["survivors"] == 48 and one["secure_sum"]["exact"] is True
    for key in KEYS:
        assert split["secure_sum"][key] == one["secure_sum"][key], key


def run_split_cli(text: str, path, *, timeout: float = SAFETY) -> dict:
    """``ldpfleet run`` of the scenario ``text`` (written to ``path``) on the embedded
    broker, split: the collector side a process of its own. Its results.json, once the run
    exited 0 or 1 (1: the stream stage is incomplete, the gone devices' batches missing)
    without a traceback and did run split; ``timeout``: the subprocess's hang guard."""
    path.write_text(text)
    out = path.parent / "split"
    done = subprocess.run(
        [*CLI, "run", str(path), "--broker", "embedded", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=path.parent,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    split = json.loads((out / "results.json").read_text())
    assert "side_processes" in split  # it did run split
    return split
