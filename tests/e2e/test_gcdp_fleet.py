"""Tiers 2 and 3: the GC-DP fleet path end to end (scenarios/occupancy-release.toml) on the
in-memory transport, the embedded amqtt broker and Mosquitto; bad raw reports refused."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from ldpfleet.broker.trace import TraceFilter, open_readonly, rows
from ldpfleet.collector.gcdp import gc_dp
from ldpfleet.collector.gcdp_stage import release_rng
from ldpfleet.collector.store import ReportStore
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.messages import GcdpRelease, Hello, SwReport
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import load_scenario

from tests.conftest import ROOT

SCENARIO = ROOT / "scenarios" / "occupancy-release.toml"
WINDOW, WINDOWS, DEVICES, STEPS = 30, 60, 20, 1800


def releases(out) -> list[GcdpRelease]:
    db = open_readonly(out)
    return [codec.decode(r.payload) for r in rows(db, TraceFilter(kind="gcdp_release"))]


def check_release_run(results: dict, out, seed: int) -> list[GcdpRelease]:
    """Every window released once, in order; the ledgers; release = gc_dp run directly."""
    assert results["reports_lost"] == 0 and results["devices_complete"] == DEVICES
    gcdp = results["gcdp"]
    assert gcdp["windows_released"] == gcdp["windows_expected"] == WINDOWS
    assert gcdp["windows_unreleased"] == [] and gcdp["eps_cal"] == 0.0
    published = releases(out)
    assert all(isinstance(m, GcdpRelease) for m in published)
    assert [m.window for m in published] == list(range(WINDOWS))  # once each, in order
    # the collector's ledger: eps_rel charged once per window; per-record loss eps_rel
    ledger = json.loads((out / "ledger.json").read_text())
    account = ledger["collector"]["accounts"]["gcdp_release"]
    assert account["charges"] == WINDOWS and account["window_spent"] == [1.0] * WINDOWS
    assert ledger["collector"]["per_record_loss"] == 1.0
    # the devices spent nothing and their reports say so
    for entry in ledger["devices"].values():
        assert entry["accounts"]["stream"]["kind"] == "raw"
        assert entry["accounts"]["stream"]["spent"] == 0.0
    db = open_readonly(out)
    reports = [codec.decode(r.payload) for r in rows(db, TraceFilter(kind="sw_report"))]
    assert reports and all(isinstance(r, SwReport) for r in reports)
    assert all(r.mechanism == "raw" and r.eps0 == 0.0 for r in reports)
    hellos = [codec.decode(r.payload) for r in rows(db, TraceFilter(kind="hello"))]
    assert all(isinstance(h, Hello) and h.mechanism == "raw" and h.eps0 == 0.0 for h in hellos)
    # the release equals collector.gcdp run directly on the stored window means
    store = ReportStore(out / "collector.sqlite")
    try:
        stored = store.device_values()
    finally:
        store.close()
    nodes = published[0].nodes
    means = np.array([[stored[d][k * WINDOW : (k + 1) * WINDOW].mean() for d in nodes]
                      for k in range(WINDOWS)])  # fmt: skip
    rng = release_rng(seed)
    for k, message in enumerate(published):
        direct = gc_dp(means[k], bounds=gcdp["bounds"], scales=gcdp["scales"],
                       utility=gcdp["utility"], exposure_norm=gcdp["exposure_norm"],
                       eps_rel=gcdp["eps_rel"], low=0.0, high=1.0, rng=rng)  # fmt: skip
        np.testing.assert_array_equal(np.array(message.values), direct)
        assert message.budgets == gcdp["budgets"] and message.t0 == k * WINDOW
    # the simulator's truth agrees with what the collector stored (raw = clipped readings)
    truth = np.array(gcdp["true_means"][str(WINDOWS - 1)])
    np.testing.assert_allclose(truth, means[-1], rtol=0, atol=1e-12)
    assert gcdp["accuracy"]["mae"] > 0 and results["gcdp"] is not None
    return published


async def test_occupancy_release_in_memory(tmp_path):
    scenario = load_scenario(SCENARIO)
    results = await run_scenario(scenario, broker="memory", out_dir=tmp_path, run_id="g1")
    check_release_run(results, tmp_path, seed=6)
    assert results["stream"]["mechanism"] == "raw" and results["stream"]["eps0"] == 0.0
    assert results["stages"]["gcdp"]["status"] == "complete"


@pytest.mark.embedded
async def test_occupancy_release_on_embedded_broker(tmp_path):
    scenario = load_scenario(SCENARIO)
    memory = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "m", seed=3)
    embedded = await run_scenario(scenario, broker="embedded", out_dir=tmp_path / "e", seed=3)
    assert embedded["broker"]["kind"] == "embedded"
    published = check_release_run(embedded, tmp_path / "e", seed=3)
    assert [m.values for m in published] == [m.values for m in releases(tmp_path / "m")]
    assert memory["gcdp"]["released"] == embedded["gcdp"]["released"]


@pytest.mark.mosquitto
async def test_occupancy_release_on_mosquitto(mosquitto_url, tmp_path):
    scenario = load_scenario(SCENARIO)
    memory = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "m", seed=4)
    mosquitto = await run_scenario(scenario, broker=mosquitto_url, out_dir=tmp_path / "q", seed=4)
    assert mosquitto["broker"]["kind"] == "mqtt"
    published = check_release_run(mosquitto, tmp_path / "q", seed=4)
    assert [m.values for m in published] == [m.values for m in releases(tmp_path / "m")]
    assert memory["gcdp"]["accuracy"] == mosquitto["gcdp"]["accuracy"]


def bad_raw_reports(run: str) -> list[tuple[str, bytes, str]]:
    """(topic, payload, field the collector must name): out of range, negative, overflow to
    infinity, NaN (not JSON), a raw report claiming a budget, an LDP mechanism."""

    def report(**changes) -> bytes:
        body = {"type": "sw_report", "v": 1, "run": run, "sender": "d0000", "seq": 0, "t0": 0,
                "mechanism": "raw", "eps0": 0.0, "w": WINDOW, "values": [0.5] * WINDOW}  # fmt: skip
        body.update(changes)
        return json.dumps(body).encode()

    up = topics.up(run, "d0000", "sw_report")
    return [
        (up, report(values=[0.5] * 3 + [1.5] + [0.5] * 26), "values[3]"),
        (up, report(values=[-0.01] + [0.5] * 29), "values[0]"),
        (up, report().replace(b"[0.5, 0.5", b"[1e999, 0.5", 1), "values[0]"),
        (up, report().replace(b"[0.5, 0.5", b"[NaN, 0.5", 1), "payload"),
        (up, report(eps0=0.1), "eps0"),
        (up, report(mechanism="sw", eps0=0.1), "mechanism"),
    ]


async def test_bad_raw_reports_are_refused_counted_and_never_released(tmp_path):
    scenario = load_scenario(SCENARIO)
    clean = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "clean", run_id="b1")
    sent: list[str] = []

    async def hostile(transport, run, collector):
        while collector.machine is None or not collector.machine.devices["d0000"].hello:
            await asyncio.sleep(0.001)
        async with transport.connect(f"{run}-attacker") as conn:
            for topic, payload, field in bad_raw_reports(run):
                await conn.publish(topic, payload)
                sent.append(field)

    attacked = await run_scenario(
        scenario, broker="memory", out_dir=tmp_path / "bad", run_id="b1", side_task=hostile
    )
    assert attacked["reports_rejected"] == len(sent) == 6
    expected: dict[str, int] = {}
    for field in sent:
        expected[field] = expected.get(field, 0) + 1
    assert attacked["rejections_by_field"] == expected
    # nothing reached the release: identical windows and values to the clean run
    assert attacked["gcdp"]["windows_released"] == WINDOWS
    assert attacked["gcdp"]["released"] == clean["gcdp"]["released"]
