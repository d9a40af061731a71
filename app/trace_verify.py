"""``ldpfleet trace verify DIR [DIR ...]``: is the trace genuine, and does every privatized
value in it agree with the run's parameters and the ledgers?

Inputs: the run directory holding ``trace.sqlite`` and ``results.json`` (an ``ldpfleet run``
OUT, or an ``ldpfleet collector`` OUT) and every ``ledger.json`` found in the given
directories, in their ``fleet-*/`` and ``shards/fleet-*/`` subdirectories (``ldpfleet
fleet`` writes ``runs/RUN/fleet-i-of-k`` by default; other fleet directories are given as
more arguments). The collector's own ledger (GC-DP) is ``ledger.json``'s ``collector`` or
the collector side's ``results.json`` ``collector_ledger``.

1. Authenticity (``broker.trace`` defines the chain). Row ids run 1, 2, ... without a gap
   (``row_missing``); each row's ``chain`` is ``sha256(previous chain || row bytes)`` from
   ``genesis(run)`` (``chain_broken``: the first row whose bytes were changed, inserted or
   whose chain was rewritten; ``no_chain``); the recorder's signature over (run, rows, head,
   scenario digest) verifies under the public key of ``results.json`` ``trace.public_key``
   (or ``--public-key HEX``), NOT the key stored in the trace (``public_key``, ``signature``,
   ``unsigned``, ``no_public_key``); the signed row count and head are the trace's
   (``truncated``: rows dropped from the end, ``unsigned_rows``: rows after the signature,
   ``chain_head``); the signed scenario digest is results.json's scenario
   (``scenario_digest``).
2. Run level (the scenario in results.json): every ``hello`` declares the scenario's
   mechanism, eps, w, eps0, steps, batch size and bounds (``hello_scenario``); every report
   value is in the mechanism's output domain (``stream_mechanism(name, eps0).in_domain``,
   ``out_of_domain``) and within the scenario's steps (``beyond_steps``); senders are devices
   of the scenario (``unknown_device``); every ledger account (and ledger.json's eps, w)
   has the scenario's eps and w (``ledger_scenario``); a CADR-LDP plan has the scenario's
   eps, alpha and method (``plan_scenario``); a device's ledger in two files must be the same
   (``ledger_conflict``); a ``ledger.json`` in a given directory is of the trace's run
   (``ledger_run``: another run's, even one that agrees with the trace).
3. Trace against ledgers (as before): stream reports agree with their hello (``eps0``,
   ``mechanism``, ``no_hello``, ``hello_changed``), no step twice with different values
   (``conflicting_values``), every w-window within eps (``window_overspent``), the ledger
   charged at least what the trace shows (``ledger_undercharged``, ``ledger_params``,
   ``ledger_kind``, ``no_ledger``), nothing after a refusal (``released_after_refusal``);
   CADR-LDP DSR reports and the degree release (``eps``, ``ledger_undercharged``,
   ``ledger_overspent``, ``conflicting_values``); GC-DP releases (``eps_rel``,
   ``double_release``, ``ledger_charges``).
4. Collector store against trace (stream, ``trace = "all"``): every report in
   ``collector.sqlite`` was recorded, from its device, with the same values
   (``untraced_report``, ``stored_differs``).
5. results.json's figures (stream runs, ``app.trace_verify_results``): its counts, stream
   and privacy parameters, ledger spends and accuracy arithmetic against the trace, the
   store, the ledgers and the scenario (``results_differs``); each stream account's
   ``total_spent`` and ``max_window_spent`` at least the trace's (``ledger_undercharged``).

Payloads that do not decode, or whose ``sender`` is not the topic's device, are counted
(``undecodable``, ``unattributable``) and skipped by steps 2-3 (the chain still covers
them). Exit status (``ldpfleet trace verify``): 0 clean, 1 any mismatch, 2 unreadable input.
"""

from __future__ import annotations

import json
import math
import sqlite3
import struct
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

import msgspec
import numpy as np
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from ldpfleet.broker.trace import (
    TRACE_FORMAT,
    TraceError,
    chain_next,
    chained_rows,
    connect_readonly,
    genesis,
    open_readonly,
    read_meta,
    row_bytes,
    signed_message,
)
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_budget import CadrBudget, negotiates, resolve_method
from ldpfleet.protocol.cadr_messages import CadrPlan, DegreeRelease, DsrReport
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import BudgetRefused, GcdpRelease, Hello, Message, SwReport
from ldpfleet.protocol.rendezvous import scenario_digest

__all__ = ["Mismatch", "VerifyReport", "verify_run"]

REL_TOL = 1e-9
STREAM_ACCOUNT = "stream"
CADR_ACCOUNT = "node"
WANTED = {"hello", "sw_report", "dsr_report", "cadr_plan", "gcdp_release", "budget_refused",
          "degree_release"}  # fmt: skip
LEDGER_GLOBS = ("ledger.json", "fleet-*/ledger.json", "shards/fleet-*/ledger.json")


@dataclass(frozen=True)
class Mismatch:
    """One disagreement: ``row`` is the trace row it concerns (None: a ledger or store)."""

    device: str
    step: int | None
    reason: str
    detail: str
    row: int | None = None

    def to_dict(self) -> dict:
        return {
            "device": self.device,
            "step": self.step,
            "reason": self.reason,
            "detail": self.detail,
            "row": self.row,
        }

    def line(self) -> str:
        """``MISMATCH row 17 d0001 step 3: reason: detail``."""
        where = "" if self.row is None else f" row {self.row}"
        step = "" if self.step is None else f" step {self.step}"
        return f"MISMATCH{where} {self.device}{step}: {self.reason}: {self.detail}"


@dataclass
class VerifyReport:
    """What was checked, what disagreed, and what could not be checked (``notes``)."""

    checked: Counter[str] = field(default_factory=Counter)
    mismatches: list[Mismatch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    public_key: str | None = None  # the anchor the signature was checked against
    ledgers: list[str] = field(default_factory=list)  # the ledger files read

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def fail(
        self, device: str, step: int | None, reason: str, detail: str, row: int | None = None
    ) -> None:
        self.mismatches.append(Mismatch(device, step, reason, detail, row))

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "public_key": self.public_key,
            "ledgers": self.ledgers,
            "checked": dict(sorted(self.checked.items())),
            "notes": self.notes,
            "mismatches": [m.to_dict() for m in self.mismatches],
        }


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-15)


# ---- inputs -------------------------------------------------------------------------------


@dataclass
class _Run:
    """Everything verify reads."""

    directory: Path  # the one holding trace.sqlite and results.json
    results: dict
    scenario: object  # LoadedScenario
    run: str
    ledgers: dict[str, dict]  # device -> its ledger document
    collector_ledger: dict | None
    ledger_documents: list[tuple[str, dict]]  # (path, stream ledger.json) for eps/w


