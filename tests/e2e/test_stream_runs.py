"""Tier 2 and 3: the quickstart scenario end to end on the in-memory transport, the
embedded amqtt broker and Mosquitto; outputs, determinism across transports, hostile input."""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pytest

from broker.trace import TraceFilter, format_line, open_readonly, rows
from collector.store import ReportStore
from protocol import codec, topics
from protocol.messages import Hello, SwReport
from protocol.sw import SquareWave
from scenarios.runner import run_scenario
from scenarios.schema import load_scenario, parse_scenario

REQUIRED_KEYS = {
    "run",
    "scenario",
    "devices",
    "devices_complete",
    "reports_received",
    "reports_rejected",
    "reports_lost",
    "stages",
    "broker",
}


def stored_values(out) -> dict[str, np.ndarray]:
    store = ReportStore(out / "collector.sqlite")
    try:
        return store.device_values()
    finally:
        store.close()


def check_complete_run(results: dict, out, devices: int, steps: int, batch: int) -> None:
    assert results.keys() >= REQUIRED_KEYS
    assert results["devices"] == devices
    assert results["devices_complete"] == devices
    batches = devices * math.ceil(steps / batch)
    assert results["reports_received"] == batches
    assert results["reports_lost"] == 0
    assert results["reports_rejected"] == 0
    assert results["stages"]["stream"]["status"] == "complete"
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk["reports_received"] == batches
    # the trace holds every report
    db = sqlite3.connect(out / "trace.sqlite")
    (recorded,) = db.execute(
        "SELECT COUNT(DISTINCT sender || ':' || seq) FROM messages WHERE kind='sw_report'"
    ).fetchone()
    db.close()
    assert recorded == batches
    ledger = json.loads((out / "ledger.json").read_text())
    assert len(ledger["devices"]) == devices
    eps = results["stream"]["eps"]
    for entry in ledger["devices"].values():
        account = entry["accounts"]["stream"]
        assert max(account["window_spent"]) <= eps * (1 + 1e-9)
        assert account["charges"] == steps
    assert ledger["within_budget"] is True


async def test_quickstart_in_memory(quickstart_path, tmp_path):
    scenario = load_scenario(quickstart_path)
    results = await run_scenario(scenario, broker="memory", out_dir=tmp_path)
    check_complete_run(results, tmp_path, 50, 200, 5)
    assert results["broker"]["kind"] == "memory"
    # every stored value lies in the SW output domain at eps0 = 2/5
    mechanism = SquareWave(0.4, "sw")
    for values in stored_values(tmp_path).values():
        assert len(values) == 200
        assert mechanism.in_domain(values).all()


@pytest.mark.embedded
async def test_quickstart_on_embedded_broker(quickstart_path, tmp_path):
    scenario = load_scenario(quickstart_path)
    results = await run_scenario(scenario, broker="embedded", out_dir=tmp_path)
    check_complete_run(results, tmp_path, 50, 200, 5)
    assert results["broker"]["kind"] == "embedded"
    assert results["broker"]["url"].startswith("mqtt://127.0.0.1:")
    assert not results["broker"]["url"].endswith(":1883")


@pytest.mark.mosquitto
async def test_quickstart_on_mosquitto_gives_identical_values(
    quickstart_path, mosquitto_url, embedded_url, tmp_path
):
    """Same seed -> identical privatised values on memory, embedded amqtt and Mosquitto."""
    scenario = load_scenario(quickstart_path)
    values = {}
    for name, broker in (
        ("memory", "memory"),
        ("amqtt", embedded_url),
        ("mosquitto", mosquitto_url),
    ):
        out = tmp_path / name
        results = await run_scenario(scenario, broker=broker, out_dir=out, seed=11)
        check_complete_run(results, out, 50, 200, 5)
        values[name] = stored_values(out)
    assert values["memory"].keys() == values["mosquitto"].keys() == values["amqtt"].keys()
    for device in values["memory"]:
        np.testing.assert_array_equal(values["memory"][device], values["amqtt"][device])
        np.testing.assert_array_equal(values["memory"][device], values["mosquitto"][device])
    # and a different seed gives different values (the comparison can fail)
    other = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "other", seed=12)
    assert other["reports_lost"] == 0
    first = next(iter(values["memory"]))
    assert not np.array_equal(values["memory"][first], stored_values(tmp_path / "other")[first])


