"""An event loop on virtual time, for tests whose outcome depends on a deadline.

``VirtualTimeLoop.run(coro)`` runs ``coro`` on a selector event loop whose clock
(``loop.time()``, which every asyncio timer, ``asyncio.sleep``, ``asyncio.timeout`` and the
project's machine pumps read) stands still while the loop has work, and jumps to the next
timer only when nothing is ready to run and no I/O is pending. So a deadline of 0.3 s
fires after every message that could arrive before it has been handled, however slow or
busy the machine is: the test's outcome is the protocol's, not the scheduler's.

Only for code that runs wholly inside the loop (the in-memory transport, no threads, no
subprocesses): a thread's result would arrive after the clock has jumped past it.
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
        real_select = self._selector.select

        def select(timeout: float | None = None):
            ready = real_select(0)  # I/O that is already there: handle it first
            if ready or timeout == 0:
                return ready
            if timeout is None:  # no timer at all: only I/O can wake the loop
                return real_select(None)
            self._virtual_now += timeout  # idle until the next timer: jump to it
            return []

        self._selector.select = select

    def time(self) -> float:
        return self._virtual_now

    @classmethod
    def run(cls, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` to completion on a fresh virtual-time loop, then close it."""
        loop = cls()
        try:
            return loop.run_until_complete(coro)
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
