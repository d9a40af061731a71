"""``ShardedFleet``: a run's devices as k device-shard processes (``scenarios.fleet_shard``).

One Python process is bound by its MQTT client's CPU cost per message (docs/scaling.md);
``[fleet] shards = k`` splits the devices over k processes (device ``i`` runs in shard
``i % k``) that connect to the run's broker like any other client, while the collector and
the recorder stay in the runner's process. Each shard (``python -m
ldpfleet.scenarios.fleet_shard SCENARIO --shard i/k ...``, what ``ldpfleet fleet`` runs)
writes ``outcomes.json`` and
``ledger.json`` into ``OUT/shards/fleet-i-of-k/`` and its log next to them; this object
gathers them into the same ``DeviceOutcome`` list an in-process ``Fleet`` returns, so the
results of a sharded run are those of the same run in one process (privatised values
depend only on the seed and the device index).

The truth the runner scores against (clean streams, true means and periods) is computed
here from the fleet's configuration, as each device does, without building the devices.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path

import msgspec
import numpy as np
from ldpfleet.devices.fleet import ClipTally, DeviceOutcome, device_truth
from ldpfleet.scenarios.plans import fleet_config
from ldpfleet.scenarios.schema import LoadedScenario

log = logging.getLogger(__name__)

SHARD_MODULE = "ldpfleet.scenarios.fleet_shard"  # what each shard process runs
STOP_GRACE = 60.0  # seconds a shard gets after SIGTERM to write its outcomes (50,000
# devices take tens of seconds to tear down)


async def cancelled_on_sigterm(coroutine):
    """Run ``coroutine`` in a child process of the run; SIGTERM (the runner stopping it,
    ``stop_process``) cancels it, so its ``finally`` blocks run: a side writes what it did
    so far, a bulk collector stops its reconstruction pool's workers (SIGTERM's default
    action killed the process alone and left them running, orphaned)."""
    task = asyncio.current_task()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    return await coroutine


def child_of_the_run() -> None:
    """In every side and shard process a run starts, before exec: die with the runner
    (``die_with_parent``) and ignore SIGINT. Ctrl-C reaches the whole foreground process
    group; the runner stops its children itself (``stop_process``: SIGTERM, each writes
    what it did), so no child may end on the SIGINT before the runner has seen it (a
    CADR-LDP run answered Ctrl-C with "the collector process ... ended (exit code 130)
    without writing its results" instead of "interrupted"). Under uvloop the ignored
    SIGINT does not survive the spawn (libuv resets every signal in the child: helper M),
    so the runner also starts its children in sessions of their own
    (``start_new_session``): the terminal's Ctrl-C reaches the runner only."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the runner dies, however it dies
    (Linux ``prctl(PR_SET_PDEATHSIG)``; elsewhere a no-op), so no shard outlives its run."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


async def stop_process(process: asyncio.subprocess.Process) -> None:
    """SIGTERM (a shard or side writes what it did so far), then SIGKILL after
    ``STOP_GRACE``; returns once the process has ended."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(process.wait()), STOP_GRACE)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


def log_tail(path: Path, count: int) -> list[str]:
    """The last ``count`` non-blank lines of a process's log (none if it is missing)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-count:]


# results.json ``fleet.shards``: one shape for every sharded fleet (docs/results.md); a key
# that does not apply to how the shards ran is null
SHARD_ENTRY_KEYS = (
    "count",
    "peak_rss_mb",
    "total_peak_rss_mb",
    "seconds",
    "exit_codes",
    "secure_sum_stopped",
    "said_done",
)


def shards_entry(
    count: int,
    peak_rss_mb: dict[int, float | None],
    *,
    seconds: dict[int, float] | None = None,
    exit_codes: dict[int, int | None] | None = None,
    secure_sum_stopped: dict[int, str | None] | None = None,
    said_done: dict[int, bool] | None = None,
) -> dict:
    """results.json ``fleet.shards`` of ``count`` device shards, every map keyed by shard
    index: peak RSS, and where they apply the seconds and exit codes of the shards the
    runner started (``[fleet] shards``), and for a split run's fleet sides why each one's
    secure-sum stage stopped and whether it said its devices are done
    (``protocol.fleet_done``).

    Returns:
        A dict with exactly the keys of ``SHARD_ENTRY_KEYS`` (null where one does not
        apply)."""
    return {
        "count": count,
        "peak_rss_mb": peak_rss_mb,
        "total_peak_rss_mb": round(sum(v or 0 for v in peak_rss_mb.values()), 1),
        "seconds": seconds,
        "exit_codes": exit_codes,
        "secure_sum_stopped": secure_sum_stopped,
        "said_done": said_done,
    }


class ShardedFleet:
    """The devices of one run, as ``shards`` processes against ``broker_url``."""

    def __init__(
        self,
        scenario: LoadedScenario,
        broker_url: str,
        run: str,
        *,
        seed: int,
        shards: int,
        out_dir: Path,
        credentials_path: Path | None = None,
        shard_brokers: list[str] | None = None,
    ) -> None:
        self.scenario = scenario
        self.broker_url = broker_url
        self.run_id = run
        self.seed = seed
        self.shards = shards
        self.out_dir = Path(out_dir) / "shards"
        self.credentials_path = credentials_path
        # shard i connects to shard_brokers[i % n] (nodes of a broker cluster), by default
        # to the run's broker
        self.shard_brokers = shard_brokers or [broker_url]
        config = fleet_config(scenario, run, seed)
        self.device_ids = config.device_ids
        self.true_means: dict[str, float] = {}
        self.true_periods: dict[str, int | None] = {}
        self.clean: dict[str, np.ndarray] = {}
        self.clipping: dict[str, ClipTally] = {}  # simulator-only: what the bounds clipped
        lo, hi = config.stream.lo, config.stream.hi
        for index, device in enumerate(config.device_ids):
            clean, period, mean, tally = device_truth(config.source, seed, index, lo, hi)
            self.clean[device], self.true_periods[device] = clean, period
            self.true_means[device], self.clipping[device] = mean, tally
        self.crashes = config.crash_plan()
        self.crashed: dict[str, dict] = {}
        self.connect_seconds: float | None = None
        self.shard_seconds: dict[int, float] = {}
        self.exit_codes: dict[int, int | None] = {}
        self.peak_rss_mb: dict[int, float] = {}
        self._outcomes: dict[int, list[DeviceOutcome]] = {}
        self._warned: set[int] = set()

    def _shard_dir(self, index: int) -> Path:
        return self.out_dir / f"fleet-{index}-of-{self.shards}"

    def _command(self, index: int, scenario_path: Path) -> list[str]:
        command = [sys.executable, "-m", SHARD_MODULE, str(scenario_path)]
        broker = self.shard_brokers[index % len(self.shard_brokers)]
        command += ["--broker", broker, "--run", self.run_id]
        command += ["--shard", f"{index}/{self.shards}", "--seed", str(self.seed)]
        command += ["--out", str(self._shard_dir(index))]
        command += ["--device-noise", self.scenario.spec.privacy.device_noise]
        if self.credentials_path is not None:
            command += ["--credentials", str(self.credentials_path)]
        return command

    def _write_scenario(self) -> Path:
        """The scenario as the shards read it: its file, or (parsed from text) a copy."""
        if self.scenario.path is not None:
            return self.scenario.path
        if self.scenario.text is None:
            raise ValueError("a sharded fleet needs the scenario's file or text")
        path = self.out_dir / "scenario.toml"
        path.write_text(self.scenario.text)
        return path

    async def run(self) -> list[DeviceOutcome]:
        """Start every shard, wait for all; a cancelled run stops them (SIGTERM: each
        writes what its devices did) and keeps what they wrote."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        scenario_path = self._write_scenario()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        started = time.perf_counter()
        processes: dict[int, asyncio.subprocess.Process] = {}
        logs = []
        try:
            for index in range(self.shards):
                self._shard_dir(index).mkdir(parents=True, exist_ok=True)
                handle = (self._shard_dir(index) / "fleet.log").open("wb")
                logs.append(handle)
                processes[index] = await asyncio.create_subprocess_exec(
                    *self._command(index, scenario_path),
                    stdout=handle,
                    stderr=asyncio.subprocess.STDOUT,
                    env=env,
                    preexec_fn=child_of_the_run,
                    start_new_session=True,  # Ctrl-C reaches the runner only
                )

            async def wait(index: int) -> None:
                self.exit_codes[index] = await processes[index].wait()
                self.shard_seconds[index] = time.perf_counter() - started
                self._load(index)

            await asyncio.gather(*(wait(index) for index in processes))
        finally:
            await self._stop(processes)
            for handle in logs:
                handle.close()
        return self.outcomes()

    async def _stop(self, processes: dict[int, asyncio.subprocess.Process]) -> None:
        await asyncio.gather(*(stop_process(p) for p in processes.values()))
        for index in processes:
            if index not in self._outcomes:
                self.exit_codes.setdefault(index, processes[index].returncode)
                self._load(index)

    def _load(self, index: int) -> None:
        path = self._shard_dir(index) / "outcomes.json"
        if not path.exists():
            self._say_why(index)
            return
        data = msgspec.json.decode(path.read_bytes())
        self._outcomes[index] = [DeviceOutcome(**entry) for entry in data["devices"]]
        self.crashed.update(data.get("crashed", {}))
        if data.get("peak_rss_mb") is not None:
            self.peak_rss_mb[index] = data["peak_rss_mb"]
        seconds = data.get("connect_seconds")
        if seconds is not None:
            self.connect_seconds = max(self.connect_seconds or 0.0, seconds)

    def _say_why(self, index: int) -> None:
        """A shard that wrote no outcome: log the end of its log now (a bench's scratch
        folder, and the log with it, is gone after the run)."""
        if index in self._warned:
            return
        self._warned.add(index)
        logfile = self._shard_dir(index) / "fleet.log"
        tail = log_tail(logfile, 12)
        log.warning(
            "fleet shard %d/%d wrote no outcome (exit code %s); the end of %s:\n%s",
            index,
            self.shards,
            self.exit_codes.get(index),
            logfile,
            "\n".join(tail) or "(empty)",
        )

    def outcomes(self) -> list[DeviceOutcome]:
        """Every device's outcome, in device order; a device whose shard wrote nothing is
        reported unfinished with the shard's exit code and log."""
        known = {o.device: o for outcomes in self._outcomes.values() for o in outcomes}
        result = []
        for index, device in enumerate(self.device_ids):
            outcome = known.get(device)
            if outcome is None:
                shard = index % self.shards
                outcome = DeviceOutcome(
                    device=device,
                    state="unknown",
                    batches_acked=0,
                    retransmissions=0,
                    refused_messages=0,
                    error=None,
                    true_mean=self.true_means[device],
                    ledger={"owner": device, "accounts": {}},
                    unfinished=f"shard {shard}/{self.shards} wrote no outcome (exit code "
                    f"{self.exit_codes.get(shard)}; log {self._shard_dir(shard)}/fleet.log)",
                )
            result.append(outcome)
        return result
