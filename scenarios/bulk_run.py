"""Run a bulk-gateway fleet (issue 23; docs/scaling.md "Bulk gateways").

``run_bulk(plan, broker=..., out_dir=...)``:

- on ``memory`` (or with ``processes=False``) everything runs in this process: one task
  per partition collector (``collector.bulk``) and per gateway (``devices.bulk_gateway``);
- on an MQTT broker: one process per partition collector
  (``python -m ldpfleet.scenarios.bulk_run collector PLAN --partition p --broker URL
  --out DIR``, which prints ``ready`` once subscribed) and ``shards`` gateway processes
  (``... gateways PLAN --shard i/k``: gateways ``g`` with ``g % k == i``).

When every gateway is done the runner publishes ``Stage(closed)`` on ``ctl/stage`` (a
collector still missing reports stops and counts them lost), gathers the outcomes and
writes ``results.json``: ``reports_expected / received / lost / rejected /
duplicate``, ``rejections_by_reason``, per-process peak RSS, and the fleet-mean check
(mean absolute error of the per-step fleet mean estimated from the stored reports
against the clipped clean readings) and ``trace`` (the runner's ``trace.sqlite`` and each
partition's ``trace-p{p}.sqlite`` with their public keys; ``trace = "all"``, ``"control"``
or ``"none"``: docs/scaling.md, "Traces and ``trace verify`` of a bulk run").

Credentials (docs/scaling.md "Bulk gateways"): on ``memory`` and ``embedded`` the run gets
fresh ones (``bulk_credentials``: no device identities, ``plan.gateways`` bulk gateway
identities) unless ``auth=False``; an ``mqtt://`` broker uses only credentials given (it
must know the passwords). Gateway ``g`` then logs in as ``gateway-g{g}`` (the broker lets
it publish only its own uplink and read only its own inbox), the collectors and the
stage closer as ``collector``; child processes find the credentials through
``LDPFLEET_CREDENTIALS`` (a 0600 file that lives as long as the run).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from ldpfleet.broker.auth import AuthError, Credentials, child_environment, use_credentials
from ldpfleet.broker.mqtt import MqttTransport
from ldpfleet.broker.pump import cancel_all
from ldpfleet.broker.recorder import TraceRecorder, remove_trace
from ldpfleet.broker.select import open_broker
from ldpfleet.broker.transport import Transport
from ldpfleet.collector.analytics import (
    BULK_PUBLIC,
    accuracy_baselines,
    fleet_average,
    privacy_entry,
)
from ldpfleet.collector.bulk import NOT_RECONSTRUCTED, PERIODS_FILE, run_bulk_collector
from ldpfleet.collector.metrics import cosine_distance
from ldpfleet.collector.npz_files import merge_npz
from ldpfleet.devices.bulk_gateway import run_bulk_gateways
from ldpfleet.devices.fleet import ClipTally
from ldpfleet.devices.noise_entropy import DEVICE_NOISE, check_device_noise
from ldpfleet.protocol.bulk import (
    RUN_TIMEOUT_DETAIL,
    BulkPlan,
    device_keys,
    encode_bulk,
    fleet_means,
    stage_topic,
    stored_dtype,
    synthetic_values,
    tally_clipping,
    true_periods,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.messages import Stage
from ldpfleet.protocol.partition import COMPLETE_REASON
from ldpfleet.protocol.rendezvous import scenario_digest as digest_of
from ldpfleet.protocol.sw import SquareWave, normalise
from ldpfleet.scenarios.bulk_accounts import reconstructed_accounts
from ldpfleet.scenarios.cadr_run import fresh_outputs, scenario_header
from ldpfleet.scenarios.clipping import clipping_entry
from ldpfleet.scenarios.jsonout import write_results
from ldpfleet.scenarios.loop import loop_name
from ldpfleet.scenarios.shards import cancelled_on_sigterm, die_with_parent, stop_process
from ldpfleet.scenarios.stream_document import stream_entry

__all__ = [
    "DEFAULT_TRACE",
    "BulkRunFailed",
    "bulk_credentials",
    "bulk_plan",
    "run_bulk",
    "run_bulk_scenario",
]

# what a bulk run records when nothing says (the bench; docs/scaling.md "Bulk gateways":
# chosen by measurement)
DEFAULT_TRACE = "all"


def bulk_credentials(
    plan: BulkPlan, broker: str, credentials: Credentials | None = None, *, auth: bool = True
) -> Credentials | None:
    """The credentials a bulk run uses (module docstring); ``AuthError`` if given ones do
    not fit the plan (another run, too few gateways) or ``auth`` is off."""
    if credentials is not None:
        if not auth:
            raise AuthError("auth = false, but credentials were given")
        if credentials.run != plan.run:
            raise AuthError(f"the credentials are for run {credentials.run!r}, not {plan.run!r}")
        if credentials.gateways < plan.gateways or credentials.partitions != plan.partitions:
            raise AuthError(
                f"the credentials know {credentials.gateways} gateways and "
                f"{credentials.partitions} partitions; the plan has {plan.gateways} gateways "
                f"and {plan.partitions} partitions"
            )
        return credentials
    if auth and broker in ("memory", "embedded"):
        return Credentials.generate(
            plan.run, (), partitions=plan.partitions, gateways=plan.gateways
        )
    return None


class _StageLine:
    """The runner's side of the run: it opens the stream stage once every collector
    listens, closes it when the gateways are done and closes the run after the
    collectors (``Stage`` on ``ctl/stage``), recording what it publishes in its own
    signed ``trace.sqlite`` (``broker.recorder.TraceRecorder``, unless ``trace`` is
    ``"none"``): the run's global control trace, beside each partition's
    ``trace-p{p}.sqlite``, as a partitioned per-device run's coordinator keeps
    ``ctl/``."""

    def __init__(self, transport, plan: BulkPlan, out: Path, trace: str, digest) -> None:
        self.transport, self.plan = transport, plan
        self.recorder = None
        if trace != "none":
            self.recorder = TraceRecorder(
                transport, plan.run, out / "trace.sqlite", scenario_digest=digest
            )
            self.recorder.open(fresh=True)  # a bulk run never resumes an earlier one

    async def say(self, stage: str, state: str, detail: str = "") -> None:
        """Publish (and record) ``Stage(stage, state, detail)``."""
        message = Stage(
            run=self.plan.run, sender="collector", stage=stage, state=state, detail=detail
        )
        topic, payload = stage_topic(self.plan.run), encode_bulk(message)
        if self.recorder is not None:
            self.recorder.record(topic, payload)
        async with self.transport.connect(f"{self.plan.run}-collector-closer") as conn:
            await conn.publish(topic, payload)

    def close(self, *, complete: bool) -> None:
        """Sign and close the trace (once)."""
        if self.recorder is not None:
            self.recorder.close(complete=complete)

    def entry(self, out: Path, trace: str, summaries: list[dict]) -> dict:
        """results.json's ``trace`` block: this trace and each partition's."""
        if self.recorder is None:
            return {"messages": 0, "recorder": "none"}
        parts = []
        for summary in summaries:
            entry = dict(summary.get("trace") or {})
            entry["path"] = Path(entry.get("path", "")).name
            parts.append(entry)
        return {
            "recorder": "bulk",
            "mode": trace,
            "path": "trace.sqlite",
            "public_key": self.recorder.public_key,
            "messages": self.recorder.recorded + sum(e.get("messages", 0) for e in parts),
            "bytes": (out / "trace.sqlite").stat().st_size + sum(e.get("bytes", 0) for e in parts),
            "partitions": parts,
        }


class BulkRunFailed(RuntimeError):
    """A bulk run stopped without its results: a collector (process or task) ended before
    it wrote them, or the run's deadline passed before the collectors were ready.
    ``sentence`` names the collector and how it ended (``ldpfleet run``: one line, exit 1);
    every other process of the run has been stopped."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


