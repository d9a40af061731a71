"""The split collector side persists its GC-DP ledger before it publishes a release.

Before (helper H's note, 2026-12-06): ``scenarios.sides``' collector kept the collector's
ledger in memory until its end, so a collector side killed mid-run had published releases
whose charges were written nowhere. Now ``sides._persist_release`` (on
``GcdpStage.before_publish``) writes OUT/results.json as if the side stopped, with
``collector_ledger`` holding the charges, before each batch of releases goes out: the file
the merge and ``trace verify`` read the collector's ledger from. A watcher on the release
topic reads it at every release it receives (memory transport; it waits on messages, never
on time); the copy taken at a release is what a side killed then leaves, and it merges.
"""

from __future__ import annotations

import asyncio
import json
import shutil

from ldpfleet.app.trace_verify import verify_run
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.protocol import codec, topics
from ldpfleet.scenarios.schema import parse_scenario
from ldpfleet.scenarios.sides import collector_side, fleet_side, write_merged

from tests.conftest import ROOT

STEPS, WATCHED, SAFETY = 300, 4, 60.0
RELEASE = (
    (ROOT / "scenarios" / "occupancy-release.toml")
    .read_text()
    .replace("steps = 1800", f"steps = {STEPS}")
)
RUN = "isides"


def charges(results: dict) -> int:
    return results["collector_ledger"]["accounts"]["gcdp_release"]["charges"]


async def test_every_release_of_a_split_run_is_charged_on_disk_first(tmp_path):
    scenario, transport = parse_scenario(RELEASE), MemoryTransport()
    out, fleets = tmp_path / "c", [tmp_path / f"f{i}" for i in range(2)]
    persisted: list[dict] = []
    subscribed = asyncio.Event()

    async def watch() -> None:
        async with transport.connect(f"{RUN}-release-watcher") as watcher:
            await watcher.subscribe(topics.rel(RUN, "gcdp"))
            subscribed.set()
            async for delivery in watcher.messages():
                codec.decode(delivery.payload)
                persisted.append(json.loads((out / "results.json").read_text()))
                if len(persisted) == 2:  # what a collector side killed now leaves
                    shutil.copytree(out, tmp_path / "killed")
                if len(persisted) == WATCHED:
                    return

    watching = asyncio.create_task(watch())
    await subscribed.wait()
    await asyncio.gather(
        collector_side(scenario, transport, RUN, out, fleet_timeout=SAFETY),
        *(
            fleet_side(scenario, transport, RUN, (i, 2), fleets[i], wait_timeout=SAFETY)
            for i in range(2)
        ),
    )
    await watching
    assert len(persisted) == WATCHED
    # the k-th release received: at least k charges were on disk when it arrived
    counts = [charges(document) for document in persisted]
    assert all(count >= k for k, count in enumerate(counts, start=1)), counts
    assert all(d["aborted"]["reason"] == "stopped" for d in persisted)
    assert all(d["run"] == RUN and d["scenario"]["spec"] for d in persisted)
    # the run's end overwrote it: every window charged, not aborted
    final = json.loads((out / "results.json").read_text())
    windows = STEPS // scenario.spec.gcdp.window
    assert final["aborted"] is None and charges(final) == windows
    assert final["gcdp"]["windows_released"] == windows
    # the completed split run still verifies clean and merges
    report = verify_run([out, *fleets])
    assert report.ok, report.mismatches
    merged = write_merged(out, fleets, tmp_path / "merged")
    ledger = json.loads((tmp_path / "merged" / "ledger.json").read_text())
    assert ledger["collector"]["accounts"]["gcdp_release"]["charges"] == windows
    assert merged["gcdp"]["windows_released"] == windows
    # a side killed at the 2nd release: its results.json holds the charges and merges
    killed = json.loads((tmp_path / "killed" / "results.json").read_text())
    assert charges(killed) >= 2 and killed["aborted"]["reason"] == "stopped"
    partial = write_merged(tmp_path / "killed", fleets, tmp_path / "merged-killed")
    assert partial["aborted"]["reason"] == "stopped"
    ledger = json.loads((tmp_path / "merged-killed" / "ledger.json").read_text())
    assert ledger["collector"]["accounts"]["gcdp_release"]["charges"] == charges(killed)
