"""Progress of long jobs on stderr: a count, a bar and an ETA where the total is known.

``job_progress(label, total)`` is a context manager yielding ``advance(n=1, total=None)``.
It draws nothing when stderr is not a terminal (a pipe, a log file, CI) or when the user
asked for JSON explicitly (``--json`` on the command line: the output is for a program),
so what a command prints on stdout never changes. Benches take a plain callback
``progress(done, total)`` and know nothing of this module.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

Advance = Callable[..., None]


def progress_wanted(argv: list[str] | None = None) -> bool:
    """True when a progress display should be drawn: stderr is a terminal and ``--json``
    is not on the command line (``argv``, default ``sys.argv``)."""
    argv = sys.argv[1:] if argv is None else argv
    return sys.stderr.isatty() and "--json" not in argv


@contextlib.contextmanager
def job_progress(
    label: str, total: int | None = None, *, unit: str = "", enabled: bool | None = None
) -> Iterator[Advance]:
    """A progress bar on stderr for ``label``; yields ``advance(n=1, total=None)``
    (``total`` updates a total learnt later). Disabled: ``advance`` does nothing."""
    if enabled is None:
        enabled = progress_wanted()
    if not enabled:
        yield lambda *args, **kwargs: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TextColumn("elapsed"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    ]
    # stdout is the job's own (JSON, tables): never captured into the bar's stderr display
    with Progress(
        *columns,
        console=Console(stderr=True),
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    ) as bar:
        task = bar.add_task(label, total=total)

        def advance(n: int = 1, total: int | None = None) -> None:
            if total is not None:
                bar.update(task, total=total)
            bar.advance(task, n)

        yield advance


def as_callback(advance: Advance) -> Callable[..., None]:
    """``progress(done, total, ...)`` (what the benches and the runner call; the runner adds
    the devices joined and the fleet's size) driving ``advance``."""
    state = {"done": 0}

    def progress(done: int, total: int, *_: int | None) -> None:
        advance(done - state["done"], total=total)
        state["done"] = done

    return progress
