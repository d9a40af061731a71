"""Released histogram: keep a real second mode above the top significant bucket —
evaluation harness (issue 20, helper J; the harness of ``scripts/B_hist_eval.py`` with a
new rule and new sets).

    python scripts/J_hist_eval.py capture SET SEEDS OUT.pkl   # jbimodal, junimodal, realsmall, ...
    python scripts/J_hist_eval.py compare RUNS.pkl [...]

``capture``: as ``scripts/B_hist_eval.py`` (one ``private_run`` per graph, ε in 0.5, 1,
2, 3, 5 and seed; dp, LL, θ auto-dev, α = 0.1, D = n − 1; the post-processing inputs
spied on). ``compare``: per run the released histogram read two ways from the same
θ-search counts — ``main``: ``histogram_prior`` as on main (B's geometric tail above H's
gap-corrected g), ``rule``: the rule below — scored by L1 and EMD against the true
degrees beside the constant TRUE median's histogram; per (graph, ε) cell the mean over
the seeds; then the pre-registered criterion.

Sets fixed 2026-12-05 (helper J) before any run on them:

- ``jbimodal``: twenty generated BIMODAL graphs, networkx seeds 1701-1720, n 30-3,000:
  two-block stochastic block models with a sparse and a dense block, configuration
  models on a two-mode degree sequence (self-loops and multi-edges removed), a sparse
  and a dense Erdős–Rényi community joined by a few bridges, and "core with pendants"
  (a dense core, every other node a leaf on a core node: les misérables' shape).
- ``junimodal``: ten unimodal heavy-tailed graphs, networkx seeds 1721-1730, n 80-3,000
  (Barabási–Albert, powerlaw cluster): B's target, where a regression would show.
- ``realsmall``: helper I's real small graphs (karate, les misérables, davis,
  florentine, the Intel Lab motes within 6 m) — CALIBRATION for this rule (I's held-out
  result motivated it).
- ``jcalbimodal``: ten more generated bimodal graphs (networkx seeds 1751-1760, run
  seeds 1, 2) — CALIBRATION.

The fresh captures (jbimodal and junimodal at run seeds 101-103, /tmp/J-fresh) ran on
main right after the sets' commit (ad89034), before the rule existed, and were written
unread; nothing in them was read before the pre-registration commit.

PRE-REGISTRATION (2026-12-05, helper J; committed before any look at the fresh captures):

Rule: in the histogram reading only (``histogram_prior``), after ``boot`` and H's
gap-corrected top significant bucket g: g is raised by
``collector.bucket_isotonic.second_mode_top`` at ``level`` = ``TAIL_LEVEL`` = 0.05 (the
module's familywise level, not tuned): a scan up from g over STRETCHES [j, j'] above it;
a stretch starting k = j − g buckets above g passes when its summed noisy count is at
least z_k σ √(j' − j + 1), z_k = ln(k (k + 1) (K − j) / (2 · 0.05)) / √2 (α-spending
1/(k(k+1)) over the start, Bonferroni over the K − j lengths, the Laplace-like tail
½e^(−√2 z)); at the lowest passing start g moves to its shortest passing stretch's top;
repeat; stop when none passes. Then B's geometric re-placement above the final g,
unchanged. The per-node release is untouched. Code: ``geometric_tail_counts(...,
stretch_level=0.05)``.

Calibration (/tmp/J-proto.py; summed EMD main → rule, L1 main → rule): realsmall (I's
graphs, seeds 91-95) 31.53 → 30.73, 12.200 → 12.108; jcalbimodal (seeds 1, 2) 71.80 →
69.05, 12.571 → 12.433; B's calibration networkx (GFRESH, HFRESH, seeds 1, 2) 43.85 →
38.81, 5.680 → 5.723; B's evaluation networkx (BFRESH, 71-73) 28.40 → 25.78, 3.237 →
3.222; H's evaluation networkx (H2FRESH, 81-83) 22.32 → 19.90, 2.659 → 2.653;
ego-Facebook and wiki-Vote (seeds 1, 2, 71-73) 21.65 → 22.24 (+2.7 %: wiki-Vote seed 6,
a far noise stretch at 3,238-4,799 passed), 1.273 → 1.276; H's ego-Facebook/wiki-Vote
(81-83) identical. No cell newly above the constant median anywhere. Variants seen there,
not evaluated: Bonferroni over all stretches above g at familywise 0.05 / 0.2 (bimodal
100.75 / 97.09, networkx heavy 90.35 / 84.97, real large 22.37 / 25.44), α-spending at
0.2 / 0.5, stretch lengths capped at 2-6, a bump test on the residuals of the geometric
fit with a Monte-Carlo null (0.2: networkx heavy 65.99 → 195.69 on B's calibration), a
χ² misfit test of the geometric fit, and "the tail holds over half the fleet: keep boot"
— each worse on some calibration set.

Evaluation set (fresh, fixed in ad89034): ``JBIMODAL`` (20 graphs) and ``JUNIMODAL`` (10
graphs); ε in 0.5, 1, 2, 3, 5; run seeds 101, 102, 103; dp, LL, θ auto-dev, α = 0.1,
D = n − 1:

    python scripts/J_hist_eval.py compare /tmp/J-fresh/jbimodal-10{1,2,3}.pkl \
        /tmp/J-fresh/junimodal-10{1,2,3}.pkl

Criterion (per (graph, ε) cell the mean over the three seeds; 150 cells): (a) summed
histogram EMD on the bimodal cells (100) lower with the rule; (b) summed EMD on the
unimodal heavy-tailed cells (50) not higher than main's by more than 2 %; (c) summed L1
over all cells not higher than main's; (d) cells whose EMD is above the constant TRUE
median histogram's, over all cells, not more than main's; (e) per-node estimates
identical in every run and equal to the run's MAE. All five: ``histogram_prior`` uses
``stretch_level=TAIL_LEVEL`` by default. Otherwise main's default stays,
``second_mode_top`` stays opt-in, and docs/cadr-private.md records the failure.

RESULT (2026-12-05, 450 runs, 150 cells): PASSED, all five. (a) bimodal EMD 89.087 ->
85.668 (7 cells better, 0 worse); (b) unimodal EMD 41.649 -> 38.338 (16 better, 14
worse); (c) L1 29.165 -> 28.892 (bimodal 22.914 -> 22.501, unimodal 6.252 -> 6.391,
+2.2 %); (d) cells above the constant median 2 -> 2; (e) identical. Output:
/tmp/J-eval.txt.
"""