@dataclass
class _Clock:
    """The run's deadline on the loop's clock: ``run_timeout`` seconds after ``started``
    (None: none; ``[collector] stage_timeout`` still bounds the gateways), whether it cut
    the run (``expired``), and the ``finish_grace`` the run's sides get to end by
    themselves once the stage closed early."""

    run_timeout: float | None
    finish_grace: float
    started: float = field(default_factory=lambda: asyncio.get_running_loop().time())
    expired: bool = False

    def left(self) -> float | None:
        """Seconds to the deadline (0 once past it; None without one)."""
        if self.run_timeout is None:
            return None
        return max(0.0, self.started + self.run_timeout - asyncio.get_running_loop().time())

    def stage_limit(self, stage_timeout: float | None) -> tuple[float | None, bool]:
        """How long the gateways may stream, and whether the run's deadline (rather than
        ``stage_timeout``) sets that limit."""
        left = self.left()
        if left is None:
            return stage_timeout, False
        if stage_timeout is None or left <= stage_timeout:
            return left, True
        return stage_timeout, False

    def aborted(self) -> dict | None:
        """results.json ``aborted`` (``scenarios.runner``'s shape) once the deadline cut
        the run, else None."""
        if not self.expired:
            return None
        return {
            "reason": "run_timeout",
            "run_timeout": self.run_timeout,
            "detail": f"the run did not finish within run_timeout ({self.run_timeout:g} s); "
            "the gateways and collectors were stopped and the outputs hold what had arrived",
        }


def _exit_words(code: int) -> str:
    """``exit code -9 (SIGKILL)``, ``exit code 1``."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"exit code {code} ({signal.Signals(-code).name})"
    return f"exit code {code}"


async def _process_end(process: asyncio.subprocess.Process, name: str) -> str | None:
    """Once ``process`` ended: None for exit code 0, else the sentence of how it ended."""
    code = await process.wait()
    return None if code == 0 else f"{name} (pid {process.pid}) ended with {_exit_words(code)}"


async def _task_end(task: asyncio.Future, name: str) -> str | None:
    """Once ``task`` ended: None when it returned, else the sentence of how it ended (the
    task itself is never cancelled by this wait)."""
    await asyncio.wait([task])
    if task.cancelled():
        return f"{name} was cancelled"
    error = task.exception()
    return None if error is None else f"{name} failed: {type(error).__name__}: {error}"


async def _until_done(wanted: list, watched: list, timeout: float | None) -> bool:
    """Wait until every future of ``wanted`` is done (True) or ``timeout`` passed (False).
    ``watched`` are the collectors' ends (futures of None, a clean end: a collector ends
    by itself once its partition is complete, or of a sentence): the first that ends with
    a sentence raises ``BulkRunFailed`` at once, instead of the run waiting for its
    stage deadline with nobody storing the reports."""
    loop = asyncio.get_running_loop()
    end = None if timeout is None else loop.time() + timeout
    waiting, watching = set(wanted), set(watched)
    while waiting:
        left = None if end is None else max(0.0, end - loop.time())
        done, _ = await asyncio.wait(
            waiting | watching, timeout=left, return_when=asyncio.FIRST_COMPLETED
        )
        if not done:
            return False
        for future in done & watching:
            if future.result() is not None:
                raise BulkRunFailed(future.result())
        watching -= done
        waiting -= done
    return True


async def _collectors_end(ends: list, timeout: float | None) -> bool:
    """Wait for every collector to end within ``timeout`` (False: some still run); one
    that ended with a failure raises ``BulkRunFailed``."""
    if not ends:
        return True
    done, pending = await asyncio.wait(ends, timeout=timeout)
    for future in ends:
        if future in done and future.result() is not None:
            raise BulkRunFailed(future.result())
    return not pending


async def _stream_and_close(
    line, clock: _Clock, stage_timeout, gateways: list, collector_ends: list,
    stop_gateways, stop_collectors,
) -> float:  # fmt: skip
    """The stream stage and the end of the run's sides: the gateways stream until they
    are done, ``stage_timeout`` or the run's deadline (a collector failing meanwhile ends
    the run at once: ``_until_done``); then ``Stage(stream, closed)`` (with
    ``RUN_TIMEOUT_DETAIL`` past the deadline: the collectors skip the reconstruction), the
    gateways still running get ``finish_grace`` and are stopped, and the collectors store
    what arrived and end (by the deadline; past it ``finish_grace``, then they are
    stopped: each wrote its stream summary before reconstructing). Returns when the
    stream ended (``perf_counter``)."""
    limit, by_deadline = clock.stage_limit(stage_timeout)
    finished = await _until_done(gateways, collector_ends, limit)
    clock.expired |= not finished and by_deadline
    await line.say("stream", "closed", RUN_TIMEOUT_DETAIL if clock.expired else "")
    if not finished:  # the gateways end on the stage's close: give them finish_grace
        await _until_done(gateways, collector_ends, clock.finish_grace)
        await stop_gateways()
    streamed = time.perf_counter()
    timeout = clock.finish_grace if clock.expired else clock.left()
    if not await _collectors_end(collector_ends, timeout):
        clock.expired = True
        await stop_collectors()
    return streamed


def _partition_name(plan: BulkPlan, p: int, *, process: bool) -> str:
    where = f"partition {p}" if plan.partitions > 1 else "the run"
    return f"the bulk collector {'process ' if process else ''}of {where}"


def _summaries(plan: BulkPlan, out: Path, clock: _Clock, names: list[str]) -> list[dict]:
    """Each partition's ``summary.json``; ``BulkRunFailed`` naming the first collector
    that wrote none."""
    summaries = []
    for p in range(plan.partitions):
        path = out / f"p{p}" / "summary.json"
        if not path.exists():
            why = (
                f"the run did not finish within run_timeout ({clock.run_timeout:g} s), and "
                if clock.expired
                else ""
            )
            raise BulkRunFailed(
                f"{why}{names[p]} ended without writing its summary ({path}); its stored "
                f"reports are in {path.parent / 'reports.bin'}"
            )
        summaries.append(json.loads(path.read_text()))
    return summaries


async def _in_process(
    transport: Transport, plan: BulkPlan, out: Path, tamper, trace: str, digest, line,
    clock: _Clock, stage_timeout: float | None, device_noise: str = "seeded",
) -> tuple:  # fmt: skip
    # the plan beside the partitions, as the run in processes writes it: read_reports lays
    # the partitions' reports.bin out by it (an in-memory bulk run's folder had none)
    (out / "plan.json").write_text(json.dumps(plan.to_dict()))
    ready = [asyncio.Event() for _ in range(plan.partitions)]
    collectors = [
        asyncio.ensure_future(
            run_bulk_collector(
                transport,
                plan,
                p,
                out / f"p{p}",
                on_ready=ready[p].set,
                trace=trace,
                trace_path=out / f"trace-p{p}.sqlite",
                scenario_digest=digest,
            )
        )
        for p in range(plan.partitions)
    ]
    names = [_partition_name(plan, p, process=False) for p in range(plan.partitions)]
    ends = [asyncio.ensure_future(_task_end(t, n)) for t, n in zip(collectors, names, strict=True)]
    gateways: list[asyncio.Future] = []
    try:
        waits = [asyncio.ensure_future(event.wait()) for event in ready]
        try:
            if not await _until_done(waits, ends, clock.left()):
                clock.expired = True
                raise BulkRunFailed(_not_ready(clock))
        finally:
            await cancel_all(waits)
        await line.say("stream", "open")
        connected = time.perf_counter()
        fleet_task = asyncio.ensure_future(
            run_bulk_gateways(
                transport, plan, range(plan.gateways), tamper=tamper, device_noise=device_noise
            )
        )
        gateways.append(fleet_task)
        streamed = await _stream_and_close(
            line, clock, stage_timeout, gateways, ends,
            lambda: cancel_all(gateways), lambda: cancel_all(collectors),
        )  # fmt: skip
        fleet, failures = _in_process_fleet(fleet_task, plan, streamed - connected)
        summaries = _summaries(plan, out, clock, names)
        return summaries, [fleet], failures, connected, streamed
    finally:
        await cancel_all([*gateways, *collectors, *ends])


def _in_process_fleet(task: asyncio.Future, plan: BulkPlan, seconds: float) -> tuple:
    """The in-process gateways' outcome (None when they failed or were stopped) and, when
    they failed, their ``shards_failed`` record (one shard: every gateway)."""
    if task.cancelled():  # stopped by the runner after the stage closed
        return None, []
    error = task.exception()
    if error is None:
        return task.result(), []
    ended = f"failed: {type(error).__name__}: {error}"
    return None, [_shard_record(plan, 0, 1, None, None, ended, seconds)]


def _shard_record(
    plan: BulkPlan, shard: int, shards: int, pid: int | None, code: int | None, ended: str,
    seconds: float | None,
) -> dict:  # fmt: skip
    """results.json ``fleet.shards_failed`` entry of a gateway shard that ended by itself
    without its outcome (``_results`` adds its devices' losses and the sentence)."""
    return {
        "shard": shard,
        "shards": shards,
        "pid": pid,
        "exit_code": code,
        "ended": ended,
        # after the stream opened (the runner's clock), None when not known
        "seconds_into_stream": None if seconds is None else round(max(seconds, 0.0), 3),
        "gateways": list(range(shard, plan.gateways, shards)),
    }


def _not_ready(clock: _Clock) -> str:
    return (
        f"the run did not finish within run_timeout ({clock.run_timeout:g} s): its "
        "collectors were not listening yet (starting and connecting take a few seconds; give "
        "run_timeout more)"
    )


async def _spawn(children: list, *args: str) -> asyncio.subprocess.Process:
    """A collector or gateway-shard process of the run, appended to ``children``: it dies
    with the runner (``scenarios.shards.die_with_parent``) and runs in a session of its
    own, out of the terminal's process group, so Ctrl-C reaches the runner alone, which
    stops it (``_stop_children``): no child prints its own ``KeyboardInterrupt``. (Ignoring
    SIGINT before exec, ``child_of_the_run``, does not hold under uvloop: libuv resets
    every signal's disposition in the child after ``preexec_fn``.)"""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ldpfleet.scenarios.bulk_run", *args,
        stdout=asyncio.subprocess.PIPE, preexec_fn=die_with_parent, start_new_session=True,
        env=child_environment(),  # this run's credentials file, not a concurrent run's
    )  # fmt: skip
    children.append(process)
    return process


