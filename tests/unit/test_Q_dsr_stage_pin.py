"""A pin of the DSR stage's completion on a large fleet with departures (helper Q, before the
intake counts its missing devices itself: ``DsrIntake.missing_count``). Test U2 covers a
large fleet without departures and four devices with them; here 3,000 members release,
refuse, leave (before or after releasing) or stay silent in a random order, the wait armed
part-way, and after every step ``DsrStage.complete`` must be the definition — every device
of the intake released, refused or departed — and the events, the completions and the
deadline's failure sentence must hash to the digest taken on main (a4dee010)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_collect import DsrIntake
from ldpfleet.protocol.cadr_dsr_stage import DsrStage
from ldpfleet.protocol.cadr_messages import DsrReport
from ldpfleet.protocol.messages import BudgetRefused

RUN = "qpin"
THETA, EPS = 5, 2.7
TIMEOUT = 40.0
# each member's part: (release, refuse, leave before, leave after, silent)
KINDS = ("release", "refuse", "leave", "release+leave", "leave+release", "silent")
# (seed, members, intake devices = members minus every k-th, probabilities of KINDS)
CASES = (
    (1, 3000, 0, (0.6, 0.05, 0.15, 0.1, 0.1, 0.0)),  # gathered: no one silent
    (2, 3000, 0, (0.3, 0.05, 0.4, 0.1, 0.1, 0.05)),  # many departures, then the deadline
    (3, 3000, 7, (0.5, 0.1, 0.2, 0.1, 0.1, 0.0)),  # members outside the intake leave too
    (4, 3000, 0, (0.0, 0.0, 1.0, 0.0, 0.0, 0.0)),  # everyone leaves
    (5, 2000, 0, (0.2, 0.0, 0.7, 0.0, 0.1, 0.0)),  # departures first, releases late
)
# sha256 per case, before the refactor (main a4dee010)
DIGESTS = {
    1: "466aa72429e29a68e5ade671f4b504a8b3db5cc1385d523fc6e32defd2dcb3a0",
    2: "6335a7c0fbb9c63bdc41249b24c477175ab9dc4c21d6c404680d9a60c26e73e5",
    3: "7d57b2921cf41f1695c40ab183b170e90865a138fcfb0aac2cc46481321893f8",
    4: "5a7e534f0064ec3ca7778a735c868d23c22ed0daaaddf4d0fca9ff9e0b97421e",
    5: "f504d733401dbe72e9f1efa0b726b4b4876b12f868ebcd4aa991fd795414c16c",
}


def _steps(rng, members, probs):
    """The members' actions in a random interleaving: (device, "release" | "refuse" |
    "leave"), a member's two actions in its kind's order."""
    kinds = rng.choice(len(KINDS), size=len(members), p=probs)
    first, second = [], []
    for device, kind in zip(members, kinds, strict=True):
        parts = [p for p in KINDS[kind].split("+") if p != "silent"]
        if parts:
            first.append((device, parts[0]))
        if len(parts) == 2:
            second.append((device, parts[1]))
    steps = [first[i] for i in rng.permutation(len(first))]
    for device, action in second:  # after the member's first action, at a random later place
        at = next(i for i, s in enumerate(steps) if s[0] == device)
        steps.insert(int(rng.integers(at + 1, len(steps) + 1)), (device, action))
    return steps


def _run(seed: int, n: int, skip: int, probs) -> str:
    rng = np.random.default_rng(seed)
    members = [f"n{i:05d}" for i in range(n)]
    devices = [d for i, d in enumerate(members) if not skip or i % skip]
    stage = DsrStage(members)
    stage.open(DsrIntake(RUN, devices, THETA, EPS))
    steps = _steps(rng, members, probs)
    arm_at = int(rng.integers(0, len(steps) // 2))
    released, refused, departed = set(), set(), set()
    h = hashlib.sha256()
    for i, (device, action) in enumerate(steps):
        if i == arm_at:
            stage.await_releases(0.0, TIMEOUT)
        if action == "leave":
            stage.depart(device, "dsr")
            departed.add(device)
        elif device in devices:
            topic = topics.parse(topics.up(RUN, device, "dsr" if action == "release" else
                                             "budget_refused"))  # fmt: skip
            if action == "release":
                message = DsrReport(run=RUN, sender=device, seq=1, value=2.0, theta=THETA,
                                    eps=EPS)  # fmt: skip
                released.add(device)
            else:
                message = BudgetRefused(run=RUN, sender=device, account="node", request="dsr",
                                        requested=0.5, remaining=0.1)  # fmt: skip
                refused.add(device)
            stage.intake.receive(topic, message, 0.0)
            stage.intake_changed()
        want = all(d in released or d in refused or d in departed for d in devices)
        assert stage.complete == want, (i, device, action)
        h.update(f"{i} {device} {action} {stage.complete} {stage.pop_events()!r}\n".encode())
    stage.handle_timer(TIMEOUT)
    h.update(repr(stage.pop_events()).encode())
    return h.hexdigest()


@pytest.mark.parametrize("seed, n, skip, probs", CASES, ids=[str(c[0]) for c in CASES])
def test_the_stage_completes_as_pinned(seed, n, skip, probs):
    assert _run(seed, n, skip, probs) == DIGESTS[seed]
