"""``CadrDevice`` running method clip (protocol.cadr_device, "Method clip"): on θ it
releases its own clipped degree at once — no NDOE code, no LPEA node, no relay phase — and
charges the θ part and the Laplace part only, exactly ε."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.protocol.cadr_device import CadrDevice, Released
from ldpfleet.protocol.cadr_messages import CadrPlan, CadrQuery, CadrTheta, DsrReport
from ldpfleet.protocol.dsr import dsr_release
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.peer_relay import RELAY_ID, PeerStep
from ldpfleet.protocol.secagg.client import SecAggClient

RUN = "clip"
COLLECTOR = {"run": RUN, "sender": topics.COLLECTOR_ID}
PLAN_TOPIC = topics.parse(topics.ctl(RUN, "cadr_plan"))
THETA_TOPIC = topics.parse(topics.ctl(RUN, "cadr_theta"))
QUERY_TOPIC = topics.parse(topics.ctl(RUN, "cadr_query"))
STEP_TOPIC = topics.parse(topics.ctl(RUN, "peer_step"))


def _plan(eps: float = 2.0, **extra) -> CadrPlan:
    return CadrPlan(**COLLECTOR, seq=1, eps=eps, alpha=0.1, method="clip", degree_bound=20,
                    ndoe_parts=4, **extra)  # fmt: skip


def _device(degree: int, seed: int = 7, **options) -> CadrDevice:
    neighbours = [f"n{i:04d}" for i in range(1, degree + 1)]
    return CadrDevice(RUN, "n0000", neighbours, np.random.default_rng(seed), **options)


def _reports(device: CadrDevice) -> list[DsrReport]:
    return [o.message for o in device.pop_outbound() if isinstance(o.message, DsrReport)]


@pytest.mark.parametrize("degree", [0, 3, 9])
def test_on_theta_the_device_releases_its_own_clipped_degree(degree):
    device = _device(degree)
    device.receive(PLAN_TOPIC, _plan(), 0.0)
    assert device.pop_outbound() == []  # nothing before θ
    device.receive(THETA_TOPIC, CadrTheta(**COLLECTOR, seq=2, theta=5), 0.0)
    (report,) = _reports(device)
    expected = float(dsr_release(min(degree, 5), 5, 2.0, np.random.default_rng(7)))
    assert report.value == expected and report.eps == 2.0 and report.theta == 5
    assert [e for e in device.pop_events() if isinstance(e, Released)] == [Released(expected)]
    assert device.node is None and device.code is None  # no LPEA node, no NDOE code
    ledger = device.ledger.to_dict()["accounts"]["node"]
    assert ledger["charges"] == 1 and ledger["spent"] == 2.0  # the whole ε, Laplace only
    device.receive(THETA_TOPIC, CadrTheta(**COLLECTOR, seq=2, theta=5), 0.0)  # repeated
    assert _reports(device) == []  # released once


def test_the_release_reads_only_the_devices_own_list():
    """Two devices with lists of the same length (whoever is on them, whatever their lists
    hold) release the same value from the same generator; a longer list moves it."""
    values = []
    for neighbours in (["n0001", "n0002", "n0003"], ["n0007", "n0008", "n0009"], ["n0001"]):
        device = CadrDevice(RUN, "n0000", neighbours, np.random.default_rng(3))
        device.receive(PLAN_TOPIC, _plan(), 0.0)
        device.receive(THETA_TOPIC, CadrTheta(**COLLECTOR, seq=2, theta=4), 0.0)
        values.append(_reports(device)[0].value)
    assert values[0] == values[1] != values[2]


def test_a_dp_plan_charges_the_theta_search_and_dsr_exactly_eps():
    device = _device(6)
    plan = _plan(eps=3.0, theta_fraction=0.6, theta_extra=0.04, noise_parties=3)
    device.receive(PLAN_TOPIC, plan, 0.0)
    query = CadrQuery(**COLLECTOR, seq=2, session="theta-buckets", measure="bucket",
                      thresholds=[2, 5, 10])  # fmt: skip
    device.receive(QUERY_TOPIC, query, 0.0)
    assert isinstance(device._client, SecAggClient) and device.theta_answer is not None
    device.receive(THETA_TOPIC, CadrTheta(**COLLECTOR, seq=3, theta=5), 0.0)
    (report,) = _reports(device)
    budget = CadrBudget(3.0, 0.1, 0.6, 0.04, negotiation=False)
    assert report.eps == budget.dsr == 3.0 - budget.theta
    ledger = device.ledger.to_dict()["accounts"]["node"]
    assert ledger["charges"] == 2 and math.isclose(ledger["spent"], 3.0, rel_tol=1e-12)


def test_a_clip_device_refuses_relay_steps():
    device = _device(2)
    device.receive(PLAN_TOPIC, _plan(), 0.0)
    device.receive(THETA_TOPIC, CadrTheta(**COLLECTOR, seq=2, theta=2), 0.0)
    step = PeerStep(run=RUN, sender=RELAY_ID, seq=1, phase="ndoe", round=0)
    with pytest.raises(RemoteProtocolError) as refused:
        device.receive(STEP_TOPIC, step, 0.0)
    assert refused.value.field == "phase" and "no relay phase" in refused.value.reason


def test_a_refused_plan_sends_no_release_and_finishes_on_theta():
    device = _device(4, max_eps=1.0)  # the plan asks 2.0
    device.receive(PLAN_TOPIC, _plan(), 0.0)
    assert device.refusal is not None and not device.finished
    device.receive(THETA_TOPIC, CadrTheta(**COLLECTOR, seq=2, theta=3), 0.0)
    assert _reports(device) == [] and device.finished and device.spent() == 0.0


def test_theta_before_the_plan_is_held_then_released():
    device = _device(5)
    device.receive(THETA_TOPIC, CadrTheta(**COLLECTOR, seq=2, theta=3), 0.0)
    assert device.pop_outbound() == []
    device.receive(PLAN_TOPIC, _plan(), 0.0)
    (report,) = _reports(device)
    assert report.value == float(dsr_release(3, 3, 2.0, np.random.default_rng(7)))
