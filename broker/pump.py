"""Pieces shared by every thin asyncio pump (device agents, the collector).

A pump owns a connection and a protocol machine. It decodes deliveries, feeds the
machine with ``loop.time()`` as ``now``, publishes the machine's outbox, and wakes the
machine at its ``next_timer()``. No protocol decision lives here.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ldpfleet.broker.transport import Connection
from ldpfleet.protocol import codec
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.events import Event, Machine, Outbound

T = TypeVar("T")


async def publish_outbound(conn: Connection, machine: Machine) -> int:
    """Publish everything in the machine's outbox, in order; return how many messages.

    An item with ``retain`` is published on its own with the retain flag (``publish_many``
    has none); the others go together. ``retain`` is only passed when set, so connections
    of tests that predate it keep working."""
    outbound = machine.pop_outbound()
    if not outbound:
        return 0
    if len(outbound) == 1:
        first = outbound[0]
        if first.retain:
            await conn.publish(first.topic, codec.encode(first.message), retain=True)
        else:
            await conn.publish(first.topic, codec.encode(first.message))
    elif not any(o.retain for o in outbound):
        await conn.publish_many((o.topic, codec.encode(o.message)) for o in outbound)
    else:
        await _publish_in_order(conn, outbound)
    return len(outbound)


async def _publish_in_order(conn: Connection, outbound: list[Outbound]) -> None:
    """Runs of plain messages through ``publish_many``, each retained one by itself."""
    plain: list[tuple[str, bytes]] = []
    for item in outbound:
        if not item.retain:
            plain.append((item.topic, codec.encode(item.message)))
            continue
        if plain:
            await conn.publish_many(plain)
            plain = []
        await conn.publish(item.topic, codec.encode(item.message), retain=True)
    if plain:
        await conn.publish_many(plain)


# how often ``drive_timers`` re-checks a held deadline when the buffer has no ``drained``
HOLD_POLL = 0.01


async def drive_timers(
    machine: Machine,
    after_timer: Callable[[], Awaitable[None]],
    *,
    max_sleep: float = 1.0,
    wake: asyncio.Event | None = None,
    inputs_queued: Callable[[], int] | None = None,
    inputs_drained: Callable[[], Awaitable[None]] | None = None,
    max_hold: float | None = None,
) -> None:
    """Call ``machine.handle_timer`` at its deadlines until cancelled.

    Re-reads ``next_timer()`` at least every ``max_sleep`` seconds, since other inputs move
    deadlines, or, with ``wake``, whenever the pump sets it after an input (then
    ``max_sleep`` can be long: 50,000 device agents polling every second spent half of a
    process's CPU waking up, measured with py-spy). Machine calls are synchronous, so they
    never interleave with the pump's. With ``inputs_queued`` (a connection's ``pending``),
    a deadline that passed while inputs wait in the connection's buffer fires only once
    the pump has fed them: a reply that arrived in time is not judged late because the
    process was too busy to read it (a starved collector's secure sum counted devices
    whose replies sat in its buffer as dropouts). ``inputs_drained`` (the fan-in's
    ``MergedDeliveries.drained``) is then awaited: it returns once the pump has taken every
    queued input, and the deadline is judged again; without it the hold re-checks every
    ``HOLD_POLL`` seconds (a buffer that cannot say when it is drained). Before a passed
    deadline fires with nothing queued, the loop first reads its sockets
    (``_sockets_read``): a process stopped or starved while this check was already due
    resumes with the check before any read, and judged the replies that reached its
    sockets meanwhile as missing (ego-Facebook with the collector stopped 60 s: "share
    stage: only 1929 of 4039 devices sent their shares", nothing queued at the check).
    ``max_hold`` (seconds) bounds the hold: a deadline fires at most that long after it
    passed, inputs queued or not, so a buffer that never empties (a flood of messages that
    each cost the pump a round trip) cannot keep a wait open for ever (None: no bound).
    """
    if max_hold is not None and not (math.isfinite(max_hold) and max_hold >= 0):
        raise ParameterError(  # NaN or inf would hold a deadline for ever
            f"must be None or a finite number >= 0, got {max_hold!r}",
            field="max_hold",
            limit="None or a finite number >= 0",
            value=max_hold,
        )
    loop = asyncio.get_running_loop()
    sockets_read = False  # since the deadline was found passed
    held_out: float | None = None  # a deadline held for ``max_hold`` already
    while True:
        deadline = machine.next_timer()
        now = loop.time()
        if deadline is not None and deadline <= now:
            if inputs_queued is not None and deadline != held_out and inputs_queued() > 0:
                # the pump reads them first (and may move the deadline)
                until = None if max_hold is None else deadline + max_hold
                try:
                    async with asyncio.timeout_at(until):
                        if inputs_drained is not None:
                            await inputs_drained()
                        else:
                            await asyncio.sleep(HOLD_POLL)
                except TimeoutError:
                    held_out = deadline  # held ``max_hold``: it fires now, queued or not
                sockets_read = False  # read again after the hold, before judging
                continue
            if inputs_queued is not None and not sockets_read:
                await _sockets_read()
                sockets_read = True
                continue
            machine.handle_timer(now)
            sockets_read = False
            await after_timer()
            continue
        sockets_read = False
        pause = max_sleep if deadline is None else min(max_sleep, deadline - now)
        if wake is None:
            await asyncio.sleep(pause)
            continue
        wake.clear()
        try:
            async with asyncio.timeout(pause):
                await wake.wait()
        except TimeoutError:
            pass


class InputHold:
    """A reader's buffer as ``drive_timers`` holds a passed deadline on it: ``queued`` (the
    buffer's ``pending``) and ``drained`` (its ``drained``, or a ``HOLD_POLL`` pause for a
    plain connection, which has none), both given up once the reader task stopped.

    A pump hands ``inputs_queued=hold.queued, inputs_drained=hold.drained`` to
    ``drive_timers``: a reply that arrived in time is fed before the machine judges it
    missing, however busy the process. The reader's end releases the hold: a reader that
    failed (its connection lost) leaves inputs queued that nobody will feed, and the
    deadline must then fire rather than wait for ever (a stage that never ends)."""

    def __init__(self, inbound: object, reader: asyncio.Future) -> None:
        self.inbound = inbound  # a connection or ``fan_in``'s ``MergedDeliveries``
        self.reader = reader  # the task that feeds the machine what ``inbound`` buffers

    def queued(self) -> int:
        """Inputs buffered and not yet fed (0 once the reader stopped)."""
        return 0 if self.reader.done() else self.inbound.pending()

    async def drained(self) -> None:
        """Return once the reader fed every buffered input, or stopped."""
        drained = getattr(self.inbound, "drained", None)
        waiter = asyncio.ensure_future(
            drained() if drained is not None else asyncio.sleep(HOLD_POLL)
        )
        try:
            await asyncio.wait((waiter, self.reader), return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()


async def answer_of(
    machine: Machine,
    changed: asyncio.Event,
    hold: Callable[[], InputHold | None],
    max_hold: float | None,
) -> Event:
    """The answer of ``machine``'s pending wait (its last event, once it has any): an
    input ended it (the pump sets ``changed`` after each one it fed) or its deadline,
    driven meanwhile by ``drive_timers`` and held while ``hold()`` reports inputs queued,
    at most ``max_hold`` seconds past it. ``hold`` is read at each check: the reader may
    start after the wait began, and stop before it ends (None: nothing to hold on). A
    reader that fails meanwhile raises its error at once; one that ends cleanly is no
    longer watched (the deadline still answers)."""

    async def after_timer() -> None:
        changed.set()

    def queued() -> int:
        current = hold()
        return 0 if current is None else current.queued()

    async def drained() -> None:
        current = hold()
        if current is not None:
            await current.drained()

    timers = drive_timers(
        machine, after_timer, inputs_queued=queued, inputs_drained=drained, max_hold=max_hold
    )
    async with background(timers) as timer_task:
        while not (answers := machine.pop_events()):
            changed.clear()
            # the reader too: one that failed (its connection lost) fails the wait at
            # once, not at the machine's deadline (helper R's review, 2026-12-07)
            current = hold()
            readers = () if current is None else (current.reader,)
            await unless_failed(changed.wait(), timer_task, *readers)
    return answers[-1]


async def unless_failed(waiting: Awaitable[T], *workers: asyncio.Future) -> T:
    """Await ``waiting``, but raise at once the error of any of ``workers`` (a pump's
    background tasks: its timers, its reader) that fails meanwhile: a wait whose timers
    died (a machine's ``handle_timer`` raised) would otherwise hang until something else
    ended it. A worker that ends without an error is no longer watched."""
    waiter = asyncio.ensure_future(waiting)
    watched = set(workers)
    try:
        while not waiter.done():
            await asyncio.wait({waiter, *watched}, return_when=asyncio.FIRST_COMPLETED)
            for worker in [w for w in watched if w.done()]:
                watched.discard(worker)
                if not worker.cancelled() and worker.exception() is not None:
                    raise worker.exception()  # type: ignore[misc]
    finally:
        waiter.cancel()
    return waiter.result()


async def changed_unless_failed(changed: asyncio.Event, *workers: asyncio.Future) -> None:
    """Await ``changed`` (a pump's "the machine moved"), but raise at once the error of any
    of ``workers`` that fails meanwhile, as ``unless_failed`` does; the caller clears
    ``changed`` and re-checks its condition after each return, as for ``changed.wait()``.

    Unlike ``unless_failed`` the caller's task awaits ``changed`` itself (a worker's end
    sets it through a done callback): the common path takes the loop turns of
    ``changed.wait()`` and no more, so where other tasks race this one within one instant
    of virtual time (the partition coordinator's ``run closed`` and a worker's repeated
    ``closed``) they finish in the order they did before. A worker that ended without an
    error sets ``changed`` once and is no longer watched; a cancelled one is not a failure.
    """
    _raise_failed(workers)
    running = [w for w in workers if not w.done()]

    def wake(_: asyncio.Future) -> None:
        changed.set()

    for worker in running:
        worker.add_done_callback(wake)
    try:
        await changed.wait()
    finally:
        for worker in running:
            worker.remove_done_callback(wake)
    _raise_failed(workers)


def _raise_failed(workers) -> None:
    """Raise the error of the first of ``workers`` that failed (not cancelled)."""
    for worker in workers:
        if worker.done() and not worker.cancelled() and worker.exception() is not None:
            raise worker.exception()  # type: ignore[misc]


async def _sockets_read() -> None:
    """Return after the loop has polled its sockets and run their read callbacks: two loop
    turns (a task resumed by ``sleep(0)`` runs before the callbacks of the ``select`` of
    that turn, and after them in the next)."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def cancel_all(tasks) -> None:
    """Cancel ``tasks`` and wait for them all, collecting every outcome (a task failing as
    its connection closes is not logged as "Task exception was never retrieved")."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@contextlib.asynccontextmanager
async def background(coro: Awaitable[None]):
    """Run ``coro`` as a task for the duration of the block, then cancel it."""
    task = asyncio.ensure_future(coro)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
