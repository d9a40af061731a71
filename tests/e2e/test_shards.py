"""``[fleet] shards``: the devices as k processes give the same run as one process."""

from __future__ import annotations

import json

import pytest
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import MOSQUITTO, broker_for, shared_name
from tests.e2e.test_fault_device_crashes import store_rows

SHARDED = """
[scenario]
name = "sharded"
seed = 3
[fleet]
devices = 12
shards = 3
[stream]
steps = 40
batch_steps = 5
eps = 1.0
w = 5
[source]
kind = "synthetic"
shape = "sine"
period = 10
bounds = [-1.0, 1.0]
"""


@pytest.fixture(params=[MOSQUITTO, "embedded"])
def broker(request):
    # "embedded" runs with the run's credentials: the shards log in from a 0600 file
    return broker_for(request)


async def test_a_sharded_run_equals_the_one_process_run(broker, tmp_path):
    scenario = parse_scenario(SHARDED)
    single = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "one", run_id="s1")
    assert single["stages"]["fleet_build"]["shards"] == 1  # memory: always in-process
    sharded = await run_scenario(
        scenario, broker=broker, out_dir=tmp_path / "many", run_id=shared_name(broker, "s1")
    )
    assert sharded["stages"]["fleet_build"]["shards"] == 3
    assert sharded["reports_lost"] == 0 and sharded["devices_complete"] == 12
    assert sharded["per_device"] == single["per_device"]
    assert store_rows(tmp_path / "many") == store_rows(tmp_path / "one")
    # every shard ran its slice (device i in shard i % 3) and wrote its outcomes
    for index in range(3):
        outcomes = json.loads(
            (tmp_path / "many" / "shards" / f"fleet-{index}-of-3" / "outcomes.json").read_text()
        )
        assert [o["device"] for o in outcomes["devices"]] == [
            f"d{i:04d}" for i in range(index, 12, 3)
        ]
    ledger = json.loads((tmp_path / "many" / "ledger.json").read_text())
    assert (
        ledger["devices"] == json.loads((tmp_path / "one" / "ledger.json").read_text())["devices"]
    )
    if broker == "embedded":
        assert sharded["broker"]["auth"] is True
        assert not list((tmp_path / "many").rglob("credentials.json"))  # secrets not left
