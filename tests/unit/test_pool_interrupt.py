"""Ctrl-C during a bench or audit that runs its cells in worker processes.

Before: ``ldpfleet bench cpr --trials 100`` took SIGINT (the terminal sends it to the whole
process group), printed nothing and kept running for minutes: ``ProcessPoolExecutor``'s
``__exit__`` waits for every queued cell, and a worker that gets KeyboardInterrupt inside a
cell only hands it back as that cell's result and takes the next one. Now the app's pools
(``ldpfleet.collector.pools.interruptible_pool``) cancel what is queued and end their workers,
and the workers ignore SIGINT (the parent alone decides, no traceback per worker).
"""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"
COLLECTOR = APP.parent / "collector"

# a real call site (bench_cpr.false_claim_check) whose cell is replaced, in the parent before
# the fork, by one that marks its start and then sleeps 600 s: without the fix the process
# lives 600 s (two workers, four cells: 1,200 s) after SIGINT
SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from ldpfleet.app import bench_cpr

    marks = sys.argv[1]

    def sleeper(job):
        open(os.path.join(marks, str(os.getpid())), "w").close()
        time.sleep(600)

    sleeper.__module__, sleeper.__qualname__ = bench_cpr.__name__, "_claims_only"
    bench_cpr._claims_only = sleeper
    try:
        bench_cpr.false_claim_check(trials=10, workers=2, cells=[("white", 64, 1.0)] * 4)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
    """
)


def _wait_for(predicate, what: str, limit: float = 120.0) -> None:
    """Poll an event (a file appears, a process ends); ``limit`` only guards a hang."""
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {limit:g} s")
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (ended, not yet reaped by its parent) counts as ended
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
def test_sigint_ends_a_pool_run_and_its_workers(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(marks)],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(lambda: len(list(marks.iterdir())) == 2, "two running cells")
        workers = [int(p.name) for p in marks.iterdir()]
        os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C: the whole process group
        # 60 s: a guard against a hang only; the sleeping cells would keep it 600 s
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, (proc.returncode, out, err)
    assert out.strip() == "interrupted"
    assert "Traceback" not in err, err
    _wait_for(lambda: not any(_alive(w) for w in workers), "end of the workers", 30)


def test_the_app_makes_its_process_pools_through_interruptible_pool():
    """A new ``ProcessPoolExecutor(`` in app/ or collector/ would bring the hang back (the
    collector's CPR reconstruction had one: Ctrl-C during ``ldpfleet run periodic-sensing
    -b memory`` killed its workers and the pool's shutdown ended in an ``OSError: [Errno
    9] Bad file descriptor`` traceback)."""
    found = [
        f"{path.name}:{number}"
        for path in sorted([*APP.glob("*.py"), *COLLECTOR.glob("*.py")])
        if path.name != "pools.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bProcessPoolExecutor\(", line)
    ]
    assert found == []


def _sigint_disposition(_: int) -> bool:
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_the_reconstruction_pool_workers_ignore_sigint():
    """The collector's reconstruction pool (``collector.analytics._process_pool``): its
    workers leave Ctrl-C to the parent."""
    from ldpfleet.collector.analytics import _process_pool

    pool = _process_pool(2)
    try:
        assert list(pool.map(_sigint_disposition, range(4))) == [True] * 4
    finally:
        pool.shutdown(wait=True)


def test_an_interrupted_reconstruction_ends_its_workers_without_waiting():
    """``IncrementalReconstructor.close(stop=True)`` (what an exception in
    ``finish_chunks`` calls) ends the workers of a chunk under way instead of waiting for
    it: a worker asleep for 600 s is gone within the 30 s guard."""
    from ldpfleet.collector.analytics import IncrementalReconstructor, _process_pool

    reconstructor = IncrementalReconstructor.__new__(IncrementalReconstructor)
    reconstructor._pool = _process_pool(1)
    reconstructor._pool.submit(time.sleep, 600)
    workers = list(reconstructor._pool._processes)
    reconstructor.close(stop=True)
    _wait_for(lambda: not any(_alive(w) for w in workers), "end of the workers", 30)
    assert reconstructor._pool is None
