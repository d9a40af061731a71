"""A run that fails raises ONE error, never ``ExceptionGroup: unhandled errors in a
TaskGroup`` (helper C, user trials): the recorder, the collector, the fleet, the side tasks
and the secure-sum stage run in one ``asyncio.TaskGroup``, so whatever one of them raised
reached the caller wrapped in a group (only the caller's ``progress`` was unwrapped).
Now ``run_scenario`` raises the error itself, with a note naming the part that raised it
(``scenarios.runner.one_error``): the caller's own exception as it is (a side task), the
transport's typed ``ConnectionLost`` (a broker gone past ``give_up_after``; the CLI's
one sentence and exit 2, as for an unreachable broker), the original exception otherwise.
All on the memory transport; the broker outage on virtual time (tests/virtual_time.py).
"""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.app.cli import app
from ldpfleet.broker.transport import (
    ConnectionLost,
    ConnectionRefused,
    MemoryTransport,
    TransportError,
)
from ldpfleet.collector.service import CollectorService
from ldpfleet.devices.fleet import Fleet
from ldpfleet.scenarios.runner import one_error, run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from typer.testing import CliRunner

from tests.e2e.test_timeouts import on_virtual_time

SCENARIO = """
[scenario]
name = "one-error"
seed = 3
[fleet]
devices = 4
[stream]
steps = 40
eps = 2.0
w = 5
batch_steps = 5
step_seconds = 0.01
[collector]
stage_timeout = 30
[source]
kind = "synthetic"
bounds = [-1.5, 1.5]
"""


class SideTaskBroke(RuntimeError):
    """The caller's own error type."""


def notes(error: BaseException) -> list[str]:
    return list(getattr(error, "__notes__", []))


async def after_reports(collector, count: int = 3) -> None:
    """Wait until the collector accepted ``count`` reports (an event, not a clock)."""
    while collector.machine is None or collector.machine.accepted < count:
        await asyncio.sleep(0.001)


async def test_a_side_task_error_is_raised_as_it_is_with_a_note(tmp_path):
    async def side(view, run, collector):
        await after_reports(collector)
        raise SideTaskBroke("the experiment failed")

    with pytest.raises(SideTaskBroke, match="the experiment failed") as caught:
        await run_scenario(
            parse_scenario(SCENARIO), broker="memory", out_dir=tmp_path, side_task=side
        )
    assert not isinstance(caught.value, BaseExceptionGroup)
    assert any("raised by run_scenario's side_task" in n for n in notes(caught.value))


async def test_a_side_task_raising_its_own_group_gets_its_group_back(tmp_path):
    # a group the caller's code raised is the caller's error: never taken apart
    mine = ExceptionGroup("my checks", [ValueError("a"), KeyError("b")])

    async def side(view, run, collector):
        await after_reports(collector)
        raise mine

    with pytest.raises(ExceptionGroup) as caught:
        await run_scenario(
            parse_scenario(SCENARIO), broker="memory", out_dir=tmp_path, side_task=side
        )
    assert caught.value is mine


class RestartedBroker(MemoryTransport):
    """A memory broker that, once ``restarted``, refuses the collector's login (a broker
    restarted with another password file): the collector's session does not retry a
    refused login, ``ConnectionRefused``."""

    restarted = False

    def connect(self, client_id, **kwargs):
        if self.restarted and client_id.endswith("-collector"):
            raise ConnectionRefused(f"{client_id}: memory broker refused the connection")
        return super().connect(client_id, **kwargs)


async def test_a_broker_that_refuses_the_collector_raises_connection_refused(tmp_path):
    transport = RestartedBroker()

    async def restart(view, run, collector):
        await after_reports(collector)
        transport.restarted = True
        transport.sever()  # every connection breaks; the collector's login is refused

    with pytest.raises(ConnectionRefused, match="refused the connection") as caught:
        await run_scenario(
            parse_scenario(SCENARIO), broker=transport, out_dir=tmp_path, side_task=restart
        )
    error = caught.value
    assert not isinstance(error, BaseExceptionGroup)
    assert isinstance(error, TransportError)  # ldpfleet's typed error: the CLI's exit 2
    assert any("raised by the collector" in n for n in notes(error)), notes(error)


