"""Run CADR-LDP end to end on a device fleet over a transport, and score it.

``run_cadr_fleet`` puts one ``CadrDevice`` (with its own connection) on every node of a
graph, the batching relay (``broker.relay``) and the collector (``collector.cadr_fleet``)
on a broker (``memory``, ``embedded`` or an ``mqtt://`` URL), runs the protocol, and —
because the simulator knows the true graph — scores the release: degree-sequence MAE and
MSE, degree-distribution L1 distance, kept-edge ratio, the mean Thm 3.5 bound, and each
device's ledger. Device ``i``'s randomness is ``numpy.random.default_rng([seed, i])``, so a
seed gives the same release on every transport.
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ldpfleet.broker.recorder import TraceRecorder, control_filters
from ldpfleet.broker.relay import run_peer_relay
from ldpfleet.broker.select import open_broker
from ldpfleet.broker.transport import Transport
from ldpfleet.collector.cadr_fleet import run_cadr_collector
from ldpfleet.collector.projection import degree_distribution_mae, kept_edge_ratio
from ldpfleet.collector.service import announce_run_closed
from ldpfleet.collector.theta_search import thm35_bound
from ldpfleet.devices.cadr_agent import CadrAgent
from ldpfleet.devices.graphs import Graph
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.protocol.cadr_device import CadrDevice

__all__ = ["device_names", "run_cadr_fleet"]

FLEET_METHODS = ("ll", "lh", "ra")


def device_names(graph: Graph) -> list[str]:
    """``n0000``, ``n0001``, ...: node ``i`` of the graph is device ``names[i]``."""
    width = max(4, len(str(graph.n - 1)))
    return [f"n{i:0{width}d}" for i in range(graph.n)]


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


def _machines(graph: Graph, names: list[str], run: str, seed: int, indices) -> list[CadrDevice]:
    return [
        CadrDevice(
            run,
            names[i],
            [names[j] for j in graph.neighbours(i)],
            np.random.default_rng([seed, i]),
        )
        for i in indices
    ]


def _stats(agent: CadrAgent) -> DeviceStats:
    machine = agent.machine
    return DeviceStats(
        kept=len(machine.node.kept) if machine.node else 0,
        asked_max=machine.node.asked_max if machine.node else 0,
        spent=machine.spent(),
        ledger=machine.ledger.to_dict() if machine.ledger is not None else None,
        messages_up=agent.messages_up,
        messages_down=agent.messages_down,
        refused=agent.refused,
    )


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
) -> dict[str, DeviceStats]:
    """Run the devices ``i ≡ shard (mod shards)`` until each one's release is acked."""
    names = device_names(graph)
    machines = _machines(graph, names, run, seed, range(shard, graph.n, shards))
    gate = asyncio.Semaphore(connect_concurrency)
    agents = [CadrAgent(transport, machine, connect_gate=gate) for machine in machines]
    tasks = [asyncio.create_task(agent.run()) for agent in agents]
    try:
        await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
        if subscribed is not None:
            subscribed.set()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {agent.machine.device: _stats(agent) for agent in agents}


