"""``ldpfleet run`` built from the two programs: the collector as its own OS process.

``run_split`` does what an operator does by hand (docs/separate-processes.md): it opens the
run's broker (starts the embedded one, or joins a URL), starts the collector side
(``python -m ldpfleet.scenarios.side_process collector``, its own process, with the trace
recorder), runs the fleet side (shard 0 in this process, shards 1..k-1 as processes of
their own, shard i on ``shard_brokers[i % n]``), waits for both, and merges their
directories (``scenarios.merge``) into OUT: the results.json and ledger.json that the
in-process runner writes for the same seed, with the trace and the store.

Layout of OUT: ``collector/`` (the collector side's own outputs and ``collector.log``),
``fleet-i-of-k/`` (each shard's ledger.json and outcomes.json, and ``fleet.log`` for the
shard processes), and the merged run at the top (``trace.sqlite`` and ``collector.sqlite``
are hard links to the collector's). results.json ``side_processes`` names each process, its
exit status and its log.

With ``[collector] partitions = P > 1`` the collector side is a coordinator process
(``coordinator/``) and P partition workers (``partition-p-of-P/``, ``scenarios.coordinator``);
``merge_partitions`` unites them into ``collector/`` before the usual merge, and each
worker's trace and store are linked into OUT as ``trace-p{p}.sqlite`` and
``collector-p{p}.sqlite`` (``trace.sqlite`` is the coordinator's: ``ctl/``, ``rel/``, ``svc/``).

The in-memory broker lives in one process, and a one-collector ``[faults] hostile_messages``
run holds the collector's stage open from its side task: those run in one process
(``scenarios.runner.run_scenario``); ``runs_split`` says which. A partitioned hostile run
is split: fleet shard 0 (in this process) attacks, and each worker holds its stage until it
handled its share of the flood.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.select import BrokerInfo, open_broker
from ldpfleet.broker.transport import Transport
from ldpfleet.collector.readiness import join_listener
from ldpfleet.devices.rendezvous import RendezvousError
from ldpfleet.scenarios.jsonout import write_results
from ldpfleet.scenarios.merge import merge_partition_dirs, merge_run
from ldpfleet.scenarios.runner import fresh_run_outputs, new_run_id, run_credentials
from ldpfleet.scenarios.schema import LoadedScenario
from ldpfleet.scenarios.shards import child_of_the_run, log_tail, stop_process
from ldpfleet.scenarios.side_process import MODULE as SIDE_MODULE
from ldpfleet.scenarios.sides import fleet_side, scenario_kind

__all__ = ["SplitRunFailed", "run_split", "runs_split"]

COLLECTOR_DIR = "collector"
COORDINATOR_DIR = "coordinator"
LOG_TAIL = 6  # lines of a failed process's log quoted in the sentence


REFUSED = 2  # a side process's exit status for bad input (scenarios.side_process)


class SplitRunFailed(RuntimeError):
    """The collector process ended without its outputs; ``sentence`` says why."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


class SplitRunRefused(RuntimeError):
    """The collector side refused the run (exit status ``REFUSED``, no results): a refusal
    only the run can make, e.g. a given θ above the generated graph's maximum degree.
    ``sentence`` is its own ``error:`` line without the label, the one the in-process
    runner raises for the same scenario; the run's pieces are removed from OUT."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


def runs_split(scenario: LoadedScenario, broker: str | Transport | None) -> bool:
    """Whether ``ldpfleet run`` runs ``scenario`` on ``broker`` as separate processes: every
    real broker (embedded or a URL), except a one-collector run whose ``[faults]`` inject
    hostile messages (the attacker holds the collector's stage open in-process until its
    flood is handled). A partitioned hostile run is split: fleet shard 0 attacks and each
    worker holds its own stage until it handled its share (``devices.hostile``)."""
    spec = broker or scenario.spec.broker.url
    if not isinstance(spec, str) or spec == "memory":
        return False
    if scenario.bulk:  # bulk gateways start their own processes (scenarios/bulk_run.py)
        return False
    faults = scenario.spec.faults
    hostile = faults is not None and faults.hostile_messages
    return not hostile or scenario.spec.collector.partitions > 1


@dataclass
class _Processes:
    """What results.json ``side_processes`` records."""

    collector: dict = field(default_factory=dict)
    fleet_shards: dict = field(default_factory=dict)
    partitions: dict = field(default_factory=dict)  # P > 1: the workers


def _shard_count(scenario: LoadedScenario, broker_kind: str) -> int:
    if scenario.spec.cadr is not None:
        return max(1, scenario.spec.cadr.processes)
    return scenario.fleet_shards(broker_kind)


def _scenario_file(scenario: LoadedScenario, out: Path) -> Path:
    """The scenario as the child processes read it: its file, or (parsed from text) a copy."""
    if scenario.path is not None:
        return scenario.path
    if scenario.text is None:
        raise ValueError("a run in separate processes needs the scenario's file or text")
    path = out / "scenario.toml"
    path.write_text(scenario.text)
    return path


def _clear(out: Path) -> None:
    """Remove a previous run's pieces from OUT: only folders holding nothing but a run's
    files (``runner.remove_run_piece``): ``ldpfleet run quickstart --out .`` removed a
    user's own ``collector/`` folder (a package, in a checkout of this repository) whole."""
    fresh_run_outputs(out)
    for stale in [*out.glob("trace-p*.sqlite"), *out.glob("collector-p*.sqlite")]:
        stale.unlink()