async def _stop_children(children: list) -> None:
    """Stop every child still running (SIGTERM, then SIGKILL after ``STOP_GRACE``) and wait
    for them all, then end what is left of each child's session (``_end_session``): a run
    that failed or was interrupted leaves no process behind."""
    await asyncio.gather(*(stop_process(p) for p in children), return_exceptions=True)
    for process in children:
        _end_session(process)


def _end_session(process: asyncio.subprocess.Process) -> None:
    """SIGKILL what is left of an ended child's process group (its session: the child led
    it, ``start_new_session``): a collector killed with SIGKILL could not stop its
    reconstruction pool, whose workers would run on, orphaned. A group id is not reused
    while a member lives; an empty group is a ProcessLookupError."""
    if process.returncode is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _processes(
    url: str, plan: BulkPlan, out: Path, shards: int, stage_timeout: float | None, trace,
    digest, line, clock: _Clock, device_noise: str = "seeded",
) -> tuple:  # fmt: skip
    children: list[asyncio.subprocess.Process] = []
    try:
        return await _run_processes(
            children, url, plan, out, shards, stage_timeout, trace, digest, line, clock,
            device_noise,
        )  # fmt: skip
    except BaseException:  # an error, or Ctrl-C (the task cancelled): stop the children
        await asyncio.shield(_stop_children(children))
        raise
    finally:
        for process in children:  # a killed collector's pool workers (``_end_session``)
            _end_session(process)


async def _collectors_ready(collectors: list, ends: list, clock: _Clock) -> None:
    """Until every collector process said ``ready`` (``BulkRunFailed`` if one ended first
    or the run's deadline passed)."""
    reads = [asyncio.ensure_future(proc.stdout.readline()) for proc in collectors]
    try:
        if not await _until_done(reads, ends, clock.left()):
            clock.expired = True
            raise BulkRunFailed(_not_ready(clock))
        for proc, read in zip(collectors, reads, strict=True):
            if read.result().strip() != b"ready":
                raise BulkRunFailed(
                    f"a bulk collector process (pid {proc.pid}) did not start (it said "
                    f"{read.result()!r})"
                )
    finally:
        await cancel_all(reads)


