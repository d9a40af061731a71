"""``AccessGuard`` remembers the ACL's decisions for the whole run (helper C, scaling on
memory): the policy's own cache held 200,000 decisions and was then cleared, so a fleet
past ~22,000 devices through gateways (9 decisions a device) decided every action afresh,
again and again (40,000 devices: 480,747 of 1,318,853 decisions computed). The guard now
holds ``DECISIONS_PER_DEVICE`` per device of the run (at least ``DECISIONS_MIN``)."""

from __future__ import annotations

from ldpfleet.broker import transport
from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.transport import AccessGuard


class CountingCredentials:
    """The guard's view of a run's credentials: ``devices`` and a pure ``allowed``."""

    def __init__(self, devices: int) -> None:
        self.devices = tuple(f"d{i}" for i in range(devices))
        self.calls = 0

    def allowed(self, username, client_id, action, topic) -> bool:
        self.calls += 1
        return not topic.startswith("forbidden/")


def test_every_decision_of_the_run_is_computed_once(monkeypatch):
    monkeypatch.setattr(transport, "DECISIONS_MIN", 4)
    monkeypatch.setattr(transport, "DECISIONS_PER_DEVICE", 2)
    credentials = CountingCredentials(devices=8)  # room for 16 decisions
    guard = AccessGuard(credentials, "memory broker")
    keys = [("u", f"c{i}", "publish", f"t/{i}") for i in range(16)]
    for _ in range(3):
        assert all(guard.allows(*key) for key in keys)
    assert credentials.calls == 16  # not 48: the run's decisions all fit
    # a refusal is decided once and recorded every time it happens
    for _ in range(3):
        assert guard.allows("u", "c0", "publish", "forbidden/x") is False
    assert credentials.calls == 17
    assert guard.denied == [("c0", "publish", "forbidden/x")] * 3


def test_the_bound_grows_with_the_fleet_and_is_a_bound(monkeypatch):
    monkeypatch.setattr(transport, "DECISIONS_MIN", 4)
    monkeypatch.setattr(transport, "DECISIONS_PER_DEVICE", 2)
    credentials = CountingCredentials(devices=2)  # room for 4 decisions
    guard = AccessGuard(credentials, "gateway")
    for i in range(9):
        guard.allows("u", "c", "publish", f"t/{i}")
    assert len(guard._decisions) <= 4  # cleared when full: memory stays bounded
    assert AccessGuard(CountingCredentials(devices=100), "g")._decisions_max == 200
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
