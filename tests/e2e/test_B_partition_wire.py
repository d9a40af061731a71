"""The partition conversation's wire did not change when its decisions left the pumps.

``protocol.partition_link`` and ``protocol.partition_coordinator`` took over what the pumps
of ``collector/partition.py`` and ``collector/service.py`` decided (when a worker says
ready, progress and closed, that it never broadcasts, when the coordinator opens, gives up
and closes). ``B_partition_wire.json`` is what the pumps said before that change
(commit 451dd073): every message on the status topic and on ``ctl/`` of three runs of the
coordinator, the partition workers and (``full``) a fleet shard over the in-memory broker
on virtual time (``tests/e2e/test_partitions.py``'s ``sides_over_memory``), with the
virtual time it was published at. The runs must say the same messages at the same virtual
times. Only the order of messages published at the same virtual time by different
processes' tasks is free (the two workers' ``closed`` of ``nofleet`` came in either order
from the old code too), so each time's messages compare as a multiset; the announcement's
``epoch`` (the wall clock) is dropped.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from ldpfleet.broker.transport import MemoryTransport

from tests.e2e.test_partitions import sides_over_memory

GOLDEN = json.loads((Path(__file__).parent / "B_partition_wire.json").read_text())
CASES = {
    "full": {},
    "nofleet": {"fleet": False, "fleet_timeout": 1.0},
    "oneworker": {"workers": 1, "fleet": False, "workers_timeout": 3.0},
}


def _key(row: list) -> tuple[float, str]:
    time, topic, message = row
    return time, json.dumps([topic, message], sort_keys=True)


@pytest.mark.parametrize(
    "case",
    [  # a fleet and a silent fleet: 1.8 s and 0.6 s, the slow tier (tests/tiers.py)
        pytest.param("full", marks=pytest.mark.slow),
        pytest.param("nofleet", marks=pytest.mark.slow),
        "oneworker",
    ],
)
def test_the_partition_conversation_says_what_it_said_before(case, tmp_path):
    said: list[list] = []

    class Recording(MemoryTransport):
        def _route(self, topic: str, payload: bytes, retain: bool = False) -> None:
            if "/svc/collector/partition" in topic or "/ctl/" in topic:
                message = msgspec.json.decode(payload)
                message.pop("epoch", None)
                now = round(asyncio.get_running_loop().time(), 6)
                said.append([now, topic.split("/", 2)[2], message])
            super()._route(topic, payload, retain)

    coordinator, _ = sides_over_memory(tmp_path, memory=Recording, **CASES[case])
    aborted = (coordinator.get("aborted") or {}).get("reason")
    assert aborted == {"full": None, "nofleet": "no_fleet", "oneworker": "workers_missing"}[case]
    assert Counter(map(_key, said)) == Counter(map(_key, GOLDEN[case]))
    assert [t for t, *_ in said] == [t for t, *_ in GOLDEN[case]]  # times in order
