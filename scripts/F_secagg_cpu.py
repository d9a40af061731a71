"""One ``bench secagg`` session in-process; prints JSON with the session's CPU seconds.

``cpu`` is the process's CPU time over the session (the bench's ``perf_counter`` replaced
by ``process_time``), ``wall`` the sum of the stage seconds (the loop's clock). The
session is one asyncio loop that waits on no timer when dropouts are announced, so on a
shared, loaded machine ``cpu`` is what an idle machine's wall seconds come to (docs/secagg.md,
"Today's figures"). Runs on today's layout (``ldpfleet.app``) and on commits before the
one-namespace change (``scenarios.bench_secagg``), so old commits can be timed the same way.

usage: F_secagg_cpu.py DEVICES DIM NEIGHBORS|auto|full DROPOUT [SEED] [--profile OUT]
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import types

try:
    from ldpfleet.app import bench_secagg as bench
except ImportError:  # a commit before 2026-12-01 (e1d0aa9)
    from scenarios import bench_secagg as bench  # type: ignore[no-redef]


def main(argv: list[str]) -> None:
    """Run the session the arguments describe and print its figures."""
    bench.time = types.SimpleNamespace(perf_counter=time.process_time, time=time.time)
    devices, dim, neighbors, dropout = int(argv[0]), int(argv[1]), argv[2], float(argv[3])
    seed = int(argv[4]) if len(argv) > 4 and not argv[4].startswith("--") else 0
    if neighbors == "full":
        graph = {"full": True}
    else:
        graph = {"neighbors": None if neighbors == "auto" else int(neighbors)}
    session = bench.bench_secagg(devices, dim, dropout=dropout, seed=seed, **graph)
    if "--profile" in argv:
        import cProfile

        profile = cProfile.Profile(time.process_time)
        profile.enable()
        result = asyncio.run(session)
        profile.disable()
        profile.dump_stats(argv[argv.index("--profile") + 1])
    else:
        result = asyncio.run(session)
    stages = result["seconds_per_stage"]
    print(
        json.dumps(
            {
                "cpu": result["seconds"],
                "wall": round(sum(stages.values()), 3),
                "stages": stages,
                "exact": result["exact"],
                "aborted": result["aborted"],
                "survivors": result["survivors"],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
