"""CADR-LDP with collector partitions (issue 23; scenarios/cadr_partition.py).

With ``[collector] partitions = P > 1`` the coordinator runs the plan, the θ search (its
secure sums), θ, the relay phases and the release; worker ``p`` runs the DSR intake of its
devices (persist, ack) and sends the coordinator their values and refusals
(``CadrReleases``). For the same seed P = 1, 2 and 4 give the same release, the same
results (timings aside), the same device ledgers and the same trace rows.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from ldpfleet.broker.auth import Credentials, topic_matches
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.scenarios.merge import merge_run
from ldpfleet.scenarios.schema import parse_scenario

from tests.e2e.test_partitions import assert_same_rows, run_partition_counts
from tests.virtual_time import VirtualTimeLoop

SCENARIO = """
[scenario]
name = "part-degrees"
seed = 5
[graph]
source = "barabasi_albert:n=60,m=3,seed=2"
[cadr]
theta = "auto-dev"
trace = "{trace}"
stage_timeout = 20
connect_concurrency = 16
[broker]
url = "memory"
"""
# the results that must not depend on P (timings, processes and the broker aside)
SAME = ("theta", "theta_rule", "theta_rounds", "budget", "privacy_claim", "mae", "mse",
        "distribution_l1", "histogram_emd", "raw", "postprocessed", "lpea_round_cap",
        "rejected_by_collector", "budget_refusals", "released", "histogram",
        "estimate_histogram", "per_device", "kept_edge_ratio", "bound_mean", "ledger_min",
        "ledger_max", "ledger_exact", "refused_by_devices")  # fmt: skip
# not compared: the devices' message counts (a device resends what a loaded broker or
# collector did not acknowledge in time: ego-Facebook on Mosquitto, P = 1 and 2 at load
# 5-9, sent 221,558 and 220,670 messages for the identical release)
# rows whose payload or count depends on timing: the run announcement (its epoch) and the
# rendezvous/readiness chatter
TIMED_KINDS = {"run_open", "run_closed", "ready_probe", "ready"}
TIMINGS = {"seconds", "stage_seconds", "timeline"}  # a theta query's timings


def text(trace: str = "control", partitions: int = 1) -> str:
    body = SCENARIO.format(trace=trace)
    if partitions == 1:
        return body
    return body.replace("[broker]\n", f"[collector]\npartitions = {partitions}\n\n[broker]\n")


def queries(results: dict) -> list[dict]:
    return [{k: v for k, v in q.items() if k not in TIMINGS} for q in results["theta_queries"]]


def trace_rows(out: Path, run: str) -> set[tuple]:
    """The distinct (topic, kind, sender, payload) of the trace, run id removed (a set: a
    device resends what was not acknowledged in time, as often as the load makes it)."""
    rows = set()
    with sqlite3.connect(f"file:{out / 'trace.sqlite'}?mode=ro", uri=True) as db:
        for topic, kind, sender, payload in db.execute(
            "SELECT topic, kind, sender, payload FROM messages"
        ):
            if kind in TIMED_KINDS:
                continue
            if kind.startswith("sa_"):  # fresh key pairs and shares every run: no payload
                payload = b""
            rows.add((topic.replace(run, "RUN"), kind, sender,
                      bytes(payload).replace(run.encode(), b"RUN")))  # fmt: skip
    return rows


async def _sides(tmp_path: Path, scenario, run: str, partitions: int) -> tuple:
    from ldpfleet.scenarios.cadr_run import device_names, load_scenario_graph
    from ldpfleet.scenarios.cadr_sides import cadr_collector_side, cadr_fleet_side
    from ldpfleet.scenarios.coordinator import coordinator_side, partition_side

    graph, _ = load_scenario_graph(scenario)
    creds = Credentials.generate(run, device_names(graph), partitions=partitions)
    transport = MemoryTransport(credentials=creds)
    if partitions == 1:
        collector = cadr_collector_side(scenario, transport, run, tmp_path / "c", credentials=creds)
    else:
        collector = coordinator_side(scenario, transport, run, tmp_path / "c", credentials=creds)
    tasks = [asyncio.create_task(collector)]
    for p in range(partitions if partitions > 1 else 0):
        side = partition_side(scenario, transport, run, (p, partitions), tmp_path / f"w{p}",
                              credentials=creds)  # fmt: skip
        tasks.append(asyncio.create_task(side))
    fleet = cadr_fleet_side(scenario, transport, run, (0, 1), tmp_path / "f", credentials=creds)
    tasks.append(asyncio.create_task(fleet))
    async with asyncio.timeout(120):
        done = await asyncio.gather(*tasks)
    return done, transport


def over_memory(tmp_path: Path, partitions: int, trace: str = "control") -> tuple[dict, list]:
    """Coordinator (or one collector), the workers and one fleet shard as tasks of one
    process over a memory transport that enforces the run's ACL; the merged results."""
    run = f"cadrmem{partitions}"
    scenario = parse_scenario(text(trace, partitions))
    done, transport = asyncio.run(_sides(tmp_path, scenario, run, partitions))
    assert transport.denied == []
    workers = [tmp_path / f"w{p}" for p in range(partitions if partitions > 1 else 0)]
    merge_run(tmp_path / "c", [tmp_path / "f", *workers], tmp_path / "o")
    merged = json.loads((tmp_path / "o" / "results.json").read_text())
    return merged, trace_rows(tmp_path / "o", run), done


