"""The ``ldpfleet trace`` commands (``stats``, ``show``, ``follow``, ``export``, ``verify``)
and the checks of their filters: a ``--kind``, ``--device`` or ``--topic`` that selects
nothing is refused with one sentence rather than answered with an empty result.

The command functions are registered on the ``trace`` group in app/cli.py.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Annotated

import typer
from ldpfleet.app.cli_common import console, user_errors
from ldpfleet.app.cli_options import _out_path
from rich.console import Console

TracePath = Annotated[Path, typer.Argument(help="A trace.sqlite file or a run's output directory.")]
DeviceOpt = Annotated[str | None, typer.Option(help="Only messages from or to this device.")]
KindOpt = Annotated[
    str | None, typer.Option(help="Only this kind (sw_report, ack, hello, reject, stage, invalid).")
]
TopicOpt = Annotated[str | None, typer.Option(help="Only topics matching this MQTT filter (+, #).")]
SinceOpt = Annotated[float | None, typer.Option(help="Seconds after the first message.")]
UntilOpt = Annotated[float | None, typer.Option(help="Seconds after the first message.")]


def protocol_kinds() -> set[str]:
    """Every message kind (payload ``type`` tag) the protocol defines, and ``invalid``."""
    from ldpfleet.protocol.codec import WIRE_KINDS

    return {"invalid", *WIRE_KINDS}


def check_kind(db, kind: str | None, path: Path) -> None:
    """Refuse a ``--kind`` that is neither recorded in the trace nor a kind of the protocol
    (a typo would otherwise select nothing and look like an empty result)."""
    import difflib

    from ldpfleet.broker.trace import TraceError

    if not kind:
        return
    recorded = {row[0] for row in db.execute("SELECT DISTINCT kind FROM messages")}
    if kind in recorded or kind in protocol_kinds():
        return
    close = difflib.get_close_matches(kind, sorted(recorded | protocol_kinds()), n=1)
    raise TraceError(
        f"--kind {kind!r} is not a message kind"
        + (f" (did you mean {close[0]!r}?)" if close else "")
        + f"; recorded in {path}: {', '.join(sorted(recorded)) or 'nothing'}"
    )


def check_bulk_device(db, device: str | None, path: Path) -> None:
    """Refuse a device a bulk-gateway trace cannot name: its rows are gateway messages
    (sender or recipient ``g{g}``), each carrying many devices' batches."""
    from ldpfleet.broker.trace import TraceError

    if not device:
        return
    known = db.execute(
        "SELECT 1 FROM messages WHERE sender = ? OR recipient = ? LIMIT 1", (device, device)
    ).fetchone()
    bulk = db.execute("SELECT 1 FROM messages WHERE family = 'gw' LIMIT 1").fetchone()
    if known is None and bulk is not None:
        raise TraceError(
            f"{path} is a bulk-gateway trace: one row per gateway message, not per device, "
            f"so name a gateway (g0, g1, ...), not {device!r}"
        )


def check_device(db, device: str | None, path: Path) -> None:
    """``--device`` names a party of the trace (``check_bulk_device`` first); a device that
    sent and received nothing is refused, as by ``trace follow``, instead of an empty
    answer that reads like a silent device."""
    from ldpfleet.broker.trace import TraceError

    check_bulk_device(db, device, path)
    if not device:
        return
    known = db.execute(
        "SELECT 1 FROM messages WHERE sender = ? OR recipient = ? LIMIT 1", (device, device)
    ).fetchone()
    if known is None:
        raise TraceError(f"device {device!r} sent and received nothing in {path}")


def open_filtered_trace(path: Path, kind: str | None, device: str | None):
    """The trace at ``path`` opened read-only, once ``--kind`` and ``--device`` are known to
    select something in it (``check_kind``, ``check_device``)."""
    from ldpfleet.broker.trace import open_readonly

    db = open_readonly(path)
    check_kind(db, kind, path)
    check_device(db, device, path)
    return db


