"""A partitioned CADR-LDP run whose sides disagree on a term stops at once (B6).

As ``tests/e2e/test_B5_cadr_terms_refused.py`` for an unpartitioned CADR-LDP collector side:
the fleet shard refused the coordinator's announcement at once (``RunTermsDiffer``:
another seed) and said so on its status topic (``protocol.fleet_done.FleetRefused``), but
the partitioned coordinator (``scenarios.cadr_partition.cadr_coordinator_side``) did not
listen and waited ``--fleet-timeout`` for devices that would never start ("60 of 60 devices
did not join run b6cadr within 60 s"). Now it watches the fleet statuses with the same
watcher as the unpartitioned side and stops at once: ``CadrSideStopped`` with the sentence
naming the term and both values (``ldpfleet collector`` exits 1), results.json ``aborted`` =
``terms_differ``, the retained announcement replaced by ``RunClosed`` with that sentence,
and ``run closed`` on ``ctl/stage``, on which the partition workers (which wait for θ or the
run's close) stop too, with no θ and nothing released. The coordinator, two workers and one
fleet shard run in one loop over the memory transport with the run's ACL (nothing denied),
on virtual time: the assertions are on the virtual seconds the sides ended.

Fails without the change: the coordinator ends at 60 s ("60 of 60 devices did not join run
b6cadr within 60 s"), with no results.json.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.devices.rendezvous import RunTermsDiffer
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.rendezvous import ANNOUNCE_KIND, RunClosed
from ldpfleet.scenarios.cadr_run import device_names, load_scenario_graph
from ldpfleet.scenarios.cadr_sides import CadrSideStopped, cadr_fleet_side
from ldpfleet.scenarios.coordinator import coordinator_side, partition_side
from ldpfleet.scenarios.schema import parse_scenario

from tests.virtual_time import VirtualTimeLoop

RUN = "b6cadr"
PARTITIONS = 2
FLEET_TIMEOUT = 60.0
SCENARIO = """
[scenario]
name = "b6-terms"
seed = 5
[graph]
source = "barabasi_albert:n=60,m=3,seed=2"
[cadr]
theta = 4
method = "clip"
stage_timeout = 20
[collector]
partitions = 2
[broker]
url = "memory"
"""


def test_a_shard_that_refuses_the_terms_stops_a_partitioned_cadr_coordinator_at_once(tmp_path):
    scenario = parse_scenario(SCENARIO)
    graph, _ = load_scenario_graph(scenario)
    creds = Credentials.generate(RUN, device_names(graph), partitions=PARTITIONS)
    transport = MemoryTransport(credentials=creds)

    async def main():
        loop = asyncio.get_running_loop()
        ends: dict[str, float] = {}

        def ended(name: str):
            return lambda _task: ends.setdefault(name, loop.time())

        coordinating = asyncio.create_task(
            coordinator_side(scenario, transport, RUN, tmp_path / "c", seed=7,
                             credentials=creds, fleet_timeout=FLEET_TIMEOUT,
                             workers_timeout=FLEET_TIMEOUT)
        )  # fmt: skip
        coordinating.add_done_callback(ended("coordinator"))
        workers = []
        for p in range(PARTITIONS):
            worker = asyncio.create_task(
                partition_side(scenario, transport, RUN, (p, PARTITIONS), tmp_path / f"w{p}",
                               seed=7, credentials=creds)
            )  # fmt: skip
            worker.add_done_callback(ended(f"w{p}"))
            workers.append(worker)
        with pytest.raises(RunTermsDiffer) as refused:
            await cadr_fleet_side(scenario, transport, RUN, (0, 1), tmp_path / "f", seed=8,
                                  credentials=creds, wait_timeout=FLEET_TIMEOUT)  # fmt: skip
        async with asyncio.timeout(10 * FLEET_TIMEOUT):  # a hang guard (virtual seconds)
            await asyncio.wait([coordinating, *workers])
        return coordinating.exception(), [w.result() for w in workers], ends, refused.value

    stopped, workers, ends, refusal = VirtualTimeLoop.run(main())
    assert refusal.field == "seed"
    assert isinstance(stopped, CadrSideStopped), stopped
    assert ends["coordinator"] < 1.0, ends  # before: the 60 s join deadline
    assert max(ends.values()) < 1.0, ends  # the workers stop on the coordinator's close
    sentence = (
        f"fleet shard 0 of 1 refused run {RUN}: the collector runs seed 7, the fleet seed 8; "
        "start both sides with the same scenario and seed"
    )
    assert stopped.sentence == sentence
    results = json.loads((tmp_path / "c" / "results.json").read_text())
    assert results["aborted"] == {
        "reason": "terms_differ", "field": "seed", "collector": 7, "fleet": 8, "detail": sentence
    }  # fmt: skip
    assert results["run"] == RUN
    closed = codec.decode(transport.retained[topics.ctl(RUN, ANNOUNCE_KIND)])
    assert isinstance(closed, RunClosed) and closed.reason == sentence
    # every worker heard 'run closed' and ended without θ, having released nothing
    assert [w["partition"]["index"] for w in workers] == list(range(PARTITIONS))
    assert all(w["theta"] is None and w["released"] == 0 for w in workers), workers
    for p in range(PARTITIONS):
        written = json.loads((tmp_path / f"w{p}" / "results.json").read_text())
        assert written["partition"] == workers[p]["partition"]
    assert transport.denied == []  # the run's ACL let every side say what it said
