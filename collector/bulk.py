"""The bulk collector pump and its append-only store (docs/scaling.md, "Bulk gateways").

``run_bulk_collector`` pumps one partition's ``protocol.bulk.BulkCollector``: it
subscribes every gateway's uplink of its partition and ``ctl/stage``, decodes each
delivery and acts on the machine's decision (``BulkCollector.route``: which gateway's
hello or report it is, whether it closes the stage, or a refusal the pump counts by code
and answers with the machine's ``Reject`` notice): it answers hellos, and for each report:
``ingest`` (vectorised validation), ``BulkStore.append`` (the accepted rows reach the
operating system: a later crash of this process loses nothing written), then ``commit``
and publish the per-device acknowledgement. It stops once every report of its devices is
resolved, or when the stage closes.

With ``trace`` set, the pump records its own conversation in a signed trace
(``_Conversation``: the per-device path's ``TraceRecorder``, one file per partition).

``BulkStore`` is a columnar append-only file of rows ``(device u4, seq u4, eps0 f8,
values f8[B])``, one ``write`` per report message (SQLite's executemany was the alternative:
the file costs ~0.1 us a row and needs no index, since dedup lives in the machine's
``next_seq`` array).

Reconstruction (``plan.reconstruct``, docs/scaling.md "Bulk gateways"): a device is
complete once its ``next_seq`` reaches the stream's last batch; its stored stream is then
final. The pump reads complete devices' rows back from the store (an index of row
numbers per device and batch, kept only when reconstructing) and hands them to
``collector.analytics.IncrementalReconstructor`` in chunks while the stage runs; after the
stage the rest is reconstructed off the event loop and everything is saved as
``reconstructions.npz`` (``write_reconstructions``, each chunk as it is done), with the
``reconstruction`` block of the per-device path (method, streams, during_stage, seconds)
in ``summary.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import resource
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from ldpfleet.broker.pump import cancel_all
from ldpfleet.broker.recorder import TraceRecorder
from ldpfleet.broker.transport import Delivery, Transport
from ldpfleet.collector.analytics import IncrementalReconstructor, write_reconstructions
from ldpfleet.collector.cpr import CprConfig
from ldpfleet.collector.npz_files import NpzWriter
from ldpfleet.protocol.bulk import (
    RUN_TIMEOUT_DETAIL,
    BulkAck,
    BulkCollector,
    BulkPlan,
    BulkReport,
    decode_bulk,
    encode_bulk,
    gateway_up_filter,
    stage_topic,
)
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.events import Outbound
from ldpfleet.protocol.messages import Stage
from ldpfleet.protocol.partition import status_topic
from ldpfleet.protocol.partition_link import WorkerCounts, partition_status

__all__ = [
    "NOT_RECONSTRUCTED",
    "PERIODS_FILE",
    "BulkStore",
    "run_bulk_collector",
    "stored_rows",
    "stored_streams",
]

# ``periods.npy``: the period each device's reconstruction found, by device index (i4):
# 0 when it found none, NOT_RECONSTRUCTED when the device had no stream to reconstruct
PERIODS_FILE = "periods.npy"
NOT_RECONSTRUCTED = -1

log = logging.getLogger(__name__)


class BulkStore:
    """Append-only rows of one partition (``reports.bin`` + ``reports.json`` naming
    the row layout). A run starts its file afresh: a ``reports.bin`` left in the directory
    by an earlier run is truncated (bulk collectors do not resume a run), or its rows would
    be read back as this run's."""

    def __init__(self, directory: str | os.PathLike, dtype: np.dtype) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dtype = dtype
        self.path = self.dir / "reports.bin"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND
        self._fd = os.open(self.path, flags, 0o644)
        (self.dir / "reports.json").write_text(json.dumps({"dtype": dtype.descr}))
        self.rows = 0
        self._row_of: np.ndarray | None = None  # (devices, batches) row numbers, -1 none

    def index(self, devices: int, batches: int) -> None:
        """Keep each stored row's number by (device, seq) from now on (4 bytes per device
        and batch), for ``streams_of``."""
        self._row_of = np.full((devices, batches), -1, dtype=np.int32)

    def append(self, rows: np.ndarray) -> int:
        """Write ``rows`` (one system call); returns how many were written."""
        if len(rows):
            data = rows.tobytes()
            written = os.write(self._fd, data)
            while written < len(data):  # a short write (large buffers)
                written += os.write(self._fd, data[written:])
            if self._row_of is not None:
                numbers = np.arange(self.rows, self.rows + len(rows), dtype=np.int32)
                self._row_of[rows["device"], rows["seq"]] = numbers
        self.rows += len(rows)
        return len(rows)

    def read(self) -> np.ndarray:
        """Every stored row."""
        return stored_rows(self.dir, self.dtype)

    def streams_of(self, devices: np.ndarray) -> list[np.ndarray]:
        """Each of ``devices``' stored values in step order (needs ``index``): read back
        from the file, as the per-device collector reads its store."""
        assert self._row_of is not None, "index() first"
        numbers = self._row_of[devices]
        if self.rows == 0:
            return [np.empty(0) for _ in devices]
        file = np.memmap(self.path, dtype=self.dtype, mode="r", shape=(self.rows,))
        try:
            return [file["values"][n[n >= 0]].ravel() for n in numbers]
        finally:
            del file

    def stored_devices(self) -> np.ndarray:
        """The devices with at least one stored row, in index order (needs ``index``)."""
        assert self._row_of is not None, "index() first"
        return np.flatnonzero((self._row_of >= 0).any(axis=1))

    def close(self) -> None:
        """Close the file."""
        os.close(self._fd)


