"""``drive_timers`` in a process that was stopped (or starved) while its deadline check was
already due: on resuming, the check ran before the loop had read its sockets, found
nothing queued and fired over the replies that had reached them meanwhile (ego-Facebook
with the collector process stopped 60 s by SIGSTOP, stage timeout 30 s: "share stage:
only 1929 of 4039 devices sent their shares", the check saw 0 queued). Now a passed
deadline with nothing queued fires only after the loop has polled its sockets once.

On virtual time (tests/virtual_time.py). The stop is modelled in the loop turn where the
deadline's timer fires: a callback after it moves the clock 60 s on (the process stood
still) and makes a reply arrive as a socket read does, in the next turn's callbacks —
after ``drive_timers``' step, which the timer had already scheduled."""

from __future__ import annotations

import asyncio

from ldpfleet.broker.pump import drive_timers

from tests.virtual_time import VirtualTimeLoop

STOP = 60.0
TIMEOUT = 30.0


class _Stage:
    """A stage whose deadline is ``TIMEOUT`` after the latest reply fed (first at t = 0)."""

    def __init__(self) -> None:
        self.deadline = TIMEOUT
        self.fed: list[str] = []
        self.closed_with: list[list[str]] | None = None

    def next_timer(self) -> float | None:
        return None if self.closed_with is not None else self.deadline

    def handle_timer(self, now: float) -> None:
        if now >= self.deadline:
            self.closed_with = [list(self.fed)]

    def feed(self, reply: str, now: float) -> None:
        self.fed.append(reply)
        self.deadline = max(self.deadline, now + TIMEOUT)


async def _resumed() -> _Stage:
    loop = asyncio.get_running_loop()
    stage = _Stage()
    buffer: list[str] = []  # what the connection has read and the pump not yet fed
    fed = asyncio.Event()
    closed = asyncio.Event()

    async def after_timer() -> None:
        closed.set()

    async def pump() -> None:  # feeds each reply once the connection has read it
        while True:
            await fed.wait()
            fed.clear()
            while buffer:
                stage.feed(buffer.pop(0), loop.time())

    def arrive() -> None:  # a socket read: the reply reaches the connection's buffer
        buffer.append("late-but-alive")
        fed.set()

    def stop() -> None:  # the process stands still for STOP seconds
        loop._virtual_now += STOP  # type: ignore[attr-defined]
        loop.call_soon(arrive)  # read when the loop polls its sockets again

    timers = asyncio.ensure_future(
        drive_timers(stage, after_timer, max_sleep=TIMEOUT, inputs_queued=lambda: len(buffer))
    )
    feeder = asyncio.ensure_future(pump())
    await asyncio.sleep(0)  # drive_timers now sleeps until the deadline (its timer first)
    loop.call_at(TIMEOUT, stop)  # due in the same turn, after it
    try:
        async with asyncio.timeout(10 * STOP):
            await closed.wait()
    except TimeoutError:
        pass
    for task in (timers, feeder):
        task.cancel()
    await asyncio.gather(timers, feeder, return_exceptions=True)
    return stage


def test_a_resumed_process_reads_its_sockets_before_judging_the_deadline():
    stage = VirtualTimeLoop.run(_resumed())
    # the reply was fed before any judgement: the deadline moved to its arrival + 30 s,
    # and the stage closed then (no other reply came), with it
    assert stage.fed == ["late-but-alive"]
    assert stage.closed_with == [["late-but-alive"]]
    assert stage.deadline == TIMEOUT + STOP + TIMEOUT
