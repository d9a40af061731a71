"""Worker-process pools that Ctrl-C stops at once (the benches, the audits, the
collector's CPR reconstruction).

``concurrent.futures.ProcessPoolExecutor`` used as ``with ProcessPoolExecutor() as pool``
does not stop on Ctrl-C: its ``__exit__`` waits for every queued task, and a worker that
gets the terminal's SIGINT inside a task hands the KeyboardInterrupt back as that task's
result and takes the next one (``ldpfleet bench cpr`` ran on for minutes after Ctrl-C).
:func:`interruptible_pool` is the same pool whose workers ignore SIGINT (the parent alone
decides: no traceback per worker), and which, when the ``with`` body raises (Ctrl-C or an
error), cancels the queued tasks and terminates its workers before the exception goes on.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor

WORKER_JOIN_SECONDS = 5.0  # per worker, after SIGTERM, before SIGKILL


def _ignore_sigint_then(initializer: Callable | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


def quiet_pool(
    max_workers: int | None = None,
    *,
    initializer: Callable | None = None,
    initargs: tuple = (),
) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` (the platform's default start method) whose workers ignore
    SIGINT: the parent alone decides what Ctrl-C stops (a worker that died of the
    terminal's SIGINT broke the pool, and its shutdown raised ``OSError``)."""
    return ProcessPoolExecutor(
        max_workers=max_workers,
        initializer=_ignore_sigint_then,
        initargs=(initializer, initargs),
    )


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the pool's queued tasks and end its workers (SIGTERM, then SIGKILL)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(WORKER_JOIN_SECONDS)
            if process.is_alive():
                process.kill()
                process.join(WORKER_JOIN_SECONDS)


@contextlib.contextmanager
def interruptible_pool(
    max_workers: int | None = None,
    *,
    initializer: Callable | None = None,
    initargs: tuple = (),
) -> Iterator[ProcessPoolExecutor]:
    """A ``ProcessPoolExecutor`` (the platform's default start method) for a ``with``
    block: shut down normally when the block ends; stopped at once (:func:`stop_pool`) when
    it raises, KeyboardInterrupt included."""
    pool = quiet_pool(max_workers, initializer=initializer, initargs=initargs)
    try:
        yield pool
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)
