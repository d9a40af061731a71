"""Traces of bulk-gateway runs (issue 23): each partition collector records its
conversation in its own signed file, the runner its stage messages; ``ldpfleet trace
verify`` checks the signatures, every device's w-event spend recomputed from the stored
``eps0`` column, the counts, and with ``trace = "all"`` the stored rows against the traced
reports and acknowledgements. Planted faults are caught."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from ldpfleet.app.cli import app
from ldpfleet.app.trace_verify import verify_run
from ldpfleet.broker.recorder import classify
from ldpfleet.broker.trace import TraceError, open_readonly, rows
from ldpfleet.protocol.bulk import (
    BulkPlan,
    decode_bulk,
    entry_dtype,
    gateway_route,
    gateway_up,
    stored_dtype,
)
from ldpfleet.scenarios.bulk_run import run_bulk
from typer.testing import CliRunner

from tests.e2e.test_bulk_scenario import BULK, run_cli


def small_plan(partitions: int, run: str = "bulk-trace") -> BulkPlan:
    return BulkPlan(
        run=run, devices=300, steps=20, batch_steps=5, eps=1.0, w=10, seed=7,
        gateway_devices=100, partitions=partitions, max_entries=64,
    )  # fmt: skip


async def bulk_run(tmp_path, partitions: int, trace: str = "all", **kwargs) -> tuple:
    out = tmp_path / f"P{partitions}-{trace}"
    results = await run_bulk(
        small_plan(partitions), broker="memory", out_dir=out, trace=trace, **kwargs
    )
    return out, results


def traced(out, kind: str) -> list:
    """(topic, decoded message) of every row of ``kind`` in the run's traces together."""
    db = open_readonly(out)
    try:
        return [(row.topic, decode_bulk(row.payload)) for row in rows(db) if row.kind == kind]
    finally:
        db.close()


def traced_entries(out, plan: BulkPlan) -> np.ndarray:
    reports = traced(out, "bulk_report")
    entries = np.concatenate(
        [np.frombuffer(m.entries, dtype=entry_dtype(plan.batch_steps)) for _, m in reports]
    )
    return np.sort(entries, order=["device", "seq"])


def reasons(report) -> set[str]:
    return {m.reason for m in report.mismatches}


async def test_one_two_and_four_partitions_trace_the_same_rows_and_verify_clean(tmp_path):
    runs = {p: await bulk_run(tmp_path, p) for p in (1, 2, 4)}
    for p, (out, results) in runs.items():
        assert results["reports_lost"] == 0
        parts = results["trace"]["partitions"]
        assert [e["path"] for e in parts] == [f"trace-p{i}.sqlite" for i in range(p)]
        assert all((out / e["path"]).exists() for e in parts)
        assert (out / "trace.sqlite").exists()
        report = verify_run(out)
        assert report.ok, [m.line() for m in report.mismatches]
        assert report.checked["signature"] == p + 1
        assert report.checked["stored_rows"] == report.checked["traced_entries"] == 300 * 4
        assert report.checked["stream_devices"] == 300
        # the run's rows split by partition: each partition trace holds its devices only
        plan = small_plan(p)
        for index, entry in enumerate(parts):
            db = open_readonly(out / entry["path"])
            devices = {
                int(d)
                for row in rows(db)
                if row.kind == "bulk_report"
                for d in np.frombuffer(decode_bulk(row.payload).entries, dtype=entry_dtype(5))[
                    "device"
                ]
            }
            db.close()
            assert set(np.flatnonzero(plan.partitions_of(0, 300) == index)) == devices
    one = runs[1][0]
    plan = small_plan(1)
    # every device's batches, privatised and acknowledged once, whichever partition
    for p in (2, 4):
        assert np.array_equal(traced_entries(one, plan), traced_entries(runs[p][0], plan))
    assert len(traced_entries(one, plan)) == 300 * 4
    # each gateway says hello once per partition holding its devices
    hellos = {p: sorted((m.gateway, m.first, m.count) for _, m in traced(o, "bulk_hello"))
              for p, (o, _) in runs.items()}  # fmt: skip
    assert hellos[1] == [(0, 0, 100), (1, 100, 100), (2, 200, 100)]
    assert sorted(set(hellos[2])) == sorted(set(hellos[4])) == hellos[1]
    assert len(hellos[2]) == 6 and len(hellos[4]) == 12
    acks = {p: len(traced(o, "bulk_ack")) for p, (o, _) in runs.items()}
    assert acks == {p: r["messages"] for p, (_, r) in runs.items()}
    assert [m.state for _, m in traced(one, "stage")] == ["open", "closed", "closed"]


