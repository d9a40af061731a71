"""CADR θ capped at the highest bucket the noisy counts support (issue 20, helper A).

    python scripts/A_theta_cap.py capture SET SEEDS OUT.pkl [--z Z|none] [--variant V]
        [--prior-z Z] [--theta-factor F] [--oracle-exact-counts] [--theta-eps-cap E]
        [--mid-budget]
    python scripts/A_theta_cap.py compare MAIN.pkl RULE.pkl

``capture``: one ``collector.cadr_reference.private_run`` per graph, ε and seed (dp, LL,
θ auto-dev, α = 0.1, D = n − 1; the pipeline as on main, small-fleet rule included), with
``dp_theta`` replaced by its call-site patch (``/tmp/A-callsites.diff``): the noisy
counts' sd ``protocol.cadr_theta_noise.noise_sd(ε_θ, n, parties)`` passed to
``theta_from_counts`` with ``cap_z = Z`` (``none``: no cap, i.e. main). ``SET``: ``band``,
``band2`` (calibration, ``scripts/cadr_band_eval.py``), ``fresh-a`` (``FRESH_A`` below,
the pre-registered evaluation set), ``large`` (ego-Facebook, wiki-Vote), ``held`` (the
held-out graphs with n >= 100 of ``scripts/cadr_user_new_graphs.py``), ``big-a``
(``BIG_A``: generated graphs with n >= 1000). ``compare``: per (graph, ε) cell the mean
over seeds of main and the rule against the constant TRUE median and all zeros; the
pre-registered criterion's figures.

Calibration (band seeds 11-13, band2 seeds 21-23; ``capture ... --z none`` against
``--z 3`` / ``--z 4``; the variants without the slack bucket and with the bucket test or
the suffix test alone were run from a scratch copy of this script): summed MAE main
141.677 + 205.449 = 347.126; the rule (z = 4) 141.452 + 202.131 = 343.583; cells above the
constant true median 26 + 44 = 70 → 24 + 43 = 67; runs with θ above the largest degree
22 + 107 → 22 + 53. Large graphs at calibration seed 0 (``large``, ``held``): identical.

PRE-REGISTRATION (committed before any run on the evaluation set; helper A, 2026-12-05).
Rule: ``protocol.cadr_theta_noise.THETA_CAP_Z = 4``, ``supported_top`` as committed with
this text, applied in ``theta_from_counts(noise_sd=)`` by the call-site patch
(``patched_dp_theta`` here = ``/tmp/A-callsites.diff`` for ``collector.cadr_reference.
dp_theta``; the fleet's ``_theta_by_buckets`` the same way with its survivors).
Evaluation set, never run before: ``FRESH_A`` (30 graphs, networkx seeds 1401-1430, n =
25-150), ε ∈ {0.5, 1, 2, 3, 5}, run seeds 51, 52, 53 (150 cells, mean over seeds); large:
``large`` (ego-Facebook, wiki-Vote) and ``held`` (14 graphs, n >= 100) at run seeds 51,
52, 53, and ``big-a`` (``BIG_A``: four generated graphs, n = 1000-2000, networkx seeds
1431-1434) at run seeds 51, 52, 53. Commands (each ``--z none`` for main, ``--z 4`` for
the rule):

    python scripts/A_theta_cap.py capture fresh-a 51,52,53 fresh-main.pkl --z none
    python scripts/A_theta_cap.py capture fresh-a 51,52,53 fresh-rule.pkl --z 4
    python scripts/A_theta_cap.py compare fresh-main.pkl fresh-rule.pkl
    (the same for large, held, big-a)

PASS only if ALL hold: (a) summed MAE over the 150 fresh cells not above main's; (b)
strictly fewer fresh cells above the constant true median than main; (c) every large cell
(ego-Facebook, wiki-Vote, held, big-a; 5 ε each) within +0.5 % of main's per-node MAE.
Reported beside, not criteria: cells newly above all zeros, cells better / worse, runs
with θ above the largest degree. FAIL: ``THETA_CAP_Z = None`` (the cap off), this script
and a docs paragraph of the failure kept.

RESULT (2026-12-05): FAILED — (a) and (b) failed, (c) held; ``THETA_CAP_Z = None``.
Fresh set (``capture fresh-a 51,52,53``, 16 s per variant; 150 cells): summed MAE main
325.248, rule 325.826 (constant true median 260.741, all zeros 951.120); cells above the
constant median 114 → 116; above all zeros 0 → 0; 17 cells better, 16 worse; runs with θ
above the largest degree 83 → 65. Per ε (main / rule): 0.5 66.873 / 66.873; 1 68.590 /
68.566; 2 65.825 / 65.862; 3 64.028 / 64.146; 5 59.933 / 60.378. Worst: rr-64-d7 ε = 5
0.297 → 0.594 (seed 53: θ 37 → 10, largest degree 7), plc-100-m4 ε = 5 3.293 → 3.613,
caveman-6x12 ε = 5 1.060 → 1.292, ws-85-k6 ε = 5 0.643 → 0.733 (seed 52: θ 83 → 11).
Large (``large``, ``held``, ``big-a`` at 51-53; 100 cells): identical in every cell (the
cap never fired). Why: with θ far above every degree the releases carry no information
and every node sits at the prior's median; a θ near the degrees makes them informative,
and the nodes then follow the prior's noise spikes. θ above the largest degree was a
symptom of the spikes (the same noise), not the cause of the excess.

After the failure, on calibration only (band, band2, and fresh-a now that it is spent;
main 141.677 / 205.449 / 325.248, cells above the constant median 26 / 44 / 114): the
prior truncated at the supported top (``--prior-z 3`` / ``4``, with or without the θ
cap) 339-341 on fresh-a and worse on band and band2; θ at D (``--theta-factor 100``,
every release flat: the prior's median) 148.276 / 213.007 / 341.801; θ × 0.5 146.031 /
204.426 / 336.315; the oracle with EXACT counts (``--oracle-exact-counts``, same grid and
budget) on fresh-a 250.893, 9 cells above (constant median 260.741): the count noise is
the whole gap, θ is not the lever. Budget what-ifs (``--theta-eps-cap E``: the θ search's
ε_θ cap of protocol.cadr_budget, 0.5 on main; only ε >= 2 changes): E = 1.0 140.790 /
194.457 / 288.850 (25 / 31 / 78 above); E = 1.5 141.993 / 190.984 / 287.931 (26 / 28 /
69); E = 2.5 144.139 / 193.833 / 289.079 (24 / 28 / 63). Held graphs at seed 0 with E =
1.5 for every n: 264.911 → 262.939 but six cells worse by > 0.5 % (er-dense-500 ε = 3,
union-disconnected ε = 2, 3, 5, isolated-1200of2000 ε = 5, hub-ba-2000 ε = 5; n 500-2000).

PRE-REGISTRATION 2 (committed before any run on its evaluation set; helper A,
2026-12-05). Rule (``--mid-budget``; the patch ``/tmp/A-budget.diff`` for
``protocol/cadr_budget.py``): fleets of at most ``MID_N = 150`` devices take ε_θ =
min(ε / 2, ``MID_CAP = 1.5``, 1200 / n) from ε = 1 up, out of DSR (NDOE, LPEA unchanged);
everything else as main (ε < 1 unchanged by construction, n > 150 unchanged by
construction). 1.5 had the lowest summed calibration MAE of 1.0, 1.5, 2.5; 150 is the
largest n calibrated (n 430-2000 lost > 0.5 % in six held cells with the cap for all n).
Evaluation set, never run before: ``FRESH_B`` (30 graphs, networkx seeds 1441-1470, n =
30-150), ε ∈ {0.5, 1, 2, 3, 5}, run seeds 61, 62, 63 (150 cells, mean over seeds); large:
``large`` and ``held`` at run seed 61 (identical by construction: every n > 150).

    python scripts/A_theta_cap.py capture fresh-b 61,62,63 b-main.pkl --z none
    python scripts/A_theta_cap.py capture fresh-b 61,62,63 b-rule.pkl --z none --mid-budget
    python scripts/A_theta_cap.py compare b-main.pkl b-rule.pkl
    (the same for large and held at 61)

PASS only if ALL hold: (a) summed MAE over the 150 fresh cells lower than main's; (b)
strictly fewer cells above the constant true median; (c) no cell newly above all zeros;
(d) every large and held cell identical to main. Otherwise a negative result.

RESULT 2 (2026-12-05): PASSED — (a)-(d) held. Fresh set (``capture fresh-b 61,62,63``,
~10 s per variant; 150 cells): summed MAE main 296.191, rule 289.126 (constant true
median 269.165, all zeros 1038.804); cells above the constant median 79 → 59 (summed
excess 35.53 → 27.36); above all zeros 2 → 2 (both at ε = 0.5, unchanged by
construction), none newly; 43 cells better, 39 worse. Per ε (main / rule / constant
median; cells above it): 0.5 and 1 unchanged (77.139, 56.621; 20 and 20 above); 2 55.606
/ 54.467 / 53.833, 17 → 10; 3 55.916 / 53.187 / 53.833, 11 → 5; 5 50.908 / 47.713 /
53.833, 11 → 4. Largest gains: ws-55-k10 ε = 3 2.903 → 1.212, ws-55-k10 ε = 5 2.897 →
1.261, er-70-p0.4 ε = 3 4.162 → 3.190, sbm-75-3x25-mixed ε = 5 3.538 → 3.027, ba-40-m2
ε = 5 1.833 → 1.475; losses where main beat the median and DSR now has less budget:
plc-110-m3 ε = 5 2.115 → 2.415, plc-45-m2 ε = 3 1.637 → 1.822, plc-140-m2 ε = 5 1.560
→ 1.729, sbm-50-2x25 ε = 5 2.293 → 2.493. Large (ego-Facebook, wiki-Vote) and held (14
graphs) at seed 61: identical in all 80 cells (θ and MAE). The patch
``/tmp/A-budget.diff`` adds a lower bound, 25 <= n, so that the small-fleet rule's
decisions (n <= 24 at ε >= 1) stay as they were; on every evaluated cell (n >= 30) it is
``--mid-budget`` exactly.
"""

