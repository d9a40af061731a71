"""Helper N: the bulk gateways' noise draw's share of building a bulk run's rows.

Builds every row of a bulk plan (default 100,000 devices x 20 steps, B = 5, 10 gateways
of 10,000, messages of 2,000 rows) through ``BulkGateway._build`` with no transport, and
times (CPU, ``time.process_time``) the whole build and, inside it, the noise words' draw:
``splitmix_words`` on code before helper N, ``noise_words`` after (whichever the installed
``ldpfleet`` has). Run it under each install, alternately, and compare:

    python scripts/N_bench_noise.py --repeat 3

Prints one JSON line per repeat: build CPU seconds, noise CPU seconds, the noise's share.
"""

from __future__ import annotations

import argparse
import json
import time

import ldpfleet.protocol.bulk as bulk


def _timed(name: str, spent: list[float]):
    """Wrap ``bulk.<name>`` so its CPU time adds to ``spent[0]``."""
    original = getattr(bulk, name)

    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - start

    setattr(bulk, name, wrapper)
    return original


def build_all(plan: bulk.BulkPlan) -> int:
    """Build every row of every gateway of ``plan``; the rows built."""
    built = 0
    for g in range(plan.gateways):
        gateway = bulk.BulkGateway(plan, g)
        for p in gateway.rows:
            while (entries := gateway._build(p, 0.0)) is not None:
                built += len(entries)
    return built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-steps", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    plan = bulk.BulkPlan(
        run="bench", devices=args.devices, steps=args.steps, batch_steps=args.batch_steps,
        eps=2.0, w=5, seed=1,
    )  # fmt: skip
    name = "noise_words" if hasattr(bulk, "noise_words") else "splitmix_words"
    spent = [0.0]
    _timed(name, spent)
    for _ in range(args.repeat):
        spent[0] = 0.0
        start = time.process_time()
        rows = build_all(plan)
        total = time.process_time() - start
        print(json.dumps({
            "words": name, "rows": rows, "build_cpu_s": round(total, 3),
            "noise_cpu_s": round(spent[0], 3), "noise_share": round(spent[0] / total, 3),
        }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
