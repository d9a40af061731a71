"""Scores helper C2's pre-registered comparison (docs/preregistration/C2-temporal-task.md)
from bench gcdp JSON files: ``python scripts/C2_prereg_eval.py E1K E1R E2K E2R E3K E3R``
(each ``ldpfleet bench gcdp --draws 10 --json`` output, K kept, R task_model=temporal)."""

from __future__ import annotations

import json
import sys

import numpy as np

METHODS = ("Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP")
ABLATIONS = ("w/o Lag", "w/o Comp.", "w/o Utility", "w/o Risk", "GC-DP")


def table8(run: dict) -> tuple[int, float, list[float]]:
    dev = [
        run["f1"][m][e] - run["seed_f1"][m][e]
        for m in METHODS
        for e in sorted(run["f1"][m], key=float)
    ]
    d = np.array(dev)
    return int(np.sum(np.abs(d) <= 2.0)), float(np.sqrt(np.mean(d**2))), dev


def table11(run: dict) -> float:
    ab = run["ablation_eps1"]
    d = np.array([ab[a]["f1"] - ab[a]["seed_f1"] for a in ABLATIONS])
    return float(np.sqrt(np.mean(d**2)))


def val_mean(run: dict) -> float:
    v = run["validation"]["f1"]
    return float(np.mean([v[m][e] for m in METHODS for e in v[m]]))


def main(paths: list[str]) -> None:
    runs = []
    for p in paths:
        with open(p) as fh:
            runs.append(json.load(fh))
    e1k, e1r, e2k, e2r, e3k, e3r = runs
    verdict = []
    for name, k, r in (("E1 datatest2 seed 0", e1k, e1r), ("E2 datatest seed 1", e2k, e2r)):
        (wk, rk, _), (wr, rr, _) = table8(k), table8(r)
        ok = wr > wk and rr < rk
        verdict.append(ok)
        print(f"{name}: Table 8 within2 K={wk} R={wr}; RMS K={rk:.2f} R={rr:.2f} -> {ok}")
    for name, k, r in (("E1", e1k, e1r), ("E2", e2k, e2r)):
        ak, ar = table11(k), table11(r)
        ok = ar <= ak
        verdict.append(ok)
        print(f"{name}: Table 11 F1 RMS K={ak:.2f} R={ar:.2f} -> {ok}")
    same = all(k["attack_auc"] == r["attack_auc"] for k, r in ((e1k, e1r), (e2k, e2r), (e3k, e3r)))
    verdict.append(same)
    print(f"Tables 9-10 attack AUC identical in E1-E3: {same}")
    vk, vr = val_mean(e3k), val_mean(e3r)
    verdict.append(vr >= vk + 1.0)
    print(f"E3 validation F1 mean (25 cells): K={vk:.2f} R={vr:.2f} -> {vr >= vk + 1.0}")
    print("PASSED" if all(verdict) else "FAILED", verdict)
    for name, run in (("E1 K", e1k), ("E1 R", e1r), ("E2 K", e2k), ("E2 R", e2r), ("E3 R", e3r)):
        print(name, "tau", run["calibration"]["tau"], "NonPrivate", run["f1"].get("NonPrivate"))
        for e in sorted(run["f1"]["GC-DP"], key=float):
            cells = " / ".join(f"{run['f1'][m][e]:.1f}" for m in METHODS)
            print(f"   eps {e}: {cells}")


if __name__ == "__main__":
    main(sys.argv[1:])
