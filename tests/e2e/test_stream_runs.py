"""Tier 2 and 3: the quickstart scenario end to end on the in-memory transport, the
embedded amqtt broker and Mosquitto; outputs, determinism across transports, hostile input."""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pytest
from ldpfleet.broker.trace import TraceFilter, format_line, open_readonly, rows
from ldpfleet.collector.store import ReportStore
from ldpfleet.devices.hostile import HostileClient
from ldpfleet.protocol import codec
from ldpfleet.protocol.messages import Hello, SwReport
from ldpfleet.protocol.sw import SquareWave
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import load_scenario, parse_scenario

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
    quickstart_path, mosquitto_url, embedded_url, tmp_path, monkeypatch
):
    """Same seed -> identical privatised values on memory, embedded amqtt and Mosquitto,
    with the default MQTT client and with aiomqtt (``LDPFLEET_MQTT_CLIENT``)."""
    scenario = load_scenario(quickstart_path)
    values = {}
    for name, broker, client in (
        ("memory", "memory", "wire"),
        ("amqtt", embedded_url, "wire"),
        ("mosquitto", mosquitto_url, "wire"),
        ("mosquitto-aiomqtt", mosquitto_url, "aiomqtt"),
    ):
        monkeypatch.setenv("LDPFLEET_MQTT_CLIENT", client)
        out = tmp_path / name
        results = await run_scenario(scenario, broker=broker, out_dir=out, seed=11)
        check_complete_run(results, out, 50, 200, 5)
        values[name] = stored_values(out)
    for name in ("amqtt", "mosquitto", "mosquitto-aiomqtt"):
        assert values[name].keys() == values["memory"].keys()
        for device in values["memory"]:
            np.testing.assert_array_equal(values["memory"][device], values[name][device])
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


# The high-rate attack on unpaced devices (they can deliver everything before the flood
# arrives: the attacker's hold keeps the stage open until the collector has handled it, so
# the outcome does not depend on the machine's speed or load), and a long retransmission
# delay (no honest duplicate muddles the counts).
HOSTILE = SMALL.replace("step_seconds = 0.005", "step_seconds = 0.0\nretransmit_after = 120")


@pytest.mark.parametrize("broker", ["memory", "embedded"])
async def test_hostile_input_is_rejected_counted_traced_and_never_aggregated(broker, tmp_path):
    """A hostile client floods the collector (garbage, oversize, NaN/inf, replays, another
    device's id, out-of-range fields, the wrong ε, unknown devices, unknown types — at a high
    rate, no sleeps): the run completes with results identical to the same seed's clean run,
    and every rejection is counted by reason in results.json, exactly."""
    scenario = parse_scenario(HOSTILE)
    clean = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "clean", run_id="h1")
    assert clean["reports_rejected"] == 0 and clean["rejections_by_reason"] == {}

    attacker = HostileClient(scenario.stream_config("h1"))
    attacked = await run_scenario(
        scenario, broker=broker, out_dir=tmp_path / "attacked", run_id="h1", side_task=attacker
    )
    assert attacker.handled, "the stage closed before the flood was handled: pace the devices"
    assert attacker.sent > 4000
    expected = attacker.expected
    assert attacked["reports_lost"] == 0
    assert attacked["devices_complete"] == 4
    # the flood's final rejections of changed copies reach d0000's inbox, whose digests name
    # no message it sent: no device stopped (protocol.stream, "Rejections")
    assert attacked["devices_rejected"] == 0 and attacked["device_rejections"] == {}
    # every rejection counted, by reason, exactly
    assert attacked["rejections_by_reason"] == expected
    assert attacked["reports_rejected"] == sum(expected.values())
    assert attacked["reports_duplicate"] == clean["reports_duplicate"] + attacker.replays
    # nothing reached analytics: identical estimates and stored values to the clean run
    assert attacked["per_device"] == clean["per_device"]
    assert attacked["accuracy"] == clean["accuracy"]
    clean_values = stored_values(tmp_path / "clean")
    attacked_values = stored_values(tmp_path / "attacked")
    assert clean_values.keys() == attacked_values.keys()
    for device, values in clean_values.items():
        np.testing.assert_array_equal(values, attacked_values[device])
    # each rejection is visible in the trace with its reason and reason key
    db = open_readonly(tmp_path / "attacked")
    # the trace is at-least-once (a QoS 1 redelivery to a busy recorder is recorded again,
    # as for reports above): one entry per reject notice, by its seq
    decoded = (codec.decode(row.payload) for row in rows(db, TraceFilter(kind="reject")))
    rejects = list({reject.seq: reject for reject in decoded}.values())
    assert len(rejects) == sum(expected.values())
    by_code: dict[str, int] = {}
    for reject in rejects:
        by_code[reject.code] = by_code.get(reject.code, 0) + 1
    assert by_code == expected
    lines = [format_line(row) for row in rows(db, TraceFilter(kind="reject"))]
    assert any("values[" in line and "outside the sw output domain" in line for line in lines)
    assert any("sender" in line and "does not match topic device" in line for line in lines)
    assert any("exceeds the limit" in line for line in lines)
    assert any("already received with different values" in line for line in lines)


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


@pytest.mark.mosquitto
async def test_a_finished_run_leaves_no_persistent_session_behind(
    quickstart_path, mosquitto_url, tmp_path
):
    """The collector and the recorder use persistent sessions (a broker restart must not
    lose reports); once the run is over they end them, or a long-lived broker would keep
    every run's sessions (and on RabbitMQ a durable queue each) for ever. Checked with
    the CONNACK's session-present flag for both client ids after a run on Mosquitto."""
    from ldpfleet.broker.mqtt_client import open_connection

    from tests.conftest import MOSQUITTO_HOST, MOSQUITTO_PORT

    scenario = load_scenario(quickstart_path)
    run = f"sess{np.random.default_rng().integers(1 << 30):x}"
    results = await run_scenario(scenario, broker=mosquitto_url, out_dir=tmp_path, run_id=run)
    assert results["reports_lost"] == 0 and results["trace_complete"]
    for role in ("collector", "recorder"):
        probe = await open_connection(
            MOSQUITTO_HOST, MOSQUITTO_PORT, f"{run}-{role}", clean_session=False
        )
        kept = probe.session_present
        await probe.close()
        # the probe made a session of its own: end it too
        ended = await open_connection(MOSQUITTO_HOST, MOSQUITTO_PORT, f"{run}-{role}")
        await ended.close()
        assert not kept, f"the {role}'s session outlived the run"
