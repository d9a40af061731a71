"""CPU seconds of a user mechanism's audit, in process (imports excluded): run once with the
installed ldpfleet of each venv to compare (helper D, round 2).

    PYTHONPATH=scripts/D2_plugins:scripts/M_plugins python scripts/D2_cpu.py MOD:CLS ...

Prints one JSON line per plugin: process_time of ``run_audit(name, 1.0)`` (seed 0,
gamma 0.05), its verdict and eps_lb.
"""

from __future__ import annotations

import json
import sys
import time

from ldpfleet.collector.audit.battery import run_audit


def main(names: list[str]) -> None:
    for name in names:
        start = time.process_time()
        result = run_audit(name, 1.0)
        cpu = time.process_time() - start
        row = {"plugin": name, "cpu_s": round(cpu, 3), "verdict": result.verdict}
        row["eps_lb"] = round(result.eps_lb, 3)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
