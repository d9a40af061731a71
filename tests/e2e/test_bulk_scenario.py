"""``[fleet] connection = "bulk"`` (issue 23): a scenario file runs through
``scenarios.bulk_run`` from ``ldpfleet run``, and what bulk gateways cannot do is refused
on load naming the key, the limit and the value."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ldpfleet.app.cli import app
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario
from typer.testing import CliRunner

BULK = """
[scenario]
name = "bulk-small"
seed = 4
[fleet]
devices = 150
connection = "bulk"
gateway_devices = 60
shards = 2
[stream]
steps = 30
eps = 2.0
w = 3
batch_steps = 3
reconstruct = "cpr"
retransmit_after = 30
[source]
kind = "synthetic"
shape = "sine"
period = [6, 10]
amplitude = 1.0
noise = 0.1
bounds = [-1.5, 1.5]
[collector]
trace = "none"
partitions = 2
"""


def run_cli(scenario_text: str, broker: str, tmp_path):
    path = tmp_path / "bulk.toml"
    path.write_text(scenario_text)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["run", str(path), "--broker", broker, "--out", str(out)], catch_exceptions=False
    )
    return result, out


def check_run(result, out) -> dict:
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["kind"] == "bulk-stream"
    assert results["reports_expected"] == 150 * 10
    assert results["reports_received"] == 150 * 10 and results["reports_lost"] == 0
    assert results["devices_complete"] == 150 and results["missing_batches"] == {}
    assert results["plan"]["gateway_devices"] == 60 and results["plan"]["partitions"] == 2
    assert results["reconstruction"]["method"] == "cpr"
    assert results["reconstruction"]["streams"] == 150
    with np.load(out / "reconstructions.npz") as data:
        assert len([k for k in data.files if "." not in k]) == 150
        assert data["d0000"].shape == (30,)
    return results


def test_a_second_run_into_the_same_directory_starts_the_store_afresh(tmp_path):
    """reports.bin and the traces are started afresh by a new run: the earlier run's rows
    would otherwise be read back (reconstructions, counts) as this run's, and its trace
    rows would break the new chain."""
    traced = BULK.replace('trace = "none"', 'trace = "all"')
    check_run(*run_cli(traced, "memory", tmp_path))
    first = {p: (tmp_path / "out" / f"p{p}" / "reports.bin").stat().st_size for p in (0, 1)}
    # an earlier run with more partitions leaves nothing of its own behind
    more = traced.replace("partitions = 2", "partitions = 3")
    assert run_cli(more, "memory", tmp_path)[0].exit_code == 0
    assert (tmp_path / "out" / "p2").is_dir() and (tmp_path / "out" / "trace-p2.sqlite").exists()
    results = check_run(*run_cli(traced.replace("seed = ", "seed = 1"), "memory", tmp_path))
    assert not (tmp_path / "out" / "p2").exists()
    assert not (tmp_path / "out" / "trace-p2.sqlite").exists()
    verify = CliRunner().invoke(app, ["trace", "verify", str(tmp_path / "out")])
    assert verify.exit_code == 0, verify.output
    for p in (0, 1):
        store = tmp_path / "out" / f"p{p}" / "reports.bin"
        assert store.stat().st_size == first[p]
    assert sum(part["stored_rows"] for part in results["partitions"]) == 150 * 10


def test_a_bulk_scenario_runs_from_ldpfleet_run_on_the_memory_broker(tmp_path):
    check_run(*run_cli(BULK, "memory", tmp_path))


@pytest.mark.slow
def test_a_bulk_scenario_runs_from_ldpfleet_run_on_the_embedded_broker(tmp_path):
    traced = BULK.replace('trace = "none"', 'trace = "control"')
    results = check_run(*run_cli(traced, "embedded", tmp_path))
    assert results["broker"]["kind"] == "embedded"
    assert results["fleet"]["shards_missing"] == 0
    # the collector processes signed their traces over the scenario's digest
    verified = CliRunner().invoke(app, ["trace", "verify", str(tmp_path / "out")])
    assert verified.exit_code == 0, verified.output
    assert "scenario digest" not in verified.output


def edited(old: str, new: str) -> str:
    assert old in BULK
    return BULK.replace(old, new)


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        (edited("w = 3", 'w = 3\nmechanism = "laplace"').replace('reconstruct = "cpr"', ""),
         "stream.mechanism", ["sw or sw01", "'laplace'"]),
        (edited("w = 3", "w = 2000").replace("eps = 2.0", "eps = 40.0"),
         "stream.w", ["at most 1024", "2000"]),
        (edited("batch_steps = 3", "batch_steps = 4"),
         "stream.batch_steps", ["multiple of batch_steps", "(30)", "got 4"]),
        (BULK + "[faults]\nhostile_messages = 5\n", "faults.hostile_messages", ["0", "got 5"]),
        (edited("[stream]", "[stream]\nstep_seconds = 0.1") + "[faults]\ncrash_fraction = 0.1\n",
         "faults.crash_fraction", ["0.0", "got 0.1"]),
        (edited('shape = "sine"', 'shape = "square"'), "source.shape", ["'sine'", "'square'"]),
        (edited("noise = 0.1", "noise = 0.1\njitter = 0.2"), "source.jitter", ["got 0.2"]),
        (edited('connection = "bulk"', 'connection = "bulk"\nstate_dir = "off"'),
         "fleet.state_dir", ["'off'"]),
        (BULK + "[secure_sum]\ndim = 3\n", "secure_sum", ["remove [secure_sum]"]),
    ],
)  # fmt: skip
def test_what_bulk_gateways_cannot_do_is_refused_naming_the_key(text, key, words):
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(text)
    message = str(refused.value)
    assert message.startswith(f"{key}:"), message
    for word in words:
        assert word in message, message


def test_trace_none_is_only_for_bulk():
    text = edited('connection = "bulk"', 'connection = "gateway"').replace(
        'reconstruct = "cpr"', ""
    )
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(text)
    assert str(refused.value).startswith("collector.trace:")
    assert parse_scenario(BULK).bulk


def test_the_bulk_plan_follows_the_scenario():
    from ldpfleet.scenarios.bulk_run import bulk_plan

    loaded = parse_scenario(edited("[stream]", "[stream]\nstep_seconds = 0.5"))
    plan = bulk_plan(loaded, "r1")
    assert (plan.devices, plan.steps, plan.batch_steps, plan.w, plan.eps) == (150, 30, 3, 3, 2.0)
    assert (plan.gateway_devices, plan.partitions, plan.seed) == (60, 2, 4)
    assert plan.period == (6, 10) and plan.step_seconds == 0.5 and plan.reconstruct == "cpr"
    assert plan.retransmit_after == 30 and (plan.lo, plan.hi) == (-1.5, 1.5)


def test_per_device_run_paths_refuse_a_bulk_scenario_in_one_sentence():
    from ldpfleet.scenarios.plans import fleet_config

    with pytest.raises(ScenarioError) as refused:
        fleet_config(parse_scenario(BULK), "r1")
    assert str(refused.value).startswith('fleet.connection: "bulk" runs with `ldpfleet run`')
