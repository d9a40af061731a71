"""``run_peer_relay``: the message layer's batching relay for peer traffic (a thin pump).

It publishes on one connection under the identity ``relay`` and drives one
``protocol.peer_relay.PeerRelay`` machine: it subscribes to the devices' ``up/peer_batch``
topics (spread over ``broker.fanin`` connections, so no broker queue holds more than 500 of
them) and to the collector's ``ctl/relay_phase`` requests, feeds the machine, publishes
what it says (step broadcasts, per-device deliveries, phase reports on
``svc/relay/phase``) and fires its timers: the step timeouts, and the end of a phase held
to its public deadline (``RelayPhase.deadline``; the machine decides, the pump only
sleeps until the time it asks for, re-reading it after every input).
It leaves when the collector closes the run (``ctl/stage`` run closed).

The relay is part of the message layer, like the broker, with the broker's trust: it sees
the peer graph and the negotiation items (see ``protocol.peer_relay``, "Trust"), and must
not be run by the collector's operator in a deployment. Its counts (rounds, supersteps,
items, batches per phase) stay here: it returns them (``PhaseFinished``) and logs them; the
collector's ``PhaseReport`` carries none of them. In ``ldpfleet run`` it runs in the same
process for convenience, with its own connection and identity.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from ldpfleet.broker.fanin import fan_in
from ldpfleet.broker.pump import background, drive_timers, publish_outbound
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import ProtocolError, RemoteProtocolError
from ldpfleet.protocol.messages import Stage
from ldpfleet.protocol.peer_relay import (
    RELAY_ID,
    PeerRelay,
    PhaseAborted,
    PhaseFinished,
    RelayPhase,
)
from msgspec import UNSET

__all__ = ["run_peer_relay"]

log = logging.getLogger(__name__)


async def run_peer_relay(
    transport: Transport,
    run: str,
    devices: Iterable[str],
    *,
    step_timeout: float = 60.0,
    ready: asyncio.Event | None = None,
) -> list[PhaseFinished | PhaseAborted]:
    """Serve relay phases until the run closes; returns how each phase ended."""
    loop = asyncio.get_running_loop()
    relay = PeerRelay(run, devices, step_timeout=step_timeout)
    outcomes: list[PhaseFinished | PhaseAborted] = []
    control = topics.ctl(run, "relay_phase")
    stage = topics.ctl(run, "stage")
    batches = [[topics.up(run, device, "peer_batch")] for device in sorted(relay.devices)]
    async with (
        transport.connect(f"{run}-{RELAY_ID}") as conn,
        fan_in(transport, f"{run}-{RELAY_ID}-in", [*batches, [control, stage]]) as inbound,
    ):
        if ready is not None:
            ready.set()

        def take_events() -> None:
            for event in relay.pop_events():
                if isinstance(event, PhaseFinished | PhaseAborted):
                    outcomes.append(event)
                if isinstance(event, PhaseFinished):  # the message layer's own log
                    log.info(
                        "relay: phase %s: %d rounds, %d supersteps, %d items, %d batches",
                        event.phase, event.rounds, event.supersteps, event.items, event.batches,
                    )  # fmt: skip
                    if event.overrun > 0:
                        log.warning(
                            "relay: phase %s overran its public deadline of %g s by %.3f s",
                            event.phase, event.deadline, event.overrun,
                        )  # fmt: skip

        async def after_timer() -> None:
            take_events()
            await publish_outbound(conn, relay)

        wake = asyncio.Event()  # an input may move the next timer (a phase's held end)
        async with background(drive_timers(relay, after_timer, wake=wake)):
            async for delivery in inbound:
                now = loop.time()
                try:
                    topic = topics.parse(delivery.topic)
                    message = codec.decode(delivery.payload)
                except RemoteProtocolError as error:
                    relay.reject(delivery.topic[:300], "invalid", error)
                    await publish_outbound(conn, relay)
                    continue
                if topic.family == "ctl":
                    if message.sender != topics.COLLECTOR_ID or message.run != run:
                        continue  # only this run's collector steers the relay
                    if isinstance(message, Stage) and message.state == "closed":
                        break
                    if isinstance(message, RelayPhase):
                        try:
                            relay.start_phase(
                                message.phase,
                                now,
                                until_quiet=message.until_quiet,
                                max_rounds=message.max_rounds,
                                padded=message.padded,
                                deadline=0.0 if message.deadline is UNSET else message.deadline,
                            )
                        except ProtocolError as error:  # e.g. asked again while running
                            log.warning("relay: phase %s refused: %s", message.phase, error)
                else:
                    relay.receive(topic, message, now)
                take_events()
                await publish_outbound(conn, relay)
                wake.set()
    return outcomes