def trace_filter(device, kind, topic, since, until):
    """The ``TraceFilter`` of ``trace stats/show/export``, its options checked: an empty
    ``--device``/``--kind``/``--topic`` was taken for "no constraint", a NaN, infinite or
    negative ``--since``/``--until`` and a malformed MQTT filter (``ldp/#/up``) selected
    nothing, both silently (``TraceError``, one sentence)."""
    from ldpfleet.broker.auth import valid_filter
    from ldpfleet.broker.trace import TraceError, TraceFilter

    for name, value in (("--device", device), ("--kind", kind)):
        if value is not None and not value:
            raise TraceError(f"{name} must not be empty (leave the option out for every one)")
    if topic is not None and not valid_filter(topic):
        raise TraceError(
            f"--topic must be an MQTT filter ('+' a whole level, '#' only the whole last "
            f"level, e.g. ldp/+/dev/d0001/#), got {topic!r}"
        )
    for name, value in (("--since", since), ("--until", until)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise TraceError(
                f"{name} must be a number of seconds >= 0 after the first message, got {value}"
            )
    if since is not None and until is not None and since > until:
        raise TraceError(f"--since {since:g} is after --until {until:g}: nothing lies between")
    return TraceFilter(device, kind, topic, since, until)


@contextlib.contextmanager
def damaged_trace(path: Path):
    """A trace whose file is damaged past its first page (bytes overwritten, a copy cut
    short) opens, then fails on a later read: an ``sqlite3.DatabaseError`` traceback
    ("database disk image is malformed") became one sentence naming the file (exit 2)."""
    import sqlite3

    from ldpfleet.broker.trace import TraceError

    try:
        yield
    except sqlite3.DatabaseError as error:
        trace = path / "trace.sqlite" if path.is_dir() else path
        raise TraceError(
            f"{trace} cannot be read ({error}): the file is damaged (cut short, or edited "
            "outside ldpfleet)"
        ) from None


def trace_stats(
    path: TracePath,
    device: DeviceOpt = None,
    kind: KindOpt = None,
    topic: TopicOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Counts, bytes and rates per kind and topic family."""
    from ldpfleet.broker.trace import stats
    from rich.table import Table

    with user_errors(), damaged_trace(path):
        selection = trace_filter(device, kind, topic, since, until)
        db = open_filtered_trace(path, kind, device)
        result = stats(db, selection)
    if as_json:
        print(json.dumps(result, indent=2))
        return
    table = Table(
        title=f"{result['messages']} messages, {result['bytes']} bytes, {result['seconds']:.2f} s"
    )
    for column in ("kind", "messages", "bytes", "per second"):
        table.add_column(column, justify="right" if column != "kind" else "left")
    for name, entry in result["by_kind"].items():
        rate = entry["per_second"]
        table.add_row(
            name, str(entry["messages"]), str(entry["bytes"]), f"{rate:.1f}" if rate else "-"
        )
    Console().print(table)


def trace_show(
    path: TracePath,
    device: DeviceOpt = None,
    kind: KindOpt = None,
    topic: TopicOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    limit: Annotated[int, typer.Option(min=0, help="At most this many messages (0: all).")] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """One line per message, decoded; rejections show their reason."""
    from ldpfleet.broker.trace import as_record, format_line, rows

    with user_errors(), damaged_trace(path):
        selection = trace_filter(device, kind, topic, since, until)
        db = open_filtered_trace(path, kind, device)
        for index, row in enumerate(rows(db, selection)):
            if limit and index >= limit:
                console.print("... (more; use --limit 0 for all)")
                break
            print(json.dumps(as_record(row)) if as_json else format_line(row))


def trace_follow(
    path: TracePath,
    device: Annotated[str, typer.Argument(help="The device whose conversation to show.")],
    limit: Annotated[int, typer.Option(min=0, help="At most this many messages (0: all).")] = 0,
) -> None:
    """One device's protocol conversation in order, decoded: who sent what to whom, with a
    header per protocol round (stream, secure-aggregation rounds)."""
    import itertools

    from ldpfleet.broker.trace import TraceError, conversation, open_readonly, sequence_lines

    with user_errors(), damaged_trace(path):
        db = open_readonly(path)
        known = db.execute(
            "SELECT 1 FROM messages WHERE sender = ? OR recipient = ? LIMIT 1", (device, device)
        ).fetchone()
        if known is None:
            check_bulk_device(db, device, path)
            raise TraceError(f"device {device!r} sent and received nothing in {path}")
        messages = conversation(db, device)
        if limit:
            messages = itertools.islice(messages, limit)
        for line in sequence_lines(messages, device):
            print(line)


def trace_export(
    path: TracePath,
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl or csv.")] = "jsonl",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="File (default: stdout).",
            parser=_out_path("--output"),
            metavar="PATH",
        ),
    ] = None,
    device: DeviceOpt = None,
    kind: KindOpt = None,
    topic: TopicOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
) -> None:
    """Export messages as JSON lines or CSV."""
    from ldpfleet.broker.trace import TraceError, export, rows

    with user_errors(), damaged_trace(path):
        selection = trace_filter(device, kind, topic, since, until)
        if fmt not in ("jsonl", "csv"):  # before -o FILE is opened (it was truncated)
            raise TraceError(f"export format {fmt!r} must be jsonl or csv")
        db = open_filtered_trace(path, kind, device)
        lines = export(rows(db, selection), fmt)
        if output is None:
            for line in lines:
                print(line)
        else:
            with _export_file(output, path) as handle:
                for line in lines:
                    handle.write(line + "\n")


# the first bytes of an SQLite database and of its write-ahead log (big- and little-endian)
_SQLITE_MAGIC = (b"SQLite format 3\x00", b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")


def _export_file(output: Path, source: Path | None = None):
    """``trace export -o FILE`` opened for writing; ``TraceError`` (one sentence) for a
    directory or a path that cannot be written (were tracebacks), and for an existing
    SQLite database or log: ``-o RUN/trace.sqlite`` truncated the signed trace being
    exported to 0 bytes before reading it (an OperationalError traceback, the run's trace
    lost), and a store or another trace would be overwritten the same way."""
    from ldpfleet.broker.trace import TraceError

    if output.is_dir():
        raise TraceError(f"--output {output} is a directory; give a file to write the export to")
    if output.is_file():
        trace = source / "trace.sqlite" if source is not None and source.is_dir() else source
        if trace is not None and trace.exists() and output.samefile(trace):
            raise TraceError(
                f"--output {output} is the trace being exported: writing it would erase it "
                "before it is read; give another file"
            )
        try:
            with output.open("rb") as handle:
                head = handle.read(16)
        except OSError:
            head = b""
        if head.startswith(_SQLITE_MAGIC):
            raise TraceError(
                f"--output {output} is an SQLite database or log (a trace or a store?): an "
                "export does not overwrite it; give another file"
            )
    try:
        return output.open("w")
    except OSError as error:
        raise TraceError(f"--output: cannot write {output} ({error.strerror or error})") from None


def trace_verify(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="The run's output directory (trace.sqlite, results.json, ledger.json) or "
            "its trace.sqlite, or the collector side's directory and the fleet shards' "
            "directories; another file is refused (verify reads the files beside the trace)."
        ),
    ],
    public_key: Annotated[
        str | None,
        typer.Option(
            "--public-key",
            help="The trace's Ed25519 public key (hex), as printed by the run "
            "(default: results.json trace.public_key).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Check that the trace is the one the recorder signed (hash chain + Ed25519 signature
    under results.json's key) and every privatized value in it against the scenario, the
    ledgers and the collector's store: exit 0 clean, 1 on any mismatch (naming the first
    broken row), 2 if an input cannot be read (docs/reliability.md)."""
    from ldpfleet.app.trace_verify import verify_run

    with user_errors():
        report = verify_run(paths, public_key=public_key)
    if as_json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        checked = ", ".join(f"{k} {v}" for k, v in sorted(report.checked.items())) or "nothing"
        print(f"key: {report.public_key or 'none'}")
        print(f"ledgers: {', '.join(report.ledgers)}")
        print(f"checked: {checked}")
        for note in report.notes:
            print(f"not checked: {note}")
        for m in report.mismatches:
            print(m.line())
        verdict = (
            "trace is signed and agrees with the scenario and the ledgers"
            if report.ok
            else "MISMATCHES"
        )
        print(f"{verdict}: {len(report.mismatches)} mismatch(es)")
    if not report.ok:
        raise typer.Exit(1)
