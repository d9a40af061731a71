"""The recommended large-fleet Mosquitto configuration starts and carries a run."""

from __future__ import annotations

import asyncio
import os

import pytest
from ldpfleet.broker.mqtt import BrokerAddress, broker_reachable
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import ROOT, free_port, mosquitto_binary

SCENARIO = """
[scenario]
name = "conf"
[fleet]
devices = 20
[stream]
steps = 40
eps = 2.0
w = 4
[source]
kind = "synthetic"
bounds = [-1.5, 1.5]
"""
START_GUARD = 60.0  # seconds


@pytest.mark.mosquitto
async def test_large_fleet_config_runs_a_fleet(tmp_path):
    binary = mosquitto_binary()
    port = free_port()
    text = (ROOT / "docs" / "mosquitto" / "large-fleet.conf").read_text()
    assert "listener 1890 127.0.0.1" in text and "max_queued_messages 100000" in text
    data = tmp_path / "data"
    data.mkdir()
    os.chmod(data, 0o777)  # mosquitto drops root privileges before writing persistence
    config = tmp_path / "large-fleet.conf"
    config.write_text(
        text.replace("listener 1890 127.0.0.1", f"listener {port} 127.0.0.1").replace(
            "persistence_location /var/lib/mosquitto/", f"persistence_location {data}/"
        )
    )
    process = await asyncio.create_subprocess_exec(
        binary, "-c", str(config), stderr=asyncio.subprocess.PIPE
    )
    try:
        address = BrokerAddress("127.0.0.1", port)
        try:
            # a hang guard, generous: a starved machine starts a process slowly (the old
            # bound, 100 probes, could end after 5 s)
            async with asyncio.timeout(START_GUARD):
                while not await broker_reachable(address, timeout=0.5):
                    assert process.returncode is None, "mosquitto exited at its start"
                    await asyncio.sleep(0.05)
        except TimeoutError:
            pytest.fail("mosquitto with docs/mosquitto/large-fleet.conf did not start")
        results = await run_scenario(
            parse_scenario(SCENARIO), broker=address.url, out_dir=tmp_path / "out"
        )
        assert results["devices_complete"] == 20 and results["reports_lost"] == 0
    finally:
        process.terminate()
        await process.wait()
