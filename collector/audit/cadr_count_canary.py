"""Canary of the DP θ search's count release, through the device machines (issue 20).

What the collector sees of the θ search of the "dp" pipeline is ONE secure sum: the sum of
every device's answer to the bucket query, each answer the one-hot vector of the device's
degree bucket plus its Pólya noise share (``protocol.cadr_theta_noise``). This canary
drives ``COUNT_DEVICES`` real ``protocol.cadr_device.CadrDevice`` machines with the plan
(``theta_fraction > 0``, ``noise_parties = COUNT_DEVICES``) and the bucket ``CadrQuery``
the collector broadcasts, takes the answer each machine hands to its secure-aggregation
client (``CadrDevice.theta_answer``) and outputs their sum — exactly the vector the secure
sum opens (tests/e2e/test_cadr_theta_noise.py checks the secure sum equals it).

D: device 0 lists no neighbour (bucket 0); D': it lists ``CADR_COUNT_BOUND`` neighbours
(the last bucket) — node-LDP neighbours, only device 0's list changes; the other devices
list one neighbour each in both worlds. Claim: the θ part of the plan's budget
(``CadrBudget.theta``, the plan's eps chosen so that it is the audited eps). Witnesses:
the first bucket, the last bucket, and first minus last (the two entries that move: the
L1 sensitivity is 2, split over them).
"""

from __future__ import annotations

import math

import numpy as np
from ldpfleet.collector.audit.core import Canary

__all__ = ["COUNT_BATTERY", "COUNT_DEVICES", "cadr_count_release"]

RUN = "audit"
COUNT_DEVICES = 4
CADR_COUNT_BOUND = 8  # the plan's public degree bound D
ALPHA = 0.1


def cadr_count_release(eps_theta: float, listed: int, rng: np.random.Generator) -> np.ndarray:
    """The opened sum of one DP θ search over ``COUNT_DEVICES`` machines (module
    docstring); device 0 lists ``listed`` neighbours."""
    from ldpfleet.protocol import topics
    from ldpfleet.protocol.cadr_budget import THETA_FRACTION
    from ldpfleet.protocol.cadr_device import CadrDevice
    from ldpfleet.protocol.cadr_messages import CadrPlan, CadrQuery
    from ldpfleet.protocol.cadr_theta_noise import bucket_grid

    plan_eps = eps_theta / (THETA_FRACTION * ALPHA)
    collector = {"run": RUN, "sender": topics.COLLECTOR_ID}
    plan = CadrPlan(
        **collector,
        seq=1,
        eps=plan_eps,
        alpha=ALPHA,
        method="ll",
        degree_bound=CADR_COUNT_BOUND,
        ndoe_parts=4,
        theta_fraction=THETA_FRACTION,
        noise_parties=COUNT_DEVICES,
    )
    query = CadrQuery(
        **collector,
        seq=2,
        session="theta-buckets",
        measure="bucket",
        thresholds=bucket_grid(CADR_COUNT_BOUND),
    )
    plan_topic = topics.parse(topics.ctl(RUN, "cadr_plan"))
    query_topic = topics.parse(topics.ctl(RUN, "cadr_query"))
    total = None
    for i in range(COUNT_DEVICES):
        k = listed if i == 0 else 1
        neighbours = [f"m{i}x{j:03d}" for j in range(k)]
        device = CadrDevice(RUN, f"d{i:03d}", neighbours, rng)
        device.receive(plan_topic, plan, 0.0)
        device.receive(query_topic, query, 0.0)
        assert device.budget is not None and device.theta_answer is not None
        if i == 0 and not math.isclose(device.budget.theta, eps_theta, rel_tol=1e-9):
            raise AssertionError(
                f"the device's θ budget is {device.budget.theta}, the audit claims {eps_theta}"
            )
        total = device.theta_answer if total is None else total + device.theta_answer
    return np.asarray(total)


def _cadr_theta_count(eps: float, delta: float):
    from ldpfleet.collector.audit.battery import AuditSpec

    def sampler(listed: int):
        return lambda rng, n: np.array([cadr_count_release(eps, listed, rng) for _ in range(n)])

    witnesses = {
        "first minus last bucket": lambda y: np.asarray(y)[:, 0] - np.asarray(y)[:, -1],
        "first bucket": lambda y: np.asarray(y)[:, 0],
        "last bucket": lambda y: np.asarray(y)[:, -1],
    }
    canary = Canary(
        f"device 0 lists 0 vs {CADR_COUNT_BOUND} neighbours, {COUNT_DEVICES} devices summed",
        sampler(0),
        sampler(CADR_COUNT_BOUND),
    )
    return AuditSpec("cadr-theta-count", canary, witnesses, eps, trials=4000)


COUNT_BATTERY = {"cadr-theta-count": _cadr_theta_count}
