"""The ACL's speed-ups decide exactly as before (helper A, 2026-12-07 evening, claim A6).

``AccessPolicy`` remembers per policy what does not depend on the topic (a client id's
check, a role's rule templates, each rule split into its levels) and matches a topic's
levels against the pre-split rules. ``_frozen_decide`` below is a copy of the decision code
before that change (``client_ids_ok``, ``rules_for``, ``denied_for``, ``topic_matches``,
``filter_covers``, ``valid_topic`` as they were); every (username, client id, action,
topic) of a grid over policies with and without partitions, bulk gateways and a device
list must get the same answer, asked twice (the second from the caches)."""

from __future__ import annotations

import itertools

import pytest
from ldpfleet.broker import auth
from ldpfleet.broker.auth import (
    ACTIONS,
    BULK_GATEWAY,
    DENIED,
    PARTITION_PATTERNS,
    PARTITION_RULES,
    PATTERNS,
    RULES,
    AccessPolicy,
    Rule,
    bulk_gateway_number,
    filter_covers,
    topic_matches,
    valid_filter,
)
from ldpfleet.protocol import topics


def _old_valid_topic(topic) -> bool:
    return (
        isinstance(topic, str)
        and 0 < len(topic.encode("utf-8", "surrogatepass")) <= 65535
        and not any(c in topic for c in "+#\x00")
    )


def _old_rules_for(policy: AccessPolicy, username: str) -> list[Rule]:
    role = policy.role_of(username)
    if role is None:
        return []
    lines = (*PATTERNS, *RULES[role])
    if policy.partitions > 1:
        level = topics.partition_level(topics.partition_of(username, policy.partitions))
        lines += (*PARTITION_PATTERNS, *PARTITION_RULES.get(role, ()))
    else:
        level = ""
    number = str(bulk_gateway_number(username)) if role == BULK_GATEWAY else "%g"
    return [
        Rule(
            r.action,
            r.pattern.replace("{run}", policy.run)
            .replace("%u", username)
            .replace("%p", level)
            .replace("%g", number),
        )
        for r in lines
    ]


def _frozen_decide(policy: AccessPolicy, username, client_id, action, topic) -> bool:
    if action not in ACTIONS or not policy.client_ids_ok(username, client_id):
        return False
    role = policy.role_of(username)
    rules = _old_rules_for(policy, username)
    denied = [t.replace("{run}", policy.run) for t in DENIED.get(role or "", ())]
    if action == "subscribe":
        if valid_filter(topic) and any(topic_matches(topic, t) for t in denied):
            return False
    elif topic in denied:
        return False
    if action == "publish":
        if not _old_valid_topic(topic) or topic.startswith("$"):
            return False
        return any(r.action == "publish" and topic_matches(r.pattern, topic) for r in rules)
    if action == "receive":
        if not _old_valid_topic(topic):
            return False
        return any(r.action == "subscribe" and topic_matches(r.pattern, topic) for r in rules)
    if not valid_filter(topic):
        return False
    return any(r.action == "subscribe" and filter_covers(r.pattern, topic) for r in rules)


RUN = "r1"
DEVICES = ("d0000", "d0001", "dev.x")
USERNAMES = (
    *DEVICES,
    "d9999",  # not listed
    "collector",
    "recorder",
    "relay",
    "gateway",
    "admin",
    "gateway-g0",
    "gateway-g1",
    "gateway-g7",
    "gateway-g01",
    "device",
    "bulk_gateway",
    "collector-x",
    "d0000-sa",
    "bad/name",
    "",
    None,
)


def _client_ids(username) -> list:
    name = username if isinstance(username, str) else "x"
    return [
        f"{RUN}-{name}",
        f"{RUN}-{name}-sa",
        f"{RUN}-{name}-lpea",
        f"{RUN}-{name}-2",
        f"r2-{name}",
        None,
    ]


def _topics(username, partitions: int) -> list[str]:
    me = username if isinstance(username, str) and username else "d0000"
    other = "d0001" if me != "d0001" else "d0000"
    base = f"ldp/{RUN}"
    out = [
        f"{base}/dev/{me}/up/report",
        f"{base}/dev/{me}/up/a/b",
        f"{base}/dev/{me}/up",
        f"{base}/dev/{other}/up/report",
        f"{base}/dev/{other}/in/{me}",
        f"{base}/dev/{me}/in/collector",
        f"{base}/dev/{me}/in/+",
        f"{base}/dev/+/up/#",
        f"{base}/dev/+/up/peer_batch",
        f"{base}/dev/{me}/up/#",
        f"{base}/dev/{other}/in/collector",
        f"{base}/ctl/stage",
        f"{base}/ctl/peer_step",
        f"{base}/ctl/#",
        f"{base}/ctl/+",
        f"{base}/ctl/relay_phase",
        f"{base}/rel/degrees",
        f"{base}/svc/collector/partition",
        f"{base}/svc/relay/x",
        f"{base}/svc/recorder/y",
        f"{base}/gw/g1/up/x",
        f"{base}/gw/g1/in/collector",
        f"{base}/gw/g0/up/#",
        f"{base}/#",
        f"{base}/+/dev/+/up/#",
        "ldp/r2/ctl/stage",
        "$SYS/broker/load",
        "$SYS/#",
        "#",
        "+/r1/ctl/stage",
        "ldp/+/ctl/stage",
        "",
        "a//b",
        f"{base}/ctl/st\x00age",
        f"{base}/ctl/st#age",
        f"{base}/dev/{me}/up/report/",
    ]
    for p in range(max(partitions, 1)):
        out += [
            f"{base}/p{p}/dev/{me}/up/report",
            f"{base}/p{p}/dev/{me}/in/collector",
            f"{base}/p{p}/dev/{me}/in/+",
            f"{base}/p{p}/dev/{other}/up/x",
            f"{base}/p{p}/gw/g1/up/x",
            f"{base}/p{p}/gw/g1/in/collector",
        ]
    return out


POLICIES = [
    dict(devices=None, partitions=1, gateways=0),
    dict(devices=frozenset(DEVICES), partitions=1, gateways=0),
    dict(devices=frozenset(DEVICES), partitions=3, gateways=2),
    dict(devices=None, partitions=4, gateways=8),
]


@pytest.mark.parametrize("kwargs", POLICIES, ids=lambda k: f"p{k['partitions']}g{k['gateways']}")
def test_every_decision_is_the_frozen_one(kwargs):
    policy = AccessPolicy(RUN, **kwargs)
    checked = differ = 0
    for username in USERNAMES:
        grid = itertools.product(
            _client_ids(username), (*ACTIONS, "connect"), _topics(username, kwargs["partitions"])
        )
        for client_id, action, topic in grid:
            want = _frozen_decide(policy, username, client_id, action, topic)
            for _ in range(2):  # computed, then remembered
                differ += policy.allowed(username, client_id, action, topic) is not want
            checked += 1
    assert differ == 0
    assert checked > 10_000


def test_rules_for_is_unchanged():
    for kwargs in POLICIES:
        policy = AccessPolicy(RUN, **kwargs)
        for username in USERNAMES:
            if isinstance(username, str):
                assert policy.rules_for(username) == _old_rules_for(policy, username)
                assert policy.rules_for(username) == _old_rules_for(policy, username)


def test_valid_topic_is_unchanged():
    for topic in ("", "a", "a/b", "a+b", "a/#", "\x00", "x" * 70000, "é", "\udc80", None, 3):
        assert auth.valid_topic(topic) == _old_valid_topic(topic)
