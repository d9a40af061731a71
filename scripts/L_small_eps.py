"""Clip at small ε limited to fleets whose θ-search counts are weak (issue 20, claim D9;
helper L; docs/preregistration/L-clip-small-eps-weak.md). Builds on helper Z's
``scripts/Z_small_eps.py`` (same graph generator, same per-run figures, same ``compare``).

    python scripts/L_small_eps.py capture SET SEEDS OUT.jsonl [--eps 0.5,1] [--arms a150,b8]
    python scripts/L_small_eps.py compare OUT.jsonl ARM          (Z's criteria 1-5)
    python scripts/L_small_eps.py excess OUT.jsonl [...] ARM     (L2's criteria 1-5)
    python scripts/L_small_eps.py mainsums SET SEEDS [--eps 2,3,5]
    python scripts/L_small_eps.py real OUT.jsonl [--arms rule]    (criterion 6's graphs)
    python scripts/L_small_eps.py realcompare OUT.jsonl ARM

Arms (each a τ and a gate; the cell's clip split is Z's τ rule where the gate holds, ll's
θ part elsewhere): ``a150`` n <= MID_FLEET_DEVICES (150), τ = 1.0; ``b8`` the public count
signal ``signal_ratio(ll's ε_θ, n)`` < SIGNAL_RATIO_TARGET (8), τ = 1.0; ``a150t05`` and
``b8t05`` the same at τ = 0.5; ``rule``: the module's own constants
(``CLIP_SMALL_EPS_MAX_DEVICES`` = 150 with ``CLIP_SMALL_EPS_DSR_EPS`` = 0.12, the
calibration's choice), run through ``cadr_budget`` itself — the pre-registered arm.
Sets (``Z_small_eps.SETS``): Z's ``cal``/``fresh``/``fresh2``/``fresh3`` (3601-3940,
calibration), ``L-fresh`` (4101-4140, evaluation), ``L-confirm`` (4201-4240), ``L2-third``
(4301-4380, helper L2's third evaluation; docs/preregistration/L2-clip-small-eps-weak-third.md,
criteria in ``third_criteria``: the promise's violation as the summed excess above the
constant median and the count of cells above it by more than ``ABOVE_MARGIN``).
``main``: every rule off. The script-level arms set Z's global
``CLIP_DSR_USEFUL_EPS`` for the cells their gate admits (the split is a function of ε, α
and n, so this is the same split), which is how the calibration compared gates without
product code.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import ldpfleet.protocol.cadr_budget as cb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import I_real_holdout as ih
import Y_joint_per_node as yj
import Z_small_eps as zs

ALPHA = zs.ALPHA
RULE_MAX_DEVICES = 150  # the "rule" arm's CLIP_SMALL_EPS_MAX_DEVICES (pre-registered)


def _ll_theta(eps: float, n: int) -> float:
    return cb.CadrBudget.for_pipeline(eps, ALPHA, "dp", True, n).theta


GATES = {
    "a150": (lambda eps, n: n <= cb.MID_FLEET_DEVICES, 1.0),
    "b8": (lambda eps, n: cb.signal_ratio(_ll_theta(eps, n), n) < cb.SIGNAL_RATIO_TARGET, 1.0),
    "a150t05": (lambda eps, n: n <= cb.MID_FLEET_DEVICES, 0.5),
    "b8t05": (lambda eps, n: cb.signal_ratio(_ll_theta(eps, n), n) < cb.SIGNAL_RATIO_TARGET, 0.5),
}


@contextmanager
def arm_state(arm: str, eps: float, n: int):
    """The module state of ``arm`` for a cell (ε, n); restored on exit."""
    saved = (cb.CLIP_DSR_USEFUL_EPS, cb.CLIP_SMALL_EPS_MAX_DEVICES)
    cb.CLIP_DSR_USEFUL_EPS, cb.CLIP_SMALL_EPS_MAX_DEVICES = None, None
    if arm == "rule":
        cb.CLIP_SMALL_EPS_MAX_DEVICES = RULE_MAX_DEVICES
    elif arm != "main":
        gate, tau = GATES[arm]
        cb.CLIP_DSR_USEFUL_EPS = tau if gate(eps, n) else None
    try:
        yield
    finally:
        cb.CLIP_DSR_USEFUL_EPS, cb.CLIP_SMALL_EPS_MAX_DEVICES = saved


def split(arm: str, eps: float, n: int) -> tuple[float, float]:
    """Clip's (ε_θ, ε_dsr) for a searched dp run of ``n`` devices under ``arm``."""
    with arm_state(arm, eps, n):
        b = cb.CadrBudget.for_pipeline(eps, ALPHA, "dp", True, n, "clip")
        return b.theta, b.dsr


