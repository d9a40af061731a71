"""Reading a recorded trace (``trace.sqlite``): filters, statistics, readable lines, export,
and the definition of its hash chain and signature.

Used by ``ldpfleet trace stats|show|export``. Filters: device (as sender or recipient),
kind (payload type tag, e.g. ``sw_report``, ``reject``), topic (an MQTT filter with ``+``
and ``#``), and a time window in seconds relative to the first recorded message.

The chain (``TRACE_FORMAT``; written by ``broker.recorder``, checked by ``ldpfleet trace
verify``): row ``i``'s ``chain`` column is ``sha256(chain[i-1] || row_bytes(row i))``, with
``chain[0] = genesis(run)``; ``row_bytes`` is the one canonical encoding of every column of
a row (id, time, topic, family, sender, recipient, kind, seq, bytes, payload). Row ids are
1, 2, ... without gaps. At the end of the run the recorder signs ``signed_message(run, rows,
head, scenario digest)`` with a per-run Ed25519 key and stores the signature, the public key
and those values in the ``meta`` table; the public key is also written to results.json and
printed, which is what a verifier must trust (``meta`` alone can be rewritten with the rows).

A partitioned run (``[collector] partitions = P > 1``) keeps one trace per recorder: the
coordinator's ``trace.sqlite`` (``ctl/``, ``rel/``, ``svc/``) and each worker's
``trace-p{p}.sqlite`` (its partition's device traffic, and the ``ctl/stage`` messages again).
``open_readonly`` on such a run directory reads them together: a temporary ``messages``
view (or, past SQLite's attachment limit, a temporary table) of every file's rows without
the workers' copies of ``ctl/``, in time order with ids 1, 2, ...; the chains and
signatures are per file (``trace verify`` checks each).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import math
import sqlite3
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import Ack, Hello, Progress, Reject, Stage, SwReport


class TraceError(ValueError):
    """The trace file is missing or is not an ldpfleet trace."""


# ---- the hash chain -----------------------------------------------------------------------

TRACE_FORMAT = "ldpfleet-trace-v1"  # meta 'format': the chain and signature defined here
_ROW_HEAD = struct.Struct("<qdq")  # id, time, bytes
_NULL = b"\xff\xff\xff\xff"  # a NULL text field (a recipient, a seq)


def _field(value: str | bytes | None) -> bytes:
    if value is None:
        return _NULL
    data = value.encode() if isinstance(value, str) else bytes(value)
    return len(data).to_bytes(4, "little") + data


def row_bytes(
    row_id: int,
    time: float,
    topic: str,
    family: str,
    sender: str,
    recipient: str | None,
    kind: str,
    seq: int | None,
    size: int,
    payload: bytes,
) -> bytes:
    """The canonical encoding of one row, as hashed into the chain: the fixed-width id,
    time (IEEE double, exactly as SQLite stores it) and size, then every text column and the
    payload, each length-prefixed (NULL distinct from empty); ``seq`` as decimal text (a
    hostile payload's seq need not fit 64 bits)."""
    return b"".join(
        (
            _ROW_HEAD.pack(row_id, time, size),
            _field(topic),
            _field(family),
            _field(sender),
            _field(recipient),
            _field(kind),
            _NULL if seq is None else _field(str(seq)),
            _field(payload),
        )
    )


def genesis(run: str) -> bytes:
    """The chain value before the first row: binds the chain to its run id."""
    return hashlib.sha256(f"{TRACE_FORMAT}\0genesis\0{run}".encode()).digest()


def chain_next(previous: bytes, encoded: bytes) -> bytes:
    """The chain value of a row: ``sha256(previous || row_bytes(row))``."""
    return hashlib.sha256(previous + encoded).digest()


def signed_message(run: str, rows: int, head: bytes, scenario_digest: str | None) -> bytes:
    """What the recorder signs at the end of the run: the run id, the number of rows, the
    chain head (the last row's chain value, ``genesis(run)`` when empty) and the digest of
    the scenario it recorded (``protocol.rendezvous.scenario_digest``; empty if unknown)."""
    return b"".join(
        (
            _field(TRACE_FORMAT),
            _field(run),
            rows.to_bytes(8, "little"),
            _field(head),
            _field(scenario_digest or ""),
        )
    )


def read_meta(db: sqlite3.Connection) -> dict[str, str]:
    """The trace's ``meta`` table (empty when it has none)."""
    try:
        return {str(k): str(v) for k, v in db.execute("SELECT key, value FROM meta")}
    except sqlite3.DatabaseError:
        return {}


def chained_rows(db: sqlite3.Connection) -> Iterator[tuple[TraceRow, bytes | None]]:
    """Every row in id order with its stored chain value (None: the trace has no chain
    column, or the row has none)."""
    columns = {c[1] for c in db.execute("PRAGMA table_info(messages)")}
    chain = "chain" if "chain" in columns else "NULL"
    query = (
        "SELECT id, time, topic, family, sender, recipient, kind, seq, bytes, payload, "
        f"{chain} FROM messages ORDER BY id"
    )
    for row in db.execute(query):  # offset 0: the columns are as stored, unchecked
        yield TraceRow(row[0], row[1], 0.0, *row[2:10]), row[10]


@dataclass(frozen=True)
class TraceFilter:
    """Which messages to select (None: no constraint)."""

    device: str | None = None
    kind: str | None = None
    topic: str | None = None
    since: float | None = None
    until: float | None = None


@dataclass(frozen=True)
class TraceRow:
    """One recorded message."""

    id: int
    time: float
    offset: float  # seconds since the first message of the trace
    topic: str
    family: str
    sender: str
    recipient: str | None
    kind: str
    seq: int | None
    size: int
    payload: bytes


def partition_traces(directory: str | Path) -> list[Path]:
    """A run directory's partition traces (``trace-p{p}.sqlite``), in partition order."""
    found = Path(directory).glob("trace-p*.sqlite")
    return sorted(
        found, key=lambda p: int(p.stem[len("trace-p") :]) if p.stem[7:].isdigit() else -1
    )


def readonly_uri(path: str | Path) -> str:
    """The SQLite URI that opens ``path`` read-only. The path is percent-encoded: a raw
    ``f"file:{path}?mode=ro"`` cuts a path at '#' or '?' (and decodes '%'), so a run
    directory named ``run#1`` opened ``run`` instead, creating it, read-write."""
    return f"{Path(path).absolute().as_uri()}?mode=ro"


def connect_readonly(path: str | Path) -> sqlite3.Connection:
    """``sqlite3.connect`` on ``readonly_uri(path)``."""
    return sqlite3.connect(readonly_uri(path), uri=True)


def open_readonly(path: str | Path) -> sqlite3.Connection:
    """Open a trace for reading; ``TraceError`` if it is not one. A run directory with
    partition traces opens as their union (module docstring)."""
    path = Path(path)
    if path.suffix == ".sqlite" and path.exists() and not path.is_file():
        raise TraceError(f"{path} is not a file (a trace is one SQLite file)")
    parts = partition_traces(path) if path.is_dir() else []
    if path.is_dir():
        path = path / "trace.sqlite"
    if not path.exists():
        raise TraceError(
            f"no trace at {path} (run `ldpfleet run` first; traces are OUT/trace.sqlite)"
        )
    if not path.is_file():
        raise TraceError(f"{path} is not a file (a trace is one SQLite file)")
    try:
        db = connect_readonly(path)
    except sqlite3.Error as error:
        raise TraceError(f"{path} cannot be opened ({error})") from None
    try:
        db.execute("SELECT 1 FROM messages LIMIT 1")
    except sqlite3.DatabaseError as error:
        db.close()
        if "malformed" in str(error):  # an SQLite file cut short or overwritten
            raise TraceError(
                f"{path} cannot be read ({error}): the file is damaged (cut short, or "
                "edited outside ldpfleet)"
            ) from None
        raise TraceError(f"{path} is not an ldpfleet trace ({error})") from None
    if parts:
        _union(db, parts)
    return db


_COLUMNS = "time, topic, family, sender, recipient, kind, seq, bytes, payload"
ATTACH_LIMIT = 9  # SQLite attaches at most 10 databases by default (one kept free)


def _union(db: sqlite3.Connection, parts: list[Path]) -> None:
    """``temp.messages``: the main trace's rows and the partitions' (without ``ctl/``)."""
    if len(parts) <= ATTACH_LIMIT:
        selects = [f"SELECT {_COLUMNS} FROM main.messages"]
        for index, part in enumerate(parts):
            _attach(db, part, f"p{index}")
            selects.append(f"SELECT {_COLUMNS} FROM p{index}.messages WHERE family != 'ctl'")
        db.execute(
            f"CREATE TEMP VIEW messages AS SELECT row_number() OVER (ORDER BY time) AS id, "
            f"{_COLUMNS}, NULL AS chain FROM ({' UNION ALL '.join(selects)})"
        )
        return
    db.execute(f"CREATE TEMP TABLE everything AS SELECT {_COLUMNS} FROM main.messages")
    for part in parts:
        _attach(db, part, "part")
        db.execute(
            f"INSERT INTO temp.everything SELECT {_COLUMNS} FROM part.messages "
            "WHERE family != 'ctl'"
        )
        # the INSERT opened a transaction (the sqlite3 module's implicit BEGIN): DETACH
        # inside it raised "database part is locked" (helper T3, 2026-12-08)
        db.commit()
        db.execute("DETACH DATABASE part")
    db.execute(
        f"CREATE TEMP VIEW messages AS SELECT row_number() OVER (ORDER BY time) AS id, "
        f"{_COLUMNS}, NULL AS chain FROM temp.everything"
    )


def _attach(db: sqlite3.Connection, path: Path, name: str) -> None:
    try:
        db.execute(f"ATTACH DATABASE ? AS {name}", (readonly_uri(path),))
        db.execute(f"SELECT 1 FROM {name}.messages LIMIT 1")
    except sqlite3.DatabaseError as error:
        raise TraceError(f"{path} is not an ldpfleet trace ({error})") from None


def rows(db: sqlite3.Connection, selection: TraceFilter = TraceFilter()) -> Iterator[TraceRow]:
    """Matching messages in recording order."""
    start = db.execute("SELECT MIN(time) FROM messages").fetchone()[0] or 0.0
    clauses, params = [], []
    if selection.device:
        clauses.append("(sender = ? OR recipient = ?)")
        params += [selection.device, selection.device]
    if selection.kind:
        clauses.append("kind = ?")
        params.append(selection.kind)
    if selection.since is not None:
        clauses.append("time >= ?")
        params.append(start + selection.since)
    if selection.until is not None:
        clauses.append("time <= ?")
        params.append(start + selection.until)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    query = (
        "SELECT id, time, topic, family, sender, recipient, kind, seq, bytes, payload "
        f"FROM messages {where} ORDER BY id"
    )
    for row in db.execute(query, params):
        if selection.topic and not topics.matches(selection.topic, str(row[2])):
            continue
        yield _typed_row(row, start)


def _typed_row(row: tuple, start: object) -> TraceRow:
    """A stored row with every column of its declared type. SQLite keeps whatever type a
    row was given, so an edited trace can hold TEXT or a number where the recorder wrote a
    BLOB payload, TEXT in ``bytes``, a BLOB sender: the tools show such a row (its payload
    undecodable) instead of a traceback; ``trace verify`` reads the stored values
    (``chained_rows``) and reports the row's broken chain."""
    row_id, time, topic, family, sender, recipient, kind, seq, size, payload = row
    payload = _as_bytes(payload)
    return TraceRow(
        row_id,
        time if isinstance(time, int | float) else math.nan,
        _offset(time, start),
        _as_text(topic),
        _as_text(family),
        _as_text(sender),
        None if recipient is None else _as_text(recipient),
        _as_text(kind),
        seq if isinstance(seq, int) or seq is None else None,
        size if isinstance(size, int) else len(payload),
        payload,
    )


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def _as_bytes(payload: object) -> bytes:
    """A payload as the bytes the tools decode. SQLite keeps whatever type a row was given,
    so an edited trace can hold TEXT (or NULL, a number) where the recorder wrote a BLOB:
    the tools then show it as an undecodable payload instead of a traceback."""
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode("utf-8", "surrogateescape")
    return b"" if payload is None else str(payload).encode()


def _offset(time: object, start: object) -> float:
    """Seconds since the first message; NaN when an edited row's time is not a number."""
    try:
        return float(time) - float(start)
    except (TypeError, ValueError):
        return math.nan


def stats(db: sqlite3.Connection, selection: TraceFilter = TraceFilter()) -> dict:
    """Counts, bytes and rates per kind and per topic family."""
    by_kind: dict[str, dict] = {}
    by_family: dict[str, dict] = {}
    senders: set[str] = set()
    first = last = None
    total = size = 0
    for row in rows(db, selection):
        total += 1
        size += row.size
        senders.add(row.sender)
        first = row.offset if first is None else first
        last = row.offset
        for table, key in ((by_kind, row.kind), (by_family, row.family)):
            entry = table.setdefault(key, {"messages": 0, "bytes": 0})
            entry["messages"] += 1
            entry["bytes"] += row.size
    span = (last - first) if total > 1 else 0.0
    for table in (by_kind, by_family):
        for entry in table.values():
            entry["per_second"] = entry["messages"] / span if span > 0 else None
    return {
        "messages": total,
        "bytes": size,
        "senders": len(senders),
        "seconds": span,
        "messages_per_second": total / span if span > 0 else None,
        "by_kind": dict(sorted(by_kind.items())),
        "by_family": dict(sorted(by_family.items())),
    }


def _report_value(value: float) -> str:
    """One report value for ``summarize``: three decimals at ordinary sizes, four
    significant digits below 0.1 (a plugin reporting on [0, 1e-6] was shown as ``[-0.000,
    0.000]``, every report seemingly zero; helper U3) and from 1e15 up."""
    if value == 0 or 0.1 <= abs(value) < 1e15:
        return f"{value:.3f}"
    return f"{value:.4g}"


def summarize(row: TraceRow) -> str:
    """A short human description of a message's content."""
    try:
        message = codec.decode(row.payload)
    except RemoteProtocolError as error:
        preview = row.payload[:60].decode("utf-8", "replace")
        return f"INVALID ({error.field}: {error.reason[:80]}) {preview!r}"
    if isinstance(message, SwReport):
        shown = ", ".join(_report_value(v) for v in message.values[:4])
        more = ", ..." if len(message.values) > 4 else ""
        return (
            f"seq={message.seq} t0={message.t0} {message.mechanism} eps0={message.eps0:g} "
            f"w={message.w} n={len(message.values)} [{shown}{more}]"
        )
    if isinstance(message, Hello):
        return (
            f"{message.mechanism} eps={message.eps:g} w={message.w} steps={message.steps} "
            f"batch={message.batch_steps} bounds=[{message.lo:g}, {message.hi:g}]"
        )
    if isinstance(message, Ack):
        return f"persisted<= {message.seq} credit< {message.credit}"
    if isinstance(message, Reject):
        source = message.device or "?"
        return f"REJECTED {message.kind} from {source}: {message.field}: {message.reason}"
    if isinstance(message, Stage):
        return f"stage {message.stage} {message.state}" + (
            f" ({message.detail})" if message.detail else ""
        )
    if isinstance(message, Progress):
        return f"count={message.count}"
    return _generic_summary(message)


def _generic_summary(message) -> str:
    """Fields of any other message: scalars as they are, bytes and lists by size."""
    parts = []
    for name in message.__struct_fields__:
        if name in ("v", "run", "sender"):
            continue
        value = getattr(message, name)
        if isinstance(value, bytes):
            parts.append(f"{name}=<{len(value)} B>")
        elif isinstance(value, list | tuple):
            parts.append(f"{name}=[{len(value)}]")
        elif isinstance(value, str) and len(value) > 60:
            parts.append(f"{name}={value[:57]!r}...")
        else:
            parts.append(f"{name}={value}")
    return " ".join(parts)


def format_line(row: TraceRow) -> str:
    """One readable line: time, route, kind, size, content."""
    recipient = row.recipient or ("all" if row.family == "ctl" else row.family)
    return (
        f"{row.offset:9.3f}s  {row.sender:>12} -> {recipient:<12} {row.kind:<10} "
        f"{row.size:5d}B  {summarize(row)}"
    )


def as_record(row: TraceRow) -> dict:
    """A JSON-ready dict of one message (payload as text when UTF-8, else base64)."""
    try:
        payload: object = json.loads(row.payload)
    except (ValueError, UnicodeDecodeError):
        payload = {"base64": base64.b64encode(row.payload).decode()}
    return {
        "id": row.id,
        "time": row.time,
        "offset": row.offset,
        "topic": row.topic,
        "family": row.family,
        "sender": row.sender,
        "recipient": row.recipient,
        "kind": row.kind,
        "seq": row.seq,
        "bytes": row.size,
        "payload": payload,
    }


def export(selected: Iterator[TraceRow], fmt: str) -> Iterator[str]:
    """Lines of JSONL, or CSV with a header (payload as raw text/base64)."""
    if fmt == "jsonl":
        for row in selected:
            yield json.dumps(as_record(row))
        return
    if fmt != "csv":
        raise TraceError(f"export format {fmt!r} must be jsonl or csv")
    columns = [
        "id",
        "time",
        "offset",
        "topic",
        "family",
        "sender",
        "recipient",
        "kind",
        "seq",
        "bytes",
        "payload",
    ]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="")
    writer.writerow(columns)
    yield buffer.getvalue()
    for row in selected:
        buffer.seek(0)
        buffer.truncate()
        try:
            payload = row.payload.decode("utf-8")
        except UnicodeDecodeError:
            payload = "base64:" + base64.b64encode(row.payload).decode()
        writer.writerow(
            [
                row.id,
                row.time,
                row.offset,
                row.topic,
                row.family,
                row.sender,
                row.recipient or "",
                row.kind,
                "" if row.seq is None else row.seq,
                row.size,
                payload,
            ]
        )
        yield buffer.getvalue()


