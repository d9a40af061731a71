"""``ldpfleet trace verify OUT`` on a bulk-gateway run (results.json ``kind`` ``bulk-stream``;
docs/scaling.md "Bulk gateways", "Traces").

A bulk run's trace is one signed file per recorder: the runner's ``trace.sqlite`` (its
stage messages) and each partition collector's ``trace-p{p}.sqlite`` (its conversation;
with ``trace = "all"`` every ``BulkReport`` as received and every ``BulkAck`` as sent);
results.json ``trace`` names each file with its public key. There are no per-device
ledger files (a gateway's ledger is an array): the w-event accounting is recomputed from
what each collector stored, ``p{p}/reports.bin`` (rows ``device, seq, eps0, values``).

1. Authenticity, per file: the chain and the signature under results.json's key, as
   ``app.trace_verify`` checks a per-device trace (same reasons).
2. The store, per partition: every stored row's device belongs to the fleet and to the
   partition (``unknown_device``, ``wrong_partition``), its batch to the stream
   (``beyond_steps``), its values to the mechanism's output domain (``out_of_domain``),
   its ``eps0`` is the run's ``eps / w`` (``eps0``); no batch is stored twice
   (``stored_twice``); every device's spend, ``eps0`` at each step of each stored batch,
   stays within ``eps`` in every window of ``w`` steps (``window_overspent``).
3. Counts: results.json's partition ``reports_received`` = the rows stored = the
   ``persisted`` of the partition's traced closing ``PartitionStatus``, and the top-level
   count is their sum (``count_mismatch``).
4. With ``trace = "all"``: the accepted entries of the trace — an entry of a traced
   ``BulkReport`` that the report's traced ``BulkAck`` acknowledges (its device listed with
   an acknowledged seq at least the entry's) and does not reject, unless an earlier
   acknowledgement rejected it for good — are exactly the stored rows, with the same
   ``eps0`` and values (``untraced_report``: stored, never accepted in
   the trace; ``not_stored``: accepted in the trace, not stored; ``stored_differs``).
5. results.json ``privacy``: ``eps``, ``w``, ``eps0`` the plan's, ``max_window_spent`` at
   least the stored rows' worst window, ``within_budget`` that figure against ``eps``
   (``results_differs``); ``accuracy.mean_abs_error`` and ``max_abs_error`` recomputed
   from the stored rows and the plan.

At most ``LIMIT`` mismatches of one reason are listed, then their count.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
from ldpfleet.broker.trace import TraceError
from ldpfleet.protocol.bulk import (
    REJECT_REASONS,
    BulkAck,
    BulkPlan,
    BulkReport,
    decode_bulk,
    entry_dtype,
    gateway_route,
    stored_dtype,
)
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.partition import PartitionStatus
from ldpfleet.protocol.sw import SquareWave

__all__ = ["verify_bulk"]

LIMIT = 20  # mismatches listed per reason
REL_TOL = 1e-9
DEVICE_CHUNK = 8192  # devices whose step spends are held at once (8 bytes a step)


class _Findings:
    """Mismatches with at most ``LIMIT`` listed per reason."""

    def __init__(self, report) -> None:
        self.report = report
        self.counts: Counter[str] = Counter()
        self.worst = 0.0  # the largest window spend of any device's stored rows

    def fail(self, device: str, step, reason: str, detail: str, row=None) -> None:
        self.counts[reason] += 1
        if self.counts[reason] <= LIMIT:
            self.report.fail(device, step, reason, detail, row)

    def close(self) -> None:
        for reason, count in sorted(self.counts.items()):
            if count > LIMIT:
                self.report.fail(
                    "run", None, reason, f"{count - LIMIT} more {reason} mismatches not listed"
                )


def _results(directory: Path) -> dict:
    try:
        return json.loads((directory / "results.json").read_text())
    except (OSError, ValueError) as error:
        raise TraceError(f"{directory}/results.json cannot be read ({error})") from None


def verify_bulk(directory: Path, report, public_key: str | None = None):
    """Check the bulk run in ``directory`` (module docstring) into ``report`` (a
    ``trace_verify.VerifyReport``); ``TraceError`` if an input cannot be read."""
    from ldpfleet.app.trace_verify import _load_trace

    results, plan, trace, run = _bulk_inputs(directory)
    _load_trace(run, report, public_key or trace.get("public_key"), keep=lambda row: None)
    main_key = report.public_key
    findings = _Findings(report)
    summaries = results.get("partitions") or []
    _check_partitions(directory, plan, trace, run, summaries, findings, report)
    report.public_key = main_key
    total = sum(int(s.get("reports_received", 0)) for s in summaries)
    if results.get("reports_received") != total:
        findings.fail(
            "run",
            None,
            "count_mismatch",
            f"results.json reports_received {results.get('reports_received')}, its "
            f"partitions sum to {total}",
        )
    _check_privacy(results, plan, findings, report)
    _check_accuracy(results, plan, directory, findings, report)
    if trace.get("mode") != "all":
        report.notes.append(
            f'trace = "{trace.get("mode")}": no BulkReport is recorded, so the stored rows are '
            "not compared with the trace (the store's own w-event windows are checked)"
        )
    findings.close()
    return report


def _bulk_inputs(directory: Path) -> tuple[dict, BulkPlan, dict, object]:
    """The bulk run's results.json, its plan, its trace section (``results_trace``) and
    the ``trace_verify._Run`` its main trace is read with; ``TraceError`` without a
    readable plan or without a trace."""
    from ldpfleet.app.trace_verify import _Run

    results = _results(directory)
    try:
        plan = BulkPlan.from_dict(results["plan"])
    except (KeyError, TypeError, ValueError) as error:
        raise TraceError(f"{directory}/results.json has no readable bulk plan ({error})") from None
    from ldpfleet.app.trace_verify import results_trace

    trace = results_trace(results, directory)
    if trace.get("recorder") != "bulk" or not (directory / "trace.sqlite").exists():
        raise TraceError(
            f'{directory} holds no trace: the bulk run was recorded with trace = "none"'
        )
    scenario = results.get("scenario")
    spec = scenario.get("spec", scenario) if isinstance(scenario, dict) else None
    run = _Run(
        directory, {"scenario": {"spec": spec}}, None, results.get("run", plan.run), {}, None, []
    )
    return results, plan, trace, run


def _check_privacy(results: dict, plan: BulkPlan, findings, report) -> None:
    """results.json ``privacy`` against the plan and the stored rows: its ``eps``, ``w``
    and ``eps0`` are the plan's, its ``max_window_spent`` at least the worst window of
    the stored ``eps0`` (the gateways' ledgers charged at least what was stored; the user
    trial lowered it and verify said 0 mismatches), ``within_budget`` that figure against
    ``eps`` (``results_differs``)."""
    privacy = results.get("privacy")
    if not isinstance(privacy, dict):
        return
    most = privacy.get("max_window_spent")
    number = isinstance(most, int | float) and not isinstance(most, bool)
    checks = [
        ("eps", privacy.get("eps"), plan.eps, _close(privacy.get("eps"), plan.eps)),
        ("w", privacy.get("w"), plan.w, privacy.get("w") == plan.w),
        (
            "eps0",
            privacy.get("eps0"),
            plan.eps / plan.w,
            _close(privacy.get("eps0"), plan.eps / plan.w),
        ),
        (
            "max_window_spent",
            most,
            f">= {findings.worst!r} (the stored rows' worst window)",
            number and most * (1 + REL_TOL) + 1e-12 >= findings.worst,
        ),
    ]
    if number:
        within = bool(most <= plan.eps * (1 + REL_TOL))
        checks.append(
            ("within_budget", privacy.get("within_budget"), within,
             privacy.get("within_budget") is within)
        )  # fmt: skip
    for key, got, want, ok in checks:
        report.checked["results_figures"] += 1
        if not ok:
            findings.fail(
                "results",
                None,
                "results_differs",
                f"results.json privacy.{key} is {got!r}; recomputed from the plan and the "
                f"stored rows: {want!r}",
            )


def _check_accuracy(results: dict, plan: BulkPlan, directory: Path, findings, report) -> None:
    """results.json ``accuracy.mean_abs_error`` and ``max_abs_error`` recomputed as the run
    computed them: each device's estimate from the stored rows against its clean readings
    regenerated from the plan (``scenarios.bulk_run._add_stream_figures``, ≈ 1.2 s at
    100,000 devices x 100 steps); ``results_differs``."""
    from ldpfleet.scenarios.bulk_run import _add_stream_figures

    accuracy = results.get("accuracy")
    fleet = results.get("fleet")
    if not isinstance(accuracy, dict) or not isinstance(fleet, dict):
        return
    again = {
        "fleet": {"max_window_spent": 0.0, "ledger_devices": 0} | fleet,
        "reports_received": results.get("reports_received"),
    }
    try:
        _add_stream_figures(again, plan, directory)
    except (OSError, ValueError, KeyError, TypeError) as error:
        report.notes.append(f"results.json accuracy not recomputed ({error})")
        return
    for key in ("mean_abs_error", "max_abs_error"):
        got, want = accuracy.get(key), again["accuracy"].get(key)
        if want is None:
            continue
        report.checked["results_figures"] += 1
        if not _close(got, want):
            findings.fail(
                "results",
                None,
                "results_differs",
                f"results.json accuracy.{key} is {got!r}; recomputed from the stored rows "
                f"and the plan: {want!r}",
            )


def _close(value, want: float) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isclose(value, want, rel_tol=REL_TOL, abs_tol=1e-15)
    )


def _check_partitions(directory, plan, trace, run, summaries, findings, report) -> None:
    """Each partition's trace (its signature and chain), its store against the plan, its
    summary and (``trace = "all"``) its traced reports; a count_mismatch when results.json
    lists another number of partition traces than the plan's."""
    from ldpfleet.app.trace_verify import _load_trace

    parts = trace.get("partitions") or []
    if len(parts) != plan.partitions:
        findings.fail(
            "run",
            None,
            "count_mismatch",
            f"results.json lists {len(parts)} partition traces for {plan.partitions} partitions",
        )
    for p, entry in enumerate(parts[: plan.partitions]):
        path = directory / str(entry.get("path"))
        if not path.exists():
            raise TraceError(f"no {path.name} in {directory}: results.json lists it")
        conversation = _Conversation(plan)
        _load_trace(run, report, entry.get("public_key"), path, keep=conversation.add)
        stored = _stored(directory / f"p{p}", plan)
        report.ledgers.append(f"{directory / f'p{p}' / 'reports.bin'} (eps0 column)")
        summary = summaries[p] if p < len(summaries) else {}
        _check_partition(plan, p, stored, conversation, summary, findings, report)
        if trace.get("mode") == "all":
            _check_against_trace(plan, stored, conversation, findings, report)


