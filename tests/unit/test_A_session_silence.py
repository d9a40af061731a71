"""A device's deadline on its silent collector is a protocol machine, on a fake clock.

It lived in the asyncio pump (``devices.secagg_agent``: the limit, its validation, the
deadline bookkeeping); it is now ``protocol.secagg.silence.SessionSilence``, a
``protocol.liveness.SilenceWatch`` with the session's rules, and the agent only pumps it.
These tests pin the rules on the machine itself (no loop, no transport): exactly at the
limit and not before, every word moves the deadline, ``math.inf`` never, no deadline
before the setup, the floor, and the refusals of a bad ``give_up_after`` unchanged. The
agent's behaviour on virtual time is pinned by ``tests/unit/test_T_agent_gives_up.py``
and by the last test here (a collector that speaks just inside the limit, then stops).
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from ldpfleet.broker.select import open_broker
from ldpfleet.devices import secagg_agent
from ldpfleet.devices.secagg_agent import SecAggAgent
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError
from ldpfleet.protocol.liveness import CollectorSilent, SilenceWatch
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.secagg.server import DEFAULT_PATIENCE, SecAggServer
from ldpfleet.protocol.secagg.silence import (
    SILENCE_FLOOR,
    SessionSilence,
    check_give_up_after,
    collector_silence_limit,
)

from tests.virtual_time import VirtualTimeLoop

FIXED = FixedPoint(-1.0, 1.0, 2.0**16)
NAMES = ["d0", "d1", "d2"]


def _setup_items(stage_timeout: float) -> list:
    """The server's ``SaSetup`` for every device, as (topic, message)."""
    server = SecAggServer("r", "s", NAMES, 4, FIXED, stage_timeout=stage_timeout)
    server.start(0.0)
    return [(topics.parse(item.topic), item.message) for item in server.pop_outbound()]


def _client_with_setup(stage_timeout: float = 30.0) -> SecAggClient:
    client = SecAggClient("r", "s", "d0", np.zeros(4))
    topic, setup = next(i for i in _setup_items(stage_timeout) if i[0].recipient == "d0")
    client.receive(topic, setup, 0.0)
    assert client.setup is not None and client.state == "advertised"
    return client


def _silent(machine) -> list[CollectorSilent]:
    return [e for e in machine.pop_events() if isinstance(e, CollectorSilent)]


def test_no_deadline_before_the_setup() -> None:
    watch = SessionSilence(SecAggClient("r", "s", "d0", np.zeros(4)))
    watch.start(0.0)
    assert watch.limit() is None and watch.next_timer() is None
    watch.heard(5.0)  # a word the client refused (no setup yet): still no deadline
    assert watch.next_timer() is None
    watch.handle_timer(1e12)
    assert watch.state == "watching" and _silent(watch) == []


@pytest.mark.parametrize(
    ("stage_timeout", "limit"),
    [(30.0, (DEFAULT_PATIENCE + 1) * 30.0), (0.5, SILENCE_FLOOR), (12.0, SILENCE_FLOOR)],
)
def test_gives_up_exactly_at_the_limit(stage_timeout: float, limit: float) -> None:
    assert collector_silence_limit(stage_timeout) == limit
    watch = SessionSilence(_client_with_setup(stage_timeout))
    watch.start(0.0)
    watch.heard(10.0)  # the setup's delivery
    assert watch.limit() == limit and watch.next_timer() == 10.0 + limit
    watch.handle_timer(math.nextafter(10.0 + limit, 0.0))  # a hair before: nothing
    assert watch.state == "watching" and _silent(watch) == []
    watch.handle_timer(10.0 + limit)
    (event,) = _silent(watch)
    assert watch.state == "silent" and watch.next_timer() is None and event.started
    assert event.sentence == (
        f"the collector was silent for {limit:g} s in the session's advertised state: "
        "this device stopped waiting (give_up_after)"
    )
    watch.heard(10.0 + 2 * limit)  # nothing more once silent
    watch.handle_timer(1e12)
    assert watch.state == "silent" and _silent(watch) == []


def test_every_word_moves_the_deadline() -> None:
    watch = SessionSilence(_client_with_setup(), give_up_after=5.0)
    watch.start(0.0)
    for now in (1.0, 5.9, 10.8, 15.7):  # each 4.9 s after the last: never silent
        watch.handle_timer(now)
        watch.heard(now)
        assert watch.next_timer() == now + 5.0
    watch.handle_timer(20.6999)
    assert _silent(watch) == []
    watch.handle_timer(20.7)
    (event,) = _silent(watch)
    # 5 s is below this session's own 150 s: the sentence says a live collector may wait
    assert event.sentence == (
        "the collector was silent for 5 s in the session's advertised state: this device "
        "stopped waiting (give_up_after); that is shorter than the session's own limit, "
        "150 s (a stage may stay open 4 x stage_timeout = 120 s): a live collector may have "
        "been waiting for slower devices"
    )


