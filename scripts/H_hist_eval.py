"""Released histogram: a tail-sum cut — evaluation (issue 20, helper H; a copy of
``scripts/G_hist_eval.py`` with the tail-sum rule and a new fresh set ``HFRESH``).

    python scripts/H_hist_eval.py capture SET SEEDS OUT.pkl   # SET: hfresh, large
    python scripts/H_hist_eval.py compare RUNS.pkl [...]

``capture``: one ``collector.cadr_reference.private_run`` per graph, ε in 0.5, 1, 2, 3, 5
and seed (dp, LL, θ auto-dev, α = 0.1, D = n − 1; the pipeline as installed), with the
post-processing inputs spied on (``scripts/cadr_small_capture.py``). ``compare``: per run,
the released histogram read two ways from the same θ-search counts — ``old``: the
``boot`` counts spread as before (``_spread(bootstrap_counts(...))``), ``new``:
the tail-sum rule (``_tail_rule_histogram_prior``: buckets above the highest bucket j
whose noisy TAIL sum Σ_{i≥j} y_i is at least ``MODE_Z`` times its noise sd
σ·√(K − j) read as empty, mass returned in proportion; it FAILED its pre-registered
criterion (b), summed L1 +75 %, and was never installed) —
scored by L1 and EMD against the true degrees, beside the constant TRUE median's
histogram (a non-private oracle); per (graph, ε) cell the mean over seeds; then the
pre-registered criterion (docs/cadr-private.md, "Released histogram: a tail-sum cut
(2026-12-05, helper H)"). The per-node estimates are computed with
each histogram prior and checked identical, and equal to the run's MAE.
"""

from __future__ import annotations

import pickle
import sys
import time
from collections import defaultdict

import networkx as nx
import numpy as np

sys.path.insert(0, "scripts")
import cadr_small_capture as capture
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.bucket_isotonic import bootstrap_counts


def _config_heavy(n: int, seed: int):
    seq = [max(1, round(x)) for x in nx.utils.powerlaw_sequence(n, 2.3, seed=seed)]
    seq = [min(x, n - 1) for x in seq]
    if sum(seq) % 2:
        seq[0] += 1
    g = nx.Graph(nx.configuration_model(seq, seed=seed))
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    return g


# helper H's evaluation set: fixed 2026-12-05 before any run; the families of GFRESH,
# networkx seeds 1201-1210 (never used before), new sizes in 500-5,000.
HFRESH = {
    "ba-2500-m2": lambda: nx.barabasi_albert_graph(2500, 2, seed=1201),
    "ba-1200-m5": lambda: nx.barabasi_albert_graph(1200, 5, seed=1202),
    "ba-3500-m3": lambda: nx.barabasi_albert_graph(3500, 3, seed=1203),
    "er-2000-p0.005": lambda: nx.gnp_random_graph(2000, 0.005, seed=1204),
    "plc-4500-m3": lambda: nx.powerlaw_cluster_graph(4500, 3, 0.3, seed=1205),
    "ws-1800-k8": lambda: nx.watts_strogatz_graph(1800, 8, 0.2, seed=1206),
    "sbm-1500-3x500": lambda: nx.stochastic_block_model(
        [500, 500, 500],
        [[0.025 if i == j else 0.002 for j in range(3)] for i in range(3)],
        seed=1207,
    ),
    "config-2500-pl2.3": lambda: _config_heavy(2500, 1208),
    "gnm-1000-5000": lambda: nx.gnm_random_graph(1000, 5000, seed=1209),
    "plc-700-m2": lambda: nx.powerlaw_cluster_graph(700, 2, 0.5, seed=1210),
}


