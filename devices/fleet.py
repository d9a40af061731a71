"""``Fleet``: N device agents as asyncio tasks in one TaskGroup (or a shard of them).

Each device gets its own connection (client id ``{run}-{device}``), its own clean stream
from the fleet's source and two independent random generators derived from
(seed, device index): one for its data, one for its mechanism. Privatised values therefore
depend only on the seed and the device, never on the transport or on timing, so the same
configuration gives identical reports in memory, on the embedded broker and on Mosquitto.
``shard=(i, k)`` runs the devices whose index is ``i`` modulo ``k``, so several processes or
machines can make one fleet. A fleet takes a plain ``FleetConfig``; the scenarios layer
builds it from a scenario (``scenarios.plans.fleet_config``).

With a several-column csv source (``[source] columns``) device ``i`` is one sensor node:
channel ``i % C`` of room ``i // C``. Its front-end clips each reading to its channel's
FIXED public bounds and maps it to [0, 1] before the reporter sees it, so ``clean`` (and
``true_means``) are in [0, 1] units for such sources.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from ldpfleet.broker.transport import Transport
from ldpfleet.devices.agent import DeviceAgent, DeviceStorage
from ldpfleet.devices.faults import Crash, CrashConfig, crash_plan
from ldpfleet.devices.gateway import Gateway
from ldpfleet.devices.noise_entropy import noise_rng
from ldpfleet.devices.periodic import PeriodicSpec, periodic_stream, template
from ldpfleet.devices.sources import (
    CsvSpec,
    SyntheticSpec,
    channel_bounds,
    csv_stream,
    device_rng,
    synthetic_stream,
)
from ldpfleet.devices.state_file import DeviceStateFile
from ldpfleet.protocol.stream import StreamConfig, StreamReporter
from ldpfleet.protocol.sw import normalise

log = logging.getLogger(__name__)


@dataclass
class DeviceOutcome:
    """How one device's run ended."""

    device: str
    state: str
    batches_acked: int
    retransmissions: int
    refused_messages: int
    error: str | None
    true_mean: float
    ledger: dict
    # why the device's stream did not finish (it gave up waiting for the collector, failed,
    # or was still waiting when the run stopped it); None when it finished
    unfinished: str | None = None
    reconnects: int = 0  # sessions re-established after a broker restart or network failure
    crashed: bool = False  # fault injection: it crashed (and ``unfinished`` if it never returned)
    republished: int = 0  # messages its session published again after a connection loss
    # report -> ack seconds of its batches sent once (docs/scaling.md, latency)
    ack_latencies: list[float] = field(default_factory=list)
    # the collector's final rejection it stopped for (kind, seq, field, code, reason), and
    # the rejection notices it ignored (naming another device or a message it never sent)
    rejection: dict | None = None
    rejects_ignored: int = 0


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/k"`` -> (i, k) with 0 <= i < k; ``ValueError`` with the expected form."""
    try:
        index_text, count_text = text.split("/")
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise ValueError(f"--shard {text!r} must look like i/k, e.g. 0/4") from None
    if not (count >= 1 and 0 <= index < count):
        raise ValueError(f"--shard {text!r} needs 0 <= i < k")
    return index, count


@dataclass(frozen=True)
class DeviceSourceConfig:
    """Where the devices' clean readings come from (the scenarios layer builds it from
    ``[source]``, ``[stream] steps`` and ``[fleet] devices``)."""

    source: SyntheticSpec | CsvSpec | PeriodicSpec
    steps: int  # readings per device
    devices: int  # the fleet's size: a csv source spreads the devices over its data
    true_period: int | None = None  # a csv source's declared period, if known


