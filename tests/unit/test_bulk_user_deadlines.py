"""A bulk run's collector that dies, and ``[scenario] run_timeout`` (helper C), on virtual
time (tests/virtual_time.py: the clock jumps only when the loop is idle, so "at once" and
"at the deadline" are the protocol's outcome, not the machine's speed).

- A collector that ended (a process killed, a task that raised) left the run waiting for
  the gateways' whole ``stage_timeout`` (on the memory broker: forever), then a
  FileNotFoundError traceback for its summary.json. Now the run notices at once and raises
  ``BulkRunFailed`` naming the collector and how it ended.
- ``[scenario] run_timeout`` had no effect on bulk runs. Now it bounds the run: the stage
  closes at the deadline (the collectors store what arrived and skip the reconstruction),
  results.json says ``aborted`` (reason ``run_timeout``) as other runs' do, and the stream
  and reconstruct stages say ``aborted``.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from ldpfleet.collector import bulk as bulk_collector
from ldpfleet.protocol.bulk import BulkPlan
from ldpfleet.scenarios.bulk_run import BulkRunFailed, _until_done, run_bulk, run_bulk_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.virtual_time import VirtualTimeLoop

GUARD = 5_000.0  # virtual seconds: the old code waited forever here (bounded, it fails)

PACED = """
[scenario]
name = "bulk-deadline"
seed = 5
run_timeout = 30
[fleet]
devices = 40
connection = "bulk"
gateway_devices = 20
[stream]
steps = 100
eps = 2.0
w = 5
batch_steps = 5
step_seconds = 1.0
reconstruct = "cpr"
[source]
kind = "synthetic"
shape = "sine"
period = [6, 10]
bounds = [-1.5, 1.5]
[collector]
partitions = 2
finish_grace = 5
"""


def _paced_plan(run: str, **changes) -> BulkPlan:
    return BulkPlan(**{"run": run, "devices": 40, "steps": 100, "batch_steps": 5, "eps": 2.0,
                       "w": 5, "gateway_devices": 20, "partitions": 2, "step_seconds": 1.0,
                       **changes})  # fmt: skip


def test_a_collector_ending_with_a_failure_stops_the_wait_at_once():
    """The watch itself: gateways that would stream 600 s, a collector that ends at 5 s
    with a failure: BulkRunFailed with its sentence at 5 s; one that ends cleanly (its
    partition complete) is no failure."""

    async def scenario():
        loop = asyncio.get_running_loop()
        gateways = [asyncio.ensure_future(asyncio.sleep(600))]

        async def ends(after: float, sentence: str | None):
            await asyncio.sleep(after)
            return sentence

        clean = asyncio.ensure_future(ends(2, None))
        dead = asyncio.ensure_future(ends(5, "the collector (pid 7) ended with exit code -9"))
        with pytest.raises(BulkRunFailed) as failed:
            await _until_done(gateways, [clean, dead], timeout=600)
        assert loop.time() == 5 and "exit code -9" in failed.value.sentence
        assert await _until_done(gateways, [clean], timeout=1000) is True
        assert loop.time() == 600
        late = [asyncio.ensure_future(asyncio.sleep(50))]
        assert await _until_done(late, [], timeout=10) is False and loop.time() == 610
        late[0].cancel()

    VirtualTimeLoop.run(scenario())


def test_a_collector_that_fails_mid_stream_ends_the_run_at_once(tmp_path, monkeypatch):
    """Partition 1's store fails on its third write (a full disk): the run raises
    BulkRunFailed naming that collector and the error within the stream (< 100 virtual
    seconds: the gateways' pace), not after stage_timeout. Old: it waited for ever on the
    memory broker (the guard's TimeoutError)."""
    real_append = bulk_collector.BulkStore.append
    writes = {"p1": 0}

    def append(self, rows):
        if self.dir.name == "p1":
            writes["p1"] += 1
            if writes["p1"] == 3:
                raise OSError(28, "No space left on device")
        return real_append(self, rows)

    monkeypatch.setattr(bulk_collector.BulkStore, "append", append)

    async def scenario():
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(GUARD):
            with pytest.raises(BulkRunFailed) as failed:
                await run_bulk(_paced_plan("bulk-dies"), out_dir=tmp_path, stage_timeout=600)
        return loop.time(), failed.value.sentence

    when, sentence = VirtualTimeLoop.run(scenario())
    assert when < 100, when
    assert sentence.startswith("the bulk collector of partition 1 failed: OSError"), sentence
    assert "No space left on device" in sentence
    assert not (tmp_path / "results.json").exists()


def test_run_timeout_bounds_a_bulk_run_and_results_say_aborted(tmp_path):
    """A paced stream of 100 s under run_timeout = 30: the run ends at 30 s + at most
    finish_grace (5 s), results.json says aborted (reason run_timeout, as
    scenarios.runner's), what arrived is stored and the rest counted lost, and the
    reconstruction was skipped. Old: run_timeout was ignored (the run took 100 s and said
    aborted: null)."""

    async def scenario():
        loop = asyncio.get_running_loop()
        loaded = parse_scenario(PACED)
        results = await run_bulk_scenario(loaded, broker="memory", out_dir=tmp_path)
        return loop.time(), results

    when, results = VirtualTimeLoop.run(scenario())
    assert 30 <= when <= 35 + 1, when  # + 1: the analytics after the run are off the clock
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["aborted"]["reason"] == "run_timeout" and written["aborted"]["run_timeout"] == 30
    assert "run_timeout (30 s)" in written["aborted"]["detail"]
    assert written["stages"]["stream"]["status"] == "aborted"
    assert written["stages"]["stream"]["close_reason"] == written["aborted"]["detail"]
    assert written["stages"]["reconstruct"]["status"] == "aborted"
    assert written["reconstruction"] is None
    # by 30 s the gateways had sent the batches ready at 4, 9, ..., 29 s: 6 of 20 per device
    assert written["reports_received"] == 40 * 6, written["reports_received"]
    assert written["reports_lost"] == 40 * 14
    assert written["devices_complete"] == 0
    assert results["aborted"] == written["aborted"]


def test_without_run_timeout_the_same_run_completes(tmp_path):
    """The control: the same scenario without run_timeout streams its 100 s and
    reconstructs."""

    async def scenario():
        loaded = parse_scenario(PACED.replace("run_timeout = 30\n", ""))
        return await run_bulk_scenario(loaded, broker="memory", out_dir=tmp_path)

    results = VirtualTimeLoop.run(scenario())
    assert results["aborted"] is None and results["reports_lost"] == 0
    assert results["stages"]["stream"]["status"] == "complete"
    assert results["reconstruction"]["streams"] == 40


def test_a_deadline_before_the_collectors_listen_is_one_sentence(tmp_path):
    """run_timeout shorter than the collectors' start (here: a collector that never says
    ready) ends in BulkRunFailed saying so, at the deadline."""

    async def never_ready(*args, **kwargs):
        await asyncio.sleep(10_000)

    async def scenario():
        loop = asyncio.get_running_loop()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("ldpfleet.scenarios.bulk_run.run_bulk_collector", never_ready)
            with pytest.raises(BulkRunFailed) as failed:
                await run_bulk(_paced_plan("bulk-slow"), out_dir=tmp_path, run_timeout=3)
        return loop.time(), failed.value.sentence

    when, sentence = VirtualTimeLoop.run(scenario())
    assert when == pytest.approx(3) and "run_timeout (3 s)" in sentence, (when, sentence)
