"""The ``[secure_sum]`` stage's parts that every layout of a run shares.

``ldpfleet run`` (``scenarios.runner.run_secure_sum_stage``, one process) and the split run
(``scenarios.sides``: the collector side and its fleet shards) open the stage and pick its
devices here, so the same scenario gives the same session:

- ``secure_sum_participants``: the devices that run a SecAgg agent — every device of the
  fleet (or shard) except those that crashed for good in the stream stage
  (``[faults] never_return``): they are silent, as a real crashed device is;
- ``collect_secure_sum``: the collector's part — the stage opens under
  ``protocol.stage_opening``'s one rule (every device of the fleet expected, the
  ``stage_timeout`` join deadline, nobody joining means no session) and the session then
  runs over every device of the fleet (the absent are counted out by its first deadline);
- ``abandoned_entry``: the results.json entry when nobody joined.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ldpfleet.broker.transport import Transport
from ldpfleet.collector.secure_sum import SecureSumResult, secure_sum
from ldpfleet.collector.stage_opening import open_stage
from ldpfleet.protocol.stage_opening import StageAbandoned, StageOpening
from ldpfleet.scenarios.schema import LoadedScenario

__all__ = ["abandoned_entry", "collect_secure_sum", "secure_sum_participants"]


def secure_sum_participants(fleet) -> list[str]:
    """The devices of ``fleet`` (a ``devices.fleet.Fleet``, whole or one shard) that take
    part in the ``[secure_sum]`` stage, in the fleet's order.

    Returns:
        Every device of ``fleet.agents`` but those whose crash plan says they never come
        back (the collector still expects them: the join deadline counts them out)."""
    gone = {d for d, crash in fleet.crashes.items() if not crash.returns}
    return [agent.device for agent in fleet.agents if agent.device not in gone]


def abandoned_entry(scenario: LoadedScenario, sentence: str) -> dict:
    """The results.json ``secure_sum`` entry of a stage that no device joined.

    Returns:
        ``secure_sum_entry``'s keys: no survivor, every device dropped, ``aborted`` the
        sentence, no session time."""
    section = scenario.spec.secure_sum
    assert section is not None
    devices = scenario.device_ids()
    return {
        "dim": section.dim,
        "graph": section.graph,
        "devices": len(devices),
        "dropped_devices": sorted(devices),
        "survivors": 0,
        "aborted": sentence,
        "seconds": 0.0,
        "seconds_per_stage": {},
        "collector": {},
    }


async def collect_secure_sum(
    scenario: LoadedScenario,
    transport: Transport,
    run: str,
    session: str,
    *,
    on_listening: Callable[[], None] | None = None,
) -> SecureSumResult | dict:
    """The collector's ``[secure_sum]`` stage: open it (``protocol.stage_opening``), then
    one session ``session`` over every device of the fleet. ``on_listening`` is called
    once the collector listens for the devices' readiness and has opened the stage (a
    caller running the devices in this process starts them then).

    Returns:
        The session's ``SecureSumResult``, or ``abandoned_entry`` when no device joined.

    Raises:
        ConnectionError: the readiness inbox closed before the stage opened."""
    section = scenario.spec.secure_sum
    assert section is not None
    opening = StageOpening(run, scenario.device_ids(), stage_timeout=section.stage_timeout)
    listening = asyncio.Event()
    joining = asyncio.create_task(open_stage(transport, opening, listening=listening))
    heard = asyncio.ensure_future(listening.wait())
    try:
        await asyncio.wait({joining, heard}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        heard.cancel()
    if listening.is_set() and on_listening is not None:
        on_listening()
    decision = await joining
    if isinstance(decision, StageAbandoned):
        return abandoned_entry(scenario, decision.sentence)
    return await secure_sum(
        transport,
        run,
        session,
        scenario.device_ids(),  # every member (decision.members, in the fleet's order)
        section.dim,
        scenario.fixed_point(),
        graph=section.graph,
        degree=section.neighbors,
        threshold=section.threshold,
        stage_timeout=section.stage_timeout,
    )
