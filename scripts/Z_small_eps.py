"""Method clip at small ε: should the θ search take (almost) all of ε? (issue 20, claim D9;
helper Z; docs/preregistration/Z-small-eps.md). Graph sets from helper Y's
``scripts/Y_joint_per_node.py`` (``make``: family by seed, n log-uniform in 25..3000).

    python scripts/Z_small_eps.py capture SET SEEDS OUT.jsonl [--eps 0.5,1] [--arms 0.1,0.2]
    python scripts/Z_small_eps.py compare OUT.jsonl ARM
    python scripts/Z_small_eps.py mainsums SET SEEDS [--eps 2,3]   (main over every cell)

Arms: ``main`` (``cadr_budget.CLIP_DSR_USEFUL_EPS = None``: clip keeps ll's θ part) and one
arm per τ (``CLIP_DSR_USEFUL_EPS = τ``). Each run is the in-process reference's native clip
(``cadr_reference.private_run(graph, "clip", "auto-dev", ε, 0.1, seed, pipeline="dp")``).
A cell whose split under an arm equals main's is not re-run: the run is a function of the
split and the seed, so its scores are main's (recorded as ``same``). ``SET``: ``cal``
(graph seeds 3601-3640), ``fresh`` (3701-3740, the pre-registered evaluation).
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import ldpfleet.collector.cadr_reference as cr
import ldpfleet.protocol.cadr_budget as cb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import Y_joint_per_node as yj

SETS = {
    "cal": range(3601, 3641),
    "fresh": range(3701, 3741),
    "fresh2": range(3801, 3841),
    "fresh3": range(3901, 3941),
    # helper L (scripts/L_small_eps.py, docs/preregistration/L-clip-small-eps-weak.md)
    "L-fresh": range(4101, 4141),
    "L-confirm": range(4201, 4241),
    # helper L2 (docs/preregistration/L2-clip-small-eps-weak-third.md)
    "L2-third": range(4301, 4381),
}
ALPHA = 0.1


def _split(eps: float, n: int, tau: float | None) -> tuple[float, float]:
    saved = cb.CLIP_DSR_USEFUL_EPS
    cb.CLIP_DSR_USEFUL_EPS = tau
    try:
        b = cb.CadrBudget.for_pipeline(eps, ALPHA, "dp", True, n, "clip")
        return b.theta, b.dsr
    finally:
        cb.CLIP_DSR_USEFUL_EPS = saved


def _run(graph, eps: float, seed: int, tau: float | None) -> dict:
    saved = cb.CLIP_DSR_USEFUL_EPS
    cb.CLIP_DSR_USEFUL_EPS = tau
    try:
        r = cr.private_run(graph, "clip", "auto-dev", eps, ALPHA, seed, pipeline="dp")
    finally:
        cb.CLIP_DSR_USEFUL_EPS = saved
    return {
        "mae": r.mae, "emd": r.histogram_emd, "theta": r.theta, "by": r.theta_chosen_by,
        "median": r.baselines["constant_median_oracle"]["mae"],
        "zero": r.baselines["all_zero"]["mae"], "spent": r.spent,
    }  # fmt: skip


def capture(which: str, seeds: list[int], out: str, eps_list, taus) -> None:
    """One row per (graph, ε, run seed) where some arm's split differs from main's."""
    started = time.process_time()
    with open(out, "w") as fh:
        for gseed in SETS[which]:
            name, graph = yj.make(gseed)
            for eps in eps_list:
                base = _split(eps, graph.n, None)
                arms = {t: _split(eps, graph.n, t) for t in taus}
                if all(s == base for s in arms.values()):
                    continue
                for seed in seeds:
                    main = _run(graph, eps, seed, None)
                    if main["by"] != "search":  # small-fleet rule: no θ search, no split
                        continue
                    row = {"graph": f"{gseed}:{name}", "n": graph.n, "eps": eps, "seed": seed,
                           "main": main, "split main": base}  # fmt: skip
                    for t, s in arms.items():
                        row[f"split {t}"] = s
                        row[str(t)] = main if s == base else _run(graph, eps, seed, t)
                    fh.write(json.dumps(row) + "\n")
                fh.flush()
            print(f"{name} n={graph.n} cpu {time.process_time() - started:.1f}s", flush=True)


def main_sums(which: str, seeds: list[int], eps_list) -> dict:
    """Main's summed per-cell MAE, EMD and cells above the constant median over EVERY cell
    of a set at ``eps_list`` (runs where the small-fleet rule chooses θ included): the
    denominators of the criteria "over all cells" (``compare`` sees the changed cells only;
    the unchanged ones add the same amount to both arms)."""
    out = defaultdict(float)
    for gseed in SETS[which]:
        _, graph = yj.make(gseed)
        for eps in eps_list:
            runs = [_run(graph, eps, seed, None) for seed in seeds]
            mae = sum(r["mae"] for r in runs) / len(runs)
            out[f"cells {eps:g}"] += 1
            out[f"mae {eps:g}"] += mae
            out[f"emd {eps:g}"] += sum(r["emd"] for r in runs) / len(runs)
            out[f"above median {eps:g}"] += mae > runs[0]["median"]
    print(dict(out))
    return out


def compare(paths: list[str], arm: str) -> bool:
    """Per-cell means over run seeds; the pre-registered criteria (main vs ``arm``)."""
    rows = []
    for path in paths:
        with open(path) as fh:
            rows.extend(json.loads(x) for x in fh if x.strip())
    by = defaultdict(list)
    for r in rows:
        by[(r["graph"], r["eps"])].append(r)
    cells = []
    for (g, eps), runs in by.items():
        c = {"graph": g, "eps": eps, "n": runs[0]["n"], "median": runs[0]["main"]["median"],
             "zero": runs[0]["main"]["zero"]}  # fmt: skip
        for a in ("main", arm):
            c[f"{a} mae"] = sum(x[a]["mae"] for x in runs) / len(runs)
            c[f"{a} emd"] = sum(x[a]["emd"] for x in runs) / len(runs)
        cells.append(c)
    print(f"| graph | n | ε | main MAE | {arm} MAE | const. median | zeros |")
    print("|---" * 7 + "|")
    for c in cells:
        print(f"| {c['graph']} | {c['n']} | {c['eps']:g} | {c['main mae']:.3f} | "
              f"{c[arm + ' mae']:.3f} | {c['median']:.3f} | {c['zero']:.3f} |")  # fmt: skip

    def sums(group):
        return {
            "cells": len(group),
            "main": sum(c["main mae"] for c in group), arm: sum(c[f"{arm} mae"] for c in group),
            "main>med": sum(c["main mae"] > c["median"] for c in group),
            f"{arm}>med": sum(c[f"{arm} mae"] > c["median"] for c in group),
            "main emd": sum(c["main emd"] for c in group),
            f"{arm} emd": sum(c[f"{arm} emd"] for c in group),
        }  # fmt: skip

    for eps in sorted({c["eps"] for c in cells}):
        print(f"ε = {eps:g}:", sums([c for c in cells if c["eps"] == eps]))
    s = sums(cells)
    print("all (changed cells; every other cell is identical in both arms):", s)
    high = sums([c for c in cells if c["eps"] >= 2])
    newly = [(c["graph"], c["eps"]) for c in cells
             if c["main mae"] <= c["zero"] < c[f"{arm} mae"]]  # fmt: skip
    crit = {
        "1 summed MAE lower": s[arm] < s["main"],
        "2 fewer cells above the constant median": s[f"{arm}>med"] < s["main>med"],
        "3 none newly above all zeros": not newly,
        "4 summed EMD not higher by > 2 %": s[f"{arm} emd"] <= 1.02 * s["main emd"],
        "5 ε >= 2 summed MAE not higher by > 0.5 %": high[arm] <= 1.005 * high["main"],
    }
    for k, ok in crit.items():
        print(f"- {k}: {'PASS' if ok else 'FAIL'}")
    print("newly above zeros:", newly)
    passed = all(crit.values())
    print("OVERALL:", "PASS" if passed else "FAIL")
    return passed


def main() -> None:
    argv = sys.argv[1:]
    opt = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
    pos = [a for i, a in enumerate(argv) if not a.startswith("--")
           and not (i > 0 and argv[i - 1].startswith("--"))]  # fmt: skip
    if pos[0] == "capture":
        eps_list = tuple(float(e) for e in opt.get("--eps", "0.5,0.75,1,2").split(","))
        taus = tuple(float(t) for t in opt.get("--arms", "0.1,0.2").split(","))
        capture(pos[1], [int(s) for s in pos[2].split(",")], pos[3], eps_list, taus)
    elif pos[0] == "mainsums":
        eps_list = tuple(float(e) for e in opt.get("--eps", "2,3").split(","))
        main_sums(pos[1], [int(x) for x in pos[2].split(",")], eps_list)
    elif pos[0] == "compare":
        compare(pos[1:-1], pos[-1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
