"""A partitioned split run (``[collector] partitions = 2``: a coordinator and two partition
workers) with devices gone for good reaches its secure sum: the fleet shards say "my devices
are done" (``protocol.fleet_done``), the coordinator reads the statuses and closes the
stream stage on every worker (helper C, 2026-12-07).

Before (main 4cc93040): the shards of a partitioned run sent no status
(``scenarios.sides._say_fleet_done`` returned early for P > 1) and nobody read one, so
each worker whose partition held a device that crashed for good (``[faults] never_return
= 2``) kept its stream stage open until ``[collector] stage_timeout`` (600 s here), while
the shards, done, gave up waiting for the secure-sum stage after ``wait_timeout`` +
``[secure_sum] stage_timeout``. Measured with this file's first test on main: the workers'
stream stage lasted 600.0 virtual seconds on both workers and closed with "stage deadline
passed", and the secure sum found nobody ("50 of 50 devices did not join the secure_sum
stage ... within 10 s", 0 survivors: the shards had left). Now the stage lasts as long as
the stream (well under 60 virtual seconds), closes with the shards' sentence, and the
secure sum sums the 48 survivors exactly, as the one-process run does. The second test
sends a shard's status in parts (one gone device a part) and ends the same way.

Everything runs as tasks of one process over a memory transport that enforces the run's
ACL, on virtual time (``tests/virtual_time.py``): the 600 s deadline passes only when
nothing else is left to do, so the machine's speed decides nothing.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from ldpfleet.broker.auth import ADMIN, Credentials
from ldpfleet.broker.transport import AsUser, MemoryTransport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.fleet_done import FLEET_DONE_KIND, shard_name
from ldpfleet.protocol.messages import FleetDone, Stage
from ldpfleet.scenarios import sides
from ldpfleet.scenarios.coordinator import coordinator_side, partition_side
from ldpfleet.scenarios.merge import merge_run
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from ldpfleet.scenarios.sides import fleet_side

from tests.conftest import ROOT
from tests.virtual_time import VirtualTimeLoop

RUN = "cpartdone"
STAGE_TIMEOUT = 600.0  # [collector] stage_timeout: what the stream stage must NOT wait for
SCENARIO = (ROOT / "scenarios" / "faults.toml").read_text().replace(
    "hostile_messages = 2000\n", ""
).replace(
    "[fleet]\n",
    f"[collector]\npartitions = 2\nstage_timeout = {STAGE_TIMEOUT}\n\n[fleet]\n",
    1,
) + "\n[secure_sum]\ndim = 8\nstage_timeout = 10.0\n"
SUMMED = ("devices", "aborted", "exact", "dropped_devices", "survivors", "total")


def partitioned_split_run(tmp_path: Path, shards: int, *, extra=None):
    """The coordinator, two workers and ``shards`` fleet shards (and ``extra(transport,
    creds)``, a coroutine run beside them) as tasks over a memory transport that enforces
    the run's ACL, on virtual time. Returns the coordinator's results.json, the workers'
    and the transport."""
    scenario = parse_scenario(SCENARIO)
    creds = Credentials.generate(RUN, scenario.device_ids(), partitions=2)
    transport = MemoryTransport(credentials=creds)

    async def main() -> None:
        coordinator = asyncio.create_task(
            coordinator_side(scenario, transport, RUN, tmp_path / "c", credentials=creds)
        )
        workers = [
            asyncio.create_task(
                partition_side(
                    scenario, transport, RUN, (p, 2), tmp_path / f"w{p}", credentials=creds
                )
            )
            for p in range(2)
        ]
        fleets = [
            asyncio.create_task(
                fleet_side(
                    scenario, transport, RUN, (i, shards), tmp_path / f"f{i}", credentials=creds
                )
            )
            for i in range(shards)
        ]
        others = [asyncio.create_task(extra(transport, creds))] if extra is not None else []
        await coordinator
        await asyncio.wait_for(asyncio.gather(*workers, *fleets, *others), 120)  # virtual s

    VirtualTimeLoop.run(main())
    coordinator = json.loads((tmp_path / "c" / "results.json").read_text())
    workers = [json.loads((tmp_path / f"w{p}" / "results.json").read_text()) for p in range(2)]
    return coordinator, workers, transport


def assert_closed_by_the_shards(coordinator: dict, workers: list[dict], shards: int) -> None:
    assert coordinator["aborted"] is None
    for worker in workers:
        stream = worker["stages"]["stream"]
        assert stream["seconds"] < STAGE_TIMEOUT / 10, stream  # on main: 600.0, the deadline
    sentence = f"every fleet shard ({shards}) said its devices are done: 48 finished, 2 gone"
    assert coordinator["close_reason"].startswith(sentence)
    status = coordinator["fleet_status"]
    assert status["said_done"] == {str(i): True for i in range(shards)} and status["ended"]
    assert len(status["gone"]) == 2 and status["parts_missing"] == {}
    secure = coordinator["secure_sum"]
    assert secure["survivors"] == 48 and secure["dropped_devices"] == status["gone"]


def trace_rows(path: Path, kind: str) -> list:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT payload FROM messages WHERE kind = ?", (kind,)).fetchall()
    return [codec.decode(bytes(payload)) for (payload,) in rows]


async def _hostile_statuses(transport: MemoryTransport, creds: Credentials) -> None:
    """Bad statuses on the shards' topics once the stream stage is open (the coordinator
    listens before it opens the stage): each must be refused, counted, noticed, traced and
    change nothing."""
    admin = AsUser(transport, ADMIN, creds.password(ADMIN))
    devices = parse_scenario(SCENARIO).device_ids()
    name = shard_name(0, 2)
    on_shard = topics.up(RUN, name, FLEET_DONE_KIND)
    forged = {"run": RUN, "sender": name, "shard": 0, "shards": 2}
    bad = [
        (on_shard, b"{not json"),
        # shard 0 naming a device of shard 1's slice as its own
        (on_shard, codec.encode(FleetDone(**forged, finished=24, gone=[devices[1]]))),
        # a device speaking as a shard under its own id
        (
            topics.up(RUN, devices[0], FLEET_DONE_KIND),
            codec.encode(FleetDone(**(forged | {"sender": devices[0]}), finished=25)),
        ),
        # shard 0 claiming more devices than its slice holds
        (on_shard, codec.encode(FleetDone(**forged, finished=26))),
        # the right shape, another run
        (on_shard, codec.encode(FleetDone(**(forged | {"run": "other"}), finished=25))),
    ]
    async with admin.connect(f"{RUN}-admin-attacker") as conn:
        await conn.subscribe(topics.ctl(RUN, "stage"))
        async for delivery in conn.messages():
            message = codec.decode(delivery.payload)
            if isinstance(message, Stage) and message.state == "open":
                break
        for topic, payload in bad:
            await conn.publish(topic, payload)


def test_the_partitioned_stream_stage_closes_when_every_shard_is_done(tmp_path):
    coordinator, workers, transport = partitioned_split_run(tmp_path, 2, extra=_hostile_statuses)
    assert transport.denied == []  # the statuses and their reading stay in the run's ACL
    assert_closed_by_the_shards(coordinator, workers, 2)
    # the hostile statuses: refused and counted by reason, noticed, in the coordinator's trace
    status = coordinator["fleet_status"]
    assert status["refused"] == 5, status
    assert status["refused_by_reason"] == {
        "undecodable": 1, "invalid_field": 2, "wrong_sender": 1, "wrong_run": 1,
    }  # fmt: skip
    trace = tmp_path / "c" / "trace.sqlite"
    notices = [n for n in trace_rows(trace, "reject") if n.kind == FLEET_DONE_KIND]
    assert len(notices) == 5
    assert len(trace_rows(trace, FLEET_DONE_KIND)) >= 2 + 4  # the shards' and the forged
    # merged with the shards: what the one-process run sums
    fleets = [tmp_path / f"f{i}" for i in range(2)]
    merge_run(tmp_path / "c", [tmp_path / "w0", tmp_path / "w1", *fleets], tmp_path / "m")
    merged = json.loads((tmp_path / "m" / "results.json").read_text())
    assert merged["fleet"]["shards"]["said_done"] == {"0": True, "1": True}
    one = asyncio.run(
        run_scenario(parse_scenario(SCENARIO), broker="memory", out_dir=tmp_path / "one")
    )
    assert sorted(one["faults"]["outcome"]["never_returned"]) == status["gone"]
    assert one["secure_sum"]["exact"] is True
    for key in SUMMED:
        assert merged["secure_sum"][key] == one["secure_sum"][key], key


def test_a_status_in_parts_closes_the_stage_too(tmp_path, monkeypatch):
    """One fleet shard holds both gone devices; one id a part: its status comes in two
    parts, and the coordinator closes the stage once both arrived."""
    monkeypatch.setattr(sides, "FLEET_DONE_PART_LIMIT", 1)
    coordinator, workers, transport = partitioned_split_run(tmp_path, 1)
    assert transport.denied == []
    assert_closed_by_the_shards(coordinator, workers, 1)
    parts = trace_rows(tmp_path / "c" / "trace.sqlite", FLEET_DONE_KIND)
    assert sorted((p.part, p.parts, len(p.gone)) for p in parts) == [(0, 2, 1), (1, 2, 1)]
