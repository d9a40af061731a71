"""Progress of long jobs on stderr: a count, a bar and an ETA where the total is known.

``job_progress(label, total)`` is a context manager yielding ``advance(n=1, total=None)``.
It draws nothing when stderr is not a terminal (a pipe, a log file, CI) or when the user
asked for JSON explicitly (``--json`` on the command line: the output is for a program),
so what a command prints on stdout never changes. Benches take a plain callback
``progress(done, total)`` and know nothing of this module.

``PhaseLines(label)`` is a ``progress(phase, done, total)`` callback of a long job counted
in calls (``ldpfleet audit MECH``: a user mechanism's perturb calls) that prints plain
lines on stderr, each ``label: ...`` (``audit NAME (eps 1): evaluation, 9,120 of 25,080
perturb calls, 1 min 40 s elapsed``), at most one every ``EVERY`` seconds of wall time,
and once, when the first ``TIMED_BATCH`` seconds of calls show the job will take more
than ``ESTIMATE_ABOVE`` seconds, the estimate (``about 5 min at 10 ms per perturb call;
--trials N to shorten``). Its clock is injectable (``clock``, default ``now``): the tests
use fake time.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

now = time.monotonic  # PhaseLines' default clock
EVERY = 5.0  # seconds of wall time between two progress lines, at least
TIMED_BATCH = 1.0  # seconds of calls timed before the estimate
ESTIMATE_ABOVE = 30.0  # the estimate is printed when the job will take longer (seconds)

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


def duration(seconds: float) -> str:
    """``12 s``, ``1 min 05 s``, ``2 h 03 min``."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def about(seconds: float) -> str:
    """A rounded estimate: ``40 s``, ``100 s``, ``5 min``, ``1.5 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def per_call(seconds: float) -> str:
    """The time of one call with two significant digits: ``10 ms``, ``0.25 ms``, ``1.5 s``."""
    value, unit = (seconds, "s") if seconds >= 1 else (seconds * 1e3, "ms")
    return f"{value:.2g} {unit}" if value < 100 else f"{value:.0f} {unit}"


class PhaseLines:
    """``progress(phase, done, total)`` as lines on stderr (module docstring): at most one
    line every ``every`` seconds of ``clock`` (the first ``every`` seconds after it is made:
    none), and the estimate once, after ``TIMED_BATCH`` seconds of calls, when the
    ``total`` calls at that pace take more than ``ESTIMATE_ABOVE`` seconds. ``write`` takes
    one line (default: print to stderr). Nothing it does touches the job's draws."""

    def __init__(
        self,
        label: str,
        *,
        unit: str = "perturb call",
        hint: str = "--trials N to shorten",
        clock: Callable[[], float] | None = None,
        every: float = EVERY,
        write: Callable[[str], None] | None = None,
    ) -> None:
        self.label, self.unit, self.hint, self.every = label, unit, hint, every
        self.clock = clock or now
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.started = self.last = self.clock()
        self.first: tuple[float, int] | None = None  # (time, calls done) at the first call
        self.estimated = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        t = self.clock()
        if self.first is None and done > 0:
            self.first = (t, done)
        if not self.estimated and self.first is not None and done > self.first[1]:
            spent = t - self.first[0]
            if spent >= TIMED_BATCH:
                self.estimated = True
                pace = spent / (done - self.first[1])
                if pace * total > ESTIMATE_ABOVE:
                    self._line(
                        t,
                        f"{total:,} {self.unit}s, about {about(pace * total)} at "
                        f"{per_call(pace)} per {self.unit}; {self.hint}",
                    )
                    return
        if t - self.last >= self.every:
            self._line(
                t,
                f"{phase}, {done:,} of {total:,} {self.unit}s, {duration(t - self.started)} "
                "elapsed",
            )

    def _line(self, t: float, text: str) -> None:
        self.last = t
        self.write(f"{self.label}: {text}" if self.label else text)
