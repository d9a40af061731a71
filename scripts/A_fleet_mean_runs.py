"""Runs of one seed of a small bulk scenario give the same ``fleet_mean_mae``, bit for
bit, and the figure is within 1e-12 relative of the former rule's (helper A's exact
fleet-mean sums, protocol/bulk.py "Fleet-mean sums").

    python scripts/A_fleet_mean_runs.py [--runs 4] [--broker embedded] [--dir /tmp/A-runs]

The scenario is ``scripts/S2_pin.py``'s ``BULK`` without reconstruction (150 devices, 2
partitions, 2 gateway shards; seed 4), run with ``ldpfleet run`` (subprocess). For each
run it prints results.json's ``fleet_mean_mae`` (repr), the same figure recomputed here
from the partitions' ``estimates.npz`` (``_report_sums``, ``fleet_means``), the SHA-256 of
those arrays, and the former rule's figure recomputed from the run's stored rows: every
row's float64 estimates added in the order the partition stored them (its arrival order,
row by row: the former code added a report's ``bincount`` at a time, so this is the same
rule up to grouping), the partitions added in order. The truth is the plan's
(``_generated_truth`` per shard, added as the runner adds the shards'). Helper A,
2026-12-06.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from ldpfleet.protocol.bulk import BulkPlan, fleet_means, stored_dtype
from ldpfleet.protocol.sw import SquareWave
from ldpfleet.scenarios.bulk_run import _generated_truth, _report_sums

sys.path.insert(0, str(Path(__file__).resolve().parent))
from S2_pin import BULK


def former_means(plan: BulkPlan, out: Path) -> np.ndarray:
    """The former rule: float64 sums of the estimates in stored order, over the count."""
    sw, B = SquareWave(plan.eps0, plan.mechanism), plan.batch_steps
    total, count = np.zeros(plan.steps), np.zeros(plan.steps, dtype=np.int64)
    for p in range(plan.partitions):
        part_sum = np.zeros(plan.steps)
        rows = np.fromfile(out / f"p{p}" / "reports.bin", dtype=stored_dtype(B))
        est = plan.lo + sw.estimate(rows["values"]) * (plan.hi - plan.lo)
        steps = rows["seq"].astype(np.int64)[:, None] * B + np.arange(B)
        np.add.at(part_sum, steps.ravel(), est.ravel())  # in row order, one at a time
        total += part_sum
        count += np.bincount(steps.ravel(), minlength=plan.steps)
    return total / count


def analyse(out: Path, shards: int) -> dict:
    results = json.loads((out / "results.json").read_text())
    plan = BulkPlan.from_dict(results["plan"])
    report_sum, count = _report_sums(plan, out)
    sums = [_generated_truth(plan, range(i, plan.gateways, shards))["truth_sum"]
            for i in range(shards)]  # fmt: skip
    truth = np.sum(sums, axis=0) / plan.devices
    new = float(np.mean(np.abs(fleet_means(plan, report_sum, count) - truth)))
    former = float(np.mean(np.abs(former_means(plan, out) - truth)))
    digest = hashlib.sha256(report_sum.tobytes() + count.tobytes()).hexdigest()[:16]
    return {"results": results["fleet_mean_mae"], "new": new, "former": former, "sha": digest}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--broker", default="embedded")
    parser.add_argument("--dir", default="/tmp/A-runs")
    args = parser.parse_args()
    cli = str(Path(sys.executable).parent / "ldpfleet")
    folder = Path(args.dir)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "s.toml").write_text(BULK.replace('"cpr"', '"none"'))
    seen = []
    for k in range(args.runs):
        out = folder / f"out{k}"
        done = subprocess.run(
            [cli, "run", "s.toml", "--broker", args.broker, "--out", out.name, "--run", f"a-{k}"],
            cwd=folder, capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode:
            print(done.stdout[-2000:], done.stderr[-2000:])
            return 1
        a = analyse(out, 2)
        seen.append(a)
        rel = abs(a["former"] - a["new"]) / a["new"]
        print(f"run {k}: results {a['results']!r}, recomputed {a['new']!r}, sums {a['sha']}, "
              f"former rule {a['former']!r} (relative {rel:.2e})")  # fmt: skip
    values = {key: len({a[key] for a in seen}) for key in ("results", "sha", "former")}
    same = all(a["results"] == a["new"] for a in seen)
    print(
        f"{args.runs} runs on {args.broker}: distinct fleet_mean_mae {values['results']}, "
        f"sums {values['sha']}, former-rule figures {values['former']}; results.json equals "
        f"the recomputed figure in every run: {same}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
