"""Benchmarks that print JSON (``ldpfleet bench ...``). Targets live here, never in tests."""

from __future__ import annotations

import asyncio
import resource
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ldpfleet.app.procstat import PeakRss, listening_pid
from ldpfleet.broker.mqtt import parse_broker_url
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from ldpfleet.scenarios.split_run import run_split

# ``--connection gateway`` forwards in bulk (protocol/bulk.py) above this many devices: the
# largest fleet the per-device gateway was measured with (docs/scaling.md: 100,000 devices,
# ~43 KB of Python objects per device across the fleet and collector processes, 4.3 GB;
# 10^6 would need ~43 GB). ``--connection bulk`` forwards in bulk at any size.
BULK_FROM = 100_000
BULK_GATEWAY_DEVICES = 10_000
# a bulk report waits behind up to max_in_flight entries of its partition (100,000: ~1 s of
# a collector's work on an idle core, ~10 s on this machine at load 10): 30 s, not the
# per-device default of 5 s
BULK_RETRANSMIT_AFTER = 30.0


# bench fleet's options and the keys of the scenario it builds (fleet_scenario_text): a
# refusal of the scenario names the option the user typed (was only the key)
FLEET_OPTION_KEYS = {
    "fleet.devices": "--devices",
    "fleet.shards": "--shards",
    "fleet.connection": "--connection",
    "fleet.connect_concurrency": "--connect-concurrency",
    "fleet.gateway_devices": "--gateway-devices",
    "stream.steps": "--steps",
    "stream.eps": "--eps",
    "stream.w": "--w",
    "stream.batch_steps": "--batch-steps",
    "stream.retransmit_after": "--retransmit-after",
    "stream.reconstruct": "--reconstruct",
    "stream.step_seconds": "--step-seconds",
    "collector.max_in_flight": "--max-in-flight",
    "collector.credit_window": "--credit-window",
    "collector.trace": "--trace",
    "collector.partitions": "--partitions",
}


def name_the_option(sentence: str) -> str:
    """``fleet.devices: Expected ...`` -> ``--devices (fleet.devices): Expected ...``; a
    sentence that starts with no bench option's key is returned as it is."""
    for key, option in FLEET_OPTION_KEYS.items():
        if sentence.startswith(key + ":") or sentence.startswith(key + " "):
            return f"{option} ({key}){sentence[len(key) :]}"
    return sentence


def fleet_scenario_text(
    devices: int,
    steps: int,
    *,
    eps: float = 2.0,
    w: int = 5,
    batch_steps: int | None = None,
    max_in_flight: int = 256,
    credit_window: int = 2,
    seed: int = 1,
    shards: int | str = "auto",
    connection: str = "device",
    connect_concurrency: int = 64,
    trace: str = "all",
    retransmit_after: float = 5.0,
    partitions: int = 1,
    reconstruct: str = "none",
    step_seconds: float = 0.0,
) -> str:
    """A synthetic fleet scenario of the given size (TOML text)."""
    batch = f"batch_steps = {batch_steps}\n" if batch_steps else ""
    batch += f"step_seconds = {step_seconds}\n" if step_seconds else ""
    batch += f'reconstruct = "{reconstruct}"\n' if reconstruct != "none" else ""
    shards_text = f'"{shards}"' if isinstance(shards, str) else str(shards)
    gateway = f'connection = "{connection}"\n' if connection != "device" else ""
    return f"""
[scenario]
name = "bench-fleet"
seed = {seed}
[fleet]
devices = {devices}
shards = {shards_text}
connect_concurrency = {connect_concurrency}
{gateway}
[stream]
steps = {steps}
eps = {eps}
w = {w}
retransmit_after = {retransmit_after}
{batch}
[source]
kind = "synthetic"
shape = "sine"
period = [12, 48]
amplitude = 1.0
noise = 0.1
bounds = [-1.5, 1.5]
[collector]
max_in_flight = {max_in_flight}
credit_window = {credit_window}
stage_timeout = 1800
trace = "{trace}"
partitions = {partitions}
"""


