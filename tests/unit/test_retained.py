"""Tier 2: retained messages on the in-memory broker (broker/transport.py), through the
``Session`` outbox, a gateway channel and ``publish_outbound``, and the run rendezvous pumps
(collector/rendezvous.py, devices/rendezvous.py) over them, in both start orders, with and
without the run's ACL. Ordering is decided by events and markers, never by sleeps; only the
timeout test waits, since the timeout is the behaviour under test."""

from __future__ import annotations

import asyncio
import contextlib

import msgspec
import pytest
from ldpfleet.broker.auth import Credentials, mosquitto_acl_text
from ldpfleet.broker.pump import publish_outbound
from ldpfleet.broker.session import Session
from ldpfleet.broker.transport import MemoryTransport, TransportError
from ldpfleet.collector.rendezvous import RunAnnouncer, default_epoch
from ldpfleet.devices.gateway import Gateway
from ldpfleet.devices.rendezvous import (
    RendezvousError,
    RunNotAnnounced,
    RunTermsDiffer,
    wait_for_run,
)
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.events import Machine
from ldpfleet.protocol.messages import Reject
from ldpfleet.protocol.rendezvous import RunClosed, RunOpen, RunTerms, scenario_digest

RUN = "rv1"
TOPIC = topics.ctl(RUN, "run")
TERMS = RunTerms("stream", "quickstart", 7, 3, scenario_digest({"a": 1}))
TIMEOUT = 5.0


async def next_payloads(conn, count: int) -> list[bytes]:
    """The next ``count`` payloads delivered to ``conn`` (within ``TIMEOUT``)."""
    received: list[bytes] = []

    async def pump() -> None:
        async for delivery in conn.messages():
            received.append(delivery.payload)
            if len(received) == count:
                return

    await asyncio.wait_for(pump(), TIMEOUT)
    return received


async def until_marker(conn, marker: bytes = b"marker") -> list[bytes]:
    """Payloads delivered to ``conn`` before ``marker`` (which must arrive in time)."""
    seen: list[bytes] = []

    async def pump() -> None:
        async for delivery in conn.messages():
            if delivery.payload == marker:
                return
            seen.append(delivery.payload)

    await asyncio.wait_for(pump(), TIMEOUT)
    return seen


class SignalsSubscribe:
    """A transport whose connections set ``subscribed`` once a subscription took (so a
    test knows the fleet waits before the collector announces: no sleep)."""

    def __init__(self, transport) -> None:
        self.transport = transport
        self.name = transport.name
        self.subscribed = asyncio.Event()
        self.subscriptions = 0

    @contextlib.asynccontextmanager
    async def connect(self, client_id: str, **options):
        async with self.transport.connect(client_id, **options) as conn:
            yield _Signalling(conn, self)


class _Signalling:
    def __init__(self, conn, owner: SignalsSubscribe) -> None:
        self._conn = conn
        self._owner = owner
        self.client_id = conn.client_id

    async def subscribe(self, *filters: str, qos: int = 1) -> None:
        await self._conn.subscribe(*filters, qos=qos)
        self._owner.subscriptions += 1
        self._owner.subscribed.set()

    def __getattr__(self, name: str):
        return getattr(self._conn, name)


# --- retained messages on MemoryTransport ----------------------------------------------


async def test_a_retained_message_reaches_a_late_subscriber_at_once():
    broker = MemoryTransport()
    async with broker.connect("pub") as pub, broker.connect("sub") as sub:
        await pub.publish("r/a", b"kept", retain=True)
        await pub.publish("r/b", b"not kept")  # not retained: gone
        await sub.subscribe("r/+")
        await pub.publish("r/a", b"marker")
        assert await until_marker(sub) == [b"kept"]
        assert broker.retained == {"r/a": b"kept"}