from __future__ import annotations

import math
import pickle
import sys
import time
from collections import defaultdict

import networkx as nx
import numpy as np

sys.path.insert(0, "scripts")
import cadr_band_eval as band
import cadr_small_capture as capture
from ldpfleet.collector import cadr_reference as ref
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.protocol import cadr_theta_noise as ctn

# The pre-registered evaluation set (helper A, 2026-12-05), fixed before any run on it:
# networkx seeds 1401-1430, never used by an earlier set; n from 25 to 150.
FRESH_A = {
    "sbm-60-2x30-a": lambda: nx.stochastic_block_model(
        [30, 30], [[0.3, 0.03], [0.03, 0.3]], seed=1401
    ),
    "sbm-110-30+80": lambda: nx.stochastic_block_model(
        [30, 80], [[0.4, 0.02], [0.02, 0.05]], seed=1402
    ),
    "sbm-150-5x30": lambda: nx.stochastic_block_model(
        [30] * 5, [[0.3 if i == j else 0.01 for j in range(5)] for i in range(5)], seed=1403
    ),
    "sbm-40-10+30": lambda: nx.stochastic_block_model(
        [10, 30], [[0.8, 0.05], [0.05, 0.15]], seed=1404
    ),
    "ba-30-m2": lambda: nx.barabasi_albert_graph(30, 2, seed=1405),
    "ba-70-m3": lambda: nx.barabasi_albert_graph(70, 3, seed=1406),
    "ba-130-m2": lambda: nx.barabasi_albert_graph(130, 2, seed=1407),
    "ba-100-m5": lambda: nx.barabasi_albert_graph(100, 5, seed=1408),
    "er-30-p0.25": lambda: nx.gnp_random_graph(30, 0.25, seed=1409),
    "er-75-p0.1": lambda: nx.gnp_random_graph(75, 0.1, seed=1410),
    "er-140-p0.04": lambda: nx.gnp_random_graph(140, 0.04, seed=1411),
    "gnm-90-400": lambda: nx.gnm_random_graph(90, 400, seed=1412),
    "plc-35-m2": lambda: nx.powerlaw_cluster_graph(35, 2, 0.3, seed=1413),
    "plc-100-m4": lambda: nx.powerlaw_cluster_graph(100, 4, 0.5, seed=1414),
    "plc-145-m1": lambda: nx.powerlaw_cluster_graph(145, 1, 0.1, seed=1415),
    "ws-40-k4-a": lambda: nx.watts_strogatz_graph(40, 4, 0.2, seed=1416),
    "ws-85-k6": lambda: nx.watts_strogatz_graph(85, 6, 0.1, seed=1417),
    "ws-125-k10": lambda: nx.watts_strogatz_graph(125, 10, 0.4, seed=1418),
    "rr-26-d3": lambda: nx.random_regular_graph(3, 26, seed=1419),
    "rr-64-d7": lambda: nx.random_regular_graph(7, 64, seed=1420),
    "rr-150-d4": lambda: nx.random_regular_graph(4, 150, seed=1421),
    "rgg-55-0.2": lambda: nx.random_geometric_graph(55, 0.2, seed=1422),
    "rgg-115-0.13": lambda: nx.random_geometric_graph(115, 0.13, seed=1423),
    "tree-random-45": lambda: nx.random_labeled_tree(45, seed=1424),
    "tree-random-135": lambda: nx.random_labeled_tree(135, seed=1425),
    "bip-25+50-p0.15": lambda: nx.bipartite.random_graph(25, 50, 0.15, seed=1426),
    "ws-25-k6": lambda: nx.watts_strogatz_graph(25, 6, 0.5, seed=1427),
    "caveman-6x12": lambda: nx.relaxed_caveman_graph(6, 12, 0.15, seed=1428),
    "er-55-p0.3": lambda: nx.gnp_random_graph(55, 0.3, seed=1429),
    "plc-65-m3": lambda: nx.powerlaw_cluster_graph(65, 3, 0.6, seed=1430),
}

