"""The collector's opening of a stage over a transport: a thin pump of
``protocol.stage_opening.StageOpening`` (the rule and its theory of operation are there).

``open_stage`` subscribes every member's exact ``up/ready`` topic over ``broker.fanin``
connections (at most 500 devices each), publishes the machine's ``Stage`` open message,
sets ``listening`` (a caller in the same process starts its devices only then), feeds the
machine every decodable message and its deadline, and returns its one decision. The
connections log in as the collector.
"""

from __future__ import annotations

import asyncio

from ldpfleet.broker.fanin import fan_in
from ldpfleet.broker.pump import background, drive_timers, publish_outbound
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
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
    loop = asyncio.get_running_loop()
    decided: asyncio.Future = loop.create_future()

    def take_events() -> None:
        for event in machine.pop_events():
            if not decided.done() and isinstance(event, SessionOpens | StageAbandoned):
                decided.set_result(event)

    async def after_timer() -> None:
        take_events()

    groups = [[topics.up(run, device, READY_KIND)] for device in machine.members]
    async with (
        fan_in(transport, f"{run}-collector-ready", groups) as inbound,
        transport.connect(f"{run}-collector-stage") as conn,
    ):

        async def consume() -> None:
            try:
                async for delivery in inbound:
                    try:
                        topic = topics.parse(delivery.topic)
                        message = codec.decode(delivery.payload)
                    except RemoteProtocolError:
                        machine.barrier.refused += 1
                        continue
                    machine.receive(topic, message, loop.time())
                    take_events()
            except Exception as error:  # the connection failed: end the wait with it
                if not decided.done():
                    decided.set_exception(error)
                raise
            if not decided.done():
                decided.set_exception(ConnectionError(f"run {run}: the readiness inbox closed"))

        machine.start(loop.time())
        await publish_outbound(conn, machine)
        if listening is not None:
            listening.set()
        async with background(consume()), background(drive_timers(machine, after_timer)):
            return await decided