async def test_a_newer_retained_message_replaces_the_older_and_empty_deletes():
    broker = MemoryTransport()
    async with broker.connect("pub") as pub:
        await pub.publish("r/a", b"one", retain=True)
        await pub.publish("r/a", b"two", retain=True)
        async with broker.connect("sub1") as sub:
            await sub.subscribe("r/a")
            await pub.publish("r/a", b"marker")
            assert await until_marker(sub) == [b"two"]
            await pub.publish("r/a", b"", retain=True)  # delivered as usual, then deleted
            await pub.publish("r/a", b"marker")
            assert await until_marker(sub) == [b""]
        assert broker.retained == {}
        async with broker.connect("sub2") as late:
            await late.subscribe("r/#")
            await pub.publish("r/a", b"marker")
            assert await until_marker(late) == []


async def test_every_subscribe_resends_the_matching_retained_messages_once():
    broker = MemoryTransport()
    async with broker.connect("pub") as pub, broker.connect("sub") as sub:
        await pub.publish("r/a", b"A", retain=True)
        await pub.publish("r/b/c", b"C", retain=True)
        await pub.publish("s/a", b"S", retain=True)
        await sub.subscribe("r/#", "r/a")  # two filters match r/a: sent once
        await pub.publish("r/a", b"marker")
        assert sorted(await until_marker(sub)) == [b"A", b"C"]
        await sub.subscribe("r/a")  # again (MQTT 3.1.1, 3.8.4): resent
        await pub.publish("r/a", b"marker")
        # the live marker reaches both of sub's matching filters: one copy, trie semantics
        assert await until_marker(sub) == [b"A"]


async def test_retained_messages_survive_a_broker_outage_and_pass_the_drop_rules():
    dropping = {"on": True}
    broker = MemoryTransport(drop=lambda t, p, c: dropping["on"] and c == "sub" and p == b"A")
    async with broker.connect("pub") as pub:
        await pub.publish("r/a", b"A", retain=True)
    with broker.outage():
        pass
    async with broker.connect("pub") as pub, broker.connect("sub") as sub:
        await sub.subscribe("r/a")  # the retained copy is dropped for sub
        dropping["on"] = False
        await sub.subscribe("r/a")
        await pub.publish("r/a", b"marker")
        assert await until_marker(sub) == [b"A"]
        assert broker.dropped == 1


async def test_the_acl_decides_who_may_retain_and_who_receives_retained():
    creds = Credentials.generate(RUN, ["d0001", "d0002"])
    broker = MemoryTransport(credentials=creds)
    async with (
        broker.connect(f"{RUN}-collector") as collector,
        broker.connect(f"{RUN}-d0001") as device,
    ):
        await collector.publish(TOPIC, b"announced", retain=True)
        await device.publish(TOPIC, b"forged", retain=True)  # devices may not publish ctl/
        assert (f"{RUN}-d0001", "publish", TOPIC) in broker.denied
        assert broker.retained[TOPIC] == b"announced"
        async with broker.connect(f"{RUN}-d0002") as other:
            await other.subscribe(topics.ctl_filter(RUN))
            await collector.publish(TOPIC, b"marker")
            assert await until_marker(other) == [b"announced"]
            with pytest.raises(TransportError):  # another device's up/: refused, nothing
                await other.subscribe(topics.up(RUN, "d0001", "hello"))
            await collector.publish(TOPIC, b"marker")
            assert await until_marker(other) == []
        async with broker.connect(f"{RUN}-gateway-0") as gateway:  # every role reads ctl/
            await gateway.subscribe(TOPIC)
            await collector.publish(TOPIC, b"marker")
            assert await until_marker(gateway) == [b"announced"]


async def test_a_session_keeps_the_retain_flag_across_a_reconnect_and_in_order():
    broker = MemoryTransport()
    async with Session(broker, "sub", ("r/#",)) as subscriber:
        publisher = Session(broker, "pub")
        await publisher.__aenter__()
        consumer = asyncio.create_task(next_payloads(publisher, 1))  # drives its reconnect
        broker.down = True
        broker.sever(["pub"])
        await asyncio.sleep(0)
        await publisher.publish("r/x", b"a")
        await publisher.publish("r/a", b"retained", retain=True)
        await publisher.publish_many([("r/x", b"b"), ("r/x", b"c")])
        await publisher.publish("r/a", b"retained", retain=True)  # a duplicate: queued once
        assert publisher.unsent() == 4
        broker.down = False
        assert await next_payloads(subscriber, 4) == [b"a", b"retained", b"b", b"c"]
        assert broker.retained == {"r/a": b"retained"}
        consumer.cancel()
        await publisher.__aexit__(None, None, None)