async def test_a_control_trace_holds_no_report_and_verifies_the_store(tmp_path):
    out, _ = await bulk_run(tmp_path, 2, "control")
    kinds = {row.kind for row in rows(open_readonly(out))}
    assert {"bulk_hello", "bulk_admit", "partition_status", "stage"} <= kinds
    assert not kinds & {"bulk_report", "bulk_ack"}
    report = verify_run(out)
    assert report.ok and report.checked["stored_rows"] == 1200
    assert "traced_entries" not in report.checked
    assert any('trace = "control"' in note for note in report.notes)


async def test_no_trace_is_written_with_none_and_verify_says_so(tmp_path):
    out, results = await bulk_run(tmp_path, 1, "none")
    assert results["trace"] == {"messages": 0, "recorder": "none"}
    assert not list(out.glob("trace*.sqlite"))
    with pytest.raises(TraceError, match='trace = "none"'):
        verify_run(out)


def edit_store(out, partition: int, edit) -> None:
    path = out / f"p{partition}" / "reports.bin"
    rows_ = np.fromfile(path, dtype=stored_dtype(5))
    rows_ = edit(rows_)
    rows_.tofile(path)


def raise_eps0(rows_):
    rows_["eps0"][0] = 0.5  # 5 steps at 0.5 > eps = 1 in a window of 10
    return rows_


def change_a_value(rows_):
    rows_["values"][3, 1] = np.nextafter(rows_["values"][3, 1], 0)
    return rows_


def drop_a_row(rows_):
    return rows_[1:]


def store_a_row_twice(rows_):
    return np.concatenate([rows_, rows_[-1:]])


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (raise_eps0, {"eps0", "window_overspent", "stored_differs"}),
        (change_a_value, {"stored_differs"}),
        (drop_a_row, {"not_stored", "count_mismatch"}),
        (store_a_row_twice, {"stored_twice", "count_mismatch"}),
    ],
)
async def test_a_planted_fault_in_the_store_is_caught(tmp_path, edit, expected):
    out, _ = await bulk_run(tmp_path, 2)
    edit_store(out, 1, edit)
    report = verify_run(out)
    assert reasons(report) == expected, [m.line() for m in report.mismatches]


async def test_a_tampered_signature_or_trace_row_is_caught(tmp_path):
    out, _ = await bulk_run(tmp_path, 2)
    with sqlite3.connect(out / "trace-p0.sqlite") as db:
        signature = db.execute("SELECT value FROM meta WHERE key = 'signature'").fetchone()[0]
        forged = ("0" if signature[0] != "0" else "1") + signature[1:]
        db.execute("UPDATE meta SET value = ? WHERE key = 'signature'", (forged,))
    assert "signature" in reasons(verify_run(out))
    with sqlite3.connect(out / "trace-p1.sqlite") as db:
        db.execute("UPDATE messages SET time = time + 1 WHERE id = 5")
    assert {"signature", "chain_broken"} <= reasons(verify_run(out))


async def test_results_counts_that_disagree_with_the_store_are_caught(tmp_path):
    out, _ = await bulk_run(tmp_path, 1)
    path = out / "results.json"
    results = json.loads(path.read_text())
    results["partitions"][0]["reports_received"] -= 1
    path.write_text(json.dumps(results))
    assert reasons(verify_run(out)) == {"count_mismatch"}


def hostile(entries):
    """Gateway 0 claims gateway 1's device and sends a value outside the domain."""
    entries = entries.copy()
    entries["values"][entries["device"] == 5, 0] = 9.0
    extra = entries[:1].copy()
    extra["device"] = 150
    return np.concatenate([entries, extra])