SMALL = """
[scenario]
name = "hostile"
seed = 5
[fleet]
devices = 4
[stream]
steps = 60
eps = 1.0
w = 4
step_seconds = 0.005     # paced, so the stage is still open when the attacker publishes
[source]
kind = "synthetic"
shape = "square"
period = 10
amplitude = 1.0
bounds = [-1.0, 1.0]
"""


def hostile_messages(run: str) -> list[tuple[str, bytes, str]]:
    """(topic, payload, field the collector must name) for each kind of bad input."""
    config = parse_scenario(SMALL).stream_config(run)

    def report(**changes) -> dict:
        base = {
            "type": "sw_report",
            "v": 1,
            "run": run,
            "sender": "d0000",
            "seq": 0,
            "t0": 0,
            "mechanism": "sw",
            "eps0": config.eps0,
            "w": config.w,
            "values": [0.5, 0.5, 0.5, 0.5],
        }
        base.update(changes)
        return base

    up = topics.up(run, "d0000", "sw_report")
    encode = lambda body: json.dumps(body).encode()  # noqa: E731
    return [
        (up, b'{"type":"sw_report","values":[NaN]', "payload"),
        (up, encode(report(values=[0.5, 0.5, 99.0, 0.5])), "values[2]"),
        (up, encode(report(eps0=config.eps0 * 2)), "eps0"),
        (up, encode(report(sender="d0001")), "sender"),
        (up, encode(report(type="teleport")), "type"),
        (up, b"x" * (codec.MAX_PAYLOAD + 1), "payload"),
        (up, encode(report(values=[0.5, None, 0.5, 0.5])), "values[1]"),
        (topics.up(run, "intruder", "sw_report"), encode(report(sender="intruder")), "sender"),
    ]


@pytest.mark.parametrize("broker", ["memory", "embedded"])
async def test_hostile_input_is_rejected_counted_traced_and_never_aggregated(broker, tmp_path):
    scenario = parse_scenario(SMALL)
    clean = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "clean", run_id="h1")
    sent: list[str] = []

    async def hostile(transport, run, collector):
        # wait until d0000 has said hello, so each message fails on its own field
        while collector.machine is None or not collector.machine.devices["d0000"].hello:
            await __import__("asyncio").sleep(0.001)
        async with transport.connect(f"{run}-attacker") as conn:
            for topic, payload, field in hostile_messages(run):
                await conn.publish(topic, payload)
                sent.append(field)

    attacked = await run_scenario(
        scenario, broker=broker, out_dir=tmp_path / "attacked", run_id="h1", side_task=hostile
    )
    assert attacked["reports_lost"] == 0
    assert attacked["devices_complete"] == 4
    assert attacked["reports_rejected"] == len(sent) == 8
    expected_fields: dict[str, int] = {}
    for field in sent:
        expected_fields[field] = expected_fields.get(field, 0) + 1
    assert attacked["rejections_by_field"] == expected_fields
    # nothing reached analytics: identical estimates and stored values to the clean run
    assert attacked["per_device"] == clean["per_device"]
    for device, values in stored_values(tmp_path / "clean").items():
        np.testing.assert_array_equal(values, stored_values(tmp_path / "attacked")[device])
    # each rejection is visible in the trace with its reason
    db = open_readonly(tmp_path / "attacked")
    lines = [format_line(row) for row in rows(db, TraceFilter(kind="reject"))]
    assert len(lines) == 8
    assert any("values[2]" in line and "outside the sw output domain" in line for line in lines)
    assert any("sender" in line and "does not match topic device" in line for line in lines)
    assert any("exceeds the limit" in line for line in lines)
    invalid = list(rows(db, TraceFilter(kind="invalid")))
    assert len(invalid) >= 2  # the malformed JSON and the oversize blob, recorded as sent


async def test_hello_and_report_messages_state_mechanism_and_eps(tmp_path):
    scenario = parse_scenario(SMALL)
    await run_scenario(scenario, broker="memory", out_dir=tmp_path, run_id="m1")
    db = open_readonly(tmp_path)
    reports = [codec.decode(r.payload) for r in rows(db, TraceFilter(kind="sw_report"))]
    hellos = [codec.decode(r.payload) for r in rows(db, TraceFilter(kind="hello"))]
    assert len(reports) == 4 * 15 and len(hellos) >= 4
    assert all(isinstance(r, SwReport) and r.mechanism == "sw" and r.eps0 == 0.25 for r in reports)
    assert all(isinstance(h, Hello) and h.eps == 1.0 and h.w == 4 for h in hellos)
    seqs = sorted((r.sender, r.seq) for r in reports)
    assert seqs == sorted((f"d000{d}", s) for d in range(4) for s in range(15))
