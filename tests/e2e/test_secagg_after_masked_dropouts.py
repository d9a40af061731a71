"""The fleet's path (``SecAggAgent`` pumps, the collector's ``secure_sum``, the in-memory
broker) with ``[secure_sum]`` dropouts at ``after_masked``: each dropping device sends its
masked input, then its last will. Every one of them is summed, and the result's survivors
are exactly the devices whose inputs are in the total.

Before, a dropping device whose last will reached the collector while the masked stage
was still open was left out (and listed as dropped), one whose will came after the stage
closed was summed: which of them were summed depended on the order the broker delivered
the messages in (tests/unit/test_secagg_survivor_timing.py injects the orders on the
machines). Runs on virtual time (tests/virtual_time.py): no deadline is involved."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from ldpfleet.broker.select import open_broker
from ldpfleet.collector.secure_sum import secure_sum
from ldpfleet.devices.secagg_agent import SecAggAgent
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.encoding import FixedPoint

from tests.virtual_time import VirtualTimeLoop

FIXED = FixedPoint(-1.0, 1.0, 2.0**16)


SILENT = "d05"  # drops after its shares without a word: the masked stage waits its deadline


async def _session(n: int, leaving: set[str], graph: str, seed: int):
    rng = np.random.default_rng(seed)
    names = [f"d{i:02d}" for i in range(n)]
    inputs = {d: rng.uniform(-1.0, 1.0, 4) for d in names}
    async with open_broker("memory") as (transport, _info):
        agents = [
            SecAggAgent(
                transport,
                SecAggClient("run1", "sum0", d, inputs[d]),
                dropout="after_masked" if d in leaving else "after_shares" if d == SILENT else None,
                announce_dropout=d in leaving,
            )
            for d in names
        ]
        tasks = [asyncio.create_task(agent.run()) for agent in agents]
        await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
        result = await secure_sum(
            transport, "run1", "sum0", names, 4, FIXED, graph=graph, stage_timeout=30.0
        )
        await asyncio.gather(*tasks)
    return result, inputs


@pytest.mark.parametrize("graph", ["harary", "full"])
def test_every_device_leaving_after_its_masked_input_is_summed(graph):
    """Fails on the old code: the masked stage stays open until its deadline (the silent
    device), so every leaving device's last will arrives while it is open, and the old
    server dropped them all from the sum (with only the silent one dropped, they were all
    summed whenever their wills came after their inputs closed the stage)."""
    n = 12
    leaving = {"d01", "d07"}  # with the silent one, at most 3 of a device's 10 holders gone
    result, inputs = VirtualTimeLoop.run(_session(n, leaving, graph, seed=7))
    assert result.aborted is None, result.aborted
    assert result.survivors == tuple(sorted(set(inputs) - {SILENT}))
    assert result.dropped == (SILENT,)
    exact = sum(FIXED.encode(inputs[d]).astype(object) for d in result.survivors)
    np.testing.assert_array_equal(
        result.encoded_total, np.asarray(exact % 2**FIXED.bits, dtype=np.uint64)
    )
    assert set(result.summary["device_aborts"]) == leaving  # they did leave