# Large generated fleets (n >= 1000) for the "identical or within 0.5 %" criterion; seeds
# 1431-1434, fixed with FRESH_A.
BIG_A = {
    "ba-1500-m3": lambda: nx.barabasi_albert_graph(1500, 3, seed=1431),
    "er-1200-p0.01": lambda: nx.gnp_random_graph(1200, 0.01, seed=1432),
    "ws-2000-k8": lambda: nx.watts_strogatz_graph(2000, 8, 0.2, seed=1433),
    "plc-1000-m5": lambda: nx.powerlaw_cluster_graph(1000, 5, 0.3, seed=1434),
}

# The evaluation set of the mid-size budget rule (pre-registration 2, helper A,
# 2026-12-05), fixed before any run on it: networkx seeds 1441-1470, never used by an
# earlier set; n from 25 to 150.
FRESH_B = {
    "sbm-50-2x25": lambda: nx.stochastic_block_model(
        [25, 25], [[0.35, 0.04], [0.04, 0.35]], seed=1441
    ),
    "sbm-120-20+100": lambda: nx.stochastic_block_model(
        [20, 100], [[0.5, 0.02], [0.02, 0.04]], seed=1442
    ),
    "sbm-140-4x35": lambda: nx.stochastic_block_model(
        [35] * 4, [[0.25 if i == j else 0.015 for j in range(4)] for i in range(4)], seed=1443
    ),
    "sbm-75-3x25-mixed": lambda: nx.stochastic_block_model(
        [25, 25, 25], [[0.1, 0.02, 0.02], [0.02, 0.3, 0.02], [0.02, 0.02, 0.5]], seed=1444
    ),
    "ba-40-m2": lambda: nx.barabasi_albert_graph(40, 2, seed=1445),
    "ba-95-m3": lambda: nx.barabasi_albert_graph(95, 3, seed=1446),
    "ba-150-m1": lambda: nx.barabasi_albert_graph(150, 1, seed=1447),
    "ba-60-m6": lambda: nx.barabasi_albert_graph(60, 6, seed=1448),
    "er-35-p0.2": lambda: nx.gnp_random_graph(35, 0.2, seed=1449),
    "er-90-p0.08": lambda: nx.gnp_random_graph(90, 0.08, seed=1450),
    "er-145-p0.05": lambda: nx.gnp_random_graph(145, 0.05, seed=1451),
    "gnm-110-330": lambda: nx.gnm_random_graph(110, 330, seed=1452),
    "plc-45-m2": lambda: nx.powerlaw_cluster_graph(45, 2, 0.4, seed=1453),
    "plc-110-m3": lambda: nx.powerlaw_cluster_graph(110, 3, 0.2, seed=1454),
    "plc-140-m2": lambda: nx.powerlaw_cluster_graph(140, 2, 0.6, seed=1455),
    "ws-30-k4": lambda: nx.watts_strogatz_graph(30, 4, 0.25, seed=1456),
    "ws-100-k6": lambda: nx.watts_strogatz_graph(100, 6, 0.15, seed=1457),
    "ws-150-k8": lambda: nx.watts_strogatz_graph(150, 8, 0.3, seed=1458),
    "rr-36-d5": lambda: nx.random_regular_graph(5, 36, seed=1459),
    "rr-80-d3": lambda: nx.random_regular_graph(3, 80, seed=1460),
    "rr-130-d6": lambda: nx.random_regular_graph(6, 130, seed=1461),
    "rgg-65-0.2": lambda: nx.random_geometric_graph(65, 0.2, seed=1462),
    "rgg-140-0.12": lambda: nx.random_geometric_graph(140, 0.12, seed=1463),
    "tree-random-30": lambda: nx.random_labeled_tree(30, seed=1464),
    "tree-random-100": lambda: nx.random_labeled_tree(100, seed=1465),
    "bip-40+80-p0.08": lambda: nx.bipartite.random_graph(40, 80, 0.08, seed=1466),
    "caveman-5x15": lambda: nx.relaxed_caveman_graph(5, 15, 0.2, seed=1467),
    "ws-55-k10": lambda: nx.watts_strogatz_graph(55, 10, 0.5, seed=1468),
    "er-70-p0.4": lambda: nx.gnp_random_graph(70, 0.4, seed=1469),
    "plc-85-m4": lambda: nx.powerlaw_cluster_graph(85, 4, 0.3, seed=1470),
}

