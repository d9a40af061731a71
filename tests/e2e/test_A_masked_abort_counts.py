"""results.json's ``secure_sum.collector`` counts what arrived when the masked stage aborts.

Last session's user trial: after a masked-stage abort the collector had received masked
inputs, yet ``collector.masked`` read 0 (it was |U3|, a set formed only when that stage's
close succeeds). The session here aborts at that close whatever the random SecAgg+
labelling: 6 devices on a ring (``neighbors = 2``: each device's seeds have 3 holders,
itself and its 2 neighbours; t = 2), 2 of them leave after their shares, before their
masked input (``dropout_stage = "after_shares"``, announced like an MQTT last will, so
no deadline is waited for and the masked stage closes once the 4 others' inputs are in).
Two leavers side by side keep 1 live holder of their mask keys each (< t); one survivor
apart, they isolate it; three apart, they cut the ring in two: either way the server
refuses to unmask ("cannot unmask": too few live holders of some secret, or a split
survivors' graph). The run is on the in-memory transport on virtual time.
"""

from __future__ import annotations

import asyncio
import json

from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.scenarios.runner import run_scenario, secure_sum_dropouts
from ldpfleet.scenarios.schema import parse_scenario

from tests.virtual_time import VirtualTimeLoop

SCENARIO = """
[scenario]
name = "masked-abort"
seed = 5
[fleet]
devices = 6
[stream]
steps = 20
eps = 2.0
w = 5
[source]
kind = "synthetic"
bounds = [-1.5, 1.5]
[secure_sum]
dim = 4
neighbors = 2
dropout = 0.34
dropout_stage = "after_shares"
stage_timeout = 30.0
"""


def test_a_masked_stage_abort_counts_the_masked_inputs_that_arrived(tmp_path) -> None:
    loaded = parse_scenario(SCENARIO)

    async def run() -> tuple[dict, float]:
        results = await run_scenario(
            loaded, broker=MemoryTransport(), out_dir=tmp_path, run_id="masked-abort"
        )
        return results, asyncio.get_running_loop().time()

    results, _seconds = VirtualTimeLoop.run(run())
    assert results == json.loads((tmp_path / "results.json").read_text())
    entry = results["secure_sum"]
    leavers = sorted(secure_sum_dropouts(loaded, loaded.device_ids(), 5))
    assert len(leavers) == 2
    reason = entry["aborted"]
    assert reason.startswith("masked stage: cannot unmask: "), reason
    assert entry["survivors"] == 0 and "total" not in entry and "exact" not in entry
    assert entry["dropped_devices"] == leavers  # who had left when it aborted
    assert results["stages"]["secure_sum"]["status"] == "aborted"
    collector = entry["collector"]
    assert collector["state"] == "aborted"
    # what arrived, stage by stage: every device advertised and shared, 4 masked; nobody
    # was asked to unmask (masked read 0 here, beside this very reason)
    assert (collector["advertised"], collector["shared"], collector["masked"]) == (6, 6, 4)
    assert collector["unmasked"] == 0
    assert collector["abort_stage"] == "masked" and collector["abort_reason"] == reason
    assert collector["messages_in"] == {
        "sa_advertise": 6,
        "sa_shares": 6,
        "sa_masked": 4,
        "sa_abort": 2,
    }
    assert sorted(collector["device_aborts"]) == leavers
    assert (collector["degree"], collector["threshold"], collector["devices"]) == (2, 2, 6)
    assert collector["rejected"] == 0 and collector["late"] == 0
