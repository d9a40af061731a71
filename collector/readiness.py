"""The collector's readiness barrier over a transport: wait until every device listens.

A thin pump over ``protocol.readiness.ReadinessBarrier`` (the theory of operation is
there): ``await_devices`` subscribes every device's exact ``up/ready`` topic over
``broker.fanin`` connections (at most 500 devices each, so no broker queue overflows when
thousands join at once), sets ``listening`` (the caller announces the run only then, so no
``DeviceReady`` can pass unheard), starts the barrier's deadline, feeds it every
decodable message and returns once all devices joined — or raises ``DevicesMissing`` with
the barrier's sentence at the deadline. The connections log in as the collector.
A ``join_listener`` (context variable) hears ``(joined, expected)`` as devices join, so a
caller far above (the CLI's status line, a side process's JSON lines) can show the count.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Sequence

from ldpfleet.broker.fanin import fan_in
from ldpfleet.broker.pump import InputHold, background, drive_timers, unless_failed
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.readiness import (
    READY_KIND,
    AllReady,
    JoinDeadlinePassed,
    ReadinessBarrier,
)

__all__ = ["DevicesMissing", "await_devices", "join_listener", "pump_until_decided"]

#: Called with ``(joined, expected)`` each time the count of joined devices grows.
join_listener: contextvars.ContextVar[Callable[[int, int], None] | None] = contextvars.ContextVar(
    "readiness_join_listener", default=None
)


class DevicesMissing(RuntimeError):
    """Devices did not join by the deadline; the message is one sentence saying how many."""

    def __init__(self, sentence: str, missing: Sequence[str] = ()) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.missing = tuple(missing)


async def await_devices(
    transport: Transport,
    run: str,
    devices: Sequence[str],
    *,
    timeout: float,
    listening: asyncio.Event | None = None,
) -> ReadinessBarrier:
    """Return the barrier once every device of ``devices`` published its ``DeviceReady``;
    raise ``DevicesMissing`` if some did not within ``timeout`` seconds of listening."""
    barrier = ReadinessBarrier(run, devices, timeout=timeout)
    listener = join_listener.get()
    heard = [0]

    def tell_listener() -> None:
        if listener is not None and len(barrier.joined) != heard[0]:
            heard[0] = len(barrier.joined)
            listener(heard[0], len(barrier.expected))

    groups = [[topics.up(run, device, READY_KIND)] for device in sorted(barrier.expected)]
    async with fan_in(transport, f"{run}-collector-ready", groups) as inbound:
        barrier.start(asyncio.get_running_loop().time())
        if listening is not None:
            listening.set()
        outcome = await pump_until_decided(
            inbound,
            barrier,
            (AllReady, JoinDeadlinePassed),
            run=run,
            counted_in=barrier,
            after_delivery=tell_listener,
            max_hold=timeout,  # a hello that arrived in time counts, at most this late
        )
    if isinstance(outcome, JoinDeadlinePassed):
        raise DevicesMissing(outcome.sentence, outcome.missing)
    return barrier


async def pump_until_decided(
    inbound,
    machine,
    decisive: tuple[type, ...],
    *,
    run: str,
    counted_in: ReadinessBarrier,
    after_delivery: Callable[[], None] | None = None,
    max_hold: float | None = None,
):
    """Feed ``inbound``'s readiness deliveries to ``machine`` (``receive(topic, message,
    now)``; an undecodable one is dropped and counted in ``counted_in.refused``) and wake
    it at its deadlines (``broker.pump.drive_timers``; with ``max_hold``, a passed one is
    held while deliveries wait in ``inbound``'s buffer, at most ``max_hold`` seconds:
    ``broker.pump.InputHold``) until it emits an event of a
    ``decisive`` type. The one pump of ``await_devices`` (a ``ReadinessBarrier``) and
    ``collector.stage_opening.open_stage`` (a ``StageOpening``); the caller starts the
    machine first.

    Returns:
        The first decisive event.

    Raises:
        ConnectionError: ``inbound`` ended before a decision (or its connection's own
            error)."""
    loop = asyncio.get_running_loop()
    decided: asyncio.Future = loop.create_future()

    def take_events() -> None:
        for event in machine.pop_events():
            if not decided.done() and isinstance(event, decisive):
                decided.set_result(event)

    async def after_timer() -> None:
        take_events()

    async def consume() -> None:
        try:
            async for delivery in inbound:
                try:
                    topic = topics.parse(delivery.topic)
                    message = codec.decode(delivery.payload)
                except RemoteProtocolError:
                    counted_in.refused += 1
                    continue
                machine.receive(topic, message, loop.time())
                take_events()
                if after_delivery is not None:
                    after_delivery()
        except Exception as error:  # the connection failed: end the wait with it
            if not decided.done():
                decided.set_exception(error)
            raise
        if not decided.done():
            decided.set_exception(ConnectionError(f"run {run}: the readiness inbox closed"))

    # a passed deadline is held while deliveries wait in ``inbound``'s buffer: a device's
    # hello that arrived in time is not judged missing because the process was busy
    async with background(consume()) as reader:
        hold = InputHold(inbound, reader) if max_hold is not None else None
        timers = drive_timers(
            machine,
            after_timer,
            inputs_queued=hold.queued if hold is not None else None,
            inputs_drained=hold.drained if hold is not None else None,
            max_hold=max_hold,
        )
        async with background(timers) as timer_task:
            return await unless_failed(decided, timer_task)
