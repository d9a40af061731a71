"""The ACL matrix against real brokers: the embedded amqtt broker with auth on, and a
Mosquitto started here with the generated password file, ACL and config (free port).

What is checked is broker behaviour: an unauthorised publish never reaches a subscriber
with full rights (the run's admin on ``ldp/{run}/#``), an unauthorised subscription
delivers nothing (amqtt refuses it in the SUBACK; Mosquitto 2.0 grants it and filters
every delivery), and anonymous, bad-password, unknown-user and (embedded) client-id !=
username connections are refused. Each check ends on a marker message from the same
publisher, so "nothing else arrived" is decided by ordering, never by a sleep."""

from __future__ import annotations

import asyncio
import contextlib
import os

import pytest
from ldpfleet.broker.auth import ADMIN, Credentials, write_mosquitto_files
from ldpfleet.broker.embedded import EmbeddedBroker
from ldpfleet.broker.mqtt import BrokerAddress, MqttTransport
from ldpfleet.broker.transport import TransportError
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import free_port
from tests.mosquitto_process import MosquittoProcess
from tests.unit.test_acl import (
    DEVICES,
    RUN,
    SERVICE_ALLOWED,
    SERVICE_DENIED,
    P,
    cross_device_cases,
    device_allowed,
    device_other_denials,
)

pytestmark = pytest.mark.slow
TIMEOUT = 10.0


@pytest.fixture(scope="module")
def creds() -> Credentials:
    return Credentials.generate(RUN, DEVICES)


@contextlib.asynccontextmanager
async def mosquitto(tmp_path, creds: Credentials, devices=None):
    """A Mosquitto with ``ldpfleet mosquitto-config``'s files, stopped at the end."""
    port = free_port()
    paths = write_mosquitto_files(
        tmp_path,
        creds,
        port=port,
        devices=devices,
        persistence=False,
        # Mosquitto started by root drops to 'mosquitto' before reading the password file,
        # which cannot traverse pytest's 0700 tmp directory
        user="root" if os.geteuid() == 0 else None,
    )
    with paths["conf"].open("a") as conf:
        # "mosquitto ... running" (an information line) tells the fixture it listens
        conf.write("log_dest stderr\nlog_type information\n")
    async with MosquittoProcess(paths["conf"]):
        yield BrokerAddress("127.0.0.1", port)


@contextlib.asynccontextmanager
async def broker(kind: str, tmp_path, creds: Credentials):
    if kind == "embedded":
        async with EmbeddedBroker(credentials=creds) as embedded:
            yield embedded.address
    else:
        async with mosquitto(tmp_path, creds) as address:
            yield address


KINDS = [
    pytest.param("embedded", marks=pytest.mark.embedded),
    pytest.param("mosquitto", marks=pytest.mark.mosquitto),
]


def as_user(transport: MqttTransport, creds: Credentials, user: str, client_id: str | None = None):
    if client_id is None:
        client_id = f"{RUN}-{user}" if user != ADMIN else f"{RUN}-operator"
    return transport.connect(client_id, username=user, password=creds.password(user))


async def read_until(conn, marker: str) -> list[str]:
    """Topics delivered to ``conn`` before ``marker`` (which must arrive in time)."""
    seen: list[str] = []

    async def pump() -> None:
        async for delivery in conn.messages():
            if delivery.topic == marker:
                return
            seen.append(delivery.topic)

    await asyncio.wait_for(pump(), TIMEOUT)
    return seen


def in_run(topic: str) -> bool:
    return topic.startswith(f"{P}/")


def publishable(topic: str) -> bool:
    """A topic a client can send at all (not a protocol error, which closes the link)."""
    return bool(topic) and not topic.startswith("$") and not any(c in topic for c in "+#\x00")


def valid_filter(pattern: str) -> bool:
    levels = pattern.split("/")
    return bool(pattern) and all(
        ("#" not in lv or (lv == "#" and i == len(levels) - 1)) and ("+" not in lv or lv == "+")
        for i, lv in enumerate(levels)
    )


