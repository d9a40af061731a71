"""A partition worker whose stage closed before the coordinator listened is still heard.

A worker's stage deadline counts from the worker's own start; with ``[collector]
stage_timeout = 1e-6`` its stage closes at once and it says ``closed`` (its summary) once,
on a topic the broker does not retain. A worker that started before the coordinator
subscribed lost that status, and the coordinator waited for it until ``run_timeout``
("the run did not finish within run_timeout (60.5 s) ... give run_timeout more", 67 s, on
the embedded broker with ``partitions = 2``). Now the worker repeats its ``closed`` status
until the run closes (``PartitionLink.repeat_closed``), as a partition without devices
always did: the run ends at once, incomplete, naming the deadline.

The test gives ``run_timeout = 600`` (a hang guard): without the repeat, the run ends there
with exit 1 and the "run_timeout" sentence, which the assertions refuse. Whether the first
status is lost depends on which process is first, so the old code fails when a worker wins
the race (every run here, 2026-12-05) and the new code passes either way.
"""

from __future__ import annotations

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

SCENARIO = """\
[scenario]
name = "early-close"
seed = 1
run_timeout = 600
[fleet]
devices = 5
[stream]
steps = 20
eps = 2.0
w = 5
[source]
kind = "synthetic"
bounds = [-1.0, 1.0]
period = 12
[collector]
stage_timeout = 1e-6
finish_grace = 0.5
partitions = 2
"""


@pytest.mark.slow  # three processes on the embedded broker: ~5 s
def test_a_stage_closed_before_the_coordinator_listened_ends_the_run(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(scenario), "-o", str(out), "-b", "embedded"])
    assert "run_timeout" not in result.output, result.output
    assert result.exit_code == 1, result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("incomplete: 20 reports lost from 5 device(s)"), result.output
    assert "the stage closed at its deadline, [collector] stage_timeout = 1e-06 s" in last
    assert (out / "results.json").exists()
