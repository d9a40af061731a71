"""``ldpfleet trace verify`` on a large bulk run with ``app/trace_verify.py`` before helper
H's ``_ChainWalk`` split (``git show 8cf6513^:app/trace_verify.py``) and now, alternately.

    python scripts/A_bench_trace_verify.py RUN_DIR [--rounds 4] [--old FILE] [--new FILE]
    python scripts/A_bench_trace_verify.py RUN_DIR --chain-rounds 10

Each measurement is a fresh process (``child``) that loads the given file as
``ldpfleet.app.trace_verify`` (so ``trace_verify_bulk`` uses it too), then times
``verify_run(RUN_DIR)`` alone (wall and CPU), and prints them with the SHA-256 of the
report's ``to_dict()``: both files must give the same report. Rounds alternate which goes
first. The figure is the median over rounds of new / old (CPU time: the machine is
shared); and, in the same process, the CPU time of reading every partition trace with
``_load_trace`` keeping nothing (the hash-chain walk and the signature). With
``--chain-rounds N``: only that walk, both files loaded in one process, N rounds
alternating (less noise than separate processes). Helper A, 2026-12-06.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(module_file: str, run_dir: str) -> None:
    spec = importlib.util.spec_from_file_location("ldpfleet.app.trace_verify", module_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules["ldpfleet.app.trace_verify"] = module
    spec.loader.exec_module(module)
    from ldpfleet.app.trace_verify_bulk import _bulk_inputs  # before the clock starts

    wall, cpu = time.perf_counter(), time.process_time()
    report = module.verify_run([Path(run_dir)])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    digest = hashlib.sha256(json.dumps(report.to_dict(), sort_keys=True).encode()).hexdigest()
    # the chain walk alone: every partition trace read with nothing kept (as verify_bulk
    # reads the main trace)
    _, _, trace, run = _bulk_inputs(Path(run_dir))
    chain = time.process_time()
    for entry in trace.get("partitions") or []:
        path = Path(run_dir) / str(entry.get("path"))
        module._load_trace(
            run, module.VerifyReport(), entry.get("public_key"), path, keep=lambda row: None
        )
    chain = time.process_time() - chain
    print(json.dumps({"wall": wall, "cpu": cpu, "chain": chain, "report": digest, "ok": report.ok}))


def chain_rounds(old_file: str, new_file: str, run_dir: str, rounds: int) -> None:
    """Both files loaded in this process (the old one as ``A_old_trace_verify``): the
    partition traces' chain walk (``_load_trace``, nothing kept) timed alternately."""
    from ldpfleet.app import trace_verify as new
    from ldpfleet.app.trace_verify_bulk import _bulk_inputs

    assert Path(new.__file__).resolve() == Path(new_file).resolve()
    spec = importlib.util.spec_from_file_location("A_old_trace_verify", old_file)
    old = importlib.util.module_from_spec(spec)
    sys.modules["A_old_trace_verify"] = old  # dataclasses look their module up
    spec.loader.exec_module(old)
    _, _, trace, run = _bulk_inputs(Path(run_dir))
    paths = [(Path(run_dir) / str(e.get("path")), e.get("public_key")) for e in trace["partitions"]]
    got: dict[str, list[float]] = {"old": [], "new": []}
    for i in range(rounds):
        pair = (("old", old), ("new", new))
        for name, module in pair if i % 2 == 0 else pair[::-1]:
            t = time.process_time()
            for path, key in paths:
                module._load_trace(run, module.VerifyReport(), key, path, keep=lambda row: None)
            got[name].append(time.process_time() - t)
    ratios = [n / o for o, n in zip(got["old"], got["new"], strict=True)]
    print(f"chain walk in one process, {rounds} rounds: old median "
          f"{statistics.median(got['old']):.3f} s, new {statistics.median(got['new']):.3f} s "
          f"CPU; new/old median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, "
          f"max {max(ratios):.3f})")  # fmt: skip


def measure(module_file: str, run_dir: str) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", module_file, run_dir],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--old")
    parser.add_argument("--new", default=str(ROOT / "app" / "trace_verify.py"))
    parser.add_argument("--chain-rounds", type=int, default=0, help="only the in-process walk")
    args = parser.parse_args()
    if args.old is None:
        args.old = "/tmp/A-old-trace_verify.py"
        source = subprocess.run(
            ["git", "show", "8cf6513^:app/trace_verify.py"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        Path(args.old).write_text(source)
    if args.chain_rounds:
        chain_rounds(args.old, args.new, args.run_dir, args.chain_rounds)
        return 0
    got: dict[str, list[dict]] = {"old": [], "new": []}
    for i in range(args.rounds):
        pair = (("old", args.old), ("new", args.new))
        for name, path in pair if i % 2 == 0 else pair[::-1]:
            got[name].append(measure(path, args.run_dir))
            m = got[name][-1]
            print(f"round {i} {name}: wall {m['wall']:.2f} s, cpu {m['cpu']:.2f} s, chain walk "
                  f"cpu {m['chain']:.3f} s, ok {m['ok']}")  # fmt: skip
    reports = {m["report"] for ms in got.values() for m in ms}
    print(f"reports identical: {len(reports) == 1}")
    for key in ("cpu", "wall", "chain"):
        ratios = [n[key] / o[key] for o, n in zip(got["old"], got["new"], strict=True)]
        old = statistics.median(m[key] for m in got["old"])
        new = statistics.median(m[key] for m in got["new"])
        spread = f"min {min(ratios):.3f}, max {max(ratios):.3f}"
        print(f"{key}: old median {old:.3f} s, new {new:.3f} s; new/old median "
              f"{statistics.median(ratios):.3f} ({spread})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
