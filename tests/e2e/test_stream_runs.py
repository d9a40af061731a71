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


# The high-rate attack: paced devices (the stage stays open while thousands of hostile
# messages arrive) and a long retransmission delay (no honest duplicate muddles the counts).
HOSTILE = SMALL.replace("step_seconds = 0.005", "step_seconds = 0.04\nretransmit_after = 120")


def flood(run: str, genuine: bytes) -> tuple[list[tuple[str, bytes]], dict[str, int], int]:
    """Thousands of hostile messages, built around ``genuine`` (d0000's real batch 0, which
    the collector has received): (topic, payload) in a fixed shuffled order, the exact
    ``rejections_by_reason`` they must produce, and how many are identical replays (counted
    as duplicates, not rejections: they cannot be told from an honest retransmission)."""
    rng = np.random.default_rng(8)
    config = parse_scenario(HOSTILE).stream_config(run)
    report = json.loads(genuine)
    up = topics.up(run, "d0000", "sw_report")

    def variant(**changes) -> bytes:
        return json.dumps({**report, **changes}).encode()

    values = report["values"]
    bad_values = [*values[:-1], 99.0]
    changed = [values[1], values[0], *values[2:]] if values[0] != values[1] else None
    if changed is None:  # equal first two values: change one within the output domain
        changed = [SquareWave(config.eps0, "sw").output_low, *values[1:]]
    plan = {
        # reason: (count, payload maker, topic)
        "undecodable": (1000, lambda: b"\xff" + bytes(rng.integers(128, 256, 40).tolist()), up),
        "oversize": (5, lambda: b"{" + b" " * codec.MAX_PAYLOAD + b"}", up),
        "non_finite": (1000, None, up),  # NaN literals and numbers overflowing to infinity
        "replay": (200, lambda: variant(values=changed), up),  # same batch, other values
        "wrong_sender": (500, lambda: variant(sender="d0001"), up),
        "out_of_range": (600, None, up),  # values outside the SW domain, seq or t0 wrong
        "parameter_mismatch": (200, lambda: variant(eps0=config.eps0 * 2), up),
        "unknown_sender": (
            200,
            lambda: variant(sender="intruder"),
            topics.up(run, "intruder", "sw_report"),
        ),
        "schema": (100, lambda: variant(type="teleport"), up),
    }
    text = genuine.decode()
    first = json.dumps(values[0])
    messages: list[tuple[str, bytes]] = []
    for reason, (count, make, topic) in plan.items():
        for i in range(count):
            if reason == "non_finite":
                token = "NaN" if i % 2 else "1e999"
                payload = text.replace(f"[{first}", f"[{token}", 1).encode()
            elif reason == "out_of_range":
                payload = [variant(values=bad_values), variant(seq=999), variant(t0=1)][i % 3]
            else:
                payload = make()
            messages.append((topic, payload))
    replays = 500
    messages += [(up, genuine)] * replays
    order = rng.permutation(len(messages))
    expected = {reason: count for reason, (count, _, _) in plan.items()}
    return [messages[i] for i in order], expected, replays


@pytest.mark.parametrize("broker", ["memory", "embedded"])
async def test_hostile_input_is_rejected_counted_traced_and_never_aggregated(broker, tmp_path):
    """A hostile client floods the collector (garbage, oversize, NaN/inf, replays, another
    device's id, out-of-range fields, the wrong ε, unknown devices, unknown types — at a high
    rate, no sleeps): the run completes with results identical to the same seed's clean run,
    and every rejection is counted by reason in results.json, exactly."""
    scenario = parse_scenario(HOSTILE)
    clean = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "clean", run_id="h1")
    assert clean["reports_rejected"] == 0 and clean["rejections_by_reason"] == {}
    expected: dict[str, int] = {}
    sent = {"replays": 0, "messages": 0, "handled": False}

    async def hostile(transport, run, collector):
        asyncio = __import__("asyncio")
        async with transport.connect(f"{run}-attacker") as conn:
            await conn.subscribe(topics.up(run, "d0000", "sw_report"))
            deliveries = conn.messages()
            genuine = (await anext(deliveries)).payload  # d0000's batch 0, as published
            while collector.machine is None or 0 not in collector.machine.devices["d0000"].received:
                await asyncio.sleep(0.001)  # the collector has it: a changed copy is a replay
            messages, counts, replays = flood(run, genuine)
            expected.update(counts)
            sent.update(replays=replays, messages=len(messages))
            for start in range(0, len(messages), 250):
                await conn.publish_many(messages[start : start + 250])
            total = sum(counts.values())
            machine = collector.machine
            while machine.state == "open":  # until the collector has handled the whole flood
                if machine.rejected >= total and machine.duplicates >= replays:
                    sent["handled"] = True
                    break
                await asyncio.sleep(0.001)

    attacked = await run_scenario(
        scenario, broker=broker, out_dir=tmp_path / "attacked", run_id="h1", side_task=hostile
    )
    assert sent["handled"], "the stage closed before the flood was handled: pace the devices"
    assert sent["messages"] > 4000
    assert attacked["reports_lost"] == 0
    assert attacked["devices_complete"] == 4
    # every rejection counted, by reason, exactly
    assert attacked["rejections_by_reason"] == expected
    assert attacked["reports_rejected"] == sum(expected.values())
    assert attacked["reports_duplicate"] == clean["reports_duplicate"] + sent["replays"]
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
    rejects = [codec.decode(row.payload) for row in rows(db, TraceFilter(kind="reject"))]
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
