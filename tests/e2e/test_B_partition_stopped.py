"""A partitioned GC-DP run stopped early keeps its ledger (helper B, issue 19).

Before: ``scenarios.coordinator.coordinator_side`` wrote its results.json only after a
complete coordination, so a coordinator stopped (SIGTERM: the split runner's
``run_timeout``, Ctrl-C) had published and charged releases recorded nowhere (helper V
measured 19 ``gcdp_release`` messages and no ledger on Mosquitto). Now every release is
persisted before it is published (``GcdpStage.before_publish``: the coordinator writes its
results.json, the collector ledger holding the charge), and a stopped coordinator writes
its results.json with ``aborted`` ``stopped``, the ``gcdp`` entry and the ledger of every
window it released. The run is stopped at a chosen event (the third release seen on the
broker), on the in-memory transport and virtual time: no timer decides anything.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.protocol import codec, topics
from ldpfleet.scenarios.coordinator import coordinator_side, merge_partitions, partition_side
from ldpfleet.scenarios.schema import parse_scenario
from ldpfleet.scenarios.sides import fleet_side

from tests.conftest import ROOT
from tests.e2e.test_partitions import with_partitions
from tests.virtual_time import VirtualTimeLoop

STEPS, WINDOW, STOP_AT = 600, 30, 3
RELEASE = (
    (ROOT / "scenarios" / "occupancy-release.toml")
    .read_text()
    .replace("steps = 1800", f"steps = {STEPS}")
)


def _charges(path: Path) -> int:
    """The collector ledger's GC-DP charges in the results.json at ``path``."""
    document = json.loads(path.read_text())
    return document["collector_ledger"]["accounts"]["gcdp_release"]["charges"]


def _stopped_run(tmp_path: Path) -> tuple[list[int], list[int]]:
    """Coordinator, two workers and a fleet shard over memory; the coordinator is cancelled
    (what SIGTERM does to a side process) once the watcher has seen ``STOP_AT`` releases.
    Returns the windows the watcher saw and, for each, the charges results.json already
    held when it arrived."""
    scenario = parse_scenario(with_partitions(RELEASE, 2))
    run = "partstop"
    transport = MemoryTransport()
    seen: list[int] = []
    persisted: list[int] = []

    async def main() -> None:
        async with transport.connect(f"{run}-watcher") as watcher:
            await watcher.subscribe(topics.rel(run, "gcdp"))
            coordinator = asyncio.create_task(
                coordinator_side(scenario, transport, run, tmp_path / "c")
            )
            workers = [
                asyncio.create_task(
                    partition_side(scenario, transport, run, (p, 2), tmp_path / f"w{p}")
                )
                for p in range(2)
            ]
            fleet = asyncio.create_task(
                fleet_side(scenario, transport, run, (0, 1), tmp_path / "f")
            )
            async for delivery in watcher.messages():
                seen.append(codec.decode(delivery.payload).window)
                # published: its charge is on disk already
                persisted.append(_charges(tmp_path / "c" / "results.json"))
                if len(seen) == STOP_AT:
                    break
            coordinator.cancel()
            with pytest.raises(asyncio.CancelledError):
                await coordinator
            for task in (*workers, fleet):  # no 'run closed' comes: stop the rest
                task.cancel()
            await asyncio.gather(*workers, fleet, return_exceptions=True)

    VirtualTimeLoop.run(main())
    return seen, persisted


def test_a_stopped_coordinator_writes_what_it_released_and_charged(tmp_path):
    seen, persisted = _stopped_run(tmp_path)
    assert seen == list(range(STOP_AT))
    # each release's charge was persisted before the release was published
    assert all(charges >= i + 1 for i, charges in enumerate(persisted)), persisted
    document = json.loads((tmp_path / "c" / "results.json").read_text())
    assert document["aborted"]["reason"] == "stopped"
    assert "stopped before the run closed" in document["aborted"]["detail"]
    gcdp = document["gcdp"]
    released = gcdp["windows_released"]
    # what was seen was charged; what was charged is in the entry, nothing more
    assert STOP_AT <= released < STEPS // WINDOW
    account = document["collector_ledger"]["accounts"]["gcdp_release"]
    assert account["charges"] == released
    assert account["total_spent"] == pytest.approx(released * gcdp["eps_rel"])
    assert gcdp["windows_unreleased"] == list(range(released, STEPS // WINDOW))
    assert document["complete"] is False and document["counters"] is None
    # the coordinator's trace holds no release the ledger does not
    assert document["trace"]["messages"] >= 1


def test_a_stopped_partitioned_run_merges_with_the_ledger(tmp_path):
    """The split runner merges a stopped coordinator's folder with its workers': the
    merged results.json keeps the abort, the ``gcdp`` entry and the collector ledger."""
    _stopped_run(tmp_path)
    scenario = parse_scenario(with_partitions(RELEASE, 2))
    out = merge_partitions(
        scenario, tmp_path / "c", [tmp_path / "w0", tmp_path / "w1"], tmp_path / "m"
    )
    merged = json.loads((out / "results.json").read_text())
    assert merged["aborted"]["reason"] == "stopped"
    charges = merged["collector_ledger"]["accounts"]["gcdp_release"]["charges"]
    assert charges == merged["gcdp"]["windows_released"] >= STOP_AT
