"""``run_peer_relay``: the message layer's batching relay for peer traffic (a thin pump).

It publishes on one connection under the identity ``relay`` and drives one
``protocol.peer_relay.PeerRelay`` machine: it subscribes to the devices' ``up/peer_batch``
topics (spread over ``broker.fanin`` connections, so no broker queue holds more than 500 of
them) and to the collector's ``ctl/relay_phase`` requests, feeds the machine, publishes
what it says (step broadcasts, per-device deliveries, phase reports on
``svc/relay/phase``) and fires its timers: the step timeouts, and the end of a phase held
to its public deadline (``RelayPhase.deadline``; the machine decides, the pump only
sleeps until the time it asks for, re-reading it after every input).
It leaves when the collector closes the run (``ctl/stage`` run closed). It takes no
decision itself: every delivery, control messages included, goes to the machine, which
judges it (only this run's collector steers the relay: ``protocol.peer_relay``,
"Control"); the pump publishes, logs and leaves on what the machine returns.

The relay is part of the message layer, like the broker, with the broker's trust: it sees
the peer graph and the negotiation items (see ``protocol.peer_relay``, "Trust"), and must
not be run by the collector's operator in a deployment. Its counts (rounds, supersteps,
items, batches per phase) stay here: it returns them (``PhaseFinished``) and logs them; the
collector's ``PhaseReport`` carries none of them. The count of what it refuses (bad
batches, control messages not from this run's collector) stays here too: each refusal is
published on ``svc/relay/reject`` (the trace recorder keeps it), and the counts by reason
and by phase (the phase the relay was running when the message came, ``NO_PHASE`` outside
any) are in the returned ``RelayOutcome`` and in the relay's closing log line. In
``ldpfleet run`` it runs in the same process for convenience, with its own connection and
identity.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from ldpfleet.broker.fanin import fan_in
from ldpfleet.broker.pump import background, drive_timers, publish_outbound
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.peer_relay import (
    RELAY_ID,
    CollectorClosed,
    PeerRelay,
    PhaseAborted,
    PhaseFinished,
    PhaseRefused,
)

__all__ = ["RelayOutcome", "run_peer_relay"]

log = logging.getLogger(__name__)


@dataclass
class RelayOutcome:
    """How each phase ended, and what the relay refused: the message layer's own counts,
    never the collector's (module docstring)."""

    phases: list[PhaseFinished | PhaseAborted] = field(default_factory=list)
    rejected: int = 0  # messages refused: bad batches, control not from this run's collector
    rejections_by_reason: dict[str, int] = field(default_factory=dict)
    # the same refusals by the phase running when they came (``NO_PHASE``: outside any)
    rejections_by_phase: dict[str, int] = field(default_factory=dict)


async def run_peer_relay(
    transport: Transport,
    run: str,
    devices: Iterable[str],
    *,
    step_timeout: float = 60.0,
    ready: asyncio.Event | None = None,
) -> RelayOutcome:
    """Serve relay phases until the run closes; returns how each phase ended and what the
    relay refused (``RelayOutcome``), which it also logs."""
    loop = asyncio.get_running_loop()
    relay = PeerRelay(run, devices, step_timeout=step_timeout)
    outcome = RelayOutcome()
    control = topics.ctl(run, "relay_phase")
    stage = topics.ctl(run, "stage")
    batches = [[topics.up(run, device, "peer_batch")] for device in sorted(relay.devices)]
    async with (
        transport.connect(f"{run}-{RELAY_ID}") as conn,
        fan_in(transport, f"{run}-{RELAY_ID}-in", [*batches, [control, stage]]) as inbound,
    ):
        if ready is not None:
            ready.set()

        def take_events() -> bool:
            """Record and log the machine's events; whether the collector closed the run."""
            closed = False
            for event in relay.pop_events():
                if isinstance(event, PhaseFinished | PhaseAborted):
                    outcome.phases.append(event)
                if isinstance(event, PhaseFinished):  # the message layer's own log
                    _log_finished(event)
                elif isinstance(event, PhaseRefused):
                    log.warning("relay: phase %s refused: %s", event.phase, event.reason)
                elif isinstance(event, CollectorClosed):
                    closed = True
            return closed

        async def after_timer() -> None:
            take_events()
            await publish_outbound(conn, relay)

        wake = asyncio.Event()  # an input may move the next timer (a phase's held end)
        async with background(drive_timers(relay, after_timer, wake=wake)):
            async for delivery in inbound:
                try:
                    topic = topics.parse(delivery.topic)
                    message = codec.decode(delivery.payload)
                except RemoteProtocolError as error:
                    relay.reject(delivery.topic[:300], "invalid", error)
                else:
                    relay.receive(topic, message, loop.time())
                closed = take_events()
                await publish_outbound(conn, relay)
                if closed:
                    break
                wake.set()
    outcome.rejected = relay.rejected
    outcome.rejections_by_reason = dict(sorted(relay.rejections_by_reason.items()))
    outcome.rejections_by_phase = dict(sorted(relay.rejections_by_phase.items()))
    _log_refused(outcome)
    return outcome


def _log_finished(event: PhaseFinished) -> None:
    """The relay's counts of a finished phase, and its overrun of the public deadline."""
    log.info(
        "relay: phase %s: %d rounds, %d supersteps, %d items, %d batches",
        event.phase, event.rounds, event.supersteps, event.items, event.batches,
    )  # fmt: skip
    if event.overrun > 0:
        log.warning(
            "relay: phase %s overran its public deadline of %g s by %.3f s",
            event.phase, event.deadline, event.overrun,
        )  # fmt: skip


def _log_refused(outcome: RelayOutcome) -> None:
    """The relay's closing line: what it refused, by reason and by phase (nothing when
    none)."""
    if outcome.rejected:
        reasons = ", ".join(f"{k}: {v}" for k, v in outcome.rejections_by_reason.items())
        phases = ", ".join(f"{k}: {v}" for k, v in outcome.rejections_by_phase.items())
        log.warning(
            "relay: refused %d message(s) in the run (%s; by phase: %s)",
            outcome.rejected, reasons, phases,
        )  # fmt: skip