def _read_json(path: Path, what: str) -> dict:
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise TraceError(f"{path} is not {what} ({error})") from None
    if not isinstance(document, dict):
        raise TraceError(f"{path} is not {what} (not a JSON object)")
    return document


# files that stand for their directory: the run's trace, results and ledger
RUN_FILES = ("trace.sqlite", "results.json", "ledger.json")


def _directories(paths) -> list[Path]:
    """The run directories ``paths`` name: a directory, or its ``trace.sqlite``,
    ``results.json`` or ``ledger.json``. Any other file is refused naming what to give (held-out QA:
    ``trace verify FILE.sqlite`` said "no trace.sqlite in <parent>", and a file next to a
    run's trace.sqlite verified that trace instead of the file given)."""
    if isinstance(paths, str | Path):
        paths = [paths]
    out = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise TraceError(f"{path} does not exist (give the run's output directory)")
        if path.is_file() and path.name not in RUN_FILES:
            raise TraceError(
                f"{path} is not a run's trace.sqlite: verify reads trace.sqlite with the "
                "results.json and ledger.json beside it, so give the run's output directory "
                f"(or its trace.sqlite), not {path.name}"
            )
        out.append(path.parent if path.is_file() else path)
    return out


def _bulk_run(paths) -> Path | None:
    """The directory of a bulk-gateway run (results.json ``kind`` ``bulk-stream``) among
    ``paths``, or None."""
    for directory in _directories(paths):
        try:
            results = json.loads((directory / "results.json").read_text())
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if isinstance(results, dict) and results.get("kind") == "bulk-stream":
            return directory
    return None


def _inputs(paths, report: VerifyReport) -> _Run:
    """The trace directory, its results and scenario, and every ledger (``TraceError`` if
    something needed is missing or unreadable)."""
    directories = _directories(paths)
    directory = _trace_directory(directories)
    results, scenario, run = _read_results(directory)
    files = _ledger_files(directories)
    files = _this_runs_ledgers(files, directories, run, report)
    ledgers, collector, documents = _read_ledgers(files, report)
    if collector is None and isinstance(results.get("collector_ledger"), dict):
        collector = results["collector_ledger"]
    return _Run(directory, results, scenario, run, ledgers, collector, documents)


def _trace_directory(directories: list[Path]) -> Path:
    """The one directory among ``directories`` holding a trace.sqlite."""
    traced = [d for d in directories if (d / "trace.sqlite").exists()]
    if not traced:
        names = ", ".join(str(d) for d in directories)
        raise TraceError(
            f"no trace.sqlite in {names} (give the run's or the collector side's directory)"
        )
    if len(traced) > 1:
        raise TraceError(
            "several traces: " + ", ".join(str(d) for d in traced) + " (give one collector "
            "side's directory and the fleet directories)"
        )
    return traced[0]


def _read_results(directory: Path) -> tuple[dict, object, str]:
    """The trace directory's results.json, the scenario it holds (a ``LoadedScenario``)
    and the run id."""
    from ldpfleet.scenarios.schema import LoadedScenario, Scenario

    results_path = directory / "results.json"
    if not results_path.is_file():
        raise TraceError(
            f"no results.json in {directory} (it holds the scenario and the trace's public key)"
        )
    results = _read_json(results_path, "a results document")
    try:
        spec = results["scenario"]["spec"]
        scenario = LoadedScenario(msgspec.convert(spec, Scenario), None)
        run = str(results["run"])
    except (KeyError, TypeError, msgspec.ValidationError) as error:
        raise TraceError(f"{results_path} has no readable scenario ({error})") from None
    return results, scenario, run


def _ledger_files(directories: list[Path]) -> list[Path]:
    """Every ledger file (``LEDGER_GLOBS``) in ``directories``, each once."""
    files: list[Path] = []
    for d in directories:
        for pattern in LEDGER_GLOBS:
            files += sorted(p.resolve() for p in d.glob(pattern) if p.resolve() not in files)
    if not files:
        raise TraceError(
            f"no ledger.json in {', '.join(str(d) for d in directories)} or their fleet-*/ "
            "directories (give the fleet shards' directories too)"
        )
    return files


def _this_runs_ledgers(
    files: list[Path], directories: list[Path], run: str, report: VerifyReport
) -> list[Path]:
    """``files`` without the ledgers found in a given directory's subfolders
    (``fleet-*/``, ``shards/fleet-*/``) that name another run: a previous run's, left in
    an ``--out`` folder that a later run (on another broker, with other shards) did not
    rewrite. Each one left out is a note. A ``ledger.json`` directly in a given directory
    is always read (given, so meant: another run's there is a mismatch). ``TraceError``
    if nothing of this run is left."""
    given = {(d / "ledger.json").resolve() for d in directories}
    kept = []
    for path in files:
        other = _ledger_run(path)
        if path in given and other is not None and other != run:
            # given, so meant: another run's ledgers cannot vouch for this trace even when
            # they agree with it (the same scenario and seed charge the same; user trial:
            # a swapped ledger.json verified clean)
            report.fail(
                "ledger",
                None,
                "ledger_run",
                f"{path} holds the ledgers of run {other}, the trace is of run {run}",
            )
            kept.append(path)
        elif other is not None and other != run:
            report.notes.append(
                f"{path}: the ledgers of run {other}, not of this run {run} (a previous "
                "run's files left in the folder), not read"
            )
        else:
            kept.append(path)
    if not kept:
        raise TraceError(
            f"no ledger.json of run {run} in {', '.join(str(d) for d in directories)} or "
            "their fleet-*/ directories, only other runs' (give this run's fleet directories)"
        )
    return kept


def _ledger_run(path: Path) -> str | None:
    """The run id a ledger document names (``"run"``), None if it names none or cannot be
    read (``_read_ledgers`` then reads it and says what is wrong)."""
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    run = document.get("run") if isinstance(document, dict) else None
    return run if isinstance(run, str) else None


def _read_ledgers(
    files: list[Path], report: VerifyReport
) -> tuple[dict[str, dict], dict | None, list[tuple[str, dict]]]:
    """Every device's ledger from ``files`` (a device whose files disagree is a
    ``ledger_conflict``, its first kept), the collector's ledger if one holds it, and the
    fleet ledger documents (path, document)."""
    ledgers: dict[str, dict] = {}
    origin: dict[str, str] = {}
    documents: list[tuple[str, dict]] = []
    collector = None
    for path in files:
        document = _read_json(path, "a ledger document")
        report.ledgers.append(str(path))
        devices = document.get("devices")
        if isinstance(devices, dict):
            documents.append((str(path), document))
            if isinstance(document.get("collector"), dict):
                collector = document["collector"]
        else:  # CADR-LDP: device -> ledger at the top level (beside "run", a string)
            devices = {k: v for k, v in document.items() if isinstance(v, dict) and "accounts" in v}
        for device, ledger in devices.items():
            if device in ledgers and ledgers[device] != ledger:
                report.fail(
                    device,
                    None,
                    "ledger_conflict",
                    f"{origin[device]} and {path} hold different ledgers for the device",
                )
                continue
            ledgers.setdefault(device, ledger)
            origin.setdefault(device, str(path))
    return ledgers, collector, documents


