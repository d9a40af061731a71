"""Tests of the in-memory transport (broker/transport.py): the subscription trie agrees with
``protocol.topics.matches``, and ``MemoryTransport`` routes, drops and takes over like an
MQTT broker."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ldpfleet.broker.transport import Delivery, MemoryTransport, TopicTrie, TransportError
from ldpfleet.protocol import topics

# --- TopicTrie vs topics.matches -----------------------------------------------------------

LEVELS = ["a", "b", "ldp", "$SYS", "$x", ""]
topic_levels = st.sampled_from(LEVELS)
topic_strings = st.lists(topic_levels, min_size=1, max_size=5).map("/".join)


@st.composite
def filters(draw) -> str:
    """A valid MQTT filter: levels, '+' anywhere, '#' only as the last level."""
    levels = draw(st.lists(st.sampled_from([*LEVELS, "+"]), min_size=0, max_size=5))
    if not levels or draw(st.booleans()):
        levels.append("#")
    return "/".join(levels)


@given(
    patterns=st.lists(filters(), min_size=1, max_size=8),
    probes=st.lists(topic_strings, min_size=1, max_size=8),
)
@settings(max_examples=500, deadline=None)
def test_trie_agrees_with_topics_matches(patterns, probes):
    trie = TopicTrie()
    for index, pattern in enumerate(patterns):
        trie.add(pattern, f"c{index}")
    for topic in probes:
        expected = {f"c{i}" for i, p in enumerate(patterns) if topics.matches(p, topic)}
        assert trie.match(topic) == expected, (topic, patterns)


@pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("a/#", "a", True),
        ("a/+/#", "a/b", True),
        ("#", "$SYS/x", False),
        ("+/x", "$SYS/x", False),
        ("$SYS/#", "$SYS/x", True),
        ("a/+", "a", False),
        ("+", "", True),
    ],
)
def test_trie_edge_cases(pattern, topic, expected):
    trie = TopicTrie()
    trie.add(pattern, "c")
    assert (trie.match(topic) == {"c"}) is expected
    assert topics.matches(pattern, topic) is expected


def test_trie_remove_client_drops_every_subscription():
    trie = TopicTrie()
    trie.add("a/#", "c1")
    trie.add("a/+", "c1")
    trie.add("a/b", "c2")
    assert trie.match("a/b") == {"c1", "c2"}
    trie.remove_client("c1")
    assert trie.match("a/b") == {"c2"}
    assert trie.match("a") == set()


@given(
    subscriptions=st.lists(
        st.tuples(st.sampled_from(["c0", "c1", "c2", "c3"]), filters()), min_size=1, max_size=12
    ),
    removed=st.sets(st.sampled_from(["c0", "c1", "c2", "c3", "never-subscribed"])),
    probes=st.lists(topic_strings, min_size=1, max_size=6),
)
@settings(max_examples=300, deadline=None)
def test_trie_remove_client_keeps_exactly_the_others_subscriptions(subscriptions, removed, probes):
    trie = TopicTrie()
    for client, pattern in subscriptions:
        trie.add(pattern, client)
    for client in sorted(removed):
        trie.remove_client(client)
    kept = [(c, p) for c, p in subscriptions if c not in removed]
    for topic in probes:
        assert trie.match(topic) == {c for c, p in kept if topics.matches(p, topic)}
    for client, _ in kept:  # removing everyone else leaves no node behind
        trie.remove_client(client)
    assert trie._root.children == {} and trie._root.subscribers == set()


def test_trie_remove_client_prunes_only_its_own_branch():
    trie = TopicTrie()
    trie.add("ldp/r/dev/d1/in/collector", "d1")
    trie.add("ldp/r/dev/d2/in/collector", "d2")
    trie.add("ldp/r/dev/+/up/#", "collector")
    trie.remove_client("d1")
    dev = trie._root.children["ldp"].children["r"].children["dev"]
    assert set(dev.children) == {"d2", "+"}
    assert trie.match("ldp/r/dev/d2/in/collector") == {"d2"}
    assert trie.match("ldp/r/dev/d1/up/sa_masked") == {"collector"}
    trie.remove_client("d1")  # a second removal is a no-op
    trie.add("ldp/r/dev/d1/in/collector", "d1")  # and the client may subscribe again
    assert trie.match("ldp/r/dev/d1/in/collector") == {"d1"}


# --- MemoryTransport -----------------------------------------------------------------------


async def _next(conn, timeout: float = 1.0) -> Delivery:
    iterator = conn.messages()
    return await asyncio.wait_for(anext(iterator), timeout)


async def _drain(conn) -> list[Delivery]:
    out = []
    while conn.pending():
        out.append(await _next(conn))
    return out


async def test_wildcard_subscribers_receive_matching_messages():
    broker = MemoryTransport()
    run = "r1"
    async with (
        broker.connect("recorder") as recorder,
        broker.connect("collector") as collector,
        broker.connect("d1") as device,
        broker.connect("d2") as other,
    ):
        await recorder.subscribe(topics.all_of_run(run))
        await collector.subscribe(topics.all_up(run))
        await device.subscribe(topics.inbox_filter(run, "d1"), topics.ctl_filter(run))
        await other.subscribe(topics.inbox_filter(run, "d2"))

        await device.publish(topics.up(run, "d1", "sw_report"), b"report")
        await collector.publish(topics.inbox(run, "d1", "collector"), b"ack")
        await collector.publish(topics.ctl(run, "stage"), b"stage")
        await collector.publish(topics.up("r2", "d1", "sw_report"), b"other run")

        assert [d.payload for d in await _drain(recorder)] == [b"report", b"ack", b"stage"]
        assert await _drain(collector) == [Delivery(topics.up(run, "d1", "sw_report"), b"report")]
        assert [d.payload for d in await _drain(device)] == [b"ack", b"stage"]
        assert await _drain(other) == []
        assert broker.published == 4
        assert broker.dropped == 0


async def test_overlapping_subscriptions_deliver_once():
    broker = MemoryTransport()
    async with broker.connect("c") as conn:
        await conn.subscribe("a/#", "a/+", "a/b")
        await conn.publish("a/b", b"x")
        assert await _drain(conn) == [Delivery("a/b", b"x")]


async def test_publish_many_routes_everything():
    broker = MemoryTransport()
    async with broker.connect("c") as conn:
        await conn.subscribe("t/#")
        await conn.publish_many([("t/1", b"1"), ("t/2", bytearray(b"2")), ("u/3", b"3")])
        drained = await _drain(conn)
        assert drained == [Delivery("t/1", b"1"), Delivery("t/2", b"2")]
        assert all(type(d.payload) is bytes for d in drained)
        assert broker.published == 3


async def test_drop_rule_applies_per_delivery():
    seen = []

    def drop(topic: str, payload: bytes, recipient: str) -> bool:
        seen.append((topic, payload, recipient))
        return recipient == "lossy" and payload.startswith(b"lose")

    broker = MemoryTransport(drop=drop)
    async with broker.connect("lossy") as lossy, broker.connect("good") as good:
        await lossy.subscribe("x/#")
        await good.subscribe("x/#")
        await good.publish("x/1", b"lose me")
        await good.publish("x/2", b"keep me")
        assert [d.payload for d in await _drain(lossy)] == [b"keep me"]
        assert [d.payload for d in await _drain(good)] == [b"lose me", b"keep me"]
        assert broker.dropped == 1
        assert broker.published == 2
        assert sorted(seen) == sorted(
            [
                ("x/1", b"lose me", "lossy"),
                ("x/1", b"lose me", "good"),
                ("x/2", b"keep me", "lossy"),
                ("x/2", b"keep me", "good"),
            ]
        )


async def test_delay_rule_postpones_delivery():
    broker = MemoryTransport(delay=lambda topic, payload, recipient: 0.05)
    async with broker.connect("c") as conn:
        await conn.subscribe("#")
        await conn.publish("a", b"late")
        assert conn.pending() == 0
        assert await _next(conn) == Delivery("a", b"late")


async def test_takeover_ends_the_first_connection():
    broker = MemoryTransport()
    async with broker.connect("dev") as first:
        await first.subscribe("a/#")
        async with broker.connect("sender") as sender:
            await sender.publish("a/1", b"before")

            async def consume() -> list[bytes]:
                return [d.payload async for d in first.messages()]

            consumer = asyncio.create_task(consume())
            await asyncio.sleep(0)
            async with broker.connect("dev") as second:  # same client id: takes over
                got = await asyncio.wait_for(consumer, 1.0)
                assert got == [b"before"]  # the iterator ended after what was queued
                with pytest.raises(TransportError):
                    await first.publish("a/2", b"from the old session")
                # the old session's subscriptions are gone with it (clean session)
                await sender.publish("a/3", b"unsubscribed")
                assert second.pending() == 0
                await second.subscribe("a/#")
                await sender.publish("a/4", b"after")
                assert [d.payload for d in await _drain(second)] == [b"after"]
                await second.publish("a/5", b"new session publishes")
        # the first context exits after the second: nothing left behind, no error


async def test_closed_connection_cannot_publish_and_gets_nothing():
    broker = MemoryTransport()
    async with broker.connect("c") as conn:
        await conn.subscribe("#")
    with pytest.raises(TransportError):
        await conn.publish("a", b"x")
    async with broker.connect("d") as other:
        await other.publish("a", b"x")
    assert conn.pending() == 0
