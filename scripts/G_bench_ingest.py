"""``BulkCollector.ingest`` before and after helper G's split, timed alternately.

    python scripts/G_bench_ingest.py [--rounds 15] [--entries 2000,65536]

The code before is ``git show e5fcede:protocol/bulk.py`` (main before the split; ``--old
FILE`` to give another), loaded as its own module; its ``ingest`` is called on the same
collector as the new one, with the same report (a gateway's first report of a
100,000-device plan, ``max_entries`` rows). Each round
times both (order alternating) over ``--calls`` calls and keeps the per-call median; the
figure is the median over rounds of new / old, and both medians. It also checks that both
return the same ``PendingBulk`` (arrays equal) on a clean report and on one with foreign,
duplicate and bad entries. Helper G, 2026-12-06.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

import numpy as np
from ldpfleet.protocol import bulk
from ldpfleet.protocol.bulk import BulkCollector, BulkGateway, BulkPlan, BulkReport, decode_bulk

ROOT = Path(__file__).resolve().parent.parent


def old_module(path: str | None):
    """protocol/bulk.py before the split (or ``path``), imported as ``G_old_bulk``."""
    if path is None:
        source = subprocess.run(
            ["git", "show", "e5fcede:protocol/bulk.py"], cwd=ROOT, capture_output=True, text=True
        ).stdout
        path = "/tmp/G-old-bulk.py"
        Path(path).write_text(source)
    spec = importlib.util.spec_from_file_location("G_old_bulk", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["G_old_bulk"] = module
    spec.loader.exec_module(module)
    return module


def first_report(entries: int) -> tuple[BulkCollector, BulkReport]:
    """An admitted gateway 0 of a 100,000-device plan and its first report."""
    plan = BulkPlan(
        run="bench", devices=100_000, steps=20, batch_steps=5, eps=2.0, w=5,
        gateway_devices=entries, partitions=1, window=1, max_entries=entries,
    )  # fmt: skip
    collector, gateway = BulkCollector(plan, 0), BulkGateway(plan, 0)
    (hello,) = gateway.start(0.0)
    (admit,) = collector.hello(0, decode_bulk(bulk.encode_bulk(hello.message)), 0.0)
    out = gateway.receive(decode_bulk(bulk.encode_bulk(admit.message)), 0.0)
    reports = [o.message for o in out if isinstance(o.message, BulkReport)]
    return collector, decode_bulk(bulk.encode_bulk(reports[0]))


def tampered(report: BulkReport) -> BulkReport:
    """``report`` with a foreign device, a repeated device, a bad value and a bad eps0."""
    e = np.frombuffer(report.entries, dtype=bulk.entry_dtype(report.batch_steps)).copy()
    e["device"][0] = 99_999
    e["device"][2] = e["device"][1]
    e["values"][3, 0] = 1e9
    e["eps0"][4] = 50.0
    e["seq"][5] = 7
    return BulkReport(**{**{f: getattr(report, f) for f in report.__struct_fields__},
                         "entries": e.tobytes()})  # fmt: skip


def same(a, b) -> bool:
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            if x.dtype != y.dtype or not np.array_equal(x, y):
                return False
        elif x != y:
            return False
    return True


def call(fn, collector: BulkCollector, report: BulkReport):
    collector._pending = None
    return fn(collector, 0, report)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--entries", default="2000,65536")
    args = parser.parse_args()
    old = old_module(args.old).BulkCollector.ingest
    new = BulkCollector.ingest
    for entries in (int(x) for x in args.entries.split(",")):
        collector, report = first_report(entries)
        for r in (report, tampered(report)):
            assert same(call(old, collector, r), call(new, collector, r)), "outputs differ"
        ratios, olds, news = [], [], []
        for i in range(args.rounds):
            medians = {}
            for name, fn in (("old", old), ("new", new)) if i % 2 == 0 else (
                ("new", new), ("old", old)):  # fmt: skip
                times = []
                for _ in range(args.calls):
                    t = time.perf_counter()
                    call(fn, collector, report)
                    times.append(time.perf_counter() - t)
                medians[name] = statistics.median(times)
            olds.append(medians["old"])
            news.append(medians["new"])
            ratios.append(medians["new"] / medians["old"])
        print(
            f"{entries} entries: old {statistics.median(olds) * 1e6:.1f} us, new "
            f"{statistics.median(news) * 1e6:.1f} us per call; new/old median "
            f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}, "
            f"{args.rounds} rounds x {args.calls} calls)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
