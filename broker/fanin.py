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


class _Merge:
    """What ``fan_in``'s connections share: the deliveries received and not yet consumed
    (in arrival order, a lost connection's error in its place), the consumer's waiter, who
    waits for the consumer to have taken everything (``drained``), and the connections."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # a deque and one waiter instead of an asyncio.Queue (its put and get cost several
        # Python calls each, and the relay takes ~220,000 batches through here per
        # ego-Facebook run): the same order, the consumer woken once per burst
        self.merged: deque[Delivery | BaseException] = deque()
        self.waiter: asyncio.Future | None = None
        # who waits for the consumer to have taken everything received (``drained``): woken
        # when the consumer comes back for more and nothing is buffered anywhere
        self.drain_waiters: list[asyncio.Future] = []
        self.connections: list = []
        self.loop = loop

    def put(self, item: Delivery | BaseException) -> None:
        """Append ``item`` and wake the consumer if it waits."""
        self.merged.append(item)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def pull(self, conn) -> None:
        """Move every delivery of ``conn`` into the merged stream; a lost connection's
        error ends it (the consumer raises it)."""
        try:
            async with contextlib.aclosing(conn.messages()) as deliveries:
                async for delivery in deliveries:
                    self.put(delivery)
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # a lost connection ends the merged stream
            self.put(error)

    def pending(self) -> int:
        """Deliveries received and not yet consumed, here and in the connections' buffers."""
        return len(self.merged) + sum(conn.pending() for conn in self.connections)

    def wake_drained(self) -> None:
        """Release everyone waiting in ``drained``."""
        drain_waiters = self.drain_waiters
        while drain_waiters:
            future = drain_waiters.pop()
            if not future.done():
                future.set_result(None)

    async def deliveries(self) -> AsyncIterator[Delivery]:
        """The merged stream: every delivery in arrival order; a connection's error is
        raised in its place."""
        merged = self.merged
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
                if self.drain_waiters and self.pending() == 0:
                    self.wake_drained()
                self.waiter = self.loop.create_future()
                try:
                    await self.waiter
                finally:
                    self.waiter = None
        finally:
            self.wake_drained()  # the stream ended: nobody waits for a consumer that left

    async def drained(self) -> None:
        """Return once nothing received is left unconsumed and the consumer asked for
        the next delivery (it has handled every earlier one); at once if nothing is
        pending."""
        if self.pending() == 0:
            return
        future = self.loop.create_future()
        self.drain_waiters.append(future)
        await future


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
    merge = _Merge(asyncio.get_running_loop())
    async with contextlib.AsyncExitStack() as stack:
        for index, chunk in enumerate(chunks or [()]):
            conn = await stack.enter_async_context(transport.connect(f"{client_id}-{index}"))
            if chunk:
                await conn.subscribe(*chunk)
            merge.connections.append(conn)
        pullers = [asyncio.create_task(merge.pull(conn)) for conn in merge.connections]
        try:
            yield MergedDeliveries(merge.deliveries(), merge.pending, merge.drained)
        finally:
            merge.wake_drained()
            for task in pullers:
                task.cancel()
            await asyncio.gather(*pullers, return_exceptions=True)
