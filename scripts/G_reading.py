"""Mid-size fleets at ε = 0.5: how the collector reads the θ search's noisy counts into
the per-node prior (issue 20, claims row D9; helper G).

    python scripts/G_reading.py dump SET SEEDS OUT.pkl [--eps 0.5,1]
    python scripts/G_reading.py diag OUT.pkl
    python scripts/G_reading.py capture SET SEEDS OUT.pkl [--reading NAME]
    python scripts/G_reading.py compare MAIN.pkl RULE.pkl   (scripts/A_theta_cap.py's)

``dump``: per run (``collector.cadr_reference.private_run``, the dp pipeline as on this
tree) the θ search's public output (noisy bucket sums, thresholds, ε_θ, parties) and the
true degrees. ``diag``: offline, the constant-MAE of the median of each candidate prior
(the release at ε = 0.5 is that median for nearly every device) against the constant true
median and the exact-counts oracle. ``capture``: the full pipeline with the per-node prior
``--reading NAME`` (``READINGS``) patched into ``search_priors`` (histogram unchanged).
SET: ``calib`` / ``fresh`` / ``fresh2`` (scripts/A2_signal.py) or ``fresh3`` (``FRESH3``,
graph seeds 2601-2630, helper G's pre-registered evaluation set), or a set of
``scripts/A_theta_cap.py``.
"""

from __future__ import annotations

import pickle
import sys
import time
from collections import defaultdict

import networkx as nx
import numpy as np

sys.path.insert(0, "scripts")
import A2_signal as a2
import A_theta_cap as cap
import cadr_small_capture as capture
from ldpfleet.collector import bucket_isotonic as bi
from ldpfleet.collector import cadr_reference as ref
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import denoise_counts, simplex_projection
from ldpfleet.protocol.cadr_theta_noise import noise_sd

_original_search_priors = dpp.search_priors
_seen: list[dict] = []


def _recording_search_priors(*args, exact_releases=None):
    sums, ts, bound, n, eps, parties = args
    _seen.append(
        {"sums": np.asarray(sums, float), "ts": list(ts), "bound": bound, "n": n,
         "eps_theta": eps, "parties": parties}
    )  # fmt: skip
    return _reading(*args, exact_releases=exact_releases)


def _exact_counts(degrees: np.ndarray, ts: list[int]) -> np.ndarray:
    return np.bincount(np.searchsorted(ts, degrees, side="left"), minlength=len(ts) + 1)


def _spread(counts, ts, d):
    return dpp._spread(np.asarray(counts, float), ts, d, True)


def reading_prior(name: str, sums, ts, d, n, eps, m) -> np.ndarray:
    """The per-node prior over 0..D by the reading ``name``."""
    sd = noise_sd(eps, n, m)
    if name == "unimodal":  # the tree's
        return dpp.unimodal_degree_prior(sums, ts, d, n, eps, m)
    if name == "projection":
        return _spread(simplex_projection(sums, n), ts, d)
    if name == "denoise":
        return _spread(denoise_counts(sums, n, eps, m), ts, d)
    if name == "isotonic":
        return _spread(bi.isotonic_counts(sums, n), ts, d)
    if name == "boot":
        return _spread(bi.bootstrap_counts(sums, n, eps, m), ts, d)
    if name == "histogram":
        return dpp.histogram_prior(sums, ts, d, n, eps, m)
    if name.startswith("interval"):
        penalty = {"interval": 2.0, "interval-bic": float(np.log(len(sums))), "interval-1": 1.0}[
            name
        ]
        return _spread(interval_support_counts(sums, n, sd, penalty), ts, d)
    if name in ("nbfit", "nbfit-gof"):
        prior, misfit = nb_fit_prior(sums, ts, d, n, sd)
        if name == "nbfit-gof":
            from scipy.special import chdtri

            if misfit > chdtri(len(sums) - 2, 0.01):
                return dpp.unimodal_degree_prior(sums, ts, d, n, eps, m)
        return prior
    raise SystemExit(f"reading {name!r}")


def interval_support_counts(sums, n, sd, penalty):
    """The counts on the contiguous run of buckets [lo, hi] that minimises the least-squares
    misfit (in sd^2, the empty buckets outside read as 0) plus ``penalty`` per bucket
    kept: the projection onto {x >= 0, sum x = n} on that run, 0 elsewhere."""
    y = np.asarray(sums, float)
    k = y.size
    best, best_counts = np.inf, None
    for lo in range(k):
        for hi in range(lo, k):
            inside = simplex_projection(y[lo : hi + 1], n)
            fit = np.zeros(k)
            fit[lo : hi + 1] = inside
            cost = float(np.sum((y - fit) ** 2)) / sd**2 + penalty * (hi - lo + 1)
            if cost < best:
                best, best_counts = cost, fit
    return best_counts


def _nb_pmf(mean: float, size: float, d: int) -> np.ndarray:
    from scipy.stats import nbinom

    p = size / (size + mean)
    pmf = nbinom.pmf(np.arange(d + 1), size, p)
    total = pmf.sum()
    return pmf / total if total > 0 else np.full(d + 1, 1.0 / (d + 1))


