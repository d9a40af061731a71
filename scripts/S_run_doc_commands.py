"""Run the documented shell commands (scripts/S_doc_commands.py) as a user would, from a
scratch folder with an installed (non-editable) ldpfleet on PATH.

Usage: python scripts/S_run_doc_commands.py VENV_BIN WORKDIR [FILTER]
Each command runs under ``nice -n 5`` with a timeout; a summary line per command (file:line,
exit status, seconds) goes to stdout and the full output to WORKDIR/log/NNN.txt. Commands
that install, run the test suite, start brokers, or take minutes are skipped (the reason is
printed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from S_doc_commands import PAGES, commands  # noqa: E402

SKIP = {
    "pip install": "installs the package",
    "python -m pytest": "the test suite",
    "python -m venv": "installs the package",
    "mosquitto -c": "starts a broker",
    "ulimit": "shell limit",
    "--graph facebook": "takes minutes",
    "facebook-degrees": "takes minutes",
    "audit all": "takes minutes",
    "--devices 10000": "takes minutes",
    "gcdp-scaling": "takes minutes",
    "gcdp-timing": "takes minutes",
    "bench cpr --trials": "takes minutes",
    "18941": "needs a broker on port 18941",
    "18942": "needs a TLS broker on port 18942",
    "127.0.0.1:1884": "needs the run's Mosquitto on 1884",
    "localhost:8883": "needs the run's Mosquitto on 8883",
    "8884?": "needs `ldpfleet broker --port 8884` running",
    "--broker 8884": "",
    "krr": "tutorial bring-your-own section (files made by the page)",
    "make_data": "tutorial bring-your-own section",
    "greenhouse": "tutorial bring-your-own section",
    "contacts.toml": "tutorial bring-your-own section",
    "train.tsv": "tutorial bring-your-own section",
    "ldpfleet broker ": "runs until Ctrl-C",
}
LIVE = ("ldpfleet watch", "ldpfleet collector", "ldpfleet fleet ")


def main(argv: list[str]) -> int:
    venv_bin, work = Path(argv[0]), Path(argv[1])
    only = argv[2] if len(argv) > 2 else ""
    (work / "log").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PATH=f"{venv_bin}:{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    results = []
    k = 0
    for page in PAGES:
        for line, command in commands(page):
            k += 1
            where = f"{page}:{line}"
            if only and only not in command and only not in where:
                continue
            why = next((w for s, w in SKIP.items() if s in command and w), "")
            if why:
                print(f"SKIP {where}: {command}  ({why})", flush=True)
                continue
            if command.startswith("export "):
                name, _, value = command[7:].partition("=")
                env[name] = os.path.expandvars(value.replace("$PWD", str(work)))
                continue
            timeout = 8 if command.startswith(LIVE) else 240
            t0 = time.monotonic()
            try:
                p = subprocess.run(
                    ["nice", "-n", "5", "bash", "-c", command],
                    cwd=work,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
                rc, out = p.returncode, p.stdout + p.stderr
            except subprocess.TimeoutExpired as e:
                rc = "timeout"
                out = (e.stdout or b"").decode() + (e.stderr or b"").decode()
            dt = time.monotonic() - t0
            (work / "log" / f"{k:03d}.txt").write_text(f"{where}\n$ {command}\n{out}")
            tail = out.strip().splitlines()[-1:] or [""]
            print(f"rc={rc} {dt:6.1f}s {where}: {command}\n      | {tail[0][:150]}", flush=True)
            results.append(dict(where=where, command=command, rc=rc, seconds=round(dt, 1)))
    (work / "log" / "summary.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
