"""The per-node prior of method "clip" with a FREE shape inside the θ-search buckets
(issue 20, claim D9; helper O; docs/preregistration/O-free-shape.md).

    python scripts/O_free_shape.py capture SET SEEDS OUT.jsonl [--eps 0.5,1,2,3,5] [--arms a,b]
    python scripts/O_free_shape.py compare OUT.jsonl [MORE.jsonl ...] [--arm free] [--brief]

Each run is the in-process reference ``cadr_reference.private_run(graph, "clip",
"auto-dev", ε, 0.1, seed, pipeline="dp")`` (native clip). Its post-processing is done once
per ARM on the same releases by wrapping ``cadr_reference._release_scores``: ``base`` is
today's (``PER_NODE_FREE_SHAPE = False``), ``free`` sets
``degree_postprocess.PER_NODE_FREE_SHAPE = True`` (the per-node joint reading's shape free
inside each bucket); ``freeK`` / ``freesW`` / ``freeKsW`` (calibration only) the same with K EM
steps and / or ``shape_smoothing`` W for the per-node free-shape prior (the histogram's
reading keeps its own). Per-node MAE/MSE and
the histogram's L1/EMD of each arm, the constant true median and all zeros.

``SET``: ``ycal`` (graph seeds 3501-3540, helper Y's generator ``Y_joint_per_node.make``:
used, calibration), ``regular`` (helper N's regular / bipartite graphs,
``N_regular_buckets.graphs``: used, calibration), ``fresh`` (graph seeds 4501-4540, the
evaluation), ``large`` (ego-Facebook, wiki-Vote), ``real`` (helper I's real small graphs,
``I_real_holdout.GRAPHS``).
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import ldpfleet.collector.cadr_reference as cr
import ldpfleet.collector.degree_postprocess as dpp
import numpy as np
from ldpfleet.collector.joint_prior import joint_prior
from ldpfleet.devices.graphs import load_graph

sys.path.insert(0, str(Path(__file__).resolve().parent))
import I_real_holdout as ih
import N_regular_buckets as nrb
import Y_joint_per_node as yj

EPS_LIST = (0.5, 1.0, 2.0, 3.0, 5.0)
SETS = {"ycal": range(3501, 3541), "fresh": range(4501, 4541)}
_arms: dict[str, dict] = {}
_orig_release_scores = cr._release_scores
_ARM_NAMES: list[str] = ["base", "free"]


def graphs(which: str):
    """(name, graph) of a set, in its fixed order."""
    if which in SETS:
        for seed in SETS[which]:
            name, g = yj.make(seed)
            yield f"{seed}:{name}", g
    elif which == "regular":
        for g in nrb.graphs():
            yield g.name, g
    elif which == "large":
        yield "facebook", load_graph("facebook")
        yield "wiki-vote", load_graph("wiki-vote")
    elif which == "real":
        for name, mk in ih.GRAPHS.items():
            yield name, ih.graph_of(mk())
    else:
        raise SystemExit(f"SET: {which!r} unknown")


def _arm_state(arm: str):
    """(flag, per-node free-shape keyword overrides or None) of an arm name: ``base``,
    ``free``, ``freeK`` (K EM steps), ``freesW`` / ``freeKsW`` (shape smoothing W)."""
    if arm == "base":
        return False, None
    if arm == "free":
        return True, None
    steps, _, smooth = arm[4:].partition("s")
    kw = {"iterations": int(steps)} if steps else {}
    if smooth:
        kw["shape_smoothing"] = float(smooth)
    return True, kw


def _patched_joint_prior(overrides: dict):
    def call(*args, free_shape=False, **kw):
        if free_shape:
            kw.update(overrides)
        return joint_prior(*args, free_shape=free_shape, **kw)

    return call


def _release_scores(degrees, released, theta, eps_dsr, search, bound, ratio=None):
    """Every arm's scores on the same releases (kept in ``_arms``); returns base's."""
    _arms.clear()
    counts = None
    if search:
        counts = dpp.SearchCounts(
            search["bucket_sums"], search["thresholds"], bound, len(degrees), search["eps"],
            search["noise_parties"],
        )  # fmt: skip
    out = None
    for arm in _ARM_NAMES:
        flag, steps = _arm_state(arm)
        saved = dpp.PER_NODE_FREE_SHAPE, dpp.joint_prior
        dpp.PER_NODE_FREE_SHAPE = flag
        if steps is not None:
            dpp.joint_prior = _patched_joint_prior(steps)
        try:
            started = time.process_time()
            post = dpp.post_process_release(released, theta, eps_dsr, counts, ratio)
            cpu = time.process_time() - started
        finally:
            dpp.PER_NODE_FREE_SHAPE, dpp.joint_prior = saved
        _arms[arm] = {**dpp.score(degrees, post.estimates, post.histogram), "cpu": cpu}
        if arm == "base":
            out = _orig_release_scores(degrees, released, theta, eps_dsr, search, bound, ratio)
    return out


def capture(which: str, seeds: list[int], out: str, eps_list) -> None:
    """One row per (graph, ε, run seed): every arm's scores on the same releases."""
    cr._release_scores = _release_scores
    started = time.process_time()
    with open(out, "w") as fh:
        for name, graph in graphs(which):
            for eps in eps_list:
                for seed in seeds:
                    r = cr.private_run(graph, "clip", "auto-dev", eps, 0.1, seed, pipeline="dp")
                    row = {
                        "graph": name, "n": graph.n, "eps": eps, "seed": seed,
                        "theta": r.theta, "searched": bool(r.theta_search),
                        "median": r.baselines["constant_median_oracle"]["mae"],
                        "zero": r.baselines["all_zero"]["mae"],
                    }  # fmt: skip
                    for arm, sc in _arms.items():
                        for k in ("mae", "mse", "histogram_l1", "histogram_emd", "cpu"):
                            row[f"{arm} {k}"] = sc[k]
                    fh.write(json.dumps(row) + "\n")
                fh.flush()
            print(f"{name} n={graph.n} cpu {time.process_time() - started:.1f}s", flush=True)


