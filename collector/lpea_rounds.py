"""``run_lpea_rounds``: the collector's side of private LPEA (``protocol.lpea``).

The devices negotiate kept edges among themselves (``devices.lpea_agent``); the collector
only paces the rounds. For each round ``r`` it broadcasts ``LpeaRound(round=r)`` on
``topics.ctl(run, "lpea_round")`` and waits until *every* device reported
``LpeaDone(round=r)`` on ``topics.up(run, device, "lpea_done")``. Every device being done
means no LPEA message of round ``r`` is in flight (each in-flight message has a sender or
recipient that still waits for it, see ``protocol.lpea``), so round ``r + 1`` may start. The
run stops when a round adds no edge (the sum of the devices' ``added``) or after
``max_rounds``; a final ``LpeaRound(finished=True)`` tells the agents to leave.

The two control messages live with the LPEA messages (``protocol.lpea``) and travel
through the one codec.

Privacy: the pacer learns each device's per-round ``added`` count, and over
per-neighbour topics the broker sees the whole negotiation. The CADR-LDP fleet therefore
does not use this path: its rounds are paced by the batching relay of the message layer
(``protocol.peer_relay``), and the collector learns only the per-round sums. This
per-message path stays as the unbatched alternative (tested on the in-memory transport).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable

from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.lpea import LpeaRound, admit_round_report

__all__ = ["run_lpea_rounds"]


async def run_lpea_rounds(
    transport: Transport,
    run: str,
    devices: list[str],
    *,
    max_rounds: int = 50,
    ready: asyncio.Event | None = None,
    devices_ready: Awaitable[object] | None = None,
) -> dict:
    """Pace LPEA rounds until one adds no edge (or ``max_rounds``). ``ready`` is set once
    the collector listens; round 0 starts after ``devices_ready`` completes (every agent
    subscribed: one that is not listening misses the round broadcast).

    Returns ``{"rounds", "added_per_round", "seconds", "refused"}``.
    """
    topics.check_ident(run, "run")
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
    members = set(devices)
    clock = asyncio.get_running_loop().time  # the loop's clock (virtual in tests)
    started = clock()
    added_per_round: list[int] = []
    refused = 0
    seq = 0
    control = topics.ctl(run, "lpea_round")
    async with transport.connect(f"{run}-collector-lpea") as conn:
        await conn.subscribe(*(topics.up(run, d, "lpea_done") for d in sorted(members)))
        if ready is not None:
            ready.set()
        if devices_ready is not None:
            await devices_ready
        async with contextlib.aclosing(conn.messages()) as deliveries:
            stream = aiter(deliveries)
            for r in range(max_rounds):
                seq += 1
                start = LpeaRound(run=run, sender=topics.COLLECTOR_ID, seq=seq, round=r)
                await conn.publish(control, codec.encode(start))
                waiting = set(members)
                added = 0
                while waiting:
                    try:
                        delivery = await anext(stream)
                    except StopAsyncIteration:
                        raise ConnectionError(f"{run}: collector connection closed") from None
                    try:
                        topic = topics.parse(delivery.topic)
                        message = admit_round_report(
                            topic, codec.decode(delivery.payload), run, r, waiting
                        )
                    except RemoteProtocolError:
                        refused += 1  # wrong type, run or sender, stale or duplicate
                        continue
                    waiting.discard(message.sender)
                    added += message.added
                added_per_round.append(added)
                if added == 0:
                    break
        seq += 1
        final = LpeaRound(
            run=run,
            sender=topics.COLLECTOR_ID,
            seq=seq,
            round=len(added_per_round),
            finished=True,
        )
        await conn.publish(control, codec.encode(final))
    return {
        "rounds": len(added_per_round),
        "added_per_round": added_per_round,
        "seconds": clock() - started,
        "refused": refused,
    }
