"""What rebuilding a dead bulk shard's accounts from the store costs
(``scenarios.bulk_accounts.reconstructed_accounts``; docs/scaling.md "A gateway shard
that dies"): a synthetic store of ``--devices`` devices x 20 batches (every batch stored
at eps0), the accounts of half of them (shard 1 of 2) rebuilt ``--repeat`` times.

    python scripts/bulk_accounts_cost.py --devices 50000
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from ldpfleet.protocol.bulk import BulkPlan, stored_dtype
from ldpfleet.scenarios.bulk_accounts import reconstructed_accounts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    plan = BulkPlan(
        run="cost", devices=args.devices, steps=100, batch_steps=5, eps=2.0, w=10,
        gateway_devices=1000, partitions=1,
    )  # fmt: skip
    out = Path(tempfile.mkdtemp(prefix="bulk-accounts-"))
    try:
        (out / "p0").mkdir()
        rows = np.zeros(plan.devices * plan.batches, dtype=stored_dtype(plan.batch_steps))
        rows["device"] = np.repeat(np.arange(plan.devices), plan.batches)
        rows["seq"] = np.tile(np.arange(plan.batches), plan.devices)
        rows["eps0"] = plan.eps0
        rows.tofile(out / "p0" / "reports.bin")
        dead = {"shard": 1, "shards": 2, "gateways": list(range(1, plan.gateways, 2))}
        for _ in range(args.repeat):
            started = time.perf_counter()
            entry = reconstructed_accounts(plan, out, [dead | {"ended": "killed"}])
            print(
                f"{time.perf_counter() - started:.2f} s: {entry['devices']:,} devices, "
                f"{entry['stored_reports']:,} stored reports of {len(rows):,}, "
                f"max_window_spent {entry['max_window_spent']:g}"
            )
    finally:
        shutil.rmtree(out)


if __name__ == "__main__":
    main()
