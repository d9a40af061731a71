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
    client_id_cases,
    cross_device_cases,
    device_allowed,
    device_other_denials,
)

pytestmark = pytest.mark.slow
TIMEOUT = 60.0  # a hang guard: every wait below is for an event that comes (R2: load up to 16)


@pytest.fixture(scope="module")
def creds() -> Credentials:
    return Credentials.generate(RUN, DEVICES, gateways=2)  # LOGINS has 2 bulk gateways


@contextlib.asynccontextmanager
async def mosquitto(tmp_path, creds: Credentials, devices=None, *, client_id_binding=True):
    """A Mosquitto with ``ldpfleet mosquitto-config``'s files, stopped at the end
    (``client_id_binding=False``: without the plugin that binds client ids to logins)."""
    port = free_port()
    paths = write_mosquitto_files(
        tmp_path,
        creds,
        port=port,
        devices=devices,
        persistence=False,
        client_id_binding=client_id_binding,
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
async def test_the_collector_never_receives_the_relays_round_broadcasts(kind, tmp_path, creds):
    # Issue 20: the relay's ctl/peer_step broadcasts follow the negotiation's pace. The
    # collector's login may not read them (amqtt refuses the filters in the SUBACK;
    # Mosquitto grants ctl/# and drops the denied deliveries: ``topic deny``); a device
    # still receives them (the positive control).
    step, phase = f"{P}/ctl/peer_step", f"{P}/svc/relay/phase"
    async with broker(kind, tmp_path, creds) as address:
        transport = MqttTransport(address, connect_attempts=1)
        async with (
            as_user(transport, creds, "relay") as relay,
            as_user(transport, creds, "collector", f"{RUN}-collector-cadr-in-0") as collector,
            as_user(transport, creds, "d0001") as device,
        ):
            await collector.subscribe(phase)
            for pattern in (step, f"{P}/ctl/#", f"{P}/ctl/+"):
                with contextlib.suppress(TransportError):
                    await collector.subscribe(pattern)
            await device.subscribe(f"{P}/ctl/#", f"{P}/dev/d0001/in/+")
            await relay.publish(step, b"round 0")
            await relay.publish(phase, b"end")  # the marker, after the broadcast
            await relay.publish(f"{P}/dev/d0001/in/relay", b"end")
            assert await read_until(collector, phase) == []
            assert await read_until(device, f"{P}/dev/d0001/in/relay") == [step]


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
            # a device with its own password but another's client id (impersonation):
            # refused by both (Mosquitto: the client-id plugin, docs/reliability.md)
            with pytest.raises(TransportError, match="refused"):
                async with transport.connect(
                    f"{RUN}-d0002", username="d0001", password=creds.password("d0001")
                ):
                    pass


@pytest.mark.parametrize("kind", KINDS)
async def test_client_ids_are_bound_to_logins(kind, tmp_path, creds):
    """Every login x a spread of client ids (its own, other identities', other runs',
    malformed): the broker lets exactly those connect that ``AccessPolicy.client_ids_ok``
    allows (on Mosquitto: the C plugin agrees with the Python rule)."""
    cases = client_id_cases()
    async with broker(kind, tmp_path, creds) as address:
        transport = MqttTransport(address, connect_attempts=1)
        outcomes = []
        for user, client_id, _ in cases:
            try:
                async with transport.connect(
                    client_id, username=user, password=creds.password(user)
                ):
                    outcomes.append(True)
            except TransportError as error:
                assert "refused" in str(error), error
                outcomes.append(False)
    wrong = [(u, c, ok) for (u, c, ok), got in zip(cases, outcomes, strict=True) if ok != got]
    assert wrong == [], wrong
    assert sum(outcomes) >= 20 and outcomes.count(False) >= 100


@pytest.mark.parametrize("kind", KINDS)
async def test_no_identity_takes_over_another_s_session(kind, tmp_path):
    """The issue's attack: device d0000's login (and every other non-admin login) connects
    with the collector's, the recorder's, another device's (and the relay's, a gateway's,
    the admin's) client id, with a clean and a persistent session. Every attempt is refused,
    and every real session is still connected and receives a message published after."""
    creds = Credentials.generate(RUN, ("d0000", *DEVICES))
    policy = creds.policy
    victims = {  # client id -> (login, persistent session?)
        f"{RUN}-collector": ("collector", True),
        f"{RUN}-recorder": ("recorder", True),
        f"{RUN}-relay": ("relay", False),
        f"{RUN}-gateway-0": ("gateway", False),
        f"{RUN}-d0001": ("d0001", False),
        f"{RUN}-d0001-sa": ("d0001", False),
        f"{RUN}-operator": (ADMIN, False),
    }
    attackers = ("d0000", "d0002", "collector", "recorder", "relay", "gateway")
    marker = f"{P}/ctl/after-the-attempts"
    async with broker(kind, tmp_path, creds) as address, contextlib.AsyncExitStack() as stack:
        transport = MqttTransport(address, connect_attempts=1)
        sessions = {}
        for client_id, (user, persistent) in victims.items():
            conn = await stack.enter_async_context(
                transport.connect(
                    client_id,
                    clean_session=not persistent,
                    username=user,
                    password=creds.password(user),
                )
            )
            # every identity may read the broadcasts; the collector by name (ctl/# could
            # match the relay's ctl/peer_step, denied to it: broker.auth.DENIED)
            await conn.subscribe(marker if user == "collector" else f"{P}/ctl/#")
            sessions[client_id] = (conn, asyncio.ensure_future(conn.wait_lost()))
        attempts = 0
        for user in attackers:
            for client_id in victims:
                if policy.client_ids_ok(user, client_id):
                    continue  # its own (d0001's second connection is not an attack)
                for clean in (True, False):
                    with pytest.raises(TransportError, match="refused"):
                        async with transport.connect(
                            client_id,
                            clean_session=clean,
                            username=user,
                            password=creds.password(user),
                        ):
                            pass
                    attempts += 1
        assert attempts == 2 * (len(attackers) * len(victims) - 4)  # minus the 4 own ids
        admin, _ = sessions[f"{RUN}-operator"]
        await admin.publish(marker, b"still there?")
        for client_id, (conn, lost) in sessions.items():
            first = await asyncio.wait_for(anext(aiter(conn.messages())), TIMEOUT)
            assert (first.topic, first.payload) == (marker, b"still there?"), client_id
            assert not lost.done(), f"{client_id} lost its connection"
            lost.cancel()


@pytest.mark.mosquitto
async def test_without_the_plugin_a_device_knocks_the_collector_off_mosquitto(tmp_path):
    """The control that shows the test above can fail: Mosquitto with only the password
    file and the ACL (``client_id_binding=False``) lets d0000 take the collector's session."""
    creds = Credentials.generate(RUN, ("d0000", *DEVICES))
    async with mosquitto(tmp_path, creds, client_id_binding=False) as address:
        transport = MqttTransport(address, connect_attempts=1, credentials=creds)
        async with transport.connect(f"{RUN}-collector", clean_session=False) as collector:
            await collector.subscribe(f"{P}/dev/+/up/#")
            lost = asyncio.ensure_future(collector.wait_lost())
            async with transport.connect(
                f"{RUN}-collector", username="d0000", password=creds.password("d0000")
            ):
                await asyncio.wait_for(lost, TIMEOUT)  # the real collector is gone


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
