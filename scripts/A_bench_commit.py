"""``BulkCollector.ingest`` + ``commit`` before and after helper A's exact fleet-mean sums
(the per-step int64 sums of the reports instead of a float64 sum of the estimates),
timed alternately.

    python scripts/A_bench_commit.py [--rounds 15] [--calls 30] [--entries 2000,65536]

The code before is ``git show 7103ed0:protocol/bulk.py`` (main before the change; ``--old
FILE`` to give another), loaded as its own module (``scripts/G_bench_ingest.py``'s
loader). Each side has its own collector of a 100,000-device plan (steps 20, B 5) and
gets the same report (gateway 0's first, ``entries`` rows); a call resets the devices'
next seq, then ingests and commits it. Each round times both (order alternating) over
``--calls`` calls and keeps the per-call median of the CPU time of this process (the
machine is shared); the figure is the median over rounds of new / old. It checks first
that both acknowledge alike and that the new fleet means equal the old ``estimate_sum /
estimate_count`` within 1e-12 relative. Helper A, 2026-12-06.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from ldpfleet.protocol.bulk import encode_bulk

sys.path.insert(0, str(Path(__file__).resolve().parent))
from G_bench_ingest import first_report, old_module


def once(collector, report):
    collector._pending = None
    collector.next_seq[:] = 0
    pending = collector.ingest(0, report)
    return collector.commit(pending, len(pending.rows))


def old_collector(module, new_collector):
    """The old module's collector of the same plan, gateway 0 admitted."""
    plan = module.BulkPlan.from_dict(new_collector.plan.to_dict())
    collector = module.BulkCollector(plan, 0)
    collector.admitted[:] = True
    return collector


def changed_lines(collector, report, rounds: int, calls: int) -> str:
    """The commit's changed lines alone on the report's rows: the former estimates and
    float64 ``bincount`` against ``_add_reports``, CPU time, alternating."""
    from ldpfleet.protocol.bulk import _add_reports

    plan, sw = collector.plan, collector.mechanism
    collector._pending = None
    collector.next_seq[:] = 0
    rows = collector.ingest(0, report).rows
    collector._pending = None
    total, count = np.zeros(plan.steps), np.zeros(plan.steps, dtype=np.int64)
    report_sum = np.zeros(plan.steps, dtype=np.int64)

    def former() -> None:
        B = plan.batch_steps
        est = plan.lo + sw.estimate(rows["values"]) * (plan.hi - plan.lo)
        steps = rows["seq"].astype(np.int64)[:, None] * B + np.arange(B)
        total[:] += np.bincount(steps.ravel(), est.ravel(), minlength=plan.steps)
        count[:] += np.bincount(steps.ravel(), minlength=plan.steps)

    def new() -> None:
        _add_reports(report_sum, count, rows, plan.batch_steps)

    ratios = []
    for i in range(rounds):
        medians = {}
        pair = (("old", former), ("new", new))
        for name, fn in pair if i % 2 == 0 else pair[::-1]:
            times = []
            for _ in range(calls):
                t = time.process_time()
                fn()
                times.append(time.process_time() - t)
            medians[name] = statistics.median(times)
        ratios.append(medians["new"] / medians["old"])
    return f"the changed lines alone: new/old median {statistics.median(ratios):.3f}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--entries", default="2000,65536")
    args = parser.parse_args()
    if args.old is None:
        args.old = "/tmp/A-old-bulk.py"
        source = subprocess.run(
            ["git", "show", "7103ed0:protocol/bulk.py"],
            cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True,
            check=True,
        ).stdout  # fmt: skip
        Path(args.old).write_text(source)
    module = old_module(args.old)
    for entries in (int(x) for x in args.entries.split(",")):
        new, report = first_report(entries)
        old = old_collector(module, new)
        a, b = once(old, report), once(new, report)
        same = [module.encode_bulk(o.message) for o in a] == [encode_bulk(o.message) for o in b]
        assert same, "acknowledgements differ"
        seen = new.estimate_count > 0
        former = old.estimate_sum[seen] / old.estimate_count[seen]
        np.testing.assert_allclose(new.fleet_means()[seen], former, rtol=1e-12)
        ratios, olds, news = [], [], []
        for i in range(args.rounds):
            medians = {}
            pair = (("old", old), ("new", new))
            for name, collector in pair if i % 2 == 0 else pair[::-1]:
                times = []
                for _ in range(args.calls):
                    t = time.process_time()  # CPU time: the machine is shared
                    once(collector, report)
                    times.append(time.process_time() - t)
                medians[name] = statistics.median(times)
            olds.append(medians["old"])
            news.append(medians["new"])
            ratios.append(medians["new"] / medians["old"])
        print(
            f"{entries} entries: old {statistics.median(olds) * 1e6:.1f} us, new "
            f"{statistics.median(news) * 1e6:.1f} us CPU per ingest+commit; new/old median "
            f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}, "
            f"{args.rounds} rounds x {args.calls} calls); "
            + changed_lines(new, report, args.rounds, args.calls)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