def reports_missing_from_trace(trace_path: str | Path, store_path: str | Path) -> int:
    """How many reports the collector stored that the trace never recorded (the recorder
    missed them, e.g. across a broker restart): a loss of the trace, not of data, which
    results.json reports instead of hiding (``trace.missing_reports``)."""
    trace, store = Path(trace_path), Path(store_path)
    if not (trace.exists() and store.exists()):
        return 0
    with connect_readonly(store) as db:
        stored = set(db.execute("SELECT device, seq FROM reports"))
    with connect_readonly(trace) as db:
        traced = set(
            db.execute("SELECT DISTINCT sender, seq FROM messages WHERE kind = 'sw_report'")
        )
    return len(stored - traced)


def hellos_missing_from_trace(trace_path: str | Path, store_path: str | Path) -> int:
    """How many devices have reports in the collector's store but no ``hello`` in the
    trace: the recorder missed their hello (Mosquitto's ``max_queued_messages`` drops QoS 1
    messages queued for a subscriber that lags, and the recorder is one), so ``trace
    verify`` finds every report of theirs ``no_hello``. A loss of the trace, not of data."""
    trace, store = Path(trace_path), Path(store_path)
    if not (trace.exists() and store.exists()):
        return 0
    with connect_readonly(store) as db:
        stored = {row[0] for row in db.execute("SELECT DISTINCT device FROM reports")}
    with connect_readonly(trace) as db:
        said = {
            row[0]
            for row in db.execute("SELECT DISTINCT sender FROM messages WHERE kind = 'hello'")
        }
    return len(stored - said)


