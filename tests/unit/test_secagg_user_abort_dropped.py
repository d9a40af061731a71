"""An aborted secure-sum session names the devices that had left (held-out user QA,
helper F, 2026-12-05). Before, ``SecureSumResult.dropped`` stayed empty on an abort, so a
scenario whose session aborted because one device dropped said ``dropped_devices: []``
in results.json and "dropped 0" in the report, beside a reason naming that device."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.secure_sum import secure_sum
from ldpfleet.devices.secagg_agent import SecAggAgent
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.server import Aborted

from tests.unit.test_secagg_machines import FIXED, make_session


@pytest.mark.parametrize(
    ("stage", "aborted_in"),
    [("before_keys", "advertise"), ("after_keys", "share"), ("after_shares", "masked"),
     ("during_unmask", "unmask")],
)  # fmt: skip
def test_the_abort_event_names_who_left(stage: str, aborted_in: str) -> None:
    """Fails before the fix (``Aborted`` had no ``dropped``): t = n = 5 on the full graph,
    two devices drop, the session aborts and names exactly them."""
    session = make_session(n=5, graph="full", threshold=5, seed=4)
    gone = {"dev01", "dev03"}
    session.net.drops = dict.fromkeys(gone, stage)
    session.net.run()
    (aborted,) = session.net.only(Aborted)
    assert aborted.stage == aborted_in
    assert set(aborted.dropped) == gone


def test_secure_sum_result_of_an_abort_lists_the_dropped_devices() -> None:
    """The collector API: ``dropped`` of an aborted result (what results.json's
    ``dropped_devices`` and the report's "dropped" show)."""

    async def scenario():
        names = [f"u{i}" for i in range(5)]
        rng = np.random.default_rng(0)
        transport = MemoryTransport()
        agents = [
            SecAggAgent(
                transport,
                SecAggClient("r", "s", u, rng.uniform(-1, 1, 3)),
                dropout="after_shares" if u == "u2" else None,
                announce_dropout=True,
            )
            for u in names
        ]
        tasks = [asyncio.create_task(a.run()) for a in agents]
        await asyncio.gather(*(a.subscribed.wait() for a in agents))
        try:
            return await secure_sum(
                transport, "r", "s", names, 3, FIXED, graph="full", threshold=5,
                stage_timeout=5.0,
            )  # fmt: skip
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    result = asyncio.run(scenario())
    assert result.aborted and "masked stage" in result.aborted
    assert result.survivors == ()
    assert result.dropped == ("u2",)
