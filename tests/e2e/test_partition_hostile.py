"""A hostile client against a partitioned collector (issue 23; devices/hostile.py).

With ``[collector] partitions = P > 1`` each flood message goes to the partition subtree of
the device its topic names (``d0000``, or the unknown ``intruder``: in another partition for
P = 2 and 4 here), the worker of that partition rejects and counts it, each worker holds
its stage until it handled its share, and the merge sums the counts. For the same seed the
results (every rejection by reason, duplicates, per-device values, accuracy, the fault
report), the ledger and the trace contents equal the one-collector run's (P = 1, which
runs the attacker in-process). Reject notices are compared without their ``seq`` (each
worker numbers its own) and with the partition level removed from the topic they quote.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from ldpfleet.devices.hostile import INTRUDER, TARGET, flood_plan
from ldpfleet.protocol import codec, topics
from ldpfleet.scenarios.merge import merge_run
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.e2e.test_partitions import (
    SAME,
    STREAM,
    assert_same_rows,
    ledger_without_run,
    run_partition_counts,
    sides_over_memory,
    trace_files,
    trace_view,
)

FLOOD = 600
# unpaced devices and no honest retransmission (the duplicates are the flood's replays
# only): test_partitions' STREAM already sets retransmit_after = 600
HOSTILE = STREAM + f"\n[faults]\nhostile_messages = {FLOOD}\n"
CHECKED = (*SAME, "rejections_by_reason", "rejections_by_field")


def test_the_flood_spans_two_partitions_for_two_and_four():
    assert "retransmit_after = 600" in HOSTILE
    for count in (2, 4):
        assert topics.partition_of(TARGET, count) != topics.partition_of(INTRUDER, count)


def check_attack(results: dict) -> None:
    """Every flood message was counted under its reason, exactly, and handled in time."""
    counts, replays = flood_plan(FLOOD)
    assert results["rejections_by_reason"] == counts
    assert results["reports_rejected"] == sum(counts.values())
    assert results["reports_lost"] == 0 and results["devices_complete"] == 16
    hostile = results["faults"]["injected"]["hostile"]
    assert hostile["by_reason"] == counts and hostile["identical_replays"] == replays
    assert hostile["handled_before_close"] is True
    assert results["faults"]["outcome"]["rejections_by_reason"] == counts


def rejects(out: Path, run: str) -> Counter:
    """Every reject notice in every trace file: (device, topic, kind, field, code), the
    topic without the partition level and the run id; at-least-once recording folded by
    (file, seq, quoted topic): the workers number their notices each from 1 on one topic,
    and the topics they quote name their own partitions."""
    notices: dict = {}
    for path in trace_files(out):
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            # the notices on svc/: a final rejection's copy in the device's inbox
            # (protocol.stream, "Rejections") is recorded by the partition's recorder too
            query = "SELECT payload FROM messages WHERE kind = 'reject' AND family = 'svc'"
            for (payload,) in db.execute(query):
                reject = codec.decode(payload)
                topic = re.sub(r"/p\d+/dev/", "/dev/", reject.topic.replace(run, "RUN"))
                key = (reject.device, topic, reject.kind, reject.field, reject.code)
                notices[(path.name, reject.seq, reject.topic)] = key
    return Counter(notices.values())


def test_coordinator_workers_and_an_attacking_shard_over_memory_with_the_acl(tmp_path):
    coordinator, transport = sides_over_memory(tmp_path, text=HOSTILE)
    assert transport.denied == []  # the attacker logs in as admin; nobody else strays
    assert coordinator["complete"]
    merge_run(tmp_path / "c", [tmp_path / "w0", tmp_path / "f", tmp_path / "w1"], tmp_path / "o")
    merged = json.loads((tmp_path / "o" / "results.json").read_text())
    reference = asyncio.run(
        run_scenario(parse_scenario(HOSTILE), broker="memory", out_dir=tmp_path / "ref")
    )
    check_attack(reference)
    check_attack(merged)
    for key in CHECKED:
        assert merged[key] == reference[key], key
    # each worker counted what reached its partition
    workers = [json.loads((tmp_path / f"w{p}" / "results.json").read_text()) for p in (0, 1)]
    target = topics.partition_of(TARGET, 2)
    assert workers[1 - target]["rejections_by_reason"] == {"unknown_sender": 28}
    assert workers[target]["reports_rejected"] == merged["reports_rejected"] - 28


def without_rejects(rows: set, acks: dict) -> tuple[set, dict]:
    """``trace_view`` without the reject notices (``rejects`` compares those)."""
    return {row for row in rows if row[1] != "reject"}, acks


def check_identical_across_partitions(broker: str, tmp_path: Path) -> None:
    outs, results = run_partition_counts("hostile", HOSTILE, broker, tmp_path)
    for count in (1, 2, 4):
        check_attack(results[count])
    reference_rows, reference_acks = without_rejects(*trace_view(outs[1], results[1]["run"]))
    reference_rejects = rejects(outs[1], results[1]["run"])
    assert sum(reference_rejects.values()) == sum(flood_plan(FLOOD)[0].values())
    for count in (2, 4):
        mine, theirs = results[count], results[1]
        assert "partitions" in mine["side_processes"]  # workers of their own
        for key in (*CHECKED, "faults"):
            assert mine[key] == theirs[key], (count, key)
        assert ledger_without_run(outs[count]) == ledger_without_run(outs[1])
        rows, acks = without_rejects(*trace_view(outs[count], mine["run"]))
        assert_same_rows(rows, reference_rows, count)
        assert acks == reference_acks, count
        assert rejects(outs[count], mine["run"]) == reference_rejects, count


@pytest.mark.slow
@pytest.mark.embedded
def test_a_hostile_flood_gives_identical_results_for_one_two_and_four_partitions(tmp_path):
    check_identical_across_partitions("embedded", tmp_path)


@pytest.mark.slow
@pytest.mark.mosquitto
def test_a_hostile_flood_gives_identical_results_on_mosquitto(mosquitto_url, tmp_path):
    check_identical_across_partitions(mosquitto_url, tmp_path)
