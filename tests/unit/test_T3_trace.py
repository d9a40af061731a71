"""The trace's hash chain and signed message (``broker.trace``, format
``ldpfleet-trace-v1``), pinned by helper T3's planted-bug hunt (round 3): the writer
(``broker.recorder``) and the checker (``ldpfleet trace verify``) share ``row_bytes``, so
a change to the encoding passed every fast test, yet a trace recorded before it would no
longer verify, and an encoding that is not injective lets two different rows share a
chain value. Known answers computed 2026-12-08 on main (033aca6c)."""

from __future__ import annotations

import hashlib

import pytest
from ldpfleet.broker.trace import chain_next, genesis, row_bytes, signed_message
from ldpfleet.protocol import topics

REPORT = (1, 1700000000.25, "ldp/r1/up/d0001/sw_report", "up", "d0001", None, "sw_report", 3, 5)
ACK = (2, 1700000000.5, "ldp/r1/in/d0001", "in", "collector", "d0001", "ack", None, 2)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_row_encoding_and_the_chain_are_format_v1():
    """Kills TR1 (text fields without their length prefix), TR2 (a NULL seq encoded as
    the text "None") and TR11 (the recipient left out of the encoding: a row's recipient
    could be edited without breaking the chain)."""
    first = row_bytes(*REPORT, b'{"a"}')
    second = row_bytes(*ACK, b"{}")
    assert _digest(first) == "554e7fc5713c58cfd70ce6a1aebc9db677837b192171b25da035ebdaff5a2138"
    assert _digest(second) == "cd25f91b3d109eb2756c4de1aee65b6e6dbcd05212d00f8f907e9648ab7edacb"
    head = chain_next(chain_next(genesis("r1"), first), second)
    assert head.hex() == "f25f3ef2d5412a9707ec3e7c7313752d7422a66cc019927b7a30c048cd469161"


def test_moving_text_between_two_columns_changes_the_encoding():
    """Kills TR1 on its own terms: without length prefixes ``("ab", "c")`` and ``("a",
    "bc")`` encode alike, so a sender could be rewritten into the family unseen."""
    row = list(REPORT)
    moved = list(REPORT)
    row[3], row[4] = "up", "d0001"
    moved[3], moved[4] = "upd", "0001"
    assert row_bytes(*row, b"x") != row_bytes(*moved, b"x")
    with_recipient = list(ACK)
    with_recipient[5] = "d0002"
    assert row_bytes(*ACK, b"{}") != row_bytes(*with_recipient, b"{}")


def test_the_signed_message_binds_the_row_count_and_the_scenario():
    """Kills TR3 (the row count left out of the signed message: rows cut from the end of
    a trace, with the head rewound, kept a valid signature) and TR4 (the scenario digest
    left out: the signature no longer said which scenario was recorded)."""
    head = bytes(range(32))
    signed = signed_message("r1", 2, head, "ab" * 32)
    assert _digest(signed) == "f5bec9cb2e406da436758eb83251374afd12a611a720b106e246da672065f010"
    assert signed != signed_message("r1", 3, head, "ab" * 32)
    assert signed != signed_message("r1", 2, head, "cd" * 32)


def _trace(path, run: str, messages: list[tuple[str, dict]], monkeypatch, start: float) -> None:
    """A trace at ``path`` with ``messages`` (topic, payload) recorded one second apart."""
    import itertools
    import json
    from types import SimpleNamespace

    from ldpfleet.broker import recorder

    clock = itertools.count(start)
    monkeypatch.setattr(recorder, "time", SimpleNamespace(time=lambda: float(next(clock))))
    rec = recorder.TraceRecorder(None, run, path)
    rec.open(fresh=True)
    for topic, payload in messages:
        rec.record(topic, json.dumps({"run": run, "sender": "x", **payload}).encode())
    rec.close()


T3_RUN = "t3tr"
STAGE_OPEN = (topics.ctl(T3_RUN, "stage"), {"type": "stage", "stage": "run", "state": "open"})
ACK_D1 = (topics.inbox(T3_RUN, "d0001", "collector"), {"type": "ack", "seq": 0})


def _up(device: str, seq: int):
    return (topics.up(T3_RUN, device, "progress"), {"type": "progress", "seq": seq, "count": 1})


@pytest.mark.parametrize("partitions", [2, 10])
def test_a_partitioned_run_reads_each_stage_message_once(tmp_path, monkeypatch, partitions):
    """Kills TR5 (the workers' ``ctl/`` copies kept in the union: every stage message of
    a partitioned run shown once per partition more). With 10 partition traces (past
    ``ATTACH_LIMIT``: the temporary table) this FAILED on main: ``DETACH DATABASE part``
    inside the open transaction of the INSERT before it raised ``sqlite3.OperationalError:
    database part is locked``, so no trace tool could read a run of 10 or more partitions
    (``[collector] partitions`` allows 1,024)."""
    from ldpfleet.broker import trace

    assert trace.ATTACH_LIMIT < 10
    _trace(tmp_path / "trace.sqlite", T3_RUN, [STAGE_OPEN], monkeypatch, 100.0)
    for p in range(partitions):
        up = _up(f"d{p:04d}", 0)
        _trace(
            tmp_path / f"trace-p{p}.sqlite", T3_RUN, [STAGE_OPEN, up], monkeypatch, 101.0 + 2 * p
        )
    db = trace.open_readonly(tmp_path)
    try:
        got = [(row.id, row.family, row.sender) for row in trace.rows(db)]
    finally:
        db.close()
    devices = [(2 + p, "up", f"d{p:04d}") for p in range(partitions)]
    assert got == [(1, "ctl", "collector"), *devices]


def test_filters_and_rates_of_a_trace(tmp_path, monkeypatch):
    """Kills TR7 (``since`` excluding a message exactly at its bound), TR8 (the device
    filter not matching the device as recipient), TR9 (the span of a two-message selection
    taken as 0) and TR10 (a per-kind rate of a zero span reported as 0 instead of None)."""
    from ldpfleet.broker.trace import TraceFilter, open_readonly, rows, stats

    messages = [STAGE_OPEN, _up("d0001", 0), ACK_D1, _up("d0002", 0)]
    _trace(tmp_path / "trace.sqlite", T3_RUN, messages, monkeypatch, 100.0)
    db = open_readonly(tmp_path / "trace.sqlite")
    try:
        assert [row.id for row in rows(db, TraceFilter(since=1.0))] == [2, 3, 4]
        assert [row.id for row in rows(db, TraceFilter(device="d0001"))] == [2, 3]
        two = stats(db, TraceFilter(device="d0001"))
        assert two["seconds"] == 1.0 and two["messages_per_second"] == 2.0
        one = stats(db, TraceFilter(kind="ack"))
        assert one["seconds"] == 0.0 and one["by_kind"]["ack"]["per_second"] is None
    finally:
        db.close()
