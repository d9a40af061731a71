"""The DP θ search through the real secure sum, with dropouts: every device machine
(``CadrDevice``) answers the bucket query of a "dp" plan (one-hot bucket + Pólya share);
the answers go through ``collector.secure_sum`` (SecAgg+, real X25519 + Shamir) while some
devices drop out after sharing their keys. The noise shares cancel only in expectation, so
the EXACT checks are: the opened sum equals the survivors' answers summed, and that sum
minus the survivors' drawn shares equals the survivors' true bucket counts. And the
audit entry of the count release is in the battery and holds its claim."""

from __future__ import annotations

import asyncio

import numpy as np
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.audit.battery import BATTERY, run_audit
from ldpfleet.collector.secure_sum import secure_sum
from ldpfleet.devices.graphs import generate
from ldpfleet.devices.secagg_agent import SecAggAgent
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_budget import THETA_FRACTION
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.protocol.cadr_messages import CadrPlan, CadrQuery
from ldpfleet.protocol.cadr_theta_noise import (
    SHARE_BOUND,
    bucket_grid,
    bucket_vector,
    noise_parties,
)
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.encoding import FixedPoint

RUN = "dpt"


async def test_noisy_bucket_sum_with_dropouts_is_exact_up_to_the_drawn_shares():
    graph = generate("barabasi_albert", 30, seed=2, m=3)
    names = [f"n{i:04d}" for i in range(graph.n)]
    bound = int(graph.degrees().max())
    thresholds = bucket_grid(bound)
    parties = noise_parties(graph.n)  # 27: up to 3 dropouts keep the noise whole
    collector = {"run": RUN, "sender": topics.COLLECTOR_ID}
    plan = CadrPlan(**collector, seq=1, eps=3.0, alpha=0.1, method="ll", degree_bound=bound,
                    ndoe_parts=4, theta_fraction=THETA_FRACTION, noise_parties=parties)  # fmt: skip
    query = CadrQuery(
        **collector, seq=2, session="theta-buckets", measure="bucket", thresholds=thresholds
    )
    answers, buckets = {}, {}
    for i, name in enumerate(names):
        device = CadrDevice(
            RUN, name, [names[j] for j in graph.neighbours(i)], np.random.default_rng([7, i])
        )
        device.receive(topics.parse(topics.ctl(RUN, "cadr_plan")), plan, 0.0)
        device.receive(topics.parse(topics.ctl(RUN, "cadr_query")), query, 0.0)
        answers[name] = device.theta_answer
        buckets[name] = bucket_vector(len(graph.neighbours(i)), thresholds)
    dropping = set(names[::10])  # 3 devices drop after sharing their keys
    fp = FixedPoint(-float(SHARE_BOUND), float(SHARE_BOUND + 1), 1.0, 64)
    transport = MemoryTransport()
    agents = [
        SecAggAgent(
            transport,
            SecAggClient(RUN, "theta-buckets", name, answers[name]),
            dropout="after_shares" if name in dropping else None,
            announce_dropout=True,
        )
        for name in names
    ]
    tasks = [asyncio.create_task(agent.run()) for agent in agents]
    try:
        await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
        result = await secure_sum(
            transport, RUN, "theta-buckets", names, len(thresholds) + 1, fp, stage_timeout=10.0
        )
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert result.aborted is None and set(result.survivors) == set(names) - dropping
    assert len(result.survivors) >= parties  # what the collector requires of a noisy sum
    total = np.rint(result.total).astype(np.int64)
    survivors = result.survivors
    answered = sum(answers[name] for name in survivors).astype(np.int64)
    shares = sum(answers[name] - buckets[name] for name in survivors).astype(np.int64)
    true_counts = sum(buckets[name] for name in survivors).astype(np.int64)
    assert total.tolist() == answered.tolist()
    assert (total - shares).tolist() == true_counts.tolist()
    assert int(true_counts.sum()) == len(survivors)  # one bucket per survivor


def test_the_count_release_canary_is_in_the_battery_and_holds_its_claim():
    assert "cadr-theta-count" in BATTERY
    # eps_LB is a lower confidence bound at level 1 - gamma: a correct mechanism exceeds
    # its claim with probability <= gamma = 1e-6 (the audit's own derivation, core.py)
    report = run_audit("cadr-theta-count", eps=1.0, trials=1200, gamma=1e-6, seed=3)
    assert report.verdict != "violation" and report.eps_lb <= 1.0
