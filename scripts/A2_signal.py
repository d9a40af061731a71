"""Mid-size fleets: a larger θ-search share where the counts' signal is weak (issue 20,
claims row D9; helper A, second step).

    python scripts/A2_signal.py capture SET SEEDS OUT.pkl [--rule RULE]
    python scripts/A2_signal.py compare MAIN.pkl RULE.pkl      (scripts/A_theta_cap.py's)

``capture``: one ``collector.cadr_reference.private_run`` per graph, ε and run seed (dp,
LL, θ auto-dev, α = 0.1, D = n − 1, the pipeline as on this tree), with the budget rule
``RULE`` patched into ``protocol.cadr_budget._wanted_theta_eps``:

- ``main`` (default): the tree as it is (with the weak-count rule,
  ``protocol.cadr_budget.SIGNAL_RATIO_TARGET``);
- ``before``: the tree with ``SIGNAL_RATIO_TARGET = None`` (the rule off);
- ``weak:T[,nmax:N|any]``: the tree with ``SIGNAL_RATIO_TARGET = T`` (and
  ``WEAK_COUNT_MAX_DEVICES = N``, ``any``: None); pre-registration 1 was ``weak:8,nmax:any``,
  pre-registration 2 ``weak:8`` (nmax 150, the tree's);
- ``exact``: the oracle, EXACT bucket counts for θ and the prior (same grid and budget;
  ``scripts/A_theta_cap.py --oracle-exact-counts``): the ceiling of any count rule;
- ``share:G[,cap:C][,gate:n|r:X][,emin:E][,target:T]``: ε_θ = max(main's, min(G · ε, C)) (C default
  ``MID_FLEET_THETA_EPS_CAP``) where the gate holds: ``n`` (25 <= n <= 150, the mid-size
  band) or ``r:X`` (n >= 25 and the count signal ratio n / (√K σ) at main's ε_θ below
  X, K = bucket_count + 1); ``emin:E``: only from ε >= E; ``target:T``: at most the
  ε_θ at which that ratio reaches T.

SET: ``calib`` (``CALIB``: graph seeds 2001-2060) or ``fresh`` (``FRESH``: 2201-2230,
the pre-registered evaluation set), or a set of ``scripts/A_theta_cap.py`` (``large``,
``held``, ...).
"""

from __future__ import annotations

import math
import pickle
import sys
import time

import networkx as nx
import numpy as np

sys.path.insert(0, "scripts")
import A_theta_cap as cap
import cadr_small_capture as capture
from ldpfleet.collector import cadr_reference as ref
from ldpfleet.protocol import cadr_budget
from ldpfleet.protocol import cadr_theta_noise as ctn


def _sbm(sizes, p_in, p_out, seed):
    k = len(sizes)
    probs = [[p_in if i == j else p_out for j in range(k)] for i in range(k)]
    return nx.stochastic_block_model(sizes, probs, seed=seed)