def _side_command(side: str, scenario_file: Path, url: str, run: str, out: Path, seed: int,
                  credentials_file: Path | None, *extra: str,
                  scenario_noise: str = "seeded") -> list[str]:  # fmt: skip
    command = [sys.executable, "-m", SIDE_MODULE, side, str(scenario_file)]
    command += ["--broker", url, "--run", run, "--out", str(out), "--seed", str(seed)]
    # the fleet's noise source (devices.noise_entropy), which --device-noise may have set
    command += ["--device-noise", scenario_noise]
    if credentials_file is not None:
        command += ["--credentials", str(credentials_file)]
    return command + list(extra)


def _tail(path: Path) -> str:
    return " | ".join(log_tail(path, LOG_TAIL))


async def _spawn(command: list[str], log: Path, *, pipe: bool) -> asyncio.subprocess.Process:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as handle:  # the child keeps its own descriptor
        return await asyncio.create_subprocess_exec(
            *command,
            stdout=asyncio.subprocess.PIPE if pipe else handle,
            stderr=handle,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=child_of_the_run,
            start_new_session=True,  # Ctrl-C reaches the runner only (shards.child_of_the_run)
        )


async def _read_collector(
    process: asyncio.subprocess.Process,
    log: Path,
    progress: Callable[[int, int], None] | None,
    stage_done: Callable[[str, float], None] | None,
) -> None:
    """Follow the collector's JSON lines (side_process): progress and finished stages."""
    assert process.stdout is not None
    with log.open("a") as other:
        async for raw in process.stdout:
            line = raw.decode(errors="replace").strip()
            try:
                document = json.loads(line)
            except ValueError:
                document = None
            if not isinstance(document, dict):
                other.write(line + "\n")
            elif "progress" in document and progress is not None:
                progress(*document["progress"])
            elif "joined" in document:
                listener = join_listener.get()
                if listener is not None:
                    listener(*document["joined"])
            elif "stage" in document and stage_done is not None:
                stage_done(document["stage"], document["seconds"])


async def _local_shard(scenario, url, run, shard, out, seed, credentials, wait_timeout) -> str:
    """Shard ``shard`` in this process; returns how it ended (``"done"`` or a sentence)."""
    try:
        await fleet_side(
            scenario, url, run, shard, out, seed=seed, credentials=credentials,
            wait_timeout=wait_timeout,
        )  # fmt: skip
    except RendezvousError as error:
        return error.sentence
    except Exception as error:
        cadr = sys.modules.get("ldpfleet.scenarios.cadr_sides")
        if cadr is not None and isinstance(error, cadr.CadrSideStopped):
            return str(error)
        raise
    return "done"


