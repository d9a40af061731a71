"""``fan_in``: receive many devices' upstream messages without overflowing a broker queue.

Mosquitto's default ``max_queued_messages 1000`` silently drops QoS 1 messages queued for a
subscriber beyond 1,000 (docs/brokers.md). A service that all N devices answer at once (the
peer relay at every step, the secure-sum server at every stage, the DSR intake) would have
up to N messages queued on one connection. ``fan_in`` spreads the devices' exact topics
over ``ceil(N / per_connection)`` connections and merges what they receive into one
iterator. When each device has at most one message outstanding towards the service (it
waits for the service's answer before it sends again — true of all three), no connection
ever has more than ``per_connection`` (default 500) messages queued, whatever N is.
Subscribing exact topics is also cheaper than a wildcard on amqtt (DESIGN.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from ldpfleet.broker.transport import Delivery, Transport

__all__ = ["PER_CONNECTION", "fan_in"]

PER_CONNECTION = 500


class MergedDeliveries:
    """``fan_in``'s stream: every delivery of its connections in arrival order, how many
    are received and not yet consumed (``pending``, as a connection's), and ``drained``:
    wait until the consumer has taken them all."""

    def __init__(
        self,
        deliveries: AsyncIterator[Delivery],
        pending: Callable[[], int],
        drained: Callable[[], Awaitable[None]],
    ):
        self._deliveries = deliveries
        self.pending = pending
        self.drained = drained

    def __aiter__(self) -> MergedDeliveries:
        return self

    async def __anext__(self) -> Delivery:
        return await self._deliveries.__anext__()

    async def aclose(self) -> None:
        await self._deliveries.aclose()


@contextlib.asynccontextmanager
async def fan_in(
    transport: Transport,
    client_id: str,
    topics_by_device: Sequence[Sequence[str]],
    *,
    per_connection: int = PER_CONNECTION,
) -> AsyncIterator[MergedDeliveries]:
    """Subscribe every device's exact topics, at most ``per_connection`` devices per
    connection; yield one iterator of everything they receive (``MergedDeliveries``). The
    connections close when the block ends."""
    if per_connection < 1:
        raise ValueError(f"per_connection must be >= 1, got {per_connection}")
    chunks = [
        [topic for device in topics_by_device[i : i + per_connection] for topic in device]
        for i in range(0, len(topics_by_device), per_connection)
    ]
    # a deque and one waiter instead of an asyncio.Queue (its put and get cost several
    # Python calls each, and the relay takes ~220,000 batches through here per
    # ego-Facebook run): the same order, the consumer woken once per burst
    merged: deque[Delivery | BaseException] = deque()
    waiter: asyncio.Future | None = None
    # who waits for the consumer to have taken everything received (``drained``): woken
    # when the consumer comes back for more and nothing is buffered anywhere
    drain_waiters: list[asyncio.Future] = []
    loop = asyncio.get_running_loop()

    def put(item: Delivery | BaseException) -> None:
        merged.append(item)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async with contextlib.AsyncExitStack() as stack:
        connections = []
        for index, chunk in enumerate(chunks or [()]):
            conn = await stack.enter_async_context(transport.connect(f"{client_id}-{index}"))
            if chunk:
                await conn.subscribe(*chunk)
            connections.append(conn)

        async def pull(conn) -> None:
            try:
                async with contextlib.aclosing(conn.messages()) as deliveries:
                    async for delivery in deliveries:
                        put(delivery)
            except asyncio.CancelledError:
                raise
            except BaseException as error:  # a lost connection ends the merged stream
                put(error)

        pullers = [asyncio.create_task(pull(conn)) for conn in connections]

        def pending() -> int:
            return len(merged) + sum(conn.pending() for conn in connections)

        def wake_drained() -> None:
            while drain_waiters:
                future = drain_waiters.pop()
                if not future.done():
                    future.set_result(None)

        async def merged_deliveries() -> AsyncIterator[Delivery]:
            nonlocal waiter
            try:
                while True:
                    while merged:
                        item = merged.popleft()
                        if isinstance(item, BaseException):
                            raise item
                        yield item
                    # the consumer is back for more and has fed everything it took; a
                    # connection's buffer that is not empty reaches ``merged`` through
                    # its puller, and the consumer comes back here after it
                    if drain_waiters and pending() == 0:
                        wake_drained()
                    waiter = loop.create_future()
                    try:
                        await waiter
                    finally:
                        waiter = None
            finally:
                wake_drained()  # the stream ended: nobody waits for a consumer that left

        async def drained() -> None:
            """Return once nothing received is left unconsumed and the consumer asked for
            the next delivery (it has handled every earlier one); at once if nothing is
            pending."""
            if pending() == 0:
                return
            future = loop.create_future()
            drain_waiters.append(future)
            await future

        try:
            yield MergedDeliveries(merged_deliveries(), pending, drained)
        finally:
            wake_drained()
            for task in pullers:
                task.cancel()
            await asyncio.gather(*pullers, return_exceptions=True)