class _Conversation:
    """A partition trace's bulk messages: the accepted entries (module docstring, 4) and
    the last closing ``PartitionStatus``."""

    def __init__(self, plan: BulkPlan) -> None:
        self.plan = plan
        self.reports: dict[tuple[str, int], tuple[np.ndarray, bool]] = {}
        self.accepted: list[tuple[int, np.ndarray]] = []  # (ack number, entries)
        self.resolved: list[tuple[int, np.ndarray]] = []  # (ack number, rejected keys)
        self.closed: PartitionStatus | None = None
        self.reports_seen = 0
        self.acks = 0

    def add(self, row) -> None:
        """One trace row, in order."""
        if row.kind not in ("bulk_report", "bulk_ack", "partition_status"):
            return
        try:
            message = decode_bulk(row.payload) if row.kind != "partition_status" else None
            if message is None:
                from ldpfleet.protocol import codec

                message = codec.decode(row.payload)
        except RemoteProtocolError:
            return
        route = gateway_route(row.topic)
        if isinstance(message, BulkReport) and route is not None:
            plan = self.plan
            entries = np.frombuffer(message.entries, dtype=entry_dtype(message.batch_steps))
            header = (message.mechanism, message.w, message.batch_steps)
            ok = header == (plan.mechanism, plan.w, plan.batch_steps)
            self.reports[(route[0], message.seq)] = (entries, ok)
            self.reports_seen += 1
        elif isinstance(message, BulkAck) and route is not None:
            entries, header_ok = self.reports.pop((route[1], message.seq), (None, False))
            if entries is not None and header_ok:
                self.acks += 1
                self.accepted.append((self.acks, _acknowledged(entries, message)))
                self.resolved.append((self.acks, _resolving_rejections(message)))
        elif isinstance(message, PartitionStatus) and message.state == "closed":
            self.closed = message

    def accepted_rows(self) -> np.ndarray:
        """Each (device, seq) accepted in the trace once (its first acceptance), unless
        a rejection resolved it before (a retransmission of a report whose
        acknowledgement was lost repeats a rejected entry, acknowledged as a duplicate)."""
        rows = np.concatenate(
            [e for _, e in self.accepted] or [np.empty(0, entry_dtype(self.plan.batch_steps))]
        )
        when = np.concatenate([np.full(len(e), i) for i, e in self.accepted] or [[]])
        keys, first = _first(_keys(rows), when)
        rejected = np.concatenate([k for _, k in self.resolved] or [np.empty(0, np.int64)])
        rejected_when = np.concatenate([np.full(len(k), i) for i, k in self.resolved] or [[]])
        rejected, rejected_first = _first(rejected, rejected_when)
        found, at = _positions(keys, rejected)
        rejected_at = rejected_when[rejected_first]  # when each was first rejected
        earlier = found & (rejected_at[at] < when[first]) if len(rejected) else found
        return rows[np.sort(first[~earlier])]


