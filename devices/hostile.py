"""A hostile client: garbage, oversize payloads, NaN/inf, replays, wrong-sender messages.

``flood`` builds the attack around one genuine report of a device (as it was published):
each kind of bad input in a fixed, shuffled order, with the exact ``rejections_by_reason``
the collector must count for it. ``HostileClient`` is the side task of a run with
``[faults] hostile_messages``: it waits for device ``d0000``'s first batch, waits until the
collector has it (so a changed copy is a replay), publishes the flood at full speed, and
waits until the collector has handled it. It connects with the run's ``admin`` identity
when auth is on: it models what got past the broker's ACL (a compromised device, a broker
without ACLs); with the ACL in force a device cannot publish on another's topics at all.

Partitions (``[collector] partitions = P > 1``, DESIGN.md "Scale"): each message goes to the
partition subtree of the device its topic names (``d0000``'s, or the unknown ``intruder``'s),
so the worker of that partition receives, rejects and counts it; the merge sums the counts.
In a partitioned run of separate processes fleet shard 0 attacks (``attack_over_broker``:
it learns that the collector holds ``d0000``'s first batch from that batch's
acknowledgement) and each worker holds its own stage open until it has handled its share
of the flood (``hold_for_flood``, ``flood_share``), as the in-process attacker holds the
one collector's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import numpy as np
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import Ack
from ldpfleet.protocol.stream import StreamConfig

# reason key -> share of the flood (the identical replays come on top: duplicates)
DEFAULT_PLAN = {
    "undecodable": 1000,
    "oversize": 5,
    "non_finite": 1000,
    "replay": 200,
    "wrong_sender": 500,
    "out_of_range": 600,
    "parameter_mismatch": 200,
    "unknown_sender": 200,
    "schema": 100,
}
DEFAULT_REPLAYS = 500
TARGET = "d0000"
HOLD = "hostile flood"  # the name of the attacker's hold on the stream stage
INTRUDER = "intruder"  # the unknown device the ``unknown_sender`` messages claim to be
HOLD_POLL = 0.005  # seconds between two looks at a holding collector's counters


def flood_plan(messages: int | None = None) -> tuple[dict[str, int], int]:
    """(rejections by reason, identical replays) of a flood of about ``messages`` messages
    (the default plan when None): what ``flood`` publishes, without building it."""
    scale = 1.0 if messages is None else messages / (sum(DEFAULT_PLAN.values()) + DEFAULT_REPLAYS)
    counts = {reason: max(1, round(n * scale)) for reason, n in DEFAULT_PLAN.items()}
    counts["oversize"] = min(counts["oversize"], 5)  # 256 kB each: a few make the point
    return counts, max(1, round(DEFAULT_REPLAYS * scale))


def flood_target(reason: str) -> str:
    """The device whose topic a flood message of ``reason`` is published on."""
    return INTRUDER if reason == "unknown_sender" else TARGET


def flood_share(
    messages: int | None, partitions: int = 1, partition: int | None = None
) -> tuple[int, int]:
    """(rejections, identical replays) of the flood that reach ``partition``'s worker (the
    whole flood for ``partition=None`` or one partition)."""
    counts, replays = flood_plan(messages)

    def mine(device: str) -> bool:
        return partition is None or topics.partition_of(device, partitions) == partition

    rejections = sum(n for reason, n in counts.items() if mine(flood_target(reason)))
    return rejections, replays if mine(TARGET) else 0


async def hold_for_flood(collector, rejections: int, replays: int) -> bool | None:
    """Hold ``collector``'s stream stage open (the stage deadline still ends it) until it
    has counted ``rejections`` rejections and ``replays`` duplicates; returns whether it
    did before the stage closed (None: nothing of the flood is this collector's)."""
    if not rejections and not replays:
        return None
    await collector.subscribed.wait()
    collector.hold_stage(HOLD)
    try:
        machine = collector.machine
        while machine.state == "open":
            if machine.rejected >= rejections and machine.duplicates >= replays:
                return True
            await asyncio.sleep(HOLD_POLL)
        return False
    finally:
        collector.release_stage(HOLD)


def flood(
    config: StreamConfig, genuine: bytes, *, messages: int | None = None, seed: int = 8
) -> tuple[list[tuple[str, bytes]], dict[str, int], int]:
    """(topic, payload) messages in a fixed shuffled order, the exact
    ``rejections_by_reason`` they produce, and how many are identical replays (counted as
    duplicates, not rejections: they cannot be told from an honest retransmission).
    ``messages`` scales the default plan (4,305 rejections + 500 replays) to about that
    many in all."""
    rng = np.random.default_rng(seed)
    run = config.run
    counts, replays = flood_plan(messages)
    report = json.loads(genuine)
    up = topics.up(run, TARGET, "sw_report", config.partition(TARGET))

    def variant(**changes) -> bytes:
        return json.dumps({**report, **changes}).encode()

    values = report["values"]
    bad_values = [*values[:-1], 99.0]
    changed = _changed_values(config, values)
    makers = {
        "undecodable": (lambda i: b"\xff" + bytes(rng.integers(128, 256, 40).tolist()), up),
        "oversize": (lambda i: b"{" + b" " * codec.MAX_PAYLOAD + b"}", up),
        "non_finite": (None, up),  # NaN literals and numbers overflowing to infinity
        "replay": (lambda i: variant(values=changed), up),  # same batch, other values
        "wrong_sender": (lambda i: variant(sender="d0001"), up),
        "out_of_range": (  # values outside the SW domain, seq or t0 wrong
            lambda i: [variant(values=bad_values), variant(seq=999), variant(t0=1)][i % 3],
            up,
        ),
        "parameter_mismatch": (lambda i: variant(**_mismatch(config)), up),
        "unknown_sender": (
            lambda i: variant(sender=INTRUDER),
            topics.up(run, INTRUDER, "sw_report", config.partition(INTRUDER)),
        ),
        "schema": (lambda i: variant(type="teleport"), up),
    }
    text = genuine.decode()
    first = json.dumps(values[0])
    out: list[tuple[str, bytes]] = []
    for reason, count in counts.items():
        make, topic = makers[reason]
        for i in range(count):
            if reason == "non_finite":
                token = "NaN" if i % 2 else "1e999"
                payload = text.replace(f"[{first}", f"[{token}", 1).encode()
            else:
                payload = make(i)
            out.append((topic, payload))
    out += [(up, genuine)] * replays
    order = rng.permutation(len(out))
    return [out[i] for i in order], counts, replays


def _changed_values(config: StreamConfig, values: list[float]) -> list[float]:
    """The batch with one value changed inside the mechanism's output domain (a replay of
    the batch with other values, refused as ``replay``, not as ``out_of_range``): the first
    two swapped, or, when they are equal, the first replaced by the first in-domain
    candidate that differs from it (the domain's low end, its high end, 0, 1)."""
    if values[0] != values[1]:
        return [values[1], values[0], *values[2:]]
    mechanism = config.mechanism_object()  # raw: eps0 = 0, no Square Wave can be built
    low, high = getattr(mechanism, "output_low", 0.0), getattr(mechanism, "output_high", 1.0)
    for candidate in (low, high, 0.0, 1.0):
        inside = np.asarray(mechanism.in_domain(np.array([candidate]))).all()
        if candidate != values[0] and inside:
            return [float(candidate), *values[1:]]
    raise ValueError(f"no in-domain value other than {values[0]!r} for {config.mechanism}")


def _mismatch(config: StreamConfig) -> dict:
    """A field change the collector refuses as ``parameter_mismatch``: ``eps0`` doubled,
    or — for a raw stream, whose ``eps0`` is 0 (doubled: the same report, a duplicate) —
    another window ``w``."""
    if 0.0 < config.eps0 * 2 <= 50.0:
        return {"eps0": config.eps0 * 2}
    return {"w": config.w + 1 if config.w < 100_000 else config.w - 1}


class HostileClient:
    """The ``[faults] hostile_messages`` attacker: a run's side task in one process
    (``__call__``), or fleet shard 0's task in a partitioned run of processes
    (``over_broker``)."""

    def __init__(self, config: StreamConfig, messages: int | None = None) -> None:
        self.config = config
        self.messages = messages
        self.sent = 0
        self.replays = 0
        self.expected: dict[str, int] = {}
        self.handled = False  # the collector counted the whole flood before closing
        self.ready = asyncio.Event()  # subscribed to the target's reports

    async def __call__(self, transport: Transport, run: str, collector) -> None:
        # The stage must not close before the flood is handled, however slowly this
        # machine runs: hold it open (the stage deadline still ends it) until we are done.
        collector.hold_stage(HOLD)
        try:
            async with transport.connect(f"{run}-attacker") as conn:
                deliveries = await self._listen(conn, run)
                genuine = (await anext(deliveries)).payload  # d0000's first batch
                while not collector.machine.devices[TARGET].received:
                    await asyncio.sleep(0.001)  # the collector has it: a changed copy is a replay
                await self._publish(conn, genuine)
                total = sum(self.expected.values())
                machine = collector.machine
                while machine.state == "open":  # until the collector has handled the flood
                    if machine.rejected >= total and machine.duplicates >= self.replays:
                        self.handled = True
                        return
                    await asyncio.sleep(0.001)
        finally:
            collector.release_stage(HOLD)

    async def over_broker(self, transport: Transport, run: str) -> None:
        """The attack without the collector in this process: an acknowledgement covering
        the ``d0000`` batch it heard first says the collector holds that batch; the workers
        hold their stages (``hold_for_flood``) and report whether they handled their share
        (``handled`` stays False here)."""
        async with transport.connect(f"{run}-attacker") as conn:
            inbox = topics.inbox(run, TARGET, topics.COLLECTOR_ID, self.config.partition(TARGET))
            await conn.subscribe(inbox)
            deliveries = await self._listen(conn, run)
            genuine, acked = None, -1  # the first report heard; the highest ack seen
            while genuine is None or acked < json.loads(genuine)["seq"]:
                delivery = await anext(deliveries)
                if delivery.topic != inbox:
                    genuine = genuine or delivery.payload
                    continue
                with contextlib.suppress(RemoteProtocolError):
                    ack = codec.decode(delivery.payload)
                    if isinstance(ack, Ack):
                        acked = max(acked, ack.seq)  # every batch up to seq is persisted
            await self._publish(conn, genuine)

    async def _listen(self, conn, run: str):
        """Subscribe to ``d0000``'s reports; the fleet may start once this returns."""
        await conn.subscribe(topics.up(run, TARGET, "sw_report", self.config.partition(TARGET)))
        self.ready.set()  # the fleet starts only now: no batch is missed
        return conn.messages()

    async def _publish(self, conn, genuine: bytes) -> None:
        messages, self.expected, self.replays = flood(self.config, genuine, messages=self.messages)
        for start in range(0, len(messages), 250):
            await conn.publish_many(messages[start : start + 250])
            self.sent += len(messages[start : start + 250])

    def summary(self) -> dict:
        """The injected attack, for results.json ``faults``."""
        return {
            "messages": self.sent,
            "by_reason": dict(self.expected),
            "identical_replays": self.replays,
            "handled_before_close": self.handled,
        }
