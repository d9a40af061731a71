"""Alternate ``F_secagg_cpu.py`` over several venvs (one per commit), REPS rounds; print
each run and the medians of CPU, wall and the stages (aborted sessions left out).

usage: F_secagg_ab.py REPS "DEVICES DIM NEIGHBORS DROPOUT" VENV [VENV ...]
e.g.   F_secagg_ab.py 3 "200 10000 11 0.1" /work/venv-F-head /work/venv-F
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

DRIVER = Path(__file__).resolve().with_name("F_secagg_cpu.py")
STAGES = ("advertise", "share", "masked", "unmask")


def run_once(venv: str, args: list[str]) -> dict | None:
    """One session under ``nice -n 5`` with ``venv``'s Python (cwd /tmp: no stray imports)."""
    command = ["nice", "-n", "5", f"{venv}/bin/python", str(DRIVER), *args]
    done = subprocess.run(command, capture_output=True, text=True, cwd="/tmp", check=False)
    if done.returncode != 0:
        print(venv, done.stderr[-1500:])
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def medians(runs: list[dict]) -> str:
    """The medians of the completed runs."""
    done = [r for r in runs if not r["aborted"]]
    if not done:
        return "no completed run"
    parts = [f"cpu {statistics.median(r['cpu'] for r in done):.3f}"]
    parts.append(f"wall {statistics.median(r['wall'] for r in done):.3f}")
    for stage in STAGES:
        values = [r["stages"].get(stage, 0.0) for r in done]
        parts.append(f"{stage} {statistics.median(values):.3f}")
    return f"n={len(runs)} aborted={len(runs) - len(done)} " + " ".join(parts)


def main(argv: list[str]) -> None:
    """Alternate the venvs ``reps`` times and print the medians."""
    reps, args, venvs = int(argv[0]), argv[1].split(), argv[2:]
    runs: dict[str, list[dict]] = {venv: [] for venv in venvs}
    for rep in range(reps):
        for venv in venvs:
            result = run_once(venv, args)
            if result is not None:
                runs[venv].append(result)
                print(rep, venv, json.dumps(result), flush=True)
    for venv in venvs:
        print(f"{venv}: {medians(runs[venv])}")


if __name__ == "__main__":
    main(sys.argv[1:])