# Pre-registration 2's rule: fleets of at most MID_N devices take ε_θ = min(ε / 2,
# MID_CAP, 1200 / n) from ε = 1 up (protocol.cadr_budget's THETA_EPS_CAP = 0.5 elsewhere);
# ``--mid-budget`` applies it (the patch /tmp/A-budget.diff for protocol/cadr_budget.py).
MID_N = 150
MID_CAP = 1.5

_settings: dict = {"z": None}
_original_dp_theta = ref.dp_theta


def patched_dp_theta(degrees, budget, weight, rng, degree_bound=None):
    """``collector.cadr_reference.dp_theta`` with the call-site patch: the noisy counts'
    public sd passed to ``theta_from_counts`` (the cap at ``_settings["z"]``)."""
    n, bound = len(degrees), ref.public_bound(degrees, degree_bound)
    thresholds = ctn.bucket_grid(bound, ctn.bucket_count(n, budget.theta))
    exact = np.bincount(
        np.searchsorted(thresholds, degrees, side="left"), minlength=len(thresholds) + 1
    )
    parties = ctn.noise_parties(n)
    noise = ctn.noise_sum(rng, n, parties, budget.theta, len(exact))
    noisy = exact + (0 * noise if _settings.get("exact") else noise)  # the oracle: no noise
    target = ref.deviation_target(n, budget.dsr, weight)
    sd = ctn.noise_sd(budget.theta, n, parties)
    theta = ctn.theta_from_counts(
        thresholds, ctn.counts_above(noisy), target, bound, noise_sd=sd, cap_z=_settings["z"]
    )
    return theta, {
        "eps": budget.theta,
        "noise_parties": parties,
        "theta": theta,
        "theta_exact": ctn.theta_from_counts(thresholds, ctn.counts_above(exact), target, bound),
        "thresholds": list(thresholds),
        "bucket_sums": noisy.tolist(),
    }


