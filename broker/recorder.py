"""The trace recorder: every message of a run, as it crossed the broker, in SQLite.

It subscribes to ``ldp/{run}/#`` and stores one row per delivery: receive time, topic,
sender (the topic's source level), kind (the payload's ``type`` tag, ``invalid`` when the
payload is not an ldpfleet message), size and the raw payload. Rows are written in batches
(one transaction per batch, WAL journal, no per-message fsync) so the recorder keeps up
with the collector. It stops after it has recorded the collector's final ``run closed``
stage message: the broker delivers one publisher's messages in order, and every report
was delivered to the broker before the collector closed the run.

The trace is tamper-evident (``broker.trace`` defines the encoding): every row carries a
``chain`` value, the SHA-256 of the previous row's value and the row's canonical bytes, and
row ids are assigned here, 1, 2, ... without gaps. Each recorder holds a fresh Ed25519 key
in memory only (never written); when it stops it signs (run, rows, chain head, scenario
digest) and stores the signature with the public key in ``meta``. The runner puts the
public key into results.json (``trace.public_key``) and the CLI prints it: that copy, not the
one in the trace, is what ``ldpfleet trace verify`` trusts. A recorder reopening a trace
(a restarted collector side) continues its chain, and its own key signs the whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections import Counter
from pathlib import Path

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from ldpfleet.broker.session import Session, end_persistent_session
from ldpfleet.broker.trace import TRACE_FORMAT, chain_next, genesis, row_bytes, signed_message
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import topics
from ldpfleet.protocol.bulk import gateway_route

SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id      INTEGER PRIMARY KEY,
    time    REAL NOT NULL,
    topic   TEXT NOT NULL,
    family  TEXT NOT NULL,
    sender  TEXT NOT NULL,
    recipient TEXT,
    kind    TEXT NOT NULL,
    seq     INTEGER,
    bytes   INTEGER NOT NULL,
    payload BLOB NOT NULL,
    chain   BLOB
);
CREATE INDEX IF NOT EXISTS messages_kind ON messages(kind);
CREATE INDEX IF NOT EXISTS messages_sender ON messages(sender);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class _Head(msgspec.Struct):
    """Just the envelope fields the trace indexes (unknown fields ignored)."""

    type: str = "invalid"
    seq: int | None = None


_head_decoder = msgspec.json.Decoder(_Head)


def classify(topic: str, payload: bytes) -> tuple[str, str, str | None, str, int | None]:
    """(family, sender, recipient, kind, seq) of a raw delivery, never raising."""
    try:
        parsed = topics.parse(topic)
        family, sender, recipient = parsed.family, parsed.sender, parsed.recipient
    except Exception:
        route = gateway_route(topic)  # a bulk gateway's uplink or inbox
        family, sender, recipient = ("gw", *route) if route else ("invalid", "", None)
    try:
        head = _head_decoder.decode(payload)
        kind, seq = head.type[:64], head.seq
    except Exception:
        kind, seq = "invalid", None
    if seq is not None and not -(2**63) <= seq < 2**63:
        seq = None  # a hostile payload's seq that SQLite cannot store
    return family, sender, recipient, kind, seq


def close_wal(db: sqlite3.Connection) -> None:
    """Checkpoint the WAL into the database and leave WAL mode, so that closing removes the
    ``-wal``/``-shm`` files and read-only readers (``ldpfleet trace``, the report) do not
    recreate them; kept in WAL mode if another connection still reads."""
    with contextlib.suppress(sqlite3.Error):
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode=DELETE")


def remove_trace(path: str | Path) -> None:
    """Delete a trace file and its SQLite side files (``-wal``, ``-shm``), if present."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def open_trace(path: str | Path) -> sqlite3.Connection:
    """Open (creating if needed) a trace database."""
    db = sqlite3.connect(str(path))
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    if "chain" not in {c[1] for c in db.execute("PRAGMA table_info(messages)")}:
        db.execute("ALTER TABLE messages ADD COLUMN chain BLOB")  # a trace from before chains
    return db


# the public key (hex) of the last recorder of each trace path in this process: what the
# runner writes into results.json when it does not hold the recorder (CADR-LDP runs)
_PUBLIC_KEYS: dict[str, str] = {}