def _first(keys: np.ndarray, when: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``keys`` and, for each, where its earliest occurrence (by ``when``) is
    in ``keys`` (by sorting: numpy's hash-based ``unique`` is slower at 10^6 keys)."""
    order = np.lexsort((when, keys))
    ordered = keys[order]
    head = np.ones(len(ordered), dtype=bool)
    head[1:] = ordered[1:] != ordered[:-1]
    return ordered[head], order[head]


def _resolving_rejections(ack: BulkAck) -> np.ndarray:
    """The keys of the entries an acknowledgement rejects for good (a value, the budget or
    eps0 — not ``acl``, which leaves the device's state as it was)."""
    devices = np.frombuffer(ack.rejected_devices, dtype="<u4").astype(np.int64)
    seqs = np.frombuffer(ack.rejected_seqs, dtype="<u4").astype(np.int64)
    codes = np.frombuffer(ack.rejected_codes, dtype="u1")
    if not len(devices) == len(seqs) == len(codes):
        return np.empty(0, np.int64)
    final = codes != REJECT_REASONS.index("acl")
    return devices[final] * (1 << 32) + seqs[final]


def _acknowledged(entries: np.ndarray, ack: BulkAck) -> np.ndarray:
    """The entries of a report that its acknowledgement accepts: the device is listed with
    an acknowledged seq at least the entry's, and the entry is not among the rejections."""
    devices = np.frombuffer(ack.devices, dtype="<u4").astype(np.int64)
    acked = np.frombuffer(ack.acked, dtype="<i4").astype(np.int64)
    rejected_devices = np.frombuffer(ack.rejected_devices, dtype="<u4").astype(np.int64)
    rejected_seqs = np.frombuffer(ack.rejected_seqs, dtype="<u4").astype(np.int64)
    if len(devices) != len(acked) or len(rejected_devices) != len(rejected_seqs):
        return entries[:0]
    order = np.argsort(devices, kind="stable")
    devices, acked = devices[order], acked[order]
    dev = entries["device"].astype(np.int64)
    seq = entries["seq"].astype(np.int64)
    at = np.minimum(np.searchsorted(devices, dev), max(len(devices) - 1, 0))
    ok = (devices[at] == dev) & (acked[at] >= seq) if len(devices) else np.zeros(len(dev), bool)
    ok &= ~np.isin(dev * (1 << 32) + seq, rejected_devices * (1 << 32) + rejected_seqs)
    return entries[ok]


def _positions(keys: np.ndarray, among: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``keys``: is it in ``among``, and at which index (meaningful where it
    is)."""
    order = np.argsort(among, kind="stable")
    ordered = among[order]
    at = np.minimum(np.searchsorted(ordered, keys), max(len(ordered) - 1, 0))
    found = ordered[at] == keys if len(ordered) else np.zeros(len(keys), dtype=bool)
    return found, order[at] if len(ordered) else at


def _fail_keys(findings, plan, keys: np.ndarray, reason: str, detail) -> None:
    """One finding per (device << 32 | batch) key (``detail(batch)`` says why)."""
    for key in keys:
        batch = int(key & 0xFFFFFFFF)
        findings.fail(plan.device_id(int(key >> 32)), batch * plan.batch_steps, reason,
                      detail(batch))  # fmt: skip


def _keys(rows: np.ndarray) -> np.ndarray:
    return rows["device"].astype(np.int64) * (1 << 32) + rows["seq"].astype(np.int64)


def _stored(directory: Path, plan: BulkPlan) -> np.ndarray:
    """A partition's ``reports.bin`` (``TraceError`` if its layout is not ``stored_dtype``:
    written before the ``eps0`` column)."""
    want = stored_dtype(plan.batch_steps)
    try:
        layout = json.loads((directory / "reports.json").read_text())["dtype"]
        dtype = np.dtype([tuple(field) for field in layout])
        path = directory / "reports.bin"
        # mapped, not read: the checks take a column at a time
        empty = path.stat().st_size == 0
        data = np.empty(0, dtype) if empty else np.memmap(path, dtype=dtype, mode="r")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise TraceError(f"{directory}/reports.bin cannot be read ({error})") from None
    if dtype != want:
        raise TraceError(
            f"{directory}/reports.bin has rows {dtype.names}, not {want.names} (a store "
            "without the eps0 column cannot be checked)"
        )
    return data


def _check_partition(plan, p, stored, conversation, summary, findings, report) -> None:
    """Module docstring, 2 and 3."""
    report.checked["stored_rows"] += len(stored)
    stored, device = _check_devices(plan, p, stored, findings)
    _check_batches(plan, stored, device, findings, report)
    keys = np.sort(_keys(stored))
    _fail_keys(
        findings,
        plan,
        np.unique(keys[1:][keys[1:] == keys[:-1]]),
        "stored_twice",
        lambda batch: f"batch {batch} is stored more than once",
    )
    seq = stored["seq"].astype(np.int64)
    inside = seq < plan.batches
    _check_windows(plan, stored if inside.all() else stored[inside], findings, report)
    _check_counts(p, stored, conversation, summary, findings)


def _check_devices(plan, p, stored, findings) -> tuple[np.ndarray, np.ndarray]:
    """Partition ``p``'s stored rows of devices in the fleet, and their device indices:
    a row of a device index beyond the fleet is an ``unknown_device`` (and left out), one
    of a device of another partition a ``wrong_partition``."""
    device = stored["device"].astype(np.int64)
    in_fleet = device < plan.devices
    for index in np.flatnonzero(~in_fleet)[:LIMIT]:
        findings.fail(
            f"#{device[index]}",
            None,
            "unknown_device",
            f"partition {p} stored a row of device index {device[index]}, the fleet "
            f"has {plan.devices}",
        )
    if not in_fleet.all():  # (a copy only when needed: 56 bytes a row)
        stored, device = stored[in_fleet], device[in_fleet]
    partition = plan.partitions_of(0, plan.devices)[device] if len(device) else device
    for index in np.flatnonzero(partition != p)[:LIMIT]:
        findings.fail(
            plan.device_id(int(device[index])),
            None,
            "wrong_partition",
            f"stored by partition {p}, the device belongs to {partition[index]}",
        )
    return stored, device


def _check_batches(plan, stored, device, findings, report) -> None:
    """Each stored batch: within the stream's batches, every value in the mechanism's
    output domain, stored with the run's ``eps0``."""
    name = plan.device_id
    seq = stored["seq"].astype(np.int64)

    def fail_batches(mask: np.ndarray, reason: str, detail) -> None:
        """One finding per stored batch where ``mask`` holds (``detail(index)`` says why)."""
        for index in np.flatnonzero(mask):
            step = int(seq[index]) * plan.batch_steps
            findings.fail(name(int(device[index])), step, reason, detail(index))

    fail_batches(
        seq >= plan.batches,
        "beyond_steps",
        lambda i: f"batch {seq[i]}, the stream has {plan.batches}",
    )
    domain = SquareWave(plan.eps0, plan.mechanism).in_domain(stored["values"]).all(axis=1)
    report.checked["values_in_domain"] += int(domain.sum()) * plan.batch_steps
    fail_batches(
        ~domain,
        "out_of_domain",
        lambda i: (
            f"batch {seq[i]} holds a value outside the "
            f"{plan.mechanism} output domain at eps0={plan.eps0:g}"
        ),
    )
    eps0 = stored["eps0"]
    fail_batches(
        ~(np.abs(eps0 - plan.eps0) <= REL_TOL * plan.eps0),
        "eps0",
        lambda i: (
            f"batch {seq[i]} stored with eps0={float(eps0[i])!r}, the run's eps/w is {plan.eps0!r}"
        ),
    )


def _check_windows(plan: BulkPlan, stored: np.ndarray, findings, report) -> None:
    """Every device's w-event spend from its stored rows, ``DEVICE_CHUNK`` devices at a
    time; a batch stored twice counts once, at its larger ``eps0``."""
    if not len(stored):
        return
    B, w, steps = plan.batch_steps, plan.w, plan.steps
    order = np.argsort(stored["device"], kind="stable")
    device = stored["device"][order].astype(np.int64)  # the columns needed, not the values
    seqs = stored["seq"][order].astype(np.int64)
    eps0 = np.nan_to_num(stored["eps0"][order], nan=math.inf)
    del order
    limit = plan.eps * (1 + REL_TOL)
    starts = max(1, steps - w + 1)
    for low in range(0, int(device[-1]) + 1, DEVICE_CHUNK):
        lo, hi = np.searchsorted(device, [low, low + DEVICE_CHUNK])
        if lo == hi:
            continue
        local = device[lo:hi] - low
        per_batch = np.zeros((DEVICE_CHUNK, plan.batches))
        np.maximum.at(per_batch, (local, seqs[lo:hi]), eps0[lo:hi])
        spend = np.repeat(per_batch, B, axis=1)  # eps0 at each step of each stored batch
        prefix = np.concatenate([np.zeros((DEVICE_CHUNK, 1)), np.cumsum(spend, axis=1)], axis=1)
        windows = prefix[:, np.minimum(np.arange(starts) + w, steps)] - prefix[:, :starts]
        present = np.unique(local)
        report.checked["stream_devices"] += len(present)
        report.checked["windows"] += len(present) * starts
        worst = windows[present].max(axis=1)
        findings.worst = max(findings.worst, float(np.max(worst, initial=0.0)))
        for index in np.flatnonzero(~(worst <= limit)):
            d = int(present[index])
            s = int(np.argmax(windows[d]))
            findings.fail(
                plan.device_id(low + d),
                s,
                "window_overspent",
                f"steps [{s}, {s + w - 1}] spend {windows[d, s]:.6g} of the stored "
                f"eps0, eps = {plan.eps:g}",
            )


def _check_counts(p, stored, conversation, summary, findings) -> None:
    said = summary.get("reports_received")
    if said != len(stored):
        findings.fail(
            "run",
            None,
            "count_mismatch",
            f"partition {p}: results.json says {said} reports received, "
            f"reports.bin holds {len(stored)} rows",
        )
    closed = conversation.closed
    if closed is None:
        findings.fail(
            "run",
            None,
            "count_mismatch",
            f"partition {p}: the trace has no closing PartitionStatus",
        )
    elif closed.persisted != len(stored):
        findings.fail(
            "run",
            None,
            "count_mismatch",
            f"partition {p}: the traced closing status says {closed.persisted} "
            f"persisted, reports.bin holds {len(stored)} rows",
        )


def _check_against_trace(plan, stored, conversation, findings, report) -> None:
    """Module docstring, 4."""
    traced = conversation.accepted_rows()
    report.checked["bulk_reports"] += conversation.reports_seen
    report.checked["traced_entries"] += len(traced)
    stored_keys, traced_keys = _keys(stored), _keys(traced)
    # membership by sorting and binary search (numpy's hash-based unique took 8 s of 13 at
    # 2 x 10^6 rows)
    in_trace, t_at = _positions(stored_keys, traced_keys)
    _fail_keys(
        findings,
        plan,
        stored_keys[~in_trace],
        "untraced_report",
        lambda batch: f"batch {batch} is stored, no traced BulkReport had it accepted",
    )
    _fail_keys(
        findings,
        plan,
        traced_keys[~_positions(traced_keys, stored_keys)[0]],
        "not_stored",
        lambda batch: (
            f"batch {batch} was accepted and acknowledged "
            "in the trace, reports.bin does not hold it"
        ),
    )
    s_at, t_at = np.flatnonzero(in_trace), t_at[in_trace]
    common = stored_keys[s_at]
    same = stored["eps0"][s_at] == traced["eps0"][t_at]
    same &= (stored["values"][s_at] == traced["values"][t_at]).all(axis=1)
    _fail_keys(
        findings,
        plan,
        common[~same],
        "stored_differs",
        lambda batch: (
            f"batch {batch} is stored with another eps0 or other values than the traced BulkReport"
        ),
    )