def device_ledgers(out: Path, run: str) -> dict:
    """``OUT/ledger.json``'s device ledgers, having checked that it names ``run`` (each run's
    ledger.json names its own, so two runs' files differ only there)."""
    document = json.loads((out / "ledger.json").read_text())
    assert document.pop("run") == run
    return document


def test_workers_and_a_coordinator_release_what_one_collector_releases(tmp_path):
    one, one_rows, _ = over_memory(tmp_path / "one", 1, "all")
    kinds = {row[1] for row in one_rows}
    assert {"dsr_report", "ack", "cadr_theta", "degree_release"} <= kinds, kinds
    theirs = device_ledgers(tmp_path / "one" / "o", "cadrmem1")
    for count in (2, 4):
        mine, rows, done = over_memory(tmp_path / f"p{count}", count, "all")
        workers = done[1 : 1 + count]
        assert [w["partition"]["index"] for w in workers] == list(range(count))
        assert sum(w["released"] + w["refusals"] for w in workers) == 60
        assert all(w["complete"] and w["sent"] == 1 for w in workers)
        for key in SAME:
            assert mine.get(key) == one.get(key), (count, key)
        assert queries(mine) == queries(one)
        assert mine["partitions"]["count"] == count
        assert mine["partitions"]["messages_refused"] == 0
        assert sum(mine["partitions"]["released"]) == len(mine["released"]) == 60
        assert device_ledgers(tmp_path / f"p{count}" / "o", f"cadrmem{count}") == theirs
        assert_same_rows(rows, one_rows, count)
        # the workers' messages stay out of the trace
        assert not {"cadr_releases", "partition_status"} & {row[1] for row in rows}


def check_identical_across_partitions(broker: str, tmp_path: Path) -> None:
    """``ldpfleet run`` (side processes) with P = 1, 2 and 4 on ``broker``."""
    outs, results = run_partition_counts("cadrp", lambda p: text("all", p), broker, tmp_path)
    rows = {}
    for count in (1, 2, 4):
        rows[count] = trace_rows(outs[count], results[count]["run"])
        assert len(results[count]["released"]) == 60
    kinds = {row[1] for row in rows[1]}
    assert {"dsr_report", "ack", "cadr_theta", "degree_release"} <= kinds, kinds
    for count in (2, 4):
        mine, theirs = results[count], results[1]
        assert len(mine["side_processes"]["partitions"]) == count
        assert mine["partitions"]["count"] == count
        assert sum(mine["partitions"]["released"]) == 60
        for key in SAME:
            assert mine.get(key) == theirs.get(key), (count, key)
        assert queries(mine) == queries(theirs)
        mine_ledger = device_ledgers(outs[count], mine["run"])
        assert mine_ledger == device_ledgers(outs[1], theirs["run"])
        assert rows[count] == rows[1], count
        # each worker's store holds its devices' releases
        stored = 0
        for p in range(count):
            with sqlite3.connect(outs[count] / f"collector-p{p}.sqlite") as db:
                stored += db.execute("SELECT COUNT(*) FROM reports").fetchone()[0]
        assert stored == 60


@pytest.mark.slow
@pytest.mark.embedded
def test_a_cadr_release_is_identical_for_one_two_and_four_partitions(tmp_path):
    check_identical_across_partitions("embedded", tmp_path)


