"""A stream device gives up on a silent collector: the pump path (``DeviceAgent`` on the
in-memory transport, on virtual time: ``tests/virtual_time.py``).

A fake collector publishes on the device's inbox at chosen virtual instants and then says
nothing more. The device must give up exactly ``silence_timeout`` seconds after the last
delivery (every delivery counts, even one it cannot decode), with the sentence
"no message from the collector for S s (state ..., N retransmissions)"; with
``silence_timeout = None`` it never gives up; and an agent started again with the same
reporter (a device restored from its storage) counts its silence from its own start.
These pin the behaviour the give-up had as an ``asyncio.timeout_at`` in the pump; it is
now the reporter's own deadline (``protocol.stream``), and these tests did not change.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.devices.agent import DeviceAgent
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.messages import Ack
from ldpfleet.protocol.stream import StreamConfig, StreamReporter

from tests.virtual_time import VirtualTimeLoop

RUN = "a-giveup"
DEVICE = "d0000"


def config() -> StreamConfig:
    """20 steps in batches of 5; the hello is retransmitted after 0.05 s (backing off)."""
    return StreamConfig(
        run=RUN,
        mechanism="sw",
        eps=2.0,
        w=5,
        steps=20,
        batch_steps=5,
        lo=-1.5,
        hi=1.5,
        retransmit_after=0.05,
    )


def inbox() -> str:
    return topics.inbox(RUN, DEVICE, topics.COLLECTOR_ID, config().partition(DEVICE))


def wait_please() -> bytes:
    """The collector's "known, please wait for credit" (an ack of nothing, no credit)."""
    return codec.encode(Ack(run=RUN, sender=topics.COLLECTOR_ID, seq=-1, credit=0))


async def collector_says(transport: MemoryTransport, words: list[tuple[float, bytes]]) -> None:
    """Publish each payload on the device's inbox at its virtual instant, then fall silent."""
    loop = asyncio.get_running_loop()
    async with transport.connect(f"{RUN}-fake-collector") as conn:
        for at, payload in words:
            await asyncio.sleep(at - loop.time())
            await conn.publish(inbox(), payload)
        await asyncio.Event().wait()  # silent from now on (cancelled by the test)


def run_agent(
    words: list[tuple[float, bytes]],
    silence_timeout: float | None,
    *,
    reporter: StreamReporter | None = None,
    start_at: float = 0.0,
    guard: float = 100.0,
) -> tuple[DeviceAgent, float]:
    """Run one agent (from virtual ``start_at``) beside a fake collector saying ``words``;
    (the agent, the virtual instant its run returned). ``guard`` bounds a run that never
    returns by itself (``asyncio.wait_for``, virtual seconds: ``TimeoutError``)."""
    transport = MemoryTransport()
    reporter = reporter or StreamReporter(config(), DEVICE, np.random.default_rng(0))
    agent = DeviceAgent(transport, reporter, np.zeros(20), silence_timeout=silence_timeout)

    async def scene() -> float:
        loop = asyncio.get_running_loop()
        collector = asyncio.ensure_future(collector_says(transport, words))
        try:
            await asyncio.sleep(start_at)
            await asyncio.wait_for(agent.run(), guard)
            return loop.time()
        finally:
            collector.cancel()
            await asyncio.gather(collector, return_exceptions=True)

    return agent, VirtualTimeLoop.run(scene())


def sentence(seconds: str, reporter: StreamReporter) -> str:
    return (
        f"no message from the collector for {seconds} s (state {reporter.state}, "
        f"{reporter.retransmissions} retransmissions)"
    )


def test_gives_up_exactly_silence_timeout_after_the_last_delivery():
    # words at 1.0 and 2.0: without them it would give up at 1.5; with them at 2.0 + 1.5
    agent, ended = run_agent([(1.0, wait_please()), (2.0, wait_please())], 1.5)
    assert ended == pytest.approx(3.5)
    reporter = agent.reporter
    assert reporter.state == "waiting" and not reporter.finished
    # hello at 0 and again at 0.05, 0.15, 0.35, 0.75 (backing off: 0.05 x 1, 2, 4, 8); then
    # waiting for credit, a keep-alive hello every 6 x 0.05 s: 1.05, 1.35, ..., 3.45
    assert reporter.retransmissions == 4 + 9
    assert agent.gave_up == sentence("1.5", reporter)
    assert agent.gave_up == (
        "no message from the collector for 1.5 s (state waiting, 13 retransmissions)"
    )