from __future__ import annotations

import pickle
import sys
from collections import defaultdict

import networkx as nx
import numpy as np

sys.path.insert(0, "scripts")
import B_hist_eval as b_eval
import I_real_holdout as i_real
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.bucket_isotonic import TAIL_LEVEL, bootstrap_counts, geometric_tail_counts


def _sbm(sizes: list[int], probs: list[list[float]], seed: int) -> nx.Graph:
    return nx.stochastic_block_model(sizes, probs, seed=seed)


def _two_blocks(sparse: int, p_sparse: float, dense: int, p_dense: float, p_out: float, seed):
    """A sparse and a dense block (stochastic block model)."""
    return _sbm([sparse, dense], [[p_sparse, p_out], [p_out, p_dense]], seed)


def _two_mode_config(n: int, low_share: float, low_mean: float, high_mean: float, seed: int):
    """Configuration model on a two-mode sequence: ``low_share`` of the nodes with degree
    1 + Poisson(low_mean − 1), the rest 1 + Poisson(high_mean − 1); self-loops and
    multi-edges removed."""
    rng = np.random.default_rng(seed)
    low = round(low_share * n)
    seq = np.concatenate(
        [1 + rng.poisson(low_mean - 1, low), 1 + rng.poisson(high_mean - 1, n - low)]
    )
    seq = np.minimum(seq, n - 1)
    if seq.sum() % 2:
        seq[0] += 1
    g = nx.Graph(nx.configuration_model([int(x) for x in seq], seed=seed))
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    return g


