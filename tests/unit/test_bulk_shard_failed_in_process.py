"""An in-process bulk run whose gateways fail mid-stream (helper J), on virtual time
(tests/virtual_time.py: the failure comes at 30 virtual seconds of a paced 100-s stream,
whatever the machine's speed).

Old: the gateways' exception came out of ``run_bulk`` after the stage closed (a
traceback from ``ldpfleet run``; no results.json) although the collectors had stored
every report the gateways delivered. Now the run ends as a process run whose gateway
shard died does (tests/e2e/test_bulk_shard_killed.py): results.json is written, with
``fleet.shards_failed`` naming how the gateways failed, what their devices left unstored,
a ``warnings`` sentence, and ``stages.stream`` incomplete naming it.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from ldpfleet.app.trace_verify import verify_run
from ldpfleet.protocol.bulk import stored_dtype
from ldpfleet.scenarios import bulk_run
from ldpfleet.scenarios.schema import parse_scenario

from tests.unit.test_bulk_user_deadlines import PACED
from tests.virtual_time import VirtualTimeLoop

FAILS_AT = 30.0  # virtual seconds into the gateways' 100-s paced stream


def test_gateways_failing_mid_stream_are_stated_and_the_run_keeps_what_arrived(
    tmp_path, monkeypatch
):
    real = bulk_run.run_bulk_gateways

    async def failing(transport, plan, gateways, **kwargs):
        streaming = asyncio.ensure_future(real(transport, plan, gateways, **kwargs))
        done, _ = await asyncio.wait([streaming], timeout=FAILS_AT)
        assert not done, "the paced stream ended before the failure"
        streaming.cancel()
        await asyncio.gather(streaming, return_exceptions=True)
        raise RuntimeError("the gateway host lost its network")

    monkeypatch.setattr(bulk_run, "run_bulk_gateways", failing)

    async def scenario():
        loop = asyncio.get_running_loop()
        loaded = parse_scenario(PACED.replace("run_timeout = 30\n", ""))
        results = await bulk_run.run_bulk_scenario(loaded, broker="memory", out_dir=tmp_path)
        return loop.time(), results

    when, results = VirtualTimeLoop.run(scenario())
    assert when < 100, when  # the stage closed when the gateways failed, not at their end
    written = json.loads((tmp_path / "results.json").read_text())
    [failed] = written["fleet"]["shards_failed"]
    assert failed["shard"] == 0 and failed["shards"] == 1 and failed["pid"] is None
    assert failed["ended"] == "failed: RuntimeError: the gateway host lost its network"
    assert failed["seconds_into_stream"] is not None
    assert failed["gateways"] == [0, 1] and failed["devices"] == 40
    # by 30 s the gateways had sent the batches ready at 4, 9, ..., 29 s: 6 of 20 each
    assert written["reports_received"] == 40 * 6, written["reports_received"]
    assert failed["devices_unfinished"] == 40 and failed["reports_lost"] == 40 * 14
    assert written["reports_lost"] == 40 * 14
    assert written["aborted"] is None
    stage = written["stages"]["stream"]
    assert stage["status"] == "incomplete" and failed["sentence"] in stage["close_reason"]
    assert failed["sentence"] in written["warnings"]
    assert failed["sentence"].startswith(
        "gateway shard 0 of 1 (gateways g0, g1) failed: RuntimeError: the gateway host lost "
        "its network"
    ), failed["sentence"]
    assert results["fleet"]["shards_failed"] == written["fleet"]["shards_failed"]
    # the dead gateways' ledgers died with them: their devices' accounts are rebuilt from
    # the stored rows (docs/scaling.md "A gateway shard that dies"), which the collectors
    # hold and aggregate
    privacy = written["privacy"]
    assert privacy["ledger_devices"] == 0 and privacy["devices"] == 40
    rebuilt = privacy["reconstructed"]
    assert rebuilt == written["fleet"]["reconstructed_accounts"]
    assert rebuilt["source"] == "store" and rebuilt["devices"] == 40
    assert rebuilt["shards"] == [
        {"shard": 0, "shards": 1, "gateways": [0, 1], "devices": 40, "ended": failed["ended"]}
    ]
    assert rebuilt["devices_with_stored_reports"] == 40
    assert rebuilt["stored_reports"] == written["reports_received"]
    carried = _stored_window_spends(tmp_path, 5, 5, 100)
    assert len(carried) == 40
    assert rebuilt["max_window_spent"] == pytest.approx(max(carried.values()), rel=1e-12)
    assert privacy["max_window_spent"] == rebuilt["max_window_spent"]
    assert privacy["within_budget"] is True and rebuilt["within_budget"] is True
    # the trace's check of every stored row's windows still passes
    report = verify_run(tmp_path)
    assert report.ok, [m.line() for m in report.mismatches]


def _stored_window_spends(out, batch_steps: int, w: int, steps: int) -> dict[int, float]:
    """Each device's largest spend over any w steps, from the rows the partitions stored."""
    spends: dict[int, np.ndarray] = {}
    for path in out.glob("p*/reports.bin"):
        for row in np.fromfile(path, dtype=stored_dtype(batch_steps)):
            spend = spends.setdefault(int(row["device"]), np.zeros(steps))
            seq = int(row["seq"])
            spend[seq * batch_steps : (seq + 1) * batch_steps] = float(row["eps0"])
    return {d: max(s[i : i + w].sum() for i in range(steps - w + 1)) for d, s in spends.items()}
