"""A split run whose sides disagree on a term fails on both sides at once (virtual time).

``ldpfleet collector --seed 1`` beside ``ldpfleet fleet --seed 2``: the fleet shard refused
the announcement at once (``protocol.rendezvous``: "the collector of run X runs seed 1,
this fleet seed 2"), but the collector side heard nothing and waited ``--fleet-timeout``
(60 s) before saying "no fleet joined" (measured with the CLI on Mosquitto: 64.7 s).
Now the refusing shard says so on its status topic (``protocol.fleet_done.FleetRefused``,
its own terms) and the collector side closes its stage at once: results.json ``aborted``
= ``terms_differ`` with the ``field``, the ``collector``'s value and the ``fleet``'s, and
one sentence naming them; ``ldpfleet collector`` exits 1 with it (as for ``no_fleet``).
The same path carries every term of ``RunTerms`` (a different device count here), and a
partitioned run's coordinator does the same. Both sides are tasks of one process over the
memory transport with the run's ACL (nothing denied), on virtual time
(tests/virtual_time.py): the collector's 60 s would be 60 virtual seconds, reached at once
in real time, so the assertion is on the virtual second the collector side ended.

Fails without the change: the collector side ends at 60 s with ``aborted.reason`` =
``no_fleet``.
"""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.devices.rendezvous import RunTermsDiffer
from ldpfleet.scenarios.schema import parse_scenario

from tests.e2e.test_partitions import STREAM, with_partitions
from tests.virtual_time import VirtualTimeLoop

RUN = "c4terms"
FLEET_TIMEOUT = 60.0


def _sides(tmp_path, collector_text: str, fleet_text: str, fleet_seed: int, partitions=1):
    """The collector side (seed 7; a coordinator and its workers with ``partitions``) and
    one fleet shard of ``fleet_text`` with ``fleet_seed``; returns (the collector side's
    results, the virtual second it ended, the fleet's refusal, what the broker denied)."""
    from ldpfleet.scenarios.coordinator import coordinator_side, partition_side
    from ldpfleet.scenarios.sides import collector_side, fleet_side

    collector = parse_scenario(collector_text)
    fleet = parse_scenario(fleet_text)
    creds = Credentials.generate(RUN, collector.device_ids(), partitions=partitions)
    transport = MemoryTransport(credentials=creds)

    async def main():
        loop = asyncio.get_running_loop()
        if partitions == 1:
            side = collector_side(collector, transport, RUN, tmp_path / "c", seed=7,
                                  credentials=creds, fleet_timeout=FLEET_TIMEOUT)  # fmt: skip
            workers = []
        else:
            side = coordinator_side(collector, transport, RUN, tmp_path / "c", seed=7,
                                    credentials=creds, fleet_timeout=FLEET_TIMEOUT)  # fmt: skip
            workers = [
                asyncio.create_task(
                    partition_side(
                        collector,
                        transport,
                        RUN,
                        (p, partitions),
                        tmp_path / f"w{p}",
                        seed=7,
                        credentials=creds,
                    )
                )
                for p in range(partitions)
            ]
        collecting = asyncio.create_task(side)
        with pytest.raises(RunTermsDiffer) as refused:
            await fleet_side(fleet, transport, RUN, (0, 1), tmp_path / "f", seed=fleet_seed,
                             credentials=creds)  # fmt: skip
        results = await asyncio.wait_for(collecting, 10 * FLEET_TIMEOUT)  # a hang guard
        ended = loop.time()
        await asyncio.wait_for(asyncio.gather(*workers), FLEET_TIMEOUT)
        return results, ended, refused.value

    results, ended, refusal = VirtualTimeLoop.run(main())
    return results, ended, refusal, transport.denied


def test_a_fleet_on_another_seed_fails_the_collector_side_at_once(tmp_path):
    results, ended, refusal, denied = _sides(tmp_path, STREAM, STREAM, fleet_seed=2)
    assert (refusal.field, refusal.ours, refusal.theirs) == ("seed", 2, 7)
    assert denied == []
    aborted = results["aborted"]
    assert aborted["reason"] == "terms_differ", aborted
    assert (aborted["field"], aborted["collector"], aborted["fleet"]) == ("seed", 7, 2)
    assert aborted["detail"] == (
        f"fleet shard 0 of 1 refused run {RUN}: the collector runs seed 7, the fleet seed 2; "
        "start both sides with the same scenario and seed"
    )
    assert results["stages"]["stream"]["close_reason"] == aborted["detail"]
    refused = {0: {"field": "seed", "collector": 7, "fleet": 2}}
    assert results["fleet_status"]["terms_refused"] == refused
    assert results["fleet_status"]["said_done"] == {0: True}
    assert ended < 1.0, ended  # at once: before, at FLEET_TIMEOUT with reason no_fleet


def test_another_device_count_is_named_the_same_way(tmp_path):
    fewer = STREAM.replace("devices = 16", "devices = 12")
    results, ended, refusal, _denied = _sides(tmp_path, STREAM, fewer, fleet_seed=7)
    assert refusal.field == "devices"
    aborted = results["aborted"]
    assert (aborted["field"], aborted["collector"], aborted["fleet"]) == ("devices", 16, 12)
    assert "the collector runs devices 16, the fleet devices 12" in aborted["detail"]
    assert ended < 1.0, ended


def test_a_partitioned_collector_side_fails_at_once_too(tmp_path):
    text = with_partitions(STREAM, 2)
    results, ended, _refusal, denied = _sides(tmp_path, text, text, fleet_seed=2, partitions=2)
    assert denied == []
    aborted = results["aborted"]
    assert aborted["reason"] == "terms_differ", aborted
    assert (aborted["field"], aborted["collector"], aborted["fleet"]) == ("seed", 7, 2)
    assert aborted["detail"].startswith(f"fleet shard 0 of 1 refused run {RUN}: the collector")
    assert results["close_reason"] == aborted["detail"]  # every worker closed on it
    assert results["counters"]["reports_lost"] == 128  # 16 devices x 8 batches, none sent
    assert ended < 1.0, ended