def stored_rows(directory: str | os.PathLike, dtype: np.dtype) -> np.ndarray:
    """Every row of ``directory/reports.bin`` (rows of ``dtype``). Reads only."""
    return np.fromfile(Path(directory) / "reports.bin", dtype=dtype)


def stored_streams(
    directory: str | os.PathLike, dtype: np.dtype, name: Callable[[int], str]
) -> dict[str, np.ndarray]:
    """Every device's stored values in ``directory/reports.bin`` (rows of ``dtype``), in
    step order, keyed ``name(device)``, devices in index order (a device's rows are
    appended in seq order: each seq is stored once, after the one before it). Reads only:
    for a finished run's directory."""
    rows = stored_rows(directory, dtype)
    rows = rows[np.argsort(rows["device"], kind="stable")]
    devices, starts = np.unique(rows["device"], return_index=True)
    values = np.split(rows["values"], starts[1:]) if len(rows) else []
    return {name(int(d)): v.ravel() for d, v in zip(devices, values, strict=True)}


class ReconstructionStopped(Exception):
    """The run stopped a collector's reconstruction (``_Reconstruction.stop``)."""


class _Reconstruction:
    """Hands complete devices' stored streams to an ``IncrementalReconstructor`` while the
    stage runs, ``chunk`` at a time, and reconstructs the rest after it (module
    docstring)."""

    def __init__(self, plan: BulkPlan, machine: BulkCollector, store: BulkStore) -> None:
        self.plan = plan
        self.machine = machine
        self.store = store
        config = plan.stream_config()
        self.config = config
        cpr = CprConfig(
            min_period=plan.cpr_min_period,
            max_period=plan.cpr_max_period,
            min_cycles=plan.cpr_min_cycles,
        )
        self.early = IncrementalReconstructor(config, plan.reconstruct, cpr=cpr)
        store.index(plan.devices, plan.batches)
        self._complete: list[np.ndarray] = []  # complete devices not read back yet
        self._waiting = 0
        # set from the event loop (``stop``): ``finish`` ends at its next chunk
        self._stopping = threading.Event()

    def stop(self) -> None:
        """From the event loop, while ``finish`` runs in its thread: ``finish`` stops at
        its next chunk (raising ``ReconstructionStopped``, leaving no partial file), and
        the pool's chunks under way are dropped, their workers ended, so a thread waiting
        for one wakes now."""
        self._stopping.set()
        self.early.close(stop=True)

    def committed(self, resolved: np.ndarray) -> None:
        """``resolved`` devices' next seq just advanced: those now at the end are
        complete; once a chunk's worth is waiting, read them back and hand them over (the
        reconstructor sends them to the pool a chunk at a time), as the per-device
        collector does (``CollectorService._reconstruct_completed``)."""
        done = resolved[self.machine.next_seq[resolved] >= self.plan.batches]
        if len(done):
            self._complete.append(done)
            self._waiting += len(done)
        if self._waiting < self.early.chunk:
            return
        devices = np.concatenate(self._complete)
        self._complete, self._waiting = [], 0
        streams = self.store.streams_of(devices)
        name = self.plan.device_id
        self.early.add({name(int(d)): v for d, v in zip(devices, streams, strict=True)})

    def _rest(self) -> dict[str, np.ndarray]:
        """Every device with stored rows, in index order: the streams not handed over yet
        read back from the store, an empty placeholder for those the pool has (the
        reconstructor skips them), so the whole fleet's streams are not held again."""
        devices = self.store.stored_devices()
        name, handed = self.plan.device_id, self.early.submitted
        names = [name(int(d)) for d in devices]
        rest = [i for i, n in enumerate(names) if n not in handed]
        values = dict(zip(rest, self.store.streams_of(devices[rest]), strict=True))
        empty = np.empty(0)
        return {n: values.get(i, empty) for i, n in enumerate(names)}

    def finish(self, out: Path) -> dict:
        """After the stage (blocks: run it off the event loop): reconstruct what is left,
        save ``reconstructions.npz``; the results block. ``ReconstructionStopped`` once
        ``stop`` was called (checked before each chunk is taken and after each is written:
        no ``reconstructions.npz`` or ``periods.npy`` is left)."""
        try:
            return self._finish(out)
        except BaseException:
            for name in ("reconstructions.npz", PERIODS_FILE):  # not half a file
                (out / name).unlink(missing_ok=True)
            raise

    def _check_stopping(self) -> None:
        if self._stopping.is_set():
            raise ReconstructionStopped("the run stopped this collector's reconstruction")

    def _finish(self, out: Path) -> dict:
        self._check_stopping()
        started = time.perf_counter()
        during = self.early.during_stage
        streams = self._rest()
        read = time.perf_counter()
        writing, count = 0.0, 0
        # each device's period found (0: none; NOT_RECONSTRUCTED: no stream), by index
        periods = np.full(self.plan.devices, NOT_RECONSTRUCTED, dtype=np.int32)
        prefix = len(self.plan.id_prefix)
        # each chunk written as it is done, while the pool works on the next: no
        # reconstruction is held until the end
        with NpzWriter(out / "reconstructions.npz") as writer:
            for devices, results in self.early.finish_chunks(streams):
                mark = time.perf_counter()
                write_reconstructions(writer, self.config, zip(devices, results, strict=True))
                for device, result in zip(devices, results, strict=True):
                    periods[int(device[prefix:])] = result.period or 0
                writing += time.perf_counter() - mark
                count += len(devices)
                self._check_stopping()  # the generator closed: its pool stops
        np.save(out / PERIODS_FILE, periods)
        saved = time.perf_counter()
        return {
            "method": self.plan.reconstruct,
            "streams": count,
            "during_stage": during,
            "seconds": saved - started,
            "path": "reconstructions.npz",
            "periods_path": PERIODS_FILE,
            # where ``seconds`` went: reading the store back, waiting for the pool (and
            # reconstructing the rest), writing the file (as chunks finished)
            "read_seconds": round(read - started, 3),
            "pool_seconds": round(saved - read - writing, 3),
            "save_seconds": round(writing, 3),
        }


