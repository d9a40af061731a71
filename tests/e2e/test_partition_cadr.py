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
from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.protocol import codec
from ldpfleet.scenarios.merge import merge_run
from ldpfleet.scenarios.schema import parse_scenario

from tests.e2e.test_partitions import run_cli

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
        "ledger_max", "ledger_exact", "refused_by_devices", "device_messages_up",
        "device_messages_down")  # fmt: skip
# rows whose payload or count depends on timing: the run announcement (its epoch) and the
# rendezvous/readiness chatter
TIMED_KINDS = {"run_open", "run_closed", "ready_probe", "ready"}


def text(trace: str = "control", partitions: int = 1) -> str:
    body = SCENARIO.format(trace=trace)
    if partitions == 1:
        return body
    return body.replace("[broker]\n", f"[collector]\npartitions = {partitions}\n\n[broker]\n")


def queries(results: dict) -> list[dict]:
    return [{k: v for k, v in q.items() if k != "seconds"} for q in results["theta_queries"]]


def trace_rows(out: Path, run: str) -> list[tuple]:
    """(topic, kind, sender, payload) of every trace row, run id removed, sorted."""
    rows = []
    with sqlite3.connect(f"file:{out / 'trace.sqlite'}?mode=ro", uri=True) as db:
        for topic, kind, sender, payload in db.execute(
            "SELECT topic, kind, sender, payload FROM messages"
        ):
            if kind in TIMED_KINDS:
                continue
            if kind.startswith("sa_"):  # fresh key pairs and shares every run: no payload
                payload = b""
            rows.append((topic.replace(run, "RUN"), kind, sender,
                         bytes(payload).replace(run.encode(), b"RUN")))  # fmt: skip
    return sorted(rows)


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


def test_two_workers_and_a_coordinator_release_what_one_collector_releases(tmp_path):
    one, one_rows, _ = over_memory(tmp_path / "one", 1, "all")
    two, two_rows, done = over_memory(tmp_path / "two", 2, "all")
    workers = done[1:3]
    assert [w["partition"]["index"] for w in workers] == [0, 1]
    assert sum(w["released"] + w["refusals"] for w in workers) == 60
    assert all(w["complete"] and w["sent"] == 1 for w in workers)
    for key in SAME:
        assert two.get(key) == one.get(key), key
    assert queries(two) == queries(one)
    assert two["partitions"]["count"] == 2 and two["partitions"]["messages_refused"] == 0
    assert sum(two["partitions"]["released"]) == len(two["released"]) == 60
    mine = json.loads((tmp_path / "two" / "o" / "ledger.json").read_text())
    theirs = json.loads((tmp_path / "one" / "o" / "ledger.json").read_text())
    assert mine == theirs
    kinds = {row[1] for row in one_rows}
    assert {"dsr_report", "ack", "cadr_theta", "degree_release"} <= kinds, kinds
    assert two_rows == one_rows
    # the workers' messages stay out of the trace; their stores hold their releases
    assert not {"cadr_releases", "partition_status"} & {row[1] for row in two_rows}
