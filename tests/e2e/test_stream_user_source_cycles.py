"""``ldpfleet run`` with a 50-row CSV and 1,800 steps (helper G): results.json says the file
is replayed 36 times (``source_cycles``) and the run warns once, on stderr, on every
transport. The memory case covers the one-collector path (scenarios/runner.py
``stream_results``); the embedded and Mosquitto cases the split run (scenarios/sides.py
``merge_stream_outputs``)."""

from __future__ import annotations

import json

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

from tests.conftest import MOSQUITTO, broker_for, shared_name

SCENARIO = """
[scenario]
name = "short-file"
seed = 5
[fleet]
devices = 3
[stream]
steps = 1800
eps = 2.0
w = 30
batch_steps = 300
[source]
kind = "csv"
path = "{path}"
column = "temp"
bounds = [15.0, 30.0]
"""

CYCLES = {"records": 50, "steps": 1800, "cycles": 36.0, "max_replays": 36}


@pytest.fixture(params=["memory", pytest.param("embedded", marks=pytest.mark.slow), MOSQUITTO])
def broker(request) -> str:
    return broker_for(request)


def test_a_short_file_is_replayed_with_one_warning(tmp_path, broker):
    data = tmp_path / "short.csv"
    data.write_text("temp\n" + "".join(f"{20 + k % 9}.25\n" for k in range(50)))
    scenario = tmp_path / "short.toml"
    scenario.write_text(SCENARIO.format(path=data))
    out = tmp_path / "out"
    run = shared_name(broker, "short-file-g")
    args = ["run", str(scenario), "-o", str(out), "-b", broker, "--run", run]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["source_cycles"] == CYCLES
    said = [w for w in results["warnings"] if "replayed 36 times" in w]
    assert len(said) == 1, results["warnings"]
    stderr = result.stderr
    assert stderr.count("replayed 36 times") == 1, stderr
    assert "per simulated reading" in stderr.replace("\n", " ")
