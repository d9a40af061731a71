"""Released histogram on held-out shapes: diagnosis and one rule (issue 20, helper B, round 2).

    python scripts/B2_hist_eval.py capture SET SEEDS OUT.pkl   # b2cal, b2fresh, large, realsmall
    python scripts/B2_hist_eval.py compare RUNS.pkl [...]

``capture``: as ``scripts/J_hist_eval.py`` (one ``private_run`` per graph, ε in 0.5, 1, 2, 3,
5 and seed; dp, LL, θ auto-dev, α = 0.1, D = n − 1; the post-processing inputs spied on).
``compare``: per run the released histogram read from the same θ-search counts by
``main`` (``histogram_prior`` as on main: boot, H's g raised by J's stretch scan, B's
geometric tail), ``rule`` (the candidate below), ``boot`` alone, and the constant TRUE
median's histogram; per (graph, ε) cell the mean over the seeds; then the criterion.

Sets fixed 2026-12-05 (helper B, round 2) before any run on them:

- ``b2cal`` (CALIBRATION): thirty graphs, networkx seeds 2101-2130, run seeds 121-123 —
  bimodal (two-block SBMs, two-mode configuration models, ER unions, core + pendants),
  heavy-tailed (Barabási–Albert, powerlaw cluster, configuration power law) and a few
  light-tailed ones, n 40-3,000.
- ``b2fresh`` (EVALUATION, never run before the pre-registration): thirty graphs of the
  same families, networkx seeds 2301-2330, new sizes; run seeds 141-143; plus ``large``
  (ego-Facebook, wiki-Vote) at run seeds 141-143.
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
import J_hist_eval as j_eval
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.bucket_isotonic import TAIL_LEVEL, bootstrap_counts, geometric_tail_counts

_two_blocks = j_eval._two_blocks
_two_mode = j_eval._two_mode_config
_union = j_eval._union
_core = j_eval._core_pendant


def _config_pl(n: int, gamma: float, seed: int) -> nx.Graph:
    """Configuration model on a power-law sequence of exponent ``gamma`` (simple graph)."""
    seq = [max(1, round(x)) for x in nx.utils.powerlaw_sequence(n, gamma, seed=seed)]
    seq = [min(x, n - 1) for x in seq]
    if sum(seq) % 2:
        seq[0] += 1
    g = nx.Graph(nx.configuration_model(seq, seed=seed))
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    return g


# CALIBRATION, networkx seeds 2101-2130, run seeds 121-123 (fixed before any run)
B2CAL = {
    "sbm2-50": lambda: _two_blocks(34, 0.06, 16, 0.55, 0.01, 2101),
    "sbm2-100": lambda: _two_blocks(65, 0.035, 35, 0.4, 0.006, 2102),
    "sbm2-400": lambda: _two_blocks(280, 0.008, 120, 0.12, 0.0015, 2103),
    "sbm2-1800": lambda: _two_blocks(1200, 0.0018, 600, 0.035, 0.0003, 2104),
    "cfg2-120-2-9": lambda: _two_mode(120, 0.6, 2, 9, 2105),
    "cfg2-500-2-16": lambda: _two_mode(500, 0.65, 2, 16, 2106),
    "cfg2-1500-3-22": lambda: _two_mode(1500, 0.7, 3, 22, 2107),
    "cfg2-2800-2-35": lambda: _two_mode(2800, 0.75, 2, 35, 2108),
    "union-600": lambda: _union(420, 0.004, 180, 0.06, 30, 2109),
    "union-2000": lambda: _union(1400, 0.0018, 600, 0.03, 80, 2110),
    "corep-70": lambda: _core(25, 0.4, 45, 2111),
    "corep-300": lambda: _core(60, 0.18, 240, 2112),
    "corep-1200": lambda: _core(200, 0.06, 1000, 2113),
    "ba-60-m2": lambda: nx.barabasi_albert_graph(60, 2, seed=2114),
    "ba-400-m3": lambda: nx.barabasi_albert_graph(400, 3, seed=2115),
    "ba-1500-m2": lambda: nx.barabasi_albert_graph(1500, 2, seed=2116),
    "ba-3000-m4": lambda: nx.barabasi_albert_graph(3000, 4, seed=2117),
    "plc-150-m2": lambda: nx.powerlaw_cluster_graph(150, 2, 0.4, seed=2118),
    "plc-800-m3": lambda: nx.powerlaw_cluster_graph(800, 3, 0.3, seed=2119),
    "plc-2500-m2": lambda: nx.powerlaw_cluster_graph(2500, 2, 0.5, seed=2120),
    "cpl-1000-2.3": lambda: _config_pl(1000, 2.3, 2121),
    "cpl-2500-2.5": lambda: _config_pl(2500, 2.5, 2122),
    "cpl-300-2.2": lambda: _config_pl(300, 2.2, 2123),
    "er-200-0.05": lambda: nx.gnp_random_graph(200, 0.05, seed=2124),
    "er-1500-0.006": lambda: nx.gnp_random_graph(1500, 0.006, seed=2125),
    "ws-600-k6": lambda: nx.watts_strogatz_graph(600, 6, 0.2, seed=2126),
    "sbm3-900": lambda: nx.stochastic_block_model(
        [300, 300, 300],
        [[0.03 if i == j else 0.002 for j in range(3)] for i in range(3)],
        seed=2127,
    ),
    "sbm2-250": lambda: _two_blocks(170, 0.012, 80, 0.22, 0.003, 2128),
    "cfg2-80-1-8": lambda: _two_mode(80, 0.55, 1, 8, 2129),
    "corep-500": lambda: _core(100, 0.12, 400, 2130),
}

# EVALUATION, networkx seeds 2301-2330, run seeds 141-143 (fixed before any run)
B2FRESH = {
    "sbm2-55": lambda: _two_blocks(37, 0.06, 18, 0.5, 0.01, 2301),
    "sbm2-140": lambda: _two_blocks(95, 0.03, 45, 0.33, 0.005, 2302),
    "sbm2-650": lambda: _two_blocks(450, 0.006, 200, 0.08, 0.001, 2303),
    "sbm2-2200": lambda: _two_blocks(1500, 0.0016, 700, 0.03, 0.0003, 2304),
    "cfg2-90-2-8": lambda: _two_mode(90, 0.6, 2, 8, 2305),
    "cfg2-350-2-13": lambda: _two_mode(350, 0.65, 2, 13, 2306),
    "cfg2-1000-3-20": lambda: _two_mode(1000, 0.7, 3, 20, 2307),
    "cfg2-2400-2-30": lambda: _two_mode(2400, 0.75, 2, 30, 2308),
    "union-800": lambda: _union(560, 0.0035, 240, 0.05, 40, 2309),
    "union-1600": lambda: _union(1100, 0.002, 500, 0.035, 70, 2310),
    "corep-60": lambda: _core(22, 0.45, 38, 2311),
    "corep-250": lambda: _core(50, 0.2, 200, 2312),
    "corep-1000": lambda: _core(180, 0.07, 820, 2313),
    "ba-70-m2": lambda: nx.barabasi_albert_graph(70, 2, seed=2314),
    "ba-500-m3": lambda: nx.barabasi_albert_graph(500, 3, seed=2315),
    "ba-2000-m2": lambda: nx.barabasi_albert_graph(2000, 2, seed=2316),
    "ba-2800-m5": lambda: nx.barabasi_albert_graph(2800, 5, seed=2317),
    "plc-180-m2": lambda: nx.powerlaw_cluster_graph(180, 2, 0.4, seed=2318),
    "plc-1000-m3": lambda: nx.powerlaw_cluster_graph(1000, 3, 0.3, seed=2319),
    "plc-3000-m2": lambda: nx.powerlaw_cluster_graph(3000, 2, 0.5, seed=2320),
    "cpl-1200-2.3": lambda: _config_pl(1200, 2.3, 2321),
    "cpl-2000-2.6": lambda: _config_pl(2000, 2.6, 2322),
    "cpl-400-2.2": lambda: _config_pl(400, 2.2, 2323),
    "er-250-0.04": lambda: nx.gnp_random_graph(250, 0.04, seed=2324),
    "er-1800-0.005": lambda: nx.gnp_random_graph(1800, 0.005, seed=2325),
    "ws-800-k6": lambda: nx.watts_strogatz_graph(800, 6, 0.2, seed=2326),
    "sbm3-1200": lambda: nx.stochastic_block_model(
        [400, 400, 400],
        [[0.025 if i == j else 0.002 for j in range(3)] for i in range(3)],
        seed=2327,
    ),
    "sbm2-300": lambda: _two_blocks(200, 0.01, 100, 0.18, 0.003, 2328),
    "cfg2-110-1-9": lambda: _two_mode(110, 0.55, 1, 9, 2329),
    "corep-600": lambda: _core(120, 0.1, 480, 2330),
}

# SECOND EVALUATION (round 2, after round 1 failed on B2FRESH), networkx seeds 2461-2490,
# run seeds 161-163 (fixed 2026-12-05 before any run; B2FRESH is calibration from here on)
B2FRESH2 = {
    "sbm2-65": lambda: _two_blocks(44, 0.05, 21, 0.5, 0.01, 2461),
    "sbm2-160": lambda: _two_blocks(110, 0.028, 50, 0.3, 0.005, 2462),
    "sbm2-750": lambda: _two_blocks(520, 0.0055, 230, 0.07, 0.001, 2463),
    "sbm2-2600": lambda: _two_blocks(1800, 0.0014, 800, 0.028, 0.0002, 2464),
    "cfg2-100-2-9": lambda: _two_mode(100, 0.6, 2, 9, 2465),
    "cfg2-450-2-15": lambda: _two_mode(450, 0.65, 2, 15, 2466),
    "cfg2-1300-3-24": lambda: _two_mode(1300, 0.7, 3, 24, 2467),
    "cfg2-3000-2-28": lambda: _two_mode(3000, 0.75, 2, 28, 2468),
    "union-900": lambda: _union(630, 0.003, 270, 0.05, 45, 2469),
    "union-2200": lambda: _union(1500, 0.0016, 700, 0.03, 90, 2470),
    "corep-80": lambda: _core(28, 0.4, 52, 2471),
    "corep-350": lambda: _core(70, 0.16, 280, 2472),
    "corep-1400": lambda: _core(240, 0.05, 1160, 2473),
    "ba-90-m2": lambda: nx.barabasi_albert_graph(90, 2, seed=2474),
    "ba-650-m3": lambda: nx.barabasi_albert_graph(650, 3, seed=2475),
    "ba-1700-m2": lambda: nx.barabasi_albert_graph(1700, 2, seed=2476),
    "ba-2400-m4": lambda: nx.barabasi_albert_graph(2400, 4, seed=2477),
    "plc-130-m2": lambda: nx.powerlaw_cluster_graph(130, 2, 0.4, seed=2478),
    "plc-900-m3": lambda: nx.powerlaw_cluster_graph(900, 3, 0.3, seed=2479),
    "plc-2700-m2": lambda: nx.powerlaw_cluster_graph(2700, 2, 0.5, seed=2480),
    "cpl-1400-2.4": lambda: _config_pl(1400, 2.4, 2481),
    "cpl-2200-2.3": lambda: _config_pl(2200, 2.3, 2482),
    "cpl-500-2.2": lambda: _config_pl(500, 2.2, 2483),
    "er-300-0.035": lambda: nx.gnp_random_graph(300, 0.035, seed=2484),
    "er-2000-0.004": lambda: nx.gnp_random_graph(2000, 0.004, seed=2485),
    "ws-1000-k8": lambda: nx.watts_strogatz_graph(1000, 8, 0.2, seed=2486),
    "sbm3-1500": lambda: nx.stochastic_block_model(
        [500, 500, 500],
        [[0.02 if i == j else 0.0015 for j in range(3)] for i in range(3)],
        seed=2487,
    ),
    "sbm2-350": lambda: _two_blocks(230, 0.009, 120, 0.16, 0.003, 2488),
    "cfg2-130-1-10": lambda: _two_mode(130, 0.55, 1, 10, 2489),
    "corep-700": lambda: _core(140, 0.09, 560, 2490),
}

_B_GRAPHS = b_eval._graphs  # kept before ``main`` patches it


def _graphs(which: str):
    sets = {"b2cal": B2CAL, "b2fresh": B2FRESH, "b2fresh2": B2FRESH2}
    if which in sets:
        for name, make in sets[which].items():
            yield name, b_eval.capture._graph_of(make())
    elif which == "realsmall":
        for name, make in i_real.GRAPHS.items():
            yield name, i_real.graph_of(make())
    else:
        yield from _B_GRAPHS(which)


GROUPS = {
    "bimodal": ("sbm2-", "cfg2-", "union-", "corep-"),
    "heavy": ("ba-", "plc-", "cpl-"),
    "light": ("er-", "ws-", "sbm3-"),
    "real": ("facebook", "wiki-vote", "karate", "lesmis", "davis", "intel-motes"),
}


def _group(graph: str) -> str:
    return next((k for k, heads in GROUPS.items() if graph.startswith(heads)), "other")


def _counts(args: tuple, reading: str) -> np.ndarray:
    """The bucket counts of one reading: ``boot`` alone, ``main`` (histogram_prior's
    default before the rule: B's tail above H's g raised by J's stretch scan) or ``rule``
    (the same with ``fitted_mass=True``)."""
    sums, ts, d, n, eps, m = args
    y = np.asarray(sums, float)
    boot = bootstrap_counts(y, n, eps, m)
    if reading == "boot":
        return boot
    fitted = reading == "rule"
    if fitted and ROUND == 2:  # round 2: only where the counts carry signal (public gate)
        fitted = dpp.count_signal_ratio(n, y.size, eps, m) >= dpp.UNIMODAL_RATIO_MAX
    return geometric_tail_counts(
        y,
        boot,
        np.diff(np.array([-1, *ts, d])),
        noise_sd(eps, n, m),
        mode_z=dpp.MODE_Z,
        gap_corrected=True,
        stretch_level=TAIL_LEVEL,
        fitted_mass=bool(fitted),
    )


def readings(r: dict) -> dict:
    """Histogram EMD/L1 of each reading and of the constant TRUE median; per-node MAEs."""
    d = r["degrees"]
    base = dpp.trivial_baselines(d)["constant_median_oracle"]
    out = {"median": (base["histogram_emd"], base["histogram_l1"])}
    s = r["search"]
    args = (s["bucket_sums"], list(s["thresholds"]), r["bound"], len(d), s["eps"])
    args = (*args, s["noise_parties"])
    prior, installed = dpp.search_priors(*args)
    estimates = {}
    for key in ("boot", "main", "rule"):
        h = dpp._spread(_counts(args, key), args[1], args[2], True)
        post = dpp.post_process(r["released"], r["theta"], r["eps_dsr"], prior, h)
        out[key] = (dpp.histogram_emd(d, post.histogram), dpp.histogram_l1(d, post.histogram))
        estimates[key] = post.estimates
        out[f"{key}_installed"] = bool(np.abs(installed - h).max() < 1e-15)
    assert out["main_installed"] or out["rule_installed"], r["graph"]
    mae = float(np.mean(np.abs(np.asarray(d, float) - estimates["rule"])))
    out["same"] = all(np.array_equal(estimates["rule"], e) for e in estimates.values())
    out["same"] &= abs(mae - r["mae"]) < 1e-9
    return out


READINGS = ("median", "boot", "main", "rule")
ROUND = 2  # the rule compared: 1 = fitted_mass everywhere, 2 = gated (``--round 1`` for 1)


def compare(rows: list[dict]) -> None:
    """Per cell (markdown), totals by group, and the pre-registered criterion."""
    cells = defaultdict(list)
    skipped = [r["graph"] for r in rows if not r.get("search")]
    if skipped:
        print(f"runs without a θ search (identical by construction, left out): {skipped}")
    identical = True
    for r in (r for r in rows if r.get("search")):
        x = readings(r)
        identical &= x["same"]
        cells[(r["graph"], r["n"], r["eps"])].append(x)
    print("| graph | n | ε | EMD median | boot | main | rule | L1 median | boot | main | rule |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    tot: dict = defaultdict(float)
    for key, runs in cells.items():
        m = {k: np.mean([x[k] for x in runs], axis=0) for k in READINGS}
        print(
            f"| {key[0]} | {key[1]} | {key[2]:g} | "
            + " | ".join(f"{m[k][0]:.3f}" for k in READINGS)
            + " | "
            + " | ".join(f"{m[k][1]:.3f}" for k in READINGS)
            + " |"
        )
        for where in ("all", _group(key[0])):
            tot[where, "cells"] += 1
            for k in READINGS:
                tot[where, k, "emd"] += m[k][0]
                tot[where, k, "l1"] += m[k][1]
                tot[where, k, "above"] += m[k][0] > m["median"][0] + 1e-12
            tot[where, "better"] += m["rule"][0] < m["main"][0] - 1e-12
            tot[where, "worse"] += m["rule"][0] > m["main"][0] + 1e-12
    print(f"\nruns {len(rows)}, cells {len(cells)}")
    for where in ("all", *GROUPS, "other"):
        if not tot[where, "cells"]:
            continue
        print(
            f"  {where}: cells {tot[where, 'cells']:.0f}, rule better {tot[where, 'better']:.0f}"
            f" / worse {tot[where, 'worse']:.0f}; "
            + "; ".join(
                f"{k} EMD {tot[where, k, 'emd']:.3f} L1 {tot[where, k, 'l1']:.3f}"
                f" above-median {tot[where, k, 'above']:.0f}"
                for k in READINGS
            )
        )
    a = tot["all", "rule", "emd"] < tot["all", "main", "emd"]
    b = tot["all", "rule", "l1"] <= 1.01 * tot["all", "main", "l1"]
    c = tot["all", "rule", "above"] <= tot["all", "main", "above"]
    verdict = "PASS" if a and b and c and identical else "FAIL"
    print(f"criterion: (a) {a}  (b) {b}  (c) {c}  (d) {identical}  -> {verdict}")


def main() -> None:
    mode = sys.argv[1]
    if mode == "capture":
        b_eval._graphs = _graphs  # the capture loop reads the module's _graphs
        b_eval.capture_runs(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4])
    elif mode == "compare":
        global ROUND
        paths = sys.argv[2:]
        if paths[:2] == ["--round", "1"]:
            ROUND, paths = 1, paths[2:]
        rows = []
        for path in paths:
            with open(path, "rb") as fh:
                rows += pickle.load(fh)
        compare(rows)
    else:
        raise SystemExit(f"mode: {mode!r} is not capture or compare")


if __name__ == "__main__":
    main()
