"""Fault tests (issue 8, item 2b), tier 2: the in-memory broker "restarts" mid-run.

``MemoryTransport.outage`` breaks every connection and refuses new ones for a moment,
as a broker restart does. Every session (devices, collector, recorder) reconnects with
backoff and goes on; what was published into the outage is published again, lost acks are
repaired by retransmission and deduplication. The run must end exactly like the clean
one. (The same against a real Mosquitto restart: ``test_fault_mosquitto_restart.py``.)
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.store import ReportStore
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

pytestmark = pytest.mark.faults

DEVICES = 10
BATCHES = 20  # 100 steps / 5
PACED = f"""
[scenario]
name = "outage"
seed = 21
[fleet]
devices = {DEVICES}
[stream]
steps = 100
batch_steps = 5
eps = 1.0
w = 10
step_seconds = 0.01      # about 1 s of streaming: the outage lands mid-stream
retransmit_after = 0.5
[source]
kind = "synthetic"
shape = "sine"
period = 20
amplitude = 1.0
bounds = [-1.0, 1.0]
"""


def stored(out) -> dict[str, np.ndarray]:
    store = ReportStore(out / "collector.sqlite")
    try:
        return store.device_values()
    finally:
        store.close()


async def test_broker_outage_mid_stream_every_session_reconnects_nothing_lost(tmp_path):
    scenario = parse_scenario(PACED)
    clean = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "clean", run_id="o1")
    assert clean["reports_lost"] == 0 and clean["delivery"]["device_reconnects"] == 0

    transport = MemoryTransport()
    injected = {}

    async def restart_broker(view, run, collector):
        # a quarter of the reports persisted, then the broker goes away for 0.2 s (the
        # sleep is the fault's duration, not a synchronisation)
        while collector.machine is None or collector.machine.accepted < DEVICES * BATCHES // 4:
            await asyncio.sleep(0.002)
        injected["accepted_before"] = collector.machine.accepted
        with transport.outage():
            injected["severed"] = True
            await asyncio.sleep(0.2)

    results = await run_scenario(
        scenario,
        broker=transport,
        out_dir=tmp_path / "outage",
        run_id="o1",
        side_task=restart_broker,
    )
    assert injected["severed"] and injected["accepted_before"] < DEVICES * BATCHES
    # the run completes: nothing lost, nothing double-counted, results as the clean run's
    assert results["reports_lost"] == 0 and results["missing_batches"] == {}
    assert results["reports_received"] == DEVICES * BATCHES
    assert results["devices_complete"] == DEVICES and results["devices_unfinished"] == 0
    assert results["per_device"] == clean["per_device"]
    clean_values, values = stored(tmp_path / "clean"), stored(tmp_path / "outage")
    assert clean_values.keys() == values.keys()
    for device in values:
        np.testing.assert_array_equal(values[device], clean_values[device])
    # every session came back exactly once, and the losses are reported
    delivery = results["delivery"]
    assert delivery["device_reconnects"] == DEVICES == delivery["devices_reconnected"]
    assert delivery["collector_reconnects"] == 1 and delivery["recorder_reconnects"] == 1
    assert delivery["retransmissions"] + delivery["republished"] > 0
    assert results["trace_complete"] is True
    assert isinstance(results["trace"]["missing_reports"], int)
