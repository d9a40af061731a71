"""``Fleet``: N device agents as asyncio tasks in one TaskGroup (or a shard of them).

Each device gets its own connection (client id ``{run}-{device}``), its own clean stream
from the scenario's source and two independent random generators derived from
(seed, device index): one for its data, one for its mechanism. Privatised values therefore
depend only on the seed and the device, never on the transport or on timing, so the same
scenario gives identical reports in memory, on the embedded broker and on Mosquitto.
``shard=(i, k)`` runs the devices whose index is ``i`` modulo ``k``, so several processes or
machines can make one fleet.

With a several-column csv source (``[source] columns``) device ``i`` is one sensor node:
channel ``i % C`` of room ``i // C``. Its front-end clips each reading to its channel's
FIXED public bounds and maps it to [0, 1] before the reporter sees it, so ``clean`` (and
``true_means``) are in [0, 1] units for such sources.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import numpy as np
from ldpfleet.broker.transport import Transport
from ldpfleet.devices.agent import DeviceAgent, DeviceStorage
from ldpfleet.devices.faults import Crash, crash_plan
from ldpfleet.devices.gateway import Gateway
from ldpfleet.devices.periodic import periodic_stream, template
from ldpfleet.devices.sources import CsvSpec, csv_stream, device_rng, synthetic_stream
from ldpfleet.protocol.stream import StreamReporter
from ldpfleet.protocol.sw import normalise
from ldpfleet.scenarios.schema import LoadedScenario, PeriodicSource

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


def clean_stream(scenario: LoadedScenario, seed: int, index: int) -> tuple[np.ndarray, int | None]:
    """Device ``index``'s clean readings (physical units, before clipping) and, when the
    simulator knows it, the stream's true period."""
    source = scenario.source_spec()
    steps = scenario.spec.stream.steps
    if isinstance(source, PeriodicSource):
        cycle = template(source.dataset, index, device_rng(seed, index, "template"))
        values = periodic_stream(
            cycle, steps, device_rng(seed, index, "data"), jitter=source.jitter
        )
        lo, hi = source.bounds
        return lo + values * (hi - lo), len(cycle)
    if isinstance(source, CsvSpec):
        values, _ = csv_stream(source, index, scenario.spec.fleet.devices, steps)
        return values, scenario.spec.source.true_period
    values, truth = synthetic_stream(source, steps, device_rng(seed, index, "data"))
    return values, truth.period


def device_truth(
    scenario: LoadedScenario, seed: int, index: int, lo: float, hi: float
) -> tuple[np.ndarray, int | None, float]:
    """Device ``index``'s readings as its reporter sees them (a multi-column node's
    front-end normalises by its channel's bounds), the true period if known, and the true
    mean of the clipped stream."""
    readings, period = clean_stream(scenario, seed, index)
    if scenario.multi_column:  # the node's front-end: its channel's public bounds
        readings = normalise(readings, *scenario.node_bounds(index))
    return readings, period, float(np.mean(np.clip(readings, lo, hi)))


class Fleet:
    """The devices of one run (or one shard of them)."""

    def __init__(
        self,
        scenario: LoadedScenario,
        transport: Transport,
        run: str,
        *,
        seed: int | None = None,
        shard: tuple[int, int] = (0, 1),
    ) -> None:
        self.scenario = scenario
        self.transport = transport
        self.run_id = run
        self.seed = scenario.spec.scenario.seed if seed is None else seed
        self.shard = shard
        self.config = scenario.stream_config(run)
        gate = asyncio.Semaphore(scenario.spec.fleet.connect_concurrency)
        # a device gives up after this long without a word from the collector: longer than
        # any wait for credit (the collector's stage deadline) plus the finish grace
        collector = scenario.spec.collector
        silence_timeout = collector.stage_timeout + collector.finish_grace
        lo, hi = self.config.lo, self.config.hi
        self.agents: list[DeviceAgent] = []
        self.connect_seconds: float | None = None
        self.true_means: dict[str, float] = {}
        self.true_periods: dict[str, int | None] = {}
        self.clean: dict[str, np.ndarray] = {}
        # fault injection ([faults]): the crash plan, and the devices' storage (only then:
        # saving the machine before every publish costs a pickle per step)
        self.crashes = crash_plan(scenario, self.seed)
        self.storage = DeviceStorage() if self.crashes else None
        self.crashed: dict[str, dict] = {}  # what happened to each crashed device
        self.down_seconds = scenario.spec.faults.down_seconds if self.crashes else 0.0
        self._agent_settings = {
            "step_seconds": scenario.spec.stream.step_seconds,
            "connect_gate": gate,
            "silence_timeout": silence_timeout,
            "storage": self.storage,
        }
        shard_index, shard_count = shard
        # gateway mode: this shard's devices, gateway_devices at a time, share a gateway
        self.gateways: dict[int, Gateway] = {}
        spec = scenario.spec.fleet
        self.connection = scenario.fleet_connection()
        for index, device in enumerate(scenario.device_ids()):
            if index % shard_count != shard_index:
                continue
            readings, period, self.true_means[device] = device_truth(
                scenario, self.seed, index, lo, hi
            )
            self.true_periods[device] = period
            self.clean[device] = readings
            reporter = StreamReporter(
                self.config, device, device_rng(self.seed, index, "mechanism")
            )
            crash = self.crashes.get(device)
            device_transport = transport
            if self.connection == "gateway":
                # this shard's k-th gateway (client ids must differ across shards)
                number = len(self.agents) // spec.gateway_devices
                if number not in self.gateways:
                    self.gateways[number] = Gateway(
                        transport,
                        f"{run}-gateway-{shard_index}-{number}",
                        credentials=getattr(transport, "credentials", None),
                    )
                device_transport = self.gateways[number]
            self.agents.append(
                DeviceAgent(
                    device_transport,
                    reporter,
                    readings,
                    crash_at_step=crash.step if crash else None,
                    **self._agent_settings,
                )
            )

    async def _run_agent(self, agent: DeviceAgent) -> None:
        try:
            await agent.run()
        except Exception as error:  # one device failing must not stop the fleet
            agent.error = f"{type(error).__name__}: {error}"
            log.warning("device %s failed: %s", agent.device, agent.error)

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
        connected = [a.connected_at for a in self.agents if a.connected_at is not None]
        self.connect_seconds = (max(connected) - started) if connected else None
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
