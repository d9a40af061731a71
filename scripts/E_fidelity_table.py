"""Print the Gau-DP / Risk-DP rows of docs/gcdp.md's fidelity review from `bench gcdp` JSON
files (helper E, 2026-12-05): per method, the test F1 at every budget, the validation F1
mean over the five budgets, the attack AUC at eps = 1, the cells within 2 F1 points of the
seed's Table 8, and the method's oracle.

    python scripts/E_fidelity_table.py kept.json new.json [...]
"""

from __future__ import annotations

import json
import sys

METHODS = ("Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP")


def summary(path: str) -> None:
    with open(path) as handle:
        run = json.load(handle)
    readings = run["protocol"]["readings"]
    print(f"== {path}: test {run['protocol']['test_file']}, readings {readings}")
    within, val_cells = 0, []
    for method in METHODS:
        f1, seed = run["f1"][method], run["seed_f1"][method]
        cells = " / ".join(f"{f1[e]:.1f}" for e in f1)
        gaps = [f1[e] - seed[e] for e in f1]
        inside = sum(abs(g) <= 2.0 for g in gaps)
        within += inside
        val = run["validation"]["f1"][method]
        val_cells += list(val.values())
        val_mean = sum(val.values()) / len(val)
        auc = run["attack_auc"][method]
        std = run["f1_std"][method]["1.0"]
        print(
            f"{method:8s} test {cells} | eps1 gap {gaps[2]:+.3f} std {std:.2f}"
            f" | val mean {val_mean:.2f} (eps1 {val['1.0']:.1f}) | AUC eps1 {auc['1.0']:.3f}"
            f" | AUC {' / '.join(f'{auc[e]:.3f}' for e in auc)} | within 2: {inside}"
        )
    mean = sum(val_cells) / len(val_cells)
    print(f"cells within 2: {within} of 25; validation F1 mean (25 cells) {mean:.2f}", end="")
    print(f"; tau {run['calibration']['tau']}; {run['protocol'].get('gau_sampler')}")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        summary(name)
