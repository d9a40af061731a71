"""A CADR-LDP fleet run with and without a hostile client, on the in-memory transport: the
setup tests/e2e/test_hostile_cadr.py (the collector's intakes) and
tests/e2e/test_F_relay_refusals.py (the batching relay) share; each test says what its
client plants and what the run must count."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from ldpfleet.broker.transport import Delivery, MemoryTransport
from ldpfleet.collector import cadr_reference as cr
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.scenarios.cadr_run import run_cadr_fleet

GRAPH = generate("barabasi_albert", 16, seed=2, m=2)
SEED = 4

# a 15-device CADR scenario for the run table / trace tests; ``{method}``: a ``method = "..."``
# line, or "" for the default
TINY_SCENARIO = """[scenario]
name = "tiny"
[graph]
source = "erdos_renyi:n=15,p=0.3,seed=4"
[cadr]
eps = 3.0
theta = "auto-dev"
{method}
[broker]
url = "memory"
"""

# what the hostile client publishes on one delivery: items whose first two fields are
# (topic, payload bytes); a test may add more (e.g. the reason it expects)
Plant = Callable[[Delivery], Sequence[tuple]]


async def clean_and_attacked(
    run: str, subscriptions: Iterable[str], plant: Plant
) -> tuple[dict, dict, list[tuple]]:
    """The fleet on ``GRAPH`` with ``SEED`` under run id ``run``, twice: clean, then on a
    fresh in-memory transport with a hostile client that subscribes to ``subscriptions``
    (before the run starts) and publishes ``plant(delivery)`` on each delivery. Returns the
    clean run's results, the attacked run's and every item the client planted."""
    clean = await run_cadr_fleet(GRAPH, seed=SEED, run=run)
    transport = MemoryTransport()
    ready, sent = asyncio.Event(), []

    async def attack() -> None:
        async with transport.connect(f"{run}-attacker") as conn:
            await conn.subscribe(*subscriptions)
            ready.set()
            async for delivery in conn.messages():
                items = list(plant(delivery))
                sent.extend(items)
                await conn.publish_many([(item[0], item[1]) for item in items])

    attacker = asyncio.create_task(attack())
    await ready.wait()
    try:
        attacked = await run_cadr_fleet(GRAPH, broker=transport, seed=SEED, run=run)
    finally:
        attacker.cancel()
        await asyncio.gather(attacker, return_exceptions=True)
    return clean, attacked, sent


def clip_theta_search(n: int = 200, seed: int = 5):
    """A clip run's DP θ search at ε = 5 on a Barabási-Albert graph of ``n``: the degrees,
    the search's record (``cadr_reference.dp_theta``) and the generator after it."""
    graph = generate("barabasi_albert", n, seed=seed, m=3)
    degrees = graph.degrees()
    rng = np.random.default_rng(0)
    budget = CadrBudget.for_pipeline(5.0, 0.1, "dp", True, n, "clip")
    _, search = cr.dp_theta(degrees, budget, 1.0, rng, n - 1)
    return degrees, search, rng


def joint_readings(search: dict, n: int, released, theta: int, eps_dsr: float):
    """``search_priors`` of that search with the clip releases as exact observations: the
    (per-node prior, histogram) pair the dp pipeline reads."""
    args = (search["bucket_sums"], search["thresholds"], n - 1, n, search["eps"])
    return dpp.search_priors(
        *args, search["noise_parties"], exact_releases=(released, theta, eps_dsr)
    )