def _union(n1: int, p1: float, n2: int, p2: float, bridges: int, seed: int) -> nx.Graph:
    """A sparse and a dense Erdős–Rényi community joined by ``bridges`` random edges."""
    rng = np.random.default_rng(seed)
    g = nx.disjoint_union(
        nx.gnp_random_graph(n1, p1, seed=seed), nx.gnp_random_graph(n2, p2, seed=seed + 1)
    )
    for _ in range(bridges):
        g.add_edge(int(rng.integers(n1)), int(n1 + rng.integers(n2)))
    return g


def _core_pendant(core: int, p_core: float, leaves: int, seed: int) -> nx.Graph:
    """A dense Erdős–Rényi core and ``leaves`` degree-1 nodes, each on a random core node."""
    rng = np.random.default_rng(seed)
    g = nx.gnp_random_graph(core, p_core, seed=seed)
    for leaf in range(core, core + leaves):
        g.add_edge(leaf, int(rng.integers(core)))
    return g


# helper J's fresh BIMODAL set: fixed 2026-12-05 before any run; networkx seeds 1701-1720
JBIMODAL = {
    "sbm2-60": lambda: _two_blocks(40, 0.05, 20, 0.5, 0.01, 1701),
    "sbm2-120": lambda: _two_blocks(80, 0.03, 40, 0.35, 0.005, 1702),
    "cfg2-300-2-14": lambda: _two_mode_config(300, 0.67, 2, 14, 1703),
    "corep-90": lambda: _core_pendant(30, 0.35, 60, 1704),
    "sbm2-500": lambda: _two_blocks(350, 0.006, 150, 0.1, 0.001, 1705),
    "cfg2-800-3-18": lambda: _two_mode_config(800, 0.6, 3, 18, 1706),
    "union-1000": lambda: _union(700, 0.003, 300, 0.05, 50, 1707),
    "sbm2-1500": lambda: _two_blocks(1000, 0.002, 500, 0.04, 0.0004, 1708),
    "cfg2-2000-3-25": lambda: _two_mode_config(2000, 0.7, 3, 25, 1709),
    "sbm2-3000": lambda: _two_blocks(2000, 0.0015, 1000, 0.03, 0.0002, 1710),
    "corep-400": lambda: _core_pendant(80, 0.15, 320, 1711),
    "cfg2-150-2-10": lambda: _two_mode_config(150, 0.6, 2, 10, 1712),
    "sbm2-240": lambda: _two_blocks(160, 0.015, 80, 0.2, 0.004, 1713),
    "cfg2-1200-1-20": lambda: _two_mode_config(1200, 0.5, 1, 20, 1714),
    "sbm2-45": lambda: _two_blocks(30, 0.07, 15, 0.6, 0.01, 1715),
    "union-2500": lambda: _union(1800, 0.0015, 700, 0.025, 100, 1716),
    "corep-1800": lambda: _core_pendant(300, 0.05, 1500, 1717),
    "cfg2-600-4-30": lambda: _two_mode_config(600, 0.5, 4, 30, 1718),
    "sbm2-200": lambda: _two_blocks(100, 0.02, 100, 0.15, 0.003, 1719),
    "cfg2-3000-2-40": lambda: _two_mode_config(3000, 0.8, 2, 40, 1720),
}

