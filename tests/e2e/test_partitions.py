"""Collector partitions end to end (issue 23; DESIGN.md "Scale", docs/scaling.md).

``ldpfleet run`` with ``[collector] partitions = P`` on a real broker runs a coordinator
process, P partition worker processes and the fleet; for the same seed, P = 1, 2 and 4 give
the same results (per-device values, estimates and reconstructions, accuracy, counters,
missing and lost batches) and the same ledgers; the traces hold the same device messages
(as sets: a retransmission is the same row again) and the same stage messages, with the
partition level ``p{p}`` removed from topics and the run id from payloads. Acks are not
compared row by row: how many reports one acknowledgement covers depends on how the
collector's reads batch up (timing), so the test compares each device's final ack.
``trace`` commands read every partition's file, ``trace verify`` checks every signature
and fails when one partition's trace is altered.

The one-process runner (memory broker) runs the partitioned layout with one collector and
gives the same results too (quick tier).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from ldpfleet.protocol import codec
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import ROOT, shared_name
from tests.e2e.test_sides import SECURE_SUM_SECTION
from tests.virtual_time import VirtualTimeLoop

CLI = [sys.executable, "-m", "ldpfleet.app.cli"]
SAFETY = 300  # seconds: a hang fails the test instead of blocking the suite
STREAM = (
    (ROOT / "scenarios" / "quickstart.toml")
    .read_text()
    .replace("devices = 50", "devices = 16")
    .replace("steps = 200", "steps = 40")
    .replace("batch_steps = 5 ", 'reconstruct = "cpr"\nbatch_steps = 5 ')
    # nothing is lost here, so a retransmission (5 s by default) is only a late ack: a
    # starved run (each event-loop callback 50 ms late) counted 96 duplicates the
    # reference run had not, and reports_duplicate is compared (SAME)
    .replace("[stream]\n", "[stream]\nretransmit_after = 600\n", 1)
)
SAME = ("per_device", "accuracy", "devices_complete", "reports_received", "reports_lost",
        "reports_rejected", "reports_duplicate", "missing_batches", "budget_refusals")  # fmt: skip


def with_partitions(text: str, count: int) -> str:
    return text.replace("[fleet]\n", f"[collector]\npartitions = {count}\n\n[fleet]\n", 1)


def run_cli(text: str, broker: str, out: Path, run: str) -> dict:
    path = out.parent / f"{out.name}.toml"
    path.write_text(text)
    done = subprocess.run(
        [*CLI, "run", str(path), "--broker", broker, "--out", str(out), "--run", run],
        capture_output=True,
        text=True,
        timeout=SAFETY,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    return json.loads((out / "results.json").read_text())


def trace_files(out: Path) -> list[Path]:
    return [out / "trace.sqlite", *sorted(out.glob("trace-p*.sqlite"))]


def trace_view(out: Path, run: str) -> tuple[set, dict]:
    """(the set of device and stage rows, each device's final ack) over every trace file;
    partition level and run id removed."""
    rows, final_ack = set(), {}
    for path in trace_files(out):
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            for topic, kind, sender, payload in db.execute(
                "SELECT topic, kind, sender, payload FROM messages ORDER BY id"
            ):
                topic = re.sub(r"/p\d+/dev/", "/dev/", topic.replace(run, "RUN"))
                if kind == "ack":
                    device = topic.split("/")[3]
                    ack = codec.decode(payload)
                    final_ack[device] = max(final_ack.get(device, (-2, 0)), (ack.seq, ack.credit))
                elif kind in ("hello", "sw_report", "stage", "budget_refused", "reject"):
                    rows.add((topic, kind, sender, bytes(payload).replace(run.encode(), b"RUN")))
    return rows, final_ack


def assert_same_rows(rows: set, reference: set, label: object) -> None:
    """``rows == reference`` with a short message: only the rows one side lacks (a full
    diff of ~900 rows hid which ones differed when this failed in CI, 2026-12-07)."""
    if rows == reference:
        return

    def shown(items: set) -> list:
        return sorted((t, k, s, bytes(p)[:160]) for t, k, s, p in items)[:12]

    raise AssertionError(
        f"{label}: {len(reference - rows)} reference row(s) missing, e.g. "
        f"{shown(reference - rows)}; {len(rows - reference)} extra, e.g. {shown(rows - reference)}"
    )


def trace_losses(results: dict) -> str:
    """What a run's results say its trace lacks (a broker that dropped messages queued for
    the recorder: docs/brokers.md), for a failure message."""
    trace = results.get("trace") or {}
    return (
        f"run {results.get('run')}: trace.missing_reports {trace.get('missing_reports')}, "
        f"missing_hellos {trace.get('missing_hellos')}, trace_complete "
        f"{results.get('trace_complete')}, warnings {results.get('warnings')}"
    )


def ledger_without_run(out: Path) -> dict:
    ledger = json.loads((out / "ledger.json").read_text())
    ledger.pop("run", None)
    return ledger


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=SAFETY)


def run_partition_counts(
    name: str, text: str | Callable[[int], str], broker: str, tmp_path: Path
) -> tuple[dict[int, Path], dict[int, dict]]:
    """``ldpfleet run`` (side processes) of the scenario ``text`` (or ``text(P)``) with
    P = 1, 2 and 4 on ``broker``: each count's output directory and results."""
    outs, results = {}, {}
    for count in (1, 2, 4):
        # on the shared Mosquitto the run id gets this session's suffix: the id made from
        # the test's name alone was the same in every session, and a concurrent session's
        # run of the same test took half of this one's fleet ("30 of 60 devices did not
        # join", helper D beside helper B, 2026-12-06)
        run = shared_name(broker, f"{name}{count}-{tmp_path.name[-12:].replace('_', '')}"[:33])
        outs[count] = tmp_path / f"p{count}"
        if callable(text):
            scenario = text(count)
        else:
            scenario = text if count == 1 else with_partitions(text, count)
        results[count] = run_cli(scenario, broker, outs[count], run)
    return outs, results


