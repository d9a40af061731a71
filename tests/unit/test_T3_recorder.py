"""``broker.recorder`` without a broker: classification, batching, the chain across a
reopened trace and its signature, pinned by helper T3's planted-bug hunt (round 3); the
tests that ran it went through end-to-end runs (marked slow). Each test names the mutants
it kills."""

from __future__ import annotations

import json
import sqlite3

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from ldpfleet.broker import recorder as recorder_module
from ldpfleet.broker.recorder import TraceRecorder, classify, control_filters, stamp_public_key
from ldpfleet.broker.trace import chain_next, chained_rows, genesis, row_bytes, signed_message

RUN = "t3rec"


def _publish(rec: TraceRecorder, count: int, first: int = 0) -> None:
    for i in range(first, first + count):
        payload = json.dumps({"type": "progress", "run": RUN, "sender": "d1", "seq": i})
        rec.record(f"ldp/{RUN}/up/d0001/progress", payload.encode())


def _rows(path) -> list:
    db = sqlite3.connect(str(path))
    try:
        return list(chained_rows(db)), dict(db.execute("SELECT key, value FROM meta"))
    finally:
        db.close()


def test_classify_bounds_what_sqlite_stores():
    """Kills RC1 (a seq of exactly 2**63 kept: SQLite cannot store it, the insert raised
    and the recorder stopped on one hostile message) and RC2 (the kind not cut to 64
    characters: a hostile payload's type tag stored whole)."""
    topic = f"ldp/{RUN}/up/d0001/progress"
    assert classify(topic, b'{"type": "progress", "seq": 9223372036854775808}')[4] is None
    assert classify(topic, b'{"type": "progress", "seq": 9223372036854775807}')[4] == 2**63 - 1
    assert classify(topic, json.dumps({"type": "k" * 100}).encode())[3] == "k" * 64


def test_only_the_runs_closing_ends_the_recording():
    """Kills RC5 (any stage's ``closed`` taken as the run's end: the recorder stopped at
    the close of the ``secure_sum`` stage and lost the rest of the run)."""
    rec = TraceRecorder(None, RUN, "unused.sqlite")
    closed = b'{"type":"stage","run":"%s","sender":"collector","stage":"%s","state":"closed"}'
    assert rec._is_final("ctl", "stage", closed % (RUN.encode(), b"run"))
    assert not rec._is_final("ctl", "stage", closed % (RUN.encode(), b"secure_sum"))


def test_control_filters_cover_the_service_topics():
    """Kills RC10 (the ``svc/`` family left out of a CADR-LDP run's recording: relay phase
    reports and rejections missing from its trace)."""
    assert control_filters(RUN) == (f"ldp/{RUN}/ctl/#", f"ldp/{RUN}/rel/#", f"ldp/{RUN}/svc/#")


def test_rows_are_written_a_batch_at_a_time(tmp_path):
    """Kills RC6 (a batch written only past ``batch_rows`` rows AND ``batch_bytes``
    bytes): ``batch_rows`` rows are in the file as soon as they are recorded."""
    path = tmp_path / "trace.sqlite"
    rec = TraceRecorder(None, RUN, path, batch_rows=2)
    rec.open(fresh=True)
    _publish(rec, 2)
    assert len(_rows(path)[0]) == 2
    rec.close()


def test_a_reopened_trace_continues_its_chain_and_the_new_key_signs_the_whole(tmp_path):
    """Kills RC3 (row ids restarting at 1 in a reopened trace), RC4 (the chain restarting
    from the genesis value), RC7 (the last recorder's signature kept while a new one
    writes: a stale signature over fewer rows) and RC8 (``close(complete=False)`` undoing
    a recorder that saw the run closed)."""
    path = tmp_path / "trace.sqlite"
    first = TraceRecorder(None, RUN, path)
    first.open(fresh=True)
    _publish(first, 3)
    first.close()
    second = TraceRecorder(None, RUN, path)
    second.open()
    assert "signature" not in _rows(path)[1]
    _publish(second, 2, first=3)
    second.complete = True
    second.close(complete=False)
    assert second.complete
    rows, meta = _rows(path)
    assert [row.id for row, _ in rows] == [1, 2, 3, 4, 5]
    head = genesis(RUN)
    for row, stored in rows:
        encoded = row_bytes(
            row.id, row.time, row.topic, row.family, row.sender, row.recipient, row.kind,
            row.seq, row.size, row.payload,
        )  # fmt: skip
        head = chain_next(head, encoded)
        assert stored == head
    key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(second.public_key))
    key.verify(bytes.fromhex(meta["signature"]), signed_message(RUN, 5, head, None))
    assert meta["rows"] == "5" and meta["public_key"] == second.public_key


def test_stamp_public_key_writes_the_key_into_results_json(tmp_path):
    """Kills RC9 (the key returned but not written into ``results.json``, the copy
    ``ldpfleet trace verify`` trusts)."""
    rec = TraceRecorder(None, RUN, tmp_path / "trace.sqlite")
    rec.open(fresh=True)
    rec.close()
    (tmp_path / "results.json").write_text(json.dumps({"run": RUN}))
    stamped = stamp_public_key(tmp_path, {"run": RUN})
    entry = {"path": "trace.sqlite", "public_key": rec.public_key}
    assert stamped["trace"] == entry
    assert json.loads((tmp_path / "results.json").read_text())["trace"] == entry
    assert recorder_module.public_key_of(tmp_path / "trace.sqlite") == rec.public_key


@pytest.fixture(autouse=True)
def _no_stray_keys():
    """Each recorder registers its key per path in a module dict: leave it as found."""
    saved = dict(recorder_module._PUBLIC_KEYS)
    yield
    recorder_module._PUBLIC_KEYS.clear()
    recorder_module._PUBLIC_KEYS.update(saved)
