"""Partitions on a Mosquitto that enforces ``ldpfleet mosquitto-config``'s logins, ACL and
client-id binding (issue 23): the generated files carry the partition levels, and a
partitioned run through them equals the same run on the memory transport."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ldpfleet.broker.auth import Credentials
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from ldpfleet.scenarios.split_run import run_split

from tests.e2e.test_acl_brokers import SMALL, mosquitto

PARTITIONED = SMALL.replace("[fleet]\n", "[collector]\npartitions = 2\n\n[fleet]\n", 1)


@pytest.mark.mosquitto
@pytest.mark.slow
async def test_a_partitioned_run_through_generated_credentials_matches_memory(tmp_path):
    scenario = parse_scenario(PARTITIONED)
    assert scenario.spec.collector.partitions == 2
    creds = Credentials.generate("aclpart-1", scenario.device_ids(), partitions=2)
    async with mosquitto(tmp_path / "mq", creds) as address:
        results = await run_split(
            scenario, broker=address.url, out_dir=tmp_path / "out", run_id="aclpart-1",
            credentials=creds,
        )  # fmt: skip
    memory = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "mem")
    assert results["reports_lost"] == 0 and results["reports_rejected"] == 0
    assert results["devices_complete"] == 12
    assert results["per_device"] == memory["per_device"]


def test_mosquitto_config_writes_the_scenarios_partition_count(tmp_path):
    scenario = tmp_path / "p2.toml"
    scenario.write_text(PARTITIONED)
    done = subprocess.run(
        [sys.executable, "-m", "ldpfleet.app.cli", "mosquitto-config", str(scenario),
         "--out", str(tmp_path / "mq"), "--run", "aclpart-2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    saved = json.loads((tmp_path / "mq" / "credentials.json").read_text())
    assert saved["partitions"] == 2
    assert Credentials.load(tmp_path / "mq" / "credentials.json").partitions == 2
    assert "ldp/aclpart-2/+/dev/%u/up/" in (tmp_path / "mq" / "acl").read_text()


def test_mosquitto_config_writes_bulk_gateway_accounts(tmp_path):
    """--bulk-gateways N: accounts gateway-g0..g{N-1}, each with its own uplink in the ACL."""
    scenario = tmp_path / "p2.toml"
    scenario.write_text(PARTITIONED)
    done = subprocess.run(
        [sys.executable, "-m", "ldpfleet.app.cli", "mosquitto-config", str(scenario),
         "--out", str(tmp_path / "mq"), "--run", "aclbulk-1", "--bulk-gateways", "3"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    credentials = Credentials.load(tmp_path / "mq" / "credentials.json")
    assert credentials.gateways == 3
    acl = (tmp_path / "mq" / "acl").read_text()
    assert "user gateway-g2" in acl and "user gateway-g3" not in acl
    assert "ldp/aclbulk-1/gw/g2/up/#" in acl
    passwords = (tmp_path / "mq" / "passwords").read_text()
    assert "gateway-g0:" in passwords and "gateway-g3:" not in passwords