def _variant_top(variant: str):
    """``supported_top`` as calibrated (``--variant``): ``slack`` (the committed rule),
    ``edge`` (bucket or count-above test, cap at the supported bucket's own edge),
    ``bucket`` (the bucket test alone, own edge), ``suffix`` (the count-above test alone,
    own edge)."""

    def top(thresholds, above, sd, z, hi):
        counts = np.asarray(above, dtype=float)
        k = len(thresholds)
        own = np.append(counts[:-1] - counts[1:], counts[-1:])
        for j in range(k - 1, -1, -1):
            by_bucket = own[j] >= z * sd
            by_suffix = counts[j] >= z * sd * math.sqrt(k - j)
            ok = {"edge": by_bucket or by_suffix, "bucket": by_bucket, "suffix": by_suffix}
            if ok[variant]:
                return hi if j + 1 >= k else int(thresholds[j + 1])
        return None

    return top


def _truncating(prior_z: float):
    """``unimodal_degree_prior`` with its mass above ``supported_top`` (at ``prior_z``
    sds, the committed rule) removed and renormalised, below ``UNIMODAL_RATIO_MAX``
    (``--prior-z``: tried on calibration, worse everywhere)."""
    original = dpp.unimodal_degree_prior

    def prior(bucket_sums, thresholds, degree_bound, devices, eps_theta, parties):
        p = original(bucket_sums, thresholds, degree_bound, devices, eps_theta, parties)
        sums = np.asarray(bucket_sums, dtype=float)
        if dpp.count_signal_ratio(devices, sums.size, eps_theta, parties) >= (
            dpp.UNIMODAL_RATIO_MAX
        ):
            return p
        sd = ctn.noise_sd(eps_theta, devices, parties)
        top = ctn.supported_top(thresholds, ctn.counts_above(sums), sd, prior_z, degree_bound)
        if top is None or top >= degree_bound or p[: top + 1].sum() <= 0:
            return p
        p = p.copy()
        p[top + 1 :] = 0.0
        return p / p.sum()

    return prior