async def _run_processes(
    children: list, url: str, plan: BulkPlan, out: Path, shards: int,
    stage_timeout: float | None, trace, digest, line, clock: _Clock, device_noise: str,
) -> tuple:  # fmt: skip
    """``_processes``' run: the partition collectors spawned and ready, the gateway shards
    spawned, the stage streamed and closed (``_stream_and_close``); returns the
    collectors' summaries, the shards' outcomes and failures and the stage's times."""
    plan_file = out / "plan.json"
    plan_file.write_text(json.dumps(plan.to_dict()))
    collectors = await _spawn_collectors(children, str(plan_file), url, plan, out, trace, digest)
    names = [_partition_name(plan, p, process=True) for p in range(plan.partitions)]
    ends = [
        asyncio.ensure_future(_process_end(proc, name))
        for proc, name in zip(collectors, names, strict=True)
    ]
    waits: list[asyncio.Future] = []
    try:
        await _collectors_ready(collectors, ends, clock)
        await line.say("stream", "open")
        connected = time.perf_counter()
        shard_procs = [
            await _spawn(
                children, "gateways", str(plan_file), "--shard", f"{i}/{shards}",
                "--broker", url, "--out", str(out / f"shard{i}"), "--device-noise", device_noise,
            )
            for i in range(shards)
        ]  # fmt: skip
        # asyncio.wait, not wait_for(gather(...)): a gather cancelled by Ctrl-C was logged
        # as "_GatheringFuture exception was never retrieved"
        waits = [asyncio.ensure_future(p.wait()) for p in shard_procs]
        opened = asyncio.get_running_loop().time()
        ended_at = _when_each_ends(waits)
        stopped: set[int] = set()  # shards the runner killed (still running after the stage)

        async def kill_shards() -> None:  # still running after the stage's close
            for i, proc in enumerate(shard_procs):
                if proc.returncode is None:
                    stopped.add(i)
                    proc.kill()
                    await proc.wait()

        async def stop_collectors() -> None:  # SIGTERM: each wrote its stream summary
            await asyncio.gather(*(stop_process(p) for p in collectors))

        streamed = await _stream_and_close(
            line, clock, stage_timeout, waits, ends, kill_shards, stop_collectors
        )
    finally:
        await cancel_all([*waits, *ends])
    summaries = _summaries(plan, out, clock, names)
    fleets = [_shard_outcome(out, i) for i in range(shards)]
    failures = [
        _shard_record(plan, i, shards, proc.pid, proc.returncode, _exit_words(proc.returncode),
                      ended_at[i] - opened if i in ended_at else None)
        for i, proc in enumerate(shard_procs)
        if i not in stopped and proc.returncode not in (0, None)
    ]  # fmt: skip
    return summaries, fleets, failures, connected, streamed


async def _spawn_collectors(
    children: list, plan_file: str, url: str, plan: BulkPlan, out: Path, trace, digest
) -> list:
    """One collector process per partition, spawned in order (each joins ``children``)."""
    return [
        await _spawn(
            children, "collector", plan_file, "--partition", str(p), "--broker", url,
            "--out", str(out / f"p{p}"), "--trace", trace,
            "--trace-path", str(out / f"trace-p{p}.sqlite"), "--scenario-digest", digest or "",
        )
        for p in range(plan.partitions)
    ]  # fmt: skip


def _shard_outcome(out: Path, i: int) -> dict | None:
    """Gateway shard ``i``'s ``outcome.json``, None when it wrote none."""
    path = out / f"shard{i}" / "outcome.json"
    return json.loads(path.read_text()) if path.exists() else None


def _when_each_ends(futures: list[asyncio.Future]) -> dict[int, float]:
    """Index -> the loop's time when that future ended (filled as they end; a future
    cancelled by the runner's clean-up is not an end)."""
    loop = asyncio.get_running_loop()
    ended: dict[int, float] = {}

    def note(index: int, future: asyncio.Future) -> None:
        if not future.cancelled():
            ended.setdefault(index, loop.time())

    for index, future in enumerate(futures):
        future.add_done_callback(lambda f, i=index: note(i, f))
    return ended


def _fresh_bulk_outputs(out_dir: str | os.PathLike) -> Path:
    """``out_dir`` without an earlier run's traces and partition folders (``p{p}/``,
    ``trace-p{p}.sqlite``): a run with fewer partitions would otherwise leave the old ones
    for ``trace`` commands to read as its own."""
    out = fresh_outputs(out_dir)
    for stale in out.glob("trace-p*.sqlite"):
        remove_trace(stale)
    for stale in out.glob("p*"):
        if stale.is_dir() and stale.name[1:].isdigit():
            shutil.rmtree(stale)
    return out