def nb_fit_prior(sums, ts, d, n, sd):
    """A negative binomial over 0..D (truncated) fitted to the noisy bucket sums by least
    squares (equal noise sd per count): the prior and the misfit in units of sd^2."""
    from scipy.optimize import minimize

    y = np.asarray(sums, float)
    idx = np.searchsorted(ts, np.arange(d + 1), side="left")

    def loss(params):
        pmf = _nb_pmf(np.exp(params[0]), np.exp(params[1]), d)
        expected = n * np.bincount(idx, weights=pmf, minlength=y.size)
        return float(np.sum((y - expected) ** 2)) / sd**2

    proj = simplex_projection(y, n)
    centres = np.array(
        [(lo + hi) / 2 for lo, hi in zip([0, *[t + 1 for t in ts]], [*ts, d], strict=True)]
    )
    mean0 = max(0.5, float(proj @ centres) / n)
    best = None
    for log_size in (-0.5, 1.0, 3.0):
        res = minimize(
            loss,
            [np.log(mean0), log_size],
            method="Nelder-Mead",
            options={"xatol": 1e-3, "fatol": 1e-3, "maxiter": 400},
        )
        if best is None or res.fun < best.fun:
            best = res
    return _nb_pmf(np.exp(best.x[0]), np.exp(best.x[1]), d), best.fun


READINGS = ("unimodal", "boot", "interval", "interval-bic", "interval-1")
_settings = {"reading": "unimodal"}


def _reading(*args, exact_releases=None):
    """``search_priors`` with the per-node prior of ``--reading`` (the runs here are method
    ll's, whose releases have no exact model: ``exact_releases`` is always None)."""
    if exact_releases is not None:
        raise ValueError("G_reading's readings take no exact releases (method clip)")
    sums, ts, bound, n, eps, parties = args
    _, hist = _original_search_priors(*args)
    if dpp.count_signal_ratio(n, len(sums), eps, parties) >= dpp.UNIMODAL_RATIO_MAX:
        prior = dpp.unimodal_degree_prior(*args)
    else:
        prior = reading_prior(
            _settings["reading"], np.asarray(sums, float), ts, bound, n, eps, parties
        )
    return prior, hist


def prior_median(prior: np.ndarray) -> int:
    """The smallest k with CDF >= 1/2 (``posterior_medians``' rule)."""
    return int(np.sum(np.cumsum(prior) < 0.5 - 1e-12))


def _graphs(which):
    if which == "fresh3":
        for name, make in FRESH3.items():
            yield name, capture._graph_of(make())
    else:
        yield from a2._graphs(which)


def dump(which: str, seeds: list[int], out: str) -> None:
    rows = []
    dpp.search_priors = _recording_search_priors  # post_process_release's look-up
    for name, graph in _graphs(which):
        degrees = graph.degrees()
        for eps in capture.EPS_LIST:
            for seed in seeds:
                _seen.clear()
                run = ref.private_run(graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
                if not _seen:
                    continue
                rows.append(dict(_seen[-1], graph=name, eps=eps, seed=seed, mae=run.mae,
                                 degrees=np.asarray(degrees)))  # fmt: skip
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)
    print(out, len(rows), "runs", flush=True)


def diag(path: str) -> None:
    with open(path, "rb") as fh:
        rows = pickle.load(fh)
    acc = defaultdict(lambda: defaultdict(list))
    for r in rows:
        deg = r["degrees"]
        n, ts, d = r["n"], r["ts"], r["bound"]
        true_med = int(np.floor(np.median(deg)))
        base = float(np.mean(np.abs(deg - true_med)))
        key = (
            r["eps"],
            "ratio<8"
            if dpp.count_signal_ratio(n, len(r["sums"]), r["eps_theta"], r["parties"]) < 8
            else "ratio>=8",
        )
        a = acc[key]
        a["median"].append(base)
        a["pipeline"].append(r["mae"])
        a["zeros"].append(float(np.mean(deg)))
        exact = _exact_counts(deg, ts)
        cands = {"exact": _spread(exact, ts, d)}
        occupied = exact > 0  # oracle: which buckets are occupied (not a reading)
        support = np.zeros(len(exact))
        support[occupied] = simplex_projection(r["sums"][occupied], n)
        cands["support-oracle"] = _spread(support, ts, d)
        for name in READINGS:
            cands[name] = reading_prior(name, r["sums"], ts, d, n, r["eps_theta"], r["parties"])
        for name, prior in cands.items():
            m = prior_median(prior)
            a[name].append(float(np.mean(np.abs(deg - m))))
            a[name + " signed"].append(m - true_med)
    for key in sorted(acc):
        a = acc[key]
        print(f"\nε = {key[0]} {key[1]}: {len(a['median'])} runs")
        base = np.array(a["median"])
        for name, vals in a.items():
            if name.endswith("signed"):
                continue
            v = np.array(vals)
            s = np.array(a.get(name + " signed", [np.nan]))
            print(
                f"  {name:11s} mean MAE {v.mean():7.4f}  excess {np.mean(v - base):+.4f}  "
                f"runs above {np.mean(v > base + 1e-9):.2f}  "
                f"median err signed {np.mean(s):+.3f} abs {np.mean(np.abs(s)):.3f}"
            )