@pytest.mark.parametrize("kind", KINDS)
async def test_unauthorised_publishes_never_reach_a_full_rights_subscriber(kind, tmp_path, creds):
    async with broker(kind, tmp_path, creds) as address:
        transport = MqttTransport(address, connect_attempts=1)
        async with as_user(transport, creds, ADMIN) as observer:
            await observer.subscribe(f"{P}/#")
            denied_sent = allowed_sent = 0
            for index, (me, other) in enumerate([("d0001", "d0002"), ("d0002", "d0003")]):
                async with as_user(transport, creds, me) as device:
                    expected = []
                    cases = [
                        *((a, t, False) for a, t in cross_device_cases(me, other)),
                        *((a, t, False) for a, t in device_other_denials(me)),
                        *((a, t, True) for a, t in device_allowed(me, other)),
                    ]
                    for action, topic, ok in cases:
                        if action != "publish" or not publishable(topic):
                            continue
                        await device.publish(topic, b"x")
                        if ok:
                            expected.append(topic)
                            allowed_sent += 1
                        else:
                            denied_sent += 1
                    marker = f"{P}/dev/{me}/up/marker{index}"
                    await device.publish(marker, b"end")
                    seen = await read_until(observer, marker)
                    assert seen == expected, set(seen) ^ set(expected)
            # services: their own rights, and none of the others'
            for role in ("collector", "recorder", "relay"):
                async with as_user(transport, creds, role, f"{RUN}-{role}-in-0") as service:
                    expected = []
                    for action, topic in SERVICE_ALLOWED[role] + SERVICE_DENIED[role]:
                        if action != "publish" or not publishable(topic):
                            continue
                        await service.publish(topic, b"x")
                        if (action, topic) in SERVICE_ALLOWED[role] and in_run(topic):
                            expected.append(topic)
                    marker = f"{P}/svc/{role}/marker"  # a topic only admin may publish
                    await observer.publish(marker, b"end")
                    seen = await read_until(observer, marker)
                    assert seen == expected, (role, set(seen) ^ set(expected))
    assert denied_sent >= 40 and allowed_sent >= 15


@pytest.mark.parametrize("kind", KINDS)
async def test_unauthorised_subscriptions_receive_nothing(kind, tmp_path, creds):
    async with broker(kind, tmp_path, creds) as address:
        transport = MqttTransport(address, connect_attempts=1)
        async with as_user(transport, creds, ADMIN) as admin:
            for me, other in [("d0001", "d0002"), ("d0003", "d0001")]:
                async with as_user(transport, creds, me) as device:
                    await device.subscribe(f"{P}/dev/{me}/in/+")  # its own inbox
                    refused = granted = 0
                    filters = [
                        t
                        for a, t in cross_device_cases(me, other) + device_other_denials(me)
                        if a == "subscribe" and valid_filter(t)
                    ]
                    for pattern in filters:
                        try:
                            await device.subscribe(pattern)
                            granted += 1
                        except TransportError:
                            refused += 1
                    if kind == "embedded":  # amqtt refuses them in the SUBACK
                        assert granted == 0 and refused == len(filters)
                    # everything those filters could bring, published with full rights
                    victims = [
                        f"{P}/dev/{other}/in/collector",
                        f"{P}/dev/{other}/in/{me}",
                        f"{P}/dev/{other}/in/relay",
                        f"{P}/dev/{other}/up/hello",
                        f"{P}/dev/{other}/up/a/b",
                        f"{P}/dev/{me}/up/hello",
                        f"{P}/svc/collector/reject",
                        f"{P}/rel/degrees",
                    ]  # (not ctl/*: a device may read broadcasts, through any filter)
                    for topic in victims:
                        await admin.publish(topic, b"secret")
                    marker = f"{P}/dev/{me}/in/{ADMIN}"
                    await admin.publish(marker, b"end")
                    seen = await read_until(device, marker)
                    assert seen == [], seen


@pytest.mark.parametrize("kind", KINDS)
async def test_sys_topics_only_for_admin(kind, tmp_path, creds):
    async with broker(kind, tmp_path, creds) as address:
        transport = MqttTransport(address, connect_attempts=1)
        async with (
            as_user(transport, creds, "d0001") as device,
            as_user(transport, creds, ADMIN) as admin,
        ):
            await device.subscribe(f"{P}/dev/d0001/in/+")
            with contextlib.suppress(TransportError):
                await device.subscribe("$SYS/#")
            marker = f"{P}/dev/d0001/in/{ADMIN}"
            await admin.publish(marker, b"end")  # retained $SYS messages would come first
            assert await read_until(device, marker) == []
            if kind == "mosquitto":  # positive control: Mosquitto retains $SYS/broker/version
                await admin.subscribe("$SYS/#")
                first = await asyncio.wait_for(anext(aiter(admin.messages())), TIMEOUT)
                assert first.topic.startswith("$SYS/")