def run(graph, arm: str, eps: float, seed: int) -> dict:
    """One in-process clip run (Z's figures) under ``arm``."""
    with arm_state(arm, eps, graph.n):
        return zs._run(graph, eps, seed, cb.CLIP_DSR_USEFUL_EPS)


def capture(which: str, seeds: list[int], out: str, eps_list, arms) -> None:
    """Z's row format: one row per (graph, ε, run seed) where some arm's split differs."""
    started = time.process_time()
    with open(out, "w") as fh:
        for gseed in zs.SETS[which]:
            name, graph = yj.make(gseed)
            for eps in eps_list:
                base = split("main", eps, graph.n)
                splits = {a: split(a, eps, graph.n) for a in arms}
                if all(s == base for s in splits.values()):
                    continue
                for seed in seeds:
                    main = run(graph, "main", eps, seed)
                    if main["by"] != "search":
                        continue
                    row = {"graph": f"{gseed}:{name}", "n": graph.n, "eps": eps, "seed": seed,
                           "main": main, "split main": base}  # fmt: skip
                    for a, s in splits.items():
                        row[f"split {a}"] = s
                        row[a] = main if s == base else run(graph, a, eps, seed)
                    fh.write(json.dumps(row) + "\n")
                fh.flush()
            print(f"{name} n={graph.n} cpu {time.process_time() - started:.1f}s", flush=True)


def real_capture(out: str, arms) -> None:
    """Criterion 6: helper I's held-out real small graphs (``I_real_holdout.GRAPHS``, its ε
    list and run seeds 91-95) under method clip, main and every arm."""
    with open(out, "w") as fh:
        for name, make in ih.GRAPHS.items():
            graph = ih.graph_of(make())
            for eps in ih.EPS_LIST:
                for seed in ih.SEEDS:
                    row = {"graph": name, "n": graph.n, "eps": eps, "seed": seed}
                    for a in ("main", *arms):
                        row[f"split {a}"] = split(a, eps, graph.n)
                        row[a] = run(graph, a, eps, seed)
                    fh.write(json.dumps(row) + "\n")
            print(name, graph.n, flush=True)


def real_compare(path: str, arm: str) -> bool:
    """Criterion 6: summed per-cell MAE (means over seeds) not higher by > 1 %."""
    with open(path) as fh:
        rows = [json.loads(x) for x in fh if x.strip()]
    cells = defaultdict(list)
    for r in rows:
        cells[(r["graph"], r["n"], r["eps"])].append(r)
    tot = defaultdict(float)
    print(f"| graph | n | ε | main MAE | {arm} MAE | const. median | zeros | changed |")
    print("|---" * 8 + "|")
    for (g, n, eps), runs in cells.items():
        m = {a: sum(x[a]["mae"] for x in runs) / len(runs) for a in ("main", arm)}
        med, zero = runs[0]["main"]["median"], runs[0]["main"]["zero"]
        changed = runs[0][f"split {arm}"] != runs[0]["split main"]
        print(f"| {g} | {n} | {eps:g} | {m['main']:.3f} | {m[arm]:.3f} | {med:.3f} | "
              f"{zero:.3f} | {'yes' if changed else ''} |")  # fmt: skip
        for a in ("main", arm):
            tot[f"{a} mae"] += m[a]
            tot[f"{a}>med"] += m[a] > med
        tot["median"] += med
        tot["zeros"] += zero
    print(dict(tot))
    ok = tot[f"{arm} mae"] <= 1.01 * tot["main mae"]
    print(f"- 6 real small graphs' summed MAE not higher by > 1 %: {'PASS' if ok else 'FAIL'}")
    return ok


ABOVE_MARGIN = 0.01  # criterion 2's count: cells above the constant median by more than this


def cell_means(rows: list[dict], arm: str) -> list[dict]:
    """The changed cells (``arm``'s split differs from main's) of capture rows, each with
    main's and ``arm``'s MAE and EMD averaged over its run seeds."""
    by = defaultdict(list)
    for r in rows:
        if list(r[f"split {arm}"]) != list(r["split main"]):
            by[(r["graph"], r["eps"])].append(r)
    cells = []
    for (graph, eps), runs in by.items():
        c = {"graph": graph, "eps": eps, "n": runs[0]["n"], "median": runs[0]["main"]["median"],
             "zero": runs[0]["main"]["zero"], "runs": len(runs)}  # fmt: skip
        for a in ("main", arm):
            c[f"{a} mae"] = sum(x[a]["mae"] for x in runs) / len(runs)
            c[f"{a} emd"] = sum(x[a]["emd"] for x in runs) / len(runs)
        cells.append(c)
    return cells


