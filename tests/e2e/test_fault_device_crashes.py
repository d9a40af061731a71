"""Fault test (issue 8, item 2c): 20 % of the devices crash mid-stream; most come back.

A crashing device loses everything in RAM (session, timers, machine) right after it saved
the step it crashes at and before it published it. A returning device restores its
machine from its storage after ``down_seconds`` and goes on; one that never returns leaves
its batches missing. The run must complete every returning device's data exactly as in a
clean run (same stored values, same ledger: nothing privatised or charged twice), and
report the never-returning devices' batches missing — exactly those, nothing dropped
silently. On the in-memory broker and on Mosquitto.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from ldpfleet.collector.store import ReportStore
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import MOSQUITTO, ROOT, broker_for, shared_name

pytestmark = pytest.mark.faults

DEVICES = 20
BATCHES = 40  # 200 steps / 5
FAULTY = (
    (ROOT / "scenarios" / "faults.toml")
    .read_text()
    .replace("devices = 50", f"devices = {DEVICES}")
    .replace("never_return = 2 ", "never_return = 1 ")
    .replace("hostile_messages = 2000", "hostile_messages = 0")
)
CLEAN = FAULTY.split("[faults]")[0]


def store_rows(out) -> dict[str, dict[int, bytes]]:
    store = ReportStore(out / "collector.sqlite")
    try:
        rows: dict[str, dict[int, bytes]] = {}
        for device, seq, values in store._db.execute("SELECT device, seq, vals FROM reports"):
            rows.setdefault(device, {})[seq] = values
        return rows
    finally:
        store.close()


def ledgers(out) -> dict[str, dict]:
    return json.loads((out / "ledger.json").read_text())["devices"]


@pytest.fixture(params=["memory", MOSQUITTO])
def broker(request):
    return broker_for(request)


async def test_crashed_devices_complete_their_data_or_are_reported_missing(broker, tmp_path):
    assert "crash_fraction = 0.2" in FAULTY and "never_return = 1 " in FAULTY
    clean = await run_scenario(
        parse_scenario(CLEAN), broker="memory", out_dir=tmp_path / "clean", run_id="c1"
    )
    assert clean["reports_lost"] == 0 and clean["faults"] is None
    results = await run_scenario(
        parse_scenario(FAULTY),
        broker=broker,
        out_dir=tmp_path / "faulty",
        run_id=shared_name(broker, "c1"),
    )
    crashes = results["faults"]["injected"]["crashes"]
    returned = sorted(d for d, c in crashes.items() if c["returned"])
    gone = sorted(d for d, c in crashes.items() if not c["returned"])
    assert len(crashes) == DEVICES // 5 and len(gone) == 1 and len(returned) == 3
    assert results["faults"]["injected"]["planned_crashes"] == len(crashes)

    faulty_rows, clean_rows = store_rows(tmp_path / "faulty"), store_rows(tmp_path / "clean")
    # every device but the one gone delivered everything, byte for byte the clean values
    for device in clean_rows:
        if device not in gone:
            assert faulty_rows[device] == clean_rows[device], device
    # the one gone: what arrived is the clean prefix; the rest is reported missing, exactly
    (lost,) = gone
    received = faulty_rows.get(lost, {})
    assert all(clean_rows[lost][seq] == values for seq, values in received.items())
    assert results["missing_batches"] == {lost: sorted(set(range(BATCHES)) - set(received))}
    assert results["reports_lost"] == BATCHES - len(received) > 0
    assert results["reports_received"] == DEVICES * BATCHES - results["reports_lost"]
    outcome = results["faults"]["outcome"]
    assert outcome["returned"] == outcome["returned_complete"] == 3
    assert outcome["never_returned"] == {lost: results["reports_lost"]}
    assert outcome["other_missing_batches"] == 0
    assert results["devices_complete"] == DEVICES - 1
    assert results["fleet"]["unfinished_devices"].keys() == {lost}
    assert "never came back" in results["fleet"]["unfinished_devices"][lost]
    # no budget spent twice: the returned devices' ledgers are the clean run's
    clean_ledgers, faulty_ledgers = ledgers(tmp_path / "clean"), ledgers(tmp_path / "faulty")
    for device in returned:
        assert faulty_ledgers[device] == clean_ledgers[device], device
    # and the estimates of every complete device are the clean ones
    for device in returned:
        assert np.isclose(
            results["per_device"][device]["mean_estimate"],
            clean["per_device"][device]["mean_estimate"],
            rtol=0,
            atol=0,
        )


def test_the_faults_scenario_shows_injected_faults_and_the_recovery(tmp_path):
    """``ldpfleet run scenarios/faults.toml``: results.json says what was injected and
    how the run recovered, with counts that add up."""
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(
        app, ["run", str(ROOT / "scenarios" / "faults.toml"), "--broker", "memory",
              "--out", str(tmp_path)],
    )  # fmt: skip
    assert "faults: crashes" in result.output and "hostile client" in result.output
    results = json.loads((tmp_path / "results.json").read_text())
    injected, outcome = results["faults"]["injected"], results["faults"]["outcome"]
    assert len(injected["crashes"]) == 10 and outcome["returned"] == 8
    assert outcome["returned_complete"] == 8 and len(outcome["never_returned"]) == 2
    # the only missing data is the never-returned devices', and it is all reported
    assert results["missing_batches"].keys() == outcome["never_returned"].keys()
    assert sum(outcome["never_returned"].values()) == results["reports_lost"] > 0
    assert outcome["other_missing_batches"] == 0
    # every hostile message was rejected under its reason (identical replays: duplicates)
    hostile = injected["hostile"]
    assert hostile["handled_before_close"] and hostile["messages"] >= 2000
    assert results["rejections_by_reason"] == hostile["by_reason"]
    assert results["reports_rejected"] == sum(hostile["by_reason"].values())
    # data is missing (the devices that never came back): the CLI says so and exits 1
    assert result.exit_code == 1, result.output
    assert "reports lost from 2 device(s)" in " ".join(result.output.split())
