"""A run never hangs (docs/reliability.md, "Timeouts"): a lost final message ends the
trace after the finish grace, a silent collector ends the run at its global deadline, and
a device that never hears from the collector gives up instead of retransmitting forever.
No sleeps: small timeouts and drop rules of the in-memory transport, on virtual time
(``tests/virtual_time.py``: each run is wholly in the loop, so its clock moves only when
nothing is left to handle, and a deadline ends exactly what could not finish, however busy
the machine). How long a run took is read on that clock too: it says which deadline ended
the run, the same on any machine."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.devices.agent import DeviceAgent
from ldpfleet.protocol.stream import StreamReporter
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from typer.testing import CliRunner

from tests.virtual_time import VirtualTimeLoop

BASE = """
[scenario]
name = "hang"
seed = 3
{scenario}
[fleet]
devices = 4
[stream]
steps = 20
eps = 2.0
w = 5
retransmit_after = 0.05
[collector]
{collector}
[source]
kind = "synthetic"
bounds = [-1.5, 1.5]
"""


def scenario(scenario_keys: str = "", collector_keys: str = ""):
    return parse_scenario(BASE.format(scenario=scenario_keys, collector=collector_keys))


def is_run_closed(topic: str, payload: bytes) -> bool:
    return "/ctl/" in topic and b'"stage":"run"' in payload and b'"closed"' in payload


def on_virtual_time(coro) -> tuple:
    """(``coro``'s result, the virtual seconds it took) on a ``VirtualTimeLoop``."""

    async def timed():
        result = await coro
        return result, asyncio.get_running_loop().time()

    return VirtualTimeLoop.run(timed())


def test_lost_final_message_ends_the_trace_after_the_finish_grace(tmp_path):
    transport = MemoryTransport(
        drop=lambda topic, payload, to: to.endswith("-recorder") and is_run_closed(topic, payload)
    )
    loaded = scenario(collector_keys="finish_grace = 0.2")
    results, seconds = on_virtual_time(
        run_scenario(loaded, broker=transport, out_dir=tmp_path, run_id="h1")
    )
    assert seconds == pytest.approx(0.2)  # the stream takes no time; then the 0.2 s grace
    assert transport.dropped == 1
    assert results["aborted"] is None
    assert results["reports_lost"] == 0 and results["devices_complete"] == 4
    assert results["trace_complete"] is False
    assert "finish_grace" in results["trace_incomplete_reason"]
    assert results["devices_unfinished"] == 0
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk["trace_complete"] is False and on_disk["trace"]["messages"] > 0


async def test_clean_run_has_a_complete_trace(tmp_path):
    results = await run_scenario(scenario(), broker=MemoryTransport(), out_dir=tmp_path)
    assert results["trace_complete"] is True and results["trace_incomplete_reason"] is None
    assert results["aborted"] is None and results["devices_unfinished"] == 0


def test_silent_collector_ends_the_run_at_the_global_timeout(tmp_path):
    """The collector goes silent mid-stream (as if killed: nothing reaches it, nothing it
    sends arrives) and its stage deadline is far away: run_timeout stops the run, the
    outputs are still written and say why."""
    seen = {"collector": 0}

    def drop(topic: str, payload: bytes, to: str) -> bool:
        if to.endswith("-collector"):
            seen["collector"] += 1
            return seen["collector"] > 6
        return seen["collector"] > 6 and ("/in/" in topic or "/ctl/" in topic)

    transport = MemoryTransport(drop=drop)
    loaded = scenario("run_timeout = 0.5", "stage_timeout = 120")
    results, seconds = on_virtual_time(
        run_scenario(loaded, broker=transport, out_dir=tmp_path, run_id="h2")
    )
    assert seconds == pytest.approx(0.5)  # ended by run_timeout, not the stage deadline
    assert results["aborted"]["reason"] == "run_timeout"
    assert results["aborted"]["run_timeout"] == 0.5
    assert results["stages"]["stream"]["status"] == "aborted"
    # the stage was open (the collector heard 6 messages) until the deadline: its time is
    # not 0 (it was: stage_seconds is set only when the stage closes; report.html showed 0 s)
    assert results["stages"]["stream"]["seconds"] > 0
    assert results["reports_lost"] > 0
    assert results["devices_unfinished"] == 4
    assert results["trace_complete"] is False
    for name in ("results.json", "ledger.json", "trace.sqlite", "collector.sqlite"):
        assert (tmp_path / name).exists(), name
    assert json.loads((tmp_path / "results.json").read_text())["aborted"]["reason"] == (
        "run_timeout"
    )


def test_device_whose_acks_are_all_dropped_ends_unfinished(tmp_path):
    # The three healthy devices must finish before the stage deadline (0.5 s after the
    # collector opens): on the real clock a busy machine could let it pass first. On
    # virtual time (the run is wholly in the loop: in-memory transport, no CPR thread) the
    # clock moves only when nothing is left to handle, so only d0000 is cut off.
    transport = MemoryTransport(drop=lambda topic, payload, to: to == "h3-d0000")
    loaded = scenario(collector_keys="stage_timeout = 0.5\nfinish_grace = 0.2")
    results, seconds = on_virtual_time(
        run_scenario(loaded, broker=transport, out_dir=tmp_path, run_id="h3")
    )
    assert seconds == pytest.approx(0.5 + 0.2)  # the stage deadline, then the grace
    assert results["aborted"] is None
    assert results["devices_unfinished"] == 1
    assert list(results["fleet"]["unfinished_devices"]) == ["d0000"]
    assert results["per_device"]["d0000"]["state"] not in ("done", "closed")
    assert results["devices_complete"] == 3
    assert results["per_device"]["d0001"]["state"] in ("done", "closed")


def test_agent_gives_up_on_a_collector_that_never_answers():
    # the hello is retransmitted every 0.05 s until the 0.3 s silence deadline: on the real
    # clock a starved loop could find both due at once; on virtual time each fires in turn
    loaded = scenario(collector_keys="stage_timeout = 0.3\nfinish_grace = 0.1")
    reporter = StreamReporter(loaded.stream_config("h4"), "d0000", np.random.default_rng(0))
    agent = DeviceAgent(MemoryTransport(), reporter, np.zeros(20), silence_timeout=0.3)
    # returns by itself; wait_for only guards against a hang (virtual seconds)
    _, seconds = on_virtual_time(asyncio.wait_for(agent.run(), 20))
    assert seconds == pytest.approx(0.3)  # the silence deadline
    assert agent.gave_up is not None and "no message from the collector" in agent.gave_up
    assert reporter.state == "hello" and reporter.retransmissions > 0


def test_cli_exits_non_zero_with_one_sentence_on_run_timeout(tmp_path, monkeypatch):
    from ldpfleet.app import cli

    path = tmp_path / "s.toml"
    path.write_text(
        BASE.format(scenario="run_timeout = 0.3", collector="stage_timeout = 120")
        + '[broker]\nurl = "memory"\n'
    )
    # the collector never hears anyone: every device message is dropped
    real = MemoryTransport.__init__

    def lossy_init(self, *args, **kwargs):
        real(self, *args, **kwargs)
        self.drop = lambda topic, payload, to: to.endswith("-collector") and "/up/" in topic

    monkeypatch.setattr(MemoryTransport, "__init__", lossy_init)
    result = CliRunner().invoke(cli.app, ["run", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1, result.output
    assert "aborted:" in result.output and "run_timeout" in result.output
    assert json.loads((tmp_path / "o" / "results.json").read_text())["aborted"]