def _scaled(factor: float):
    """``theta_from_counts`` whose noisy-count θ (``noise_sd`` given) is multiplied by
    ``factor`` within ``[1, hi]`` (``--theta-factor``: 100 puts θ at D, every release
    flat; tried on calibration, worse both ways); exact counts unchanged."""
    original = ctn.theta_from_counts

    def theta(thresholds, above, target, hi, *, noise_sd=None, cap_z=None):
        t = original(thresholds, above, target, hi)
        return t if noise_sd is None else max(1, min(hi, round(t * factor)))

    return theta


def _mid_budget() -> None:
    """``protocol.cadr_budget``'s wanted ε_θ with pre-registration 2's rule (``MID_N``,
    ``MID_CAP``): only ε >= 1 and n <= MID_N change (below ε = 1 the ε / 2 term binds)."""
    from ldpfleet.protocol import cadr_budget

    original = cadr_budget._wanted_theta_eps

    def wanted(eps: float, alpha: float, devices: int) -> float:
        if devices <= MID_N and eps >= cadr_budget.SMALL_EPS_HIGH:
            return min(eps / 2.0, MID_CAP, cadr_budget.HISTOGRAM_TARGET / devices)
        return original(eps, alpha, devices)

    cadr_budget._wanted_theta_eps = wanted


def _graphs(which: str):
    sets = {"fresh-a": FRESH_A, "big-a": BIG_A, "fresh-b": FRESH_B}
    if which in sets:
        for name, make in sets[which].items():
            yield name, capture._graph_of(make())
    else:
        yield from band._graphs(which)


def capture_runs(which: str, seeds: list[int], out: str, z: float | None) -> None:
    """One row per run: MAE, θ, exact-count θ, largest degree, the two baselines."""
    _settings["z"] = z
    ref.dp_theta = patched_dp_theta
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
                        "searched": bool(run.theta_search), "max_degree": int(degrees.max()),
                        "median": median, "zero": zero,
                        "cpu": time.process_time() - started,
                    }
                )  # fmt: skip
                print(name, graph.n, eps, seed, run.theta, round(run.mae, 4), flush=True)
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)


def _cells(rows: list[dict]) -> dict:
    cells = defaultdict(list)
    for r in rows:
        cells[(r["graph"], r["n"], r["eps"])].append(r)
    return cells