async def run_split(
    scenario: LoadedScenario,
    *,
    broker: str | None = None,
    out_dir: str | Path = "runs/latest",
    seed: int | None = None,
    run_id: str | None = None,
    credentials: Credentials | None = None,
    shard_brokers: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    stage_done: Callable[[str, float], None] | None = None,
    wait_timeout: float = 60.0,
) -> dict:
    """Run ``scenario`` as a collector process and fleet shards, merge their outputs into
    ``out_dir`` (module docstring); returns the merged results. Raises ``SplitRunFailed``
    when the collector process wrote no results (the sentence quotes its log)."""
    broker_spec = broker or scenario.spec.broker.url
    if not runs_split(scenario, broker_spec):
        raise ValueError(f"{broker_spec!r} runs in one process (scenarios.runner.run_scenario)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _clear(out)
    run = (credentials.run if credentials else None) or run_id or new_run_id(scenario)
    seed = scenario.spec.scenario.seed if seed is None else seed
    kind = scenario_kind(scenario)
    devices = scenario.device_ids() if kind != "cadr" else None
    creds = run_credentials(scenario, broker_spec, run, credentials, devices=devices)
    split = _SplitRun(scenario, out, run, seed, creds, _scenario_file(scenario, out), wait_timeout)
    async with open_broker(broker_spec, credentials=creds) as (_, split.info):
        with tempfile.TemporaryDirectory(prefix="ldpfleet-auth-") as private:
            split.secret = creds.save(Path(private) / "credentials.json") if creds else None
            await split.start(shard_brokers or [split.info.url], progress, stage_done)
            await split.wait()
    split.record_fleet_shards()
    split.check_refused()
    split.check_collector_wrote()
    return split.results(shard_brokers)


@dataclass
class _SplitRun:
    """One split run's processes and what they left (``run_split``'s stages share it):
    the collector process (or coordinator) and its partition workers, the fleet shards
    (0 in this process, the others as processes), and how the run ended."""

    scenario: LoadedScenario
    out: Path
    run: str
    seed: int
    creds: Credentials | None
    scenario_file: Path
    wait_timeout: float
    wall: float = field(default_factory=time.perf_counter)
    info: BrokerInfo | None = None  # once the broker is open
    secret: Path | None = None  # the credentials file the child processes read
    shards: int = 1
    processes: _Processes = field(default_factory=lambda: _Processes())
    collector: asyncio.subprocess.Process | None = None
    workers: dict[int, asyncio.subprocess.Process] = field(default_factory=dict)
    children: dict[int, asyncio.subprocess.Process] = field(default_factory=dict)
    fleet_dirs: list[Path] = field(default_factory=list)
    local: asyncio.Task | None = None
    reading: asyncio.Task | None = None
    failed: dict[str, str] | None = None
    timed_out: bool = False
    ended: dict[int, str] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        return self.scenario.spec.collector.partitions

    @property
    def collector_dir(self) -> Path:
        return self.out / (COLLECTOR_DIR if self.partitions == 1 else COORDINATOR_DIR)

    @property
    def collector_log(self) -> Path:
        return self.collector_dir / "collector.log"

    @property
    def partition_dirs(self) -> list[Path]:
        return [self.out / f"partition-{p}-of-{self.partitions}" for p in range(self.partitions)]

    def _command(self, side: str, url: str, out: Path, *extra: str) -> list[str]:
        return _side_command(side, self.scenario_file, url, self.run, out, self.seed,
                             self.secret, *extra,
                             scenario_noise=self.scenario.spec.privacy.device_noise)  # fmt: skip

    async def start(
        self,
        urls: list[str],
        progress: Callable[[int, int], None] | None,
        stage_done: Callable[[str, float], None] | None,
    ) -> None:
        """Spawn the collector side (the collector, or the coordinator and its partition
        workers) and fleet shards 1..k-1; run shard 0 in this process."""
        self.shards = _shard_count(self.scenario, self.info.kind)
        side = "collector" if self.partitions == 1 else "coordinator"
        self.collector = await _spawn(
            self._command(side, self.info.url, self.collector_dir, "--progress",
                          "--fleet-timeout", str(self.wait_timeout)),
            self.collector_log,
            pipe=True,
        )  # fmt: skip
        dirs = self.partition_dirs
        for p in range(self.partitions) if self.partitions > 1 else ():
            self.workers[p] = await _spawn(
                self._command("partition", urls[p % len(urls)], dirs[p], "--partition",
                              f"{p}/{self.partitions}"),
                dirs[p] / "partition.log",
                pipe=False,
            )  # fmt: skip
        self.reading = asyncio.create_task(
            _read_collector(self.collector, self.collector_log, progress, stage_done)
        )
        await self._start_fleet(urls)

    async def _start_fleet(self, urls: list[str]) -> None:
        """Fleet shards 1..k-1 as processes, shard 0 as a task of this process."""
        shards = self.shards
        self.fleet_dirs = [self.out / f"fleet-{i}-of-{shards}" for i in range(shards)]
        for i in range(1, shards):
            self.children[i] = await _spawn(
                self._command("fleet", urls[i % len(urls)], self.fleet_dirs[i], "--shard",
                              f"{i}/{shards}", "--wait-timeout", str(self.wait_timeout)),
                self.fleet_dirs[i] / "fleet.log",
                pipe=False,
            )  # fmt: skip
        self.local = asyncio.create_task(
            _local_shard(self.scenario, urls[0], self.run, (0, shards), self.fleet_dirs[0],
                         self.seed, self.creds, self.wait_timeout)
        )  # fmt: skip

    async def wait(self) -> None:
        """Wait for the collector side (or a failed fleet, or the run's deadline), then
        the fleet; every process is stopped on the way out."""
        assert self.collector is not None and self.local is not None
        try:
            await self._wait_collector()
            self._record_collector_side()
            await self.reading
            grace = 0.0 if self._refusal() else None  # no run to finish: stop the fleet
            self.ended = await _finish_fleet(self.scenario, self.local, self.children, grace)
        finally:
            for child in [*self.children.values(), *self.workers.values()]:
                await stop_process(child)
            await stop_process(self.collector)
            self.local.cancel()
            await asyncio.gather(self.local, self.reading, return_exceptions=True)

    async def _wait_collector(self) -> None:
        """Until the collector ends, the fleet failed (``failed``) or ``run_timeout``
        passed (``timed_out``: the collector, or a partition worker, was stopped)."""
        limit = _run_timeout(self.scenario)
        clock = asyncio.get_running_loop().time  # the clock asyncio.timeout reads
        started = clock()
        try:
            async with asyncio.timeout(limit):
                self.failed = await _collector_or_failed_fleet(
                    self.scenario, self.collector, self.local, self.children, self.fleet_dirs
                )
        except TimeoutError:
            self.failed = None
        left = None if limit is None else max(0.0, limit - (clock() - started))
        self.timed_out = self.failed is None and not await _collector_within(self.collector, left)
        refused = self.collector.returncode == REFUSED and not self.timed_out
        for worker in self.workers.values():
            if self.failed or refused:  # the coordinator stopped: its partitions too
                await stop_process(worker)
            else:
                self.timed_out |= not await _collector_within(worker, _run_timeout(self.scenario))

    def _record_collector_side(self) -> None:
        """results.json ``side_processes``: the collector's and the workers' exits."""
        self.processes.collector = {
            "pid": self.collector.pid,
            "exit_code": self.collector.returncode,
            "log": str(self.collector_log),
        }
        dirs = self.partition_dirs
        self.processes.partitions = {
            str(p): {"pid": w.pid, "exit_code": w.returncode,
                     "log": str(dirs[p] / "partition.log")}
            for p, w in self.workers.items()
        }  # fmt: skip

    def record_fleet_shards(self) -> None:
        """results.json ``side_processes.fleet_shards``: how each shard ended."""
        children, ended = self.children, self.ended
        self.processes.fleet_shards = {
            str(i): {"in_process": i == 0, "ended": ended.get(i)}
            | ({"pid": children[i].pid, "exit_code": children[i].returncode,
                "log": str(self.fleet_dirs[i] / "fleet.log")} if i in children else {})
            for i in range(self.shards)
        }  # fmt: skip

    def _refusal(self) -> str | None:
        """The collector side's refusal (its ``error:`` line without the label) when the
        collector process, or a partition worker, ended with ``REFUSED`` and wrote no
        results; else None."""
        sides = [(self.collector, self.collector_dir, self.collector_log)]
        sides += [(self.workers[p], d, d / "partition.log")
                  for p, d in enumerate(self.partition_dirs) if p in self.workers]  # fmt: skip
        for process, directory, log in sides:
            if process is None or process.returncode != REFUSED:
                continue
            if (directory / "results.json").exists():
                continue
            said = [line for line in log_tail(log, LOG_TAIL) if line.startswith("error: ")]
            if said:
                return said[-1].removeprefix("error: ").strip()
        return None

    def check_refused(self) -> None:
        """``SplitRunRefused`` when the collector side refused the run; OUT then keeps
        nothing of it (as the in-process runner, which refuses before writing)."""
        sentence = None if self.timed_out else self._refusal()
        if sentence is None:
            return
        _clear(self.out)
        if self.scenario.path is None and self.scenario_file.parent == self.out:
            self.scenario_file.unlink(missing_ok=True)  # the copy for the child processes
        raise SplitRunRefused(sentence)

    def check_collector_wrote(self) -> None:
        """``SplitRunFailed`` when the collector process wrote no results (why: its log)."""
        if (self.collector_dir / "results.json").exists():
            return
        log = self.collector_log
        if self.timed_out:
            raise SplitRunFailed(
                f"the run did not finish within run_timeout ({_run_timeout(self.scenario):g} "
                f"s), which stopped the collector process of run {self.run} before it had "
                "written anything (a process takes a few seconds to start and connect; give "
                f"run_timeout more): {_tail(log) or 'its log is empty'} ({log})"
            )
        raise SplitRunFailed(
            f"the collector process of run {self.run} ended (exit code "
            f"{self.processes.collector['exit_code']}) without writing its results: "
            f"{_tail(log) or 'its log is empty'} ({log})"
        )

    def results(self, shard_brokers: list[str] | None) -> dict:
        """Merge the pieces into OUT (the partitions first); say why the run was cut short."""
        out, collector_dir = self.out, self.collector_dir
        if self.workers:
            collector_dir = _merge_partitions(
                self.scenario, out, collector_dir, self.partition_dirs, self.run
            )
        results = _merged(out, collector_dir, self.fleet_dirs, self.info, self.creds,
                          shard_brokers, self.processes, self.wall)  # fmt: skip
        if self.failed:
            results["aborted"] = {
                "reason": "device_errors",
                "device_errors": self.failed,
                "detail": f"{_failed_sentence(self.failed)}; the collector could hear nothing "
                "more and was stopped after finish_grace, the outputs hold what had arrived",
            }
            write_results(out / "results.json", results, indent=2)
        if self.timed_out:
            limit = _run_timeout(self.scenario)
            results["aborted"] = {
                "reason": "run_timeout",
                "run_timeout": limit,
                "detail": f"the run did not finish within run_timeout ({limit:g} s); the "
                "collector process was stopped and the outputs hold what had arrived",
            }
            write_results(out / "results.json", results, indent=2)
        return results


def _merge_partitions(scenario, out: Path, coordinator_dir: Path, partition_dirs, run) -> Path:
    """Unite the coordinator's and the workers' directories into ``collector/``; link each
    worker's trace and store into OUT (``scenarios.merge.merge_partition_dirs``)."""
    for directory in partition_dirs:
        if not (directory / "results.json").exists():
            log = directory / "partition.log"
            raise SplitRunFailed(
                f"partition worker {directory.name} of run {run} ended without writing its "
                f"results: {_tail(log) or 'its log is empty'} ({log})"
            )
    return merge_partition_dirs(coordinator_dir, partition_dirs, out)


def _run_timeout(scenario: LoadedScenario) -> float | None:
    """The whole run's deadline (``[scenario] run_timeout``; CADR-LDP runs are bounded by
    their stage deadlines instead, as in the one-process runner)."""
    return None if scenario.spec.cadr is not None else scenario.run_timeout()


async def _collector_or_failed_fleet(
    scenario: LoadedScenario,
    collector: asyncio.subprocess.Process,
    local: asyncio.Task,
    children: dict,
    fleet_dirs: list[Path],
) -> dict[str, str] | None:
    """Wait for the collector process to end by itself (returns None), or for every fleet
    shard to end with a device that FAILED (an exception, e.g. its mechanism plugin raising
    on its stream; the shards' outcomes.json say which): no more reports can come, so the
    collector gets ``finish_grace`` more and is then stopped (SIGTERM: it writes what it
    persisted; the failed devices' batches count as lost), as the one-process runner closes
    its collector; returns ``{device: error}``. Without it the run waited for the stage
    deadline, or said "no fleet joined" when every device had failed before its hello."""
    ending = asyncio.ensure_future(collector.wait())
    shards = [local, *(asyncio.ensure_future(c.wait()) for c in children.values())]
    try:
        await asyncio.wait([ending, asyncio.gather(*shards, return_exceptions=True)],
                           return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        if ending.done():
            return None
        failed = _device_errors(fleet_dirs)
        if not failed:
            return None
        await asyncio.wait({ending}, timeout=scenario.spec.collector.finish_grace)
        if ending.done():
            return None
        await stop_process(collector)
        return failed
    finally:
        for task in shards[1:]:
            task.cancel()


def _device_errors(fleet_dirs: list[Path]) -> dict[str, str]:
    """``{device: error}`` of the devices that failed, from the shards' outcomes.json."""
    failed: dict[str, str] = {}
    for directory in fleet_dirs:
        try:
            document = json.loads((directory / "outcomes.json").read_text())
        except (OSError, ValueError):
            continue
        devices = document.get("devices") if isinstance(document, dict) else None
        for entry in devices if isinstance(devices, list) else ():
            if isinstance(entry, dict) and entry.get("error"):
                failed[str(entry.get("device"))] = str(entry["error"])
    return failed


def _failed_sentence(failed: dict[str, str]) -> str:
    """``3 device(s) failed (the first, d0000: ValueError: ...; the other 2 in results.json
    aborted.device_errors)``: one error quoted (a plugin failing everywhere repeated the
    same sentence per device), the rest counted."""
    device, error = min(failed.items())
    if len(failed) == 1:
        return f"1 device(s) failed ({device}: {error})"
    return (
        f"{len(failed)} device(s) failed (the first, {device}: {error}; the other "
        f"{len(failed) - 1} in results.json aborted.device_errors)"
    )


async def _collector_within(collector: asyncio.subprocess.Process, timeout: float | None) -> bool:
    """Wait for the collector process to end; past ``timeout`` stop it (SIGTERM: it writes
    what it persisted) and return False."""
    try:
        async with asyncio.timeout(timeout):
            await collector.wait()
        return True
    except TimeoutError:
        await stop_process(collector)
        return False


async def _finish_fleet(
    scenario, local: asyncio.Task, children: dict, grace: float | None = None
) -> dict[int, str]:
    """The collector has ended: the shards get ``grace`` (default ``finish_grace``) to hear
    its last messages, then they are stopped (each writes what it did). Returns how each
    shard ended."""
    grace = scenario.spec.collector.finish_grace if grace is None else grace
    waiting = [local, *(asyncio.ensure_future(c.wait()) for c in children.values())]
    await asyncio.wait(waiting, timeout=grace)
    ended: dict[int, str] = {}
    if local.done() and not local.cancelled() and local.exception() is None:
        ended[0] = local.result()
    else:
        ended[0] = "stopped after finish_grace"
    for i, child in children.items():
        ended[i] = (
            "stopped after finish_grace"
            if child.returncode is None
            else "done"
            if child.returncode == 0
            else f"exit code {child.returncode}"
        )
    return ended


def _merged(out, collector_dir, fleet_dirs, info, creds, shard_brokers, processes, wall) -> dict:
    """Merge the pieces into OUT, record the broker and the processes; returns results."""
    written = [d for d in fleet_dirs if (d / "outcomes.json").exists()]
    merge_run(collector_dir, written, out)
    results = json.loads((out / "results.json").read_text())
    if isinstance(results.get("broker"), dict):
        results["broker"] = {
            "kind": info.kind,
            "url": info.url,
            "auth": creds is not None,
            "shard_brokers": shard_brokers,
        }
    else:  # CADR-LDP records the broker's kind
        results["broker"] = info.kind
    results["side_processes"] = {
        "collector": processes.collector,
        "fleet_shards": processes.fleet_shards,
    }
    shards = (
        results.get("fleet", {}).get("shards") if isinstance(results.get("fleet"), dict) else None
    )
    if isinstance(shards, dict) and "exit_codes" in shards:  # a shard in this process: null
        shards["exit_codes"] = {
            int(i): entry.get("exit_code") for i, entry in processes.fleet_shards.items()
        }
    if processes.partitions:
        results["side_processes"]["partitions"] = processes.partitions
    results["seconds"] = time.perf_counter() - wall
    write_results(out / "results.json", results, indent=2)
    return results
