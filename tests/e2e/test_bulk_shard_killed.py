"""A bulk run's gateway shard process killed with SIGKILL (helper J).

Old: the run went on and its results.json said only ``fleet.shards_missing: 1``: which
shard, how it ended, which gateways and devices it carried were nowhere, nothing was
printed, and ``fleet_mean_mae`` compared the estimate with a truth missing that shard's
devices (summed over the other shards, divided by the whole fleet).

Decided (docs/scaling.md "A gateway shard that dies"): a gateway shard holds devices that
have not reported yet, not reports the collectors accepted, so nothing accepted is lost
and the run goes on with the other shards (ending it at once, as a collector's death
does, would throw away every other shard's stored devices). What happened is stated:
results.json ``fleet.shards_failed`` names the shard, its pid, its exit code, its gateways,
its devices and what they left unstored; one ``warnings`` sentence says it (``ldpfleet
run`` prints it, and exits 1 on the lost reports); ``stages.stream.close_reason`` names
the shard; the fleet-mean truth (and the clipping tally) of a shard without outcome is
recomputed from the plan rather than left out.

Events only: the runner's ``_spawn`` is wrapped so shard 1 is killed the moment it is
spawned (before it can have sent anything): its devices are all unfinished, the other
shard's all complete, whatever the machine's speed.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from ldpfleet.protocol.bulk import BulkPlan
from ldpfleet.scenarios import bulk_run

from tests.e2e.test_bulk_parity_ctrl_c import _processes_naming


def _plan() -> BulkPlan:
    # 4 gateways of 5 devices; shards 2: shard 0 carries g0, g2; shard 1 g1, g3
    return BulkPlan(
        run="bulk-shard-killed", devices=20, steps=20, batch_steps=5, eps=2.0, w=5,
        gateway_devices=5, partitions=2,
    )  # fmt: skip


@pytest.mark.slow  # child processes on the embedded broker: a few seconds
def test_a_killed_gateway_shard_is_named_and_its_devices_reported_lost(tmp_path, monkeypatch):
    real_spawn = bulk_run._spawn
    killed: list[int] = []

    async def spawn(children, *args):
        process = await real_spawn(children, *args)
        if args[0] == "gateways" and args[args.index("--shard") + 1] == "1/2":
            process.kill()  # before it can connect: its devices never report
            killed.append(process.pid)
        return process

    monkeypatch.setattr(bulk_run, "_spawn", spawn)
    plan = _plan()
    results = asyncio.run(
        bulk_run.run_bulk(
            plan, broker="embedded", out_dir=tmp_path, shards=2, processes=True,
            stage_timeout=600,
        )
    )  # fmt: skip
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["fleet"]["shards_failed"] == results["fleet"]["shards_failed"]
    [failed] = written["fleet"]["shards_failed"]
    assert failed["shard"] == 1 and failed["shards"] == 2
    assert failed["pid"] == killed[0]
    assert failed["exit_code"] == -9 and failed["ended"] == "exit code -9 (SIGKILL)"
    assert failed["gateways"] == [1, 3]
    assert failed["devices"] == 10
    assert failed["devices_unfinished"] == 10
    assert failed["reports_lost"] == 10 * plan.batches
    # the run went on: shard 0's devices are complete, shard 1's reports all lost
    assert written["reports_lost"] == 10 * plan.batches
    assert written["reports_received"] == 10 * plan.batches
    assert written["fleet"]["shards_missing"] == 1
    [sentence] = [w for w in written["warnings"] if "gateway shard" in w]
    assert sentence.startswith(
        f"gateway shard 1 of 2 (pid {killed[0]}, gateways g1, g3) ended with exit code -9 (SIGKILL)"
    ), sentence
    assert "10 of its 10 devices unfinished" in sentence, sentence
    assert f"{10 * plan.batches} reports never stored" in sentence, sentence
    # the fleet-mean truth of a shard without outcome is recomputed from the plan: the
    # recomputation gives what the surviving shard's gateways reported of their devices
    outcome = json.loads((tmp_path / "shard0" / "outcome.json").read_text())
    again = bulk_run._generated_truth(plan, [0, 2])
    assert np.allclose(again["truth_sum"], outcome["truth_sum"], rtol=0, atol=1e-9)
    assert again["truth_clip"] == outcome["truth_clip"]
    assert written["clipping"]["readings"] == 20 * plan.steps  # the whole fleet's
    # the dead shard's devices' accounts, rebuilt from the store (docs/scaling.md "A
    # gateway shard that dies"): killed before it sent anything, they spent nothing the
    # collectors hold
    rebuilt = written["fleet"]["reconstructed_accounts"]
    assert rebuilt["source"] == "store" and rebuilt["devices"] == 10
    assert rebuilt["shards"] == [
        {"shard": 1, "shards": 2, "gateways": [1, 3], "devices": 10, "ended": failed["ended"]}
    ]
    assert rebuilt["devices_with_stored_reports"] == 0 and rebuilt["stored_reports"] == 0
    assert rebuilt["max_window_spent"] == 0.0 and rebuilt["within_budget"] is True
    assert _processes_naming(str(tmp_path)) == []


def test_the_stream_stage_names_a_failed_shard():
    """``stages.stream``: a run whose shard died is incomplete, and says which shard."""
    failed = {
        "shard": 1, "shards": 2, "pid": 7, "exit_code": -9, "ended": "exit code -9 (SIGKILL)",
        "gateways": [1, 3], "devices": 10, "devices_unfinished": 10, "reports_lost": 40,
        "sentence": "gateway shard 1 of 2 (pid 7, gateways g1, g3) ended with exit code -9",
    }  # fmt: skip
    results = {
        "aborted": None, "reports_lost": 40, "stream_seconds": 1.0,
        "fleet": {"shards_failed": [failed]},
    }  # fmt: skip
    stage = bulk_run._stream_stage(results)
    assert stage["status"] == "incomplete"
    assert (
        "gateway shard 1 of 2 (pid 7, gateways g1, g3) ended with exit code -9"
        in (stage["close_reason"])
    )
