"""Mid-size fleets: why the dp release's error rises with ε — oracle decomposition.

    python scripts/C_rising.py capture SET SEEDS OUT.pkl [--thetas]
    python scripts/C_rising.py oracles RUNS.pkl [...]
    python scripts/C_rising.py compare RUNS.pkl [...]   # main vs MODE_Z (pre-registered)

``SET``: any set of ``scripts/cadr_band_eval.py`` (``band``, ``band2``, ``large``, ...) or
``fresh-c2`` (``FRESH`` below, the evaluation set of the MODE_Z rule).

``capture``: as ``scripts/cadr_band_eval.py capture`` (one ``private_run`` per graph, ε
and seed; dp, LL, auto-dev, α = 0.1, D = n − 1; the pipeline as on main) plus each node's
KEPT degree (``dsr_release``'s input, spied on). ``--thetas``: per run also the same run
(same seed, same budget, same θ-search counts) with θ forced to each value of a small
grid around the chosen θ (the θ oracle; every other draw as the run's own).

``oracles``: per (graph, ε) cell (mean over seeds) the per-node MAE of
- ``main``: ``post_process`` with ``search_priors`` (as the pipeline; checked equal);
- ``nomargin``: main with ``margin = 0`` (oracle d);
- ``trueprior``: the true degree distribution as the prior, the model's r (oracle a);
- ``truekept``: the counts' prior, the likelihood ``P(y | d)`` from the true (d, k)
  pairs — the mean over the nodes of degree d of Lap(y − k_j) (oracle b: the kept-degree
  model replaced by the truth);
- ``bayes``: both true (the best any rule of y_i alone can do on this run);
- ``besttheta``: main at the best θ of the grid (oracle c, with ``--thetas``);
- ``truer``: the counts' prior with the true kept ratio r (part of oracle b);
- ``exactcounts``: the prior spread from the EXACT bucket counts (no θ-search noise);
- ``truetail``: the counts' prior with its mass at d >= θ rescaled to the true share;
- ``joint``: the prior re-weighted by the releases and counts jointly
  (``scripts/C_joint_prior.py``, a candidate that did not work);
- the constant true median and all zeros.
Issue 20, helper C2, 2026-12-05.
"""

from __future__ import annotations

import pickle
import sys
import time
from collections import defaultdict

import numpy as np

sys.path.insert(0, "scripts")
import cadr_band_eval as band
import cadr_small_capture as capture
import networkx as nx
from ldpfleet.collector import degree_postprocess as dpp

# The evaluation set of "Mid-size fleets: error rising with ε" (helper C2): fixed
# 2026-12-05 before any run on it; networkx seeds 1001-1024, never used by an earlier set;
# n from 24 to 150.
FRESH = {
    "sbm-70-2x35": lambda: nx.stochastic_block_model(
        [35, 35], [[0.3, 0.04], [0.04, 0.3]], seed=1001
    ),
    "sbm-130-40+90": lambda: nx.stochastic_block_model(
        [40, 90], [[0.3, 0.02], [0.02, 0.06]], seed=1002
    ),
    "sbm-100-4x25": lambda: nx.stochastic_block_model(
        [25] * 4,
        [[0.35 if i == j else 0.02 for j in range(4)] for i in range(4)],
        seed=1003,
    ),
    "bip-20+60-p0.2": lambda: nx.bipartite.random_graph(20, 60, 0.2, seed=1004),
    "bip-30+30-p0.15": lambda: nx.bipartite.random_graph(30, 30, 0.15, seed=1005),
    "lollipop-15-40": lambda: nx.lollipop_graph(15, 40),
    "lollipop-30-10": lambda: nx.lollipop_graph(30, 10),
    "rr-60-d5": lambda: nx.random_regular_graph(5, 60, seed=1006),
    "rr-120-d8": lambda: nx.random_regular_graph(8, 120, seed=1007),
    "rgg-90-0.16": lambda: nx.random_geometric_graph(90, 0.16, seed=1008),
    "rgg-140-0.1": lambda: nx.random_geometric_graph(140, 0.1, seed=1009),
    "ba-50-m2": lambda: nx.barabasi_albert_graph(50, 2, seed=1010),
    "ba-120-m3": lambda: nx.barabasi_albert_graph(120, 3, seed=1011),
    "er-40-p0.2": lambda: nx.gnp_random_graph(40, 0.2, seed=1012),
    "er-110-p0.07": lambda: nx.gnp_random_graph(110, 0.07, seed=1013),
    "gnm-150-600": lambda: nx.gnm_random_graph(150, 600, seed=1014),
    "plc-80-m3": lambda: nx.powerlaw_cluster_graph(80, 3, 0.4, seed=1015),
    "plc-130-m2": lambda: nx.powerlaw_cluster_graph(130, 2, 0.2, seed=1016),
    "tree-random-60": lambda: nx.random_labeled_tree(60, seed=1017),
    "tree-random-120": lambda: nx.random_labeled_tree(120, seed=1018),
    "tree-3-4": lambda: nx.balanced_tree(3, 4),
    "ws-70-k6": lambda: nx.watts_strogatz_graph(70, 6, 0.2, seed=1019),
    "ws-24-k4": lambda: nx.watts_strogatz_graph(24, 4, 0.3, seed=1020),
    "caveman-8x10": lambda: nx.relaxed_caveman_graph(8, 10, 0.1, seed=1021),
}