def check_identical_across_partitions(broker: str, tmp_path: Path) -> None:
    outs, results = run_partition_counts("parts", STREAM, broker, tmp_path)
    for count in (1, 2, 4):
        assert results[count]["reports_lost"] == 0 and results[count]["devices_unfinished"] == 0
    reference_rows, reference_acks = trace_view(outs[1], results[1]["run"])
    assert len(reference_rows) > 16 * 8  # hellos, 8 batches a device, stages
    for count in (2, 4):
        mine, theirs = results[count], results[1]
        for key in SAME:
            assert mine[key] == theirs[key], (count, key)
        assert ledger_without_run(outs[count]) == ledger_without_run(outs[1])
        assert mine["partitions"]["count"] == count
        assert sum(mine["partitions"]["devices"]) == 16
        assert sorted(mine["side_processes"]["partitions"]) == [str(p) for p in range(count)]
        assert all(p["exit_code"] == 0 for p in mine["side_processes"]["partitions"].values())
        rows, acks = trace_view(outs[count], mine["run"])
        assert_same_rows(rows, reference_rows, (count, trace_losses(mine), trace_losses(theirs)))
        assert acks == reference_acks, count
        assert len(list(outs[count].glob("trace-p*.sqlite"))) == count
        # the partitions' reconstructions merged into one file, the same as P = 1's
        with (np.load(outs[count] / "reconstructions.npz") as mine_npz,
              np.load(outs[1] / "reconstructions.npz") as ref_npz):  # fmt: skip
            assert sorted(mine_npz.files) == sorted(ref_npz.files)
            assert len(ref_npz.files) >= 16
            for key in ref_npz.files:
                assert np.array_equal(mine_npz[key], ref_npz[key]), (count, key)
    for count, out in outs.items():
        verify = cli("trace", "verify", str(out))
        assert verify.returncode == 0, (count, verify.stdout + verify.stderr)
        assert f"signature {count if count == 1 else count + 1}" in verify.stdout
        # the trace commands read every partition's file
        shown = cli("trace", "show", str(out), "--kind", "sw_report")
        assert shown.returncode == 0 and len(shown.stdout.strip().splitlines()) == 16 * 8
        follow = cli("trace", "follow", str(out), "d0005")
        assert follow.returncode == 0 and "sw_report" in follow.stdout, follow.stderr
    # the documented by-hand step: merge the coordinator's, the workers' (any order) and
    # the fleet's directories
    pieces = outs[2]
    by_hand = tmp_path / "by-hand"
    merged = cli("merge", str(pieces / "coordinator"), str(pieces / "partition-1-of-2"),
                 str(pieces / "fleet-0-of-1"), str(pieces / "partition-0-of-2"),
                 "--out", str(by_hand))  # fmt: skip
    assert merged.returncode == 0, merged.stdout + merged.stderr
    again = json.loads((by_hand / "results.json").read_text())
    for key in SAME:
        assert again[key] == results[2][key], key
    assert cli("trace", "verify", str(by_hand)).returncode == 0
    incomplete = cli("merge", str(pieces / "coordinator"), str(pieces / "fleet-0-of-1"),
                     str(pieces / "partition-0-of-2"), "--out", str(tmp_path / "half"))  # fmt: skip
    assert incomplete.returncode == 2 and "missing partitions [1]" in incomplete.stdout + (
        incomplete.stderr
    )
    # one partition's trace altered: verify names it
    altered = tmp_path / "altered"
    shutil.copytree(outs[2], altered)
    with sqlite3.connect(altered / "trace-p1.sqlite") as db:
        db.execute("UPDATE messages SET time = time + 1 WHERE id = 2")
    verify = cli("trace", "verify", str(altered))
    assert verify.returncode == 1 and "chain_broken" in verify.stdout, verify.stdout