# helper J's fresh UNIMODAL heavy-tailed set: fixed 2026-12-05; networkx seeds 1721-1730
JUNIMODAL = {
    "ba-300-m2": lambda: nx.barabasi_albert_graph(300, 2, seed=1721),
    "ba-1000-m3": lambda: nx.barabasi_albert_graph(1000, 3, seed=1722),
    "ba-2500-m2": lambda: nx.barabasi_albert_graph(2500, 2, seed=1723),
    "ba-80-m2": lambda: nx.barabasi_albert_graph(80, 2, seed=1724),
    "ba-1800-m4": lambda: nx.barabasi_albert_graph(1800, 4, seed=1725),
    "plc-500-m2": lambda: nx.powerlaw_cluster_graph(500, 2, 0.4, seed=1726),
    "plc-2000-m3": lambda: nx.powerlaw_cluster_graph(2000, 3, 0.3, seed=1727),
    "plc-120-m3": lambda: nx.powerlaw_cluster_graph(120, 3, 0.3, seed=1728),
    "plc-3000-m2": lambda: nx.powerlaw_cluster_graph(3000, 2, 0.5, seed=1729),
    "plc-1200-m4": lambda: nx.powerlaw_cluster_graph(1200, 4, 0.2, seed=1730),
}

# helper J's CALIBRATION bimodal set (for designing the rule; not evaluation): networkx
# seeds 1751-1760, run seeds 1, 2
JCALBIMODAL = {
    "sbm2-80": lambda: _two_blocks(55, 0.04, 25, 0.45, 0.01, 1751),
    "cfg2-400-2-12": lambda: _two_mode_config(400, 0.65, 2, 12, 1752),
    "corep-150": lambda: _core_pendant(40, 0.3, 110, 1753),
    "sbm2-700": lambda: _two_blocks(480, 0.005, 220, 0.08, 0.001, 1754),
    "union-1400": lambda: _union(1000, 0.002, 400, 0.04, 60, 1755),
    "cfg2-2500-2-30": lambda: _two_mode_config(2500, 0.75, 2, 30, 1756),
    "sbm2-2000": lambda: _two_blocks(1400, 0.0018, 600, 0.035, 0.0003, 1757),
    "cfg2-100-2-9": lambda: _two_mode_config(100, 0.6, 2, 9, 1758),
    "corep-900": lambda: _core_pendant(150, 0.08, 750, 1759),
    "sbm2-35": lambda: _two_blocks(23, 0.08, 12, 0.65, 0.02, 1760),
}

FRESH_RUN_SEEDS = (101, 102, 103)
RULE_LEVEL = TAIL_LEVEL  # the stretch scan's familywise level (0.05, the module's own)
BIMODAL = frozenset(JBIMODAL)
UNIMODAL = frozenset(JUNIMODAL)

_B_GRAPHS = b_eval._graphs  # B's sets and ``large``, kept before ``main`` patches it


def _graphs(which: str):
    sets = {"jbimodal": JBIMODAL, "junimodal": JUNIMODAL, "jcalbimodal": JCALBIMODAL}
    if which in sets:
        for name, make in sets[which].items():
            yield name, b_eval.capture._graph_of(make())
    elif which == "realsmall":
        for name, make in i_real.GRAPHS.items():
            yield name, i_real.graph_of(make())
    else:
        yield from _B_GRAPHS(which)


def main() -> None:
    mode = sys.argv[1]
    if mode == "capture":
        b_eval._graphs = _graphs  # the capture loop reads the module's _graphs
        b_eval.capture_runs(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4])
    elif mode == "compare":
        rows = []
        for path in sys.argv[2:]:
            with open(path, "rb") as fh:
                rows += pickle.load(fh)
        compare(rows)
    else:
        raise SystemExit(f"mode: {mode!r} is not capture or compare")


def _histogram_prior(sums, ts, d, n, eps, m, *, stretch_level) -> np.ndarray:
    """``histogram_prior``'s reading (H's g) with or without the rule's stretch scan."""
    y = np.asarray(sums, float)
    widths = np.diff(np.array([-1, *ts, d]))
    x = geometric_tail_counts(
        y,
        bootstrap_counts(y, n, eps, m),
        widths,
        noise_sd(eps, n, m),
        mode_z=dpp.MODE_Z,
        gap_corrected=True,
        stretch_level=stretch_level,
    )
    return dpp._spread(x, list(ts), d, True)