async def test_a_gateway_channel_passes_the_retain_flag_to_the_broker():
    creds = Credentials.generate(RUN, ["d0001"])
    broker = MemoryTransport(credentials=creds)
    gateway = Gateway(broker, f"{RUN}-gateway-0", credentials=creds)
    try:
        async with gateway.connect(f"{RUN}-d0001") as channel:
            await channel.publish(topics.up(RUN, "d0001", "hello"), b"h", retain=True)
            await channel.publish(TOPIC, b"forged", retain=True)  # refused at the gateway
        assert broker.retained == {topics.up(RUN, "d0001", "hello"): b"h"}
        assert (f"{RUN}-d0001", "publish", TOPIC) in gateway.denied
    finally:
        await gateway.close()


class Recorder:
    """A connection that records what it was asked to publish."""

    client_id = "recorder"

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    async def publish(self, topic, payload, qos=1, retain=False):
        self.calls.append(("publish", topic, retain))

    async def publish_many(self, items, qos=1):
        self.calls.append(("many", [topic for topic, _ in items]))


async def test_publish_outbound_keeps_the_order_and_publishes_retained_items_alone():
    machine = Machine()

    def reject(seq: int) -> Reject:
        return Reject(
            run=RUN, sender="collector", seq=seq, device="", topic="", kind="", reason="x"
        )

    for name, retain in [("a", False), ("b", False), ("c", True), ("d", False), ("e", True)]:
        machine._send(f"t/{name}", reject(1), retain=retain)
    conn = Recorder()
    assert await publish_outbound(conn, machine) == 5
    assert conn.calls == [
        ("many", ["t/a", "t/b"]),
        ("publish", "t/c", True),
        ("many", ["t/d"]),
        ("publish", "t/e", True),
    ]
    machine._send("t/f", reject(2), retain=True)
    await publish_outbound(conn, machine)
    machine._send("t/g", reject(3))
    machine._send("t/h", reject(4))
    await publish_outbound(conn, machine)
    assert conn.calls[4:] == [("publish", "t/f", True), ("many", ["t/g", "t/h"])]


# --- the rendezvous pumps --------------------------------------------------------------


async def test_collector_first_the_fleet_meets_the_retained_announcement():
    broker = MemoryTransport()
    announcer = RunAnnouncer(RUN, TERMS, epoch=41)
    async with broker.connect(f"{RUN}-collector") as conn:
        await announcer.open(conn)
    message = codec.decode(broker.retained[TOPIC])
    assert isinstance(message, RunOpen) and message.epoch == 41
    epoch = await wait_for_run(broker, RUN, TERMS, client_id=f"{RUN}-fleet", timeout=TIMEOUT)
    assert epoch == 41


async def test_fleet_first_waits_until_the_collector_announces():
    broker = SignalsSubscribe(MemoryTransport())
    fleet = asyncio.create_task(
        wait_for_run(broker, RUN, TERMS, client_id=f"{RUN}-fleet", timeout=TIMEOUT)
    )
    await asyncio.wait_for(broker.subscribed.wait(), TIMEOUT)
    assert not fleet.done()
    announcer = RunAnnouncer(RUN, TERMS)
    async with broker.connect(f"{RUN}-collector") as conn:
        await announcer.open(conn)
        assert await asyncio.wait_for(fleet, TIMEOUT) == announcer.epoch
        await announcer.close(conn, "done")
    closed = codec.decode(broker.transport.retained[TOPIC])
    assert isinstance(closed, RunClosed) and closed.reason == "done"
    assert closed.epoch == announcer.epoch


