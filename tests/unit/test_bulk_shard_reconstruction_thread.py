"""``run_timeout`` expiring while an in-process bulk collector reconstructs (helper J).

The collector reconstructs what the stage left in a thread (``asyncio.to_thread``). When
the run's deadline stopped it, the collector's task was cancelled, but the thread ran on:
``run_bulk`` returned (and ``ldpfleet run`` went on to score the outputs) while that
thread still computed and wrote ``p0/reconstructions.npz`` and ``periods.npy`` — files of
the run being read. Found by review; reproduced here deterministically:

- the reconstruction runs inline (12 streams, fewer than ``PARALLEL_FROM``), in chunks of
  4 (``INCREMENTAL_CHUNK`` patched), each chunk through ``_reconstruct_chunk``, patched to
  block on ``threading.Event`` objects this test controls;
- the first chunk, once entered, moves the loop's clock past ``run_timeout`` (``_JumpLoop``:
  the deadline is an event here, not a race with the machine's speed) and waits until the
  collector is told to stop (``IncrementalReconstructor.close(stop=True)``, what a
  cancelled collector does);
- any later chunk waits until ``run_bulk`` has returned.

Old code: the thread went on to chunk 2 and was still blocked there when ``run_bulk``
returned (``test_the_run_does_not_return_while_its_reconstruction_thread_works`` fails).
Now the thread stops at the next chunk and the collector waits for it before it ends.
"""

from __future__ import annotations

import asyncio
import threading

from ldpfleet.collector import analytics
from ldpfleet.protocol.bulk import BulkPlan
from ldpfleet.scenarios.bulk_run import run_bulk

GUARD = 60.0  # seconds a blocked chunk waits at most: a hang guard, never what is tested
RUN_TIMEOUT = 1_000.0  # never reached by the machine: the first chunk jumps the clock


class _JumpLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock another thread can move forward (``jump``)."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = 0.0

    def time(self) -> float:
        return super().time() + self.offset

    def jump(self, seconds: float) -> None:
        """From any thread: the clock moves ``seconds`` ahead (timers due fire)."""

        def move() -> None:
            self.offset += seconds

        self.call_soon_threadsafe(move)


def _plan() -> BulkPlan:
    return BulkPlan(
        run="bulk-recon-thread", devices=12, steps=20, batch_steps=5, eps=2.0, w=5,
        gateway_devices=6, period=(4, 6), reconstruct="sw",
    )  # fmt: skip


def test_the_run_does_not_return_while_its_reconstruction_thread_works(tmp_path, monkeypatch):
    loop = _JumpLoop()
    released = threading.Event()  # the collector was told to stop
    returned = threading.Event()  # run_bulk returned
    chunks: list[int] = []  # the chunks entered, numbered from 1
    working: set[int] = set()  # the chunks a thread is inside (the executor's threads
    # themselves outlive their jobs: whether one is alive says nothing)
    guard_hit: list[int] = []
    real_chunk, real_close = analytics._reconstruct_chunk, analytics.IncrementalReconstructor.close

    def chunk(job, streams):
        number = len(chunks) + 1
        chunks.append(number)
        working.add(number)
        try:
            return _blocked_chunk(number, job, streams)
        finally:
            working.discard(number)

    def _blocked_chunk(number, job, streams):
        if number == 1:
            loop.jump(10 * RUN_TIMEOUT)  # the run's deadline passes now
            wait_for = released
        else:
            wait_for = returned
        if not wait_for.wait(GUARD):
            guard_hit.append(number)
        return real_chunk(job, streams)

    def close(self, *, stop: bool = False):
        if stop:
            released.set()
        return real_close(self, stop=stop)

    monkeypatch.setattr(analytics, "INCREMENTAL_CHUNK", 4)
    monkeypatch.setattr(analytics, "_reconstruct_chunk", chunk)
    monkeypatch.setattr(analytics.IncrementalReconstructor, "close", close)

    async def scenario():
        results = await run_bulk(
            _plan(), out_dir=tmp_path, stage_timeout=None, run_timeout=RUN_TIMEOUT
        )
        still_working = sorted(working)
        return results, still_working, len(chunks)

    try:
        results, still_working, entered = loop.run_until_complete(scenario())
    finally:
        returned.set()
        released.set()
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
    assert not guard_hit, f"chunks {guard_hit} waited the whole hang guard"
    assert still_working == [], f"chunks still being reconstructed: {still_working}"
    assert entered == 1, f"the thread went on to chunk {entered} after the stop"
    assert results["aborted"]["reason"] == "run_timeout"
    assert results["reconstruction"] is None
    assert results["reports_received"] == results["reports_expected"] == 12 * 4
    # a stopped reconstruction leaves no partial file among the run's outputs
    assert not (tmp_path / "p0" / "reconstructions.npz").exists()
    assert not (tmp_path / "reconstructions.npz").exists()
    assert not working