@dataclass(frozen=True)
class FleetConfig:
    """Everything a ``Fleet`` (or a sharded one) needs, as plain values."""

    stream: StreamConfig  # the stream stage, run id included
    device_ids: tuple[str, ...]  # every device of the fleet, in index order
    source: DeviceSourceConfig
    seed: int
    silence_timeout: float  # a device gives up after this long without a collector word
    connect_concurrency: int = 64  # devices connecting at once
    step_seconds: float = 0.0  # pacing: seconds between readings (0: unpaced)
    connection: Literal["device", "gateway"] = "device"
    gateway_devices: int = 1000  # devices per gateway connection (connection "gateway")
    crashes: CrashConfig | None = None  # fault injection: the crash plan's settings
    # where the shard's devices persist their state before they publish (SQLite, one file
    # per shard), so a killed shard process resumes them (devices.state_file); None: RAM only
    state_file: str | None = None
    # where each device's noise generator comes from (devices.noise_entropy): "seeded"
    # (from seed and index, reproducible) or "os" (the device's own entropy)
    device_noise: Literal["seeded", "os"] = "seeded"

    def crash_plan(self) -> dict[str, Crash]:
        """Device id -> its crash, for the devices that crash."""
        return crash_plan(self.crashes, self.device_ids, self.stream.steps, self.seed)


def clean_stream(
    config: DeviceSourceConfig, seed: int, index: int
) -> tuple[np.ndarray, int | None]:
    """Device ``index``'s clean readings (physical units, before clipping) and, when the
    simulator knows it, the stream's true period."""
    source, steps = config.source, config.steps
    if isinstance(source, PeriodicSpec):
        cycle = template(source.dataset, index, device_rng(seed, index, "template"))
        values = periodic_stream(
            cycle, steps, device_rng(seed, index, "data"), jitter=source.jitter
        )
        lo, hi = source.bounds
        return lo + values * (hi - lo), len(cycle)
    if isinstance(source, CsvSpec):
        values, _ = csv_stream(source, index, config.devices, steps)
        return values, config.true_period
    values, truth = synthetic_stream(source, steps, device_rng(seed, index, "data"))
    return values, truth.period


@dataclass(frozen=True)
class ClipTally:
    """Simulator-only ground truth: how many of one device's raw (unclipped) readings its
    FIXED public bounds changed. Neither the device's reports nor the collector see it."""

    bounds: tuple[float, float]  # the physical bounds the readings were clipped to
    field: str  # where they come from: "source.bounds" or "source.column_bounds[k]"
    readings: int
    clipped: int  # readings outside ``bounds``
    low: float  # the smallest raw reading
    high: float  # the largest raw reading

    @property
    def share(self) -> float:
        return self.clipped / self.readings if self.readings else 0.0


def clip_tally(readings: np.ndarray, bounds: tuple[float, float], field: str) -> ClipTally:
    """The ``ClipTally`` of raw ``readings`` clipped to ``bounds``."""
    lo, hi = bounds
    raw = np.asarray(readings, dtype=float)
    return ClipTally(
        bounds=(float(lo), float(hi)),
        field=field,
        readings=int(raw.size),
        clipped=int(np.count_nonzero((raw < lo) | (raw > hi))),
        low=float(raw.min()) if raw.size else float("nan"),
        high=float(raw.max()) if raw.size else float("nan"),
    )


def device_truth(
    config: DeviceSourceConfig, seed: int, index: int, lo: float, hi: float
) -> tuple[np.ndarray, int | None, float, ClipTally]:
    """Device ``index``'s readings as its reporter sees them (a multi-column node's
    front-end normalises by its channel's bounds), the true period if known, the true
    mean of the clipped stream, and how many raw readings the public bounds clipped."""
    readings, period = clean_stream(config, seed, index)
    bounds = channel_bounds(config.source, index) if isinstance(config.source, CsvSpec) else None
    if bounds is not None:  # the node's front-end: its channel's public bounds
        channel = index % config.source.channels
        tally = clip_tally(readings, bounds, f"source.column_bounds[{channel}]")
        readings = normalise(readings, *bounds)
    else:
        tally = clip_tally(readings, (lo, hi), "source.bounds")
    return readings, period, float(np.mean(np.clip(readings, lo, hi))), tally