@pytest.mark.slow
@pytest.mark.embedded
def test_partitions_give_identical_results_on_the_embedded_broker(tmp_path):
    check_identical_across_partitions("embedded", tmp_path)


@pytest.mark.slow
@pytest.mark.mosquitto
def test_partitions_give_identical_results_on_mosquitto(mosquitto_url, tmp_path):
    check_identical_across_partitions(mosquitto_url, tmp_path)


def test_the_one_process_runner_serves_the_partitioned_layout_with_one_collector(tmp_path):
    results = {}
    for count in (1, 3):
        scenario = parse_scenario(STREAM if count == 1 else with_partitions(STREAM, count))
        results[count] = asyncio.run(
            run_scenario(scenario, broker="memory", out_dir=tmp_path / f"p{count}")
        )
    for key in SAME:
        assert results[3][key] == results[1][key], key
    with sqlite3.connect(tmp_path / "p3" / "trace.sqlite") as db:
        up = [t for (t,) in db.execute("SELECT topic FROM messages WHERE family = 'up'")]
    assert up and all(re.match(r"ldp/[^/]+/p[012]/dev/", t) for t in up)


def sides_over_memory(
    tmp_path: Path,
    *,
    fleet: bool = True,
    workers: int = 2,
    text: str = STREAM,
    memory=None,
    **timeouts,
):
    """The coordinator, ``workers`` partition workers of 2 and (``fleet``) one fleet shard as
    tasks of one process over a memory transport that enforces the run's ACL, on virtual
    time (``tests/virtual_time.py``): every deadline (``workers_timeout``,
    ``fleet_timeout``, the stage's) passes only once nothing is left to do, so how busy
    the machine is decides nothing. ``memory``: the ``MemoryTransport`` class (a subclass
    injecting a fault)."""
    from ldpfleet.broker.auth import Credentials
    from ldpfleet.broker.transport import MemoryTransport
    from ldpfleet.scenarios.coordinator import coordinator_side, partition_side
    from ldpfleet.scenarios.sides import fleet_side

    scenario = parse_scenario(with_partitions(text, 2))
    run = "partmem"
    creds = Credentials.generate(run, scenario.device_ids(), partitions=2)
    transport = (memory or MemoryTransport)(credentials=creds)

    async def main() -> dict:
        coordinator = asyncio.create_task(
            coordinator_side(scenario, transport, run, tmp_path / "c", credentials=creds,
                             **timeouts)
        )  # fmt: skip
        tasks = [
            asyncio.create_task(
                partition_side(
                    scenario, transport, run, (p, 2), tmp_path / f"w{p}", credentials=creds
                )
            )
            for p in range(workers)
        ]
        if fleet:
            await fleet_side(scenario, transport, run, (0, 1), tmp_path / "f", credentials=creds)
        done = await coordinator
        # the workers end on the coordinator's 'run closed' (also after an abort)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)  # virtual seconds: a hang guard
        return done

    return VirtualTimeLoop.run(main()), transport


def test_coordinator_workers_and_a_shard_over_memory_with_the_acl(tmp_path):
    from ldpfleet.scenarios.merge import merge_run

    coordinator, transport = sides_over_memory(tmp_path)
    assert transport.denied == []  # every worker, device and service stayed in its rights
    assert coordinator["complete"] and coordinator["counters"]["reports_lost"] == 0
    merge_run(tmp_path / "c", [tmp_path / "w1", tmp_path / "f", tmp_path / "w0"], tmp_path / "o")
    merged = json.loads((tmp_path / "o" / "results.json").read_text())
    reference = asyncio.run(
        run_scenario(parse_scenario(STREAM), broker="memory", out_dir=tmp_path / "ref")
    )
    for key in SAME:
        assert merged[key] == reference[key], key
    assert merged["stages"]["stream"]["close_reason"] == "every device delivered every report"


def test_without_a_fleet_the_coordinator_closes_the_stage_in_one_sentence(tmp_path):
    coordinator, _ = sides_over_memory(tmp_path, fleet=False, fleet_timeout=1.0)
    assert coordinator["aborted"]["reason"] == "no_fleet"
    assert "no fleet joined run partmem within 1 s" in coordinator["aborted"]["detail"]
    worker = json.loads((tmp_path / "w0" / "results.json").read_text())
    assert worker["stages"]["stream"]["close_reason"] == coordinator["aborted"]["detail"]


def stall_worker_start(monkeypatch, seconds: float) -> None:
    """A partition worker's collector, built once its trace recorder listens (the
    coordinator already waits for the workers' ready by then), blocks the process for
    ``seconds`` of wall time first, as a worker descheduled on a busy machine is."""
    from ldpfleet.scenarios import coordinator

    build = coordinator.collector_for

    def late(*args, **kwargs):
        time.sleep(seconds)
        return build(*args, **kwargs)

    monkeypatch.setattr(coordinator, "collector_for", late)