async def test_no_announcement_gives_the_waiters_sentence_at_the_timeout():
    broker = MemoryTransport()
    with pytest.raises(RunNotAnnounced) as raised:
        await wait_for_run(broker, RUN, TERMS, client_id=f"{RUN}-fleet", timeout=0.3)
    assert str(raised.value) == f"no collector announced run {RUN} within 0.3 s"
    assert isinstance(raised.value, RendezvousError)


async def test_other_terms_refuse_the_run_naming_the_field():
    broker = MemoryTransport()
    async with broker.connect(f"{RUN}-collector") as conn:
        await RunAnnouncer(RUN, RunTerms("stream", "quickstart", 8, 3, TERMS.digest)).open(conn)
    with pytest.raises(RunTermsDiffer) as raised:
        await wait_for_run(broker, RUN, TERMS, client_id=f"{RUN}-fleet", timeout=TIMEOUT)
    assert raised.value.field == "seed"
    assert (raised.value.ours, raised.value.theirs) == (7, 8)
    assert str(raised.value) == raised.value.sentence
    assert "seed 8" in str(raised.value) and "seed 7" in str(raised.value)


async def test_a_lost_retained_delivery_is_recovered_by_resubscribing():
    drops = {"left": 1}

    def drop_first(topic: str, payload: bytes, recipient: str) -> bool:
        if recipient == f"{RUN}-fleet" and drops["left"]:
            drops["left"] -= 1
            return True
        return False

    broker = SignalsSubscribe(MemoryTransport(drop=drop_first))
    async with broker.connect(f"{RUN}-collector") as conn:
        await RunAnnouncer(RUN, TERMS, epoch=5).open(conn)
    epoch = await wait_for_run(
        broker, RUN, TERMS, client_id=f"{RUN}-fleet", timeout=TIMEOUT, resubscribe_every=0.05
    )
    assert epoch == 5 and broker.transport.dropped == 1 and broker.subscriptions >= 2


async def test_junk_and_cleared_payloads_are_ignored_and_an_earlier_close_does_not_end():
    broker = SignalsSubscribe(MemoryTransport())
    async with broker.connect(f"{RUN}-collector") as conn:
        earlier = RunAnnouncer(RUN, TERMS, epoch=1)
        await earlier.open(conn)
        await earlier.close(conn, "finished")  # an earlier collector's retained close
        fleet = asyncio.create_task(
            wait_for_run(broker, RUN, TERMS, client_id=f"{RUN}-fleet", timeout=TIMEOUT)
        )
        await asyncio.wait_for(broker.subscribed.wait(), TIMEOUT)
        await conn.publish(TOPIC, b"{not json")
        await earlier.clear(conn)
        assert TOPIC not in broker.transport.retained
        assert not fleet.done()
        later = RunAnnouncer(RUN, TERMS, epoch=2)
        await later.open(conn)
        assert await asyncio.wait_for(fleet, TIMEOUT) == 2


async def test_with_the_acl_a_device_cannot_announce_and_the_collector_can():
    creds = Credentials.generate(RUN, ["d0001", "d0002"])
    broker = MemoryTransport(credentials=creds)
    forged = RunAnnouncer(RUN, TERMS, epoch=9)
    async with broker.connect(f"{RUN}-d0002") as device:
        await forged.open(device)  # dropped by the broker: devices may not publish ctl/
    assert TOPIC not in broker.retained
    with pytest.raises(RunNotAnnounced):
        await wait_for_run(broker, RUN, TERMS, client_id=f"{RUN}-d0001", timeout=0.3)
    async with broker.connect(f"{RUN}-collector") as conn:
        await RunAnnouncer(RUN, TERMS, epoch=10).open(conn)
    epoch = await wait_for_run(
        broker,
        RUN,
        TERMS,
        client_id=f"{RUN}-d0001",
        timeout=TIMEOUT,
        username="d0001",
        password=creds.password("d0001"),
    )
    assert epoch == 10


def test_the_default_epoch_is_wall_clock_milliseconds():
    before = default_epoch()
    announcer = RunAnnouncer(RUN, TERMS)
    assert before <= announcer.epoch <= default_epoch()
    assert announcer.epoch > 1_600_000_000_000  # ms since 1970, not seconds
    assert announcer.topic == TOPIC and announcer.run == RUN