# helper G's evaluation set: fixed 2026-12-05 (helper G) before any run; networkx seeds
# 1101-1110, never used by an earlier set; n from 600 to 5,000.
GFRESH = {
    "ba-3000-m2": lambda: nx.barabasi_albert_graph(3000, 2, seed=1101),
    "ba-1500-m5": lambda: nx.barabasi_albert_graph(1500, 5, seed=1102),
    "ba-4000-m3": lambda: nx.barabasi_albert_graph(4000, 3, seed=1103),
    "er-2500-p0.004": lambda: nx.gnp_random_graph(2500, 0.004, seed=1104),
    "plc-5000-m3": lambda: nx.powerlaw_cluster_graph(5000, 3, 0.3, seed=1105),
    "ws-2000-k8": lambda: nx.watts_strogatz_graph(2000, 8, 0.2, seed=1106),
    "sbm-1200-3x400": lambda: nx.stochastic_block_model(
        [400, 400, 400],
        [[0.03 if i == j else 0.002 for j in range(3)] for i in range(3)],
        seed=1107,
    ),
    "config-3000-pl2.3": lambda: _config_heavy(3000, 1108),
    "gnm-800-4000": lambda: nx.gnm_random_graph(800, 4000, seed=1109),
    "plc-600-m2": lambda: nx.powerlaw_cluster_graph(600, 2, 0.5, seed=1110),
}


def _graphs(which: str):
    if which in ("gfresh", "hfresh"):
        for name, make in (GFRESH if which == "gfresh" else HFRESH).items():
            yield name, capture._graph_of(make())
    else:
        yield from capture._graphs(which)


def capture_runs(which: str, seeds: list[int], out: str) -> None:
    """The runs' post-processing inputs (module docstring), pickled to ``out``."""
    capture.ref._release_scores = capture._spy
    rows = []
    for name, graph in _graphs(which):
        for eps in capture.EPS_LIST:
            for seed in seeds:
                capture.captured.clear()
                started = time.process_time()
                run = capture.ref.private_run(
                    graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp"
                )
                row = {"graph": name, "n": graph.n, "eps": eps, "seed": seed, "mae": run.mae}
                row["run_emd"] = run.histogram_emd
                rows.append({**row, "cpu": time.process_time() - started, **capture.captured})
                print(name, graph.n, eps, seed, run.theta, round(run.mae, 4), flush=True)
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)


def _old_histogram_prior(sums, ts, d, n, eps, m) -> np.ndarray:
    """``histogram_prior`` before the rule: the boot counts spread (shaped)."""
    return dpp._spread(bootstrap_counts(np.asarray(sums, float), n, eps, m), list(ts), d, True)


def _rule_histogram_prior(sums, ts, d, n, eps, m) -> np.ndarray:
    """The rule evaluated (it FAILED its criterion and was reverted from
    ``histogram_prior``, commit 56d05bf): the boot counts with every bucket above the
    highest one whose noisy sum is at least ``MODE_Z`` noise sds read as empty, their mass
    returned to the others in proportion, then spread."""
    y = np.asarray(sums, float)
    x = bootstrap_counts(y, n, eps, m)
    significant = np.flatnonzero(y >= dpp.MODE_Z * noise_sd(eps, n, m))
    if significant.size and x[: significant[-1] + 1].sum() > 0:
        top = int(significant[-1])
        x[: top + 1] *= x.sum() / x[: top + 1].sum()
        x[top + 1 :] = 0.0
    return dpp._spread(x, list(ts), d, True)


def tail_cut(y: np.ndarray, x: np.ndarray, sd: float, z: float) -> np.ndarray:
    """The tail-sum cut: ``x`` (counts over K buckets) with every bucket above j* read
    as empty, j* the highest bucket whose noisy tail sum ``Σ_{i≥j*} y_i`` is at least
    ``z`` times its noise sd ``sd·√(K − j*)``; the removed mass is returned to buckets
    0..j* in proportion to their counts (the total kept). No tail significant, or no
    mass left at or below j*: ``x`` unchanged."""
    y = np.asarray(y, float)
    x = np.asarray(x, float).copy()
    k = y.size
    tails = np.cumsum(y[::-1])[::-1]  # tails[j] = Σ_{i≥j} y_i
    significant = np.flatnonzero(tails >= z * sd * np.sqrt(k - np.arange(k)))
    if significant.size and x[: significant[-1] + 1].sum() > 0:
        top = int(significant[-1])
        x[: top + 1] *= x.sum() / x[: top + 1].sum()
        x[top + 1 :] = 0.0
    return x


def _tail_rule_histogram_prior(sums, ts, d, n, eps, m) -> np.ndarray:
    """helper H's rule: the boot counts cut by ``tail_cut`` (``MODE_Z``), then spread."""
    y = np.asarray(sums, float)
    x = tail_cut(y, bootstrap_counts(y, n, eps, m), noise_sd(eps, n, m), dpp.MODE_Z)
    return dpp._spread(x, list(ts), d, True)


