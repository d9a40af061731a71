"""Tier 3: retained messages and the run rendezvous (``RunAnnouncer`` / ``wait_for_run``)
on real brokers: the embedded amqtt broker with the run's credentials and ACL, a Mosquitto
started here with ``ldpfleet mosquitto-config``'s files (password file, ACL), and the shared
Mosquitto on 127.0.0.1:1883 (anonymous, so a fresh run id per test, and the retained
message is cleared at the end: the shared broker keeps nothing). The embedded broker also
runs once with ``LDPFLEET_MQTT_CLIENT=aiomqtt``.

"Nothing else was retained" is decided by a marker published (not retained) on the same
topic after the subscription was acknowledged: brokers send a subscription's retained
messages before anything published later, so no sleep decides a result."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest
from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.embedded import EmbeddedBroker
from ldpfleet.broker.mqtt import MqttTransport
from ldpfleet.collector.rendezvous import RunAnnouncer
from ldpfleet.devices.rendezvous import RunTermsDiffer, wait_for_run
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.rendezvous import RunOpen, RunTerms, scenario_digest

from tests.e2e.test_acl_brokers import mosquitto
from tests.unit.test_retained import TIMEOUT, SignalsSubscribe, until_marker

DEVICES = ("d0001", "d0002")
TERMS = RunTerms("stream", "quickstart", 7, 2, scenario_digest({"a": 1}))

KINDS = [
    pytest.param("embedded", marks=pytest.mark.embedded),
    pytest.param("mosquitto-acl", marks=pytest.mark.mosquitto),
    pytest.param("mosquitto", marks=pytest.mark.mosquitto),
]


@contextlib.asynccontextmanager
async def broker(kind: str, request, tmp_path):
    """(transport, run, secured) on a fresh run id: ``secured`` if the ACL is on."""
    run = f"rv{uuid.uuid4().hex[:10]}"
    creds = Credentials.generate(run, DEVICES)
    if kind == "embedded":
        async with EmbeddedBroker(credentials=creds) as embedded:
            yield MqttTransport(embedded.address, credentials=creds, connect_attempts=2), run, True
    elif kind == "mosquitto-acl":
        async with mosquitto(tmp_path, creds) as address:
            yield MqttTransport(address, credentials=creds, connect_attempts=2), run, True
    else:
        url = request.getfixturevalue("mosquitto_url")
        transport = MqttTransport(url, connect_attempts=2)
        try:
            yield transport, run, False
        finally:  # the shared Mosquitto keeps no retained message of ours
            async with transport.connect(f"{run}-collector") as conn:
                await RunAnnouncer(run, TERMS, epoch=0).clear(conn)


@pytest.mark.parametrize("kind", KINDS)
async def test_retained_late_subscriber_replacement_deletion_and_acl(kind, request, tmp_path):
    async with broker(kind, request, tmp_path) as (transport, run, secured):
        topic = topics.ctl(run, "run")
        async with (
            transport.connect(f"{run}-collector") as collector,
            transport.connect(f"{run}-d0002") as device,
        ):
            await collector.publish(topic, b"first", retain=True)
            await collector.publish(topic, b"second", retain=True)  # replaces the first
            if secured:  # devices may not publish on ctl/: dropped, not retained
                await device.publish(topic, b"forged", retain=True)
            async with transport.connect(f"{run}-d0001") as late:
                await late.subscribe(topic)
                await collector.publish(topic, b"marker")
                assert await until_marker(late) == [b"second"]
            await collector.publish(topic, b"", retain=True)  # deletes it
            async with transport.connect(f"{run}-d0001") as later:
                await later.subscribe(topics.ctl_filter(run))
                await collector.publish(topic, b"marker")
                assert await until_marker(later) == []


async def both_orders(transport, run: str) -> None:
    """``wait_for_run`` with the collector first, then (cleared) with the fleet first."""
    first = RunAnnouncer(run, TERMS, epoch=1)
    async with transport.connect(f"{run}-collector") as collector:
        try:
            await first.open(collector)
            epoch = await wait_for_run(
                transport, run, TERMS, client_id=f"{run}-d0001", timeout=TIMEOUT
            )
            assert epoch == 1
            await first.clear(collector)

            watched = SignalsSubscribe(transport)
            fleet = asyncio.create_task(
                wait_for_run(watched, run, TERMS, client_id=f"{run}-d0001", timeout=TIMEOUT)
            )
            await asyncio.wait_for(watched.subscribed.wait(), TIMEOUT)
            assert not fleet.done()  # nothing retained: the fleet waits
            second = RunAnnouncer(run, TERMS, epoch=2)
            await second.open(collector)
            assert await asyncio.wait_for(fleet, TIMEOUT) == 2

            # the retained announcement as a late reader sees it, then other terms refuse
            async with transport.connect(f"{run}-d0002") as reader:
                await reader.subscribe(topics.ctl(run, "run"))
                delivery = await asyncio.wait_for(anext(aiter(reader.messages())), TIMEOUT)
                message = codec.decode(delivery.payload)
                assert isinstance(message, RunOpen) and message.epoch == 2
            other = RunTerms("stream", "quickstart", 7, 3, TERMS.digest)
            with pytest.raises(RunTermsDiffer) as raised:
                await wait_for_run(transport, run, other, client_id=f"{run}-d0002", timeout=TIMEOUT)
            assert raised.value.field == "devices"
        finally:
            await first.clear(collector)


@pytest.mark.parametrize("kind", KINDS)
async def test_wait_for_run_in_both_orders(kind, request, tmp_path):
    async with broker(kind, request, tmp_path) as (transport, run, _):
        await both_orders(transport, run)


@pytest.mark.embedded
async def test_wait_for_run_in_both_orders_with_aiomqtt(request, tmp_path, monkeypatch):
    monkeypatch.setenv("LDPFLEET_MQTT_CLIENT", "aiomqtt")
    async with broker("embedded", request, tmp_path) as (transport, run, _):
        async with transport.connect(f"{run}-d0001") as probe:
            assert type(probe).__name__ == "MqttConnection"
        await both_orders(transport, run)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_client_gets_only_its_own_filters_retained_messages(kind, request, tmp_path):
    """amqtt 0.12 handed a connecting client the retained messages of EVERY client's
    filters (broker/embedded.py fixes it): with the recorder on ``ldp/{run}/#``, a device
    subscribed to ``ctl/stage`` only must not receive the retained ``ctl/run``; and clients
    connecting while others subscribe must not break the broker."""
    async with (
        broker(kind, request, tmp_path) as (transport, run, _secured),
        transport.connect(f"{run}-recorder") as recorder,
        transport.connect(f"{run}-collector") as collector,
    ):
        await recorder.subscribe(f"ldp/{run}/#")
        await collector.publish(topics.ctl(run, "run"), b"announcement", retain=True)
        stage = topics.ctl(run, "stage")

        async def device(name: str) -> list[bytes]:
            async with transport.connect(f"{run}-{name}") as conn:
                await conn.subscribe(stage)
                await collector.publish(stage, b"marker")
                return await until_marker(conn)

        seen = await asyncio.gather(*(device(name) for name in DEVICES))
        assert seen == [[], []]
        await collector.publish(topics.ctl(run, "run"), b"", retain=True)
