"""Benchmarks that print JSON (``ldpfleet bench ...``). Targets live here, never in tests."""

from __future__ import annotations

import resource
import tempfile
import time

from scenarios.runner import run_scenario
from scenarios.schema import parse_scenario


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
) -> str:
    """A synthetic fleet scenario of the given size (TOML text)."""
    batch = f"batch_steps = {batch_steps}\n" if batch_steps else ""
    return f"""
[scenario]
name = "bench-fleet"
seed = {seed}
[fleet]
devices = {devices}
[stream]
steps = {steps}
eps = {eps}
w = {w}
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
"""


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
) -> dict:
    """Run a synthetic fleet end to end and measure throughput and loss."""
    scenario = parse_scenario(
        fleet_scenario_text(
            devices,
            steps,
            eps=eps,
            w=w,
            batch_steps=batch_steps,
            max_in_flight=max_in_flight,
            credit_window=credit_window,
        )
    )
    with tempfile.TemporaryDirectory(prefix="ldpfleet-bench-") as out:
        started = time.perf_counter()
        results = await run_scenario(scenario, broker=broker, out_dir=out)
        total = time.perf_counter() - started
    stream = results["stages"]["stream"]
    messages = results["reports_received"]
    seconds = stream["seconds"]
    values = messages * results["stream"]["batch_steps"]
    return {
        "bench": "fleet",
        "devices": devices,
        "steps": steps,
        "batch_steps": results["stream"]["batch_steps"],
        "broker": results["broker"]["kind"],
        "messages": messages,
        "values": values,
        "seconds": round(seconds, 3),
        "messages_per_s": round(messages / seconds, 1) if seconds > 0 else None,
        "values_per_s": round(values / seconds, 1) if seconds > 0 else None,
        "connect_seconds": round(results["fleet"].get("connect_seconds") or 0.0, 3),
        "lost": results["reports_lost"],
        "rejected": results["reports_rejected"],
        "duplicates": results["reports_duplicate"],
        "retransmissions": results["fleet"]["retransmissions"],
        "trace_messages": results["trace"]["messages"],
        "total_seconds": round(total, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "processes": "one process: broker (if embedded) + collector + recorder + fleet",
    }
