"""The joint reading as the PER-NODE prior too under method "clip": the pre-registered
evaluation (issue 20, claim D9; helper Y; docs/preregistration/Y-joint-per-node.md). A
copy of helper T's ``scripts/T_joint_eval.py`` with its two arms changed.

    python scripts/Y_joint_per_node.py list SET
    python scripts/Y_joint_per_node.py capture SET SEEDS OUT.jsonl [--eps 0.5,1,2,3,5]
    python scripts/Y_joint_per_node.py compare OUT.jsonl [MORE.jsonl ...]

"clip" is emulated as in ``scripts/V_clip_eval.py`` (imported from there). Each run is
post-processed TWICE on the same releases, by wrapping ``cadr_reference._release_scores``:
the baseline is today's clip (``search_priors(..., exact_releases=)``: the per-node prior
``unimodal_degree_prior``, the histogram from the joint reading; ``known_ratio=1``), the
candidate the same with ``degree_postprocess.JOINT_PER_NODE = True`` (the per-node prior
re-weighted by the DSR values too). The histogram is the same in both arms by
construction; the per-node MAE and MSE are compared.

``SET``: ``cal`` (graph seeds 3301-3320) and ``tfresh`` (3401-3440, helper T's fresh set,
seen: calibration here), ``fresh`` (graph seeds 3501-3540: the evaluation), ``named`` (les
misérables, karate, ego-Facebook, wiki-Vote: reported, not judged). A graph seed fixes the
family (cycling through ``FAMILIES``) and draws n log-uniformly in 25..3000 (``make``).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

import ldpfleet.collector.cadr_reference as cr
import ldpfleet.collector.degree_postprocess as dpp
import networkx as nx
import numpy as np
from ldpfleet.devices.graphs import Graph, load_graph

sys.path.insert(0, str(Path(__file__).resolve().parent))
import V_clip_eval as vc

EPS_LIST = (0.5, 1.0, 2.0, 3.0, 5.0)
FAMILIES = ("ba", "er", "plc", "ws", "sbm", "bimodal", "rgg", "tree", "bip", "rr", "caveman")
_joint: list[dict] = []
_orig_release_scores = cr._release_scores


def make(seed: int) -> tuple[str, Graph]:
    """The graph of a graph seed: family ``FAMILIES[seed % 11]``, n log-uniform in
    25..3000, the family's parameters from the same generator (mean degree 3-20)."""
    rng = np.random.default_rng(seed)
    fam = FAMILIES[seed % len(FAMILIES)]
    n = round(math.exp(rng.uniform(math.log(25), math.log(3000))))
    k = float(rng.uniform(3, min(20, n / 3)))  # target mean degree
    if fam == "ba":
        m = max(1, round(k / 2))
        return f"ba-{n}-m{m}", load_graph(f"barabasi_albert:n={n},m={m},seed={seed}")
    if fam == "er":
        p = round(k / (n - 1), 5)
        return f"er-{n}-p{p}", load_graph(f"erdos_renyi:n={n},p={p},seed={seed}")
    if fam == "plc":
        m = max(1, round(k / 2))
        return f"plc-{n}-m{m}", load_graph(f"powerlaw_cluster:n={n},m={m},p=0.3,seed={seed}")
    if fam == "ws":
        kk = max(2, 2 * round(k / 2))
        return f"ws-{n}-k{kk}", load_graph(f"watts_strogatz:n={n},k={kk},p=0.2,seed={seed}")
    if fam == "sbm":
        blocks = int(rng.integers(2, 5))
        size = max(5, n // blocks)
        p_in = min(0.9, k / size)
        return f"sbm-{size * blocks}-{blocks}x{size}", vc._nx(
            vc._sbm([size] * blocks, p_in, p_in / 10, seed)
        )
    if fam == "bimodal":
        small = max(5, n // 5)
        big = n - small
        g = vc._bimodal([big, small], [k / 2 / big, min(0.9, 2.5 * k / small)], k / 4 / n, seed)
        return f"bimodal-{n}", vc._nx(g)
    if fam == "rgg":
        radius = math.sqrt(k / (math.pi * n))
        return f"rgg-{n}-{radius:.3f}", vc._nx(nx.random_geometric_graph(n, radius, seed=seed))
    if fam == "tree":
        return f"tree-{n}", vc._nx(nx.random_labeled_tree(n, seed=seed))
    if fam == "bip":
        a = max(5, n // 3)
        p = min(0.9, k / (n - a))
        return f"bip-{a}+{n - a}", vc._nx(nx.bipartite.random_graph(a, n - a, p, seed=seed))
    if fam == "rr":
        deg = max(2, round(k))
        deg += (deg * n) % 2
        return f"rr-{n}-d{deg}", vc._nx(nx.random_regular_graph(deg, n, seed=seed))
    size = max(4, round(k) + 1)
    groups = max(2, n // size)
    return f"caveman-{groups}x{size}", vc._nx(nx.relaxed_caveman_graph(groups, size, 0.2, seed))


NAMED = {
    "lesmis": lambda: vc._nx(nx.les_miserables_graph()),
    "karate": lambda: vc._nx(nx.karate_club_graph()),
    "facebook": lambda: load_graph("facebook"),
    "wiki-vote": lambda: load_graph("wiki-vote"),
}
SETS = {"cal": range(3301, 3321), "tfresh": range(3401, 3441), "fresh": range(3501, 3541)}


def graphs(which: str):
    """(name, graph) of a set, in its fixed order."""
    if which == "named":
        for name, mk in NAMED.items():
            yield name, mk()
        return
    if which not in SETS:
        raise SystemExit(f"SET: {which!r} is not one of cal, fresh, named")
    for seed in SETS[which]:
        name, g = make(seed)
        yield f"{seed}:{name}", g


def _release_scores(degrees, released, theta, eps_dsr, search, bound, *ratio):
    """The baseline's scores (today's clip: returned) and the candidate's (kept in
    ``_joint``), on the same releases. The emulation runs "ll" (ratio None), so both arms
    are computed here with clip's known ratio 1."""
    raw, pp = _orig_release_scores(degrees, released, theta, eps_dsr, search, bound, *ratio)
    if vc.MODE["m"] == "clip" and search:
        n = len(degrees)
        args = (search["bucket_sums"], search["thresholds"], bound, n, search["eps"])
        arms = {}
        for arm, flag in (("base", False), ("joint", True)):
            saved = dpp.JOINT_PER_NODE
            dpp.JOINT_PER_NODE = flag
            try:
                started = time.process_time()
                node, hist = dpp.search_priors(
                    *args, search["noise_parties"], exact_releases=(released, theta, eps_dsr)
                )
                cpu = time.process_time() - started
            finally:
                dpp.JOINT_PER_NODE = saved
            post = dpp.post_process(released, theta, eps_dsr, node, hist, known_ratio=1.0)
            arms[arm] = {**dpp.score(degrees, post.estimates, post.histogram), "cpu": cpu}
        _joint.append(arms)
    else:
        _joint.append({})
    return raw, pp


def capture(which: str, seeds: list[int], out: str, eps_list: tuple[float, ...]) -> None:
    """One row per (graph, ε, run seed): baseline and joint scores on the same releases."""
    vc.install()
    cr._release_scores = _release_scores
    started = time.process_time()
    with open(out, "w") as fh:
        for name, graph in graphs(which):
            degrees = graph.degrees()
            for eps in eps_list:
                for seed in seeds:
                    _joint.clear()
                    r = vc.run(graph, "clip", eps, seed)
                    j = _joint[-1] if _joint else {}
                    if not j:  # no θ search: nothing to compare
                        continue
                    row = {
                        "graph": name, "n": graph.n, "eps": eps, "seed": seed,
                        "theta": r.theta, "max_degree": int(degrees.max()),
                        "median": r.baselines["constant_median_oracle"]["mae"],
                        "zero": r.baselines["all_zero"]["mae"],
                    }  # fmt: skip
                    for arm, sc in j.items():
                        for k in ("mae", "mse", "histogram_l1", "histogram_emd", "cpu"):
                            row[f"{arm} {k}"] = sc[k]
                    fh.write(json.dumps(row) + "\n")
                fh.flush()
            print(f"{name} n={graph.n} cpu {time.process_time() - started:.1f}s", flush=True)
    print(out, f"cpu {time.process_time() - started:.1f}s", flush=True)


def _load(paths: list[str]) -> list[dict]:
    rows = []
    for path in paths:
        with open(path) as fh:
            rows.extend(json.loads(line) for line in fh if line.strip())
    return rows


def cells(rows: list[dict]) -> dict[tuple, dict]:
    """Per (graph, ε): means over run seeds."""
    by: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        by[(r["graph"], r["eps"])].append(r)
    out = {}
    for key, runs in by.items():
        c = {"n": runs[0]["n"], "median": runs[0]["median"], "zero": runs[0]["zero"]}
        for m in ARMS:
            for k in ("mae", "mse", "histogram_l1", "histogram_emd"):
                c[f"{m} {k}"] = float(np.mean([x[f"{m} {k}"] for x in runs]))
        c["joint cpu max"] = max(x["joint cpu"] for x in runs)
        out[key] = c
    return out


ARMS = ("base", "joint")


def _sums(group: list[dict]) -> dict[str, float]:
    s: dict[str, float] = defaultdict(float)
    for c in group:
        s["cells"] += 1
        s["median"] += c["median"]
        for m in ARMS:
            for k in ("mae", "mse", "histogram_emd"):
                s[f"{m} {k}"] += c[f"{m} {k}"]
            s[f"{m} above median"] += c[f"{m} mae"] > c["median"]
            s[f"{m} above zeros"] += c[f"{m} mae"] > c["zero"]
    return s


def _table(title: str, groups: dict) -> None:
    print(f"\n### {title}\n")
    print(
        "| group | cells | base MAE | joint MAE | const. median | base > med | joint > med "
        "| base MSE | joint MSE | EMD (both) |"
    )
    print("|---" * 10 + "|")
    for label, group in groups.items():
        s = _sums(group)
        print(
            f"| {label} | {s['cells']:.0f} | {s['base mae']:.3f} | {s['joint mae']:.3f} | "
            f"{s['median']:.3f} | {s['base above median']:.0f} | {s['joint above median']:.0f} "
            f"| {s['base mse']:.2f} | {s['joint mse']:.2f} | {s['base histogram_emd']:.3f} |"
        )


def compare(rows: list[dict], per_cell: bool = True) -> bool:
    """The per-cell table, the tables per ε and per band, and the pre-registered criteria
    (docs/preregistration/Y-joint-per-node.md)."""
    cs = cells(rows)
    if per_cell:
        print("| graph | n | ε | base MAE | joint MAE | median | zeros | base MSE | joint MSE |")
        print("|---" * 9 + "|")
        for (g, eps), c in cs.items():
            print(
                f"| {g} | {c['n']} | {eps:g} | {c['base mae']:.3f} | {c['joint mae']:.3f} | "
                f"{c['median']:.3f} | {c['zero']:.3f} | {c['base mse']:.3f} | "
                f"{c['joint mse']:.3f} |"
            )
    every = list(cs.values())
    _table("Per ε", {f"ε = {e:g}": [c for (g, x), c in cs.items() if x == e]
                     for e in sorted({k[1] for k in cs})})  # fmt: skip
    _table("Per size", {"n <= 150": [c for c in every if c["n"] <= 150],
                        "n > 150": [c for c in every if c["n"] > 150]})  # fmt: skip
    _table("All cells", {"all": every})
    s = _sums(every)
    newly = [k for k, c in cs.items() if c["base mae"] <= c["zero"] < c["joint mae"]]
    emd_same = all(abs(c["base histogram_emd"] - c["joint histogram_emd"]) < 1e-12 for c in every)
    better = sum(c["joint mae"] < c["base mae"] - 1e-12 for c in every)
    worse = sum(c["joint mae"] > c["base mae"] + 1e-12 for c in every)
    crit = {
        "1 summed MAE joint < base": (s["joint mae"] < s["base mae"],
                                      f"{s['joint mae']:.3f} vs {s['base mae']:.3f} "
                                      f"({s['joint mae'] / s['base mae'] - 1:+.3%})"),
        "2 cells above median joint <= base": (
            s["joint above median"] <= s["base above median"],
            f"{s['joint above median']:.0f} vs {s['base above median']:.0f}"),
        "3 no cell newly above all zeros": (not newly, f"{newly}"),
        "4 summed MSE joint <= 1.01 base": (s["joint mse"] <= 1.01 * s["base mse"],
                                            f"{s['joint mse']:.3f} vs {s['base mse']:.3f} "
                                            f"({s['joint mse'] / s['base mse'] - 1:+.3%})"),
    }  # fmt: skip
    print("\n### Criteria\n")
    for label, (ok, text) in crit.items():
        print(f"- {label}: {'PASS' if ok else 'FAIL'} ({text})")
    passed = all(ok for ok, _ in crit.values())
    print(f"\nOVERALL: {'PASS' if passed else 'FAIL'}")
    print(f"cells better / worse / equal: {better} / {worse} / {len(every) - better - worse}")
    print(f"histogram identical in both arms: {emd_same}")
    cpu = max(c["joint cpu max"] for c in every)
    print(f"largest candidate search_priors CPU of one run: {cpu:.3f} s")
    return passed


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    eps_list = EPS_LIST
    if "--eps" in sys.argv:
        eps_list = tuple(float(e) for e in sys.argv[sys.argv.index("--eps") + 1].split(","))
    if mode == "list":
        for name, g in graphs(sys.argv[2]):
            print(name, "n", g.n, "max degree", int(g.degrees().max()))
    elif mode == "capture":
        capture(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4], eps_list)
    elif mode == "compare":
        args = [a for a in sys.argv[2:] if not a.startswith("--")]
        compare(_load(args), per_cell="--brief" not in sys.argv)
    else:
        raise SystemExit(
            "usage: Y_joint_per_node.py list SET | capture SET SEEDS OUT | compare OUT..."
        )


if __name__ == "__main__":
    main()
