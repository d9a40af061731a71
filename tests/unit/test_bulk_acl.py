"""Bulk gateway identities in the ACL (issue 23, broker/auth.py): gateway ``g`` publishes
only its own uplink and reads only its own inbox, a device and the IoT ``gateway`` service
reach no bulk topic, client ids are bound, and the Mosquitto ACL grants the same."""

from __future__ import annotations

import itertools

import pytest
from ldpfleet.broker.auth import (
    BULK_GATEWAY,
    AccessPolicy,
    Credentials,
    mosquitto_acl_text,
    mosquitto_password_lines,
    topic_matches,
)
from ldpfleet.protocol.bulk import gateway_inbox, gateway_up, gateway_up_filter, stage_topic

RUN = "bulk1"


def cid(user: str) -> str:
    return f"{RUN}-{user}"


@pytest.fixture(params=[None, 2], ids=["unpartitioned", "partitioned"])
def level(request):
    return request.param


def policy(level) -> AccessPolicy:
    return AccessPolicy(RUN, frozenset({"d0001"}), 1 if level is None else 4, gateways=3)


def test_a_gateway_publishes_its_own_uplink_and_not_another_s(level):
    acl = policy(level)
    me, client = "gateway-g1", cid("gateway-g1")
    assert acl.role_of(me) == BULK_GATEWAY
    for kind in ("hello", "bulk"):
        assert acl.allowed(me, client, "publish", gateway_up(RUN, 1, kind, level))
        for other in (0, 2, 10, 11):
            assert not acl.allowed(me, client, "publish", gateway_up(RUN, other, kind, level))
    # not as the collector into any inbox, not the broadcasts
    for g in (0, 1, 2):
        assert not acl.allowed(me, client, "publish", gateway_inbox(RUN, g, level))
    assert not acl.allowed(me, client, "publish", stage_topic(RUN))


def test_a_gateway_reads_only_its_own_inbox(level):
    acl = policy(level)
    me, client = "gateway-g1", cid("gateway-g1")
    assert acl.allowed(me, client, "subscribe", gateway_inbox(RUN, 1, level))
    assert acl.allowed(me, client, "subscribe", stage_topic(RUN))
    for action in ("subscribe", "receive"):
        assert not acl.allowed(me, client, action, gateway_inbox(RUN, 0, level))
        assert not acl.allowed(me, client, action, gateway_up(RUN, 0, "bulk", level))
    assert not acl.allowed(me, client, "subscribe", f"ldp/{RUN}/gw/+/in/collector")
    assert not acl.allowed(me, client, "subscribe", f"ldp/{RUN}/+/gw/+/in/collector")
    assert not acl.allowed(me, client, "subscribe", gateway_up_filter(RUN, level))


def test_the_collector_reads_every_uplink_and_writes_every_inbox(level):
    acl = policy(level)
    client = cid("collector" if level is None else f"collector-p{level}")
    assert acl.allowed("collector", client, "subscribe", gateway_up_filter(RUN, level))
    assert acl.allowed("collector", client, "publish", gateway_inbox(RUN, 2, level))
    assert acl.allowed("collector", cid("collector-closer"), "publish", stage_topic(RUN))
    assert not acl.allowed("collector", client, "publish", gateway_up(RUN, 2, "bulk", level))


def test_devices_and_the_iot_gateway_reach_no_bulk_topic(level):
    acl = policy(level)
    for user, client in (("d0001", cid("d0001")), ("gateway", cid("gateway"))):
        for g, kind in itertools.product((0, 1), ("hello", "bulk")):
            assert not acl.allowed(user, client, "publish", gateway_up(RUN, g, kind, level))
            assert not acl.allowed(user, client, "publish", gateway_inbox(RUN, g, level))
            assert not acl.allowed(user, client, "receive", gateway_inbox(RUN, g, level))


def test_gateway_identities_and_client_ids_are_bound():
    acl = policy(None)
    assert acl.role_of("gateway-g2") == BULK_GATEWAY
    for name in ("gateway-g3", "gateway-g03", "gateway-g-1", "gateway-g", "gateway-gx"):
        assert acl.role_of(name) != BULK_GATEWAY, name
    assert AccessPolicy(RUN).role_of("gateway-g0") is None  # no gateways by default
    assert acl.client_ids_ok("gateway-g1", cid("gateway-g1"))
    for other in ("gateway-g2", "gateway-g1-x", "g1", "gateway-g1-sa"):
        assert not acl.client_ids_ok("gateway-g1", cid(other))
    # the IoT gateway service may not take a bulk gateway's session
    assert acl.client_ids_ok("gateway", cid("gateway-shard0"))
    assert not acl.client_ids_ok("gateway", cid("gateway-g1"))
    assert not acl.allowed(
        "gateway", cid("gateway-g1"), "publish", gateway_up(RUN, 1, "bulk", None)
    )
    creds = Credentials.generate(RUN, (), partitions=4, gateways=3)
    assert creds.for_client(cid("gateway-g2")) == ("gateway-g2", creds.password("gateway-g2"))
    assert creds.for_client(cid("gateway-g3")) is None
    assert creds.for_client(cid("collector-p1"))[0] == "collector"
    assert creds.authenticate("gateway-g2", creds.password("gateway-g2"), cid("gateway-g2"))
    assert not creds.authenticate("gateway-g2", creds.password("gateway-g1"), cid("gateway-g2"))
    assert Credentials.from_dict(creds.to_dict()) == creds
    users = [line.split(":", 1)[0] for line in mosquitto_password_lines(creds).splitlines()]
    assert users[-3:] == ["gateway-g0", "gateway-g1", "gateway-g2"]


def mosquitto_allows(text: str, user: str, action: str, topic: str) -> bool:
    """Mosquitto's reading of an ACL file for a concrete topic: ``pattern`` lines (``%u``)
    for everyone, ``topic`` lines of the user's own block."""
    want = "write" if action == "publish" else "read"
    owner = None
    for line in text.splitlines():
        if line.startswith("user "):
            owner = line.split(" ", 1)[1]
            continue
        kind, access, pattern = [*line.split(" ", 2), "", ""][:3]
        if access != want or kind not in ("pattern", "topic"):
            continue
        if kind == "topic" and owner != user:
            continue
        if topic_matches(pattern.replace("%u", user), topic):
            return True
    return False


@pytest.mark.parametrize("partitions", [1, 3])
def test_the_mosquitto_acl_grants_the_same_bulk_rights(partitions):
    acl = AccessPolicy(RUN, frozenset(), partitions, gateways=3)
    text = mosquitto_acl_text(RUN, partitions, gateways=3)
    assert text.count("\nuser gateway-g") == 3
    assert "%g" not in text
    levels = [None] if partitions == 1 else list(range(partitions))
    topics = [stage_topic(RUN)]
    for g, level in itertools.product(range(4), levels):
        topics += [gateway_up(RUN, g, k, level) for k in ("hello", "bulk")]
        topics.append(gateway_inbox(RUN, g, level))
    users = {"collector": "collector-p0", "gateway": "gateway", "recorder": "recorder"}
    users |= {f"gateway-g{g}": f"gateway-g{g}" for g in range(3)}
    checked = 0
    for (user, tail), topic, action in itertools.product(
        users.items(), topics, ("publish", "receive")
    ):
        expected = acl.allowed(user, cid(tail), action, topic)
        assert mosquitto_allows(text, user, action, topic) == expected, (user, action, topic)
        checked += expected
    assert checked > 0
    # the gateway not in the run has no block and reaches nothing but the broadcasts
    assert not mosquitto_allows(text, "gateway-g3", "publish", gateway_up(RUN, 3, "bulk", None))
