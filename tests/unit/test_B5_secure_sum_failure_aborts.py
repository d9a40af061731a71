"""A secure sum whose pump fails still tells its devices the session is over (helper B5).

``secure_sum`` drains what its pump was sending (an abort's ``SaAbort``) when the session
ends normally (tests/e2e/test_A_abort_reaches_devices.py). When the pump itself fails —
its timer task's ``handle_timer`` raises (a machine bug), its reader's connection is lost
— ``unless_failed`` raises that error at once and ``secure_sum`` re-raised it without a
word to the devices: each live device waited for the collector's next message until its
silence limit (``protocol.secagg.silence``: 5 stage timeouts, 150 s here) and gave up.
Now the pump asks its server for an operator abort (``SecAggServer.abort``, "the collector
stopped") and publishes the ``SaAbort`` (drained, at most one stage timeout) before the
error goes up.

Played on virtual time: 8 members, 7 agents (one member never advertises, so the
advertise stage's deadline passes at 30 s); the server's ``handle_timer`` raises there.
Without the abort every agent gives up after 150 s of silence (checked, 2026-12-07).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector import secure_sum as secure_sum_module
from ldpfleet.devices.secagg_agent import SecAggAgent
from ldpfleet.protocol.errors import LocalProtocolError
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.secagg.server import SecAggServer

from tests.virtual_time import VirtualTimeLoop

NAMES = [f"d{i}" for i in range(8)]
ABSENT = "d7"  # a member without an agent: the advertise stage waits for it
STAGE_TIMEOUT = 30.0


class _BrokenTimers(SecAggServer):
    def handle_timer(self, now: float) -> None:
        if self._stage is not None and now >= self._stage.deadline:
            raise LocalProtocolError("planted: the server's timer failed")


async def _session() -> tuple[str, list[SecAggAgent], float]:
    transport = MemoryTransport()
    agents = [
        SecAggAgent(transport, SecAggClient("r", "s0", d, np.zeros(3)))
        for d in NAMES
        if d != ABSENT
    ]
    tasks = [asyncio.create_task(agent.run()) for agent in agents]
    await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
    loop = asyncio.get_running_loop()
    with pytest.raises(LocalProtocolError) as failed:
        await secure_sum_module.secure_sum(
            transport, "r", "s0", NAMES, 3, FixedPoint(-1.0, 1.0, 2.0**16), degree=2,
            stage_timeout=STAGE_TIMEOUT,
        )  # fmt: skip
    failed_at = loop.time()
    _done, pending = await asyncio.wait(tasks, timeout=400.0)
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return str(failed.value), agents, loop.time() - failed_at


def test_a_failed_pump_still_aborts_the_session_for_its_devices(monkeypatch) -> None:
    monkeypatch.setattr(secure_sum_module, "SecAggServer", _BrokenTimers)
    error, agents, after = VirtualTimeLoop.run(_session())
    assert error == "planted: the server's timer failed"  # the pump's own error goes up
    assert after < 1.0  # before: 150 s, every agent waited for its silence limit
    for agent in agents:
        assert agent.gave_up is None
        assert agent.client.state == "aborted"
        assert "the collector stopped" in (agent.client.abort_reason or "")