def test_a_missing_worker_stops_the_coordinator_naming_the_partition(tmp_path, monkeypatch):
    """Worker 1 of 2 never starts: the coordinator names it, and only it. The worker that
    came must count as ready however long its start took in wall time: its start stalls
    1 s here (a starved machine), longer than the 0.5 s workers_timeout. On the
    real clock the coordinator then said "2 of 2 partition workers ... [0, 1]"; the sides
    run on virtual time (``sides_over_memory``), where the deadline passes only when
    nothing is left to do."""
    stall_worker_start(monkeypatch, 1.0)
    coordinator, _ = sides_over_memory(tmp_path, fleet=False, workers=1, workers_timeout=0.5)
    assert coordinator["aborted"]["reason"] == "workers_missing"
    assert "1 of 2 partition workers" in coordinator["aborted"]["detail"]
    assert "[1]" in coordinator["aborted"]["detail"]


def test_a_control_trace_keeps_the_device_traffic_out_of_the_workers_traces():
    from ldpfleet.scenarios.coordinator import _worker_filters

    full = parse_scenario(with_partitions(STREAM, 2))
    control = parse_scenario(with_partitions(STREAM, 2).replace(
        "partitions = 2\n", 'partitions = 2\ntrace = "control"\n'))  # fmt: skip
    assert _worker_filters(full, "r", 1) == ("ldp/r/p1/#", "ldp/r/ctl/stage")
    assert _worker_filters(control, "r", 1) == ("ldp/r/ctl/stage",)


SECURE = STREAM + SECURE_SUM_SECTION


def without_timings(entry: dict) -> dict:
    """A secure-sum entry without its wall-clock fields (the rest is the seed's)."""
    return {
        key: without_timings(value) if isinstance(value, dict) else value
        for key, value in entry.items()
        if "seconds" not in key
    }


def test_the_coordinator_keeps_the_secure_sum_over_memory_with_the_acl(tmp_path):
    """[secure_sum] with P = 2: the workers serve their devices' streams, the coordinator
    runs the secure sum over every device; merged, the stream results and the secure sum
    (its total, survivors, dropouts, per-stage counts) are the one-collector run's."""
    from ldpfleet.scenarios.merge import merge_run

    coordinator, transport = sides_over_memory(tmp_path, text=SECURE)
    assert transport.denied == []  # the SecAgg topics are within every party's rights
    assert coordinator["secure_sum"]["aborted"] is None
    assert coordinator["secure_sum"]["dropped_devices"]  # 25 % drop out after the shares
    merge_run(tmp_path / "c", [tmp_path / "w0", tmp_path / "f", tmp_path / "w1"], tmp_path / "o")
    merged = json.loads((tmp_path / "o" / "results.json").read_text())
    reference = asyncio.run(
        run_scenario(parse_scenario(SECURE), broker="memory", out_dir=tmp_path / "ref",
                     run_id="partmem")
    )  # fmt: skip
    for key in SAME:
        assert merged[key] == reference[key], key
    assert without_timings(merged["secure_sum"]) == without_timings(reference["secure_sum"])
    assert merged["stages"]["secure_sum"]["status"] == "ok"
    # the coordinator's trace holds the secure aggregation (unpartitioned topics)
    with sqlite3.connect(tmp_path / "c" / "trace.sqlite") as db:
        kinds = {k for (k,) in db.execute("SELECT kind FROM messages WHERE family = 'up'")}
    assert {"sa_advertise", "sa_shares", "sa_masked", "sa_unmask"} <= kinds, kinds


@pytest.mark.slow
@pytest.mark.embedded
def test_ldpfleet_run_keeps_the_secure_sum_in_the_coordinator_on_the_embedded_broker(tmp_path):
    """``ldpfleet run`` of the secure-sum scenario with P = 2 (coordinator and two worker
    processes, a broker of its own): the run's results equal the memory run's, ``trace
    verify`` passes on the run folder."""
    run = f"pss-{tmp_path.name[-10:].replace('_', '')}"
    results = run_cli(with_partitions(SECURE, 2), "embedded", tmp_path / "p2", run)
    reference = asyncio.run(
        run_scenario(parse_scenario(SECURE), broker="memory", out_dir=tmp_path / "ref",
                     run_id=run)
    )  # fmt: skip
    for key in SAME:
        assert results[key] == reference[key], key
    assert without_timings(results["secure_sum"]) == without_timings(reference["secure_sum"])
    assert results["partitions"]["count"] == 2
    verify = cli("trace", "verify", str(tmp_path / "p2"))
    assert verify.returncode == 0, verify.stdout + verify.stderr