ref = capture.ref
_kept: dict = {}
_original_dsr = ref.dsr_release
_original_dp_theta = ref.dp_theta
_forced: dict = {}


def _spy_dsr(kept_degree, theta, eps, rng):
    _kept["kept"] = np.asarray(kept_degree).copy()
    return _original_dsr(kept_degree, theta, eps, rng)


def _forced_theta(degrees, budget, weight, rng, bound=None):
    theta, search = _original_dp_theta(degrees, budget, weight, rng, bound)
    if "theta" in _forced:
        return _forced["theta"], {**search, "theta": _forced["theta"]}
    return theta, search


def _theta_grid(theta: int, bound: int) -> list[int]:
    grid = {max(1, round(theta * f)) for f in (0.25, 0.4, 0.55, 0.7, 0.85, 1.2, 1.5, 2.0)}
    return sorted(t for t in grid if t <= bound and t != theta)


def _one(graph, eps, seed) -> dict:
    capture.captured.clear()
    run = ref.private_run(graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
    return {"mae": run.mae, **capture.captured, "kept": _kept["kept"]}


def _graphs(which: str):
    if which == "fresh-c2":
        for name, make in FRESH.items():
            yield name, capture._graph_of(make())
    else:
        yield from band._graphs(which)


def capture_runs(which: str, seeds: list[int], out: str, thetas: bool) -> None:
    """The runs' post-processing inputs and kept degrees (module docstring)."""
    ref._release_scores = capture._spy
    ref.dsr_release = _spy_dsr
    ref.dp_theta = _forced_theta
    rows = []
    for name, graph in _graphs(which):
        for eps in capture.EPS_LIST:
            for seed in seeds:
                started = time.process_time()
                _forced.clear()
                row = {"graph": name, "n": graph.n, "eps": eps, "seed": seed}
                row.update(_one(graph, eps, seed))
                if thetas and row["search"]:
                    row["alt"] = {}
                    for t in _theta_grid(row["theta"], row["bound"]):
                        _forced["theta"] = t
                        alt = _one(graph, eps, seed)
                        row["alt"][t] = {k: alt[k] for k in ("released", "kept", "eps_dsr")}
                    _forced.clear()
                row["cpu"] = time.process_time() - started
                rows.append(row)
                print(name, graph.n, eps, seed, row["theta"], round(row["mae"], 4), flush=True)
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)


def _mae(d, v) -> float:
    return float(np.mean(np.abs(np.asarray(d, float) - np.asarray(v, float))))


def _priors(r: dict, d: np.ndarray):
    s = r["search"]
    args = (s["bucket_sums"], s["thresholds"], r["bound"], len(d), s["eps"], s["noise_parties"])
    return dpp.search_priors(*args)


def true_prior(d: np.ndarray, bound: int) -> np.ndarray:
    """The true degree distribution over 0..D."""
    p = np.bincount(d, minlength=bound + 1)[: bound + 1].astype(float)
    return p / p.sum()


def joint_medians(y, d, k, prior, theta, scale) -> np.ndarray:
    """Posterior medians of d given y_i with P(y | d) the mean over the nodes of degree d of
    Lap(y - k_j; b) (the true kept degrees); degrees with no node: Lap(y - r min(d, θ))
    with the true r. Prior over 0..D."""
    y = np.asarray(y, float)
    size = prior.size
    r = float(np.mean(k)) / max(float(np.mean(np.minimum(d, theta))), 1e-9)
    like = np.empty((y.size, size))
    for deg in range(size):
        ks = k[d == deg]
        if ks.size:
            like[:, deg] = np.exp(-np.abs(y[:, None] - ks[None, :]) / scale).mean(axis=1)
        else:
            like[:, deg] = np.exp(-np.abs(y - min(r, 1.0) * min(deg, theta)) / scale)
    post = like * prior
    post /= post.sum(axis=1, keepdims=True)
    return np.sum(np.cumsum(post, axis=1) < 0.5 - 1e-12, axis=1)