# ---- 1. the chain and the signature ------------------------------------------------------


def _encoded(row) -> bytes | None:
    """``row_bytes`` of a stored row, None if a column has a type the recorder never
    writes (the row was edited)."""
    try:
        payload = row.payload.encode() if isinstance(row.payload, str) else row.payload
        return row_bytes(
            row.id,
            float(row.time),
            row.topic,
            row.family,
            row.sender,
            row.recipient,
            row.kind,
            row.seq,
            row.size,
            payload,
        )
    except (TypeError, ValueError, AttributeError, OverflowError, struct.error):
        return None


def _partition_traces(run: _Run) -> list[tuple[Path, str | None]]:
    """A partitioned run's worker traces (results.json ``trace.partitions``): (path, key)."""
    entries = results_trace(run.results, run.directory).get("partitions") or []
    traces = []
    for entry in entries:
        path = run.directory / str(entry.get("path"))
        if not path.exists():
            raise TraceError(
                f"no {path.name} in {run.directory}: results.json lists it as partition trace"
            )
        traces.append((path, entry.get("public_key")))
    return traces


def _load_trace(
    run: _Run, report: VerifyReport, anchor: str | None, path: Path | None = None, keep=None
) -> list[tuple[int, topics.Topic, Message]]:
    """Check the chain and the signature of ``path`` (default: the run's trace.sqlite);
    return the decodable, attributable messages (row id, topic, message) in order, or,
    with ``keep``, hand every row to ``keep(row)`` instead (a bulk run's rows)."""
    db = open_readonly(path or run.directory / "trace.sqlite")
    messages: list[tuple[int, topics.Topic, Message]] = []
    before = len(report.mismatches)
    try:
        meta = read_meta(db)
        chain = _ChainWalk(genesis(run.run))
        counted = report.checked["rows"]  # rows of the traces read before this one
        for row, stored in chained_rows(db):
            report.checked["rows"] += 1
            chain.step(row, stored)
            if keep is not None:
                keep(row)
            elif row.kind in WANTED or row.kind == "invalid":
                _decode_row(row, messages, report)
        rows = report.checked["rows"] - counted
        chain.report_problem(report)
        _check_signature(run, report, anchor, meta, (rows, chain.last_id), chain.last_stored)
    except sqlite3.DatabaseError as error:  # a damaged database: unreadable, not a mismatch
        where = path or run.directory / "trace.sqlite"
        raise TraceError(f"{where} cannot be read ({error})") from None
    finally:
        db.close()
        if path is not None and path.name != "trace.sqlite":
            _name_the_file(report, before, path.name)
    return messages


def _name_the_file(report: VerifyReport, first: int, name: str) -> None:
    """A partition's trace (``trace-p{p}.sqlite``) numbers its rows from 1 like the main
    one: its authenticity mismatches name the file instead of ``trace`` (user trial:
    ``MISMATCH row 40 trace: chain_broken`` for an edit of trace-p1.sqlite, while
    trace.sqlite has a row 40 too)."""
    for index in range(first, len(report.mismatches)):
        mismatch = report.mismatches[index]
        if mismatch.device == "trace":
            report.mismatches[index] = replace(mismatch, device=name)


class _ChainWalk:
    """The hash chain over a trace's rows in order: the first problem (a deleted row, a
    row without a chain value, a row that does not chain to the one before), how many
    there are, the last stored chain value and the largest row id."""

    def __init__(self, genesis_value: bytes) -> None:
        self.expected = 1
        self.first_problem: tuple[int, str, str] | None = None
        self.breaks = self.missing = 0
        self.last_stored = genesis_value
        self.last_id = 0

    def step(self, row, stored) -> None:
        """One row and the chain value stored with it."""
        encoded = _encoded(row)
        expected = self.expected
        gap = isinstance(row.id, int) and row.id > expected
        if gap:
            self.missing += row.id - expected
            if self.first_problem is None:
                span = f"{expected}" if row.id == expected + 1 else f"{expected}-{row.id - 1}"
                self.first_problem = (expected, "row_missing", f"row(s) {span} deleted")
        if not isinstance(stored, bytes):
            if self.first_problem is None:
                self.first_problem = (row.id, "no_chain", "the row has no chain value")
            self.breaks += 1
        elif encoded is None or stored != chain_next(self.last_stored, encoded):
            # the row right after a deletion cannot chain to the row before the gap:
            # that break is the deletion, already counted, not one more problem
            self.breaks += 0 if gap else 1
            if self.first_problem is None:
                self.first_problem = (
                    row.id,
                    "chain_broken",
                    f"row {row.id} ({row.kind} on {row.topic}) is not the row the "
                    "recorder chained: its content, id or position was changed",
                )
        if isinstance(stored, bytes):
            self.last_stored = stored
        self.expected = (row.id if isinstance(row.id, int) else expected) + 1
        self.last_id = max(self.last_id, row.id if isinstance(row.id, int) else 0)

    def report_problem(self, report: VerifyReport) -> None:
        """The first problem, with how many more, as one mismatch."""
        if self.first_problem is not None:
            at, reason, detail = self.first_problem
            more = self.breaks + self.missing - 1
            report.fail("trace", None, reason, detail + (f"; {more} more" if more > 0 else ""), at)


def _decode_row(row, messages: list, report: VerifyReport) -> None:
    try:
        topic = topics.parse(row.topic)
        message = codec.decode(row.payload)
    except (RemoteProtocolError, TypeError, ValueError):
        report.checked["undecodable"] += 1
        return
    if message.type_name() not in WANTED:
        return
    if topic.family == "up" and topic.sender != message.sender:
        report.checked["unattributable"] += 1
        return
    messages.append((row.id, topic, message))


def _check_signature(
    run: _Run,
    report: VerifyReport,
    anchor: str | None,
    meta: dict,
    extent: tuple[int, int],
    head: bytes,
) -> None:
    """The signature under the anchored key, and the signed rows, head and scenario.
    ``extent`` is (rows read, the last row's id): rows missing before the last row are
    ``row_missing`` (reported by the chain check), rows missing after it ``truncated``."""
    key_hex = _check_anchor(report, anchor, meta.get("public_key"))
    signed = _verified_signature(run, report, meta, key_hex)
    if signed is None:
        return
    signed_rows, signed_head, digest = signed
    report.checked["signature"] += 1
    _check_extent(report, extent, head, signed_rows, signed_head)
    _check_digest(run, report, digest)


