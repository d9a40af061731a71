"""A/B of round 3 (helper D): the honest plugins of every round at fresh seeds, and the
round-3 misses, audited in process with the ldpfleet of the running interpreter
(run once with the old install's python, once with the new one).

    nice -n 5 PYTHON scripts/D3_ab.py OUT.jsonl SEED [SEED...]

Honest: scripts/D3_plugins/d3good.py, scripts/D2_plugins/d2good.py,
scripts/M_plugins/mgood.py (classes), tests/plugins_heldout/heldout_good.py; misses: the
six of docs/preregistration/D3-plugin-audit.md. eps = 1, gamma = 0.05 each.
"""

from __future__ import annotations

import inspect
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "d3good": ROOT / "scripts/D3_plugins",
    "d3bad": ROOT / "scripts/D3_plugins",
    "d2good": ROOT / "scripts/D2_plugins",
    "mgood": ROOT / "scripts/M_plugins",
    "heldout_good": ROOT / "tests/plugins_heldout",
}
MISSES = (
    "TwoEpsNearOne",
    "RelativeNoiseNearZero",
    "SignedZeroKRR",
    "ArgmaxCoordinate",
    "SingleReadingFallback",
    "AnnealAfterCalls",
)


def targets() -> list[tuple[str, str]]:
    for folder in set(FOLDERS.values()):
        sys.path.insert(0, str(folder))
    found = []
    for module_name in ("d3good", "d2good", "mgood", "heldout_good"):
        module = __import__(module_name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module_name:
                found.append(("honest", f"{module_name}:{name}"))
    found += [("miss", f"d3bad:{name}") for name in MISSES]
    return found


def main(out: str, seeds: list[int]) -> None:
    from ldpfleet.collector.audit.battery import run_audit
    from ldpfleet.protocol.errors import ParameterError

    with open(out, "a") as fh:
        for seed in seeds:
            for kind, target in targets():
                t = time.process_time()
                row = {"kind": kind, "plugin": target, "seed": seed}
                try:
                    r = run_audit(target, 1.0, seed=seed)
                    row |= {"verdict": r.verdict, "eps_lb": r.eps_lb, "witness": r.witness}
                    flagged = (r.stated_density or {}).get("exceeds_claim")
                    row["density_flag"] = bool(flagged)
                except ParameterError as e:
                    row |= {"verdict": "refused", "error": str(e)[:200]}
                row["cpu_s"] = round(time.process_time() - t, 2)
                fh.write(json.dumps(row) + "\n")
                fh.flush()


if __name__ == "__main__":
    main(sys.argv[1], [int(s) for s in sys.argv[2:]])