async def run_bulk(
    plan: BulkPlan,
    *,
    broker: str = "memory",
    out_dir: str | os.PathLike,
    shards: int = 2,
    processes: bool | None = None,
    stage_timeout: float | None = 3600.0,
    run_timeout: float | None = None,
    finish_grace: float = 5.0,
    tamper: dict | None = None,
    transport: Transport | None = None,
    credentials: Credentials | None = None,
    auth: bool = True,
    trace: str = DEFAULT_TRACE,
    scenario_digest: str | None = None,
    device_noise: str = "seeded",
) -> dict:
    """Run ``plan`` end to end and write ``out_dir/results.json`` (module docstring).
    ``broker``: ``memory``, ``embedded`` or an ``mqtt://`` URL; ``stage_timeout``: how
    long the gateways may stream; ``run_timeout``: the whole run's deadline (None: none),
    past which the stage closes, the collectors store what arrived without reconstructing
    (``finish_grace`` each side gets to end by itself) and results.json says ``aborted``;
    a collector that ends without its summary raises ``BulkRunFailed`` at once, every
    other process stopped; a gateway shard that ends without its outcome does not stop the
    run: results.json ``fleet.shards_failed`` and ``warnings`` name it
    (``_add_shard_failures``); ``tamper`` (in-process runs
    only): gateway -> a function rewriting its built entries (hostile-entry tests);
    ``transport``: a ready one (used as given, no credentials); ``credentials`` and
    ``auth``: as ``bulk_credentials``; ``trace``: ``"all"``, ``"control"`` or ``"none"``
    (the runner's ``trace.sqlite`` and each partition's ``trace-p{p}.sqlite``, signed
    over ``scenario_digest``; results.json ``trace`` lists them with their keys);
    ``device_noise``: where the gateways' devices' SW noise comes from
    (devices.noise_entropy; results.json ``device_noise`` and ``privacy``)."""
    check_device_noise(device_noise)
    out = _fresh_bulk_outputs(out_dir)
    _refuse_memory_processes(broker, processes)
    in_process = broker == "memory" or processes is False or tamper is not None
    creds = (
        None if transport is not None else bulk_credentials(plan, broker, credentials, auth=auth)
    )
    started = time.perf_counter()
    clock = _Clock(run_timeout, finish_grace)
    (summaries, fleets, failures, connected, streamed), line = await _run_stages(
        plan, broker, transport, creds, out, in_process, shards, stage_timeout, tamper, trace,
        scenario_digest, clock, device_noise,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    results = _results(plan, summaries, fleets, out, broker, seconds, streamed - connected)
    _add_shard_failures(results, plan, failures)
    missing = _shards_without_ledgers(plan, fleets, failures)
    results["fleet"]["reconstructed_accounts"] = (
        await asyncio.to_thread(reconstructed_accounts, plan, out, missing) if missing else None
    )
    results["trace"] = line.entry(out, trace, summaries)
    results["setup_seconds"] = round(connected - started, 3)  # broker, collectors ready
    results["auth"] = creds is not None  # per-identity logins and the run's ACL
    results["device_noise"] = device_noise  # the gateways' noise source (never its keys)
    results["aborted"] = clock.aborted()
    if plan.reconstruct != "none":
        reconstructed = all(s.get("reconstruction") for s in summaries)
        results["reconstruction"] = (
            await asyncio.to_thread(_merge_reconstructions, plan, out) if reconstructed else None
        )
    write_results(out / "results.json", results, indent=1)
    return results


def _refuse_memory_processes(broker: str, processes: bool | None) -> None:
    """The memory broker runs in one process: ``processes=True`` with it is refused."""
    if broker == "memory" and processes:
        raise ParameterError(
            "the memory broker runs in one process",
            field="processes",
            limit="no processes with the memory broker (it runs in one process)",
            value=processes,
        )


async def _run_stages(
    plan: BulkPlan, broker: str, transport: Transport | None, creds, out: Path,
    in_process: bool, shards: int, stage_timeout: float | None, tamper: dict | None,
    trace: str, scenario_digest: str | None, clock: _Clock, device_noise: str = "seeded",
) -> tuple[tuple, _StageLine]:  # fmt: skip
    """``run_bulk``'s run on the broker (``creds`` exported for the children): the fleet in
    this process or in processes, the stage line closed (signed complete when the run
    closed, else what was recorded). Returns the fleet's ``(summaries, fleets, failures,
    connected, streamed)`` and the stage line."""
    with (
        tempfile.TemporaryDirectory(prefix="ldpfleet-auth-") as secrets_dir,
        use_credentials(creds, export_dir=Path(secrets_dir) if creds else None),
    ):
        async with open_broker(transport or broker, credentials=creds) as (conn, info):
            line = _StageLine(conn, plan, out, trace, scenario_digest)
            try:
                if in_process:
                    ran = await _in_process(
                        conn, plan, out, tamper, trace, scenario_digest, line, clock,
                        stage_timeout, device_noise,
                    )  # fmt: skip
                else:
                    ran = await _processes(
                        info.url, plan, out, shards, stage_timeout, trace, scenario_digest,
                        line, clock, device_noise,
                    )  # fmt: skip
                await line.say("run", "closed")
                line.close(complete=True)
            finally:
                line.close(complete=False)  # signs what was recorded when the run failed
    return ran, line


def _merge_reconstructions(plan: BulkPlan, out: Path) -> dict:
    """``out/reconstructions.npz`` from every partition's (devices in index order, as the
    per-device path writes them) and the merged ``reconstruction`` block: the partitions'
    streams and during-stage counts summed, ``seconds`` (what the step added after the
    stream stage) their maximum, ``merge_seconds`` what the merge took after that."""
    started = time.perf_counter()
    entries = []
    for p in range(plan.partitions):
        summary = json.loads((out / f"p{p}" / "summary.json").read_text())
        entries.append(summary["reconstruction"])
    paths = [out / f"p{p}" / "reconstructions.npz" for p in range(plan.partitions)]
    if plan.partitions == 1:
        os.replace(paths[0], out / "reconstructions.npz")
    else:  # one member at a time, in device order whatever partition wrote it
        merge_npz(paths, out / "reconstructions.npz", sort=True)
        for path in paths:
            path.unlink()
    return {
        "method": plan.reconstruct,
        "streams": sum(e["streams"] for e in entries),
        "during_stage": sum(e["during_stage"] for e in entries),
        "seconds": max(e["seconds"] for e in entries),
        "path": "reconstructions.npz",
        # the partitions' files merged into one by the runner, after ``seconds``
        "merge_seconds": round(time.perf_counter() - started, 3),
        "partitions": entries,
    }


def _add_stream_figures(
    results: dict, plan: BulkPlan, out: Path, period_tolerance: int = 0
) -> None:
    """The figures every other stream run's results.json has (docs/results.md), added to a
    bulk run's: ``stream``, ``privacy`` (the claim, and what the gateways' ledgers spent),
    ``source_cycles`` (null: bulk gateways generate their readings, no file is replayed),
    ``accuracy`` (per-device means from the stored rows against the simulator's truth, and
    its ``baselines``) and, when reconstructing, ``mean_cosine_distance`` and
    ``constant_cosine_distance`` in ``reconstruction``, with CPR also ``period_tolerance``
    and ``period_accuracy`` (``_period_accuracy``). The truth is recomputed here from the
    plan (``protocol.bulk.synthetic_values``, what the gateways privatised), a gateway's
    devices at a time."""
    config = plan.stream_config()
    fleet = results["fleet"]
    results["stream"] = stream_entry(config, results)
    results["privacy"] = _privacy(fleet, config, results.get("device_noise", "seeded"))
    results["source_cycles"] = None
    estimates = _device_means(plan, out)
    truths: dict[str, float] = {}
    recon = results.get("reconstruction")
    scores: list[tuple[float, float]] = []
    members = None
    if recon is not None and (out / recon["path"]).exists():
        members = np.load(out / recon["path"])
    try:
        for g in range(plan.gateways):
            first, count = plan.gateway_range(g)
            keys = device_keys(plan, first, count)
            clean = np.clip(synthetic_values(plan, keys, 0, plan.steps), plan.lo, plan.hi)
            for i, device in enumerate(plan.device_ids(first, count)):
                truths[device] = float(clean[i].mean())
                if members is not None and device in members.files:
                    scores.append(_cosines(members[device], clean[i], plan))
    finally:
        if members is not None:
            members.close()
    if recon is not None:
        recon |= _period_accuracy(plan, out, period_tolerance)
    errors = [abs(estimates[d] - truths[d]) for d in truths if d in estimates]
    results["accuracy"] = {
        "metric": "per-device mean of the clipped stream (physical units)",
        "estimator": f"{plan.mechanism} estimate_mean",
        "mean_abs_error": float(np.mean(errors)) if errors else None,
        "max_abs_error": float(np.max(errors)) if errors else None,
        "baselines": accuracy_baselines(estimates, truths, plan.lo, plan.hi),
        "fleet_average": fleet_average(estimates, truths),
    }
    if recon is not None:
        recon["mean_cosine_distance"] = float(np.mean([s[0] for s in scores])) if scores else None
        recon["constant_cosine_distance"] = (
            float(np.mean([s[1] for s in scores])) if scores else None
        )


def _privacy(fleet: dict, config, device_noise: str = "seeded") -> dict:
    """results.json ``privacy`` of a bulk run: the claim, and the spend of every device
    whose reports the collectors hold. The gateways keep their devices' ledgers in memory
    and report their largest window spend (``ledger_devices`` devices); the devices of a
    shard that left no ledgers (it died, or was stopped) have their accounts rebuilt from
    the store (``reconstructed``, ``scenarios.bulk_accounts``; None when every shard
    reported). ``devices``, ``max_window_spent`` and ``within_budget`` cover both."""
    rebuilt = fleet.get("reconstructed_accounts")
    worst = fleet["max_window_spent"]
    devices = fleet["ledger_devices"]
    if rebuilt is not None:
        worst = max(worst, rebuilt["max_window_spent"])
        devices += rebuilt["devices"]
    # a bulk gateway keeps every row it privatised until it is resolved and never resumes:
    # no fresh copy of a device (privacy review V2); its own wire kinds are public
    spent = privacy_entry(
        {"max_window_spent": worst}, config, device_noise, public=BULK_PUBLIC, fresh_copies=False
    )
    return spent | {
        "devices": devices,
        "ledger_devices": fleet["ledger_devices"],
        "reconstructed": rebuilt,
    }


def _period_accuracy(plan: BulkPlan, out: Path, tolerance: int) -> dict:
    """``period_tolerance`` and ``period_accuracy``: the share of reconstructed devices
    whose period CPR found is within ``tolerance`` of the period their sine was generated
    with (``protocol.bulk.true_periods``; none found counts as wrong), from each
    partition's ``periods.npy`` (``collector.bulk``), as ``scenarios.runner.
    score_reconstructions`` scores the per-device path. Only CPR looks for a period: other
    methods get ``period_accuracy`` None."""
    entry: dict = {"period_tolerance": tolerance, "period_accuracy": None}
    paths = [out / f"p{p}" / PERIODS_FILE for p in range(plan.partitions)]
    if plan.reconstruct != "cpr" or not all(path.exists() for path in paths):
        return entry
    found = np.full(plan.devices, NOT_RECONSTRUCTED, dtype=np.int64)
    for path in paths:  # each device is reconstructed by its own partition only
        found = np.maximum(found, np.load(path))
    truth = true_periods(plan, device_keys(plan, 0, plan.devices))
    scored = found != NOT_RECONSTRUCTED
    correct = (found > 0) & (np.abs(found - truth) <= tolerance)
    if scored.any():
        entry["period_accuracy"] = float(correct[scored].sum() / scored.sum())
    return entry


def _cosines(values: np.ndarray, clean: np.ndarray, plan: BulkPlan) -> tuple[float, float]:
    """A reconstruction's cosine distance to the clean clipped stream, and a flat line's
    (``scenarios.runner.score_reconstructions``' rule, in [0, 1] units)."""
    truth = normalise(clean, plan.lo, plan.hi)
    return (
        cosine_distance(normalise(values, plan.lo, plan.hi), truth),
        cosine_distance(np.full(truth.shape, 0.5), truth),
    )


def _device_means(plan: BulkPlan, out: Path, chunk: int = 1 << 20) -> dict[str, float]:
    """Each device's mean estimate (physical units) from every partition's stored rows:
    the mechanism's ``estimate_mean`` (the mean of its per-value estimates), a chunk of
    rows at a time; devices with no stored row have none."""
    mechanism = SquareWave(plan.eps0, plan.mechanism)
    sums = np.zeros(plan.devices)
    counts = np.zeros(plan.devices, dtype=np.int64)
    dtype = stored_dtype(plan.batch_steps)
    for p in range(plan.partitions):
        path = out / f"p{p}" / "reports.bin"
        if not path.exists() or path.stat().st_size == 0:
            continue
        rows = np.memmap(path, dtype=dtype, mode="r")
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            device = part["device"].astype(np.int64)
            est = mechanism.estimate(np.asarray(part["values"]))
            sums += np.bincount(device, est.sum(axis=1), minlength=plan.devices)
            counts += np.bincount(device, minlength=plan.devices) * plan.batch_steps
        del rows
    seen = np.flatnonzero(counts)
    means = plan.lo + sums[seen] / counts[seen] * (plan.hi - plan.lo)
    return {plan.device_id(int(i)): float(m) for i, m in zip(seen, means, strict=True)}


def _results(plan, summaries, fleets, out: Path, broker, seconds, stream_seconds) -> dict:
    """results.json of a bulk run: the partitions' counts summed, the fleet-mean check
    against the shards' truth, the gateways' ledgers, clipping and memory."""
    totals, by_reason = _partition_totals(summaries)
    report_sum, count = _report_sums(plan, out)
    present = [f for f in fleets if f is not None]
    generated, mae = _fleet_mean_mae(plan, fleets, present, report_sum, count)
    rss_fleet = [f["peak_rss_mb"] if f else None for f in fleets]
    clipping, warnings = _clipping(plan, [*present, *generated])
    rss_coll = [s["peak_rss_mb"] for s in summaries]
    return {
        "kind": "bulk-stream",
        "plan": plan.to_dict(),
        "broker": broker,
        **totals,
        "rejections_by_reason": by_reason,
        "gateways": plan.gateways,
        "fleet": _fleet_totals(plan, fleets, present),
        "fleet_mean_mae": mae,
        # simulator-only: the share of raw readings [lo, hi] clipped (scenarios.clipping)
        "clipped_share": clipping["clipped_share"],
        "clipping": clipping,
        "warnings": warnings,
        "seconds": round(seconds, 3),
        "stream_seconds": round(stream_seconds, 3),
        "peak_rss_mb": {
            "collectors": rss_coll,
            "fleet_processes": rss_fleet,
            "total": round(sum(rss_coll) + sum(r or 0 for r in rss_fleet), 1),
        },
        "partitions": summaries,
    }


def _partition_totals(summaries) -> tuple[dict, dict[str, int]]:
    """The partitions' report counts summed, and their rejections by reason."""
    keys = ("reports_expected", "reports_received", "reports_lost", "reports_rejected",
            "rejected_resolved", "reports_duplicate", "reports_early", "messages")  # fmt: skip
    totals = {k: sum(s[k] for s in summaries) for k in keys}
    by_reason: dict[str, int] = {}
    for s in summaries:
        for reason, n in s["rejections_by_reason"].items():
            by_reason[reason] = by_reason.get(reason, 0) + n
    return totals, by_reason


def _report_sums(plan, out: Path) -> tuple[np.ndarray, np.ndarray]:
    """The per-step sums of the stored reports (int64, units of ``2**-REPORT_SUM_BITS``)
    and their counts, every partition's (``p<i>/estimates.npz``) added: exact integers,
    so the fleet mean does not depend on the order reports arrived in
    (``protocol.bulk``, "Fleet-mean sums")."""
    report_sum = np.zeros(plan.steps, dtype=np.int64)
    count = np.zeros(plan.steps, dtype=np.int64)
    for p in range(plan.partitions):
        with np.load(out / f"p{p}" / "estimates.npz") as data:
            report_sum += data["report_sum"]
            count += data["count"]
    return report_sum, count


def _fleet_mean_mae(plan, fleets, present, report_sum, count) -> tuple[list, float | None]:
    """The truth recomputed for the shards without outcome (``generated``), and the mean
    absolute error of the fleet-mean estimate (``protocol.bulk.fleet_means``) against the
    whole fleet's truth (None without an estimate at every step or without truth)."""
    generated = []
    if np.all(count > 0):  # a fleet mean to check: every shard's devices in its truth
        # a shard without outcome (it died, or was stopped): its devices' truth from the plan
        generated = [_generated_truth(plan, range(i, plan.gateways, len(fleets)))
                     for i, f in enumerate(fleets) if f is None]  # fmt: skip
    # a shard without a gateway (more device processes than gateways) has no truth: []
    sums = [f["truth_sum"] for f in (*present, *generated) if len(f["truth_sum"])]
    truth = np.sum(sums, axis=0) / plan.devices if sums else None
    mae = None
    if truth is not None and np.all(count > 0):
        mae = float(np.mean(np.abs(fleet_means(plan, report_sum, count) - truth)))
    return generated, mae


def _fleet_totals(plan, fleets, present) -> dict:
    """results.json ``fleet``: what the gateway shards that reported built, sent and
    charged to their ledgers."""
    return {
        "shards_missing": sum(f is None for f in fleets),
        "entries_built": sum(f["entries_built"] for f in present),
        "messages_sent": sum(f["messages_sent"] for f in present),
        "retransmitted_entries": sum(f["retransmitted_entries"] for f in present),
        "ledger_charges": sum(f["ledger_charges"] for f in present),
        "ledger_refusals": sum(f["ledger_refusals"] for f in present),
        "max_window_spent": max((f["max_window_spent"] for f in present), default=0.0),
        # devices whose ledgers the gateways that reported kept
        "ledger_devices": sum(f["devices"] for f in present),
        "eps": plan.eps,
    }


def _generated_truth(plan: BulkPlan, gateways) -> dict:
    """What ``gateways`` would have reported as truth had they streamed every batch
    (``gateway_outcome``'s ``truth_sum`` and ``truth_clip``), recomputed from the plan
    (``protocol.bulk.synthetic_values``, as the gateways generate): for a shard that left
    no outcome, so the fleet-mean check's truth still covers the whole fleet."""
    total = np.zeros(plan.steps)
    clip = [0, 0, math.inf, -math.inf]
    for g in gateways:
        first, count = plan.gateway_range(g)
        raw = synthetic_values(plan, device_keys(plan, first, count), 0, plan.steps)
        clean = np.clip(raw, plan.lo, plan.hi)
        total += clean.sum(axis=0)
        tally_clipping(clip, raw, clean)
    return {"truth_sum": total if clip[0] else [], "truth_clip": clip}


def _add_shard_failures(results: dict, plan: BulkPlan, failures: list[dict]) -> None:
    """results.json ``fleet.shards_failed``: each gateway shard that ended by itself
    without its outcome (killed, crashed; not one the runner stopped), with what its
    devices left unstored (``devices_unfinished``, ``reports_lost``: from the partitions'
    ``missing_batches``), and one ``warnings`` sentence each. The run went on with the
    other shards: the reports the collectors accepted are all stored, and those the dead
    shard never delivered are counted in ``reports_lost`` (docs/scaling.md, "A gateway
    shard that dies")."""
    lost_of = {}
    for part in results["partitions"]:
        lost_of.update(part.get("missing_batches") or {})
    prefix = len(plan.id_prefix)
    for failure in failures:
        shards = failure["shards"]
        unfinished = lost = 0
        for device, batches in lost_of.items():
            if (int(device[prefix:]) // plan.gateway_devices) % shards == failure["shard"]:
                unfinished += 1
                lost += len(batches)
        devices = sum(plan.gateway_range(g)[1] for g in failure["gateways"])
        failure |= {"devices": devices, "devices_unfinished": unfinished, "reports_lost": lost}
        failure["sentence"] = _shard_sentence(failure)
        results["warnings"].append(failure["sentence"])
    results["fleet"]["shards_failed"] = failures


def _shards_without_ledgers(plan: BulkPlan, fleets: list, failures: list[dict]) -> list[dict]:
    """The gateway shards that left no outcome, hence no ledgers (``shard``, ``shards``,
    ``gateways``, ``ended``): those that died (``failures``) and those the runner stopped
    after the stage closed (``fleet.shards_missing``), for ``reconstructed_accounts``."""
    ended = {f["shard"]: f["ended"] for f in failures}
    shards = len(fleets)
    return [
        {"shard": i, "shards": shards, "gateways": list(range(i, plan.gateways, shards)),
         "ended": ended.get(i, "stopped by the runner after the stream stage closed")}
        for i, fleet in enumerate(fleets)
        if fleet is None
    ]  # fmt: skip


def _shard_sentence(failure: dict) -> str:
    """``gateway shard 1 of 4 (pid 123, gateways g1, g5) ended with exit code -9
    (SIGKILL) 0.2 s into the stream: 10 of its 10 devices unfinished, 40 reports never
    stored (counted in reports_lost); the run went on with the other shards``."""
    gateways = failure["gateways"]
    named = ", ".join(f"g{g}" for g in gateways[:8]) + (
        f" and {len(gateways) - 8:,} more" if len(gateways) > 8 else ""
    )
    who = f"pid {failure['pid']}, " if failure["pid"] is not None else ""
    when = failure["seconds_into_stream"]
    when = "" if when is None else f" {when:g} s into the stream"
    others = "the other shards" if failure["shards"] > 1 else "nothing left to stream"
    return (
        f"gateway shard {failure['shard']} of {failure['shards']} ({who}gateways {named}) "
        f"{_ended_words(failure['ended'])}{when}: {failure['devices_unfinished']:,} of its "
        f"{failure['devices']:,} devices unfinished, {failure['reports_lost']:,} reports never "
        f"stored (counted in reports_lost); the run went on with {others}"
    )


def _ended_words(ended: str) -> str:
    """``ended with exit code -9 (SIGKILL)``, ``failed: RuntimeError: ...``."""
    return ended if ended.startswith("failed") else f"ended with {ended}"


def _clipping(plan: BulkPlan, fleets: list[dict]) -> tuple[dict, list[str]]:
    """``scenarios.clipping``'s entry and warnings from the gateways' ``truth_clip``."""
    clips = [f["truth_clip"] for f in fleets if f["truth_clip"][0]]
    tally = ClipTally(
        (plan.lo, plan.hi),
        "source.bounds",
        sum(c[0] for c in clips),
        sum(c[1] for c in clips),
        min((c[2] for c in clips), default=math.nan),
        max((c[3] for c in clips), default=math.nan),
    )
    return clipping_entry([tally])


def bulk_plan(scenario, run: str, seed: int | None = None) -> BulkPlan:
    """The ``BulkPlan`` of a scenario with ``[fleet] connection = "bulk"`` (checked on
    load by ``schema_checks._check_bulk_stream``, ``_check_bulk_sections`` and
    ``_check_bulk_source``): its fleet, stream, synthetic sine source, ``[cpr]``
    and ``[collector] partitions``. ``[collector] max_in_flight`` and ``credit_window``
    do not apply (a bulk gateway's flow control is ``BulkPlan.admit_window``)."""
    spec = scenario.spec
    config = scenario.stream_config(run)
    source = spec.source
    period = source.period
    period = (period, period) if isinstance(period, int) else tuple(period)
    return BulkPlan(
        run=run, devices=spec.fleet.devices, steps=config.steps,
        batch_steps=config.batch_steps, eps=config.eps, w=config.w,
        seed=spec.scenario.seed if seed is None else seed,
        gateway_devices=spec.fleet.gateway_devices, partitions=spec.collector.partitions,
        retransmit_after=config.retransmit_after, lo=config.lo, hi=config.hi,
        period=period, amplitude=source.amplitude, noise=source.noise, offset=source.offset,
        id_prefix=spec.fleet.id_prefix, mechanism=config.mechanism,
        step_seconds=spec.stream.step_seconds, reconstruct=spec.stream.reconstruct,
        cpr_min_period=spec.cpr.min_period, cpr_max_period=spec.cpr.max_period,
        cpr_min_cycles=spec.cpr.min_cycles,
    )  # fmt: skip


async def run_bulk_scenario(
    scenario,
    *,
    broker: str | Transport | None = None,
    out_dir: str | os.PathLike = "runs/latest",
    seed: int | None = None,
    run_id: str | None = None,
    progress=None,
    credentials: Credentials | None = None,
    shard_brokers: list[str] | None = None,
) -> dict:
    """``ldpfleet run`` of a bulk scenario: ``run_bulk`` of its plan with ``[fleet]
    shards`` gateway processes ("auto": one per core) on a real broker, all in this
    process on ``memory``; results.json is ``run_bulk``'s plus the fields the run summary
    reads (run, scenario, broker kind and url, stages, devices complete, missing
    batches)."""
    from ldpfleet.scenarios.runner import new_run_id

    _refuse_shard_brokers(shard_brokers)
    spec = scenario.spec
    broker_spec = broker or spec.broker.url
    run = (credentials.run if credentials else None) or run_id or new_run_id(scenario)
    plan = bulk_plan(scenario, run, seed)
    shards = spec.fleet.shards
    shards = (os.cpu_count() or 1) if shards == "auto" else shards
    out = Path(out_dir)
    transport = broker_spec if not isinstance(broker_spec, str) else None
    results = await run_bulk(
        plan,
        broker=broker_spec if isinstance(broker_spec, str) else "memory",
        out_dir=out,
        shards=shards,
        stage_timeout=spec.collector.stage_timeout,
        # only a run_timeout the file sets: the derived default (1.5 x stage_timeout + ...)
        # would cut a large bulk run's reconstruction, which the gateways' stage_timeout
        # does not bound (docs/results.md, "A bulk run")
        run_timeout=spec.scenario.run_timeout,
        finish_grace=spec.collector.finish_grace,
        transport=transport,
        credentials=credentials,
        auth=spec.broker.auth is not False,
        trace=spec.collector.trace,
        scenario_digest=digest_of(scenario.to_dict()),
        device_noise=spec.privacy.device_noise,
    )
    # after the run, off the loop, and not in the bench's (run_bulk's) timings and CPU
    await asyncio.to_thread(_add_stream_figures, results, plan, out, spec.cpr.period_tolerance)
    if progress is not None:
        progress(results["reports_received"], results["reports_expected"])
    _add_run_summary(results, scenario, plan, broker_spec)
    write_results(out / "results.json", results, indent=1)
    return results


def _refuse_shard_brokers(shard_brokers: list[str] | None) -> None:
    """A bulk run's gateways run on ``--broker`` only: ``--shard-broker`` is refused."""
    if shard_brokers:
        raise ParameterError(
            "bulk gateways run on --broker only; --shard-broker is not supported with "
            'fleet.connection = "bulk"',
            field="shard_brokers",
            limit='no --shard-broker with fleet.connection = "bulk"',
            value=shard_brokers,
        )


def _add_run_summary(results: dict, scenario, plan: BulkPlan, broker_spec) -> None:
    """Add to ``run_bulk``'s results the fields the run summary reads (run, scenario,
    broker kind and url, stages, devices complete, missing batches; ``run_bulk_scenario``)."""
    kind = broker_spec if broker_spec in ("memory", "embedded") else "mqtt"
    if not isinstance(broker_spec, str):
        kind = "transport"
    missing: dict[str, list[int]] = {}
    for part in results["partitions"]:
        missing |= part.get("missing_batches") or {}
    stages = {"stream": _stream_stage(results)}
    if results.get("reconstruction"):
        stages["reconstruct"] = {"status": "ok", "seconds": results["reconstruction"]["seconds"]}
    elif plan.reconstruct != "none":  # the run's deadline came first
        stages["reconstruct"] = {"status": "aborted", "seconds": None}
    devices_complete = sum(p.get("devices_complete", 0) for p in results["partitions"])
    url = broker_spec if isinstance(broker_spec, str) else None
    results["fleet"] |= {"connection": "bulk", "devices_run": plan.devices}
    results.update(
        run=plan.run,
        event_loop=loop_name(),
        scenario=scenario_header(scenario, plan.seed),
        broker={"kind": kind, "url": url, "auth": results.pop("auth"), "shard_brokers": None},
        devices=plan.devices,
        devices_complete=devices_complete,
        devices_unfinished=plan.devices - devices_complete,
        missing_batches=dict(sorted(missing.items())),
        # batches a gateway's ledger refused to privatise (never sent, not lost)
        reports_refused=results["fleet"]["ledger_refusals"],
        stages=stages,
        # the capabilities a bulk run refuses on load (docs/results.md, "A bulk run")
        secure_sum=None,
        gcdp=None,
        faults=None,
        # the runner's trace closed on "run closed" (a failed run writes no results.json)
        trace_complete=(results["trace"] or {}).get("recorder") == "bulk",
        trace_incomplete_reason=None,
    )


def _stream_stage(results: dict) -> dict:
    """results.json ``stages.stream``: ``complete`` when no report was lost, ``aborted``
    (the close reason: ``aborted.detail``) when the run's deadline cut it, else
    ``incomplete``."""
    aborted, lost = results.get("aborted"), results["reports_lost"]
    if aborted:
        status, reason = "aborted", aborted["detail"]
    elif lost == 0:
        status, reason = "complete", COMPLETE_REASON
    else:
        status, reason = "incomplete", f"the gateways ended with {lost:,} reports never stored"
    failed = [f["sentence"] for f in (results.get("fleet") or {}).get("shards_failed") or []]
    if failed and not aborted:
        reason = "; ".join([reason, *failed])
    return {"status": status, "seconds": results["stream_seconds"], "close_reason": reason}


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ldpfleet.scenarios.bulk_run")
    parser.add_argument("role", choices=("collector", "gateways"))
    parser.add_argument("plan")
    parser.add_argument("--broker", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--partition", type=int, default=0)
    parser.add_argument("--shard", default="0/1")
    parser.add_argument("--trace", default="none", choices=("all", "control", "none"))
    parser.add_argument("--trace-path", default=None)
    parser.add_argument("--scenario-digest", default="")
    parser.add_argument("--device-noise", default="seeded", choices=DEVICE_NOISE)
    args = parser.parse_args(argv)
    from ldpfleet.scenarios import loop

    plan = BulkPlan.from_dict(json.loads(Path(args.plan).read_text()))
    transport = MqttTransport(args.broker)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.role == "collector":

        def ready() -> None:
            print("ready", flush=True)
            _release_stdout()

        served = run_bulk_collector(
            transport,
            plan,
            args.partition,
            out,
            on_ready=ready,
            trace=args.trace,
            trace_path=args.trace_path,
            scenario_digest=args.scenario_digest or None,
        )
        try:
            loop.run(cancelled_on_sigterm(served))
        except asyncio.CancelledError:
            return TERMINATED
        return 0
    index, count = (int(x) for x in args.shard.split("/"))
    gateways = range(index, plan.gateways, count)
    try:
        gateways_run = run_bulk_gateways(transport, plan, gateways, device_noise=args.device_noise)
        outcome = loop.run(cancelled_on_sigterm(gateways_run))
    except asyncio.CancelledError:
        return TERMINATED
    (out / "outcome.json").write_text(json.dumps(outcome))
    return 0


TERMINATED = 128 + signal.SIGTERM  # a child's exit code when the runner stopped it


def _release_stdout() -> None:
    """Point this collector's stdout at /dev/null once it said ``ready``: the runner's
    pipe then closes when this process ends, whoever it forked. asyncio's
    ``Process.wait()`` (3.11) returns only once the child's pipes are closed, and the
    reconstruction pool's workers, forked later, held it: a collector killed with SIGKILL
    while reconstructing was never seen to end."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    raise SystemExit(_main())
