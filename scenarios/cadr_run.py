"""Run CADR-LDP end to end on a device fleet over a transport, and score it.

``run_cadr_fleet`` puts one ``CadrDevice`` (with its own connection) on every node of a
graph, the batching relay (``broker.relay``) and the collector (``collector.cadr_fleet``)
on a broker (``memory``, ``embedded`` or an ``mqtt://`` URL), runs the protocol, and —
because the simulator knows the true graph — scores the release: degree-sequence MAE and
MSE, degree-distribution L1 distance, kept-edge ratio, the mean Thm 3.5 bound, and each
device's ledger. Device ``i``'s randomness is ``numpy.random.default_rng([seed, i])``, so a
seed gives the same release on every transport — or, with ``[privacy] device_noise = "os"``,
its own OS entropy (``devices.noise_entropy.cadr_noise_rng``: no one can replay it).

The run is made of two halves that ``scenarios.cadr_sides`` also runs as separate
processes: ``collect_cadr`` (trace recorder + relay + readiness barrier + collector, until
the release) and ``run_device_shard`` (the devices ``i ≡ shard (mod k)``). Scoring is
split the same way: ``collector_results`` holds what the collector side knows (the release
scored against the simulator's true degrees), ``complete_results`` adds what only the
devices know (kept edges, |U1| for the Thm 3.5 bound, ledgers, message counts).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from ldpfleet.broker.auth import child_environment
from ldpfleet.broker.recorder import TraceRecorder, control_filters, remove_trace
from ldpfleet.broker.relay import run_peer_relay
from ldpfleet.broker.select import open_broker
from ldpfleet.broker.transport import Transport
from ldpfleet.collector.announce import announce_run_closed
from ldpfleet.collector.cadr_fleet import CadrOutcome, ReleaseHook, run_cadr_collector
from ldpfleet.collector.degree_postprocess import (
    noise_weight,
    post_process,
    score,
    trivial_baselines,
)
from ldpfleet.collector.projection import kept_edge_ratio
from ldpfleet.collector.readiness import await_devices
from ldpfleet.collector.theta_search import deviation_target, thm35_bound
from ldpfleet.devices.cadr_agent import CadrAgent
from ldpfleet.devices.graphs import Graph
from ldpfleet.devices.noise_entropy import cadr_noise_rng, check_device_noise
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_budget import (
    CadrBudget,
    ThetaPlan,
    check_theta_within_bound,
    negotiates,
    plan_theta,
    privacy_claim,
    release_warnings,
    resolve_degree_bound,
    resolve_method,
)
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.protocol.cadr_theta_noise import THETA_MECHANISM, noise_parties, theta_from_counts
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.liveness import CollectorSilent, SilenceWatch
from ldpfleet.protocol.peer_relay import MAX_DEADLINE
from ldpfleet.protocol.secagg.messages import MAX_PARTICIPANTS
from ldpfleet.protocol.validate import integer_in
from ldpfleet.scenarios.cadr_dropout import (
    abort_risk_warnings,
    check_dropout,
    dropped_devices,
)
from ldpfleet.scenarios.jsonout import write_results

__all__ = [
    "CadrSettings",
    "CollectedRun",
    "DeviceStats",
    "ShardStopped",
    "collect_cadr",
    "collector_results",
    "complete_results",
    "device_names",
    "fresh_outputs",
    "ledger_document",
    "load_scenario_graph",
    "run_cadr_fleet",
    "run_cadr_scenario",
    "run_device_shard",
    "scenario_graph_source",
    "scenario_header",
    "write_cadr_results",
]

FLEET_METHODS = ("ll", "lh", "ra", "clip")
# results.json's keys in order; the collector side writes those it knows, in this order
RESULT_KEYS = (
    "scenario", "broker", "run", "processes", "devices", "edges", "method", "pipeline", "eps",
    "alpha", "seed", "degree_bound", "degree_bound_source", "theta", "theta_rule",
    "theta_chosen_by", "theta_fanout", "theta_spacing", "theta_rounds",
    "theta_queries", "theta_search", "budget", "privacy_claim", "device_noise", "mae", "mse",
    "distribution_l1",
    "histogram_emd", "raw", "postprocessed", "baselines", "dropped", "scored_over",
    "kept_edge_ratio", "max_kept_degree",
    "bound_mean", "bound_holds", "ledger_min", "ledger_max", "ledger_exact", "lpea_round_cap",
    "device_messages_up",
    "device_messages_down", "refused_by_devices", "rejected_by_collector", "rejected_by_relay",
    "relay_rejections_by_reason", "budget_refusals",
    "stage_seconds", "connect_seconds", "seconds", "trace_messages", "warnings", "ledgers",
    "released",
    "histogram", "estimate_histogram", "per_device",
)  # fmt: skip


def device_names(graph: Graph) -> list[str]:
    """``n0000``, ``n0001``, ...: node ``i`` of the graph is device ``names[i]``."""
    return device_names_of(graph.n)


def device_names_of(n: int) -> list[str]:
    """``device_names`` of a graph of ``n`` nodes."""
    width = max(4, len(str(n - 1)))
    return [f"n{i:0{width}d}" for i in range(n)]


@dataclass
class DeviceStats:
    """What the simulator reads off one device at the end (for scoring, not released)."""

    kept: int
    asked_max: int
    spent: float
    ledger: dict | None
    messages_up: int
    messages_down: int
    refused: int
    dropped: str | None = None  # the stage it crashed at ([cadr] dropout), else None


# the limits of a scenario's [cadr] fanout and processes (scenarios/schema_sections.py),
# checked for the Python API and bench cadr too: fanout 0 and spacing "log" ran silently
# (the dp pipeline's one-round search reads neither), processes 0 waited 120 s for devices
# no process ran, and 100 processes started 99 children on a 2-core machine
MAX_FANOUT = 64
MAX_PROCESSES = 64
SPACINGS = ("linear", "geometric")


def check_whole(value: object, name: str, low: int, high: int) -> None:
    """``value`` an integer in [low, high], else a ``ParameterError`` naming ``name``."""
    integer_in(value, name, low, high)


def check_spacing(spacing: object) -> None:
    """``spacing`` one of ``SPACINGS``, else a ``ParameterError`` naming ``spacing``."""
    if spacing not in SPACINGS:
        raise ParameterError(
            f"{spacing!r} is not {' or '.join(SPACINGS)}",
            field="spacing",
            limit=" or ".join(SPACINGS),
            value=spacing,
        )


@dataclass(frozen=True)
class CadrSettings:
    """The parameters of one CADR-LDP run (``[cadr]`` and the seed), shared by both sides."""

    method: str = "ll"
    theta: str | int = "auto-dev"
    eps: float = 3.0
    alpha: float = 0.1
    seed: int = 0
    fanout: int = 1
    spacing: str = "linear"
    ndoe_parts: int = 16
    degree_bound: int | str = "auto"
    max_rounds: int = 100
    stage_timeout: float = 120.0
    connect_concurrency: int = 64
    trace: str = "control"
    pipeline: str = "dp"
    peer_deadline: float = 0.0  # [cadr] peer_deadline_seconds (0: none)
    dropout: float = 0.0  # [cadr] dropout: the seeded fraction that crashes (cadr_dropout)
    dropout_stage: str = "after_shares"

    def __post_init__(self) -> None:
        deadline = self.peer_deadline
        if not (
            isinstance(deadline, int | float)
            and not isinstance(deadline, bool)
            and math.isfinite(deadline)
            and 0 <= deadline <= MAX_DEADLINE
        ):
            raise ParameterError(
                f"must be a finite number of seconds in 0..{MAX_DEADLINE:g} (0: none), "
                f"got {deadline!r}",
                field="peer_deadline_seconds",
                limit=f"a finite number of seconds in 0..{MAX_DEADLINE:g} (0: none)",
                value=deadline,
            )
        check_whole(self.fanout, "fanout", 1, MAX_FANOUT)
        check_spacing(self.spacing)  # "log" ran as linear under "dp", silently
        resolve_degree_bound(self.degree_bound, self.pipeline, 2, 1)  # a typed error if bad
        # "auto" (the scenario's default): clip under "dp", ll under "paper"
        object.__setattr__(self, "method", resolve_method(self.method, self.pipeline))
        if self.method not in FLEET_METHODS:
            raise ValueError(
                f"method {self.method!r}: the fleet runs {', '.join(FLEET_METHODS)} "
                "(er is a centralised baseline: use the reference pipeline)"
            )
        if self.pipeline == "dp" and self.theta == "auto-sum":  # a ValueError: a traceback
            raise ParameterError(
                '"auto-sum" is the paper pipeline\'s θ rule (exact secure sums); the dp '
                'pipeline searches θ by Deviation ("auto-dev", the DP search) or takes a given '
                'θ: use one of those, or pipeline = "paper"',
                field="theta",
                limit='"auto-dev" or a given θ with pipeline = "dp"',
                value=self.theta,
            )

    @classmethod
    def of_scenario(cls, scenario, seed: int | None = None) -> CadrSettings:
        """The settings of a ``LoadedScenario``'s ``[cadr]`` (``seed`` overrides its seed)."""
        cadr = scenario.spec.cadr
        return cls(
            method=cadr.method,
            theta=cadr.theta,
            eps=cadr.eps,
            alpha=cadr.alpha,
            seed=scenario.spec.scenario.seed if seed is None else seed,
            fanout=cadr.fanout,
            spacing=cadr.spacing,
            ndoe_parts=cadr.ndoe_parts,
            degree_bound=cadr.degree_bound,
            max_rounds=cadr.max_rounds,
            stage_timeout=cadr.stage_timeout,
            connect_concurrency=cadr.connect_concurrency,
            trace=cadr.trace,
            pipeline=cadr.pipeline,
            peer_deadline=cadr.peer_deadline_seconds,
            dropout=cadr.dropout,
            dropout_stage=cadr.dropout_stage,
        )

    def bound_for(self, graph: Graph) -> int:
        """The public degree bound D (``bound_and_source``)."""
        return self.bound_and_source(graph)[0]

    def bound_and_source(self, graph: Graph) -> tuple[int, str]:
        """The public degree bound D and its source (``protocol.cadr_budget.
        resolve_degree_bound``: configured, ``n - 1``, or the graph's maximum degree)."""
        graph_max = int(graph.degrees().max()) if graph.n else 0
        bound = resolve_degree_bound(self.degree_bound, self.pipeline, graph.n, graph_max)
        check_theta_within_bound(self.theta, bound)  # the devices would refuse θ > D
        return bound

    def theta_plan(self, graph: Graph) -> ThetaPlan:
        """The θ the run uses and who chose it (``protocol.cadr_budget.plan_theta``): under
        "dp", ``auto-dev`` on a fleet too small for the θ search's counts becomes θ =
        ⌈√D⌉ with no search. The collector's plan, results.json's budget and claim and the
        partition workers' DSR budget all read it, so they agree."""
        bound = self.bound_for(graph)
        return plan_theta(self.theta, self.pipeline, self.eps, self.alpha, graph.n, bound)

    def check_dropout(self, graph: Graph, partitions: int = 1) -> None:
        """Refuse a ``dropout`` this run cannot take (``scenarios.cadr_dropout``).

        Raises:
            ParameterError: naming ``dropout``, its limit and its value.
        """
        check_dropout(
            self.dropout,
            self.dropout_stage,
            devices=graph.n,
            pipeline=self.pipeline,
            method=self.method,
            searched=self.theta_plan(graph).searched,
            partitions=partitions,
        )

    def dropped(self, graph: Graph) -> frozenset[str]:
        """The devices the seed chose to crash (``cadr_dropout.dropped_devices``)."""
        return dropped_devices(device_names(graph), self.dropout, self.seed)

    def check_fleet_size(self, graph: Graph) -> None:
        """Refuse a θ search over more devices than one secure-sum session takes
        (``MAX_PARTICIPANTS``): the search is one secure sum over every device, and the
        session refused only after every device had connected (a minute on 20,000). A
        given θ searches nothing; the in-process reference has no session."""
        if graph.n > MAX_PARTICIPANTS and self.theta_plan(graph).searched:
            raise ParameterError(
                f"the fleet's θ search is one secure sum over every device, and a session "
                f"takes at most {MAX_PARTICIPANTS:,} devices; this graph has {graph.n:,}: "
                "give an integer theta (no θ search; e.g. from a public bound), or run the "
                "in-process reference (bench cadr --transport reference)",
                field="devices",
                limit=f"at most {MAX_PARTICIPANTS:,} devices with a θ search",
                value=graph.n,
            )


