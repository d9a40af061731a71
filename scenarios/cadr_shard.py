"""A shard of a CADR-LDP device fleet in its own process (``run_cadr_fleet(processes=k)``).

    python -m ldpfleet.scenarios.cadr_shard GRAPH BROKER_URL RUN SEED i/k CONNECT_CONCURRENCY

Runs the devices ``i ≡ shard (mod k)`` of the graph on the broker, prints ``READY`` once
they have all subscribed, and at the end one JSON object: per device, what the simulator
scores (kept degree, |U1|, ledger, message counts). Exits 1 on failure.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys

from ldpfleet.broker.mqtt import MqttTransport
from ldpfleet.devices.fleet import parse_shard
from ldpfleet.devices.graphs import load_graph
from ldpfleet.scenarios.cadr_run import run_device_shard
from ldpfleet.scenarios.loop import run as run_loop


async def _main(argv: list[str]) -> None:
    graph_spec, url, run, seed, shard_text, concurrency, *rest = argv
    device_noise = rest[0] if rest else "seeded"
    shard, shards = parse_shard(shard_text)
    graph = load_graph(graph_spec)
    ready = asyncio.Event()

    async def announce() -> None:
        await ready.wait()
        print("READY", flush=True)

    announcer = asyncio.create_task(announce())
    stats = await run_device_shard(
        graph,
        MqttTransport(url),
        run,
        int(seed),
        shard,
        shards,
        connect_concurrency=int(concurrency),
        subscribed=ready,
        device_noise=device_noise,
    )
    await announcer
    print(json.dumps({name: dataclasses.asdict(st) for name, st in stats.items()}), flush=True)


if __name__ == "__main__":
    try:
        run_loop(_main(sys.argv[1:]))
    except Exception as error:  # reported to the parent through the exit code and stderr
        print(f"cadr_shard: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