def _cpu_seconds() -> float:
    """User + system CPU of this process and of its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _reconstruct_summary(results: dict, stream_seconds: float) -> dict | None:
    """How much the reconstructions added after the stage: ``ratio`` = (stream stage +
    reconstruction after it) / stream stage (issue 23's target: at most 1.5)."""
    done = results.get("reconstruction")
    if not done:
        return None
    after = float(done["seconds"])
    return {
        "method": done["method"],
        "streams": done["streams"],
        "during_stage": done.get("during_stage", 0),
        "seconds_after_stage": round(after, 3),
        **({"merge_seconds": done["merge_seconds"]} if "merge_seconds" in done else {}),
        # bulk: each collector's split of its seconds (read back, pool, save)
        **(
            {
                "collectors": [
                    {
                        k: e.get(k)
                        for k in (
                            "during_stage",
                            "seconds",
                            "read_seconds",
                            "pool_seconds",
                            "save_seconds",
                        )
                    }
                    for e in done["partitions"]
                ]
            }
            if "partitions" in done
            else {}
        ),
        "ratio": round((stream_seconds + after) / stream_seconds, 3) if stream_seconds else None,
    }


async def bench_fleet(
    devices: int,
    steps: int,
    *,
    broker: str = "embedded",
    eps: float = 2.0,
    w: int = 5,
    batch_steps: int | None = None,
    max_in_flight: int = 256,
    credit_window: int = 2,
    shards: int | str = "auto",
    connection: str = "device",
    connect_concurrency: int = 64,
    trace: str = "all",
    out_dir: str | None = None,
    shard_brokers: list[str] | None = None,
    retransmit_after: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    partitions: int = 1,
    reconstruct: str = "none",
    gateway_devices: int | None = None,
    step_seconds: float = 0.0,
) -> dict:
    """Run a synthetic fleet end to end; measure connect time, throughput, latency, peak
    memory of each process, CPU per report, and loss (docs/scaling.md).
    ``progress(received, expected)`` as reports arrive. ``partitions > 1``: the collector
    side is a coordinator and that many worker processes (``ldpfleet run``'s split runner;
    not on the memory broker). ``reconstruct`` (e.g. "cpr"): the collector reconstructs
    every stream, during the stage as devices complete; the JSON says how long it added
    after the stage (``reconstruct``). ``step_seconds`` > 0: paced devices (one reading
    per step_seconds, ``[stream] step_seconds``). ``connection="bulk"``, or ``"gateway"``
    above ``BULK_FROM`` devices: bulk gateways (``bench_bulk_fleet``)."""
    if connection == "bulk" or (connection == "gateway" and devices > BULK_FROM):
        return await bench_bulk_fleet(
            devices, steps, broker=broker, eps=eps, w=w, batch_steps=batch_steps or w,
            shards=shards, connection=connection, out_dir=out_dir,
            retransmit_after=retransmit_after, partitions=partitions,
            gateway_devices=gateway_devices or BULK_GATEWAY_DEVICES,
            reconstruct=reconstruct, step_seconds=step_seconds, trace=trace,
        )  # fmt: skip
    if retransmit_after is None:
        retransmit_after = 5.0  # the stream's default (devices and per-device gateways)
    options = {
        "eps": eps, "w": w, "batch_steps": batch_steps, "max_in_flight": max_in_flight,
        "credit_window": credit_window, "shards": shards, "connection": connection,
        "connect_concurrency": connect_concurrency, "trace": trace,
        "retransmit_after": retransmit_after, "partitions": partitions,
        "reconstruct": reconstruct, "step_seconds": step_seconds,
    }  # fmt: skip
    scenario = parse_scenario(fleet_scenario_text(devices, steps, **options))
    scenario.check_shard_brokers(broker, shard_brokers)
    _check_partitions(partitions, broker)
    runner = run_split if partitions > 1 else run_scenario
    run = await _measured(
        broker,
        lambda scratch: runner(
            scenario,
            broker=broker,
            out_dir=out_dir or scratch,
            shard_brokers=shard_brokers,
            progress=progress,
        ),
    )
    return {
        "bench": "fleet",
        "devices": devices,
        "steps": steps,
        **_fleet_figures(run.results, shard_brokers, connection, trace, max_in_flight,
                         credit_window, retransmit_after, step_seconds),
        **_fleet_costs(run, partitions),
    }  # fmt: skip


def _check_partitions(partitions: int, broker: str) -> None:
    """Partition workers are processes of their own: they need a broker they can reach."""
    if partitions > 1 and broker == "memory":
        raise ParameterError(
            f"{partitions} partitions need a broker the worker processes can reach "
            "(embedded or mqtt://), not memory; the limit there is 1",
            field="partitions",
            limit="1 with the memory broker",
            value=partitions,
        )


@dataclass
class _MeasuredRun:
    """A bench run's results with what it cost: wall seconds, CPU seconds (this process and
    its waited-for children), the external broker's memory sampler and CPU (if visible)."""

    results: dict
    total: float
    cpu: float
    sampler: PeakRss | None
    broker_cpu: float | None = None  # seconds, when the broker's pid is visible


async def _measured(broker: str, run: Callable[[str], Awaitable[dict]]) -> _MeasuredRun:
    """Run ``run(scratch)`` (``scratch``: a temporary directory for its outputs), measuring
    its wall time, the CPU of this process and its waited-for children, and on an
    ``mqtt://`` broker whose pid is visible the broker's peak memory and CPU."""
    broker_pid = None
    if broker.startswith(("mqtt://", "mqtts://")):
        broker_pid = listening_pid(parse_broker_url(broker).port)
    sampler = PeakRss(broker_pid) if broker_pid else None
    broker_cpu_before = _proc_cpu_seconds(broker_pid) if broker_pid else None
    with tempfile.TemporaryDirectory(prefix="ldpfleet-bench-") as scratch:
        started = time.perf_counter()
        cpu_before = _cpu_seconds()
        task = asyncio.ensure_future(sampler.run()) if sampler else None
        try:
            results = await run(scratch)
        finally:
            if task is not None:
                task.cancel()
        total = time.perf_counter() - started
        cpu = _cpu_seconds() - cpu_before
    broker_cpu = None
    if broker_pid and broker_cpu_before is not None:
        after = _proc_cpu_seconds(broker_pid)
        broker_cpu = None if after is None else after - broker_cpu_before
    return _MeasuredRun(results, total, cpu, sampler, broker_cpu)


def _fleet_figures(
    results: dict, shard_brokers, connection: str, trace: str, max_in_flight: int,
    credit_window: int, retransmit_after: float, step_seconds: float,
) -> dict:  # fmt: skip
    """The run's settings and throughput figures (``bench_fleet``'s JSON, its first part)."""
    messages = results["reports_received"]
    seconds = results["stages"]["stream"]["seconds"]
    values = messages * results["stream"]["batch_steps"]
    return {
        "batch_steps": results["stream"]["batch_steps"],
        "broker": results["broker"]["kind"],
        "broker_url": results["broker"]["url"],
        "shard_brokers": shard_brokers,
        # what the run used: "device" asks for [fleet] connection "auto" (the scenario
        # text leaves it out), which is "gateway" past 10,000 devices on a real broker
        # (helper C: a 40,000-device run said "device" and ran through gateways) and
        # "device" at any size on the memory broker (plans.run_connection)
        "connection": (results.get("fleet") or {}).get("connection") or connection,
        "trace": trace,
        "max_in_flight": max_in_flight,
        "credit_window": credit_window,
        "retransmit_after": retransmit_after,
        "step_seconds": step_seconds,
        "shards": (results["stages"].get("fleet_build") or {}).get("shards")
        or len(results.get("side_processes", {}).get("fleet_shards") or ()),
        "event_loop": results["event_loop"],
        "messages": messages,
        "values": values,
        "seconds": round(seconds, 3),
        "messages_per_s": round(messages / seconds, 1) if seconds > 0 else None,
        "values_per_s": round(values / seconds, 1) if seconds > 0 else None,
        "connect_seconds": round(results["fleet"].get("connect_seconds") or 0.0, 3),
        "latency_ms": results["fleet"]["ack_latency"],
        "lost": results["reports_lost"],
        "rejected": results["reports_rejected"],
        "duplicates": results["reports_duplicate"],
        "retransmissions": results["fleet"]["retransmissions"],
        "trace_messages": results["trace"]["messages"],
    }


def _fleet_costs(run: _MeasuredRun, partitions: int) -> dict:
    """Wall time, reconstruction, CPU and peak memory (``bench_fleet``'s JSON, its end)."""
    results, cpu, sampler = run.results, run.cpu, run.sampler
    messages = results["reports_received"]
    sharded = results["fleet"]["shards"]
    return {
        "total_seconds": round(run.total, 3),
        "partitions": partitions,
        "reconstruct": _reconstruct_summary(results, results["stages"]["stream"]["seconds"]),
        # this process and every child it waited for (shards, workers, an embedded broker
        # child); not an external broker
        "cpu_seconds": round(cpu, 2),
        "cpu_us_per_report": round(cpu / messages * 1e6, 1) if messages else None,
        "peak_rss_mb": {
            # the runner's process: collector + recorder (+ devices when not sharded,
            # + the embedded broker)
            "collector_process": results["peak_rss_mb"],  # P > 1: coordinator + workers
            "partitions": (results.get("partitions") or {}).get("peak_rss_mb"),
            "fleet_processes": sharded["peak_rss_mb"] if sharded else None,
            "fleet_total": sharded["total_peak_rss_mb"] if sharded else None,
            "broker": round(sampler.peak_mb, 1) if sampler else None,
            "broker_before": round(sampler.start_mb, 1) if sampler else None,
        },
    }


def _proc_cpu_seconds(pid: int) -> float | None:
    """User + system CPU of ``pid`` so far (from /proc; None if not visible)."""
    import os
    from pathlib import Path

    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def bench_bulk_fleet(
    devices: int,
    steps: int,
    *,
    broker: str = "embedded",
    eps: float = 2.0,
    w: int = 5,
    batch_steps: int = 5,
    shards: int | str = "auto",
    connection: str = "bulk",
    out_dir: str | None = None,
    retransmit_after: float | None = None,
    partitions: int = 1,
    gateway_devices: int = BULK_GATEWAY_DEVICES,
    seed: int = 1,
    reconstruct: str = "none",
    step_seconds: float = 0.0,
    trace: str = "all",
) -> dict:
    """The synthetic fleet through bulk gateways (protocol/bulk.py, scenarios/bulk_run.py):
    one process per collector partition and ``shards`` gateway processes on an MQTT
    broker (embedded: started by ``run_bulk`` with per-run credentials, the ACL on), all
    in this process on ``memory``. ``reconstruct``: each collector reconstructs its
    devices' streams as they complete (collector/bulk.py); ``step_seconds``: paced gateways.
    ``trace``: what the runner and each collector record (``run_bulk``).
    Reports CPU per report of our processes (and of the broker when its pid is visible),
    peak RSS per process and in total, the trace's messages and bytes, and the results'
    counters."""
    import os
    import secrets

    from ldpfleet.protocol.bulk import BulkPlan
    from ldpfleet.scenarios.bulk_run import run_bulk

    plan = BulkPlan(
        # a run id of its own: two benches on one broker must not share topics
        run=f"bench-bulk-{secrets.token_hex(3)}", devices=devices, steps=steps,
        batch_steps=batch_steps, eps=eps, w=w, seed=seed, gateway_devices=gateway_devices,
        partitions=partitions,
        retransmit_after=retransmit_after or BULK_RETRANSMIT_AFTER,
        reconstruct=reconstruct, step_seconds=step_seconds,
    )  # fmt: skip
    k = (os.cpu_count() or 1) if shards == "auto" else int(shards)
    # "embedded": run_bulk starts the broker with per-run credentials (the ACL on)
    run = await _measured(
        broker,
        lambda scratch: run_bulk(
            plan, broker=broker, out_dir=out_dir or scratch, shards=k, trace=trace
        ),
    )
    return {
        "bench": "fleet",
        "devices": devices,
        "steps": steps,
        "batch_steps": batch_steps,
        "broker": broker,
        "connection": connection,
        "forwarding": "bulk",
        "gateways": plan.gateways,
        "gateway_devices": gateway_devices,
        "retransmit_after": plan.retransmit_after,
        "step_seconds": step_seconds,
        "admit_window": plan.admit_window,
        "shards": None if broker == "memory" else k,  # memory: all in this process
        "partitions": partitions,
        **_bulk_figures(run.results, batch_steps, trace),
        **_bulk_costs(run, broker),
    }


def _bulk_figures(results: dict, batch_steps: int, trace: str) -> dict:
    """A bulk run's throughput, counters and trace (``bench_bulk_fleet``'s JSON, its middle)."""
    received = results["reports_received"]
    seconds = results["stream_seconds"]
    return {
        "messages": received,
        "values": received * batch_steps,
        "bulk_messages": results["messages"],
        "seconds": round(seconds, 3),
        "messages_per_s": round(received / seconds, 1) if seconds > 0 else None,
        "values_per_s": round(received * batch_steps / seconds, 1) if seconds > 0 else None,
        # the broker and the collectors up and subscribed (before the gateways start)
        "connect_seconds": results["setup_seconds"],
        "lost": results["reports_lost"],
        "rejected": results["reports_rejected"],
        "duplicates": results["reports_duplicate"],
        "retransmissions": results["fleet"]["retransmitted_entries"],
        "fleet_mean_mae": results["fleet_mean_mae"],
        "reconstruct": _reconstruct_summary(results, seconds),
        "trace": trace,
        "trace_messages": results["trace"]["messages"],
        "trace_bytes": results["trace"].get("bytes", 0),  # every trace file
    }


def _bulk_costs(run: _MeasuredRun, broker: str) -> dict:
    """A bulk run's wall time, CPU (ours and the broker's) and peak memory per process."""
    received = run.results["reports_received"]
    cpu, broker_cpu = run.cpu, run.broker_cpu
    return {
        "total_seconds": round(run.total, 3),
        # this process and every child it waited for (collectors, gateway shards)
        "cpu_seconds": round(cpu, 2),
        "cpu_us_per_report": round(cpu / received * 1e6, 2) if received else None,
        "broker_cpu_seconds": round(broker_cpu, 2) if broker_cpu is not None else None,
        "broker_cpu_us_per_report": round(broker_cpu / received * 1e6, 2)
        if broker_cpu is not None and received
        else None,
        "peak_rss_mb": _bulk_rss(run.results["peak_rss_mb"], run.sampler, broker),
    }


def _bulk_rss(rss: dict, sampler: PeakRss | None, broker: str) -> dict:
    """Peak RSS (MiB) of the runner, the collectors, the gateway shards, the broker, in all."""
    own_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # peak, MiB
    return {
        "runner_process": round(own_rss, 1),
        "collectors": rss["collectors"],
        "fleet_processes": rss["fleet_processes"],
        "fleet_total": round(sum(r or 0 for r in rss["fleet_processes"]), 1),
        "broker": round(sampler.peak_mb, 1) if sampler else None,
        "broker_before": round(sampler.start_mb, 1) if sampler else None,
        # every process of the run: runner + collectors + gateway shards (+ broker)
        "total": round(
            (rss["total"] if broker != "memory" else 0.0)
            + own_rss
            + (sampler.peak_mb if sampler else 0.0),
            1,
        ),
    }