def scenario_graph_source(source: str, scenario_path: Path | None) -> str:
    """The loader's spec (``devices.graphs.load_graph``) for a scenario's ``[graph] source``.

    A built-in name (``facebook``) or a generator (``barabasi_albert:n=500,m=3``) is kept as
    it is; anything else is a path: ``~`` expanded, then a relative path resolved like every
    scenario data path (beside the scenario file, then the current folder, then the shipped
    ``data/``; ``scenarios.schema.resolve_data_path``). A path containing ``:`` is a path
    (it used to be taken for a generator and not resolved). Every caller (the run, both
    sides, the partitions, ``mosquitto-config``) goes through this one function.
    """
    from ldpfleet.devices.graphs import NAMED_GRAPHS, is_generator_spec
    from ldpfleet.scenarios.schema import resolve_data_path

    if source in NAMED_GRAPHS or is_generator_spec(source):
        return source
    return str(resolve_data_path(str(Path(source).expanduser()), scenario_path))


def load_scenario_graph(scenario) -> tuple[Graph, str]:
    """The ``[graph]`` of a scenario and the spec a child process loads it from again."""
    from ldpfleet.devices.graphs import load_graph
    from ldpfleet.scenarios.schema import ScenarioError
    from ldpfleet.scenarios.schema_graph import generator_refusal, graph_source_rule

    source = scenario_graph_source(scenario.spec.graph.source, scenario.path)
    where = f"{scenario.path}: " if scenario.path else ""
    try:
        graph = load_graph(source)
    except ParameterError as error:  # named the generator's parameter ("p:"), not the key
        what = generator_refusal(error)
        raise ScenarioError(
            f"{where}graph.source: {what} (in {scenario.spec.graph.source!r})",
            limit=graph_source_rule(),
        ) from None
    try:
        CadrSettings.of_scenario(scenario).check_fleet_size(graph)
    except ParameterError as error:
        theta = scenario.spec.cadr.theta
        raise ScenarioError(
            f"{where}cadr.theta: {theta!r} searches θ, but {error.reason}",
            field="cadr.theta",
            limit=error.limit,
            value=theta,
        ) from None
    return graph, source


