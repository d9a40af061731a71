"""The joint prior (``collector.joint_prior``) under method "clip": calibration and the
pre-registered evaluation (issue 20, claims D9/D10; helper T;
docs/preregistration/T-joint-prior.md).

    python scripts/T_joint_eval.py list SET
    python scripts/T_joint_eval.py capture SET SEEDS OUT.jsonl [--eps 0.5,1,2,3,5]
    python scripts/T_joint_eval.py compare OUT.jsonl [MORE.jsonl ...]

"clip" is emulated as in ``scripts/V_clip_eval.py`` (its three patches: kept degrees
``min(d, θ)``, ``dsr += ndoe + lpea``, kept ratio 1), imported from there. Each run is
post-processed TWICE on the same releases: the baseline (``post_process`` with
``search_priors``: today's clip) and the joint (``joint_prior.joint_search_priors``: both
readings replaced; the per-node estimates under the joint per-node prior, the histogram
from the joint histogram prior), by wrapping ``cadr_reference._release_scores``. So a
cell's two rows differ only by the post-processing.

``SET``: ``cal`` (graph seeds 3301-3320: calibration), ``fresh`` (graph seeds 3401-3440:
the evaluation), ``named`` (les misérables, karate, ego-Facebook, wiki-Vote: reported,
not judged). A graph seed fixes the family (cycling through ``FAMILIES``) and draws n
log-uniformly in 25..3000 (``make``).
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
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.joint_prior import joint_search_priors
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
SETS = {"cal": range(3301, 3321), "fresh": range(3401, 3441)}


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
    """Today's scores (returned) and the joint post-processing's (kept in ``_joint``).
    ``*ratio``: main's ``_release_scores`` takes the known kept ratio since helper P's clip
    landed; the emulation runs "ll" (ratio None), so the baseline never reads the releases
    into the histogram, with or without the wiring patch."""
    raw, pp = _orig_release_scores(degrees, released, theta, eps_dsr, search, bound, *ratio)
    if vc.MODE["m"] == "clip" and search:
        n = len(degrees)
        args = (search["bucket_sums"], search["thresholds"], bound, n, search["eps"])
        priors = dpp.search_priors(*args, search["noise_parties"])
        sigma = noise_sd(search["eps"], n, search["noise_parties"])
        started = time.process_time()
        node, hist = joint_search_priors(
            released, theta, eps_dsr, priors, search["thresholds"], n, sigma
        )
        cpu = time.process_time() - started
        post = dpp.post_process(released, theta, eps_dsr, node, hist)
        _joint.append({**dpp.score(degrees, post.estimates, post.histogram), "joint_cpu": cpu})
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
                    row = {
                        "graph": name, "n": graph.n, "eps": eps, "seed": seed,
                        "theta": r.theta, "max_degree": int(degrees.max()),
                        "base mae": r.mae, "base l1": r.histogram_l1,
                        "base emd": r.histogram_emd,
                        "joint mae": j.get("mae", r.mae),
                        "joint l1": j.get("histogram_l1", r.histogram_l1),
                        "joint emd": j.get("histogram_emd", r.histogram_emd),
                        "joint cpu": j.get("joint_cpu", 0.0), "searched": bool(j),
                        "median": r.baselines["constant_median_oracle"]["mae"],
                        "zero": r.baselines["all_zero"]["mae"],
                    }  # fmt: skip
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
        for k in ("base mae", "base l1", "base emd", "joint mae", "joint l1", "joint emd"):
            c[k] = float(np.mean([x[k] for x in runs]))
        c["joint cpu max"] = max(x["joint cpu"] for x in runs)
        out[key] = c
    return out


def _sums(group: list[dict]) -> dict[str, float]:
    s: dict[str, float] = defaultdict(float)
    for c in group:
        s["cells"] += 1
        s["median"] += c["median"]
        for m in ("base", "joint"):
            for k in ("mae", "l1", "emd"):
                s[f"{m} {k}"] += c[f"{m} {k}"]
            s[f"{m} above median"] += c[f"{m} mae"] > c["median"]
            s[f"{m} above zeros"] += c[f"{m} mae"] > c["zero"]
    return s


def _table(title: str, groups: dict) -> None:
    print(f"\n### {title}\n")
    print(
        "| group | cells | base MAE | joint MAE | const. median | base > med | joint > med "
        "| base L1 | joint L1 | base EMD | joint EMD |"
    )
    print("|---" * 11 + "|")
    for label, group in groups.items():
        s = _sums(group)
        print(
            f"| {label} | {s['cells']:.0f} | {s['base mae']:.3f} | {s['joint mae']:.3f} | "
            f"{s['median']:.3f} | {s['base above median']:.0f} | {s['joint above median']:.0f} "
            f"| {s['base l1']:.3f} | {s['joint l1']:.3f} | {s['base emd']:.3f} | "
            f"{s['joint emd']:.3f} |"
        )


def compare(rows: list[dict], per_cell: bool = True) -> bool:
    """The per-cell table, the tables per ε and per band, and the pre-registered criteria
    (docs/preregistration/T-joint-prior.md)."""
    cs = cells(rows)
    if per_cell:
        print("| graph | n | ε | base MAE | joint MAE | median | base EMD | joint EMD | "
              "base L1 | joint L1 |")  # fmt: skip
        print("|---" * 10 + "|")
        for (g, eps), c in cs.items():
            print(
                f"| {g} | {c['n']} | {eps:g} | {c['base mae']:.3f} | {c['joint mae']:.3f} | "
                f"{c['median']:.3f} | {c['base emd']:.3f} | {c['joint emd']:.3f} | "
                f"{c['base l1']:.3f} | {c['joint l1']:.3f} |"
            )
    every = list(cs.values())
    _table("Per ε", {f"ε = {e:g}": [c for (g, x), c in cs.items() if x == e]
                     for e in sorted({k[1] for k in cs})})  # fmt: skip
    _table("Per size", {"n <= 150": [c for c in every if c["n"] <= 150],
                        "n > 150": [c for c in every if c["n"] > 150]})  # fmt: skip
    _table("All cells", {"all": every})
    s = _sums(every)
    newly = [k for k, c in cs.items() if c["base mae"] <= c["zero"] < c["joint mae"]]
    crit = {
        "1 summed MAE joint <= base": (s["joint mae"] <= s["base mae"] + 1e-9,
                                       f"{s['joint mae']:.3f} vs {s['base mae']:.3f}"),
        "2 summed EMD joint <= 0.98 base": (s["joint emd"] <= 0.98 * s["base emd"],
                                            f"{s['joint emd']:.3f} vs {s['base emd']:.3f} "
                                            f"({s['joint emd'] / s['base emd'] - 1:+.2%})"),
        "3 summed L1 joint <= base": (s["joint l1"] <= s["base l1"] + 1e-9,
                                      f"{s['joint l1']:.3f} vs {s['base l1']:.3f}"),
        "4 cells above median joint <= base": (
            s["joint above median"] <= s["base above median"],
            f"{s['joint above median']:.0f} vs {s['base above median']:.0f}"),
        "5 no cell newly above all zeros": (not newly, f"{newly}"),
    }  # fmt: skip
    print("\n### Criteria\n")
    for label, (ok, text) in crit.items():
        print(f"- {label}: {'PASS' if ok else 'FAIL'} ({text})")
    passed = all(ok for ok, _ in crit.values())
    print(f"\nOVERALL: {'PASS' if passed else 'FAIL'}")
    cpu = max(c["joint cpu max"] for c in every)
    print(f"largest joint post-processing CPU of one run: {cpu:.3f} s")
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
        raise SystemExit("usage: T_joint_eval.py list SET | capture SET SEEDS OUT | compare OUT...")


if __name__ == "__main__":
    main()
