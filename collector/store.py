"""The collector's durable report store (SQLite, WAL).

Every accepted report is inserted and committed *before* it is acknowledged, so an
acknowledged report survives a crash of the collector process. The primary key
(device, seq) makes a replayed report a no-op. Values are stored as packed float64.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import numpy as np

SCHEMA = """
CREATE TABLE IF NOT EXISTS reports (
    device TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    t0     INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    vals   BLOB NOT NULL,
    received REAL NOT NULL,
    PRIMARY KEY (device, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rejections (
    id     INTEGER PRIMARY KEY,
    time   REAL NOT NULL,
    device TEXT NOT NULL,
    topic  TEXT NOT NULL,
    kind   TEXT NOT NULL,
    field  TEXT NOT NULL,
    reason TEXT NOT NULL
);
"""


class ReportStore:
    """Append-only store of accepted SW reports and of rejections."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = sqlite3.connect(str(self.path))
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a committed transaction survives a process crash (kill -9);
        # only an OS crash or power loss can lose the last commits.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    def persist(
        self,
        reports: Iterable[tuple[str, int, int, list[float], float]],
        rejections: Iterable[tuple[float, str, str, str, str, str]] = (),
    ) -> None:
        """Insert (device, seq, t0, values, received_time) rows and commit."""
        rows = [
            (device, seq, t0, len(values), np.asarray(values, dtype="<f8").tobytes(), received)
            for device, seq, t0, values, received in reports
        ]
        with self._db:
            self._db.executemany(
                "INSERT OR IGNORE INTO reports(device, seq, t0, n, vals, received) "
                "VALUES (?,?,?,?,?,?)",
                rows,
            )
            self._db.executemany(
                "INSERT INTO rejections(time, device, topic, kind, field, reason) "
                "VALUES (?,?,?,?,?,?)",
                list(rejections),
            )

    def persisted_keys(self) -> list[tuple[str, int]]:
        """Every stored (device, seq): what a restarted collector already has."""
        return list(self._db.execute("SELECT device, seq FROM reports"))

    def device_values(self, devices: Iterable[str] | None = None) -> dict[str, np.ndarray]:
        """Each device's reported values in step order (only what was received); only
        ``devices`` when given (those with no stored report are absent)."""
        return device_values(self._db, devices)

    def close(self) -> None:
        """Checkpoint the WAL into the database, leave WAL mode and close: the run folder
        keeps one ``collector.sqlite`` and no ``-wal``/``-shm`` files (a read-only reader,
        such as the report, would otherwise recreate them and leave them behind). A
        restarted collector reopens it in WAL mode. Closing twice is harmless."""
        if self._db is None:
            return
        with contextlib.suppress(sqlite3.Error):  # another connection still reading: keep WAL
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("PRAGMA journal_mode=DELETE")
        self._db.close()
        self._db = None


def device_values(
    db: sqlite3.Connection, devices: Iterable[str] | None = None
) -> dict[str, np.ndarray]:
    """Each device's reported values in step order from a store's ``db`` (open, or read
    only: ``ldpfleet.read_reports``), in device order; only ``devices`` when given (those
    with no stored report are absent)."""
    query = "SELECT device, t0, vals FROM reports"
    params: tuple[str, ...] = ()
    if devices is not None:
        params = tuple(devices)
        if not params:
            return {}
        query += f" WHERE device IN ({','.join('?' * len(params))})"
    streams: dict[str, list[np.ndarray]] = {}
    for device, _t0, blob in db.execute(query + " ORDER BY device, t0", params):
        streams.setdefault(device, []).append(np.frombuffer(blob, dtype="<f8"))
    return {device: np.concatenate(parts) for device, parts in streams.items()}