# Calibration set (graph seeds 2001-2060, never used before this step): 45 graphs of
# n 25-150 and 15 of n 160-600 (the border of any gate).
CALIB = {
    "sbm-60-2x30": lambda: _sbm([30, 30], 0.3, 0.03, 2001),
    "sbm-100-25+75": lambda: _sbm([25, 75], 0.3, 0.03, 2002),
    "sbm-150-3x50": lambda: _sbm([50] * 3, 0.2, 0.01, 2003),
    "sbm-45-15+30": lambda: _sbm([15, 30], 0.5, 0.05, 2004),
    "sbm-90-3x30": lambda: _sbm([30] * 3, 0.25, 0.02, 2005),
    "ba-28-m2": lambda: nx.barabasi_albert_graph(28, 2, seed=2006),
    "ba-60-m3": lambda: nx.barabasi_albert_graph(60, 3, seed=2007),
    "ba-110-m2": lambda: nx.barabasi_albert_graph(110, 2, seed=2008),
    "ba-140-m4": lambda: nx.barabasi_albert_graph(140, 4, seed=2009),
    "ba-80-m1": lambda: nx.barabasi_albert_graph(80, 1, seed=2010),
    "er-32-p0.3": lambda: nx.gnp_random_graph(32, 0.3, seed=2011),
    "er-65-p0.12": lambda: nx.gnp_random_graph(65, 0.12, seed=2012),
    "er-120-p0.05": lambda: nx.gnp_random_graph(120, 0.05, seed=2013),
    "er-85-p0.35": lambda: nx.gnp_random_graph(85, 0.35, seed=2014),
    "er-150-p0.02": lambda: nx.gnp_random_graph(150, 0.02, seed=2015),
    "gnm-75-300": lambda: nx.gnm_random_graph(75, 300, seed=2016),
    "gnm-130-390": lambda: nx.gnm_random_graph(130, 390, seed=2017),
    "plc-40-m2": lambda: nx.powerlaw_cluster_graph(40, 2, 0.3, seed=2018),
    "plc-95-m3": lambda: nx.powerlaw_cluster_graph(95, 3, 0.5, seed=2019),
    "plc-135-m2": lambda: nx.powerlaw_cluster_graph(135, 2, 0.2, seed=2020),
    "plc-70-m5": lambda: nx.powerlaw_cluster_graph(70, 5, 0.4, seed=2021),
    "ws-35-k4": lambda: nx.watts_strogatz_graph(35, 4, 0.2, seed=2022),
    "ws-80-k8": lambda: nx.watts_strogatz_graph(80, 8, 0.3, seed=2023),
    "ws-120-k6": lambda: nx.watts_strogatz_graph(120, 6, 0.1, seed=2024),
    "ws-50-k12": lambda: nx.watts_strogatz_graph(50, 12, 0.5, seed=2025),
    "rr-30-d4": lambda: nx.random_regular_graph(4, 30, seed=2026),
    "rr-70-d6": lambda: nx.random_regular_graph(6, 70, seed=2027),
    "rr-140-d3": lambda: nx.random_regular_graph(3, 140, seed=2028),
    "rgg-50-0.22": lambda: nx.random_geometric_graph(50, 0.22, seed=2029),
    "rgg-100-0.15": lambda: nx.random_geometric_graph(100, 0.15, seed=2030),
    "rgg-145-0.1": lambda: nx.random_geometric_graph(145, 0.1, seed=2031),
    "tree-random-40": lambda: nx.random_labeled_tree(40, seed=2032),
    "tree-random-110": lambda: nx.random_labeled_tree(110, seed=2033),
    "bip-30+60-p0.1": lambda: nx.bipartite.random_graph(30, 60, 0.1, seed=2034),
    "bip-20+100-p0.06": lambda: nx.bipartite.random_graph(20, 100, 0.06, seed=2035),
    "caveman-5x10": lambda: nx.relaxed_caveman_graph(5, 10, 0.1, seed=2036),
    "caveman-8x15": lambda: nx.relaxed_caveman_graph(8, 15, 0.2, seed=2037),
    "ws-26-k4": lambda: nx.watts_strogatz_graph(26, 4, 0.4, seed=2038),
    "er-45-p0.15": lambda: nx.gnp_random_graph(45, 0.15, seed=2039),
    "ba-125-m6": lambda: nx.barabasi_albert_graph(125, 6, seed=2040),
    "sbm-130-30+100": lambda: _sbm([30, 100], 0.3, 0.02, 2041),
    "plc-55-m1": lambda: nx.powerlaw_cluster_graph(55, 1, 0.1, seed=2042),
    "rr-100-d10": lambda: nx.random_regular_graph(10, 100, seed=2043),
    "rgg-75-0.25": lambda: nx.random_geometric_graph(75, 0.25, seed=2044),
    "er-25-p0.4": lambda: nx.gnp_random_graph(25, 0.4, seed=2045),
    # the border: n 160-600
    "ba-180-m3": lambda: nx.barabasi_albert_graph(180, 3, seed=2046),
    "er-200-p0.04": lambda: nx.gnp_random_graph(200, 0.04, seed=2047),
    "ws-220-k6": lambda: nx.watts_strogatz_graph(220, 6, 0.2, seed=2048),
    "plc-250-m2": lambda: nx.powerlaw_cluster_graph(250, 2, 0.3, seed=2049),
    "sbm-240-4x60": lambda: _sbm([60] * 4, 0.15, 0.01, 2050),
    "rgg-300-0.08": lambda: nx.random_geometric_graph(300, 0.08, seed=2051),
    "ba-350-m2": lambda: nx.barabasi_albert_graph(350, 2, seed=2052),
    "er-400-p0.02": lambda: nx.gnp_random_graph(400, 0.02, seed=2053),
    "rr-450-d5": lambda: nx.random_regular_graph(5, 450, seed=2054),
    "plc-500-m4": lambda: nx.powerlaw_cluster_graph(500, 4, 0.4, seed=2055),
    "ws-600-k10": lambda: nx.watts_strogatz_graph(600, 10, 0.3, seed=2056),
    "tree-random-170": lambda: nx.random_labeled_tree(170, seed=2057),
    "gnm-280-1100": lambda: nx.gnm_random_graph(280, 1100, seed=2058),
    "bip-60+140-p0.05": lambda: nx.bipartite.random_graph(60, 140, 0.05, seed=2059),
    "caveman-10x20": lambda: nx.relaxed_caveman_graph(10, 20, 0.15, seed=2060),
}

