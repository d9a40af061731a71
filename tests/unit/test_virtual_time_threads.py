"""``tests/virtual_time.py``: the clock stands still while a thread started through the
loop works (``asyncio.to_thread``, ``loop.run_in_executor``).

Before, the loop saw no ready callback and no I/O while the thread ran, so it jumped the
clock to its next timer: a deadline of 1 virtual second around 50 ms of real work in a
thread fired at once, and a stream partition worker, which reconstructs in a thread at the
end of its stage, "hung" past a 600 virtual-second guard in a few milliseconds.
"""

from __future__ import annotations

import asyncio
import time

from tests.virtual_time import VirtualTimeLoop


async def _thread_inside_a_deadline() -> tuple[str, float]:
    loop = asyncio.get_running_loop()
    ticks: list[float] = []

    async def ticking() -> None:  # a timer due long before the thread's work is done
        while True:
            await asyncio.sleep(0.01)
            ticks.append(loop.time())

    ticker = asyncio.create_task(ticking())
    try:
        async with asyncio.timeout(1.0):
            result = await asyncio.to_thread(lambda: time.sleep(0.05) or "done")
    finally:
        ticker.cancel()
    return result, loop.time()


def test_the_clock_stands_still_while_a_thread_works():
    result, now = VirtualTimeLoop.run(_thread_inside_a_deadline())
    assert result == "done"
    assert now == 0.0  # 50 ms of the thread's work took no virtual time


def test_the_clock_moves_again_once_the_thread_is_done():
    async def after() -> float:
        await asyncio.to_thread(time.sleep, 0.01)
        await asyncio.sleep(2.5)
        return asyncio.get_running_loop().time()

    assert VirtualTimeLoop.run(after()) == 2.5
