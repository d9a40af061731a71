"""The collector's opening of a stage over a transport: a thin pump of
``protocol.stage_opening.StageOpening`` (the rule and its theory of operation are there).

``open_stage`` subscribes every member's exact ``up/ready`` topic over ``broker.fanin``
connections (at most 500 devices each), publishes the machine's ``Stage`` open message,
sets ``listening`` (a caller in the same process starts its devices only then), feeds the
machine every decodable message and its deadline (``collector.readiness.
pump_until_decided``, the readiness barrier's pump too), and returns its one decision. The
connections log in as the collector.
"""

from __future__ import annotations

import asyncio

from ldpfleet.broker.fanin import fan_in
from ldpfleet.broker.pump import publish_outbound
from ldpfleet.broker.transport import Transport
from ldpfleet.collector.readiness import pump_until_decided
from ldpfleet.protocol import topics
from ldpfleet.protocol.readiness import READY_KIND
from ldpfleet.protocol.stage_opening import SessionOpens, StageAbandoned, StageOpening

__all__ = ["open_stage"]


async def open_stage(
    transport: Transport,
    machine: StageOpening,
    *,
    listening: asyncio.Event | None = None,
) -> SessionOpens | StageAbandoned:
    """Open ``machine``'s stage and wait for its decision.

    Returns:
        ``SessionOpens`` (every member joined, or some by the join deadline) or
        ``StageAbandoned`` (nobody joined).

    Raises:
        ConnectionError: the readiness inbox closed before the decision (or the
            connection's own error)."""
    run = machine.run
    groups = [[topics.up(run, device, READY_KIND)] for device in machine.members]
    async with (
        fan_in(transport, f"{run}-collector-ready", groups) as inbound,
        transport.connect(f"{run}-collector-stage") as conn,
    ):
        machine.start(asyncio.get_running_loop().time())
        await publish_outbound(conn, machine)
        if listening is not None:
            listening.set()
        return await pump_until_decided(
            inbound,
            machine,
            (SessionOpens, StageAbandoned),
            run=run,
            counted_in=machine.barrier,
        )