async def run_bulk_collector(
    transport: Transport,
    plan: BulkPlan,
    partition: int,
    out_dir: str | os.PathLike,
    *,
    on_ready: Callable[[], None] | None = None,
    trace: str = "none",
    trace_path: str | os.PathLike | None = None,
    scenario_digest: str | None = None,
) -> dict:
    """Serve ``partition`` until complete or the stage closes; writes ``summary.json``,
    ``estimates.npz`` and, with ``plan.reconstruct``, ``reconstructions.npz`` to
    ``out_dir`` and returns the summary. ``trace`` (``"all"``, ``"control"`` or
    ``"none"``): what ``_Conversation`` records, signed, in ``trace_path`` (default
    ``out_dir/trace.sqlite``) with ``scenario_digest``; the summary's ``trace`` names
    the file and its public key."""
    machine = BulkCollector(plan, partition)
    store = BulkStore(out_dir, machine.stored_dtype)
    path = Path(trace_path) if trace_path is not None else Path(out_dir) / "trace.sqlite"
    talk = _Conversation(transport, plan, partition, trace, path, scenario_digest)
    recon = _Reconstruction(plan, machine, store) if plan.reconstruct != "none" else None
    loop = asyncio.get_running_loop()
    level = plan.partition_level_of(partition)
    client = f"{plan.run}-collector" + ("" if level is None else f"-p{partition}")
    refusals: dict[str, int] = {}
    out = Path(out_dir)
    pending: set[asyncio.Task] = set()
    closing: list[Stage] = []  # the runner's Stage(closed), once it came
    try:
        await _serve(
            transport.connect(client), level, plan, machine,
            store, talk, recon, loop, refusals, pending, closing, on_ready,
        )  # fmt: skip
        summary = await _after_stage(partition, machine, store, talk, recon, refusals, closing, out)
    except BaseException:  # an error, or the runner stopping this process (cancelled)
        if recon is not None:
            recon.early.close(stop=True)  # the chunks under way too: their workers end
        await asyncio.shield(cancel_all(pending))  # publishes under way
        raise
    finally:
        if recon is not None:
            recon.early.close()  # a failed run leaves no pool behind
        store.close()
        talk.close(complete=False)  # signs what was recorded when the run failed
    _write_outputs(out, summary, machine)
    return summary


