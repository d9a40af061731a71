"""``broker.session.Session`` on the in-memory broker: reconnect, resubscribe, republish."""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.session import Session
from ldpfleet.broker.transport import ConnectionLost, ConnectionRefused, MemoryTransport

TIMEOUT = 5.0


async def collect(session: Session, count: int) -> list[bytes]:
    received = []
    async for delivery in session.messages():
        received.append(delivery.payload)
        if len(received) == count:
            return received
    return received


async def test_a_severed_session_reconnects_resubscribes_and_goes_on():
    broker = MemoryTransport()
    async with (
        Session(broker, "sub", ("t/#",)) as subscriber,
        Session(broker, "pub") as publisher,
    ):
        reader = asyncio.create_task(collect(subscriber, 2))
        await publisher.publish("t/1", b"one")
        await asyncio.sleep(0)
        assert broker.sever(["sub"]) == 1
        # the subscriber comes back by itself and is subscribed again
        while not subscriber.connected or subscriber.reconnects == 0:
            await asyncio.sleep(0.01)
        await publisher.publish("t/2", b"two")
        assert await asyncio.wait_for(reader, TIMEOUT) == [b"one", b"two"]
        assert subscriber.reconnects == 1 and publisher.reconnects == 0


async def test_what_is_published_into_an_outage_is_sent_once_after_it_in_order():
    broker = MemoryTransport()
    async with Session(broker, "sub", ("t/#",)) as subscriber:
        publisher = Session(broker, "pub")
        await publisher.__aenter__()
        consumer = asyncio.create_task(collect(publisher, 1))  # drives its reconnect
        broker.down = True  # the publisher's link fails (the subscriber's stays up)
        broker.sever(["pub"])
        await asyncio.sleep(0)
        for payload in (b"a", b"b", b"a", b"c"):  # the second "a" is a retransmission
            await publisher.publish("t/x", payload)
        assert publisher.unsent() == 3  # queued, de-duplicated
        broker.down = False
        received = await asyncio.wait_for(collect(subscriber, 3), TIMEOUT)
        assert received == [b"a", b"b", b"c"]
        assert publisher.unsent() == 0 and publisher.republished == 3
        consumer.cancel()
        await publisher.__aexit__(None, None, None)


async def test_a_session_gives_up_after_its_limit():
    broker = MemoryTransport()
    async with Session(broker, "dev", ("t/#",), give_up_after=0.2) as session:
        with broker.outage(), pytest.raises(ConnectionLost, match="give_up_after"):
            await asyncio.wait_for(collect(session, 1), TIMEOUT)


async def test_a_refused_login_is_not_retried():
    creds = Credentials.generate("r1", ["d0001"])
    broker = MemoryTransport(credentials=creds)
    with pytest.raises(ConnectionRefused):
        async with Session(broker, "r1-d0001-x", ()) as session:  # no identity: refused
            del session


async def test_the_reconnect_warning_names_the_client_once(caplog):
    """The transports' ``ConnectionLost`` sentence starts with the client id already: the
    warning read "sub: sub: connection lost (severed); reconnecting" (helper R)."""
    broker = MemoryTransport()
    async with Session(broker, "sub", ("t/#",)) as subscriber:
        reader = asyncio.create_task(collect(subscriber, 1))
        await asyncio.sleep(0)
        with caplog.at_level("WARNING", logger="ldpfleet.broker.session"):
            assert broker.sever(["sub"]) == 1
            while subscriber.reconnects == 0:
                await asyncio.sleep(0.01)
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
    lines = [r.getMessage() for r in caplog.records if "reconnecting" in r.getMessage()]
    assert lines == ["sub: connection lost (severed); reconnecting"], lines