def _check_anchor(report: VerifyReport, anchor: str | None, stored_key: str | None) -> str | None:
    """The key the signature is checked under: the anchor, else (``no_public_key``) the
    trace's own; a trace signed with another key than the anchor is ``public_key``."""
    key_hex = anchor or stored_key
    if anchor is None:
        report.fail(
            "trace",
            None,
            "no_public_key",
            "results.json has no trace.public_key and no --public-key was given: the "
            "signature can only be checked against the key the trace itself holds",
        )
    elif stored_key is not None and stored_key.lower() != anchor.lower():
        report.fail(
            "trace",
            None,
            "public_key",
            f"the trace was signed with key {stored_key[:16]}..., results.json (or "
            f"--public-key) names {anchor[:16]}...",
        )
    report.public_key = key_hex
    return key_hex


def _verified_signature(
    run: _Run, report: VerifyReport, meta: dict, key_hex: str | None
) -> tuple[int, bytes, str] | None:
    """The signed (rows, head, scenario digest) when the signature verifies under
    ``key_hex``; None after reporting ``unsigned`` or ``signature``."""
    signature = meta.get("signature")
    if meta.get("format") != TRACE_FORMAT or signature is None:
        report.fail(
            "trace",
            None,
            "unsigned",
            "the trace carries no signature (the recorder was killed before the end of the "
            f"run, or the trace predates {TRACE_FORMAT})",
        )
        return None
    try:
        signed_rows = int(meta.get("rows", "-1"))
        signed_head = bytes.fromhex(meta.get("head", ""))
        digest = meta.get("scenario_digest", "")
        message = signed_message(run.run, signed_rows, signed_head, digest)
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(key_hex or "")).verify(
            bytes.fromhex(signature), message
        )
    except (InvalidSignature, ValueError, OverflowError) as error:
        report.fail(
            "trace",
            None,
            "signature",
            f"the signature over (run {run.run}, rows, head, scenario) does not verify under "
            f"key {(key_hex or '?')[:16]}... ({type(error).__name__})",
        )
        return None
    return signed_rows, signed_head, digest


def _check_extent(
    report: VerifyReport,
    extent: tuple[int, int],
    head: bytes,
    signed_rows: int,
    signed_head: bytes,
) -> None:
    """The trace holds the signed rows (``truncated``, ``unsigned_rows``) and ends at the
    signed head (``chain_head``)."""
    rows, last_id = extent
    if last_id < signed_rows:
        dropped = (
            f"row {signed_rows} was"
            if last_id + 1 == signed_rows
            else (f"rows {last_id + 1}-{signed_rows} were")
        )
        report.fail(
            "trace",
            None,
            "truncated",
            f"the recorder signed {signed_rows} rows, the trace holds {rows}: {dropped} "
            "dropped from the end",
            last_id + 1,
        )
    elif rows > signed_rows or last_id > signed_rows:
        report.fail(
            "trace",
            None,
            "unsigned_rows",
            f"the recorder signed {signed_rows} rows, the trace holds {rows}",
            signed_rows + 1,
        )
    elif head != signed_head:
        report.fail(
            "trace", None, "chain_head", "the last row's chain is not the signed head", last_id
        )


def _check_digest(run: _Run, report: VerifyReport, digest: str) -> None:
    """The signed scenario digest is results.json's scenario's (``scenario_digest``); no
    digest signed: a note."""
    if digest:
        if digest != scenario_digest(run.results["scenario"]["spec"]):
            report.fail(
                "trace",
                None,
                "scenario_digest",
                "results.json's scenario is not the one the recorder signed",
            )
    else:
        note = (
            "the recorder did not sign a scenario digest (CADR-LDP runs, bulk benches): "
            "results.json's scenario is taken as written"
        )
        if note not in report.notes:
            report.notes.append(note)


# ---- 2-4. the content --------------------------------------------------------------------


def _account(ledgers: dict[str, dict], device: str, name: str) -> dict | None:
    entry = ledgers.get(device)
    if not isinstance(entry, dict):
        return None
    accounts = entry.get("accounts")
    account = accounts.get(name) if isinstance(accounts, dict) else None
    return account if isinstance(account, dict) else None