@pytest.mark.parametrize(
    ("user", "client_suffix", "may_publish"),
    [
        ("collector", "", True),
        ("admin", "-operator", True),
        ("d0001", "", False),
        ("gateway", "-0", False),
        ("relay", "", False),
        ("recorder", "", False),
    ],
)
def test_only_the_collector_may_announce_and_every_role_may_read_it(
    user, client_suffix, may_publish
):
    creds = Credentials.generate(RUN, ["d0001"])
    client_id = f"{RUN}-{user}{client_suffix}"
    assert creds.allowed(user, client_id, "publish", TOPIC) is may_publish
    assert creds.allowed(user, client_id, "subscribe", TOPIC)
    assert creds.allowed(user, client_id, "receive", TOPIC)


def test_the_mosquitto_acl_grants_the_same_on_ctl_run():
    text = mosquitto_acl_text(RUN)
    assert f"pattern read ldp/{RUN}/ctl/#" in text.splitlines()  # every user reads
    collector = text.split("user collector\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert f"topic write ldp/{RUN}/ctl/#" in collector
    writers = [
        block.split("\n", 1)[0]
        for block in text.split("\nuser ")[1:]
        if f"topic write ldp/{RUN}/ctl/#" in block or f"topic write ldp/{RUN}/#" in block
    ]
    assert writers == ["collector", "admin"]


@pytest.mark.parametrize("repeat_every", [None, 0.05])
async def test_repeated_announcements_reach_a_fleet_the_retained_one_missed(repeat_every):
    """A clustered broker that keeps the retained announcement on another node (the
    retained message removed here): without repeats the fleet times out; with
    ``repeat_every`` it opens on the next repeat, and ``close`` ends the repeats."""
    broker = MemoryTransport()
    announcer = RunAnnouncer(RUN, TERMS, epoch=43, repeat_every=repeat_every)
    async with broker.connect(f"{RUN}-collector") as conn:
        await announcer.open(conn)
        del broker.retained[TOPIC]  # this fleet's node never held it
        waiting = wait_for_run(
            broker, RUN, TERMS, client_id=f"{RUN}-fleet", timeout=TIMEOUT if repeat_every else 0.3
        )
        if repeat_every is None:
            with pytest.raises(RunNotAnnounced):
                await waiting
        else:
            assert await waiting == 43
            assert announcer.host.repeats >= 1
        await announcer.close(conn, "done")
        repeats = announcer.host.repeats
        assert announcer.host.next_timer() is None
    assert isinstance(codec.decode(broker.retained[TOPIC]), RunClosed)
    await asyncio.sleep(0)
    assert announcer.host.repeats == repeats  # nothing after the close


async def test_a_collector_of_another_release_refuses_the_run_at_once():
    """Before: an announcement in another message schema version was dropped as undecodable
    and the fleet waited the whole timeout, then said no collector had announced."""
    opened = msgspec.json.decode(codec.encode(RunOpen(
        run=RUN, sender=topics.COLLECTOR_ID, epoch=5, kind="stream", scenario="quickstart",
        seed=7, devices=3, digest=TERMS.digest,
    )))  # fmt: skip
    broker = MemoryTransport()
    async with broker.connect(f"{RUN}-collector") as conn:
        future = {**opened, "v": 2, "a_field_of_release_2": True}
        await conn.publish(TOPIC, msgspec.json.encode(future), retain=True)
    with pytest.raises(RunTermsDiffer) as raised:  # refused at once, not at the 600 s timeout
        await asyncio.wait_for(
            wait_for_run(broker, RUN, TERMS, client_id=f"{RUN}-fleet", timeout=600.0), TIMEOUT
        )
    assert raised.value.field == "schema_version" and raised.value.ours == 1
    assert "schema version 2 is not supported (expected 1)" in str(raised.value)
    assert "install the same ldpfleet release on both sides" in str(raised.value)
