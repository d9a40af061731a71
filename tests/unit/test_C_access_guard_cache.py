"""The ACL remembers its decisions for the whole run (helper C, scaling on memory): the
policy's cache held a fixed 200,000 decisions and was then cleared, so a fleet past
~22,000 devices through gateways (9 decisions a device) decided every action afresh,
again and again (40,000 devices: 480,747 of 1,318,853 decisions computed). ``AccessPolicy``
now holds ``DECISIONS_PER_DEVICE`` per device of the run (at least ``DECISIONS_MIN``);
``AccessGuard`` (memory broker, gateways) asks it and keeps no cache of its own."""

from __future__ import annotations

import pytest
from ldpfleet.broker import auth
from ldpfleet.broker.auth import AccessPolicy, Credentials
from ldpfleet.broker.transport import AccessGuard


@pytest.fixture
def decided(monkeypatch) -> list:
    """The decisions the policy computed (not taken from its cache); room for 2 a device,
    at least 4."""
    monkeypatch.setattr(auth, "DECISIONS_MIN", 4)
    monkeypatch.setattr(auth, "DECISIONS_PER_DEVICE", 2)
    calls: list = []
    decide = AccessPolicy._decide

    def counting(self, *key):
        calls.append(key)
        return decide(self, *key)

    monkeypatch.setattr(AccessPolicy, "_decide", counting)
    return calls


def devices(n: int) -> list[str]:
    return [f"d{i:04d}" for i in range(n)]


def test_every_decision_of_the_run_is_computed_once(decided):
    credentials = Credentials.generate("r1", devices(8))  # room for 16 decisions
    guard = AccessGuard(credentials, "memory broker")
    keys = [(d, f"r1-{d}", "publish", f"ldp/r1/dev/{d}/up/report") for d in devices(8)]
    keys += [(d, f"r1-{d}", "subscribe", f"ldp/r1/dev/{d}/in/collector") for d in devices(8)]
    for _ in range(3):
        assert all(guard.allows(*key) for key in keys)
    assert len(decided) == 16  # not 48: the run's decisions all fit
    # a refusal is decided once and recorded every time it happens
    wrong = ("d0000", "r1-d0000", "publish", "ldp/r1/dev/d0001/up/report")
    for _ in range(3):
        assert guard.allows(*wrong) is False
    assert len(decided) == 17
    assert guard.denied == [("r1-d0000", "publish", "ldp/r1/dev/d0001/up/report")] * 3


def test_the_bound_grows_with_the_fleet_and_is_a_bound(decided):
    policy = Credentials.generate("r1", devices(2)).policy  # room for 4 decisions
    for i in range(9):
        policy.allowed("d0000", "r1-d0000", "publish", f"ldp/r1/dev/d0000/up/r{i}")
    assert len(policy._cache) <= 4  # cleared when full: memory stays bounded
    assert Credentials.generate("r1", devices(100)).policy.decisions_max == 200
    assert AccessPolicy("r1").decisions_max == 4  # any device id: the floor
    assert AccessGuard(None, "g").allows("anyone", "c", "publish", "forbidden/x") is True


def test_the_guard_decides_as_the_policy_does():
    credentials = Credentials.generate("r1", ["d0000", "d0001"])
    guard = AccessGuard(credentials, "memory broker")
    cases = [
        ("d0000", "r1-d0000", "publish", "ldp/r1/dev/d0000/up/report"),
        ("d0000", "r1-d0000", "publish", "ldp/r1/dev/d0001/up/report"),
        ("d0000", "r1-d0000", "subscribe", "ldp/r1/dev/d0000/in/collector"),
        ("d0000", "r1-d0000", "subscribe", "ldp/r1/dev/+/in/collector"),
        ("d0001", "r1-d0000", "publish", "ldp/r1/dev/d0001/up/report"),
    ]
    for _ in range(2):
        for case in cases:
            assert guard.allows(*case) == credentials.allowed(*case), case
    assert [credentials.allowed(*case) for case in cases] == [True, False, True, False, False]
