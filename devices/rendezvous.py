"""The fleet's side of the run rendezvous: wait for the collector's retained announcement.

A thin pump over ``protocol.rendezvous.RunWaiter`` (the theory of operation is there):
``wait_for_run`` connects, subscribes to ``ldp/{run}/ctl/run`` (the broker hands over the
retained announcement at once if the collector came first), feeds every decodable
announcement to the waiter with the loop's time, subscribes again whenever the waiter asks
(``Resubscribe``), and ends with the waiter's decision: the epoch of the run it opened, or
``RunNotAnnounced`` / ``RunTermsDiffer`` with the waiter's sentence. Undecodable payloads
and empty ones (a cleared retained message) are ignored.

Wait on a connection to the broker itself, not through a ``devices.gateway.Gateway``: a
gateway that already holds the subscription upstream does not get the retained message
again. Any identity that may subscribe to ``ldp/{run}/ctl/run`` will do (every role may).
"""

from __future__ import annotations

import asyncio
import contextlib

from ldpfleet.broker.transport import ConnectionLost, Transport
from ldpfleet.protocol import codec
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.rendezvous import (
    Resubscribe,
    RunOpened,
    RunRefused,
    RunTerms,
    RunWaiter,
    RunWaitTimedOut,
)

__all__ = ["RendezvousError", "RunNotAnnounced", "RunTermsDiffer", "wait_for_run"]


class RendezvousError(Exception):
    """The fleet cannot start its run (the message is one sentence saying why)."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


class RunNotAnnounced(RendezvousError):
    """No collector announced the run before the timeout."""


class RunTermsDiffer(RendezvousError):
    """The collector announced the run on other terms; ``field`` is the first that
    differs (``ours`` / ``theirs`` its two values)."""

    def __init__(
        self, sentence: str, field: str, ours: object = None, theirs: object = None
    ) -> None:
        super().__init__(sentence)
        self.field = field
        self.ours = ours
        self.theirs = theirs


async def wait_for_run(
    transport: Transport,
    run: str,
    terms: RunTerms,
    *,
    client_id: str,
    timeout: float,
    resubscribe_every: float = 5.0,
    username: str | None = None,
    password: str | None = None,
) -> int:
    """Wait until the collector of ``run`` announces it on ``terms``; return its epoch.

    Raises ``RunNotAnnounced`` after ``timeout`` seconds without a usable announcement,
    ``RunTermsDiffer`` if the announcement's terms differ, and ``TransportError`` if the
    connection fails (no reconnection: the caller may simply wait again)."""
    waiter = RunWaiter(run, terms, timeout=timeout, resubscribe_every=resubscribe_every)
    loop = asyncio.get_running_loop()
    async with transport.connect(client_id, username=username, password=password) as conn:
        await conn.subscribe(waiter.topic)
        waiter.start(loop.time())
        deliveries = conn.messages()
        # one pending read kept across timer wake-ups (cancelling a read would end the
        # connection's delivery iterator)
        reading: asyncio.Future | None = None
        try:
            while True:
                for event in waiter.pop_events():
                    if isinstance(event, RunOpened):
                        return event.epoch
                    if isinstance(event, RunRefused):
                        raise RunTermsDiffer(event.sentence, event.field, event.ours, event.theirs)
                    if isinstance(event, RunWaitTimedOut):
                        raise RunNotAnnounced(event.sentence)
                    if isinstance(event, Resubscribe):
                        await conn.subscribe(event.topic)
                if reading is None:
                    reading = asyncio.ensure_future(anext(deliveries))
                deadline = waiter.next_timer()
                pause = None if deadline is None else max(0.0, deadline - loop.time())
                done, _ = await asyncio.wait((reading,), timeout=pause)
                if not done:
                    waiter.handle_timer(loop.time())
                    continue
                finished, reading = reading, None
                try:
                    delivery = finished.result()
                except StopAsyncIteration:
                    raise ConnectionLost(
                        f"{client_id}: the connection closed while waiting for run {run}"
                    ) from None
                if delivery.topic != waiter.topic or not delivery.payload:
                    continue  # not ours, or a cleared retained message
                try:
                    message = codec.decode(delivery.payload)
                except RemoteProtocolError as error:
                    waiter.receive_undecodable(error, loop.time())  # another release's?
                    continue
                waiter.receive(message, loop.time())
        finally:
            if reading is not None:
                reading.cancel()
                with contextlib.suppress(BaseException):
                    await reading
            with contextlib.suppress(Exception):
                await deliveries.aclose()