def test_infinity_never_gives_up() -> None:
    watch = SessionSilence(_client_with_setup(), give_up_after=math.inf)
    watch.start(0.0)
    watch.heard(1.0)
    assert watch.limit() == math.inf and watch.next_timer() is None
    watch.handle_timer(1e300)
    assert watch.state == "watching" and _silent(watch) == []


def test_stop_ends_the_watch() -> None:
    watch = SessionSilence(_client_with_setup(), give_up_after=1.0)
    watch.start(0.0)
    watch.heard(0.0)
    watch.stop()
    watch.handle_timer(100.0)
    assert watch.state == "stopped" and watch.next_timer() is None and _silent(watch) == []
    with pytest.raises(LocalProtocolError):
        watch.start(0.0)


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), True, "60"])
def test_bad_give_up_after_unchanged(value) -> None:
    for make in (
        lambda: check_give_up_after(value),
        lambda: SessionSilence(SecAggClient("r", "s", "d0", np.zeros(4)), value),
        lambda: SecAggAgent(None, SecAggClient("r", "s", "d0", np.zeros(4)), give_up_after=value),
    ):
        with pytest.raises(ParameterError) as error:
            make()
        assert error.value.field == "give_up_after"
        assert error.value.limit == "None or > 0 seconds"
        assert error.value.value is value
        assert error.value.reason == (
            f"must be None (the session's own limit) or > 0 seconds, got {value!r}"
        )


def test_the_agent_module_re_exports() -> None:
    assert secagg_agent.collector_silence_limit is collector_silence_limit
    assert secagg_agent.SILENCE_FLOOR == SILENCE_FLOOR == 60.0


def test_a_shard_watch_with_infinite_bounds() -> None:
    # the fleet shard's watch, with the same rules: inf is no deadline, the limit is exact
    never = SilenceWatch("r", math.inf, first_timeout=math.inf)
    never.start(0.0)
    never.heard(1.0)
    assert never.next_timer() is None
    never.handle_timer(1e300)
    assert _silent(never) == []
    watch = SilenceWatch("r", 4.0, first_timeout=math.inf)
    watch.start(0.0)
    assert watch.next_timer() is None  # may wait for the first word forever
    watch.heard(3.0)
    watch.handle_timer(6.999)
    assert _silent(watch) == []
    watch.handle_timer(7.0)
    (event,) = _silent(watch)
    assert (
        event.sentence
        == "the collector of run r sent nothing for 4 s (it stopped or is unreachable)"
    )


def test_the_agent_waits_while_the_collector_speaks_then_gives_up() -> None:
    """The pump on virtual time: a collector that sends the setup, then an undecodable word
    every 59 s (inside the 60 s floor) four times, then nothing: the agent gives up exactly
    60 s after the last word, having counted every word (refused, they still reset it)."""

    async def scenario():
        loop = asyncio.get_running_loop()
        async with open_broker("memory") as (transport, _info):
            agent = SecAggAgent(transport, SecAggClient("r", "s", "d0", np.zeros(4)))
            task = asyncio.create_task(agent.run())
            await agent.subscribed.wait()
            inbox = topics.inbox("r", "d0", topics.COLLECTOR_ID)
            _topic, setup = next(i for i in _setup_items(0.5) if i[0].recipient == "d0")
            async with transport.connect("r-fake-collector") as conn:
                started = loop.time()
                await conn.publish(inbox, codec.encode(setup))
                for _ in range(4):
                    await asyncio.sleep(59.0)
                    await conn.publish(inbox, b"not a message")
                last = loop.time() - started
                await asyncio.wait_for(task, 1000.0)
            return agent, last, loop.time() - started

    agent, last, ended = VirtualTimeLoop.run(scenario())
    assert last == pytest.approx(4 * 59.0)
    assert ended == pytest.approx(last + SILENCE_FLOOR, abs=1e-6)
    assert agent.messages_down == 5 and agent.refused == 4
    assert "collector was silent for 60 s in the session's advertised state" in agent.gave_up


def test_a_bad_dropout_names_its_field() -> None:
    # it was a bare ValueError; a ParameterError is one too
    with pytest.raises(ParameterError) as refused:
        SecAggAgent(None, SecAggClient("r", "s", "d0", np.zeros(4)), dropout="after_share")
    error = refused.value
    assert isinstance(error, ValueError)
    assert (error.field, error.value) == ("dropout", "after_share")
    assert error.limit.startswith("None or one of before_keys, after_keys, after_shares")
    assert error.reason.endswith("(did you mean 'after_shares'?)")