def capture_runs(which: str, seeds: list[int], out: str) -> None:
    """``--reading main`` / ``nb-shape``: the tree's code (``degree_postprocess.
    PER_NODE_READING`` set), no patch; any other: the script's reading patched in."""
    if _settings["reading"] == "exact":  # the oracle: exact bucket counts (A_theta_cap's)
        cap._settings.update(z=None, exact=True)
        ref.dp_theta = cap.patched_dp_theta
    elif _settings["reading"] in dpp.PER_NODE_READINGS:
        dpp.PER_NODE_READING = _settings["reading"]
    elif _settings["reading"] != "main":
        dpp.search_priors = _reading  # post_process_release's look-up
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


# Helper G's evaluation set, fixed before any run on it: graph seeds 2601-2630, never used
# before; 25 graphs of n 25-150 (the weak-count band) and 5 of n 160-240 (the border).
FRESH3 = {
    "sbm-62-2x31": lambda: a2._sbm([31, 31], 0.3, 0.03, 2601),
    "sbm-105-35+70": lambda: a2._sbm([35, 70], 0.25, 0.02, 2602),
    "sbm-48-16+32": lambda: a2._sbm([16, 32], 0.5, 0.04, 2603),
    "sbm-128-4x32": lambda: a2._sbm([32] * 4, 0.25, 0.01, 2604),
    "ba-31-m2": lambda: nx.barabasi_albert_graph(31, 2, seed=2605),
    "ba-84-m3": lambda: nx.barabasi_albert_graph(84, 3, seed=2606),
    "ba-142-m4": lambda: nx.barabasi_albert_graph(142, 4, seed=2607),
    "er-34-p0.25": lambda: nx.gnp_random_graph(34, 0.25, seed=2608),
    "er-88-p0.07": lambda: nx.gnp_random_graph(88, 0.07, seed=2609),
    "er-70-p0.4": lambda: nx.gnp_random_graph(70, 0.4, seed=2610),
    "gnm-115-460": lambda: nx.gnm_random_graph(115, 460, seed=2611),
    "plc-52-m3": lambda: nx.powerlaw_cluster_graph(52, 3, 0.3, seed=2612),
    "plc-108-m2": lambda: nx.powerlaw_cluster_graph(108, 2, 0.4, seed=2613),
    "ws-40-k6": lambda: nx.watts_strogatz_graph(40, 6, 0.3, seed=2614),
    "ws-95-k4": lambda: nx.watts_strogatz_graph(95, 4, 0.2, seed=2615),
    "ws-132-k10": lambda: nx.watts_strogatz_graph(132, 10, 0.3, seed=2616),
    "rr-36-d5": lambda: nx.random_regular_graph(5, 36, seed=2617),
    "rr-110-d4": lambda: nx.random_regular_graph(4, 110, seed=2618),
    "rgg-66-0.2": lambda: nx.random_geometric_graph(66, 0.2, seed=2619),
    "rgg-118-0.13": lambda: nx.random_geometric_graph(118, 0.13, seed=2620),
    "tree-random-64": lambda: nx.random_labeled_tree(64, seed=2621),
    "bip-30+80-p0.1": lambda: nx.bipartite.random_graph(30, 80, 0.1, seed=2622),
    "caveman-6x12": lambda: nx.relaxed_caveman_graph(6, 12, 0.2, seed=2623),
    "er-26-p0.3": lambda: nx.gnp_random_graph(26, 0.3, seed=2624),
    "ba-75-m1": lambda: nx.barabasi_albert_graph(75, 1, seed=2625),
    "ba-170-m2": lambda: nx.barabasi_albert_graph(170, 2, seed=2626),
    "er-190-p0.035": lambda: nx.gnp_random_graph(190, 0.035, seed=2627),
    "ws-210-k6": lambda: nx.watts_strogatz_graph(210, 6, 0.2, seed=2628),
    "plc-230-m3": lambda: nx.powerlaw_cluster_graph(230, 3, 0.3, seed=2629),
    "rgg-240-0.09": lambda: nx.random_geometric_graph(240, 0.09, seed=2630),
}


def main() -> None:
    mode = sys.argv[1]
    if "--eps" in sys.argv:
        capture.EPS_LIST = tuple(float(e) for e in sys.argv[sys.argv.index("--eps") + 1].split(","))
    if "--reading" in sys.argv:
        _settings["reading"] = sys.argv[sys.argv.index("--reading") + 1]
    if mode == "dump":
        dump(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4])
    elif mode == "diag":
        diag(sys.argv[2])
    elif mode == "capture":
        capture_runs(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4])
    elif mode == "compare":
        cap.compare(cap._load(sys.argv[2]), cap._load(sys.argv[3]))
    else:
        raise SystemExit(f"mode: {mode!r}")


if __name__ == "__main__":
    main()
