"""``secure_sum``: the collector's way to learn only the sum of the devices' vectors.

A thin asyncio pump around ``protocol.secagg.server.SecAggServer`` (Bonawitz et al. 2017;
SecAgg+ graphs from Bell et al. 2020): it subscribes to the devices' secure-aggregation
topics, decodes, feeds the machine, publishes its relays, fires its stage deadlines, and
returns the unmasked sum of the surviving devices (or the abort reason). Other collector
stages call ``await secure_sum(...)`` whenever they need a sum (CADR-LDP's θ search).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from ldpfleet.broker.fanin import fan_in
from ldpfleet.broker.pump import (
    InputHold,
    background,
    drive_timers,
    publish_outbound,
    unless_failed,
)
from ldpfleet.broker.transport import Connection, Delivery, Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.secagg.messages import SA_MESSAGES
from ldpfleet.protocol.secagg.server import Aborted, SecAggServer, StageOpened, SumReady

log = logging.getLogger(__name__)

UPSTREAM_KINDS = tuple(
    cls.__struct_config__.tag for cls in SA_MESSAGES if cls.__name__ in (
        "SaAdvertise", "SaShares", "SaMasked", "SaConsistency", "SaUnmask", "SaAbort"
    )
)  # fmt: skip


class SecureSumAborted(RuntimeError):
    """The session could not produce a sum (too few devices at some stage)."""


@dataclass
class SecureSumResult:
    """What a secure-sum session produced."""

    total: np.ndarray | None  # the decoded sum of the survivors' clipped inputs
    encoded_total: np.ndarray | None  # the same, in the integer domain mod 2^bits
    survivors: tuple[str, ...]  # empty when the session aborted: nothing was summed
    dropped: tuple[str, ...]  # the others; on an abort, those that had left by then
    aborted: str | None
    stage_seconds: dict[str, float] = field(default_factory=dict)
    # per stage, seconds after it opened (the loop's clock): when the pump had published
    # its requests (``requests_out``), the first and last delivery while it was open, how
    # many: a slow stage's time is the collector's sending or the devices' answering
    timeline: dict[str, dict[str, float]] = field(default_factory=dict)
    seconds: float = 0.0
    summary: dict = field(default_factory=dict)
    bytes_in: int = 0
    bytes_out: int = 0


async def secure_sum(
    transport: Transport,
    run: str,
    session: str,
    devices: Iterable[str],
    dim: int,
    fixed_point: FixedPoint,
    *,
    graph: str = "harary",
    degree: int | None = None,
    threshold: int | None = None,
    stage_timeout: float = 30.0,
    round: int = 0,
    ready: asyncio.Event | None = None,
    devices_ready: Awaitable[object] | None = None,
    raise_on_abort: bool = False,
    active: bool = False,
    identity_keys: Mapping[str, bytes] | None = None,
    min_inputs: int = 0,
    random_bytes: Callable[[int], bytes] = os.urandom,
) -> SecureSumResult:
    """Run one secure-aggregation session as the collector. ``ready`` is set once it
    listens; the session starts after ``devices_ready`` completes (e.g. when every device
    has subscribed to its inbox: a device that is not listening misses its setup).
    ``active`` turns on the active-adversary mode (signed keys and the consistency round);
    ``identity_keys`` maps every device to its Ed25519 public identity key;
    ``min_inputs`` > 0: the fewest inputs the sum may cover (``SecAggServer``: the session
    aborts before unmasking fewer). ``random_bytes``: the server's randomness (the SecAgg+
    graph's labelling, its probe key): ``os.urandom``, as a deployment must — a bench
    passes a seeded source so that its seed decides the whole session."""
    if isinstance(devices, str | bytes):  # list("abc") is three devices 'a', 'b', 'c'
        raise ParameterError(
            f"must be an iterable of device ids, not one string, got {devices!r}",
            field="devices",
            limit="an iterable of device ids, not one string",
            value=devices,
        )
    loop = asyncio.get_running_loop()
    started = loop.time()  # the loop's clock, as the server's deadlines (virtual in tests)
    members = list(devices)
    upstream = [[topics.up(run, d, kind) for kind in UPSTREAM_KINDS] for d in members]
    async with (
        transport.connect(f"{run}-collector-sa-{session}") as conn,
        # each device has at most one message outstanding per stage: fan_in keeps every
        # broker queue below 500 messages (Mosquitto drops beyond 1,000 by default)
        fan_in(transport, f"{run}-collector-sa-{session}-in", upstream) as inbound,
    ):
        server = SecAggServer(
            run,
            session,
            members,
            dim,
            fixed_point,
            threshold=threshold,
            min_inputs=min_inputs,
            graph=graph,
            degree=degree,
            stage_timeout=stage_timeout,
            now=loop.time(),
            round=round,
            # always both: the server refuses identity keys without active mode, never
            # drops them (an operator must not believe the session is hardened)
            active=active,
            identity_keys=identity_keys,
            random_bytes=random_bytes,
        )
        pump = _SessionPump(server, conn, loop.time)
        if ready is not None:
            ready.set()
        if devices_ready is not None:
            await devices_ready
        server.start(loop.time())
        await pump.after_timer()
        try:
            async with background(pump.consume(inbound)) as consumer:
                # a passed deadline waits while replies sit in the buffer (they arrived in
                # time), but not once the consumer stopped (nobody would feed them) and at
                # most one stage timeout (a flood that never drains cannot hold it for ever)
                hold = InputHold(inbound, consumer)
                timers = drive_timers(
                    server,
                    pump.after_timer,
                    inputs_queued=hold.queued,
                    inputs_drained=hold.drained,
                    max_hold=server.stage_timeout,
                )
                async with background(timers) as timer_task:
                    # the timers' or the consumer's error at once: waiting on ``done``
                    # alone hung until an outer timeout when either of them died
                    await unless_failed(pump.done.wait(), timer_task, consumer)
        except Exception as error:
            # the pump failed: the devices still hear that the session is over (an
            # operator abort), not their silence limit; then the error goes up
            await pump.stop(error)
            raise
        # what the cancelled pump was still sending (an abort's SaAbort), a stage at most
        await pump.drain(server.stage_timeout)
        await publish_outbound(conn, server)
        result = pump.finish(started)
    if result.aborted and raise_on_abort:
        raise SecureSumAborted(result.aborted)
    return result


@dataclass
class _SessionPump:
    """Feeds one ``SecAggServer`` its deliveries and timers, publishes its relays, and
    gathers its events into the ``SecureSumResult``."""

    server: SecAggServer
    conn: Connection
    clock: Callable[[], float]  # the loop's clock: stage seconds on the deadlines' clock
    result: SecureSumResult = field(
        default_factory=lambda: SecureSumResult(None, None, (), (), None)
    )
    done: asyncio.Event = field(default_factory=asyncio.Event)
    stage_started: dict[str, float] = field(default_factory=dict)
    sending: list[asyncio.Future] = field(default_factory=list)  # publishes started

    def take_events(self) -> None:
        """Note each stage's start; on the sum or an abort, record it and set ``done``."""
        result = self.result
        for event in self.server.pop_events():
            if isinstance(event, StageOpened):
                self.stage_started[event.stage] = self.clock()
                result.timeline[event.stage] = {"deliveries": 0}
            elif isinstance(event, SumReady):
                result.total = event.total
                result.encoded_total = event.encoded_total
                result.survivors = event.survivors
                result.dropped = event.dropped
                self.done.set()
            elif isinstance(event, Aborted):
                # one sentence: every abort reason names its stage ("masked stage:
                # cannot unmask: ..."); it read "masked: masked stage: ..."
                result.aborted = event.reason
                result.dropped = event.dropped  # who had left: results.json, the report
                self.done.set()

    async def flush(self) -> None:
        """Publish what the server has to send, counting the bytes: a stage's requests to
        every device in one ``publish_many`` (pipelined: their acknowledgements awaited
        together), not one round trip to the broker each, during which the pump reads
        nothing (4,039 sequential round trips per stage on ego-Facebook)."""
        encoded = [(item.topic, codec.encode(item.message)) for item in self.server.pop_outbound()]
        if encoded:
            self.result.bytes_out += sum(len(payload) for _, payload in encoded)
            sending = asyncio.ensure_future(self._send(encoded))
            self.sending.append(sending)
            # shielded: the session can end (``done``, set by the other task) while this
            # one still sends, and ``secure_sum`` then cancels it; what the server handed
            # over must go out all the same (``drain``). Unshielded, the SaAbort of an
            # abort that the last device's message triggered was lost on Mosquitto: 8 of
            # 9 live devices waited for the collector's next word (held-out QA, helper A)
            await asyncio.shield(sending)
        for stage, entry in self.result.timeline.items():
            if "requests_out" not in entry:  # the flush after the stage opened
                entry["requests_out"] = round(self.clock() - self.stage_started[stage], 3)

    async def _send(self, encoded: list[tuple[str, bytes]]) -> None:
        if len(encoded) == 1:
            await self.conn.publish(*encoded[0])
        else:
            await self.conn.publish_many(encoded)

    async def drain(self, timeout: float) -> None:
        """Wait until every publish ``flush`` started is done, the ones whose task the
        session's end cancelled included, for at most ``timeout`` seconds (aiomqtt holds a
        QoS 1 publish on a dead connection for 30 s). One that fails or is still unsent
        then is logged, not raised: the session's outcome stands, and a device that
        misses its ``SaAbort`` stops on its own silence limit (``protocol.secagg.silence``)."""
        sending, self.sending = self.sending, []
        if not sending:
            return
        done, unsent = await asyncio.wait(sending, timeout=timeout)
        for task in unsent:
            task.cancel()
        await asyncio.gather(*unsent, return_exceptions=True)
        failed = [t.exception() for t in done if not t.cancelled() and t.exception()]
        if unsent or failed:
            log.warning(
                "session %s: %d publishes unsent after %g s, %d failed (%s): devices that "
                "miss them stop on their silence limit",
                self.server.session,
                len(unsent),
                timeout,
                len(failed),
                failed[0] if failed else "",
            )

    async def stop(self, error: Exception) -> None:
        """The pump failed with ``error`` (its timers' or its reader's): end the session
        with an operator abort (``SecAggServer.abort``: every device's ``SaAbort``) unless
        it is over already, and send what the server holds, the publishes in progress
        included (``drain``, at most one stage timeout). Best effort, never raising: the
        pump's error is what the caller reports; a device that misses the abort stops on
        its own silence limit, as it did before (tests/unit/test_B5_secure_sum_failure_aborts.py).
        """
        server = self.server
        try:
            if not server.finished:
                server.abort(f"the collector stopped ({type(error).__name__})")
            await self.flush()
        except Exception as failure:  # a machine that failed once may fail again
            log.warning("session %s: abort after the pump failed not sent: %s",
                        server.session, failure)  # fmt: skip
        await self.drain(server.stage_timeout)

    async def after_timer(self) -> None:
        """After the server moved (a timer, the start): its events, then its relays."""
        self.take_events()
        await self.flush()

    async def consume(self, inbound: AsyncIterator[Delivery]) -> None:
        """Decode and feed every delivery (refusing the malformed) until the session ends."""
        loop = asyncio.get_running_loop()
        async for delivery in inbound:
            self.result.bytes_in += len(delivery.payload)
            self._note_delivery()
            try:
                topic = topics.parse(delivery.topic)
                message = codec.decode(delivery.payload)
            except RemoteProtocolError as error:
                self.server.reject(delivery.topic[:300], "invalid", error)
            else:
                self.server.receive(topic, message, loop.time())
            await self.after_timer()
            if self.done.is_set():
                return

    def _note_delivery(self) -> None:
        """A delivery while the server's stage is open: its time after the stage opened."""
        entry = self.result.timeline.get(self.server.state)
        if entry is None:
            return
        at = round(self.clock() - self.stage_started[self.server.state], 3)
        entry.setdefault("first", at)
        entry["last"] = at
        entry["deliveries"] += 1

    def finish(self, started: float) -> SecureSumResult:
        """The result with each stage's seconds (until the next stage opened, the last
        until now), the session's seconds and the server's summary, on the loop's clock."""
        result, stage_started = self.result, self.stage_started
        finished = self.clock()
        order = list(stage_started)
        for index, stage in enumerate(order):
            end = stage_started[order[index + 1]] if index + 1 < len(order) else finished
            result.stage_seconds[stage] = end - stage_started[stage]
        result.seconds = finished - started
        result.summary = self.server.summary()
        return result