# One device's conversation (``ldpfleet trace follow``) ----------------------------------

# the protocol round each message kind belongs to, in protocol order (secure aggregation:
# docs/secagg.md; the stream stage: docs/streaming.md)
ROUNDS: dict[str, str] = {
    "hello": "stream",
    "sw_report": "stream",
    "ack": "stream",
    "budget_refused": "stream",
    "withdraw": "stream",
    "bulk_hello": "bulk stream",
    "bulk_admit": "bulk stream",
    "bulk_report": "bulk stream",
    "bulk_ack": "bulk stream",
    "sa_setup": "secagg setup",
    "sa_advertise": "secagg round 0: AdvertiseKeys",
    "sa_neighbours": "secagg round 1: ShareKeys",
    "sa_shares": "secagg round 1: ShareKeys",
    "sa_deliver": "secagg round 2: MaskedInput",
    "sa_masked": "secagg round 2: MaskedInput",
    "sa_consistency_request": "secagg round 2b: ConsistencyCheck",
    "sa_consistency": "secagg round 2b: ConsistencyCheck",
    "sa_unmask_request": "secagg round 3: Unmask",
    "sa_unmask": "secagg round 3: Unmask",
    "sa_abort": "secagg abort",
}


def conversation(db: sqlite3.Connection, device: str) -> Iterator[TraceRow]:
    """Every message ``device`` sent or was sent, and the broadcasts it heard (``ctl/``,
    e.g. stage changes), in recording order."""
    for row in rows(db):
        if row.sender == device or row.recipient == device or row.family == "ctl":
            yield row


def sequence_lines(messages: Iterable[TraceRow], device: str) -> Iterator[str]:
    """A sequence view of one device's conversation: a header whenever the protocol round
    changes, then one line per message with its direction (``──▶`` sent by the device,
    ``◀──`` addressed to it, ``◀══`` a broadcast) and its decoded content."""
    current = None
    for row in messages:
        if row.kind == "stage":  # a stage change belongs to the round it opens or closes
            round_name = current or "stream"
        else:
            round_name = ROUNDS.get(row.kind, "control" if row.family == "ctl" else row.kind)
        if round_name != current:
            current = round_name
            yield f"── {round_name} " + "─" * max(3, 60 - len(round_name))
        if row.sender == device:
            route = f"{device} ──▶ {row.recipient or 'collector'}"
        elif row.family == "ctl":
            route = f"{device} ◀══ {row.sender} (all)"
        else:
            route = f"{device} ◀── {row.sender}"
        yield f"{row.offset:9.3f}s  {route:<32} {row.kind:<22} {summarize(row)}"
