"""The bulk collector pump and its append-only store (docs/scaling.md, "Bulk gateways").

``run_bulk_collector`` pumps one partition's ``protocol.bulk.BulkCollector``: it
subscribes every gateway's uplink of its partition and ``ctl/stage``, answers hellos,
and for each report: ``ingest`` (vectorised validation), ``BulkStore.append`` (the
accepted rows reach the operating system: a later crash of this process loses nothing
written), then ``commit`` and publish the per-device acknowledgement. It stops once
every report of its devices is resolved, or when the stage closes.

``BulkStore`` is a columnar append-only file of rows ``(device u4, seq u4, values
f8[B])``, one ``write`` per report message (SQLite's executemany was the alternative:
the file costs ~0.1 us a row and needs no index, since dedup lives in the machine's
``next_seq`` array).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import resource
from collections.abc import Callable
from pathlib import Path

import numpy as np
from ldpfleet.broker.transport import Delivery, Transport
from ldpfleet.protocol.bulk import (
    BulkCollector,
    BulkHello,
    BulkPlan,
    BulkReport,
    decode_bulk,
    encode_bulk,
    gateway_of_topic,
    gateway_up_filter,
    stage_topic,
)
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import Stage

__all__ = ["BulkStore", "run_bulk_collector"]

log = logging.getLogger(__name__)


class BulkStore:
    """Append-only rows of one partition (``reports.bin`` + ``reports.json`` naming
    the row layout)."""

    def __init__(self, directory: str | os.PathLike, dtype: np.dtype) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dtype = dtype
        self.path = self.dir / "reports.bin"
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        (self.dir / "reports.json").write_text(json.dumps({"dtype": dtype.descr}))
        self.rows = 0

    def append(self, rows: np.ndarray) -> int:
        """Write ``rows`` (one system call); returns how many were written."""
        if len(rows):
            data = rows.tobytes()
            written = os.write(self._fd, data)
            while written < len(data):  # a short write (large buffers)
                written += os.write(self._fd, data[written:])
        self.rows += len(rows)
        return len(rows)

    def read(self) -> np.ndarray:
        """Every stored row."""
        return np.fromfile(self.path, dtype=self.dtype)

    def close(self) -> None:
        """Close the file."""
        os.close(self._fd)


async def run_bulk_collector(
    transport: Transport,
    plan: BulkPlan,
    partition: int,
    out_dir: str | os.PathLike,
    *,
    on_ready: Callable[[], None] | None = None,
) -> dict:
    """Serve ``partition`` until complete or the stage closes; writes ``summary.json``
    and ``estimates.npz`` to ``out_dir`` and returns the summary."""
    machine = BulkCollector(plan, partition)
    store = BulkStore(out_dir, machine.stored_dtype)
    loop = asyncio.get_running_loop()
    level = plan.partition_level_of(partition)
    client = f"{plan.run}-collector" + ("" if level is None else f"-p{partition}")
    refusals: dict[str, int] = {}
    async with transport.connect(client) as conn:
        await conn.subscribe(gateway_up_filter(plan.run, level), stage_topic(plan.run))
        if on_ready is not None:
            on_ready()
        pending: set[asyncio.Task] = set()

        def send(items) -> None:
            for item in items:
                task = asyncio.ensure_future(conn.publish(item.topic, encode_bulk(item.message)))
                pending.add(task)
                task.add_done_callback(pending.discard)

        if not machine.complete:
            async for delivery in conn.messages():
                if _handle(machine, store, delivery, send, loop.time(), refusals):
                    break
                if machine.complete:
                    break
        if pending:
            await asyncio.gather(*list(pending))
    store.close()
    summary = machine.summary()
    summary["message_refusals"] = refusals
    summary["stored_rows"] = store.rows
    summary["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out = Path(out_dir)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    np.savez(out / "estimates.npz", sum=machine.estimate_sum, count=machine.estimate_count)
    return summary


def _handle(machine, store, delivery: Delivery, send, now: float, refusals: dict) -> bool:
    """One delivery; True when the stage closed."""
    try:
        message = decode_bulk(delivery.payload)
        if isinstance(message, Stage):
            return message.state == "closed"
        gateway = gateway_of_topic(delivery.topic)
        if isinstance(message, BulkHello) and delivery.topic.endswith("/up/hello"):
            send(machine.hello(gateway, message, now))
        elif isinstance(message, BulkReport) and delivery.topic.endswith("/up/bulk"):
            pending = machine.ingest(gateway, message)
            send(machine.commit(pending, store.append(pending.rows)))
        else:
            raise RemoteProtocolError(
                f"{message.type_name()!r} on {delivery.topic!r}", field="type", code="schema"
            )
    except RemoteProtocolError as error:
        key = error.code or "schema"
        refusals[key] = refusals.get(key, 0) + 1
        log.warning("bulk collector refused a message on %s: %s", delivery.topic, error)
    return False