def test_an_undecodable_delivery_counts_as_a_word_too():
    agent, ended = run_agent([(1.0, b"not json")], 1.5)
    assert ended == pytest.approx(2.5)
    assert agent.refused_messages == 1
    assert agent.reporter.state == "hello"
    assert agent.gave_up == sentence("1.5", agent.reporter)


def test_a_collector_that_never_answers_is_given_up_on_after_silence_timeout():
    agent, ended = run_agent([], 0.3)
    assert ended == pytest.approx(0.3)
    # hello at 0, again at 0.05 and 0.15 (the next, at 0.35, is after the deadline)
    assert agent.gave_up == (
        "no message from the collector for 0.3 s (state hello, 2 retransmissions)"
    )


def test_no_silence_timeout_never_gives_up():
    with pytest.raises(TimeoutError):
        run_agent([(1.0, wait_please())], None, guard=1000.0)


def test_an_agent_restarted_with_the_same_reporter_counts_from_its_own_start():
    # the first agent gives up at 0.3; a second one (a device restored from its storage)
    # starts at 10.0 with that reporter: it waits its own 0.3 s, not 0 (the old deadline
    # passed long ago), and hears the collector's word at 10.2, so gives up at 10.5
    first, ended = run_agent([], 0.3)
    assert ended == pytest.approx(0.3) and first.gave_up is not None
    second, ended = run_agent([(10.2, wait_please())], 0.3, reporter=first.reporter, start_at=10.0)
    assert ended == pytest.approx(10.5)
    assert second.reporter.state == "waiting"
    assert second.gave_up == sentence("0.3", second.reporter)


def test_a_broker_outage_longer_than_the_silence_ends_in_a_give_up_not_an_error():
    # the broker goes down at 1.5, half a second after the collector's last word (1.0),
    # and stays down: the session's own give_up_after (the same 2 s, counted from the
    # loss) could only end it at 3.5 or later; the reporter's deadline is 1.0 + 2.0
    transport = MemoryTransport()
    reporter = StreamReporter(config(), DEVICE, np.random.default_rng(0))
    agent = DeviceAgent(transport, reporter, np.zeros(20), silence_timeout=2.0)

    async def scene() -> float:
        loop = asyncio.get_running_loop()

        async def broker_down() -> None:
            await asyncio.sleep(1.5)
            with transport.outage():
                await asyncio.Event().wait()

        collector = asyncio.ensure_future(collector_says(transport, [(1.0, wait_please())]))
        outage = asyncio.ensure_future(broker_down())
        try:
            await asyncio.wait_for(agent.run(), 100.0)
            return loop.time()
        finally:
            for task in (collector, outage):
                task.cancel()
            await asyncio.gather(collector, outage, return_exceptions=True)

    ended = VirtualTimeLoop.run(scene())
    assert ended == pytest.approx(3.0)
    assert agent.error is None
    assert agent.gave_up == sentence("2", reporter)


def test_a_paced_device_stops_feeding_when_it_gives_up():
    # one reading a second; the collector never answers: it gives up at 2.5 with three
    # readings privatised (at 0, 1 and 2), and nothing is privatised after the give-up
    transport = MemoryTransport()
    reporter = StreamReporter(config(), DEVICE, np.random.default_rng(0))
    agent = DeviceAgent(transport, reporter, np.zeros(20), silence_timeout=2.5, step_seconds=1.0)

    async def scene() -> float:
        await asyncio.wait_for(agent.run(), 100.0)
        ended = asyncio.get_running_loop().time()
        await asyncio.sleep(5.0)  # the feeder is gone: nothing more is privatised
        return ended

    assert VirtualTimeLoop.run(scene()) == pytest.approx(2.5)
    assert reporter.privatised == 3
    assert agent.gave_up == sentence("2.5", reporter)
