"""The private-LPEA device pump (``devices.lpea_agent``) seen from the broker: one scripted
sequence of deliveries in, everything it publishes, counts and refusal reasons out.

A black-box pin of the pump's behaviour (round order, the early-message buffer and its cap,
replay when a round opens, refusals): written against the agent before its decisions moved
into ``protocol.lpea_device``, and unchanged since. The in-memory transport delivers one
connection's publishes in order, and the test waits on the agent's end, never on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import numpy as np
import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.devices.lpea_agent import LpeaAgent
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.lpea import LpeaAnswer, LpeaDone, LpeaNode, LpeaRequest, LpeaRound

RUN = "pin"
ME = "a"
NEIGHBOURS = ("b", "c")
CAP = 4 * len(NEIGHBOURS) + 4  # the early-message buffer's documented cap
MARK = "ldp/pin/mark"


def node(theta: int = 0) -> LpeaNode:
    """``a`` with neighbours ``b``, ``c``. ``theta=0``: every round ends at once (nothing
    to request), so rounds can follow each other without peer traffic."""
    codes = dict.fromkeys(NEIGHBOURS, 1)
    return LpeaNode(RUN, ME, codes, theta, 50.0, np.random.default_rng(3))


def round_(r: int, *, finished: bool = False, sender: str = topics.COLLECTOR_ID) -> tuple:
    message = LpeaRound(run=RUN, sender=sender, seq=r + 1, round=r, finished=finished)
    return topics.ctl(RUN, "lpea_round"), codec.encode(message)


def request(src: str, r: int, seq: int = 1) -> tuple:
    message = LpeaRequest(run=RUN, sender=src, seq=seq, round=r)
    return topics.inbox(RUN, ME, src), codec.encode(message)


def answer(src: str, r: int) -> tuple:
    message = LpeaAnswer(run=RUN, sender=src, seq=1, round=r, yes=True)
    return topics.inbox(RUN, ME, src), codec.encode(message)


async def drive(agent: LpeaAgent, script: list[tuple]) -> list[tuple]:
    """Publish ``script`` to the agent in order, run it to its end; what it published, in
    order, as (topic, decoded message)."""
    transport = agent.transport
    async with transport.connect("pin-spy") as spy:
        await spy.subscribe(
            *(topics.inbox(RUN, n, ME) for n in NEIGHBOURS), topics.up(RUN, ME, "lpea_done"), MARK
        )
        task = asyncio.create_task(agent.run())
        await agent.subscribed.wait()
        async with transport.connect("pin-driver") as driver:
            for topic, payload in script:
                await driver.publish(topic, payload)
            await asyncio.wait_for(task, timeout=30)
            await driver.publish(MARK, b"end")  # after everything the agent published
        seen = []
        async with contextlib.aclosing(spy.messages()) as deliveries:
            async for delivery in deliveries:
                if delivery.topic == MARK:
                    break
                seen.append((delivery.topic, codec.decode(delivery.payload)))
    return seen


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if " refused " in r.getMessage()]


def summary(published: list[tuple]) -> list[tuple]:
    out = []
    for topic, message in published:
        row = (topic, message.type_name(), message.round, message.seq)
        if isinstance(message, LpeaDone):
            row += (message.added,)
        out.append(row)
    return out


async def test_buffer_replay_round_order_and_refusals(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.DEBUG, logger="ldpfleet.devices.lpea_agent")
    agent = LpeaAgent(MemoryTransport(), node(), RUN)
    script = [
        request("b", 0),  # before any round: buffered
        request("c", 1),  # ahead: buffered
        (topics.inbox(RUN, ME, "b"), b"{not json"),  # undecodable
        (topics.inbox(RUN, ME, "b"), codec.encode(LpeaDone(run=RUN, sender="b", round=0, added=0))),
        round_(0, sender="b"),  # not the collector's
        round_(0),  # opens round 0: b's request answered, c's (round 1) buffered again
        answer("b", 0),  # no pending request: the node refuses it
        round_(0),  # does not follow round 0
        request("b", 2),  # ahead of round 0
        *(request("c", 5, seq=i) for i in range(CAP - 2)),  # with c1 and b2: CAP buffered
        request("b", 5),  # the buffer is full
        round_(3),  # rounds 1, 2 were skipped: c's and b's messages refused, c's 5 kept
        round_(5),  # replays the CAP - 2 requests of c: one answered, the rest duplicates
        round_(6, finished=True),
    ]
    published = await drive(agent, script)
    inbox_b, inbox_c = topics.inbox(RUN, "b", ME), topics.inbox(RUN, "c", ME)
    done = topics.up(RUN, ME, "lpea_done")
    assert summary(published) == [
        (inbox_b, "lpea_answer", 0, 1),
        (done, "lpea_done", 0, 1, 0),  # after the node's messages of the same input
        (done, "lpea_done", 3, 2, 0),
        (inbox_c, "lpea_answer", 5, 2),
        (done, "lpea_done", 5, 3, 0),
    ]
    assert agent.rounds == 3
    assert agent.finished
    assert agent.node.round == 5
    # buffered: b0, c1 (before round 0), c1 again (still ahead at round 0), b2, then CAP - 2
    # of c5 twice (again when round 3 opens: still ahead)
    assert agent.buffered_total == 4 + 2 * (CAP - 2)
    reasons = refusals(caplog)
    expected = [
        "undecodable",  # placeholder: the codec's own words, checked below by position
        "round control on a peer inbox",
        "not this run's collector",
        "lpea_answer from b without a pending request",
        "round 0 does not follow 0",
        "early-message buffer is full",
        "message of a round that was skipped",
        "message of a round that was skipped",
        *["second lpea_request from c this round"] * (CAP - 3),
    ]
    assert len(reasons) == len(expected) == agent.refused
    for got, want in zip(reasons[1:], expected[1:], strict=True):
        assert got.startswith(f"{ME} refused ") and want in got, (got, want)
    assert reasons[0].startswith(f"{ME} refused {topics.inbox(RUN, ME, 'b')}: ")
    assert agent.messages_down == len(script)
    assert agent.messages_up == len(published)


async def test_a_node_that_has_not_finished_its_round_stops_the_pump():
    """A broadcast while the node's own round is still open is the pacer's bug, not a
    peer's: the pump raises (``LocalProtocolError``) instead of counting a refusal."""
    from ldpfleet.protocol.errors import LocalProtocolError

    agent = LpeaAgent(MemoryTransport(), node(theta=1), RUN)
    with pytest.raises(LocalProtocolError):
        await drive(agent, [round_(0), round_(1)])


def test_the_agent_refuses_a_node_of_another_run():
    with pytest.raises(ValueError, match="node belongs to run"):
        LpeaAgent(MemoryTransport(), node(), "other")
