"""A one-collector GC-DP run persists its ledger before it publishes a release.

Before (helper B's note, 2026-12-06): the in-process runner kept the collector's ledger in
memory until the run ended, so a process killed mid-run had published releases whose
charges were written nowhere. Now ``runner.persist_release_ledger`` writes ledger.json
(the collector's account) before each batch of releases goes out: a watcher on the
release topic finds, for every release it receives, its charge on disk already. Memory
transport; the watcher waits on messages, never on time.
"""

from __future__ import annotations

import json

from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.protocol import codec, topics
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import ROOT

STEPS, WATCHED = 300, 4
RELEASE = (
    (ROOT / "scenarios" / "occupancy-release.toml")
    .read_text()
    .replace("steps = 1800", f"steps = {STEPS}")
)


async def test_every_published_release_is_charged_on_disk_first(tmp_path):
    scenario = parse_scenario(RELEASE)
    out = tmp_path / "run"
    persisted: list[int] = []

    async def watch(transport, run, _collector) -> None:
        async with transport.connect(f"{run}-release-watcher") as watcher:
            await watcher.subscribe(topics.rel(run, "gcdp"))
            async for delivery in watcher.messages():
                codec.decode(delivery.payload)
                ledger = json.loads((out / "ledger.json").read_text())
                persisted.append(ledger["collector"]["accounts"]["gcdp_release"]["charges"])
                if len(persisted) == WATCHED:
                    return

    results = await run_scenario(
        scenario, broker=MemoryTransport(), out_dir=out, run_id="persist", side_task=watch
    )
    assert len(persisted) == WATCHED
    # the k-th release received: at least k charges were on disk when it arrived
    assert all(charges >= k for k, charges in enumerate(persisted, start=1)), persisted
    final = json.loads((out / "ledger.json").read_text())
    windows = STEPS // scenario.spec.gcdp.window
    assert final["collector"]["accounts"]["gcdp_release"]["charges"] == windows
    assert results["gcdp"]["windows_released"] == windows
