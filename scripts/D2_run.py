"""Audit and run helper D's round-2 plugins (scripts/D2_plugins) as a user would: the
documented command ``ldpfleet audit MOD:CLS --eps E`` from a non-editable install, the
plugins on PYTHONPATH, and a fleet run on the memory transport (6 devices, 30 steps,
eps = 2, w = 5: eps0 = 0.4).

    nice -n 5 python scripts/D2_run.py audit OUT.jsonl [--eps 1] [--ldpfleet PATH] [CLS...]
    nice -n 5 python scripts/D2_run.py run OUT.jsonl [--ldpfleet PATH] [CLS...]
    python scripts/D2_run.py table OUT.jsonl

Each audit row: exit status, verdict, eps_lb, witness, canary, the stderr's last line and
the child's CPU seconds (user + sys, from getrusage of the finished child).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

TAG = "d2"  # the round: plugins in scripts/{TAG.upper()}_plugins/{TAG}bad.py, {TAG}good.py
HERE = Path(__file__).resolve().parent / "D2_plugins"


def use_round(tag: str) -> None:
    """Serve another round's plugins (``scripts/D3_run.py``: ``use_round("d3")``)."""
    global TAG, HERE
    TAG, HERE = tag, Path(__file__).resolve().parent / f"{tag.upper()}_plugins"


DEFAULT_LDPFLEET = "/work/venv-D-user/bin/ldpfleet"

SCENARIO = """[scenario]
name = "{tag}"
seed = 7

[fleet]
devices = 6

[stream]
steps = 30
eps = 2.0
w = 5
mechanism = "{mechanism}"

[source]
kind = "synthetic"
shape = "sine"
period = [12, 36]
amplitude = 10.0
offset = 20.0
bounds = [5.0, 35.0]
"""


def plugins(names: list[str]) -> list[str]:
    """``module:Class`` for every plugin class of {TAG}bad and {TAG}good (or the named ones)."""
    sys.path.insert(0, str(HERE))
    found = []
    for module_name in (f"{TAG}bad", f"{TAG}good"):
        module = __import__(module_name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module_name:
                found.append(f"{module_name}:{name}")
    if names:
        found = [f for f in found if f.split(":")[1] in names or f in names]
    return found


def _child(cmd: list[str], cwd: str | None = None) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, round(cpu, 2)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:400] if lines else ""


def audit_rows(args) -> None:
    with open(args.out, "a") as out:
        for target in plugins(args.names):
            cmd = [args.ldpfleet, "audit", target, "--eps", str(args.eps), "--quiet"]
            if args.trials:
                cmd += ["--trials", str(args.trials)]
            done, cpu = _child(cmd)
            row = {"plugin": target, "eps": args.eps, "exit": done.returncode, "cpu_s": cpu}
            try:
                result = json.loads(done.stdout)
                for key in ("verdict", "eps_lb", "witness", "canary", "threshold"):
                    row[key] = result.get(key)
            except json.JSONDecodeError:
                row["verdict"] = "refused" if done.returncode == 2 else "error"
            row["stderr"] = _last_line(done.stderr)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(json.dumps(row), flush=True)


def _find(data, keys: tuple[str, ...]) -> dict:
    """The first value of each key anywhere in results.json (its sections nest them)."""
    found: dict = {}

    def walk(node) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in keys and key not in found and not isinstance(value, dict | list):
                    found[key] = value
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(data)
    return found


def run_rows(args) -> None:
    with open(args.out, "a") as out, tempfile.TemporaryDirectory() as tmp:
        for target in plugins(args.names):
            scenario = Path(tmp) / f"{TAG}.toml"
            scenario.write_text(SCENARIO.format(mechanism=target, tag=TAG))
            run_dir = Path(tmp) / target.replace(":", "_")
            cmd = [args.ldpfleet, "run", str(scenario), "--broker", "memory", "--out", str(run_dir)]
            done, cpu = _child(cmd, cwd=tmp)
            row = {"plugin": target, "exit": done.returncode, "cpu_s": cpu}
            results = run_dir / "results.json"
            if results.exists():
                data = json.loads(results.read_text())
                row["warnings"] = len(data.get("warnings", []))
                found = _find(
                    data,
                    (
                        "devices",
                        "devices_complete",
                        "reports_expected",
                        "reports_received",
                        "reports_rejected",
                    ),
                )
                row.update(found)
            row["stderr"] = _last_line(done.stderr)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(json.dumps(row), flush=True)


def table(args) -> None:
    rows = [json.loads(line) for line in Path(args.out).read_text().splitlines()]
    print("| plugin | eps | exit | verdict | eps_LB | witness | canary | CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        lb = "" if r.get("eps_lb") is None else f"{r['eps_lb']:.2f}"
        print(
            f"| {r['plugin']} | {r.get('eps', '')} | {r['exit']} | {r.get('verdict')} | {lb} | "
            f"{r.get('witness') or ''} | {r.get('canary') or r.get('stderr', '')[:80]} | "
            f"{r['cpu_s']} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("what", choices=("audit", "run", "table"))
    parser.add_argument("out")
    parser.add_argument("names", nargs="*")
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--trials", type=int, default=0)
    parser.add_argument("--ldpfleet", default=DEFAULT_LDPFLEET)
    args = parser.parse_args()
    {"audit": audit_rows, "run": run_rows, "table": table}[args.what](args)


if __name__ == "__main__":
    main()
