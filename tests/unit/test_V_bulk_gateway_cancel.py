"""A bulk gateway's wait for its next delivery never swallows a cancellation (helper V).

Ctrl-C on a bulk run: the runner SIGTERMs its gateway shards, whose handler cancels the
main task (``scenarios.shards.cancelled_on_sigterm``). The gateway waited with
``asyncio.wait_for(queue.get(), timeout)``, which on Python 3.11 returns the item when the
cancellation lands just as ``queue.get()`` completed (CPython gh-86296): the shard went on
and was killed by ``STOP_GRACE`` 60 s later (measured: 2 of 7 Ctrl-Cs, 60.3 s). The test
builds exactly that interleaving, without any clock."""

import asyncio
import sys

import pytest
from ldpfleet.devices.bulk_gateway import next_delivery


async def _cancel_as_the_item_arrives(wait) -> tuple[bool, object]:
    queue: asyncio.Queue = asyncio.Queue()
    got: list = []

    async def gateway() -> None:
        got.append(await wait(queue, 5.0))
        await asyncio.Event().wait()  # what a gateway waiting for acks does: forever

    task = asyncio.ensure_future(gateway())
    await asyncio.sleep(0)  # the gateway waits on the empty queue
    queue.put_nowait("delivery")
    while not queue.empty():  # until the get took the item (wait_for: its inner task)
        await asyncio.sleep(0)
    task.cancel()  # before the gateway's own task resumed
    done, _ = await asyncio.wait({task}, timeout=1.0)
    cancelled = bool(done) and task.cancelled()
    if not done:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return cancelled, got


def test_next_delivery_is_cancelled_even_as_the_item_arrives():
    cancelled, _ = asyncio.run(_cancel_as_the_item_arrives(next_delivery))
    assert cancelled


def test_next_delivery_times_out_and_returns_items():
    async def main():
        queue: asyncio.Queue = asyncio.Queue()
        with pytest.raises(TimeoutError):
            await next_delivery(queue, 0.0)
        queue.put_nowait("x")
        return await next_delivery(queue, None)

    assert asyncio.run(main()) == "x"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="wait_for was fixed in 3.12")
def test_wait_for_swallowed_it_on_python_3_11():
    async def old(queue, timeout):
        return await asyncio.wait_for(queue.get(), timeout)

    cancelled, got = asyncio.run(_cancel_as_the_item_arrives(old))
    assert not cancelled and got == ["delivery"]