def _number(value, default: float = -1.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _domain(config, report: VerifyReport):
    """The scenario mechanism's ``in_domain`` at eps0 (None: it cannot be built here)."""
    from ldpfleet.protocol.mechanisms import stream_mechanism

    try:
        return stream_mechanism(config.mechanism, config.eps0).in_domain
    except Exception as error:  # e.g. a "package.module:Class" not importable here
        report.notes.append(
            f"mechanism {config.mechanism!r} cannot be built here ({error}): report values "
            "were not checked against its output domain"
        )
        return None


def _hello_differs(hello: Hello, config) -> bool:
    """Does a hello declare another stream than the scenario's?"""
    return (
        hello.mechanism != config.mechanism
        or hello.w != config.w
        or hello.steps != config.steps
        or hello.batch_steps != config.batch_steps
        or not all(
            _close(a, b)
            for a, b in (
                (hello.eps, config.eps),
                (hello.eps0, config.eps0),
                (hello.lo, config.lo),
                (hello.hi, config.hi),
            )
        )
    )


@dataclass
class _Streams:
    """What ``_verify_streams`` gathers from the trace, device by device."""

    config: object  # the scenario's StreamConfig
    known: set[str]  # the scenario's device ids
    in_domain: object = None  # the mechanism's in_domain (None: not built yet, False: cannot)
    hellos: dict[str, Hello] = field(default_factory=dict)
    steps: dict[str, dict[int, float]] = field(default_factory=lambda: defaultdict(dict))
    eps0_of: dict[str, float] = field(default_factory=dict)
    refusals: dict[str, BudgetRefused] = field(default_factory=dict)
    # the attributable reports by (device, seq): (row, t0, values), for the store check
    traced: dict[tuple[str, int], list[tuple[int, int, list[float]]]] = field(
        default_factory=lambda: defaultdict(list)
    )


def _verify_streams(run: _Run, messages, report: VerifyReport) -> dict:
    """Stream checks; returns the attributable reports by (device, seq) for the store."""
    try:
        config = run.scenario.stream_config(run.run)
    except Exception as error:  # e.g. a "package.module:Class" mechanism not importable here
        raise TraceError(
            f"the scenario's stream cannot be built here ({error}); trace verify builds the "
            "run's mechanism to check every report against its in_domain: run it where "
            "the mechanism imports (its package installed, or its folder on PYTHONPATH)"
        ) from None
    state = _Streams(config, set(run.scenario.device_ids()))
    for row, _, message in messages:
        if isinstance(message, Hello):
            _check_hello(row, message, state, report)
        elif isinstance(message, BudgetRefused) and message.account == STREAM_ACCOUNT:
            state.refusals[message.sender] = message
    for row, _, message in messages:
        if isinstance(message, SwReport):
            _check_report(row, message, state, report)
    _ledger_scenario(run, config, report)
    _ledger_devices(run, state, report)
    for device in sorted(state.steps):
        _stream_ledger(
            device, state.hellos[device], state.steps[device], state.eps0_of[device],
            run.ledgers, report,
        )  # fmt: skip
        _check_refusal(device, state, report)
    return state.traced


def _check_hello(row: int, message: Hello, state: _Streams, report: VerifyReport) -> None:
    """A hello declares the scenario's stream (``hello_scenario``) and, when it is not the
    device's first, the same stream as the first (``hello_changed``)."""
    device, config = message.sender, state.config
    first = state.hellos.setdefault(device, message)
    if _hello_differs(message, config):
        report.fail(
            device,
            None,
            "hello_scenario",
            f"hello declares {message.mechanism} eps={message.eps!r} w={message.w} "
            f"eps0={message.eps0!r} steps={message.steps} batch={message.batch_steps} "
            f"bounds=[{message.lo!r}, {message.hi!r}], the scenario {config.mechanism} "
            f"eps={config.eps!r} w={config.w} eps0={config.eps0!r} steps={config.steps} "
            f"batch={config.batch_steps} bounds=[{config.lo!r}, {config.hi!r}]",
            row,
        )
    if (first.mechanism, first.eps, first.w, first.eps0) != (
        message.mechanism,
        message.eps,
        message.w,
        message.eps0,
    ):
        report.fail(device, None, "hello_changed", "two hellos declare different streams", row)


def _check_report(row: int, message: SwReport, state: _Streams, report: VerifyReport) -> None:
    """One stream report: against the scenario, against its device's hello, and its values
    against the values the device reported before."""
    report.checked["sw_reports"] += 1
    state.traced[(message.sender, message.seq)].append((row, message.t0, message.values))
    _check_report_scenario(row, message, state, report)
    if _agrees_with_hello(row, message, state, report):
        state.eps0_of[message.sender] = message.eps0
        _record_values(row, message, state.steps[message.sender], report)


def _check_report_scenario(
    row: int, message: SwReport, state: _Streams, report: VerifyReport
) -> None:
    """The sender is a device of the scenario, the values are outputs of its mechanism
    and within its steps."""
    device, config = message.sender, state.config
    if device not in state.known:
        report.fail(device, message.t0, "unknown_device", "not a device of the scenario", row)
    if state.in_domain is None and report.checked["sw_reports"] == 1:
        state.in_domain = _domain(config, report) or False
    if state.in_domain:
        values = np.asarray(message.values, dtype=float)
        inside = np.asarray(state.in_domain(values), dtype=bool)
        report.checked["values_in_domain"] += int(inside.sum())
        if not inside.all():
            offset = int(np.argmin(inside))
            report.fail(
                device,
                message.t0 + offset,
                "out_of_domain",
                f"value {message.values[offset]!r} is not an output of {config.mechanism} "
                f"at eps0={config.eps0:g}",
                row,
            )
    if message.t0 + len(message.values) > config.steps:
        report.fail(
            device,
            message.t0,
            "beyond_steps",
            f"steps {message.t0}..{message.t0 + len(message.values) - 1}, the scenario has "
            f"{config.steps}",
            row,
        )


def _agrees_with_hello(row: int, message: SwReport, state: _Streams, report) -> bool:
    """The report's mechanism, w and eps0 are its device's hello's (``no_hello``,
    ``mechanism``, ``eps0``); False: its values are not counted."""
    device = message.sender
    hello = state.hellos.get(device)
    if hello is None:
        report.fail(device, message.t0, "no_hello", "reports without a hello", row)
        return False
    if message.mechanism != hello.mechanism or message.w != hello.w:
        report.fail(
            device,
            message.t0,
            "mechanism",
            f"report says {message.mechanism}/w={message.w}, hello {hello.mechanism}/w={hello.w}",
            row,
        )
        return False
    want_eps0 = 0.0 if hello.mechanism == "raw" else hello.eps / hello.w
    if not _close(message.eps0, want_eps0) or not _close(message.eps0, hello.eps0):
        report.fail(
            device,
            message.t0,
            "eps0",
            f"report spends eps0={message.eps0!r}, hello says "
            f"eps/w = {want_eps0!r} (eps0 {hello.eps0!r})",
            row,
        )
        return False
    return True


def _record_values(row: int, message: SwReport, reported: dict, report) -> None:
    """Each step's value into ``reported`` (step -> value); a step reported again with
    another value is ``conflicting_values``."""
    for offset, value in enumerate(message.values):
        t = message.t0 + offset
        report.checked["values"] += 1
        previous = reported.setdefault(t, value)
        if previous != value:
            report.fail(
                message.sender,
                t,
                "conflicting_values",
                f"step {t} reported as {previous!r} and {value!r}",
                row,
            )


def _check_refusal(device: str, state: _Streams, report: VerifyReport) -> None:
    """No step at or after the round the device refused from (``released_after_refusal``)."""
    refusal = state.refusals.get(device)
    steps = state.steps[device]
    if refusal is not None and any(t >= refusal.round for t in steps):
        first = min(t for t in steps if t >= refusal.round)
        report.fail(
            device,
            first,
            "released_after_refusal",
            f"step {first} reported after refusing from step {refusal.round}",
        )


def _ledger_scenario(run: _Run, config, report: VerifyReport) -> None:
    """ledger.json's eps and w and every stream account against the scenario."""
    for path, document in run.ledger_documents:
        if not _close(_number(document.get("eps")), config.eps) or document.get("w") != config.w:
            report.fail(
                "ledger",
                None,
                "ledger_scenario",
                f"{path} says eps={document.get('eps')!r} w={document.get('w')!r}, the "
                f"scenario eps={config.eps!r} w={config.w}",
            )
    raw = config.mechanism == "raw"
    for device in sorted(run.ledgers):
        account = _account(run.ledgers, device, STREAM_ACCOUNT)
        if account is None:
            continue
        report.checked["ledger_accounts"] += 1
        if raw:
            continue  # a raw account spends nothing: its eps and w are the release's
        if not _close(_number(account.get("eps")), config.eps) or account.get("w") != config.w:
            report.fail(
                device,
                None,
                "ledger_scenario",
                f"the stream account has eps={account.get('eps')!r} w={account.get('w')!r}, "
                f"the scenario eps={config.eps!r} w={config.w}",
            )


def _ledger_devices(run: _Run, state: _Streams, report: VerifyReport) -> None:
    """Every ledger read is of a device of the scenario (``unknown_device``): another
    run's ledger.json of other devices (a CADR-LDP run's nodes) put in the place of a
    partitioned run's, whose fleet directory holds the devices' ledgers too, verified
    clean (user trial)."""
    strangers = sorted(set(run.ledgers) - state.known)
    if strangers:
        report.fail(
            strangers[0],
            None,
            "unknown_device",
            f"the ledgers read ({', '.join(report.ledgers)}) hold {len(strangers)} "
            f"account(s) of devices not of the scenario, {', '.join(strangers[:3])}"
            + (", ..." if len(strangers) > 3 else ""),
        )


def _stream_ledger(device, hello, reported, eps0, ledgers, report: VerifyReport) -> None:
    report.checked["stream_devices"] += 1
    account = _account(ledgers, device, STREAM_ACCOUNT)
    if account is None:
        report.fail(device, None, "no_ledger", "no stream account in the ledgers")
        return
    if hello.mechanism == "raw":
        if account.get("kind") != "raw" or account.get("charges", 0) != 0:
            report.fail(
                device,
                None,
                "ledger_kind",
                f"raw reports need a raw account that spent nothing, ledger has "
                f"{account.get('kind')!r} with {account.get('charges')} charges",
            )
        return
    if account.get("kind") != "w-event":
        report.fail(
            device,
            None,
            "ledger_kind",
            f"{hello.mechanism} reports need a w-event account, ledger has {account.get('kind')!r}",
        )
        return
    if not _close(_number(account.get("eps")), hello.eps) or account.get("w") != hello.w:
        report.fail(
            device,
            None,
            "ledger_params",
            f"ledger eps={account.get('eps')!r} w={account.get('w')!r}, hello "
            f"eps={hello.eps!r} w={hello.w!r}",
        )
        return
    _check_windows(device, reported, eps0, hello, account, report)


def _check_windows(device, reported, eps0, hello, account, report: VerifyReport) -> None:
    """Every w-window of reported steps within ε; the ledger charged at least as much."""
    w, eps = hello.w, hello.eps
    last = max(reported)
    spend = [0.0] * (last + 1)
    for t in reported:
        spend[t] = eps0
    prefix = [0.0]
    for x in spend:
        prefix.append(prefix[-1] + x)
    ledger_windows = account.get("window_spent") or []
    charges = account.get("charges", 0)
    if not isinstance(charges, int) or len(reported) > charges:
        report.fail(
            device,
            None,
            "ledger_undercharged",
            f"{len(reported)} steps reported, the ledger charged {charges}",
        )
    _check_account_totals(device, len(reported) * eps0, prefix, w, account, report)
    n = last + 1
    starts = range(max(1, n - w + 1)) if n >= w else [0]
    for s in starts:
        window = prefix[min(s + w, n)] - prefix[s]
        report.checked["windows"] += 1
        if window > eps * (1 + REL_TOL):
            report.fail(
                device,
                s,
                "window_overspent",
                f"steps [{s}, {s + w - 1}] spend {window:.6g} > eps = {eps:g}",
            )
            return
        charged = ledger_windows[s] if s < len(ledger_windows) else None
        if charged is None or window > _number(charged) * (1 + REL_TOL) + 1e-12:
            report.fail(
                device,
                s,
                "ledger_undercharged",
                f"steps [{s}, {s + w - 1}] spend {window:.6g} in the trace, the ledger "
                f"charged {charged!r}",
            )
            return


def _check_account_totals(device, spent, prefix, w, account, report: VerifyReport) -> None:
    """The account's own summary figures against the trace: ``total_spent`` at least the
    trace's total spend and ``max_window_spent`` at least its largest window (results.json
    ``privacy`` is read from these figures, so a ledger lowering them understates the
    spend; ``ledger_undercharged``). A ledger without them is not failed for it."""
    total = _number(account.get("total_spent"))
    if "total_spent" in account and not total * (1 + REL_TOL) + 1e-12 >= spent:  # NaN fails
        report.fail(
            device,
            None,
            "ledger_undercharged",
            f"the trace's reports spend {spent:.6g} in total, the ledger's total_spent is "
            f"{account.get('total_spent')!r}",
        )
    n = len(prefix) - 1
    widest = max(prefix[min(s + w, n)] - prefix[s] for s in range(max(1, n)))
    most = _number(account.get("max_window_spent"))
    if "max_window_spent" in account and not most * (1 + REL_TOL) + 1e-12 >= widest:
        report.fail(
            device,
            None,
            "ledger_undercharged",
            f"the trace's reports spend {widest:.6g} in their largest window of {w} steps, "
            f"the ledger's max_window_spent is {account.get('max_window_spent')!r}",
        )


def _verify_store(run: _Run, traced: dict, report: VerifyReport) -> None:
    """Every report the collector stored (each partition's store) was recorded, from its
    device, with its values."""
    partitions = sorted(run.directory.glob("collector-p*.sqlite"))
    path = run.directory / "collector.sqlite"
    if not partitions and not path.exists():
        report.notes.append("no collector.sqlite: the collector's stored reports not compared")
        return
    for store in partitions or [path]:
        _verify_one_store(store, traced, report)


def _verify_one_store(path: Path, traced: dict, report: VerifyReport) -> None:
    try:
        db = connect_readonly(path)
    except sqlite3.Error as error:  # a directory, a file that cannot be opened
        raise TraceError(f"{path} cannot be read ({error})") from None
    try:
        stored = list(db.execute("SELECT device, seq, t0, vals FROM reports ORDER BY device, seq"))
    except sqlite3.DatabaseError as error:
        raise TraceError(f"{path} cannot be read ({error})") from None
    finally:
        db.close()
    for device, seq, t0, blob in stored:
        report.checked["stored_reports"] += 1
        candidates = traced.get((device, seq))
        if not candidates:
            report.fail(
                device,
                t0,
                "untraced_report",
                f"the collector stored batch {seq} (steps from {t0}), the trace has no "
                "attributable report of it",
            )
            continue
        values = np.frombuffer(blob, dtype="<f8").tolist() if isinstance(blob, bytes) else None
        report.checked["stored_values"] += len(values or ())
        if not any(t == t0 and v == values for _, t, v in candidates):
            report.fail(
                device,
                t0,
                "stored_differs",
                f"the collector stored batch {seq} with other steps or values than the trace",
                candidates[0][0],
            )


def _check_results(run: _Run, report: VerifyReport, *, stored: bool) -> None:
    """Step 5: results.json's figures against the trace, the store, the ledgers and the
    scenario (``app.trace_verify_results``)."""
    from ldpfleet.app.trace_verify_results import verify_results

    spends, central = None, None
    accounts = [_account(run.ledgers, d, STREAM_ACCOUNT) for d in sorted(run.ledgers)]
    accounts = [a for a in accounts if a is not None]
    if run.scenario.spec.stream.mechanism != "raw":
        spends = [_number(a.get("max_window_spent")) for a in accounts]
    elif isinstance(run.collector_ledger, dict):  # the claim is the central release's
        held = (run.collector_ledger.get("accounts") or {}).values()
        central = [
            (_number(a.get("max_window_spent")), _number(a.get("eps")))
            for a in held
            if isinstance(a, dict)
        ]
    has_store = stored and report.checked["stored_reports"] > 0
    config = run.scenario.stream_config(run.run)  # built by _verify_streams already
    stream = {k: getattr(config, k) for k in ("mechanism", "eps", "w", "eps0", "steps")}
    verify_results(
        run.results,
        devices=len(run.scenario.device_ids()),
        stream={**stream, "batch_steps": config.batch_steps},
        rows=report.checked["rows"],
        stored=(report.checked["stored_reports"], report.checked["stored_values"])
        if has_store
        else None,
        ledger_spends=spends,
        central=(central, len(accounts)) if central else None,
        report=report,
    )


def _dsr_share(plan: CadrPlan) -> float:
    """The DSR part of the plan's split: ``(1 - alpha) eps`` in the paper's pipeline, less
    the θ search's extra share in the dp pipeline (``CadrBudget``, as the devices split);
    method clip: everything the θ search leaves (no negotiation)."""
    negotiation = negotiates(plan.method)
    return CadrBudget(
        plan.eps, plan.alpha, plan.theta_fraction, plan.theta_extra, negotiation=negotiation
    ).dsr


def _verify_cadr(run: _Run, messages, report: VerifyReport) -> None:
    """CADR-LDP checks: the plan against the scenario, the node accounts against the
    scenario's eps, every DSR report and every degree-release value against the plan and
    the ledgers."""
    section = run.scenario.spec.cadr
    plan = _check_plans(messages, section, report)
    if section is not None:
        _cadr_ledger_scenario(run.ledgers, section, report)
    released: dict[str, DsrReport] = {}
    for row, _, message in messages:
        if isinstance(message, DsrReport):
            _check_dsr(row, message, plan, released, run.ledgers, report)
    release = None
    for row, topic, message in messages:
        if isinstance(message, DegreeRelease) and topic.family == "rel":
            _check_degree_release(row, message, plan, released, run.ledgers, report)
            release = message
    from ldpfleet.app.trace_verify_results import verify_cadr_results

    verify_cadr_results(
        run.results,
        rows=report.checked["rows"],
        release=release,
        plan=plan,
        report=report,
    )


def _check_plans(messages, section, report: VerifyReport) -> CadrPlan | None:
    """Every plan has the scenario's eps, alpha and method (``plan_scenario``); returns the
    first plan (None: no plan recorded)."""
    plans = [(row, m) for row, _, m in messages if isinstance(m, CadrPlan)]
    # the scenario's method "auto" is the pipeline's default (clip under dp, ll under paper)
    method = None if section is None else resolve_method(section.method, section.pipeline)
    for row, message in plans:
        report.checked["cadr_plans"] += 1
        if section is not None and (
            not _close(message.eps, section.eps)
            or not _close(message.alpha, section.alpha)
            or message.method != method
        ):
            report.fail(
                "collector",
                None,
                "plan_scenario",
                f"the plan says eps={message.eps!r} alpha={message.alpha!r} {message.method}, "
                f"the scenario eps={section.eps!r} alpha={section.alpha!r} {method}",
                row,
            )
    return plans[0][1] if plans else None


def _cadr_ledger_scenario(ledgers: dict[str, dict], section, report: VerifyReport) -> None:
    """No node account has a larger eps, or spent more, than the scenario's eps."""
    for device in sorted(ledgers):
        account = _account(ledgers, device, CADR_ACCOUNT)
        if account is None:
            continue
        report.checked["ledger_accounts"] += 1
        eps, spent = _number(account.get("eps")), _number(account.get("spent"), 0.0)
        if eps > section.eps * (1 + REL_TOL) or spent > section.eps * (1 + REL_TOL):
            report.fail(
                device,
                None,
                "ledger_scenario",
                f"the node account has eps={account.get('eps')!r} spent="
                f"{account.get('spent')!r}, the scenario's eps is {section.eps!r}",
            )


def _check_dsr(row, message: DsrReport, plan, released: dict, ledgers, report) -> None:
    """One DSR report: the same as the device's first (``conflicting_values``); a first
    release at the plan's DSR share (``eps``), charged in the node account
    (``no_ledger``, ``ledger_undercharged``, ``ledger_overspent``). ``released`` collects
    each device's first report."""
    device = message.sender
    report.checked["dsr_reports"] += 1
    first = released.setdefault(device, message)
    if first.value != message.value or first.eps != message.eps:
        report.fail(
            device,
            None,
            "conflicting_values",
            f"two DSR releases: {first.value!r} and {message.value!r}",
            row,
        )
        return
    if first is not message:
        return  # a retransmission of the same release
    if plan is not None and not _close(message.eps, _dsr_share(plan)):
        report.fail(
            device,
            None,
            "eps",
            f"DSR at eps={message.eps!r}, the plan's share is {_dsr_share(plan)!r}",
            row,
        )
    account = _account(ledgers, device, CADR_ACCOUNT)
    if account is None:
        report.fail(device, None, "no_ledger", "no node account in the ledgers", row)
        return
    spent, eps = _number(account.get("spent"), 0.0), _number(account.get("eps"), 0.0)
    if spent < message.eps * (1 - REL_TOL):
        report.fail(
            device,
            None,
            "ledger_undercharged",
            f"DSR at eps={message.eps!r}, the node account spent {spent!r}",
            row,
        )
    if spent > eps * (1 + REL_TOL) or (plan is not None and eps > plan.eps * (1 + REL_TOL)):
        report.fail(
            device, None, "ledger_overspent", f"the node account spent {spent!r} of eps {eps!r}"
        )


def _check_degree_release(row, message: DegreeRelease, plan, released, ledgers, report) -> None:
    """Each released value is its device's DSR report (``conflicting_values``) and the
    device's node account spent at least the DSR share (``no_ledger``,
    ``ledger_undercharged``)."""
    share = None if plan is None else (1 - plan.alpha) * plan.eps
    for device, value in zip(message.devices, message.values, strict=False):
        report.checked["degree_release_values"] += 1
        own = released.get(device)
        if own is not None and own.value != value:
            report.fail(
                device,
                None,
                "conflicting_values",
                f"released {value!r}, the device reported {own.value!r}",
                row,
            )
            continue
        account = _account(ledgers, device, CADR_ACCOUNT)
        if account is None:
            report.fail(device, None, "no_ledger", "no node account in the ledgers", row)
            continue
        spent = _number(account.get("spent"), 0.0)
        if share is not None and spent < share * (1 - REL_TOL):
            report.fail(
                device,
                None,
                "ledger_undercharged",
                f"released in degree_release, the node account spent {spent!r} "
                f"< the DSR share {share!r}",
                row,
            )


def _verify_gcdp(run: _Run, messages, report: VerifyReport) -> None:
    releases = [(r, m) for r, t, m in messages if isinstance(m, GcdpRelease) and t.family == "rel"]
    if not releases:
        return
    central = run.collector_ledger
    accounts = central.get("accounts", {}) if isinstance(central, dict) else {}
    windows = _gcdp_windows(releases, report)
    if not isinstance(accounts, dict) or len(accounts) != 1:
        report.fail("collector", None, "no_ledger", "no collector release account in the ledgers")
        return
    ((name, account),) = accounts.items()
    _check_release_account(run, name, account, windows, report)


def _gcdp_windows(releases, report: VerifyReport) -> dict[int, tuple[int, GcdpRelease]]:
    """Each released window's first (row, release); a window released again with other
    values is a ``double_release``."""
    windows: dict[int, tuple[int, GcdpRelease]] = {}
    for row, message in releases:
        report.checked["gcdp_releases"] += 1
        report.checked["values"] += len(message.values)
        _, first = windows.setdefault(message.window, (row, message))
        if first is not message and first.values != message.values:
            report.fail(
                "collector",
                message.window,
                "double_release",
                f"window {message.window} released twice with different values",
                row,
            )
    return windows


def _check_release_account(run: _Run, name: str, account: dict, windows, report) -> None:
    """The collector's release account ``name`` against the scenario's ``eps_rel`` and
    the released windows: each released at the account's eps and charged exactly once."""
    spent = account.get("window_spent") or []
    eps_rel = _number(account.get("eps"), 0.0)
    gcdp = run.scenario.spec.gcdp
    if gcdp is not None and not _close(eps_rel, gcdp.eps_rel):
        report.fail(
            "collector",
            None,
            "ledger_scenario",
            f"account {name!r} has eps {eps_rel!r}, the scenario's eps_rel is {gcdp.eps_rel!r}",
        )
    for k, (row, message) in sorted(windows.items()):
        if not _close(message.eps_rel, eps_rel):
            report.fail(
                "collector",
                k,
                "eps_rel",
                f"window {k} released at eps_rel={message.eps_rel!r}, account {name!r} "
                f"has eps {eps_rel!r}",
                row,
            )
        charged = _number(spent[k], 0.0) if k < len(spent) else 0.0
        if not _close(charged, message.eps_rel):
            report.fail(
                "collector",
                k,
                "ledger_charges",
                f"window {k} charged {charged!r}, released at {message.eps_rel!r} "
                "(must be charged exactly once)",
                row,
            )
    if account.get("charges") != len(windows):
        report.fail(
            "collector",
            None,
            "ledger_charges",
            f"{account.get('charges')} charges for {len(windows)} released windows",
        )


def _check_public_key(key: str) -> None:
    """``--public-key``: an Ed25519 public key, 64 hex digits (``TraceError``: exit 2)."""
    try:
        ok = len(bytes.fromhex(key)) == 32
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise TraceError(
            f"--public-key must be 64 hex digits (an Ed25519 public key, as the run printed "
            f"it), got {key!r}"
        )


def results_trace(results: dict, directory: Path) -> dict:
    """results.json's ``trace`` section ({} when absent); ``TraceError`` if it is not an
    object (an edited results.json: an AttributeError traceback before)."""
    trace = results.get("trace") or {}
    if not isinstance(trace, dict):
        raise TraceError(f"{directory}/results.json's trace is not an object: {trace!r:.40}")
    key = trace.get("public_key")
    if key is not None and not isinstance(key, str):  # an AttributeError traceback before
        raise TraceError(
            f"{directory}/results.json's trace.public_key is not a hex string: {key!r:.40}"
        )
    return trace


def _cadr_control_note(method: str | None) -> str:
    """The ``not checked:`` line of a CADR-LDP run traced with ``trace = "control"``.
    Method clip (the dp default) has no peer traffic and no NDOE/LPEA spend: its line says
    so instead of naming traffic that never existed."""
    checked = (
        "checked: the chain, the signature, the plan against the scenario, the degree release "
        "against the ledgers, the ledgers against the scenario's eps"
    )
    if method == "clip":
        return (
            'CADR-LDP trace = "control": the individual DSR reports are not recorded (method '
            f"clip: no NDOE, no LPEA, no peer traffic); {checked} (the θ search's spend, if "
            "any, is taken from the ledgers)"
        )
    return (
        'CADR-LDP trace = "control": the individual DSR reports and the NDOE/LPEA peer '
        f"traffic are not recorded; {checked} (the alpha-stage spends are taken from the "
        "ledgers)"
    )


def verify_run(paths, *, public_key: str | None = None) -> VerifyReport:
    """Check a run (module docstring): ``paths`` is its directory, or the collector side's
    directory and its fleet directories; ``public_key`` (hex) overrides results.json's
    ``trace.public_key``. ``TraceError`` if something needed cannot be read."""
    report = VerifyReport()
    if public_key is not None:
        _check_public_key(public_key)
    bulk = _bulk_run(paths)
    if bulk is not None:  # a bulk-gateway run: app.trace_verify_bulk
        from ldpfleet.app.trace_verify_bulk import verify_bulk

        return verify_bulk(bulk, report, public_key)
    run = _inputs(paths, report)
    anchor = public_key or results_trace(run.results, run.directory).get("public_key")
    messages = _load_trace(run, report, anchor)
    main_key = report.public_key
    for path, key in _partition_traces(run):  # each worker's recorder signed its own
        messages += _load_trace(run, report, key, path)
    report.public_key = main_key
    spec = run.scenario.spec
    traced = {}
    if spec.cadr is None:
        traced = _verify_streams(run, messages, report)
        if spec.collector.trace == "all":
            _verify_store(run, traced, report)
            _check_results(run, report, stored=True)
        else:
            _check_results(run, report, stored=False)
            report.notes.append(
                'trace = "control": no device message is recorded, so reports, hellos and '
                "the stream ledgers are not checked against the trace"
            )
    else:
        _verify_cadr(run, messages, report)
        if spec.cadr.trace == "control":
            report.notes.append(_cadr_control_note(run.results.get("method")))
    _verify_gcdp(run, messages, report)
    return report