def public_key_of(path: str | Path) -> str | None:
    """The public key (hex) of the recorder that last wrote ``path`` in this process."""
    return _PUBLIC_KEYS.get(str(Path(path).resolve()))


def stamp_public_key(out_dir: str | Path, results: dict) -> dict:
    """Add ``trace.public_key`` to ``results`` and to ``OUT/results.json`` for a run whose
    results were written without it (CADR-LDP: ``scenarios.cadr_run`` writes them), from
    the recorder of ``OUT/trace.sqlite`` in this process; unchanged when there is none."""
    out = Path(out_dir)
    key = public_key_of(out / "trace.sqlite")
    path = out / "results.json"
    if key is None or not (out / "trace.sqlite").exists() or not path.exists():
        return results
    entry = {"path": "trace.sqlite", "public_key": key}
    document = json.loads(path.read_text())
    document["trace"] = {**(document.get("trace") or {}), **entry}
    path.write_text(json.dumps(document, indent=2))
    return {**results, "trace": {**(results.get("trace") or {}), **entry}}


def control_filters(run: str) -> tuple[str, ...]:
    """A CADR-LDP run's control plane: broadcasts (plan, queries, θ, relay steps),
    releases (θ, and the degree release with every device's value), service messages
    (relay phase reports, rejections). Not the device traffic: peer batches, relay
    deliveries, secure aggregation and the individual DSR reports (hundreds of thousands
    of messages on ego-Facebook, and bursts of 4,039 that overflow a default Mosquitto's
    1,000-message queue for one subscriber)."""
    prefix = f"{topics.PREFIX}/{run}"
    return (f"{prefix}/ctl/#", f"{prefix}/rel/#", f"{prefix}/svc/#")