def _joint(r, y, t, e, prior, hist):
    """Per-node release with the joint prior (scripts/C_joint_prior.py) where gated."""
    from C_joint_prior import joint_prior

    s = r["search"]
    ratio = dpp.count_signal_ratio(len(y), len(s["bucket_sums"]), s["eps"], s["noise_parties"])
    if ratio < dpp.UNIMODAL_RATIO_MAX:
        prior = joint_prior(
            y, t, e, prior, s["bucket_sums"], s["thresholds"], s["eps"], s["noise_parties"]
        )
    return dpp.post_process(y, t, e, prior, hist).estimates


def _true_tail(prior: np.ndarray, d: np.ndarray, theta: int) -> np.ndarray:
    """The prior with its mass at degrees >= θ rescaled to the true share (shapes kept)."""
    p, t = prior.copy(), min(theta, prior.size - 1)
    share, tail, head = float(np.mean(d >= t)), p[t:].sum(), p[:t].sum()
    if tail > 0:
        p[t:] *= share / tail
    else:
        p[t] = share
    if head > 0:
        p[:t] *= (1 - share) / head
    return p / p.sum()


def readings(r: dict) -> dict:
    """The oracles' per-node MAE for one run (module docstring)."""
    d = np.asarray(r["degrees"], dtype=np.int64)
    y, t, e, k = r["released"], r["theta"], r["eps_dsr"], np.minimum(r["kept"], r["theta"])
    out = {"median": _mae(d, np.floor(np.median(d))), "zero": _mae(d, 0), "theta": t}
    if not r["search"]:
        return {}
    prior, hist = _priors(r, d)
    b = t / e
    post = dpp.post_process(y, t, e, prior, hist)
    out["main"] = _mae(d, post.estimates)
    rr = dpp.kept_ratio(y, prior, t)
    out["nomargin"] = _mae(d, dpp.posterior_degree_medians(y, prior, t, b, rr, 0.0))
    tp = true_prior(d, r["bound"])
    rt = dpp.kept_ratio(y, tp, t)
    out["trueprior"] = _mae(d, dpp.posterior_degree_medians(y, tp, t, b, rt, dpp.MARGIN))
    out["trueprior_nm"] = _mae(d, dpp.posterior_degree_medians(y, tp, t, b, rt, 0.0))
    out["truekept"] = _mae(d, joint_medians(y, d, k, prior, t, b))
    out["bayes"] = _mae(d, joint_medians(y, d, k, tp, t, b))
    r_true = float(np.mean(k)) / max(float(tp @ np.minimum(np.arange(tp.size), t)), 1e-9)
    out["r_est"], out["r_true"] = rr, r_true
    out["truer"] = _mae(d, dpp.posterior_degree_medians(y, prior, t, b, min(r_true, 1.0), 0.05))
    out["joint"] = _mae(d, _joint(r, y, t, e, prior, hist))
    s = r["search"]
    exact = np.bincount(
        np.searchsorted(s["thresholds"], d, side="left"), minlength=len(s["bucket_sums"])
    )
    exact_prior = dpp.degree_prior(exact, s["thresholds"], r["bound"], len(d))
    out["exactcounts"] = _mae(d, dpp.post_process(y, t, e, exact_prior, hist).estimates)
    out["truetail"] = _mae(d, dpp.post_process(y, t, e, _true_tail(prior, d, t), hist).estimates)
    if "alt" in r:
        best = out["main"]
        for tt, a in r["alt"].items():
            p2 = dpp.post_process(a["released"], tt, a["eps_dsr"], prior, hist)
            best = min(best, _mae(d, p2.estimates))
        out["besttheta"] = best
    return out


