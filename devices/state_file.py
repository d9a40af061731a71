"""``DeviceStateFile``: the devices of one fleet shard outlive their process.

Each device saves the whole state of its ``StreamReporter`` (privatised values, sequence
numbers, ledger, random generator, the unacknowledged outbox) into one SQLite file per
shard, committed BEFORE anything it produced is published (persist before publish, as
``agent.DeviceStorage`` does in RAM for the simulated crashes of ``[faults]``). A shard
killed with ``kill -9`` and started again with the same command finds the file, restores
every device from its last save and goes on: the unacknowledged batches are sent again (the
collector counts them as duplicates: same values, same sequence numbers), nothing is
privatised twice (the restored generator draws the same noise for a step privatised but
never saved, and nothing of it had left the device) and nothing is charged twice (the
ledger is part of the saved state).

A save happens only when the reporter has something to publish: state that changes without
output (an ack) needs no save, since replaying from the older state only re-sends batches
the collector already holds. The file is in WAL mode with ``synchronous = NORMAL``: a
commit survives the process being killed (not a power cut), without an fsync per save.
It records the run, the shard and the seed it belongs to; a file of another run is
started afresh. After a clean finish (every device done) the fleet deletes it.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import sqlite3
from pathlib import Path

from ldpfleet.protocol.stream import StreamReporter

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS devices (device TEXT PRIMARY KEY, state BLOB NOT NULL);
"""


class DeviceStateFile:
    """The saved states of one shard's devices, in the SQLite file at ``path``."""

    def __init__(self, path: str | Path, identity: dict[str, str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.identity = identity
        self.saves = 0
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self.resumed = self._adopt()

    def _adopt(self) -> bool:
        """Keep the saved states when the file belongs to this run and shard; else start
        afresh. Returns whether saved states were kept."""
        stored = dict(self._db.execute("SELECT key, value FROM meta"))
        if stored == self.identity:
            return bool(self._db.execute("SELECT count(*) FROM devices").fetchone()[0])
        if stored:
            log.warning("%s is of %s, not %s: starting afresh", self.path, stored, self.identity)
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute("DELETE FROM devices")
            self._db.execute("DELETE FROM meta")
            self._db.executemany("INSERT INTO meta VALUES (?, ?)", self.identity.items())
        return False

    def needs_save(self, reporter: StreamReporter) -> bool:
        """Only a reporter about to publish must be saved first (module docstring)."""
        return reporter.has_outbound

    def save(self, reporter: StreamReporter) -> None:
        """Commit the reporter's whole state (pickled) before it publishes."""
        blob = pickle.dumps(reporter, protocol=pickle.HIGHEST_PROTOCOL)
        self._db.execute(
            "INSERT INTO devices VALUES (?, ?) ON CONFLICT(device) DO UPDATE SET state = "
            "excluded.state",
            (reporter.device, blob),
        )
        self.saves += 1

    def load(self, device: str) -> StreamReporter | None:
        """The last saved state of ``device`` (None: it never saved one)."""
        row = self._db.execute("SELECT state FROM devices WHERE device = ?", (device,)).fetchone()
        return None if row is None else pickle.loads(row[0])

    def close(self, *, delete: bool = False) -> None:
        """Close the file (checkpointed: no -wal/-shm left); ``delete`` removes it."""
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("PRAGMA journal_mode=DELETE")
        self._db.close()
        if delete:
            for suffix in ("", "-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
