"""``secure_sum``: the collector's way to learn only the sum of the devices' vectors.

A thin asyncio pump around ``protocol.secagg.server.SecAggServer`` (Bonawitz et al. 2017;
SecAgg+ graphs from Bell et al. 2020): it subscribes to the devices' secure-aggregation
topics, decodes, feeds the machine, publishes its relays, fires its stage deadlines, and
returns the unmasked sum of the surviving devices (or the abort reason). Other collector
stages call ``await secure_sum(...)`` whenever they need a sum (CADR-LDP's θ search).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from ldpfleet.broker.fanin import fan_in
from ldpfleet.broker.pump import background, drive_timers, publish_outbound
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.secagg.messages import SA_MESSAGES
from ldpfleet.protocol.secagg.server import Aborted, SecAggServer, StageOpened, SumReady

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
    survivors: tuple[str, ...]
    dropped: tuple[str, ...]
    aborted: str | None
    stage_seconds: dict[str, float] = field(default_factory=dict)
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
) -> SecureSumResult:
    """Run one secure-aggregation session as the collector. ``ready`` is set once it
    listens; the session starts after ``devices_ready`` completes (e.g. when every device
    has subscribed to its inbox: a device that is not listening misses its setup).
    ``active`` turns on the active-adversary mode (signed keys and the consistency round);
    ``identity_keys`` maps every device to its Ed25519 public identity key;
    ``min_inputs`` > 0: the fewest inputs the sum may cover (``SecAggServer``: the session
    aborts before unmasking fewer)."""
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    stage_started: dict[str, float] = {}
    result = SecureSumResult(None, None, (), (), None)
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
        )
        done = asyncio.Event()

        def take_events() -> None:
            for event in server.pop_events():
                if isinstance(event, StageOpened):
                    stage_started[event.stage] = time.perf_counter()
                elif isinstance(event, SumReady):
                    result.total = event.total
                    result.encoded_total = event.encoded_total
                    result.survivors = event.survivors
                    result.dropped = event.dropped
                    done.set()
                elif isinstance(event, Aborted):
                    # one sentence: every abort reason names its stage ("masked stage:
                    # cannot unmask: ..."); it read "masked: masked stage: ..."
                    result.aborted = event.reason
                    done.set()

        async def flush() -> None:
            for item in server.pop_outbound():
                payload = codec.encode(item.message)
                result.bytes_out += len(payload)
                await conn.publish(item.topic, payload)

        async def after_timer() -> None:
            take_events()
            await flush()

        async def consume() -> None:
            async for delivery in inbound:
                result.bytes_in += len(delivery.payload)
                try:
                    topic = topics.parse(delivery.topic)
                    message = codec.decode(delivery.payload)
                except RemoteProtocolError as error:
                    server.reject(delivery.topic[:300], "invalid", error)
                else:
                    server.receive(topic, message, loop.time())
                take_events()
                await flush()
                if done.is_set():
                    return

        if ready is not None:
            ready.set()
        if devices_ready is not None:
            await devices_ready
        server.start(loop.time())
        take_events()
        await flush()
        async with background(drive_timers(server, after_timer)), background(consume()):
            await done.wait()
        await publish_outbound(conn, server)
        finished = time.perf_counter()
        order = list(stage_started)
        for index, stage in enumerate(order):
            end = stage_started[order[index + 1]] if index + 1 < len(order) else finished
            result.stage_seconds[stage] = end - stage_started[stage]
        result.seconds = finished - started
        result.summary = server.summary()
    if result.aborted and raise_on_abort:
        raise SecureSumAborted(result.aborted)
    return result
