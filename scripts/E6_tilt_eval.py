"""Helper E6 (issue 20, claim D9): the pre-registered evaluation of the per-node prior's
median-group tilt (docs/preregistration/E6-median-tilt.md).

Each run is the default in-process release (``ldpfleet bench cadr``: clip, dp, auto-dev,
α = 0.1); its per-node release is re-made from the SAME DSR values and θ-search counts with
``degree_postprocess.PER_NODE_MEDIAN_TILT_LEVEL = LEVEL`` (``rule``) beside the run as
shipped (``base``; θ does not read the per-node prior).

    nice -n 10 python scripts/E6_tilt_eval.py arms /tmp/E6/fresh.jsonl
    python scripts/E6_tilt_eval.py compare /tmp/E6/fresh.jsonl
    nice -n 10 python scripts/E6_tilt_eval.py facebook /tmp/E6/facebook.jsonl
"""

from __future__ import annotations

import json
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])

LEVEL = 0.05
GRAPH_BASE = 73000  # fresh graph seeds 73001.. (E5 used 71001.. and 72001..)
RUN_SEEDS = (20, 21, 22)  # fresh run seeds (E5 used 0-2 and 10-12)
EPSILONS = (0.5, 1.0, 2.0, 3.0, 5.0)


def arms_run(graph, eps, seed):
    import ldpfleet.collector.degree_postprocess as dp
    from A2_decompose import recorded_run

    saved = dp.PER_NODE_MEDIAN_TILT_LEVEL
    dp.PER_NODE_MEDIAN_TILT_LEVEL = None
    try:
        run_, seen = recorded_run(graph, eps, seed)
    finally:
        dp.PER_NODE_MEDIAN_TILT_LEVEL = saved
    d = np.asarray(seen["degrees"])
    b = run_.baselines
    row = {
        "graph": graph.name, "n": int(d.size), "eps": eps, "seed": seed, "mae": run_.mae,
        "median": b["constant_median_oracle"]["mae"], "zero": b["all_zero"]["mae"],
        "theta": int(run_.theta), "chosen_by": run_.theta_chosen_by,
        "base": run_.mae, "rule": run_.mae,
    }  # fmt: skip
    s = seen["search"]
    if not s:
        return row
    y, t, e = seen["released"], seen["theta"], seen["eps_dsr"]
    counts = dp.SearchCounts(s["bucket_sums"], s["thresholds"], seen["bound"], d.size,
                             s["eps"], s["noise_parties"])  # fmt: skip
    base_est = dp.post_process_release(y, t, e, counts, seen["ratio"]).estimates
    dp.PER_NODE_MEDIAN_TILT_LEVEL = LEVEL
    try:
        est = dp.post_process_release(y, t, e, counts, seen["ratio"]).estimates
    finally:
        dp.PER_NODE_MEDIAN_TILT_LEVEL = saved
    row["base_check"] = float(np.mean(np.abs(d - base_est)))
    row["rule"] = float(np.mean(np.abs(d - est)))
    row["changed"] = bool(not np.array_equal(est, base_est))
    return row


def arms(out):
    from E5_heldout_graphs import as_graph, graph_specs

    with open(out, "w") as f:
        for name, build in graph_specs(GRAPH_BASE):
            graph = as_graph(build(), name)
            for eps in EPSILONS:
                for seed in RUN_SEEDS:
                    f.write(json.dumps(arms_run(graph, eps, seed)) + "\n")
            f.flush()
            print(name, graph.n, flush=True)


def facebook(out, seeds=(0, 1, 2)):
    from ldpfleet.devices.graphs import load_graph

    graph = load_graph("facebook")
    with open(out, "w") as f:
        for seed in seeds:
            r = arms_run(graph, 3.0, seed)
            f.write(json.dumps(r) + "\n")
            print(json.dumps(r), flush=True)


def compare(path):
    """docs/preregistration/E6-median-tilt.md's criteria 1 and 2 on the fresh set."""
    from E5_heldout_graphs import cells, read

    rows = read(path)
    mism = [r for r in rows if "base_check" in r and abs(r["base_check"] - r["base"]) > 1e-12]
    out = {}
    for arm in ("base", "rule"):
        cc = cells([{**r, "mae": r[arm]} for r in rows])
        out[arm] = {
            "above": {(c["graph"], c["eps"]) for c in cc if c["above"]},
            "summed": sum(c["mae"] for c in cc),
            "above_zero": sum(c["above_zero"] for c in cc),
            "cells": len(cc),
        }
    newly = sorted(out["rule"]["above"] - out["base"]["above"])
    gone = sorted(out["base"]["above"] - out["rule"]["above"])
    changed = [r for r in rows if r.get("changed")]
    print(f"cells {out['base']['cells']}, runs {len(rows)}, runs changed {len(changed)}, "
          f"base re-made != shipped: {len(mism)}")  # fmt: skip
    for arm in ("base", "rule"):
        o = out[arm]
        print(f"  {arm}: cells above the constant median {len(o['above'])}, summed MAE "
              f"{o['summed']:.4f}, cells above all zeros {o['above_zero']}")  # fmt: skip
    delta = out["rule"]["summed"] / out["base"]["summed"] - 1
    print(f"  summed MAE change {100 * delta:+.3f} %; newly above {newly}; no longer above {gone}")
    for r in changed:
        print(f"    {r['graph']} ε {r['eps']:g} seed {r['seed']}: {r['base']:.4f} -> "
              f"{r['rule']:.4f} (median {r['median']:.4f})")  # fmt: skip
    passed = len(out["rule"]["above"]) < len(out["base"]["above"]) and not newly
    print("criteria 1-2 PASSED" if passed else "criteria 1-2 FAILED")


def main(argv):
    cmd = argv[1]
    if cmd == "arms":
        arms(argv[2])
    elif cmd == "compare":
        compare(argv[2])
    elif cmd == "facebook":
        facebook(argv[2])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