class ShardStopped(RuntimeError):
    """A device shard stopped before its devices finished; ``stats`` is what they did."""

    def __init__(self, sentence: str, stats: dict[str, DeviceStats]) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.stats = stats


def _machines(
    graph: Graph, names: list[str], run: str, seed: int, indices, device_noise: str = "seeded"
) -> list[CadrDevice]:
    return [
        CadrDevice(
            run,
            names[i],
            [names[j] for j in graph.neighbours(i)],
            cadr_noise_rng(device_noise, seed, i),  # every draw of a device is its noise
        )
        for i in indices
    ]


def _kept(machine: CadrDevice) -> int:
    """The device's kept degree (the simulator's, for scoring): LPEA's kept edges, clip's
    ``min(d, θ)`` once θ came (``protocol.cadr_budget``, "Method clip"), else 0."""
    if machine.node is not None:
        return len(machine.node.kept)
    plan, theta = machine.plan, machine.theta
    if plan is not None and theta is not None and not negotiates(plan.method):
        return min(machine.degree, theta)
    return 0


def _stats(agent: CadrAgent) -> DeviceStats:
    machine = agent.machine
    return DeviceStats(
        kept=_kept(machine),
        asked_max=machine.node.asked_max if machine.node else 0,
        spent=machine.spent(),
        ledger=machine.ledger.to_dict() if machine.ledger is not None else None,
        messages_up=agent.messages_up,
        messages_down=agent.messages_down,
        refused=agent.refused,
        dropped=agent.dropped,
    )


async def _watch_silence(agents: list[CadrAgent], watch: SilenceWatch) -> str:
    """Pump of a ``SilenceWatch``: feed it the shard's delivery count; return its sentence."""
    loop = asyncio.get_running_loop()
    heard = sum(agent.messages_down for agent in agents)
    watch.start(loop.time())
    if heard:  # a starved shard's devices took the plan before the watch began: started
        watch.heard(loop.time())
    while True:
        deadline = watch.next_timer()
        pause = 1.0 if deadline is None else min(1.0, max(0.0, deadline - loop.time()))
        await asyncio.sleep(pause)
        count = sum(agent.messages_down for agent in agents)
        if count != heard:
            heard = count
            watch.heard(loop.time())
        watch.handle_timer(loop.time())
        for event in watch.pop_events():
            if isinstance(event, CollectorSilent):
                return event.sentence


