"""Helper R's review (round 3): ``broker.pump.answer_of`` (the CADR collector's DSR-stage and
relay-phase waits, ``collector.cadr_fleet._CadrRun._answer``, and the partitioned
coordinator's ``ReleaseGatherer``) watches its timer task only. When the reader that feeds
the machine fails (its connection lost), the hold is released but the wait goes on to the
machine's deadline: ``stage_timeout`` (600 s by default) for the DSR stage, ten of them
for a relay phase, and then answers "N release(s) missing" instead of the reader's error.
``unless_failed`` and ``coordinate_stream`` raise a failed reader's error at once."""

import asyncio

import pytest
from ldpfleet.broker.pump import InputHold, answer_of
from ldpfleet.broker.transport import ConnectionLost
from ldpfleet.protocol.cadr_collect import DsrIntake
from ldpfleet.protocol.cadr_dsr_stage import DsrStage

from tests.virtual_time import VirtualTimeLoop

RUN = "r3-answer"
MEMBERS = ["n1", "n2"]


class _Empty:
    """An inbound buffer with nothing in it."""

    def pending(self) -> int:
        return 0


def test_a_failed_reader_fails_the_wait_at_once():
    async def session() -> float:
        loop = asyncio.get_running_loop()
        stage = DsrStage(MEMBERS)
        stage.open(DsrIntake(RUN, MEMBERS, 5, 2.7))
        stage.await_releases(loop.time(), 600.0)

        async def reader_body() -> None:
            await asyncio.sleep(1.0)
            raise ConnectionLost("the collector's inbound connection dropped")

        reader = asyncio.create_task(reader_body())
        hold = InputHold(_Empty(), reader)
        try:
            with pytest.raises(ConnectionLost):
                async with asyncio.timeout(3600):
                    await answer_of(stage, asyncio.Event(), lambda: hold, 600.0)
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        return loop.time()

    # the reader failed at t = 1: the wait ends there with its error (not "2 release(s)
    # missing after 600 s" at t = 600)
    assert VirtualTimeLoop.run(session()) == pytest.approx(1.0)