@pytest.mark.slow
@pytest.mark.mosquitto
def test_a_cadr_release_is_identical_on_mosquitto(mosquitto_url, tmp_path):
    check_identical_across_partitions(mosquitto_url, tmp_path)


def test_every_partition_serves_devices_and_the_coordinator_records_no_status():
    """The premise of the comparisons: for P = 2 and 4 every worker serves devices of the
    60-node graph; the coordinator's recorder filters leave the workers' topic out."""
    from ldpfleet.protocol.partition import status_topic
    from ldpfleet.scenarios.cadr_partition import coordinator_trace_filters, partition_devices
    from ldpfleet.scenarios.cadr_run import device_names, load_scenario_graph

    graph, _ = load_scenario_graph(parse_scenario(text()))
    for count in (2, 4):
        shares = [partition_devices(graph, p, count) for p in range(count)]
        assert all(shares) and sorted(d for s in shares for d in s) == device_names(graph)
    for trace in ("control", "all"):
        filters = coordinator_trace_filters(RUN_ID, trace)
        assert not any(topic_matches(f, status_topic(RUN_ID)) for f in filters), trace
        assert any(topic_matches(f, f"ldp/{RUN_ID}/svc/collector/reject") for f in filters)
    assert any(topic_matches(f, f"ldp/{RUN_ID}/dev/n0001/up/dsr")
               for f in coordinator_trace_filters(RUN_ID, "all"))  # fmt: skip


RUN_ID = "r1"


def test_a_missing_worker_stops_the_coordinator_and_the_other_workers(tmp_path):
    """Worker 1 of 2 never starts: the coordinator stops with one sentence naming it (its
    workers_timeout) and says 'run closed', on which worker 0 ends. On virtual time
    (``tests/virtual_time.py``): the 1 s workers_timeout passes only once nothing is left
    to do, so worker 0 has always announced itself by then, however busy the machine (on
    asyncio's clock a starved worker 0 could miss it and be named too)."""
    from ldpfleet.scenarios.cadr_run import device_names, load_scenario_graph
    from ldpfleet.scenarios.cadr_sides import CadrSideStopped
    from ldpfleet.scenarios.coordinator import coordinator_side, partition_side

    scenario = parse_scenario(text("control", 2))
    graph, _ = load_scenario_graph(scenario)
    creds = Credentials.generate("cadrgone", device_names(graph), partitions=2)
    transport = MemoryTransport(credentials=creds)

    async def main():
        worker = asyncio.create_task(
            partition_side(scenario, transport, "cadrgone", (0, 2), tmp_path / "w0",
                           credentials=creds)
        )  # fmt: skip
        with pytest.raises(CadrSideStopped, match=r"1 of 2 partition workers.*\[1\]"):
            await coordinator_side(scenario, transport, "cadrgone", tmp_path / "c",
                                   credentials=creds, workers_timeout=1.0)  # fmt: skip
        async with asyncio.timeout(60):
            return await worker

    counts = VirtualTimeLoop.run(main())
    assert counts["theta"] is None and counts["released"] == 0 and not counts["complete"]


@pytest.mark.parametrize("partitions", [1, 2])
def test_the_dsr_stage_ends_once_every_release_is_in_not_at_its_deadline(tmp_path, partitions):
    """The DSR stage waits at most ``[cadr] stage_timeout`` (a fixed bound from θ, not
    renewed by progress), but it ends as soon as every device released or refused: one
    collector's intake (``_CadrRun.all_released``), or the workers' intakes and the
    coordinator's gathering of their final chunks (``ReleaseGatherer.gathered``). On
    virtual time with a 600 s stage deadline no deadline passes at all: the stage and the
    whole run take no virtual time (a stage held to its deadline would show 600 s)."""
    stage_timeout = 600
    scenario = parse_scenario(
        text("control", partitions).replace(
            "stage_timeout = 20", f"stage_timeout = {stage_timeout}"
        )
    )

    async def run() -> tuple[list, float]:
        done, _ = await _sides(tmp_path, scenario, f"dsrend{partitions}", partitions)
        return done, asyncio.get_running_loop().time()

    done, took = VirtualTimeLoop.run(run())
    collector = done[0]
    assert len(collector["released"]) + len(collector["budget_refusals"]) == 60
    assert collector["stage_seconds"]["dsr"] < 1.0
    assert took < stage_timeout / 10