def compare(main_rows: list[dict], rule_rows: list[dict]) -> None:
    """Per cell (mean over seeds) main vs the rule; totals, per ε; the criterion's figures."""
    main_cells, rule_cells = _cells(main_rows), _cells(rule_rows)
    assert main_cells.keys() == rule_cells.keys()
    print("| graph | n | ε | main | rule | constant median | all zero | θ main | θ rule | max d |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    tot, per_eps = defaultdict(float), defaultdict(lambda: defaultdict(float))
    worse, newly_zero = [], []
    for key in main_cells:
        a, b = main_cells[key], rule_cells[key]
        assert [r["seed"] for r in a] == [r["seed"] for r in b]
        m = {
            "main": float(np.mean([r["mae"] for r in a])),
            "rule": float(np.mean([r["mae"] for r in b])),
            "median": a[0]["median"],
            "zero": a[0]["zero"],
        }
        ta = "/".join(str(r["theta"]) for r in a)
        tb = "/".join(str(r["theta"]) for r in b)
        print(
            f"| {key[0]} | {key[1]} | {key[2]:g} | {m['main']:.3f} | {m['rule']:.3f} | "
            f"{m['median']:.3f} | {m['zero']:.3f} | {ta} | {tb} | {a[0]['max_degree']} |"
        )
        for where in (tot, per_eps[key[2]]):
            where["cells"] += 1
            for k in ("main", "rule", "median", "zero"):
                where[f"{k} sum"] += m[k]
            for k in ("main", "rule"):
                where[f"{k} above median"] += m[k] > m["median"] + 1e-9
                where[f"{k} excess"] += max(0.0, m[k] - m["median"])
                where[f"{k} above zeros"] += m[k] > m["zero"] + 1e-9
                runs = a if k == "main" else b
                where[f"{k} runs θ > max d"] += sum(r["theta"] > r["max_degree"] for r in runs)
            where["better"] += m["rule"] < m["main"] - 1e-9
            where["worse"] += m["rule"] > m["main"] + 1e-9
        if m["rule"] > m["main"] * 1.005 + 1e-9:
            worse.append((key[0], key[2], round(m["main"], 4), round(m["rule"], 4)))
        if m["main"] <= m["zero"] + 1e-9 < m["rule"]:
            newly_zero.append(key)
    print("\ntotal: " + "; ".join(f"{k} {v:.3f}" for k, v in tot.items()))
    for eps in sorted(per_eps):
        print(f"ε = {eps:g}: " + "; ".join(f"{k} {v:.3f}" for k, v in per_eps[eps].items()))
    print(f"cells worse than main by more than 0.5 %: {worse}")
    print(f"cells newly above all zeros: {newly_zero}")


def _load(path: str) -> list[dict]:
    with open(path, "rb") as fh:
        return pickle.load(fh)


def main() -> None:
    mode = sys.argv[1]
    if mode == "capture":
        z: float | None = None
        if "--z" in sys.argv:
            value = sys.argv[sys.argv.index("--z") + 1]
            z = None if value == "none" else float(value)
        if "--variant" in sys.argv:
            variant = sys.argv[sys.argv.index("--variant") + 1]
            if variant != "slack":
                ctn.supported_top = _variant_top(variant)
        if "--prior-z" in sys.argv:
            dpp.unimodal_degree_prior = _truncating(
                float(sys.argv[sys.argv.index("--prior-z") + 1])
            )
        _settings["exact"] = "--oracle-exact-counts" in sys.argv  # θ and prior, no noise
        if "--mid-budget" in sys.argv:
            _mid_budget()
        if "--theta-eps-cap" in sys.argv:  # a budget what-if (protocol.cadr_budget's cap)
            from ldpfleet.protocol import cadr_budget

            value = float(sys.argv[sys.argv.index("--theta-eps-cap") + 1])
            cadr_budget.THETA_EPS_CAP = value
        if "--theta-factor" in sys.argv:
            ctn.theta_from_counts = _scaled(float(sys.argv[sys.argv.index("--theta-factor") + 1]))
        capture_runs(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4], z)
    elif mode == "compare":
        compare(_load(sys.argv[2]), _load(sys.argv[3]))
    else:
        raise SystemExit(f"mode: {mode!r} is not capture or compare")


if __name__ == "__main__":
    main()