def third_sums(cells: list[dict], arm: str) -> dict:
    """Sums over changed cells (every unchanged cell adds the same to both arms): MAE, EMD,
    the excess Σ max(0, MAE − median), the cells above the median (plain and by more than
    ``ABOVE_MARGIN``), the baselines, the cells newly above all zeros and the changed ε >= 2."""
    s = {"cells": len(cells), "median": sum(c["median"] for c in cells),
         "zeros": sum(c["zero"] for c in cells)}  # fmt: skip
    for a in ("main", arm):
        s[a] = sum(c[f"{a} mae"] for c in cells)
        s[f"{a} emd"] = sum(c[f"{a} emd"] for c in cells)
        s[f"{a} excess"] = sum(max(0.0, c[f"{a} mae"] - c["median"]) for c in cells)
        s[f"{a}>med"] = sum(c[f"{a} mae"] > c["median"] for c in cells)
        s[f"{a}>med+0.01"] = sum(c[f"{a} mae"] > c["median"] + ABOVE_MARGIN for c in cells)
    s["newly above zeros"] = [(c["graph"], c["eps"]) for c in cells
                              if c["main mae"] <= c["zero"] < c[f"{arm} mae"]]  # fmt: skip
    s["changed eps>=2"] = [(c["graph"], c["eps"]) for c in cells if c["eps"] >= 2]
    return s


def third_criteria(s: dict, arm: str) -> dict[str, bool]:
    """Helper L2's pre-registered criteria 1-5 (criterion 6 is ``realcompare``)."""
    return {
        "1 summed MAE lower": s[arm] < s["main"],
        "2 summed excess above the constant median lower, none more above it": (
            s[f"{arm} excess"] < s["main excess"] and s[f"{arm}>med+0.01"] <= s["main>med+0.01"]
        ),
        "3 none newly above all zeros": not s["newly above zeros"],
        "4 summed EMD not higher by > 2 %": s[f"{arm} emd"] <= 1.02 * s["main emd"],
        "5 no ε >= 2 cell changed": not s["changed eps>=2"],
    }


def excess_compare(paths: list[str], arm: str) -> bool:
    """Print per-ε and overall sums and helper L2's criteria for capture files ``paths``."""
    rows = []
    for path in paths:
        with open(path) as fh:
            rows.extend(json.loads(x) for x in fh if x.strip())
    cells = cell_means(rows, arm)
    for eps in sorted({c["eps"] for c in cells}):
        print(f"ε = {eps:g}:", third_sums([c for c in cells if c["eps"] == eps], arm))
    s = third_sums(cells, arm)
    print("all changed cells:", s)
    crit = third_criteria(s, arm)
    for k, ok in crit.items():
        print(f"- {k}: {'PASS' if ok else 'FAIL'}")
    passed = all(crit.values())
    print("OVERALL (criteria 1-5):", "PASS" if passed else "FAIL")
    return passed


def _options(argv: list[str]) -> tuple[dict, list[str]]:
    opt = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
    pos = [a for i, a in enumerate(argv) if not a.startswith("--")
           and not (i > 0 and argv[i - 1].startswith("--"))]  # fmt: skip
    return opt, pos


def main() -> None:
    opt, pos = _options(sys.argv[1:])
    arms = tuple(opt.get("--arms", "a150,b8").split(","))
    eps_list = tuple(float(e) for e in opt.get("--eps", "0.5,0.75,1,2,3,5").split(","))
    if pos[0] == "capture":
        capture(pos[1], [int(s) for s in pos[2].split(",")], pos[3], eps_list, arms)
    elif pos[0] == "mainsums":
        eps_list = tuple(float(e) for e in opt.get("--eps", "2,3,5").split(","))
        zs.main_sums(pos[1], [int(x) for x in pos[2].split(",")], eps_list)
    elif pos[0] == "compare":
        zs.compare(pos[1:-1], pos[-1])
    elif pos[0] == "excess":
        excess_compare(pos[1:-1], pos[-1])
    elif pos[0] == "real":
        real_capture(pos[1], tuple(opt.get("--arms", "rule").split(",")))
    elif pos[0] == "realcompare":
        real_compare(pos[1], pos[2])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
