"""Print docs/gcdp.md's "Masking-delta scale" rows from `bench gcdp` JSON files (helper G,
2026-12-05): the readings, tau, the scales s_k, Table 8's cells per method (test F1 at every
budget), cells within 2 F1 points of the seed's, the validation F1 mean over the 25 private
cells, the Table 11 ablations at eps = 1, and the pre-registered check (w/o Utility F1 below
Risk-DP F1 at eps = 1).

    python scripts/G2_xi_table.py run1.json run2.json [...]
"""

from __future__ import annotations

import json
import sys

METHODS = ("Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP")
ABLATIONS = ("w/o Lag", "w/o Comp.", "w/o Utility", "w/o Risk", "GC-DP")


def summary(path: str) -> None:
    with open(path) as handle:
        run = json.load(handle)
    proto, cal = run["protocol"], run["calibration"]
    changed = {k: v for k, v in proto["readings"].items() if k.startswith(("xi_", "risk_"))}
    print(f"== {path}: test {proto['test_file']}, {changed}, tau {cal['tau']}")
    print(
        "   scales", [round(s, 4) for s in cal["scales"]], "budgets eps1", cal["gcdp_budgets_eps1"]
    )
    within, val_cells = 0, []
    for method in METHODS:
        f1, seed = run["f1"][method], run["seed_f1"][method]
        gaps = [f1[e] - seed[e] for e in f1]
        inside = sum(abs(g) <= 2.0 for g in gaps)
        within += inside
        val_cells += list(run["validation"]["f1"][method].values())
        cells = " / ".join(f"{f1[e]:.1f}" for e in f1)
        auc = run["attack_auc"][method]["1.0"]
        print(
            f"   {method:8s} {cells} | eps1 gap {gaps[2]:+.2f} | AUC eps1 {auc:.3f}"
            f" | in 2: {inside}"
        )
    print(f"   cells within 2: {within} of 25; validation F1 mean {sum(val_cells) / 25:.2f}")
    abl = run["ablation_eps1"]
    print("   ablations F1:", " / ".join(f"{n} {abl[n]['f1']:.1f}" for n in ABLATIONS))
    print("   ablations AUC:", " / ".join(f"{abl[n]['attack_auc']:.3f}" for n in ABLATIONS))
    wo_utility, risk = abl["w/o Utility"]["f1"], run["f1"]["Risk-DP"]["1.0"]
    verdict = "PASS" if wo_utility < risk else "FAIL"
    print(f"   pre-registered: w/o Utility {wo_utility:.2f} < Risk-DP {risk:.2f}: {verdict}")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        summary(name)