def _load(paths: list[str]) -> list[dict]:
    rows = []
    for path in paths:
        with open(path) as fh:
            rows.extend(json.loads(line) for line in fh if line.strip())
    return rows


def cells(rows: list[dict], arm: str) -> dict[tuple, dict]:
    """Per (graph, ε): means over run seeds of base's and ``arm``'s figures."""
    by: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        by[(r["graph"], r["eps"])].append(r)
    out = {}
    for key, runs in by.items():
        c = {"n": runs[0]["n"], "median": runs[0]["median"], "zero": runs[0]["zero"]}
        for m, src in (("base", "base"), ("cand", arm)):
            for k in ("mae", "mse", "histogram_l1", "histogram_emd"):
                c[f"{m} {k}"] = float(np.mean([x[f"{src} {k}"] for x in runs]))
            c[f"{m} cpu max"] = max(x[f"{src} cpu"] for x in runs)
        out[key] = c
    return out


def _sums(group: list[dict]) -> dict[str, float]:
    s: dict[str, float] = defaultdict(float)
    for c in group:
        s["cells"] += 1
        s["median"] += c["median"]
        s["zero"] += c["zero"]
        for m in ("base", "cand"):
            s[f"{m} mae"] += c[f"{m} mae"]
            s[f"{m} mse"] += c[f"{m} mse"]
            s[f"{m} excess"] += max(0.0, c[f"{m} mae"] - c["median"])
            s[f"{m} above"] += c[f"{m} mae"] > c["median"] + 0.01
            s[f"{m} above zeros"] += c[f"{m} mae"] > c["zero"]
    return s


def _table(title: str, groups: dict) -> None:
    print(f"\n### {title}\n")
    print(
        "| group | cells | base MAE | cand MAE | median | zeros | base excess | cand excess "
        "| base >med+.01 | cand >med+.01 | base MSE | cand MSE |"
    )
    print("|---" * 12 + "|")
    for label, group in groups.items():
        s = _sums(group)
        print(
            f"| {label} | {s['cells']:.0f} | {s['base mae']:.3f} | {s['cand mae']:.3f} | "
            f"{s['median']:.3f} | {s['zero']:.3f} | {s['base excess']:.3f} | "
            f"{s['cand excess']:.3f} | {s['base above']:.0f} | {s['cand above']:.0f} | "
            f"{s['base mse']:.2f} | {s['cand mse']:.2f} |"
        )