def readings(r: dict) -> dict:
    """Histogram L1/EMD of main's and the rule's readings, the constant median's, MAEs."""
    d = r["degrees"]
    base = dpp.trivial_baselines(d)["constant_median_oracle"]
    out = {"median_emd": base["histogram_emd"], "median_l1": base["histogram_l1"]}
    s = r["search"]
    args = (s["bucket_sums"], s["thresholds"], r["bound"], len(d), s["eps"], s["noise_parties"])
    prior, installed = dpp.search_priors(*args)
    for key, level in (("main", None), ("rule", RULE_LEVEL)):
        h = _histogram_prior(*args, stretch_level=level)
        post = dpp.post_process(r["released"], r["theta"], r["eps_dsr"], prior, h)
        out[f"{key}_emd"] = dpp.histogram_emd(d, post.histogram)
        out[f"{key}_l1"] = dpp.histogram_l1(d, post.histogram)
        out[f"{key}_est"] = post.estimates
        out[f"{key}_mae"] = float(np.mean(np.abs(np.asarray(d, float) - post.estimates)))
        out[f"{key}_installed"] = bool(np.abs(installed - h).max() < 1e-15)
    assert out["main_installed"] or out["rule_installed"]
    out["same_estimates"] = bool(np.array_equal(out["main_est"], out["rule_est"]))
    return out


def compare(rows: list[dict]) -> None:
    """Per cell (markdown), the totals by group and the pre-registered criterion."""
    cells = defaultdict(list)
    identical = True
    skipped = [r["graph"] for r in rows if not r.get("search")]
    if skipped:  # a tiny fleet's rule, no θ search: no histogram_prior, readings alike
        print(f"runs without a θ search (identical by construction, left out): {skipped}")
    for r in (r for r in rows if r.get("search")):
        x = readings(r)
        identical &= x["same_estimates"] and abs(x["rule_mae"] - r["mae"]) < 1e-9
        cells[(r["graph"], r["n"], r["eps"])].append(x)
    keys = ("main_emd", "rule_emd", "median_emd", "main_l1", "rule_l1", "median_l1")
    print("| graph | n | ε | EMD main | EMD rule | EMD median | L1 main | L1 rule | L1 median |")
    print("|---|---|---|---|---|---|---|---|---|")
    tot: dict = defaultdict(float)
    for key, runs in cells.items():
        m = {k: float(np.mean([x[k] for x in runs])) for k in keys}
        print(f"| {key[0]} | {key[1]} | {key[2]:g} | " + " | ".join(f"{m[k]:.3f}" for k in keys))
        group = "bimodal" if key[0] in BIMODAL else "unimodal" if key[0] in UNIMODAL else "other"
        for where in ("all", group):
            tot[f"{where} cells"] += 1
            for k in keys:
                tot[f"{where} {k}"] += m[k]
            for k in ("main", "rule"):
                tot[f"{where} {k} EMD above median"] += m[f"{k}_emd"] > m["median_emd"] + 1e-12
            tot[f"{where} EMD better"] += m["rule_emd"] < m["main_emd"] - 1e-12
            tot[f"{where} EMD worse"] += m["rule_emd"] > m["main_emd"] + 1e-12
    print(f"\nruns {len(rows)}, cells {len(cells)}")
    for k, v in tot.items():
        print(f"  {k}: {v:.4f}")
    a = tot["bimodal rule_emd"] < tot["bimodal main_emd"]
    b = tot["unimodal rule_emd"] <= 1.02 * tot["unimodal main_emd"]
    c = tot["all rule_l1"] <= tot["all main_l1"]
    d = tot["all rule EMD above median"] <= tot["all main EMD above median"]
    verdict = "PASS" if a and b and c and d and identical else "FAIL"
    print(f"criterion: (a) {a}  (b) {b}  (c) {c}  (d) {d}  (e) {identical}  -> {verdict}")


if __name__ == "__main__":
    main()
