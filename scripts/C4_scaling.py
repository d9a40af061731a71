"""Run time vs fleet size on the memory transport (helper C, docs/scaling.md).

    python scripts/C4_scaling.py 2000 5000 10000 20000 40000 [--steps 20] [--connection auto]
        [--acl-count] [--retransmit-after SECONDS]

One ``bench_fleet`` per size (memory broker, one process: quickstart-like sine streams,
eps 2, w 5, batch_steps 5), one JSON line each: the stream stage's seconds, connect
seconds, total seconds, CPU seconds, retransmissions and seconds per 1,000 devices.
``--acl-count`` also counts the ACL's decisions and how many of them were computed
(cache misses of ``AccessPolicy.allowed``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from ldpfleet.app import bench
from ldpfleet.broker import auth


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--steps", type=int, default=20)
    # "auto": the bench's own scenario ([fleet] connection left out: per-device on the memory
    # transport, gateways past 10,000 devices on real brokers); "device" or "gateway":
    # that [fleet] connection, written into it
    parser.add_argument("--connection", default="auto", choices=("auto", "device", "gateway"))
    parser.add_argument("--acl-count", action="store_true")
    # seconds before a device repeats an unanswered message (default: the bench's 5 s); a
    # long one (60) takes the retransmissions a loaded machine provokes out of the figures
    parser.add_argument("--retransmit-after", type=float, default=None)
    args = parser.parse_args()
    if args.connection != "auto":
        text = bench.fleet_scenario_text

        def forced(*a, **k):
            line = f'connection = "{args.connection}"\n[stream]'
            return text(*a, **k).replace("[stream]", line, 1)

        bench.fleet_scenario_text = forced
    counts = {"allowed": 0, "decided": 0}
    if args.acl_count:
        allowed, decide = auth.AccessPolicy.allowed, auth.AccessPolicy._decide

        def counted_allowed(self, *a):
            counts["allowed"] += 1
            return allowed(self, *a)

        def counted_decide(self, *a):
            counts["decided"] += 1
            return decide(self, *a)

        auth.AccessPolicy.allowed = counted_allowed
        auth.AccessPolicy._decide = counted_decide
    for n in args.sizes:
        counts.update(allowed=0, decided=0)
        t = time.perf_counter()
        result = asyncio.run(
            bench.bench_fleet(
                n, args.steps, broker="memory", shards=1, retransmit_after=args.retransmit_after
            )
        )
        wall = time.perf_counter() - t
        line = {
            "devices": n,
            "connection": args.connection,
            "seconds": result["seconds"],
            "connect_seconds": result["connect_seconds"],
            "total_seconds": result["total_seconds"],
            "wall": round(wall, 2),
            "cpu_seconds": result["cpu_seconds"],
            "retransmit_after": result["retransmit_after"],
            "retransmissions": result["retransmissions"],
            "peak_rss_mb": result["peak_rss_mb"]["collector_process"],
            "lost": result["lost"],
            "ms_per_device": round(1000 * result["total_seconds"] / n, 3),
        }
        if args.acl_count:
            line |= counts
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