async def test_rejected_entries_are_noticed_in_the_trace_and_verify_clean(tmp_path):
    out, results = await bulk_run(tmp_path, 1, tamper={0: hostile})
    assert results["reports_rejected"] > 0 and results["reports_lost"] == 0
    db = open_readonly(out)
    notices = [json.loads(row.payload) for row in rows(db) if row.kind == "reject"]
    assert notices and all(n["device"] == "g0" and n["field"] == "entries" for n in notices)
    assert any("out_of_range" in n["reason"] for n in notices)
    report = verify_run(out)
    assert report.ok, [m.line() for m in report.mismatches]
    # the rejected entries were traced but neither accepted nor stored
    assert results["reports_received"] == 1200 - 4  # device 5's four batches
    assert report.checked["stored_rows"] == report.checked["traced_entries"] == 1196


def test_bulk_topics_name_their_gateway_in_the_trace():
    plan = small_plan(2)
    up = gateway_up(plan.run, 3, "bulk", 1)
    assert gateway_route(up) == ("g3", "collector")
    assert gateway_route("ldp/r/p1/gw/g3/in/collector") == ("collector", "g3")
    assert gateway_route("ldp/r/dev/d1/up/report") is None
    assert classify(up, b'{"type":"bulk_report","seq":4}') == (
        "gw", "g3", "collector", "bulk_report", 4
    )  # fmt: skip


def test_a_bulk_scenario_records_and_verifies_from_the_cli(tmp_path):
    result, out = run_cli(BULK.replace('trace = "none"', 'trace = "all"'), "memory", tmp_path)
    assert result.exit_code == 0, result.output
    assert "trace public key:" in result.output
    verified = CliRunner().invoke(app, ["trace", "verify", str(out)])
    assert verified.exit_code == 0, verified.output
    assert "scenario digest" not in verified.output  # the scenario run signs its digest
    follow = CliRunner().invoke(app, ["trace", "follow", str(out), "d0001"])
    assert follow.exit_code == 2 and "name a gateway" in follow.output
    shown = CliRunner().invoke(app, ["trace", "show", str(out), "--device", "d0001"])
    assert shown.exit_code == 2 and "one row per gateway message" in shown.output
    stats = CliRunner().invoke(app, ["trace", "stats", str(out), "--device", "g1", "--json"])
    assert stats.exit_code == 0 and json.loads(stats.output)["messages"] > 0


def test_a_repeated_rejected_entry_is_not_taken_as_accepted():
    """A report retransmitted because its acknowledgement was lost repeats an entry the
    collector rejected for good; the collector acknowledges it as a duplicate (acked at
    least its seq, not rejected again). verify must not expect it stored."""
    from types import SimpleNamespace

    from ldpfleet.app.trace_verify_bulk import _Conversation
    from ldpfleet.protocol.bulk import BulkCollector, BulkHello, BulkReport, encode_bulk

    plan = small_plan(1)
    collector = BulkCollector(plan)
    hello = BulkHello(
        run=plan.run, sender="g0", gateway=0, first=0, count=100, mechanism="sw", eps=1.0,
        w=10, eps0=0.1, steps=20, batch_steps=5, lo=plan.lo, hi=plan.hi,
    )  # fmt: skip
    collector.hello(0, hello, 0.0)
    entries = np.zeros(2, dtype=entry_dtype(5))
    entries["device"], entries["eps0"], entries["values"] = [0, 1], 0.1, 0.5
    entries["values"][0, 0] = 9.0  # device 0: outside the domain, rejected for good
    report = BulkReport(
        run=plan.run, sender="g0", seq=0, mechanism="sw", w=10, batch_steps=5,
        entries=entries.tobytes(),
    )  # fmt: skip
    conversation = _Conversation(plan)
    up = gateway_up(plan.run, 0, "bulk", None)
    for _ in range(2):  # the report and its retransmission, each with its acknowledgement
        pending = collector.ingest(0, report)
        ack = collector.commit(pending, len(pending.rows))[0]
        for topic, message in ((up, report), (ack.topic, ack.message)):
            kind = message.__struct_config__.tag
            conversation.add(SimpleNamespace(kind=kind, topic=topic, payload=encode_bulk(message)))
    accepted = conversation.accepted_rows()
    assert accepted["device"].tolist() == [1] and accepted["seq"].tolist() == [0]
