"""The trace recorder: every message of a run, as it crossed the broker, in SQLite.

It subscribes to ``ldp/{run}/#`` and stores one row per delivery: receive time, topic,
sender (the topic's source level), kind (the payload's ``type`` tag, ``invalid`` when the
payload is not an ldpfleet message), size and the raw payload. Rows are written in batches
(one transaction per batch, WAL journal, no per-message fsync) so the recorder keeps up
with the collector. It stops after it has recorded the collector's final ``run closed``
stage message: the broker delivers one publisher's messages in order, and every report
was delivered to the broker before the collector closed the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections import Counter
from pathlib import Path

import msgspec
from ldpfleet.broker.session import Session, end_persistent_session
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import topics

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
    payload BLOB NOT NULL
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
        family, sender, recipient = "invalid", "", None
    try:
        head = _head_decoder.decode(payload)
        kind, seq = head.type[:64], head.seq
    except Exception:
        kind, seq = "invalid", None
    return family, sender, recipient, kind, seq


def open_trace(path: str | Path) -> sqlite3.Connection:
    """Open (creating if needed) a trace database."""
    db = sqlite3.connect(str(path))
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    return db


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
        filters: tuple[str, ...] | None = None,
        give_up_after: float | None = 600.0,
    ) -> None:
        self.transport = transport
        # what to record: the whole run by default; a CADR-LDP run records its control
        # plane only (``control_filters``), its peer traffic is ~400k batches
        self.filters = filters or (topics.all_of_run(run),)
        self.run = run
        self.path = Path(path)
        self.batch_rows = batch_rows
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

    def _flush(self) -> None:
        if self._rows and self._db is not None:
            with self._db:
                self._db.executemany(
                    "INSERT INTO messages(time, topic, family, sender, recipient, kind, seq, "
                    "bytes, payload) VALUES (?,?,?,?,?,?,?,?,?)",
                    self._rows,
                )
            self._rows.clear()

    def _is_final(self, family: str, kind: str, payload: bytes) -> bool:
        return (
            family == "ctl"
            and kind == "stage"
            and b'"stage":"run"' in payload
            and (b'"state":"closed"' in payload)
        )

    async def run_until_closed(self) -> int:
        """Record until the collector closes the run (or the task is cancelled: what was
        received is kept, ``complete`` stays False)."""
        self._db = open_trace(self.path)
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('run', ?)", (self.run,)
            )
        try:
            # a persistent session that reconnects: a broker restart (with persistence)
            # keeps what was published while the recorder was away
            async with Session(
                self.transport,
                f"{self.run}-recorder",
                self.filters,
                clean_session=False,
                give_up_after=self.give_up_after,
            ) as conn:
                self.session = conn
                self.subscribed.set()
                async with contextlib.aclosing(conn.messages()) as deliveries:
                    async for delivery in deliveries:
                        family, sender, recipient, kind, seq = classify(
                            delivery.topic, delivery.payload
                        )
                        self._rows.append(
                            (
                                time.time(),
                                delivery.topic,
                                family,
                                sender,
                                recipient,
                                kind,
                                seq,
                                len(delivery.payload),
                                delivery.payload,
                            )
                        )
                        self.recorded += 1
                        self.by_kind[kind] += 1
                        if len(self._rows) >= self.batch_rows or conn.pending() == 0:
                            self._flush()
                        if self._is_final(family, kind, delivery.payload):
                            self.complete = True
                            break
            if self.complete:  # the run is closed: nothing more will come for it
                await end_persistent_session(self.transport, f"{self.run}-recorder")
        finally:
            self._flush()
            self._db.close()
            self._db = None
            self.finished.set()
        return self.recorded