async def _serve(
    connection,
    level: int | None,
    plan: BulkPlan,
    machine: BulkCollector,
    store: BulkStore,
    talk: _Conversation,
    recon: _Reconstruction | None,
    loop: asyncio.AbstractEventLoop,
    refusals: dict[str, int],
    pending: set[asyncio.Task],
    closing: list[Stage],
    on_ready: Callable[[], None] | None,
) -> None:
    """``run_bulk_collector``'s stream stage over ``connection`` (``transport.connect``):
    subscribe to the gateways' uplinks to this partition (at ``level``) and the stage topic, say
    "ready", handle the gateways' deliveries until the partition is complete or the stage
    closes (the runner's ``Stage`` in ``closing``), say "closed" and wait for the
    publishes under way (``pending``)."""
    async with connection as conn:
        await conn.subscribe(gateway_up_filter(plan.run, level), stage_topic(plan.run))

        def send(items) -> None:
            for item in items:
                payload = encode_bulk(item.message)
                talk.record(item.topic, payload, item.message)
                task = asyncio.ensure_future(conn.publish(item.topic, payload))
                pending.add(task)
                task.add_done_callback(pending.discard)

        send([talk.status(machine, "ready")])
        if on_ready is not None:
            on_ready()
        if not machine.complete:
            async for delivery in conn.messages():
                if _handle(
                    machine, store, delivery, send, loop.time(), refusals, recon, talk,
                    on_close=closing.append,
                ):  # fmt: skip
                    break
                if machine.complete:
                    break
        send([talk.status(machine, "closed")])
        if pending:
            await asyncio.gather(*list(pending))


