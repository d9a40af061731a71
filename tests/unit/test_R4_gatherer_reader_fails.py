"""Helper R's review (round 4): the partitioned CADR coordinator's wait for its workers'
releases (``collector.cadr_partition.ReleaseGatherer.gathered``, through
``broker.pump.answer_of``) should end with the reader's error once the reader of the
status topic (``listen_to_workers``) failed — its connection lost — as
tests/unit/test_R3_answer_reader_fails.py pins for ``answer_of`` itself. But
``listen_to_workers`` clears ``gatherer.hold`` in its ``finally`` when it fails, so a
reader that failed before the wait began (during the θ search or the relay phases, which
take minutes) is no longer seen by ``answer_of`` (``hold()`` is None: nothing watched):
the DSR wait goes on to its deadline and then says "N partition(s) sent no releases"
instead of the lost connection. ``cadr_coordinator_side`` gathers the listening task with
``return_exceptions=True``, so its error is never reported at all."""

import asyncio

import pytest
from ldpfleet.broker.transport import ConnectionLost
from ldpfleet.collector.cadr_partition import ReleaseGatherer, listen_to_workers

from tests.virtual_time import VirtualTimeLoop

RUN = "r4-gather"
TIMEOUT = 600.0


class _DroppedConnection:
    """A subscribed connection whose broker goes away at t = 1."""

    def pending(self) -> int:
        return 0

    async def messages(self):
        await asyncio.sleep(1.0)
        raise ConnectionLost("the coordinator's status connection dropped")
        yield  # an async generator


def test_a_reader_that_failed_before_the_wait_fails_it_at_once():
    async def session() -> tuple[BaseException | None, float]:
        loop = asyncio.get_running_loop()
        gatherer = ReleaseGatherer(RUN, 2)
        reader = asyncio.create_task(listen_to_workers(_DroppedConnection(), gatherer))
        await asyncio.wait({reader})  # it failed during the θ search, say (t = 1)
        error: BaseException | None = None
        try:
            await gatherer.gathered(5, 1.0, TIMEOUT)
        except Exception as failure:
            error = failure
        await asyncio.gather(reader, return_exceptions=True)
        return error, loop.time()

    error, ended = VirtualTimeLoop.run(session())
    # the lost connection, at once (t = 1); not "2 partition(s) sent no releases within
    # 600 s" at t = 601
    assert isinstance(error, ConnectionLost), error
    assert ended == pytest.approx(1.0)
