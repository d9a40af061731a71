"""A ``SecAggAgent`` whose collector dies mid-session stops waiting (virtual time).

Held-out QA (helper T, 2026-12-06): in the docs/secagg.md example with the collector's
task cancelled 5 ms into the session, every agent still waited after 5 s (and forever).
Now an agent that has its setup gives up after ``collector_silence_limit(stage_timeout)``
of silence (``give_up_after`` overrides it), and one without a setup keeps waiting.
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from ldpfleet.broker.select import open_broker
from ldpfleet.collector.secure_sum import secure_sum
from ldpfleet.devices.secagg_agent import SILENCE_FLOOR, SecAggAgent, collector_silence_limit
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.secagg.server import DEFAULT_PATIENCE

from tests.virtual_time import VirtualTimeLoop

FIXED = FixedPoint(-1.0, 1.0, 2.0**16)
NAMES = [f"d{i}" for i in range(6)]


async def _collector_dies(give_up_after, stage_timeout: float, crash_after: float | None):
    """Agents and a collector whose task is cancelled ``crash_after`` seconds in (None:
    no collector at all); returns (agents, the loop's seconds until every agent ended or
    1000 s passed)."""
    loop = asyncio.get_running_loop()
    async with open_broker("memory") as (transport, _info):
        agents = [
            SecAggAgent(
                transport, SecAggClient("r", "s", d, np.zeros(4)), give_up_after=give_up_after
            )
            for d in NAMES
        ]
        tasks = [asyncio.create_task(agent.run()) for agent in agents]
        await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
        started = loop.time()
        if crash_after is not None:
            collector = asyncio.create_task(
                # "ghost" never answers: the advertise stage stays open until the crash
                secure_sum(
                    transport, "r", "s", [*NAMES, "ghost"], 4, FIXED, stage_timeout=stage_timeout
                )
            )
            await asyncio.sleep(crash_after)
            collector.cancel()
            await asyncio.gather(collector, return_exceptions=True)
        _done, pending = await asyncio.wait(tasks, timeout=1000.0)
        ended = loop.time() - started
        for task in pending:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return agents, ended, len(pending)


def test_the_default_limit() -> None:
    assert collector_silence_limit(0.5) == SILENCE_FLOOR
    assert collector_silence_limit(30.0) == (DEFAULT_PATIENCE + 1) * 30.0


def test_agents_give_up_on_a_dead_collector() -> None:
    # stage_timeout 0.5: the session is under way at 0.1 s (keys advertised), then dies
    agents, ended, pending = VirtualTimeLoop.run(_collector_dies(None, 0.5, 0.1))
    assert pending == 0
    assert SILENCE_FLOOR <= ended < SILENCE_FLOOR + 0.2
    for agent in agents:
        assert agent.client.setup is not None and not agent.client.finished
        assert "collector was silent for 60 s" in agent.gave_up


def test_give_up_after_is_the_callers() -> None:
    agents, ended, pending = VirtualTimeLoop.run(_collector_dies(5.0, 0.5, 0.1))
    assert pending == 0 and 5.0 <= ended < 5.2
    # never: still waiting when the test stops at 1000 s
    agents, ended, pending = VirtualTimeLoop.run(_collector_dies(math.inf, 0.5, 0.1))
    assert pending == len(NAMES) and all(agent.gave_up is None for agent in agents)


def test_no_setup_no_limit() -> None:
    # no session started: the agents wait as long as they are run
    agents, _ended, pending = VirtualTimeLoop.run(_collector_dies(None, 0.5, None))
    assert pending == len(NAMES) and all(agent.gave_up is None for agent in agents)


def test_a_live_collector_is_waited_for() -> None:
    # a session that completes: no agent gives up, every agent is done
    async def session():
        async with open_broker("memory") as (transport, _info):
            agents = [
                SecAggAgent(transport, SecAggClient("r", "s", d, np.full(4, 0.25))) for d in NAMES
            ]
            tasks = [asyncio.create_task(agent.run()) for agent in agents]
            await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
            result = await secure_sum(transport, "r", "s", NAMES, 4, FIXED, stage_timeout=30.0)
            await asyncio.gather(*tasks)
        return agents, result

    agents, result = VirtualTimeLoop.run(session())
    assert result.aborted is None and len(result.survivors) == len(NAMES)
    assert all(agent.gave_up is None and agent.client.state == "done" for agent in agents)


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), True, "60"])
def test_bad_give_up_after(value) -> None:
    with pytest.raises(ParameterError) as error:
        SecAggAgent(None, SecAggClient("r", "s", "d0", np.zeros(4)), give_up_after=value)
    assert error.value.field == "give_up_after"