async def _after_stage(
    partition: int,
    machine: BulkCollector,
    store: BulkStore,
    talk: _Conversation,
    recon: _Reconstruction | None,
    refusals: dict[str, int],
    closing: list[Stage],
    out: Path,
) -> dict:
    """After the stream stage: close the trace, write what was stored, then reconstruct
    (unless the run's deadline closed the stage); the partition's summary."""
    stage_end = time.perf_counter()
    talk.close()
    summary = _stream_summary(machine, partition, refusals, store, talk)
    # what the stream stage stored, written before the reconstruction: a run whose
    # deadline stops this collector while it reconstructs still has it
    _write_outputs(out, summary, machine)
    cut = bool(closing) and closing[0].detail == RUN_TIMEOUT_DETAIL
    if recon is not None and cut:  # the run's deadline closed the stage: no more work
        recon.early.close(stop=True)
        summary["reconstruction"] = None
    elif recon is not None:
        summary["reconstruction"] = await _finish_in_thread(recon, out)
        summary["stream_end_to_saved_seconds"] = time.perf_counter() - stage_end
    return summary


async def _finish_in_thread(recon: _Reconstruction, out: Path) -> dict:
    """``recon.finish(out)`` off the event loop. Cancelled (the runner stopping this
    collector: its deadline, an error, Ctrl-C), it tells the thread to stop at its next
    chunk and waits for it before the cancellation goes on: the thread must not outlive
    the collector, still writing the run's files after the run returned (an in-process
    run's ``asyncio.to_thread`` is not cancelled with the task that awaits it)."""
    work = asyncio.ensure_future(asyncio.to_thread(recon.finish, out))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        recon.stop()
        while not work.done():  # at most one chunk; a second cancellation waits too
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([work])
        if not work.cancelled():
            work.exception()  # retrieved: ReconstructionStopped, or what it ended with
        raise


def _stream_summary(machine: BulkCollector, partition: int, refusals, store, talk) -> dict:
    """The partition's ``summary.json`` after its stream stage: the machine's counters,
    the devices complete, each short device's missing batches, refusals, stored rows and
    the trace entry."""
    plan = machine.plan
    summary = machine.summary()
    owned = machine.part == partition
    summary["devices_complete"] = int((machine.next_seq[owned] >= plan.batches).sum())
    short = np.flatnonzero(owned & (machine.next_seq < plan.batches))
    summary["missing_batches"] = {  # what was never resolved (lost), per device
        plan.device_id(int(d)): list(range(int(machine.next_seq[d]), plan.batches)) for d in short
    }
    summary["message_refusals"] = refusals
    summary["stored_rows"] = store.rows
    summary["trace"] = talk.entry()
    return summary