# The evaluation set of the weak-count rule (pre-registered, helper A, 2026-12-05 night),
# fixed before any run on it: graph seeds 2201-2230, never used before; 25 graphs of n
# 25-150 and 5 of n 155-200 (the rule reaches n up to ~195).
FRESH = {
    "sbm-70-2x35": lambda: _sbm([35, 35], 0.28, 0.03, 2201),
    "sbm-120-40+80": lambda: _sbm([40, 80], 0.25, 0.02, 2202),
    "sbm-50-10+40": lambda: _sbm([10, 40], 0.7, 0.04, 2203),
    "sbm-144-4x36": lambda: _sbm([36] * 4, 0.22, 0.01, 2204),
    "ba-33-m2": lambda: nx.barabasi_albert_graph(33, 2, seed=2205),
    "ba-75-m4": lambda: nx.barabasi_albert_graph(75, 4, seed=2206),
    "ba-135-m3": lambda: nx.barabasi_albert_graph(135, 3, seed=2207),
    "er-38-p0.2": lambda: nx.gnp_random_graph(38, 0.2, seed=2208),
    "er-95-p0.06": lambda: nx.gnp_random_graph(95, 0.06, seed=2209),
    "er-60-p0.5": lambda: nx.gnp_random_graph(60, 0.5, seed=2210),
    "gnm-105-420": lambda: nx.gnm_random_graph(105, 420, seed=2211),
    "plc-48-m3": lambda: nx.powerlaw_cluster_graph(48, 3, 0.3, seed=2212),
    "plc-115-m2": lambda: nx.powerlaw_cluster_graph(115, 2, 0.5, seed=2213),
    "ws-44-k6": lambda: nx.watts_strogatz_graph(44, 6, 0.3, seed=2214),
    "ws-90-k4": lambda: nx.watts_strogatz_graph(90, 4, 0.1, seed=2215),
    "ws-140-k12": lambda: nx.watts_strogatz_graph(140, 12, 0.4, seed=2216),
    "rr-28-d5": lambda: nx.random_regular_graph(5, 28, seed=2217),
    "rr-96-d4": lambda: nx.random_regular_graph(4, 96, seed=2218),
    "rgg-60-0.18": lambda: nx.random_geometric_graph(60, 0.18, seed=2219),
    "rgg-125-0.12": lambda: nx.random_geometric_graph(125, 0.12, seed=2220),
    "tree-random-70": lambda: nx.random_labeled_tree(70, seed=2221),
    "bip-25+75-p0.12": lambda: nx.bipartite.random_graph(25, 75, 0.12, seed=2222),
    "caveman-6x10": lambda: nx.relaxed_caveman_graph(6, 10, 0.2, seed=2223),
    "er-27-p0.35": lambda: nx.gnp_random_graph(27, 0.35, seed=2224),
    "plc-150-m5": lambda: nx.powerlaw_cluster_graph(150, 5, 0.3, seed=2225),
    "ba-160-m2": lambda: nx.barabasi_albert_graph(160, 2, seed=2226),
    "er-175-p0.03": lambda: nx.gnp_random_graph(175, 0.03, seed=2227),
    "ws-185-k6": lambda: nx.watts_strogatz_graph(185, 6, 0.2, seed=2228),
    "sbm-190-2x95": lambda: _sbm([95, 95], 0.08, 0.01, 2229),
    "rgg-200-0.1": lambda: nx.random_geometric_graph(200, 0.1, seed=2230),
}

