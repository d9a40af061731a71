"""Fault test (issue 8, item 2b): restart Mosquitto, persistence on, in the middle of a run.

A Mosquitto of the test's own (free port, ``persistence true``) carries a paced
quickstart-style run. Once a quarter of the reports are persisted, the broker is stopped
(SIGTERM: it writes its persistence file) and started again on the same port. The devices,
the collector and the recorder reconnect with backoff; the collector's and the recorder's
persistent sessions (subscriptions and queued QoS 1 messages) come back from the file.
The run must complete with the clean run's results, and every loss on the wire must be
detected and reported: reconnects, messages published again, retransmissions, duplicates
(all in results.json ``delivery``), and any report the trace missed
(``trace.missing_reports``, checked here against the stored reports).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3

import numpy as np
import pytest
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import free_port
from tests.e2e.test_fault_reconnect import BATCHES, DEVICES, PACED, stored
from tests.mosquitto_process import MosquittoProcess

pytestmark = pytest.mark.faults


def persistent_conf(tmp_path, port: int):
    data = tmp_path / "mosquitto-data"
    data.mkdir()
    conf = tmp_path / "mosquitto.conf"
    # Mosquitto started by root drops to 'mosquitto', which cannot traverse pytest's 0700
    # tmp directory to write its persistence file: stay root then
    user = "user root\n" if os.geteuid() == 0 else ""
    conf.write_text(
        f"{user}listener {port} 127.0.0.1\nallow_anonymous true\n"
        f"persistence true\npersistence_location {data}/\nautosave_interval 1\n"
        "max_queued_messages 10000\nlog_dest stderr\nlog_type information\n"
    )
    return conf, data


def traced_reports(out) -> set[tuple[str, int]]:
    with sqlite3.connect(out / "trace.sqlite") as db:
        return set(db.execute("SELECT sender, seq FROM messages WHERE kind = 'sw_report'"))


@pytest.mark.mosquitto
async def test_mosquitto_restart_mid_run_completes_and_reports_every_loss(tmp_path):
    scenario = parse_scenario(PACED)
    clean = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "clean", run_id="r1")
    port = free_port()
    conf, data = persistent_conf(tmp_path, port)
    injected = {}
    async with MosquittoProcess(conf) as mosquitto:

        async def restart_broker(view, run, collector):
            while collector.machine is None or collector.machine.accepted < DEVICES * BATCHES // 4:
                await asyncio.sleep(0.002)
            injected["accepted_before"] = collector.machine.accepted
            await mosquitto.restart()
            injected["restarted"] = True

        results = await run_scenario(
            scenario,
            broker=f"mqtt://127.0.0.1:{port}",
            out_dir=tmp_path / "restart",
            run_id="r1",
            side_task=restart_broker,
        )
    assert injected["restarted"] and mosquitto.starts == 2
    assert injected["accepted_before"] < DEVICES * BATCHES
    assert (data / "mosquitto.db").exists(), "persistence was not on"
    # the run completed: every report stored exactly once, the clean run's results
    assert results["reports_lost"] == 0 and results["missing_batches"] == {}
    assert results["reports_received"] == DEVICES * BATCHES
    assert results["devices_complete"] == DEVICES and results["devices_unfinished"] == 0
    assert results["per_device"] == clean["per_device"]
    clean_values, values = stored(tmp_path / "clean"), stored(tmp_path / "restart")
    assert clean_values.keys() == values.keys()
    for device in values:
        np.testing.assert_array_equal(values[device], clean_values[device])
    # the restart is visible: every session reconnected (the devices still streaming all
    # were), and what it cost is counted
    delivery = results["delivery"]
    assert delivery["collector_reconnects"] == 1 and delivery["recorder_reconnects"] == 1
    assert delivery["devices_reconnected"] == DEVICES
    assert delivery["retransmissions"] + delivery["republished"] > 0
    # the trace's losses are reported exactly
    out = tmp_path / "restart"
    with sqlite3.connect(out / "collector.sqlite") as db:
        stored_keys = set(db.execute("SELECT device, seq FROM reports"))
    assert results["trace"]["missing_reports"] == len(stored_keys - traced_reports(out))
    assert results["trace_complete"] is True