def oracles(rows: list[dict]) -> None:
    """Per cell and per ε the oracles' MAE (markdown)."""
    cells = defaultdict(list)
    for r in rows:
        x = readings(r)
        if not x:
            continue
        assert abs(x["main"] - r["mae"]) < 1e-9, (r["graph"], x["main"], r["mae"])
        cells[(r["graph"], r["n"], r["eps"])].append(x)
    keys = [k for k in cells[next(iter(cells))][0] if k not in ("theta",)]
    print("| graph | n | ε | θ | " + " | ".join(keys) + " |")
    print("|---|---|---|---|" + "---|" * len(keys))
    by_eps = defaultdict(lambda: defaultdict(float))
    for key, runs in cells.items():
        m = {k: float(np.mean([x[k] for x in runs])) for k in keys}
        thetas = "/".join(str(x["theta"]) for x in runs)
        print(
            f"| {key[0]} | {key[1]} | {key[2]:g} | {thetas} | "
            + " | ".join(f"{m[k]:.3f}" for k in keys)
            + " |"
        )
        for k in keys:
            by_eps[key[2]][k] += m[k]
        by_eps[key[2]]["cells"] += 1
        by_eps[key[2]]["above median"] += m["main"] > m["median"] + 1e-9
    print("\nper ε, summed over cells:")
    cols = [*keys, "cells", "above median"]
    print("| ε | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for eps in sorted(by_eps):
        print(f"| {eps:g} | " + " | ".join(f"{by_eps[eps][k]:.2f}" for k in cols) + " |")


def _rule_prior(r: dict, d: np.ndarray, mode_z):
    """The per-node prior as main had it (``mode_z=None``) or under the rule (MODE_Z)."""
    from ldpfleet.collector.bucket_denoise import noise_sd, simplex_projection
    from ldpfleet.collector.bucket_isotonic import unimodal_tail_counts

    s, n, ts, bound = r["search"], len(d), r["search"]["thresholds"], r["bound"]
    sums = np.asarray(s["bucket_sums"], dtype=float)
    if dpp.count_signal_ratio(n, sums.size, s["eps"], s["noise_parties"]) >= dpp.UNIMODAL_RATIO_MAX:
        return dpp._spread(simplex_projection(sums, n), ts, bound, True)
    sd = noise_sd(s["eps"], n, s["noise_parties"])
    widths = np.diff(np.array([-1, *ts, bound]))
    counts, _ = unimodal_tail_counts(sums, widths, n, sd, mode_z=mode_z)
    return dpp._spread(counts, ts, bound, True)


def compare(rows: list[dict]) -> None:
    """The pre-registered comparison: per cell (mean over seeds) main (the mode among all
    live buckets) against the rule (``MODE_Z``), the constant true median and all zeros;
    then the criterion's figures."""
    cells = defaultdict(list)
    for r in rows:
        d = np.asarray(r["degrees"], dtype=np.int64)
        y, t, e = r["released"], r["theta"], r["eps_dsr"]
        x = {"median": _mae(d, np.floor(np.median(d))), "zero": _mae(d, 0)}
        if not r["search"]:
            x["main"] = x["rule"] = _mae(d, dpp.post_process(y, t, e).estimates)
        else:
            _, hist = _priors(r, d)
            for key, z in (("main", None), ("rule", dpp.MODE_Z)):
                prior = _rule_prior(r, d, z)
                x[key] = _mae(d, dpp.post_process(y, t, e, prior, hist).estimates)
            # the run itself is one of the two (captures before the rule landed: main)
            assert min(abs(x["rule"] - r["mae"]), abs(x["main"] - r["mae"])) < 1e-9, r["graph"]
        cells[(r["graph"], r["n"], r["eps"])].append(x)
    keys = ("main", "rule", "median", "zero")
    print("| graph | n | ε | main | rule | constant median | all zero |")
    print("|---|---|---|---|---|---|---|")
    tot, newly, moved = defaultdict(float), [], []
    for key, runs in cells.items():
        m = {k: float(np.mean([x[k] for x in runs])) for k in keys}
        print(
            f"| {key[0]} | {key[1]} | {key[2]:g} | "
            + " | ".join(f"{m[k]:.3f}" for k in keys)
            + " |"
        )
        for k in keys:
            tot[f"{k} sum"] += m[k]
        for k in ("main", "rule"):
            tot[f"{k} excess over median"] += max(0.0, m[k] - m["median"])
            tot[f"{k} cells above median"] += m[k] > m["median"] + 1e-9
            tot[f"{k} cells above zeros"] += m[k] > m["zero"] + 1e-9
        if m["main"] <= m["zero"] + 1e-9 < m["rule"]:
            newly.append(key)
        if abs(m["rule"] - m["main"]) > 1e-9:
            moved.append((key[0], key[2], round(m["main"], 3), round(m["rule"], 3)))
    print(f"\ncells {len(cells)}: " + "; ".join(f"{k} {v:.3f}" for k, v in tot.items()))
    print(f"cells newly above all zeros: {newly}")
    print(f"cells that moved ({len(moved)}): {moved}")


def main() -> None:
    mode = sys.argv[1]
    if mode == "capture":
        seeds = [int(s) for s in sys.argv[3].split(",")]
        capture_runs(sys.argv[2], seeds, sys.argv[4], "--thetas" in sys.argv)
    elif mode == "oracles":
        rows = []
        for path in sys.argv[2:]:
            with open(path, "rb") as fh:
                rows += pickle.load(fh)
        oracles(rows)
    elif mode == "compare":
        rows = []
        for path in sys.argv[2:]:
            with open(path, "rb") as fh:
                rows += pickle.load(fh)
        compare(rows)
    else:
        raise SystemExit(f"mode: {mode!r} is not capture or oracles")


if __name__ == "__main__":
    main()
