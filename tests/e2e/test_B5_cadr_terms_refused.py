"""A split CADR-LDP run whose sides disagree on a term stops on both sides at once (B5).

As ``tests/e2e/test_C4_terms_refused.py`` for stream runs: the fleet shard refused the
collector's announcement at once (``RunTermsDiffer``: another seed), but the CADR collector
side heard nothing and waited ``--fleet-timeout`` for devices that would never start, then
said "60 of 60 devices did not join". Now the refusing shard says so on its status topic
(``protocol.fleet_done.FleetRefused``, with its own terms) and the collector side stops at
once: ``CadrSideStopped`` (``ldpfleet collector`` exits 1 with its sentence), results.json
``aborted`` = ``terms_differ`` with the field and both values, and the retained
announcement replaced by ``RunClosed`` with that sentence. Both sides run in one loop over
the memory transport with the run's ACL (nothing denied), on virtual time: the assertion
is on the virtual second the collector side ended.

Fails without the change: the collector side ends at 60 s ("60 of 60 devices did not join
run b5cadr within 60 s"), with no results.json.
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
from ldpfleet.scenarios.cadr_sides import CadrSideStopped, cadr_collector_side, cadr_fleet_side
from ldpfleet.scenarios.schema import parse_scenario

from tests.virtual_time import VirtualTimeLoop

RUN = "b5cadr"
FLEET_TIMEOUT = 60.0
SCENARIO = """
[scenario]
name = "b5-terms"
seed = 5
[graph]
source = "barabasi_albert:n=60,m=3,seed=2"
[cadr]
theta = 4
method = "clip"
stage_timeout = 20
[broker]
url = "memory"
"""


def test_a_shard_that_refuses_the_terms_stops_the_cadr_collector_side_at_once(tmp_path):
    scenario = parse_scenario(SCENARIO)
    graph, _ = load_scenario_graph(scenario)
    creds = Credentials.generate(RUN, device_names(graph))
    transport = MemoryTransport(credentials=creds)

    async def main():
        loop = asyncio.get_running_loop()
        collecting = asyncio.create_task(
            cadr_collector_side(scenario, transport, RUN, tmp_path / "c", seed=7,
                                credentials=creds, fleet_timeout=FLEET_TIMEOUT)
        )  # fmt: skip
        with pytest.raises(RunTermsDiffer) as refused:
            await cadr_fleet_side(scenario, transport, RUN, (0, 1), tmp_path / "f", seed=8,
                                  credentials=creds, wait_timeout=FLEET_TIMEOUT)  # fmt: skip
        async with asyncio.timeout(10 * FLEET_TIMEOUT):  # a hang guard (virtual seconds)
            await asyncio.wait([collecting])
        return collecting.exception(), loop.time(), refused.value

    stopped, ended, refusal = VirtualTimeLoop.run(main())
    assert refusal.field == "seed"
    assert isinstance(stopped, CadrSideStopped), stopped
    assert ended < 1.0, ended  # before: the 60 s join deadline
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
    assert transport.denied == []  # the run's ACL let every side say what it said
