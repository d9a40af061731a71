"""``ldpfleet watch``: the live summary counts what crossed the broker."""

from __future__ import annotations

import asyncio
import json

import pytest
from ldpfleet.app.cli import app
from ldpfleet.app.watch import FleetWatch, watch
from ldpfleet.broker.mqtt import MqttTransport
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from typer.testing import CliRunner

from tests.conftest import shared_name

SMALL = """
[scenario]
name = "watched"
seed = 2
[fleet]
devices = 6
[stream]
steps = 30
batch_steps = 5
eps = 1.0
w = 5
[source]
kind = "synthetic"
shape = "sine"
period = 10
bounds = [-1.0, 1.0]
"""


def test_the_board_counts_by_run_and_kind():
    board = FleetWatch()
    board.observe("ldp/r1/dev/d0001/up/hello", b'{"type":"hello"}', 1.0)
    board.observe("ldp/r1/dev/d0001/up/sw_report", b'{"type":"sw_report","seq":0}', 2.0)
    board.observe("ldp/r1/ctl/stage", b'{"type":"stage","stage":"stream","state":"open"}', 2.5)
    board.observe("ldp/r2/dev/d0009/up/sw_report", b"\xff garbage", 3.0)
    summary = board.summary()
    assert summary["r1"]["devices"] == 1 and summary["r1"]["stage"] == "stream open"
    assert summary["r1"]["messages"] == {"hello": 1, "sw_report": 1, "stage": 1}
    assert summary["r2"]["messages"] == {"invalid": 1}
    assert board.render().row_count == 2


@pytest.mark.mosquitto
async def test_watch_sees_a_whole_run_on_mosquitto(mosquitto_url, tmp_path):
    board = FleetWatch()
    run = shared_name(mosquitto_url, "w1")
    watching = asyncio.ensure_future(
        watch(MqttTransport(mosquitto_url), board, run=run, seconds=60, until_closed=True)
    )
    while not board.subscribed:  # nothing is retained: subscribe before the run starts
        await asyncio.sleep(0.01)
    results = await run_scenario(
        parse_scenario(SMALL), broker=mosquitto_url, out_dir=tmp_path, run_id=run
    )
    await asyncio.wait_for(watching, 30)
    seen = board.summary()[run]
    assert seen["devices"] == 6 and seen["stage"] == "run closed"
    sent = results["reports_received"] + results["reports_duplicate"]
    assert seen["messages"]["sw_report"] == sent
    assert seen["messages"]["hello"] >= 6 and seen["rejected"] == 0


@pytest.mark.mosquitto
def test_watch_command_prints_json_after_its_time(mosquitto_url):
    run = shared_name(mosquitto_url, "nothing-here")
    result = CliRunner().invoke(
        app, ["watch", "--broker", mosquitto_url, "--run", run, "--seconds", "0.5", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1]) == {}