async def _spawn_shard(
    graph_spec: str, url: str, run: str, seed: int, shard: int, shards: int, concurrency: int
) -> asyncio.subprocess.Process:
    """A device shard in a child process (``python -m ldpfleet.scenarios.cadr_shard``); returns once
    its devices have all subscribed (it prints ``READY``)."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ldpfleet.scenarios.cadr_shard",
        graph_spec,
        url,
        run,
        str(seed),
        f"{shard}/{shards}",
        str(concurrency),
        stdout=asyncio.subprocess.PIPE,
        limit=2**26,
    )
    assert child.stdout is not None
    line = await child.stdout.readline()
    if line.strip() != b"READY":
        await child.wait()
        raise RuntimeError(f"device shard {shard}/{shards} failed to start ({line[:200]!r})")
    return child


async def _shard_stats(child: asyncio.subprocess.Process) -> dict[str, DeviceStats]:
    assert child.stdout is not None
    payload = await child.stdout.read()
    if await child.wait() != 0:
        raise RuntimeError(f"a device shard exited with {child.returncode}")
    return {name: DeviceStats(**fields) for name, fields in json.loads(payload).items()}


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
    degree_bound: int | None = None,
    max_rounds: int = 100,
    stage_timeout: float = 120.0,
    store_path: str | Path | None = None,
    run: str | None = None,
    connect_concurrency: int = 64,
    trace_path: str | Path | None = None,
    trace: str = "control",
    processes: int = 1,
    graph_spec: str | None = None,
) -> dict:
    """One fleet run; returns the scores and the run's figures (module docstring).

    ``processes > 1`` (a real broker only) runs the devices in that many processes: this
    one (with the collector and the relay) and ``processes - 1`` children, each loading
    the graph from ``graph_spec``. Device ``i`` is the same machine with the same seed
    wherever it runs, so the release does not change."""
    if method not in FLEET_METHODS:
        raise ValueError(
            f"method {method!r}: the fleet runs {', '.join(FLEET_METHODS)} "
            "(er is a centralised baseline: use the reference pipeline)"
        )
    budget = CadrBudget(eps, alpha)
    run = run or f"cadr-{secrets.token_hex(3)}"
    names = device_names(graph)
    degrees = graph.degrees()
    bound = int(degree_bound or max(int(degrees.max()), 1))
    started = time.perf_counter()
    async with open_broker(broker) as (transport, info):
        if processes > 1 and (info.kind == "memory" or graph_spec is None):
            raise ValueError("processes > 1 needs a real broker and graph_spec")
        recorder = None
        recorder_task = None
        if trace_path is not None and trace != "none":
            filters = control_filters(run) if trace == "control" else None
            recorder = TraceRecorder(transport, run, trace_path, filters=filters)
            recorder_task = asyncio.create_task(recorder.run_until_closed())
            await recorder.subscribed.wait()
        relay_ready = asyncio.Event()
        relay_task = asyncio.create_task(
            run_peer_relay(transport, run, names, step_timeout=stage_timeout, ready=relay_ready)
        )
        children = [
            await _spawn_shard(
                graph_spec, info.url, run, seed, shard, processes, connect_concurrency
            )
            for shard in range(1, processes)
        ]
        local_ready = asyncio.Event()
        local_task = asyncio.create_task(
            run_device_shard(
                graph,
                transport,
                run,
                seed,
                0,
                processes,
                connect_concurrency=connect_concurrency,
                subscribed=local_ready,
            )
        )
        try:
            await relay_ready.wait()
            await local_ready.wait()
            connected = time.perf_counter()
            outcome = await run_cadr_collector(
                transport,
                run,
                names,
                eps=eps,
                alpha=alpha,
                method=method,
                degree_bound=bound,
                theta_rule=theta,
                fanout=fanout,
                spacing=spacing,
                ndoe_parts=ndoe_parts,
                max_rounds=max_rounds,
                stage_timeout=stage_timeout,
                store_path=store_path,
            )
            stats = await asyncio.wait_for(local_task, stage_timeout)
            for child in children:
                stats.update(await asyncio.wait_for(_shard_stats(child), stage_timeout))
            async with transport.connect(f"{run}-collector-close") as conn:
                await announce_run_closed(conn, run)
            await asyncio.wait_for(relay_task, stage_timeout)
            if recorder_task is not None:
                await asyncio.wait_for(recorder_task, stage_timeout)
        finally:
            helpers = [local_task, relay_task] + ([recorder_task] if recorder_task else [])
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            for child in children:
                if child.returncode is None:
                    child.kill()
                    await child.wait()
    finished = time.perf_counter()
    released = np.array([outcome.released[name] for name in names])
    kept = np.array([stats[name].kept for name in names])
    theta_used = outcome.theta
    rounded = np.repeat(np.arange(theta_used + 1), outcome.histogram)
    bounds = [
        thm35_bound(int(d), theta_used, stats[name].asked_max, budget.lpea, budget.dsr)
        for d, name in zip(degrees, names, strict=True)
    ]
    spent = [stats[name].spent for name in names]
    lpea = outcome.phases.get("lpea", {})
    return {
        "broker": info.kind,
        "run": run,
        "processes": processes,
        "devices": graph.n,
        "edges": graph.edges(),
        "method": method,
        "eps": eps,
        "alpha": alpha,
        "seed": seed,
        "theta": theta_used,
        "theta_rule": str(theta),
        "theta_fanout": fanout,
        "theta_spacing": spacing,
        "theta_rounds": outcome.theta_rounds,
        "theta_queries": outcome.theta_queries,
        "mae": float(np.mean(np.abs(degrees - released))),
        "mse": float(np.mean((degrees - released) ** 2)),
        "distribution_l1": degree_distribution_mae(degrees, rounded, reduce="sum"),
        "kept_edge_ratio": kept_edge_ratio(degrees, kept),
        "max_kept_degree": int(kept.max()) if kept.size else 0,
        "bound_mean": float(np.mean(bounds)),
        # Thm 3.5 bounds the expected |d - d~|; one release per device, so this is the
        # share of devices whose single error is within its bound (a sanity check)
        "bound_holds": float(np.mean(np.abs(degrees - released) <= np.array(bounds))),
        "ledger_min": min(spent),
        "ledger_max": max(spent),
        "ledger_exact": all(math.isclose(s, eps, rel_tol=1e-9) for s in spent)
        if method != "ra"
        else None,
        "lpea_rounds": lpea.get("rounds"),
        "lpea_supersteps": lpea.get("supersteps"),
        "peer_items": sum(p.get("items", 0) for p in outcome.phases.values()),
        "relay_batches": sum(p.get("batches", 0) for p in outcome.phases.values()),
        "device_messages_up": sum(st.messages_up for st in stats.values()),
        "device_messages_down": sum(st.messages_down for st in stats.values()),
        "refused_by_devices": sum(st.refused for st in stats.values()),
        "rejected_by_collector": outcome.rejected,
        "budget_refusals": outcome.budget_refusals,
        "stage_seconds": outcome.stage_seconds,
        "connect_seconds": round(connected - started, 3),
        "seconds": round(finished - started, 3),
        "trace_messages": recorder.recorded if recorder else 0,
        "ledgers": {name: stats[name].ledger for name in names},
        "released": outcome.released,
        "histogram": outcome.histogram,
        "per_device": {
            name: {
                "degree": int(d),
                "released": outcome.released[name],
                "abs_error": float(abs(d - outcome.released[name])),
                "thm35_bound": bound,
            }
            for name, d, bound in zip(names, degrees, bounds, strict=True)
        },
    }


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
    from ldpfleet.devices.graphs import NAMED_GRAPHS, load_graph
    from ldpfleet.scenarios.schema import resolve_data_path

    spec = scenario.spec
    cadr = spec.cadr
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("trace.sqlite", "collector.sqlite"):
        for suffix in ("", "-wal", "-shm"):
            (out / f"{name}{suffix}").unlink(missing_ok=True)
    source = spec.graph.source
    if source not in NAMED_GRAPHS and ":" not in source:
        source = str(resolve_data_path(source, scenario.path))
    graph = load_graph(source)
    broker = broker or spec.broker.url
    if processes is None:  # the devices use both cores where a real broker allows it
        processes = cadr.processes if broker != "memory" else 1
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
        max_rounds=cadr.max_rounds,
        stage_timeout=cadr.stage_timeout,
        store_path=out / "collector.sqlite",
        run=run_id or f"{scenario.name}-{secrets.token_hex(3)}",
        connect_concurrency=cadr.connect_concurrency,
        trace_path=out / "trace.sqlite",
        trace=cadr.trace,
        processes=processes,
        graph_spec=source,
    )
    ledgers = result.pop("ledgers")
    results = {
        "scenario": {
            "name": scenario.name,
            "path": str(scenario.path) if scenario.path else None,
            "spec": scenario.to_dict(),
        },
        **result,
    }
    (out / "results.json").write_text(json.dumps(results, indent=2))
    (out / "ledger.json").write_text(json.dumps(ledgers, indent=2))
    return results