@pytest.mark.parametrize("kind", KINDS)
async def test_refused_connections(kind, tmp_path, creds):
    async with broker(kind, tmp_path, creds) as address:
        transport = MqttTransport(address, connect_attempts=1)
        attempts = [
            (f"{RUN}-d0001", None, None),  # anonymous
            (f"{RUN}-d0001", "d0001", "wrong"),
            (f"{RUN}-d0001", "d0001", creds.password("d0002")),
            (f"{RUN}-d9999", "d9999", creds.password("d9999")),  # not a device of the run
            (f"{RUN}-dé", "dé", creds.password("dé")),
            (f"{RUN}-collector", "collector", creds.password("recorder")),
        ]
        async with (
            as_user(transport, creds, ADMIN) as admin,
            as_user(transport, creds, "d0001") as victim,
        ):
            await victim.subscribe(f"{P}/dev/d0001/in/+")
            await admin.subscribe(f"{P}/#")
            for client_id, user, password in attempts:
                with pytest.raises(TransportError, match="refused"):
                    async with transport.connect(client_id, username=user, password=password):
                        pass
            # the victim's session survived the attempts on its client id
            marker = f"{P}/dev/d0001/in/{ADMIN}"
            await admin.publish(marker, b"end")
            assert await read_until(victim, marker) == []
            # a device with its own password but another's client id (impersonation)
            impostor = transport.connect(
                f"{RUN}-d0002", username="d0001", password=creds.password("d0001")
            )
            if kind == "embedded":
                with pytest.raises(TransportError, match="refused"):
                    async with impostor:
                        pass
            else:
                # Mosquitto cannot bind client ids to users when one user has several
                # connections (docs/reliability.md); the impostor gets d0001's rights only
                async with impostor as conn:
                    await conn.subscribe(f"{P}/dev/d0002/in/+")
                    await conn.publish(f"{P}/dev/d0002/up/hello", b"forged")
                    await admin.publish(f"{P}/dev/d0002/in/collector", b"secret")
                    await conn.publish(f"{P}/dev/d0001/up/marker", b"end")
                    seen = await read_until(admin, f"{P}/dev/d0001/up/marker")
                    assert f"{P}/dev/d0002/up/hello" not in seen
                    marker = f"{P}/dev/d0001/in/{ADMIN}"
                    # its own inbox is d0001's; d0002's secret never reaches it
                    await conn.subscribe(f"{P}/dev/d0001/in/+")
                    await admin.publish(marker, b"end")
                    assert await read_until(conn, marker) == []


SMALL = """
[scenario]
name = "aclrun"
[fleet]
devices = 12
[stream]
steps = 40
eps = 2.0
w = 4
[source]
kind = "synthetic"
bounds = [-1.5, 1.5]
"""


@pytest.mark.mosquitto
async def test_a_run_on_mosquitto_with_generated_credentials_matches_memory(tmp_path):
    scenario = parse_scenario(SMALL)
    creds = Credentials.generate("aclrun-1", scenario.device_ids())
    async with mosquitto(tmp_path / "mq", creds) as address:
        results = await run_scenario(
            scenario, broker=address.url, out_dir=tmp_path / "out", credentials=creds
        )
        # and nobody gets in without them
        with pytest.raises((TransportError, ExceptionGroup)) as caught:
            await run_scenario(scenario, broker=address.url, out_dir=tmp_path / "anon")
        errors = getattr(caught.value, "exceptions", [caught.value])
        assert any(isinstance(e, TransportError) and "refused" in str(e) for e in errors)
    memory = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "mem")
    assert results["broker"]["auth"] and memory["broker"]["auth"]
    assert results["run"] == "aclrun-1" and results["reports_lost"] == 0
    assert results["devices_complete"] == 12
    assert results["per_device"] == memory["per_device"]