def device_failure_summary(errors: dict[str, str]) -> str | None:
    """One line for every failed device (``errors``: device -> its error), or ``None``: the
    count and the first device's error, the others' only with ``--verbose`` (one INFO line
    each) and in results.json ``fleet.device_errors``."""
    if not errors:
        return None
    first = min(errors)
    if len(errors) == 1:
        return f"device {first} failed: {errors[first]}"
    return (
        f"{len(errors)} devices failed; the first, {first}: {errors[first]} (each device's "
        "error with --verbose and in results.json fleet.device_errors)"
    )


class Fleet:
    """The devices of one run (or one shard of them)."""

    def __init__(
        self, config: FleetConfig, transport: Transport, *, shard: tuple[int, int] = (0, 1)
    ) -> None:
        self.fleet_config = config
        self.transport = transport
        self.run_id = config.stream.run
        self.seed = config.seed
        self.shard = shard
        self.agents: list[DeviceAgent] = []
        self.connect_seconds: float | None = None
        self.true_means: dict[str, float] = {}
        self.true_periods: dict[str, int | None] = {}
        self.clean: dict[str, np.ndarray] = {}
        self.clipping: dict[str, ClipTally] = {}  # simulator-only: what the bounds clipped
        # fault injection ([faults]): the crash plan, and the devices' storage (only then:
        # saving the machine before every publish costs a pickle per step)
        self.crashes = config.crash_plan()
        self.storage = DeviceStorage() if self.crashes else None
        self.state_file: DeviceStateFile | None = None
        if self.storage is None and config.state_file is not None:
            identity = {"run": self.run_id, "shard": "{}/{}".format(*shard), "seed": str(self.seed)}
            self.state_file = DeviceStateFile(config.state_file, identity)
            self.storage = self.state_file
        self.resumed: list[str] = []  # devices restored from the state file
        self.crashed: dict[str, dict] = {}  # what happened to each crashed device
        self.down_seconds = config.crashes.down_seconds if self.crashes else 0.0
        self._agent_settings = {
            "step_seconds": config.step_seconds,
            "connect_gate": asyncio.Semaphore(config.connect_concurrency),
            "silence_timeout": config.silence_timeout,
            "storage": self.storage,
        }
        # gateway mode: this shard's devices, gateway_devices at a time, share a gateway
        self.gateways: dict[int, Gateway] = {}
        shard_index, shard_count = shard
        for index, device in enumerate(config.device_ids):
            if index % shard_count == shard_index:
                self.agents.append(self._build_agent(index, device))

    def _build_agent(self, index: int, device: str) -> DeviceAgent:
        """Device ``index``'s agent, with its truth recorded."""
        config = self.fleet_config
        lo, hi = config.stream.lo, config.stream.hi
        readings, period, self.true_means[device], self.clipping[device] = device_truth(
            config.source, self.seed, index, lo, hi
        )
        self.true_periods[device] = period
        self.clean[device] = readings
        reporter = self.state_file.load(device) if self.state_file is not None else None
        if reporter is None:
            # the seeded generator through this module's device_rng (the audit battery's
            # "devices" canary replays it, and its reused-seeds mutant patches it here)
            rng = noise_rng(config.device_noise, lambda: device_rng(self.seed, index, "mechanism"))
            reporter = StreamReporter(config.stream, device, rng)
        else:
            self.resumed.append(device)
        crash = self.crashes.get(device)
        return DeviceAgent(
            self._device_transport(),
            reporter,
            readings,
            crash_at_step=crash.step if crash else None,
            **self._agent_settings,
        )

    def _device_transport(self) -> Transport | Gateway:
        """The next agent's transport: the fleet's own, or in gateway mode this shard's
        k-th gateway (client ids must differ across shards)."""
        config = self.fleet_config
        if config.connection != "gateway":
            return self.transport
        number = len(self.agents) // config.gateway_devices
        if number not in self.gateways:
            self.gateways[number] = Gateway(
                self.transport,
                f"{self.run_id}-gateway-{self.shard[0]}-{number}",
                credentials=getattr(self.transport, "credentials", None),
            )
        return self.gateways[number]

    async def _run_agent(self, agent: DeviceAgent) -> None:
        try:
            await agent.run()
        except Exception as error:  # one device failing must not stop the fleet
            agent.error = f"{type(error).__name__}: {error}"
            # one line per device only with --verbose (INFO): a plugin failing on every
            # device printed one warning per device; Fleet.run ends with one line, counted
            log.info("device %s failed: %s", agent.device, agent.error)

    async def _run_crashing(self, slot: int, crash: Crash) -> None:
        """Run an agent that crashes at its planned step: cancel it there (its RAM is lost),
        then, if it returns, restore a new agent from its storage after ``down_seconds``."""
        agent = self.agents[slot]
        running = asyncio.ensure_future(self._run_agent(agent))
        crashing = asyncio.ensure_future(agent.crashed.wait())
        await asyncio.wait({running, crashing}, return_when=asyncio.FIRST_COMPLETED)
        crashing.cancel()
        if not agent.crashed.is_set():
            await running  # the stream ended before the crash step (e.g. a refusal)
            return
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        record = {"step": crash.step, "returned": crash.returns, "down_seconds": None}
        self.crashed[agent.device] = record
        log.info("device %s crashed after step %d", agent.device, crash.step)
        if not crash.returns:
            agent.gave_up = f"crashed after step {crash.step} and never came back (fault injection)"
            return
        loop = asyncio.get_running_loop()
        down_since = loop.time()
        await asyncio.sleep(self.down_seconds)
        assert self.storage is not None
        reporter = self.storage.load(agent.device)
        assert reporter is not None  # it saved before it could crash
        revived = DeviceAgent(agent.transport, reporter, agent.readings, **self._agent_settings)
        self.agents[slot] = revived
        record["down_seconds"] = loop.time() - down_since
        await self._run_agent(revived)

    async def run(self) -> list[DeviceOutcome]:
        """Run every agent to completion; per-device failures are recorded, not raised."""
        started = asyncio.get_running_loop().time()
        try:
            async with asyncio.TaskGroup() as group:
                for slot, agent in enumerate(self.agents):
                    crash = self.crashes.get(agent.device)
                    if crash is None:
                        group.create_task(self._run_agent(agent))
                    else:
                        group.create_task(self._run_crashing(slot, crash))
        finally:
            for gateway in self.gateways.values():
                await gateway.close()
            if self.state_file is not None:
                # kept unless every device finished: the same command resumes from it
                self.state_file.close(delete=all(a.reporter.finished for a in self.agents))
        connected = [a.connected_at for a in self.agents if a.connected_at is not None]
        self.connect_seconds = (max(connected) - started) if connected else None
        summary = device_failure_summary({a.device: a.error for a in self.agents if a.error})
        if summary is not None:
            log.warning("%s", summary)
        return self.outcomes()

    def outcomes(self) -> list[DeviceOutcome]:
        """Per-device results so far."""
        return [
            DeviceOutcome(
                device=agent.device,
                state=agent.reporter.state,
                batches_acked=agent.reporter.acked + 1,
                retransmissions=agent.reporter.retransmissions,
                refused_messages=agent.refused_messages,
                reconnects=agent.reconnects,
                crashed=agent.device in self.crashed,
                republished=agent.session.republished if agent.session else 0,
                ack_latencies=[round(x, 6) for x in agent.reporter.ack_latencies],
                rejection=agent.reporter.rejection,
                rejects_ignored=agent.reporter.rejects_ignored,
                error=agent.error,
                true_mean=self.true_means[agent.device],
                ledger=agent.reporter.ledger.to_dict(),
                unfinished=None
                if agent.reporter.finished
                else (
                    agent.gave_up
                    or agent.error
                    or "stopped while still waiting for the collector (finish grace over)"
                ),
            )
            for agent in self.agents
        ]