def compare(rows: list[dict], arm: str, per_cell: bool) -> dict:
    """Tables and the pre-registered criteria 1-4 (docs/preregistration/O-free-shape.md);
    returns the summed figures."""
    cs = cells(rows, arm)
    if per_cell:
        print(f"| graph | n | ε | base MAE | {arm} MAE | median | zeros | base MSE | {arm} MSE |")
        print("|---" * 9 + "|")
        for (g, eps), c in cs.items():
            print(
                f"| {g} | {c['n']} | {eps:g} | {c['base mae']:.3f} | {c['cand mae']:.3f} | "
                f"{c['median']:.3f} | {c['zero']:.3f} | {c['base mse']:.3f} | "
                f"{c['cand mse']:.3f} |"
            )
    every = list(cs.values())
    eps_groups = {f"ε = {e:g}": [c for (_, x), c in cs.items() if x == e]
                  for e in sorted({k[1] for k in cs})}  # fmt: skip
    _table("Per ε", eps_groups)
    _table("All cells", {"all": every})
    s = _sums(every)
    newly = [k for k, c in cs.items() if c["base mae"] <= c["zero"] < c["cand mae"]]
    same_hist = all(
        c["base histogram_emd"] == c["cand histogram_emd"]
        and c["base histogram_l1"] == c["cand histogram_l1"]
        for c in every
    )
    crit = {
        "1 summed MAE lower": (s["cand mae"] < s["base mae"],
                               f"{s['cand mae']:.3f} vs {s['base mae']:.3f} "
                               f"({s['cand mae'] / s['base mae'] - 1:+.3%})"),
        "2 summed excess lower, cells above median+0.01 not more": (
            s["cand excess"] < s["base excess"] and s["cand above"] <= s["base above"],
            f"excess {s['cand excess']:.3f} vs {s['base excess']:.3f}; "
            f"cells {s['cand above']:.0f} vs {s['base above']:.0f}"),
        "3 none newly above all zeros": (not newly, f"{newly}"),
        "4 histogram unchanged": (same_hist, ""),
    }  # fmt: skip
    print("\n### Criteria 1-4\n")
    for label, (ok, text) in crit.items():
        print(f"- {label}: {'PASS' if ok else 'FAIL'} ({text})")
    better = sum(c["cand mae"] < c["base mae"] - 1e-12 for c in every)
    worse = sum(c["cand mae"] > c["base mae"] + 1e-12 for c in every)
    print(f"cells better / worse / equal: {better} / {worse} / {len(every) - better - worse}")
    print(f"summed MSE: {s['cand mse']:.3f} vs {s['base mse']:.3f}")
    cpu = max(c["cand cpu max"] for c in every), max(c["base cpu max"] for c in every)
    print(f"largest post-processing CPU of one run: cand {cpu[0]:.3f} s, base {cpu[1]:.3f} s")
    return dict(s)


def main() -> None:
    global _ARM_NAMES
    argv = sys.argv[1:]
    opts = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
    valued = {i + 1 for i, a in enumerate(argv) if a.startswith("--") and a != "--brief"}
    pos = [a for i, a in enumerate(argv) if not a.startswith("--") and i not in valued]
    if "--arms" in opts:
        _ARM_NAMES = ["base", *[a for a in opts["--arms"].split(",") if a != "base"]]
    if pos and pos[0] == "capture":
        eps = tuple(float(e) for e in opts.get("--eps", "0.5,1,2,3,5").split(","))
        capture(pos[1], [int(s) for s in pos[2].split(",")], pos[3], eps)
    elif pos and pos[0] == "compare":
        compare(_load(pos[1:]), opts.get("--arm", "free"), "--brief" not in argv)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