async def run_device_shard(
    graph: Graph,
    transport: Transport,
    run: str,
    seed: int,
    shard: int,
    shards: int,
    *,
    connect_concurrency: int = 64,
    subscribed: asyncio.Event | None = None,
    timeout: float | None = None,
    silence: SilenceWatch | None = None,
    stopped: Awaitable[str] | None = None,
    dropout: float = 0.0,
    dropout_stage: str = "after_shares",
    device_noise: str = "seeded",
) -> dict[str, DeviceStats]:
    """Run the devices ``i ≡ shard (mod shards)`` until each one's release is acked (or,
    for the ``dropout`` fraction the seed chose, until it crashed at ``dropout_stage``:
    ``scenarios.cadr_dropout``).

    Each device announces itself ready once subscribed (the collector's barrier waits for
    all). ``silence`` ends the shard when its devices hear nothing for its deadline, and
    ``stopped`` when it resolves (with a sentence, e.g. the collector closed the run):
    both raise ``ShardStopped`` with the sentence and the devices' stats so far."""
    names = device_names(graph)
    machines = _machines(graph, names, run, seed, range(shard, graph.n, shards), device_noise)
    gate = asyncio.Semaphore(connect_concurrency)
    dropping = dropped_devices(names, dropout, seed)
    agents = [
        CadrAgent(
            transport,
            machine,
            connect_gate=gate,
            dropout=dropout_stage if machine.device in dropping else None,
        )
        for machine in machines
    ]
    tasks = [asyncio.create_task(agent.run()) for agent in agents]
    guards: list[asyncio.Future] = []
    devices: asyncio.Future | None = None
    try:
        await _all_subscribed(agents, tasks)
        if subscribed is not None:
            subscribed.set()
        devices = asyncio.gather(*tasks)
        if silence is not None:
            guards.append(asyncio.ensure_future(_watch_silence(agents, silence)))
        if stopped is not None:
            guards.append(asyncio.ensure_future(stopped))
        done, _ = await asyncio.wait(
            [devices, *guards], timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if not done:
            raise TimeoutError(f"shard {shard}/{shards}: devices unfinished after {timeout} s")
        if devices not in done:
            sentence = done.pop().result()
            raise ShardStopped(sentence, {a.machine.device: _stats(a) for a in agents})
        devices.result()
    finally:
        for task in (*tasks, *guards):
            task.cancel()
        await asyncio.gather(*tasks, *guards, return_exceptions=True)
        if devices is not None and devices.done():
            with contextlib.suppress(BaseException):
                devices.exception()  # retrieved: a stopped shard's cancelled devices
    return {agent.machine.device: _stats(agent) for agent in agents}


async def every_set(events: list[asyncio.Event]) -> None:
    """Until every event is set. One task, not a gather of waits: a gather whose waits the
    loop cancels at shutdown (Ctrl-C) logged "_GatheringFuture exception was never
    retrieved"; a cancelled task logs nothing."""
    for event in events:
        await event.wait()


async def _all_subscribed(agents: list[CadrAgent], tasks: list[asyncio.Task]) -> None:
    """Wait until every agent has subscribed; raise the error of one that failed first."""
    listening = asyncio.ensure_future(every_set([a.subscribed for a in agents]))
    try:
        pending = {listening, *tasks}
        while not listening.done():
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done - {listening}:
                task.result()  # an agent that ended before it listened: its error
    finally:
        listening.cancel()


async def _spawn_shard(
    graph_spec: str, url: str, run: str, seed: int, shard: int, shards: int, concurrency: int,
    device_noise: str = "seeded",
) -> asyncio.subprocess.Process:  # fmt: skip
    """A device shard in a child process (``python -m ldpfleet.scenarios.cadr_shard``);
    its devices announce themselves to the collector's readiness barrier."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ldpfleet.scenarios.cadr_shard",
        graph_spec,
        url,
        run,
        str(seed),
        f"{shard}/{shards}",
        str(concurrency),
        device_noise,
        stdout=asyncio.subprocess.PIPE,
        limit=2**26,
        env=child_environment(),  # this run's credentials, not a concurrent run's (R7)
    )


async def _shard_stats(child: asyncio.subprocess.Process) -> dict[str, DeviceStats]:
    assert child.stdout is not None
    payload = await child.stdout.read()
    if await child.wait() != 0:
        raise RuntimeError(f"a device shard exited with {child.returncode}")
    lines = [line for line in payload.splitlines() if line.strip() and line.strip() != b"READY"]
    if not lines:
        raise RuntimeError("a device shard printed no stats")
    return {name: DeviceStats(**fields) for name, fields in json.loads(lines[-1]).items()}


@dataclass
class CollectedRun:
    """What the collector side ends with: the outcome and its timings."""

    outcome: CadrOutcome
    recorded: int  # messages in the trace
    started: float  # perf_counter when the collector side began listening
    joined: float  # ... when every device had joined
    finished: float  # ... after the release and the run's close
    # what the batching relay refused (the message layer's count, ``broker.relay``): bad
    # batches, control messages not from this run's collector; by reason key
    relay_rejections: dict[str, int] = field(default_factory=dict)


async def collect_cadr(
    transport: Transport,
    graph: Graph,
    settings: CadrSettings,
    run: str,
    *,
    listening: Callable[[], Awaitable[None]],
    join_timeout: float,
    store_path: str | Path | None = None,
    trace_path: str | Path | None = None,
    closing: Callable[[str], Awaitable[None]] | None = None,
    releases: ReleaseHook | None = None,
    trace_filters: tuple[str, ...] | None = None,
) -> CollectedRun:
    """The collector side of a run: trace recorder, relay, readiness barrier and collector.

    Once all of them listen it awaits ``listening()`` (announce the run, or start the
    devices); the collector starts its stages when every device joined (``join_timeout``
    seconds at most: ``collector.readiness.DevicesMissing``). Before the run's final
    ``stage run closed`` — and when a stage fails, with the failure's sentence —
    ``closing(reason)`` runs (the side's retained ``RunClosed``). A partitioned run's
    coordinator (``scenarios.cadr_partition``) passes ``releases`` (its workers run the DSR
    intake) and its recorder's ``trace_filters``."""
    names = device_names(graph)
    started = time.perf_counter()
    joined = [started]
    helpers: list[asyncio.Task] = []
    recorder = await _start_recorder(transport, run, settings, trace_path, trace_filters)
    if recorder is not None:
        helpers.append(asyncio.create_task(recorder.run_until_closed()))
        await recorder.subscribed.wait()
    relay_ready, barrier_ready, collector_ready = (asyncio.Event() for _ in range(3))
    relay = asyncio.create_task(
        run_peer_relay(
            transport, run, names, step_timeout=settings.stage_timeout, ready=relay_ready
        )
    )
    helpers.append(relay)

    async def devices_joined() -> None:
        await await_devices(transport, run, names, timeout=join_timeout, listening=barrier_ready)
        joined[0] = time.perf_counter()

    barrier = asyncio.create_task(devices_joined())
    collector = asyncio.create_task(
        _collector(transport, graph, settings, run, names, store_path, collector_ready,
                   barrier, releases)
    )  # fmt: skip
    try:
        for event in (relay_ready, barrier_ready, collector_ready):
            await _until(event, collector)
        await listening()
        outcome = await _close(transport, run, settings, collector, helpers, closing)
    finally:
        for task in (*helpers, barrier, collector):
            task.cancel()
        await asyncio.gather(*helpers, barrier, collector, return_exceptions=True)
    return CollectedRun(
        outcome,
        recorder.recorded if recorder else 0,
        started,
        joined[0],
        time.perf_counter(),
        relay_rejections=relay.result().rejections_by_reason,  # done: _close awaited it
    )


async def _start_recorder(
    transport: Transport, run: str, settings: CadrSettings, trace_path: str | Path | None,
    trace_filters: tuple[str, ...] | None,
) -> TraceRecorder | None:  # fmt: skip
    """The run's trace recorder (None without a trace): the control messages only with
    ``trace = "control"``, or the coordinator's ``trace_filters``."""
    if trace_path is None or settings.trace == "none":
        return None
    filters = cadr_trace_filters(run) if settings.trace == "control" else None
    filters = trace_filters if trace_filters is not None else filters
    return TraceRecorder(transport, run, trace_path, filters=filters)


def _collector(
    transport: Transport, graph: Graph, settings: CadrSettings, run: str, names: list[str],
    store_path: str | Path | None, ready: asyncio.Event, devices_ready: asyncio.Task,
    releases: ReleaseHook | None,
) -> Coroutine[Any, Any, CadrOutcome]:  # fmt: skip
    """``run_cadr_collector`` with the run's settings."""
    return run_cadr_collector(
        transport,
        run,
        names,
        eps=settings.eps,
        alpha=settings.alpha,
        method=settings.method,
        degree_bound=settings.bound_for(graph),
        theta_rule=settings.theta_plan(graph).rule,
        fanout=settings.fanout,
        spacing=settings.spacing,
        ndoe_parts=settings.ndoe_parts,
        max_rounds=settings.max_rounds,
        stage_timeout=settings.stage_timeout,
        store_path=store_path,
        ready=ready,
        devices_ready=devices_ready,
        pipeline=settings.pipeline,
        releases=releases,
        peer_deadline=settings.peer_deadline,
    )


async def _close(
    transport: Transport, run: str, settings: CadrSettings, collector: asyncio.Task,
    helpers: list[asyncio.Task], closing: Callable[[str], Awaitable[None]] | None,
) -> CadrOutcome:  # fmt: skip
    """The collector's outcome; ``closing(reason)`` (the failure's sentence, or
    "released"), then the run's close, then the recorder and relay end."""
    try:
        outcome = await collector
    except Exception as error:
        if closing is not None:
            await closing(str(error))
        raise
    if closing is not None:
        await closing("released")
    async with transport.connect(f"{run}-collector-close") as conn:
        await announce_run_closed(conn, run)
    for task in helpers:
        await asyncio.wait_for(task, settings.stage_timeout)
    return outcome


# the collector's broadcasts a CADR-LDP run's control trace records: not the relay's
# ``ctl/peer_step`` (one per round: their number and sequence numbers count the LPEA
# rounds, a function of every device's list, which stays with the message layer)
CADR_CONTROL_KINDS = ("cadr_plan", "cadr_query", "cadr_theta", "relay_phase", "stage", "run")


def cadr_trace_filters(run: str) -> tuple[str, ...]:
    """``broker.recorder.control_filters`` without the relay's step broadcasts: the
    collector's ``CADR_CONTROL_KINDS``, the releases and the service messages (the
    relay's ``PhaseReport`` holds public facts only)."""
    control = control_filters(run)
    ctl = topics.ctl_filter(run)
    assert ctl in control
    return (
        *(topics.ctl(run, kind) for kind in CADR_CONTROL_KINDS),
        *(f for f in control if f != ctl),
    )


async def _until(event: asyncio.Event, task: asyncio.Task) -> None:
    """Wait for ``event``; if ``task`` ends first (it failed early), raise its error."""
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait([waiter, task], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if not event.is_set():
        task.result()  # raises the task's error
        raise RuntimeError("the collector ended before it listened")


def collector_results(
    graph: Graph,
    settings: CadrSettings,
    collected: CollectedRun,
    *,
    broker: str,
    run: str,
    processes: int | None,
    started: float | None = None,
    device_noise: str | None = "seeded",
) -> dict:
    """The scores the collector side knows: the release (computed only from what the
    collector received) against the simulator's true degrees. ``complete_results`` adds
    the devices' part. ``started`` (perf_counter) counts the wall time from there.
    ``device_noise``: the devices' noise source, None when this side cannot tell (a split
    run's collector; the merge restates it, ``cadr_sides.merge_cadr_outputs``)."""
    outcome = collected.outcome
    names = device_names(graph)
    degrees = graph.degrees()
    # scored over the devices in the release: a device that dropped out released nothing
    scored = [i for i, name in enumerate(names) if name in outcome.released]
    scored_names = [names[i] for i in scored]
    raw, postprocessed = _release_scores(degrees[scored], scored_names, outcome, settings)
    final = postprocessed if outcome.estimates else raw
    plan = settings.theta_plan(graph)
    budget = CadrBudget.for_pipeline(
        settings.eps, settings.alpha, settings.pipeline, plan.searched, len(names),
        settings.method,
    )  # fmt: skip
    begin = collected.started if started is None else started
    bound = settings.bound_and_source(graph)  # (D, its source): read once
    return {
        "broker": broker,
        "run": run,
        "processes": processes,
        "devices": graph.n,
        "edges": graph.edges(),
        **_settings_fields(settings, bound),
        "theta": outcome.theta,
        "theta_rule": str(settings.theta),
        "theta_chosen_by": plan.chosen_by,
        "theta_fanout": settings.fanout,
        "theta_spacing": settings.spacing,
        "theta_rounds": outcome.theta_rounds,
        "theta_queries": outcome.theta_queries,
        "theta_search": _theta_search(degrees, outcome, budget, bound[0]),
        "budget": _charged_split(budget, settings.method),
        "privacy_claim": privacy_claim(
            budget,
            settings.method,
            deadline=settings.peer_deadline,
            overrun=_overrun(outcome),
            theta_searched=plan.searched,
            degree_bound=bound,
            small_fleet=plan.small_fleet,
            device_noise=device_noise,
        ),
        "device_noise": device_noise,
        "mae": final["mae"],
        "mse": final["mse"],
        "distribution_l1": final["histogram_l1"],
        "histogram_emd": final["histogram_emd"],
        "raw": raw,
        "postprocessed": postprocessed,
        "baselines": trivial_baselines(degrees[scored]),
        **_dropout_fields(graph, settings, outcome, len(scored)),
        # public: the cap the collector asked for; the relay's counts (rounds, supersteps,
        # items, edges added) stay with the relay (protocol.peer_relay, Trust)
        "lpea_round_cap": outcome.phases.get("lpea", {}).get("max_rounds"),
        "rejected_by_collector": outcome.rejected,
        # the message layer's refusals (bad batches, control not from the collector): each
        # also published on svc/relay/reject; counted here so results.json shows them
        "rejected_by_relay": sum(collected.relay_rejections.values()),
        "relay_rejections_by_reason": dict(sorted(collected.relay_rejections.items())),
        "budget_refusals": outcome.budget_refusals,
        "stage_seconds": outcome.stage_seconds,
        "connect_seconds": round(collected.joined - begin, 3),
        "seconds": round(collected.finished - begin, 3),
        "trace_messages": collected.recorded,
        "warnings": [
            *release_warnings(budget.dsr, len(names), searched=plan.searched),
            *_dropout_warnings(graph, settings, outcome),
        ],
        **_release_fields(names, degrees, outcome, graph.ids),
    }


def _dropout_fields(
    graph: Graph, settings: CadrSettings, outcome: CadrOutcome, scored: int
) -> dict:
    """results.json ``dropped`` and ``scored_over`` when devices dropped out (or a
    ``dropout`` was configured): the configured fraction and stage, the devices whose last
    will the collector heard and that released nothing (count and ids), and the sentence
    saying the error figures and baselines cover the released devices only."""
    gone = sorted(d for d in outcome.departed if d not in outcome.released)
    if not settings.dropout and not gone:
        return {}
    index = {name: i for i, name in enumerate(device_names(graph))}
    ids = None if graph.ids is None else [np.asarray(graph.ids[index[d]]).item() for d in gone]
    return {
        "dropped": {
            "fraction": settings.dropout,
            "stage": settings.dropout_stage,
            "count": len(gone),
            "devices": gone,
            **({} if ids is None else {"node_ids": ids}),
        },
        "scored_over": (
            f"the {scored} released devices of {graph.n}: mae, mse, the histogram "
            f"distances, raw, postprocessed and baselines leave out the {len(gone)} that "
            "dropped out (they released nothing)"
        ),
    }


def _dropout_warnings(graph: Graph, settings: CadrSettings, outcome: CadrOutcome) -> list[str]:
    """A sentence when the θ search's secure sum may abort for this dropout more often
    than 1e-3 (``cadr_dropout.abort_risk_warnings``), and one when the devices that
    dropped out are not those ``[cadr] dropout`` chose (a fleet side that ignored it)."""
    if not settings.dropout:
        return []
    risk = abort_risk_warnings(settings.dropout, settings.dropout_stage, graph.n)
    chosen = settings.dropped(graph)
    gone = {d for d in outcome.departed if d not in outcome.released}
    if gone == chosen:
        return risk
    return [
        *risk,
        f"dropout: {len(chosen)} devices were to drop out ({settings.dropout_stage}) and "
        f"{len(gone)} did, {len(chosen ^ gone)} of them not the chosen ones: a fleet side "
        "that does not take [cadr] dropout ran this run's devices",
    ]


def _settings_fields(settings: CadrSettings, bound: tuple) -> dict:
    """The run's public settings and its degree bound D with D's source."""
    return {
        "method": settings.method,
        "pipeline": settings.pipeline,
        "eps": settings.eps,
        "alpha": settings.alpha,
        "seed": settings.seed,
        "degree_bound": bound[0],
        "degree_bound_source": bound[1],
    }


def _release_scores(
    degrees: np.ndarray, names: list[str], outcome: CadrOutcome, settings: CadrSettings
) -> tuple[dict, dict]:
    """Scores of the raw DSR release and of the post-processed one (the dp pipeline's
    release; for the paper's, its post-processing computed here for comparison)."""
    released = np.array([outcome.released[name] for name in names])
    raw = score(degrees, released, outcome.histogram)
    if outcome.estimates:  # the dp pipeline's release
        estimates = np.array([outcome.estimates[name] for name in names])
        histogram = np.array(outcome.estimate_histogram)
    else:  # the paper's release; its post-processing scored for comparison
        paper = CadrBudget(settings.eps, settings.alpha, negotiation=negotiates(settings.method))
        post = post_process(released, outcome.theta, paper.dsr)
        estimates, histogram = post.estimates, post.histogram
    return raw, score(degrees, estimates, histogram)


def _release_fields(
    names: list[str], degrees: np.ndarray, outcome: CadrOutcome, ids: np.ndarray | None = None
) -> dict:
    """The release (values, histograms) and each device's degree, release and errors;
    ``node_id``: the node's id in the graph file (``Graph.ids``: an integer or a label),
    when the graph came from one — the devices are named n0000 ... in sorted id order, and
    a user's own graph (``dev_1a dev_2f``) had no way back to its nodes (helper G's user
    trial, 2026-12-06)."""
    final_values = outcome.estimates or outcome.released  # the release "mae" scores
    node_ids = [None] * len(names) if ids is None else [np.asarray(i).item() for i in ids]
    return {
        "released": outcome.released,
        "histogram": outcome.histogram,
        **({"estimate_histogram": outcome.estimate_histogram} if outcome.estimates else {}),
        "per_device": {
            name: {
                **({} if node_id is None else {"node_id": node_id}),
                "degree": int(d),
                # the stage it crashed at, else (a budget refusal) no release
                **(
                    {"dropped": outcome.departed[name]}
                    if name in outcome.departed
                    else {"released": None}
                ),
            }
            if name not in outcome.released
            else {
                **({} if node_id is None else {"node_id": node_id}),
                "degree": int(d),
                # "released": the raw DSR value; "estimate" (dp): the post-processed release.
                # abs_error: the error of the pipeline's release (what "mae" averages);
                # raw_abs_error: the raw DSR value's (what raw.mae averages; docs/cadr.md)
                "released": outcome.released[name],
                **({"estimate": outcome.estimates[name]} if outcome.estimates else {}),
                "abs_error": float(abs(d - final_values[name])),
                "raw_abs_error": float(abs(d - outcome.released[name])),
            }
            for name, d, node_id in zip(names, degrees, node_ids, strict=True)
        },
    }


def _charged_split(budget: CadrBudget, method: str) -> dict[str, float]:
    """results.json's ``budget``: the parts a device of ``method`` charges (``ra`` runs no
    NDOE, so its split has no ``ndoe``: it summed to ε while each ledger holds (1 - α/2)ε)."""
    split = budget.as_dict()
    if method == "ra":
        split.pop("ndoe")
    return split


def _overrun(outcome) -> dict[str, float]:
    """The relay phases that ended after the public deadline, with the seconds the
    collector saw them run past it (empty without a deadline)."""
    return {
        phase: figures["overrun_seconds"]
        for phase, figures in outcome.phases.items()
        if figures.get("overran")
    }


def _theta_search(degrees: np.ndarray, outcome, budget: CadrBudget, bound: int) -> dict | None:
    """The DP θ search's figures: its ε, the noise's parties, the θ chosen from the noisy
    counts and ``theta_exact``, the θ the same rule picks from the TRUE counts (the
    simulator's; the non-private optimum of that rule)."""
    if budget.theta <= 0 or not outcome.theta_queries:
        return None
    query = outcome.theta_queries[-1]
    thresholds = query["thresholds"]
    n = len(degrees)
    # the true counts over the devices the sum covered (not those that left before it)
    left = set(query.get("dropped", ()))
    summed = degrees[np.array([name not in left for name in device_names_of(n)], dtype=bool)]
    exact = np.array([int(np.sum(summed > t)) for t in thresholds])
    target = deviation_target(len(summed), budget.dsr, noise_weight(budget.dsr))
    return {
        "eps": budget.theta,
        "mechanism": THETA_MECHANISM,
        "noise_parties": noise_parties(n),
        "survivors": query["survivors"],
        "theta": outcome.theta,
        "theta_exact": theta_from_counts(thresholds, exact, target, bound),
        "counts_error_max": int(np.max(np.abs(np.array(query["counts"]) - exact))),
    }


def complete_results(partial: dict, stats: dict[str, DeviceStats]) -> dict:
    """``collector_results`` (or the collector side's results.json) plus what only the
    devices know — the results of ``ldpfleet run``, keys in its order. ``stats`` must
    cover every device. The kept edges and the Thm 3.5 bounds cover the devices in the
    release, ``ledger_exact`` every device that did not drop out (a device that dropped out
    released nothing, and its ledger holds only what it spent before: ``ledgers``,
    ``ledger_min``; one that refused its budget makes ``ledger_exact`` false)."""
    every = list(partial["per_device"])
    missing = [name for name in every if name not in stats]
    if missing:
        raise ValueError(f"no device stats for {len(missing)} devices ({missing[:5]})")
    names = [name for name in every if name in partial["released"]]
    budget = CadrBudget(partial["eps"], partial["alpha"])
    # clip's bound reads its own ε_dsr (the run's split); the others keep the paper's
    clip = not negotiates(partial["method"])
    eps_dsr = partial.get("budget", {}).get("dsr", budget.dsr) if clip else budget.dsr
    theta = partial["theta"]
    per_device = {name: dict(partial["per_device"][name]) for name in every}
    degrees = np.array([per_device[name]["degree"] for name in names])
    released = np.array([partial["released"][name] for name in names])
    kept = np.array([stats[name].kept for name in names])
    bounds = [
        thm35_bound(int(d), theta, stats[name].asked_max, budget.lpea, eps_dsr)
        for d, name in zip(degrees, names, strict=True)
    ]
    for name, bound in zip(names, bounds, strict=True):
        per_device[name]["thm35_bound"] = bound
    spent = [stats[name].spent for name in every]
    # every device that did not drop out (one that refused its budget makes it false)
    stayed = [name for name in every if "dropped" not in per_device[name]]
    exact = [math.isclose(stats[n].spent, partial["eps"], rel_tol=1e-9) for n in stayed]
    devices = {
        "kept_edge_ratio": kept_edge_ratio(degrees, kept),
        "max_kept_degree": int(kept.max()) if kept.size else 0,
        "bound_mean": float(np.mean(bounds)) if bounds else None,
        # Thm 3.5 bounds the expected |d - d~|; one release per device, so this is the
        # share of devices whose single error is within its bound (a sanity check)
        "bound_holds": float(np.mean(np.abs(degrees - released) <= np.array(bounds)))
        if bounds
        else None,
        "ledger_min": min(spent),
        "ledger_max": max(spent),
        "ledger_exact": all(exact) if partial["method"] != "ra" else None,
        "device_messages_up": sum(stats[name].messages_up for name in every),
        "device_messages_down": sum(stats[name].messages_down for name in every),
        "refused_by_devices": sum(stats[name].refused for name in every),
        "ledgers": {name: stats[name].ledger for name in every},
        "per_device": per_device,
    }
    merged = {**partial, **devices}
    ordered = {key: merged[key] for key in RESULT_KEYS if key in merged}
    return {**ordered, **{k: v for k, v in merged.items() if k not in ordered}}


async def run_cadr_fleet(
    graph: Graph,
    *,
    broker: str | Transport = "memory",
    method: str = "ll",
    theta: str | int = "auto-dev",
    eps: float = 3.0,
    alpha: float = 0.1,
    seed: int = 0,
    fanout: int = 1,
    spacing: str = "linear",
    ndoe_parts: int = 16,
    degree_bound: int | str = "auto",
    max_rounds: int = 100,
    stage_timeout: float = 120.0,
    store_path: str | Path | None = None,
    run: str | None = None,
    connect_concurrency: int = 64,
    trace_path: str | Path | None = None,
    trace: str = "control",
    processes: int = 1,
    graph_spec: str | None = None,
    pipeline: str = "dp",
    peer_deadline: float = 0.0,
    dropout: float = 0.0,
    dropout_stage: str = "after_shares",
    device_noise: str = "seeded",
) -> dict:
    """One fleet run; returns the scores and the run's figures (module docstring).

    ``dropout``: that seeded fraction of the devices crash for good at ``dropout_stage``
    of the θ search's secure sum (``scenarios.cadr_dropout``; devices in this process
    only: ``processes`` 1).

    The collector side (``collect_cadr``) and the device shards (``run_device_shard``)
    over one transport. ``processes > 1`` (a real broker only) runs the devices in that
    many processes: this one (with the collector and the relay) and ``processes - 1``
    children, each loading the graph from ``graph_spec``. Device ``i`` is the same machine
    with the same seed wherever it runs, so the release does not change."""
    settings = CadrSettings(
        method=method, theta=theta, eps=eps, alpha=alpha, seed=seed, fanout=fanout,
        spacing=spacing, ndoe_parts=ndoe_parts, degree_bound=degree_bound,
        max_rounds=max_rounds, stage_timeout=stage_timeout,
        connect_concurrency=connect_concurrency, trace=trace, pipeline=pipeline,
        peer_deadline=peer_deadline, dropout=dropout, dropout_stage=dropout_stage,
    )  # fmt: skip
    settings.bound_for(graph)  # a typed error (θ above D, ...) before any device starts
    settings.check_fleet_size(graph)  # the θ search's one secure-sum session
    settings.check_dropout(graph)
    check_device_noise(device_noise)
    check_whole(processes, "processes", 1, MAX_PROCESSES)
    if dropout and processes > 1:
        raise ParameterError(
            f"dropout = {dropout:g} runs the fleet in this process (the device shards of "
            f"other processes do not take it), got processes = {processes}",
            field="processes",
            limit="1 with a dropout",
            value=processes,
        )
    run = run or f"cadr-{secrets.token_hex(3)}"
    started = time.perf_counter()
    async with open_broker(broker) as (transport, info):
        if processes > 1 and (info.kind == "memory" or graph_spec is None):
            raise ParameterError(
                f"{processes} processes need a real broker (not the in-memory transport) "
                "and graph_spec, the graph each child process loads",
                field="processes",
                limit="1 on the in-memory transport or without graph_spec",
                value=processes,
            )
        shards = _DeviceShards(graph, transport, info.url, run, seed, processes,
                               connect_concurrency, graph_spec,
                               dropout=(settings.dropout, settings.dropout_stage),
                               device_noise=device_noise)  # fmt: skip
        try:
            collected = await collect_cadr(
                transport,
                graph,
                settings,
                run,
                listening=shards.start,
                join_timeout=stage_timeout,
                store_path=store_path,
                trace_path=trace_path,
            )
            stats = await shards.stats(stage_timeout)
        finally:
            await shards.stop()
    partial = collector_results(
        graph, settings, collected, broker=info.kind, run=run, processes=processes,
        started=started, device_noise=device_noise,
    )  # fmt: skip
    partial["seconds"] = round(time.perf_counter() - started, 3)
    return complete_results(partial, stats)


@dataclass
class _DeviceShards:
    """``run_cadr_fleet``'s device shards: shard 0 a task of this process, shards
    1 .. processes - 1 child processes (``_spawn_shard``), started once the collector
    listens."""

    graph: Graph
    transport: Transport
    url: str
    run: str
    seed: int
    processes: int
    connect_concurrency: int
    graph_spec: str | None
    dropout: tuple[float, str] = (0.0, "after_shares")  # [cadr] dropout, dropout_stage
    device_noise: str = "seeded"  # [privacy] device_noise (devices.noise_entropy)
    local: list[asyncio.Task] = field(default_factory=list)
    children: list[asyncio.subprocess.Process] = field(default_factory=list)

    async def start(self) -> None:
        """Shard 0 here, the others as processes (``listening`` of ``collect_cadr``)."""
        self.local.append(
            asyncio.create_task(
                run_device_shard(
                    self.graph, self.transport, self.run, self.seed, 0, self.processes,
                    connect_concurrency=self.connect_concurrency,
                    dropout=self.dropout[0], dropout_stage=self.dropout[1],
                    device_noise=self.device_noise,
                )
            )
        )  # fmt: skip
        for shard in range(1, self.processes):
            self.children.append(
                await _spawn_shard(
                    self.graph_spec, self.url, self.run, self.seed, shard, self.processes,
                    self.connect_concurrency, self.device_noise,
                )
            )  # fmt: skip

    async def stats(self, timeout: float) -> dict:
        """Every shard's device statistics (each waited for at most ``timeout``)."""
        # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that
        # lands as the awaited result arrives (CPython gh-86296)
        async with asyncio.timeout(timeout):
            stats = await self.local[0]
        for child in self.children:
            async with asyncio.timeout(timeout):
                stats.update(await _shard_stats(child))
        return stats

    async def stop(self) -> None:
        """Cancel the local shard, kill the children still running."""
        for task in self.local:
            task.cancel()
        await asyncio.gather(*self.local, return_exceptions=True)
        for child in self.children:
            if child.returncode is None:
                child.kill()
                await child.wait()


async def run_cadr_scenario(
    scenario,
    *,
    broker: str | Transport | None = None,
    out_dir: str | Path = "runs/latest",
    seed: int | None = None,
    run_id: str | None = None,
    processes: int | None = None,
) -> dict:
    """A CADR-LDP scenario (``[graph]`` + ``[cadr]``): run it and write ``results.json``,
    ``ledger.json``, ``collector.sqlite`` (the persisted releases) and ``trace.sqlite``."""
    spec = scenario.spec
    cadr = spec.cadr
    graph, source = load_scenario_graph(scenario)  # a refusal leaves no output folder
    out = fresh_outputs(out_dir)
    broker = broker or spec.broker.url
    if processes is None:  # the devices use both cores where a real broker allows it
        # (a dropout runs them in this process: run_cadr_fleet)
        processes = cadr.processes if broker != "memory" and not cadr.dropout else 1
    result = await run_cadr_fleet(
        graph,
        broker=broker,
        method=cadr.method,
        theta=cadr.theta,
        eps=cadr.eps,
        alpha=cadr.alpha,
        seed=spec.scenario.seed if seed is None else seed,
        fanout=cadr.fanout,
        spacing=cadr.spacing,
        ndoe_parts=cadr.ndoe_parts,
        degree_bound=cadr.degree_bound,
        max_rounds=cadr.max_rounds,
        stage_timeout=cadr.stage_timeout,
        store_path=out / "collector.sqlite",
        run=run_id or f"{scenario.name}-{secrets.token_hex(3)}",
        connect_concurrency=cadr.connect_concurrency,
        trace_path=out / "trace.sqlite",
        trace=cadr.trace,
        processes=processes,
        graph_spec=source,
        pipeline=cadr.pipeline,
        peer_deadline=cadr.peer_deadline_seconds,
        dropout=cadr.dropout,
        dropout_stage=cadr.dropout_stage,
        device_noise=spec.privacy.device_noise,
    )
    return write_cadr_results(out, {"scenario": scenario_header(scenario), **result})


STALE_ARRAYS = ("reconstructions.npz", "truth_sample.npz")  # written only by some runs
# what a run writes when it ends (a bulk run no ledger.json, ``ldpfleet.run`` no
# report.html): a run that stops early, or writes fewer of them, must not leave the earlier
# run's beside its own trace (``read_results`` / ``read_ledger`` read them as this run's)
RUN_SUMMARIES = ("results.json", "ledger.json", "report.html")


def _an_earlier_runs(path: Path) -> bool:
    """Whether ``path`` (a ``RUN_SUMMARIES`` name) is an earlier ldpfleet run's: a JSON
    object with a ``run`` or ``scenario`` key or a device ledger (an object with
    ``accounts``) — results.json and ledger.json of every kind of run —, or a page
    saying "ldpfleet report" near its top. A user's own file of that name in a folder given
    as OUT is left alone (review R7: the names are generic)."""
    try:
        if path.suffix == ".json":
            data = path.read_bytes()
            if not data.lstrip().startswith(b"{"):
                return False
            document = json.loads(data)
            return isinstance(document, dict) and (
                "run" in document
                or "scenario" in document
                or any(isinstance(v, dict) and "accounts" in v for v in document.values())
            )
        with path.open("rb") as file:
            return b"ldpfleet report" in file.read(1 << 16)
    except (OSError, ValueError):
        return False


# a partitioned run's per-partition trace and store (``scenarios.merge``), with side files
PARTITION_FILES = re.compile(r"(trace|collector)-p\d+\.sqlite(-wal|-shm)?")


def fresh_outputs(out_dir: str | Path) -> Path:
    """Create ``out_dir`` and delete a previous run's SQLite files there (a partitioned
    run's ``trace-p{p}.sqlite`` and ``collector-p{p}.sqlite`` too: ``ldpfleet.read_reports``
    and ``trace verify`` read them as the run's), and the arrays only some runs write (a
    run without reconstruction would leave the earlier run's ``reconstructions.npz``
    beside its own results), and the summaries an earlier run wrote at its end
    (``RUN_SUMMARIES``: a stopped run leaves no results.json, a bulk run no ledger.json)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in RUN_SUMMARIES:
        if _an_earlier_runs(out / name):
            (out / name).unlink()
    for name in ("trace.sqlite", "collector.sqlite"):
        remove_trace(out / name)  # (the store is SQLite with the same side files)
    for stale in out.glob("*-p*.sqlite*"):
        if PARTITION_FILES.fullmatch(stale.name):
            stale.unlink(missing_ok=True)
    for name in STALE_ARRAYS:
        (out / name).unlink(missing_ok=True)
    return out


def scenario_header(scenario, seed: int | None = None) -> dict:
    """results.json's ``scenario`` entry: name, path, the seed (when given) and the
    validated spec (every kind of run writes it so)."""
    header = {"name": scenario.name, "path": str(scenario.path) if scenario.path else None}
    if seed is not None:
        header["seed"] = seed
    return {**header, "spec": scenario.to_dict()}


def ledger_document(ledgers: dict[str, dict | None], run: str | None) -> dict:
    """A CADR-LDP ``ledger.json``: ``run`` (the run id, when known) and device -> ledger at
    the top level. Readers take the devices as the entries that are objects with
    ``accounts``; the run id lets ``trace verify`` refuse another run's ledgers
    (``ledger_run``: the same scenario and seed charge the same, so a swapped file agreed)."""
    head = {"run": run} if run is not None else {}
    return {**head, **ledgers}


def write_cadr_results(out: Path, results: dict) -> dict:
    """Write ``results.json`` and (when the results hold them) the devices' ledgers as
    ``ledger.json`` (``ledger_document``: with the run id); returns the results without
    the ledgers."""
    results = dict(results)
    ledgers = results.pop("ledgers", None)
    write_results(out / "results.json", results, indent=2)
    if ledgers is not None:
        run = results.get("run")
        document = ledger_document(ledgers, str(run) if run is not None else None)
        write_results(out / "ledger.json", document, indent=2)
    return results