# The evaluation set of pre-registration 2 (helper A, 2026-12-05 night), fixed before any
# run on it: graph seeds 2261-2290, never used before; n 25-150 (the rule's band).
FRESH2 = {
    "sbm-66-2x33": lambda: _sbm([33, 33], 0.3, 0.02, 2261),
    "sbm-110-20+90": lambda: _sbm([20, 90], 0.45, 0.03, 2262),
    "sbm-135-3x45": lambda: _sbm([45] * 3, 0.18, 0.015, 2263),
    "sbm-42-12+30": lambda: _sbm([12, 30], 0.6, 0.05, 2264),
    "ba-36-m3": lambda: nx.barabasi_albert_graph(36, 3, seed=2265),
    "ba-88-m2": lambda: nx.barabasi_albert_graph(88, 2, seed=2266),
    "ba-148-m5": lambda: nx.barabasi_albert_graph(148, 5, seed=2267),
    "er-29-p0.3": lambda: nx.gnp_random_graph(29, 0.3, seed=2268),
    "er-78-p0.09": lambda: nx.gnp_random_graph(78, 0.09, seed=2269),
    "er-130-p0.04": lambda: nx.gnp_random_graph(130, 0.04, seed=2270),
    "er-50-p0.45": lambda: nx.gnp_random_graph(50, 0.45, seed=2271),
    "gnm-92-370": lambda: nx.gnm_random_graph(92, 370, seed=2272),
    "plc-58-m2": lambda: nx.powerlaw_cluster_graph(58, 2, 0.4, seed=2273),
    "plc-125-m3": lambda: nx.powerlaw_cluster_graph(125, 3, 0.3, seed=2274),
    "plc-33-m4": lambda: nx.powerlaw_cluster_graph(33, 4, 0.5, seed=2275),
    "ws-64-k6": lambda: nx.watts_strogatz_graph(64, 6, 0.2, seed=2276),
    "ws-112-k8": lambda: nx.watts_strogatz_graph(112, 8, 0.3, seed=2277),
    "ws-27-k4": lambda: nx.watts_strogatz_graph(27, 4, 0.3, seed=2278),
    "rr-44-d6": lambda: nx.random_regular_graph(6, 44, seed=2279),
    "rr-120-d5": lambda: nx.random_regular_graph(5, 120, seed=2280),
    "rgg-85-0.17": lambda: nx.random_geometric_graph(85, 0.17, seed=2281),
    "rgg-150-0.11": lambda: nx.random_geometric_graph(150, 0.11, seed=2282),
    "tree-random-55": lambda: nx.random_labeled_tree(55, seed=2283),
    "tree-random-140": lambda: nx.random_labeled_tree(140, seed=2284),
    "bip-35+70-p0.1": lambda: nx.bipartite.random_graph(35, 70, 0.1, seed=2285),
    "caveman-7x12": lambda: nx.relaxed_caveman_graph(7, 12, 0.15, seed=2286),
    "ba-70-m1": lambda: nx.barabasi_albert_graph(70, 1, seed=2287),
    "er-100-p0.25": lambda: nx.gnp_random_graph(100, 0.25, seed=2288),
    "sbm-96-4x24": lambda: _sbm([24] * 4, 0.3, 0.02, 2289),
    "ws-46-k10": lambda: nx.watts_strogatz_graph(46, 10, 0.5, seed=2290),
}

_original_wanted = cadr_budget._wanted_theta_eps


def signal_ratio(eps_theta: float, devices: int) -> float:
    """``n / (√K σ)`` at ``eps_theta`` with ``K = bucket_count + 1`` (public n, ε_θ)."""
    buckets = ctn.bucket_count(devices, eps_theta) + 1
    sd = ctn.noise_sd(eps_theta, devices, ctn.noise_parties(devices))
    return devices / (math.sqrt(buckets) * sd)


def parse_rule(text: str) -> dict:
    """``share:G,cap:C,gate:n|r:X,emin:E`` as a dict (module docstring)."""
    out: dict = {"cap": cadr_budget.MID_FLEET_THETA_EPS_CAP, "gate": "n", "emin": 0.0}
    for part in text.split(","):
        key, _, value = part.partition(":")
        if key == "share":
            out["share"] = float(value)
        elif key == "cap":
            out["cap"] = float(value)
        elif key == "emin":
            out["emin"] = float(value)
        elif key == "target":
            out["target"] = float(value)
        elif key == "gate":
            out["gate"] = value if value == "n" else float(value.split(":")[-1])
        else:
            raise SystemExit(f"rule part {part!r}")
    return out