def readings(r: dict) -> dict:
    """Histogram L1/EMD of old and new, the constant median's, and both per-node MAEs."""
    d, y, t, e, s = r["degrees"], r["released"], r["theta"], r["eps_dsr"], r["search"]
    base = dpp.trivial_baselines(d)["constant_median_oracle"]
    out = {"median_emd": base["histogram_emd"], "median_l1": base["histogram_l1"]}
    n = len(d)
    args = (s["bucket_sums"], s["thresholds"], r["bound"], n, s["eps"], s["noise_parties"])
    prior, old = dpp.search_priors(*args)
    np.testing.assert_allclose(old, _old_histogram_prior(*args), rtol=0, atol=1e-15)
    new = _tail_rule_histogram_prior(*args)
    for key, h in (("old", old), ("new", new)):
        post = dpp.post_process(y, t, e, prior, h)
        out[f"{key}_emd"] = dpp.histogram_emd(d, post.histogram)
        out[f"{key}_l1"] = dpp.histogram_l1(d, post.histogram)
        out[f"{key}_est"] = post.estimates
        out[f"{key}_mae"] = float(np.mean(np.abs(np.asarray(d, float) - post.estimates)))
    out["same_estimates"] = bool(np.array_equal(out["old_est"], out["new_est"]))
    out["mass_above_max"] = {
        k: float(h[int(np.max(d)) + 1 :].sum()) for k, h in (("old", old), ("new", new))
    }
    return out


def compare(rows: list[dict]) -> None:
    """Per cell (markdown) and the criterion's figures."""
    cells = defaultdict(list)
    identical = True
    for r in rows:
        if not r["search"]:
            raise SystemExit(f"{r['graph']} eps={r['eps']}: no θ search captured")
        x = readings(r)
        identical &= x["same_estimates"] and abs(x["new_mae"] - r["mae"]) < 1e-9
        # helper H's captures ran on main (boot, no cut): the run's EMD is old's
        assert abs(x["old_emd"] - r["run_emd"]) < 1e-9, r["graph"]
        cells[(r["graph"], r["n"], r["eps"])].append(x)
    keys = ("old_emd", "new_emd", "median_emd", "old_l1", "new_l1", "median_l1")
    print("| graph | n | ε | EMD old | EMD new | EMD median | L1 old | L1 new | L1 median |"
          " mass>max old | new |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    tot = defaultdict(float)
    for key, runs in cells.items():
        m = {k: float(np.mean([x[k] for x in runs])) for k in keys}
        above = {k: float(np.mean([x["mass_above_max"][k] for x in runs])) for k in ("old", "new")}
        print(
            f"| {key[0]} | {key[1]} | {key[2]:g} | "
            + " | ".join(f"{m[k]:.3f}" for k in keys)
            + f" | {above['old']:.4f} | {above['new']:.4f} |"
        )
        for k in keys:
            tot[f"{k} sum"] += m[k]
        for k in ("old", "new"):
            tot[f"{k} cells EMD above median"] += m[f"{k}_emd"] > m["median_emd"] + 1e-12
        tot["cells EMD better"] += m["new_emd"] < m["old_emd"] - 1e-12
        tot["cells EMD worse"] += m["new_emd"] > m["old_emd"] + 1e-12
    print(
        f"\nruns {len(rows)}, cells {len(cells)}: "
        + "; ".join(f"{k} {v:.4f}" for k, v in tot.items())
    )
    a = tot["new_emd sum"] < tot["old_emd sum"]
    b = tot["new_l1 sum"] <= 1.01 * tot["old_l1 sum"]
    c = tot["new cells EMD above median"] < tot["old cells EMD above median"]
    print(
        f"criterion: (a) {a}  (b) {b}  (c) {c}  (d) {identical}  -> "
        + ("PASS" if a and b and c and identical else "FAIL")
    )


def main() -> None:
    mode = sys.argv[1]
    if mode == "capture":
        capture_runs(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4])
    elif mode == "compare":
        rows = []
        for path in sys.argv[2:]:
            with open(path, "rb") as fh:
                rows += pickle.load(fh)
        compare(rows)
    else:
        raise SystemExit(f"mode: {mode!r} is not capture or compare")


if __name__ == "__main__":
    main()
