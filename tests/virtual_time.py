"""An event loop on virtual time, for tests whose outcome depends on a deadline.

``VirtualTimeLoop.run(coro)`` runs ``coro`` on a selector event loop whose clock
(``loop.time()``, which every asyncio timer, ``asyncio.sleep``, ``asyncio.timeout`` and the
project's machine pumps read) stands still while the loop has work, and jumps to the next
timer only when nothing is ready to run and no I/O is pending. So a deadline of 0.3 s
fires after every message that could arrive before it has been handled, however slow or
busy the machine is: the test's outcome is the protocol's, not the scheduler's.

Only for code that runs inside the loop: the in-memory transport, or loopback sockets
whose both ends this loop serves (what one end writes is readable by the other at once;
``tests/unit/test_probe_broker.py``), no subprocesses and no outside broker. A
thread started through the loop (``asyncio.to_thread``, ``loop.run_in_executor``: a
collector's reconstruction at the end of its stage) counts as work: while one runs the
clock stands still and the loop waits for its result (it arrives through the loop's
self-pipe), so the thread's result is never judged late. Before, the clock raced on to
the next timers while the thread worked: a partition worker that reconstructs in a thread
"timed out" after 600 virtual seconds, in a few milliseconds of real time. A thread
started otherwise (``threading.Thread``, a process pool's own futures) is not seen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose ``time()`` advances only when the loop is idle."""

    def __init__(self) -> None:
        super().__init__()
        self._virtual_now = 0.0
        self._threads_working = 0  # executor jobs started and not yet done
        real_select = self._selector.select

        def select(timeout: float | None = None):
            ready = real_select(0)  # I/O that is already there: handle it first
            if ready or timeout == 0:
                return ready
            if timeout is None or self._threads_working:
                # no timer at all, or a thread at work (its result comes through the
                # self-pipe): only I/O can wake the loop, and the clock stands still
                return real_select(None)
            self._virtual_now += timeout  # idle until the next timer: jump to it
            return []

        self._selector.select = select

    def time(self) -> float:
        return self._virtual_now

    def run_in_executor(self, executor, func, *args):
        """As asyncio's; the clock stands still until the job is done (module docstring)."""
        future = super().run_in_executor(executor, func, *args)
        self._threads_working += 1
        future.add_done_callback(self._thread_done)
        return future

    def _thread_done(self, _future) -> None:
        self._threads_working -= 1

    @classmethod
    def run(cls, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` to completion on a fresh virtual-time loop, then close it."""
        loop = cls()
        try:
            return loop.run_until_complete(coro)
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
