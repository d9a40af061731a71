"""The ``ldpfleet report`` and ``merge`` commands: over a finished run's output directory,
write report.html, or merge the directories of a run made of separate processes into one.

The command functions are registered on the typer ``app`` in app/cli.py.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated

import typer
from ldpfleet.app.cli_common import console, user_errors
from ldpfleet.app.cli_options import _out_dir_option
from ldpfleet.app.cli_summary import _print_warnings, _write_report


def report_command(
    out: Annotated[
        Path, typer.Argument(help="A run's output directory (or a collector side's --out).")
    ],
    fleet_dirs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="The fleet shards' --out directories of a run made of separate processes: "
            "merged with OUT into OUT/merged first (as `ldpfleet merge`)."
        ),
    ] = None,
) -> None:
    """Write OUT/report.html for an existing run: scenario, timing, messages, ledger,
    and a section per capability (plots inline; the page fetches nothing)."""
    from ldpfleet.app.report import write_report
    from ldpfleet.broker.trace import TraceError

    with user_errors():
        if out.is_file():
            raise TraceError(f"{out} is a file; give the run's output directory ({out.parent})")
        if not (out / "results.json").exists():
            raise TraceError(f"no results.json in {out} (run `ldpfleet run ... --out {out}`)")
        if fleet_dirs:
            from ldpfleet.scenarios.merge import merge_run

            out = merge_run(out, fleet_dirs, out / "merged")
        from ldpfleet.app.progress import job_progress
        from ldpfleet.app.report import SECTIONS

        with (
            job_progress("writing report.html", len(SECTIONS), unit="sections") as step,
            _damaged_run(out),
        ):
            path = write_report(out, progress=lambda _section: step())
        from ldpfleet.app.report import collector_side_note

        note = collector_side_note(out)
    console.print(f"wrote {path}")
    if note:  # a collector side alone: its devices' ledgers are the fleet shards'
        console.print(f"note: {note}", highlight=False, soft_wrap=True)


@contextlib.contextmanager
def _damaged_run(out: Path):
    """A run whose trace.sqlite or collector.sqlite is damaged past its first page (bytes
    overwritten, a copy cut short): an ``sqlite3.DatabaseError`` traceback ("database disk
    image is malformed") became one sentence (exit 2)."""
    import sqlite3

    from ldpfleet.broker.trace import TraceError

    try:
        yield
    except sqlite3.DatabaseError as error:
        raise TraceError(
            f"cannot read the run's SQLite files in {out} ({error}): trace.sqlite or "
            "collector.sqlite is damaged (cut short, or edited outside ldpfleet; `ldpfleet "
            f"trace verify {out}` checks the trace)"
        ) from None


def merge_command(
    collector_dir: Annotated[Path, typer.Argument(help="The collector side's --out directory.")],
    fleet_dirs: Annotated[list[Path], typer.Argument(help="Every fleet shard's --out directory.")],
    out: Annotated[
        Path | None,
        _out_dir_option("Where to write the merged run (default: DIR/merged)."),
    ] = None,
) -> None:
    """Merge the pieces of a run made of separate processes (``ldpfleet collector`` +
    ``ldpfleet fleet`` shards) into one run directory: the results.json and ledger.json
    ``ldpfleet run`` would have written, the trace and the store, and report.html."""
    from ldpfleet.scenarios.merge import merge_run

    with user_errors():
        target = merge_run(collector_dir, fleet_dirs, out or collector_dir / "merged")
        report = _write_report(target)
    console.print(f"merged run in {target}" + (f"; report {report}" if report else ""))
    merged = target / "results.json"
    if merged.is_file():
        _print_warnings(json.loads(merged.read_text()))