def _write_outputs(out: Path, summary: dict, machine: BulkCollector) -> None:
    """``summary.json`` (with the peak RSS so far) and ``estimates.npz``, each replaced
    whole (a reader never sees half a file)."""
    summary["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    partial = out / "summary.json.partial"
    partial.write_text(json.dumps(summary, indent=1))
    os.replace(partial, out / "summary.json")
    with open(out / "estimates.npz.partial", "wb") as file:
        # per step: the reports' exact sum (int64, units of 2**-REPORT_SUM_BITS) and count;
        # scenarios.bulk_run._report_sums adds the partitions', protocol.bulk.fleet_means
        np.savez(file, report_sum=machine.report_sum, count=machine.estimate_count)
    os.replace(out / "estimates.npz.partial", out / "estimates.npz")


def _handle(
    machine, store, delivery: Delivery, send, now: float, refusals: dict, recon=None, talk=None,
    *, on_close: Callable[[Stage], None] | None = None,
) -> bool:  # fmt: skip
    """One delivery; True when the stage closed (``on_close`` gets the closing message)."""
    message = None
    try:
        message = decode_bulk(delivery.payload)
        if talk is not None:
            talk.record(delivery.topic, delivery.payload, message)
        route = machine.route(delivery.topic, message)
        if route.action == "close":
            if on_close is not None:
                on_close(route.stage)
            return True
        if route.action == "hello":
            send(machine.hello(route.gateway, message, now))
        elif route.action == "report":
            pending = machine.ingest(route.gateway, message)
            send(machine.commit(pending, store.append(pending.rows)))
            if recon is not None:
                recon.committed(pending.resolve)
    except RemoteProtocolError as error:
        key = error.code or "schema"
        refusals[key] = refusals.get(key, 0) + 1
        log.warning("bulk collector refused a message on %s: %s", delivery.topic, error)
        if message is None and talk is not None:  # undecodable: recorded as received
            talk.record(delivery.topic, delivery.payload, None)
        kind = message.type_name() if message is not None else "invalid"
        send([machine.refusal_notice(delivery.topic, kind, error)])
    return False


class _Conversation:
    """What a partition collector records of its own conversation (``trace``): with
    ``"all"`` every message it receives (hellos, reports, the stage, refused messages) and
    sends (admits, acknowledgements, ``Reject`` notices, its ready and closed
    ``PartitionStatus``), one row per message as it crossed this connection; with
    ``"control"`` all of them but the ``BulkReport`` and ``BulkAck`` messages; with
    ``"none"`` nothing. The rows are ``broker.recorder.TraceRecorder``'s (the per-device
    path's recorder: same chain, same signature), written directly rather than through a
    second subscription, which would have the broker deliver every report twice."""

    _DATA = (BulkReport, BulkAck)  # what "control" leaves out

    def __init__(self, transport, plan, partition, trace, path, scenario_digest) -> None:
        if trace not in ("all", "control", "none"):
            raise ValueError(f"trace must be all, control or none, got {trace!r}")
        self.plan, self.partition, self.mode, self.path = plan, partition, trace, path
        self.recorder = None
        if trace != "none":
            client = f"{plan.run}-recorder-p{partition}"
            self.recorder = TraceRecorder(
                transport, plan.run, path, scenario_digest=scenario_digest, client_id=client
            )
            self.recorder.open(fresh=True)  # a bulk run never resumes an earlier one

    def _wanted(self, message) -> bool:
        return self.recorder is not None and (
            self.mode == "all" or not isinstance(message, self._DATA)
        )

    def record(self, topic: str, payload: bytes, message) -> None:
        """A delivery, or a message about to be published (``message`` None: a delivery
        that did not decode), if the mode keeps it."""
        if self._wanted(message):
            self.recorder.record(topic, payload)

    def status(self, machine: BulkCollector, state: str) -> Outbound:
        """The partition's ``PartitionStatus`` (ready, then closed with its counts) on
        ``svc/collector/partition``, as the per-device partition workers announce
        themselves: the trace's run open and close."""
        c = machine.counters
        counts = WorkerCounts(
            persisted=c.reports_received, expected=machine.expected,
            joined=int(machine.admitted.sum()), devices=machine.owned,
        )  # fmt: skip
        status = partition_status(
            self.plan.run, self.partition, self.plan.partitions, state, counts,
            complete=machine.complete,
            detail=f"bulk: {c.messages} reports, {c.reports_rejected} entries rejected, "
            f"{c.reports_duplicate} duplicate",
        )  # fmt: skip
        return Outbound(status_topic(self.plan.run), status)

    def close(self, *, complete: bool = True) -> None:
        """Sign the trace and close it (once)."""
        if self.recorder is not None:
            self.recorder.close(complete=complete)

    def entry(self) -> dict | None:
        """The summary's ``trace`` block: file, public key, rows, bytes (None: no trace)."""
        if self.recorder is None:
            return None
        return {
            "path": str(self.path),
            "public_key": self.recorder.public_key,
            "mode": self.mode,
            "messages": self.recorder.recorded,
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
        }