def test_a_broker_gone_for_long_ends_the_stage_without_an_error(tmp_path):
    # the broker goes away mid-stream and never comes back: the collector's stage closes
    # at its deadline (stage_timeout) and the run reports what arrived; nothing is raised
    transport = MemoryTransport()

    async def broker_gone(view, run, collector):
        await after_reports(collector)
        with transport.outage():
            await asyncio.sleep(10_000)  # the outage's length (virtual time)

    results, _ = on_virtual_time(
        run_scenario(
            parse_scenario(SCENARIO), broker=transport, out_dir=tmp_path, side_task=broker_gone
        )
    )
    assert results["reports_lost"] > 0 and results["devices_unfinished"] == 4


async def test_an_internal_collector_error_is_the_original_with_its_part(tmp_path, monkeypatch):
    handle = CollectorService._handle
    calls = {"n": 0}

    def failing(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise ZeroDivisionError("the collector's own bug")
        return handle(self, *args, **kwargs)

    monkeypatch.setattr(CollectorService, "_handle", failing)
    with pytest.raises(ZeroDivisionError, match="the collector's own bug") as caught:
        await run_scenario(parse_scenario(SCENARIO), broker="memory", out_dir=tmp_path)
    assert any("raised by the collector" in n for n in notes(caught.value)), notes(caught.value)
    assert not (tmp_path / "results.json").exists()  # the note says so


async def test_a_fleet_error_is_the_original_with_its_part(tmp_path, monkeypatch):
    async def broken(self):
        await asyncio.sleep(0)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Fleet, "run", broken)
    with pytest.raises(OSError, match="No space left") as caught:
        await run_scenario(parse_scenario(SCENARIO), broker="memory", out_dir=tmp_path)
    assert any("raised by the fleet" in n for n in notes(caught.value))


def test_one_error_flattens_task_groups_and_notes_the_others():
    first, second = ValueError("first"), KeyError("second")
    inner = BaseExceptionGroup("unhandled errors in a TaskGroup", [second, first])
    group = BaseExceptionGroup(
        "unhandled errors in a TaskGroup", [first, asyncio.CancelledError(), inner]
    )
    error = one_error(group)
    assert error is first
    assert notes(first) == ["also raised: KeyError: 'second'"]
    only_cancelled = BaseExceptionGroup(
        "unhandled errors in a TaskGroup", [asyncio.CancelledError()]
    )
    assert one_error(only_cancelled) is None


def test_cli_a_lost_broker_is_one_sentence_and_exit_2(tmp_path, monkeypatch):
    # the documented exit codes: 2 for an unreachable broker, also when it went away mid-run
    async def lost(self):
        raise ConnectionLost("one-error-x-collector: no connection for 30.0 s (give_up_after)")

    monkeypatch.setattr(CollectorService, "run", lost)
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    result = CliRunner().invoke(
        app, ["run", str(scenario), "--broker", "memory", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2, result.output
    assert "ExceptionGroup" not in result.output and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "no connection for 30.0 s" in lines[0], result.output
    assert issubclass(ConnectionLost, TransportError)


async def test_stopped_by_names_the_part(tmp_path, monkeypatch):
    from ldpfleet.scenarios.runner import stopped_by

    async def broken(self):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(Fleet, "run", broken)
    with pytest.raises(ZeroDivisionError) as caught:
        await run_scenario(parse_scenario(SCENARIO), broker="memory", out_dir=tmp_path)
    assert stopped_by(caught.value) == (
        "raised by the fleet; the run stopped before writing results.json"
    )
    assert stopped_by(ValueError("elsewhere")) is None