class TraceRecorder:
    """Subscribe to a run and store every delivery."""

    def __init__(
        self,
        transport: Transport,
        run: str,
        path: str | Path,
        *,
        batch_rows: int = 2000,
        batch_bytes: int = 16 * 1024 * 1024,
        filters: tuple[str, ...] | None = None,
        give_up_after: float | None = 600.0,
        scenario_digest: str | None = None,
        client_id: str | None = None,
    ) -> None:
        self.transport = transport
        # a partition worker's recorder is ``{run}-recorder-p{p}`` (one session each)
        self.client_id = client_id or f"{run}-recorder"
        # what to record: the whole run by default; a CADR-LDP run records its control
        # plane only (``control_filters``), its peer traffic is ~400k batches
        self.filters = filters or (topics.all_of_run(run),)
        self.run = run
        self.path = Path(path)
        self.batch_rows = batch_rows
        self.batch_bytes = batch_bytes
        self._queued_bytes = 0
        self.recorded = 0
        self.by_kind: Counter[str] = Counter()
        self.subscribed = asyncio.Event()
        self.finished = asyncio.Event()
        # True once the collector's final ``run closed`` was recorded (the trace is whole);
        # a recorder stopped before (cancelled: the runner's finish grace) leaves it False
        self.complete = False
        self.give_up_after = give_up_after  # the longest broker outage waited out
        self.session: Session | None = None
        self._rows: list[tuple] = []
        self._db: sqlite3.Connection | None = None
        # the run's signing key: in memory only, for this recorder's lifetime
        self._key = Ed25519PrivateKey.generate()
        self.public_key = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
        self.scenario_digest = scenario_digest
        self._head = genesis(run)
        self._next_id = 1
        self.signed = False
        _PUBLIC_KEYS[str(self.path.resolve())] = self.public_key

    def _flush(self) -> None:
        self._queued_bytes = 0
        if self._rows and self._db is not None:
            with self._db:
                self._db.executemany(
                    "INSERT INTO messages(id, time, topic, family, sender, recipient, kind, "
                    "seq, bytes, payload, chain) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    self._rows,
                )
            self._rows.clear()

    def _record(self, topic: str, payload: bytes) -> tuple[str, str]:
        """Chain one delivery and queue its row; (family, kind)."""
        family, sender, recipient, kind, seq = classify(topic, payload)
        row_id, now, size = self._next_id, time.time(), len(payload)
        self._head = chain_next(
            self._head,
            row_bytes(row_id, now, topic, family, sender, recipient, kind, seq, size, payload),
        )
        self._next_id = row_id + 1
        self._rows.append(
            (row_id, now, topic, family, sender, recipient, kind, seq, size, payload, self._head)
        )
        return family, kind

    def _resume_chain(self) -> None:
        """Continue the chain of rows already in the file (a restarted collector side)."""
        last = self._db.execute("SELECT id, chain FROM messages ORDER BY id DESC LIMIT 1")
        row = last.fetchone()
        if row is not None:
            self._next_id = row[0] + 1
            if isinstance(row[1], bytes):
                self._head = row[1]

    def _sign(self) -> None:
        """Sign (run, rows, head, scenario digest) and store it with the public key."""
        rows = self._next_id - 1
        signature = self._key.sign(signed_message(self.run, rows, self._head, self.scenario_digest))
        meta = {
            "rows": str(rows),
            "head": self._head.hex(),
            "scenario_digest": self.scenario_digest or "",
            "signature": signature.hex(),
        }
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(meta.items())
            )
        self.signed = True

    def _is_final(self, family: str, kind: str, payload: bytes) -> bool:
        return (
            family == "ctl"
            and kind == "stage"
            and b'"stage":"run"' in payload
            and (b'"state":"closed"' in payload)
        )

    def open(self, *, fresh: bool = False) -> None:
        """Open the trace file (continuing its chain) for ``record``; ``run_until_closed``
        does it itself. ``fresh``: remove a file left by an earlier run first (for a
        writer that never resumes a run, e.g. the bulk collector)."""
        if fresh:
            remove_trace(self.path)
        self._db = open_trace(self.path)
        self._resume_chain()
        with self._db:
            # the public key is known from the start; a signature over the rows at the end
            self._db.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                [("run", self.run), ("format", TRACE_FORMAT), ("public_key", self.public_key)],
            )
            self._db.execute("DELETE FROM meta WHERE key = 'signature'")

    def record(self, topic: str, payload: bytes) -> None:
        """Record one message a pump received or sent, without a subscription (the bulk
        collector records its own conversation: ``collector.bulk``); rows are written a
        batch at a time (``batch_rows`` rows or ``batch_bytes`` of payload)."""
        self._record(topic, payload)
        self.recorded += 1
        self._queued_bytes += len(payload)
        if len(self._rows) >= self.batch_rows or self._queued_bytes >= self.batch_bytes:
            self._flush()

    def close(self, *, complete: bool = True) -> None:
        """Write what is queued, sign, and close the file (``complete``: the trace is
        whole, leave no ``-wal``/``-shm`` file behind); once, later calls do nothing."""
        if self._db is None:
            return
        self.complete = self.complete or complete
        try:
            self._flush()
            self._sign()
            if self.complete:
                close_wal(self._db)
        finally:
            self._db.close()
            self._db = None
            self.finished.set()

    async def run_until_closed(self) -> int:
        """Record until the collector closes the run (or the task is cancelled: what was
        received is kept, ``complete`` stays False)."""
        self.open()
        try:
            # a persistent session that reconnects: a broker restart (with persistence)
            # keeps what was published while the recorder was away
            async with Session(
                self.transport,
                self.client_id,
                self.filters,
                clean_session=False,
                give_up_after=self.give_up_after,
            ) as conn:
                self.session = conn
                self.subscribed.set()
                async with contextlib.aclosing(conn.messages()) as deliveries:
                    async for delivery in deliveries:
                        family, kind = self._record(delivery.topic, delivery.payload)
                        self.recorded += 1
                        self.by_kind[kind] += 1
                        if len(self._rows) >= self.batch_rows or conn.pending() == 0:
                            self._flush()
                        if self._is_final(family, kind, delivery.payload):
                            self.complete = True
                            break
            if self.complete:  # the run is closed: nothing more will come for it
                await end_persistent_session(self.transport, self.client_id)
        finally:
            # a whole trace: one file, no -wal/-shm left in the run folder
            self.close(complete=self.complete)
        return self.recorded