def install_rule(rule: dict) -> None:
    """Patch ``protocol.cadr_budget._wanted_theta_eps`` with ``rule``."""

    def wanted(eps: float, alpha: float, devices: int) -> float:
        base = _original_wanted(eps, alpha, devices)
        if devices < cadr_budget.MID_FLEET_MIN_DEVICES or eps < rule["emin"]:
            return base
        if rule["gate"] == "n":
            if devices > cadr_budget.MID_FLEET_DEVICES:
                return base
        elif signal_ratio(base, devices) >= rule["gate"]:
            return base
        top = min(rule["share"] * eps, rule["cap"])
        if "target" in rule:  # just enough ε_θ for the signal ratio to reach the target
            top = min(top, eps_for_ratio(rule["target"], devices, top))
        return max(base, top)

    cadr_budget._wanted_theta_eps = wanted


def eps_for_ratio(target: float, devices: int, most: float) -> float:
    """The least ε_θ <= ``most`` with ``signal_ratio >= target`` (``most`` if none): by
    bisection (the ratio rises with ε_θ)."""
    if signal_ratio(most, devices) < target:
        return most
    lo, hi = 1e-3, most
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if signal_ratio(mid, devices) < target else (lo, mid)
    return hi


def _graphs(which: str):
    sets = {"calib": CALIB, "fresh": FRESH, "fresh2": FRESH2}
    if which in sets:
        for name, make in sets[which].items():
            yield name, capture._graph_of(make())
    else:
        yield from cap._graphs(which)


def capture_runs(which: str, seeds: list[int], out: str) -> None:
    """One row per run: MAE, θ, ε_θ, the two baselines (scripts/A_theta_cap.py's rows)."""
    rows = []
    for name, graph in _graphs(which):
        degrees = graph.degrees()
        median = float(np.mean(np.abs(degrees - np.floor(np.median(degrees)))))
        zero = float(np.mean(degrees))
        for eps in capture.EPS_LIST:
            for seed in seeds:
                started = time.process_time()
                run = ref.private_run(graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
                rows.append(
                    {
                        "graph": name, "n": graph.n, "eps": eps, "seed": seed,
                        "mae": run.mae, "theta": run.theta,
                        "theta_exact": run.theta_search.get("theta_exact"),
                        "eps_theta": run.theta_search.get("eps"),
                        "searched": bool(run.theta_search), "max_degree": int(degrees.max()),
                        "median": median, "zero": zero,
                        "cpu": time.process_time() - started,
                    }
                )  # fmt: skip
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)
    print(out, len(rows), "runs", flush=True)


def main() -> None:
    mode = sys.argv[1]
    if mode == "capture":
        rule = sys.argv[sys.argv.index("--rule") + 1] if "--rule" in sys.argv else "main"
        if rule == "before":  # the tree without the weak-count rule
            cadr_budget.SIGNAL_RATIO_TARGET = None
        elif rule.startswith("weak:"):  # weak:T[,nmax:N|any]: the tree's rule, switched on
            target, _, nmax = rule[5:].partition(",nmax:")
            cadr_budget.SIGNAL_RATIO_TARGET = float(target)
            if nmax:
                cadr_budget.WEAK_COUNT_MAX_DEVICES = None if nmax == "any" else int(nmax)
        elif rule == "exact":
            cap._settings.update(z=None, exact=True)
            ref.dp_theta = cap.patched_dp_theta
        elif rule != "main":
            install_rule(parse_rule(rule))
        if "--eps" in sys.argv:  # another ε grid (default capture.EPS_LIST)
            capture.EPS_LIST = tuple(
                float(e) for e in sys.argv[sys.argv.index("--eps") + 1].split(",")
            )
        if "--min-buckets" in sys.argv:  # a grid what-if for the in-process θ search only
            floor = int(sys.argv[sys.argv.index("--min-buckets") + 1])
            ref.bucket_count = lambda n, e: int(min(ctn.BUCKETS, max(floor, round(n * e / 8))))
        capture_runs(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4])
    elif mode == "compare":
        cap.compare(cap._load(sys.argv[2]), cap._load(sys.argv[3]))
    else:
        raise SystemExit(f"mode: {mode!r} is not capture or compare")


if __name__ == "__main__":
    main()
