"""``ldpfleet bench gcdp``: seed 000's Occupancy evaluation (Section 5.1), in-process.

Protocol (fixed before any privatized run; ``collector.gcdp.evaluation`` has the helpers):

* ``datatraining.txt`` is the public calibration AND training portion (eps_cal = 0, the
  seed's public-calibration mode); ``datatest.txt`` is the protected release data.
* Nodes: the five channels, min-max normalised with training-only statistics, clipped to
  [0, 1]. Released query per test window: the d = 5 channel means of ``window`` (default
  30) consecutive records, non-overlapping, never crossing a file. Protected unit: one
  clipped channel value at one timestamp (seed Table: "one clipped channel value at one
  timestamp"), Gamma(u) = {u}, so the certificate of a window mean is B_k = 1/window
  (``mean_bound``). Windows are disjoint, so each test window is one release invocation of
  eps_rel (parallel composition over windows).
* Calibration (Algorithms 1-3) on the training records: graph at tau chosen from
  ``TAU_GRID`` by validation F1 of GC-DP at eps = 1 (ties -> smaller; validation = the
  training windows, see the docs); empirical influence from masking with the query
  "displacement of a window mean by one occurrence" (column means / window); utility
  mu_k = |corr(window feature k, label)| on training windows.
* Methods (Table 4): NonPrivate, Lap-DP, Gau-DP (delta = 1e-5), Ada-DP, Risk-DP
  (scales = bounds), GC-DP. One fixed logistic classifier trained once on non-private
  training windows; test F1 (positive class, %) averaged over ``draws`` noise draws.
* Runtime and peak traced memory of one calibration-and-release pass per method at eps = 1
  (wall time without tracemalloc; memory in a separate traced pass).
* Attack AUC (Section 5.3 diagnostic, our choice since the seed does not pin it): protected
  attribute = the window's HumidityRatio mean above the training-window median; fixed
  attacker = logistic regression trained once on non-private training windows from the
  other four channels, applied to their privatized release; oriented AUC max(AUC, 1-AUC)
  averaged over the same draws as F1.

Draw generators derive from (seed, eps, draw) only: common random numbers across methods
(paired comparisons), and a cell does not depend on which other methods or budgets were
requested.
"""

from __future__ import annotations

import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from collector.gcdp import (
    ada_dp,
    allocate_budget,
    calibrate_from_data,
    empirical_influence,
    gau_dp,
    gc_dp,
    lap_dp,
    masking_deltas,
    mean_bound,
    non_private,
    release_scales,
    risk_dp,
)
from collector.gcdp.constants import EPS_REL_GRID, TAU_GRID
from collector.gcdp.evaluation import (
    f1_percent,
    fit_logistic,
    fit_normalizer,
    label_utility,
    load_occupancy,
    normalize,
    oriented_auc,
    window_means,
)
from protocol.errors import ParameterError

__all__ = ["METHODS", "SEED_AUC", "SEED_F1", "bench_gcdp", "bench_gcdp_command"]

METHODS = ("NonPrivate", "Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP")
DATASETS = ("occupancy",)
WINDOW = 30
PROTECTED = 4  # HumidityRatio: the protected attribute is its window mean > training median
ATTACK_INPUTS = [0, 1, 2, 3]  # the attacker sees the other four released channels
GAU_DELTA = 1e-5
DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "uci-occupancy"

# Seed 000, Table 8 (Occupancy, positive-class F1 %, ten draws); Table 12 runtime (s).
SEED_F1 = {
    "Lap-DP": {0.2: 83.6, 0.5: 89.2, 1.0: 93.4, 2.0: 95.2, 4.0: 96.4},
    "Gau-DP": {0.2: 84.4, 0.5: 89.9, 1.0: 93.8, 2.0: 95.6, 4.0: 96.7},
    "Ada-DP": {0.2: 88.1, 0.5: 92.3, 1.0: 95.1, 2.0: 96.3, 4.0: 97.1},
    "Risk-DP": {0.2: 89.0, 0.5: 92.8, 1.0: 95.5, 2.0: 96.6, 4.0: 97.3},
    "GC-DP": {0.2: 91.7, 0.5: 94.2, 1.0: 96.4, 2.0: 97.2, 4.0: 97.8},
}
# Seed 000, Table 10 (Occupancy, mean oriented attack AUC, ten releases).
SEED_AUC = {
    "Lap-DP": {0.2: 0.704, 0.5: 0.747, 1.0: 0.783, 2.0: 0.821, 4.0: 0.856},
    "Gau-DP": {0.2: 0.697, 0.5: 0.739, 1.0: 0.775, 2.0: 0.812, 4.0: 0.848},
    "Ada-DP": {0.2: 0.673, 0.5: 0.707, 1.0: 0.742, 2.0: 0.776, 4.0: 0.812},
    "Risk-DP": {0.2: 0.629, 0.5: 0.659, 1.0: 0.691, 2.0: 0.724, 4.0: 0.761},
    "GC-DP": {0.2: 0.591, 0.5: 0.614, 1.0: 0.637, 2.0: 0.671, 4.0: 0.713},
}
SEED_RUNTIME_S = {"Lap-DP": 0.04, "GC-DP": 0.39}
# Table 11 ablations at eps = 1: (calibration switches, Algorithm 3 overrides). "GC-DP
# (seed eta)" is the full method with the seed's literal exposure offset eta (allocation.py).
ABLATIONS = {
    "w/o Lag": ({"lag_window": 0}, {}),
    "w/o Comp.": ({"compress": False}, {}),
    "w/o Utility": ({}, {"beta_u": 0.0}),
    "w/o Risk": ({}, {"beta_r": 0.0}),
    "GC-DP": ({}, {}),
    "GC-DP (seed eta)": ({}, {"exposure_offset": 1e-8}),
}
# Seed 000, Table 11 (Occupancy Detection, eps = 1): F1 (%), oriented attack AUC.
SEED_ABLATION = {
    "w/o Lag": (95.8, 0.655),
    "w/o Comp.": (95.4, 0.628),
    "w/o Utility": (94.1, 0.614),
    "w/o Risk": (94.9, 0.682),
    "GC-DP": (96.4, 0.637),
}
SEED_PEAK_MB = {"GC-DP": 21.7}


def _rng(seed: int, method: str, eps: float, draw: int) -> np.random.Generator:
    """Common random numbers: draw k at budget eps uses the same generator for every method
    (``method`` is deliberately not part of the key), so method differences are paired
    comparisons and identical allocations give identical releases."""
    del method
    return np.random.default_rng([seed, round(eps * 1e6), draw])


def _calibrate(train_norm: np.ndarray, train_feats: np.ndarray, train_labels: np.ndarray,
               window: int, tau: float, *, lag_window: int = 3, compress: bool = True,
               allocation: dict | None = None) -> dict:  # fmt: skip
    """Algorithms 1-2 and the utility scores on the public training records.
    ``lag_window``/``compress``/``allocation`` (Algorithm 3 keyword overrides, used by the
    GC-DP release only) are the Table 11 ablation switches."""
    m = train_norm.shape[1]
    bounds = np.full(m, mean_bound(0.0, 1.0, window))
    graph = calibrate_from_data(train_norm, tau=tau, lag_window=lag_window)
    deltas = masking_deltas(lambda a: a.mean(axis=0) / window, train_norm, 0.0, 1.0)
    xi = empirical_influence(deltas, graph, compress=compress)
    return {
        "allocation": dict(allocation or {}),
        "bounds": bounds,
        "scales": release_scales(bounds, xi),
        "exposure": graph.exposure_norm,
        "utility": label_utility(train_feats, train_labels),
        "edges": [list(map(int, e)) for e in graph.edges],
    }


def _release(method: str, y: np.ndarray, cal: dict, eps: float, rng: np.random.Generator):
    b = cal["bounds"]
    common = {"low": 0.0, "high": 1.0, "rng": rng}
    if method == "NonPrivate":
        return non_private(y, 0.0, 1.0)
    if method == "Lap-DP":
        return lap_dp(y, bounds=b, eps_rel=eps, **common)
    if method == "Gau-DP":
        return gau_dp(y, bounds=b, eps=eps, delta=GAU_DELTA, **common)
    if method == "Ada-DP":
        return ada_dp(y, bounds=b, scales=cal["scales"], utility=cal["utility"], eps_rel=eps,
                      **common)  # fmt: skip
    if method == "Risk-DP":
        return risk_dp(y, bounds=b, scales=b, exposure_norm=cal["exposure"], eps_rel=eps,
                       **common)  # fmt: skip
    return gc_dp(y, bounds=b, scales=cal["scales"], utility=cal["utility"],
                 exposure_norm=cal["exposure"], eps_rel=eps, **common,
                 **cal.get("allocation", {}))  # fmt: skip


def _budgets(cal: dict, eps: float) -> np.ndarray:
    """The GC-DP (Algorithm 3) budgets of a calibration at ``eps``."""
    return allocate_budget(eps, cal["scales"], cal["utility"], cal["exposure"],
                           **cal.get("allocation", {}))  # fmt: skip


def _release_all(method, feats, cal, eps, rng) -> np.ndarray:
    out = np.array([_release(method, row, cal, eps, rng) for row in feats])
    return np.clip(out, 0.0, 1.0)  # fixed post-processing before the classifier


def _mean_f1(method, feats, labels, model, cal, eps, draws, seed, attack=None) -> tuple:
    """Mean and std of the task F1 over ``draws`` releases, and (if ``attack`` =
    (attacker, protected labels)) the mean oriented attack AUC on the SAME releases."""
    scores, aucs = [], []
    for k in range(draws):
        released = _release_all(method, feats, cal, eps, _rng(seed, method, eps, k))
        scores.append(f1_percent(labels, model.predict(released)))
        if attack is not None:
            attacker, protected = attack
            aucs.append(oriented_auc(protected, attacker.decision(released[:, ATTACK_INPUTS])))
    auc = float(np.mean(aucs)) if aucs else None
    return float(np.mean(scores)), float(np.std(scores)), auc


def _check(methods, eps_list, draws, seed, dataset) -> tuple[tuple[str, ...], tuple[float, ...]]:
    if dataset not in DATASETS:
        raise ParameterError(f"{dataset!r} is not one of {', '.join(DATASETS)}", field="dataset")
    methods = tuple(methods)
    if not methods or any(m not in METHODS for m in methods) or len(set(methods)) != len(methods):
        raise ParameterError(f"must be distinct names from {', '.join(METHODS)}", field="methods")
    eps_t = tuple(float(e) for e in eps_list)
    if not eps_t or any(not np.isfinite(e) or e <= 0 for e in eps_t):
        raise ParameterError("must be a non-empty list of finite budgets > 0", field="eps_list")
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ParameterError(f"must be an integer >= 1, got {draws!r}", field="draws")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParameterError(f"must be an integer >= 0, got {seed!r}", field="seed")
    return methods, eps_t


def bench_gcdp(
    dataset: str = "occupancy",
    methods: tuple[str, ...] | list[str] = METHODS,
    eps_list: tuple[float, ...] | list[float] = EPS_REL_GRID,
    draws: int = 10,
    seed: int = 0,
    *,
    window: int = WINDOW,
    data: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
    timing: bool = True,
) -> dict:
    """The Occupancy evaluation. ``data`` = (train_x, train_y, test_x, test_y) raw records
    (records x 5 channels, labels 0/1) replaces the files (tests use a synthetic frame)."""
    methods, eps_t = _check(methods, eps_list, draws, seed, dataset)
    if data is None:
        train_x, train_y = load_occupancy(DATA_DIR / "datatraining.txt")
        test_x, test_y = load_occupancy(DATA_DIR / "datatest.txt")
    else:
        train_x, train_y, test_x, test_y = (np.asarray(a) for a in data)
    low, high = fit_normalizer(train_x)
    train_norm = normalize(train_x, low, high)
    test_norm = normalize(test_x, low, high)
    train_f, train_l = window_means(train_norm, train_y, window)
    test_f, test_l = window_means(test_norm, test_y, window)
    model = fit_logistic(train_f, train_l)  # trained once, non-private, shared by all methods
    # fixed attribute-inference attacker, also trained once on non-private training windows
    threshold = float(np.median(train_f[:, PROTECTED]))
    attacker = fit_logistic(
        train_f[:, ATTACK_INPUTS], (train_f[:, PROTECTED] > threshold).astype(int)
    )
    protected = (test_f[:, PROTECTED] > threshold).astype(int)

    # tau: validation F1 of GC-DP at eps = 1 on the training windows; ties -> smaller.
    tau_f1 = {}
    for tau in TAU_GRID:
        cal = _calibrate(train_norm, train_f, train_l, window, tau)
        tau_f1[tau] = _mean_f1("GC-DP", train_f, train_l, model, cal, 1.0, draws, seed)[0]
    tau = max(TAU_GRID, key=lambda t: (tau_f1[t], -t))
    cal = _calibrate(train_norm, train_f, train_l, window, tau)

    f1: dict[str, dict[str, float]] = {}
    f1_std: dict[str, dict[str, float]] = {}
    auc: dict[str, dict[str, float]] = {}
    for method in methods:
        f1[method], f1_std[method], auc[method] = {}, {}, {}
        for eps in eps_t:
            mean, std, attack_auc = _mean_f1(
                method, test_f, test_l, model, cal, eps, draws, seed, (attacker, protected)
            )
            f1[method][str(eps)] = round(mean, 4)
            f1_std[method][str(eps)] = round(std, 4)
            auc[method][str(eps)] = round(attack_auc, 4)

    ablation = {}
    for name, (switches, overrides) in ABLATIONS.items():
        variant = _calibrate(train_norm, train_f, train_l, window, tau, **switches,
                             allocation=overrides)  # fmt: skip
        mean, std, attack_auc = _mean_f1(
            "GC-DP", test_f, test_l, model, variant, 1.0, draws, seed, (attacker, protected)
        )
        ablation[name] = {
            "f1": round(mean, 4),
            "f1_std": round(std, 4),
            "attack_auc": round(attack_auc, 4),
            "budgets_eps1": [round(float(v), 6) for v in _budgets(variant, 1.0)],
            "edges": variant["edges"],
            "seed_f1": SEED_ABLATION.get(name, (None, None))[0],
            "seed_attack_auc": SEED_ABLATION.get(name, (None, None))[1],
        }

    result = {
        "dataset": dataset,
        "protocol": {
            "window": window,
            "train_windows": int(train_f.shape[0]),
            "test_windows": int(test_f.shape[0]),
            "test_positive_share": round(float(test_l.mean()), 4),
            "draws": draws,
            "seed": seed,
            "classifier": "logistic regression (Newton, l2=1e-2), non-private train windows",
            "metric": "positive-class F1 (%)",
            "eps_cal": 0.0,
            "gau_delta": GAU_DELTA,
        },
        "calibration": {
            "tau": tau,
            "tau_validation_f1": {str(t): round(v, 4) for t, v in tau_f1.items()},
            "edges": cal["edges"],
            "bounds": [float(v) for v in cal["bounds"]],
            "scales": [float(v) for v in cal["scales"]],
            "utility": [round(float(v), 4) for v in cal["utility"]],
            "exposure_norm": [round(float(v), 4) for v in cal["exposure"]],
            "gcdp_budgets_eps1": [round(float(v), 6) for v in _budgets(cal, 1.0)],
        },
        "ablation_eps1": ablation,
        "f1": f1,
        "f1_std": f1_std,
        "seed_f1": {m: {str(e): v for e, v in SEED_F1[m].items()} for m in methods if m in SEED_F1},
        "attack": {
            "protected_attribute": "window HumidityRatio mean > training-window median",
            "attacker": "logistic regression on the other four released channels",
            "threshold_normalised": round(threshold, 6),
            "test_positive_share": round(float(protected.mean()), 4),
        },
        "attack_auc": auc,
        "seed_attack_auc": {
            m: {str(e): v for e, v in SEED_AUC[m].items()} for m in methods if m in SEED_AUC
        },
    }
    if timing:
        result["runtime_s"], result["peak_mem_mb"] = _timings(
            methods, train_norm, train_f, train_l, test_f, window, tau, seed
        )
        result["seed_runtime_s"] = SEED_RUNTIME_S
        result["seed_peak_mem_mb"] = SEED_PEAK_MB
    return result


def _one_pass(method, train_norm, train_f, train_l, test_f, window, tau, seed) -> None:
    """One calibration-and-release pass at eps = 1 (what each method needs)."""
    if method in ("NonPrivate", "Lap-DP", "Gau-DP"):
        cal = {"bounds": np.full(train_norm.shape[1], mean_bound(0.0, 1.0, window))}
    else:
        cal = _calibrate(train_norm, train_f, train_l, window, tau)
    _release_all(method, test_f, cal, 1.0, _rng(seed, method, 1.0, 0))


def _timings(methods, *args) -> tuple[dict[str, float], dict[str, float]]:
    runtime, memory = {}, {}
    for method in methods:
        start = time.perf_counter()
        _one_pass(method, *args)
        runtime[method] = round(time.perf_counter() - start, 4)
        tracemalloc.start()
        try:
            _one_pass(method, *args)
            memory[method] = round(tracemalloc.get_traced_memory()[1] / 2**20, 3)
        finally:
            tracemalloc.stop()
    return runtime, memory


def bench_gcdp_command(
    dataset: Annotated[str, typer.Option(help="Data set (occupancy).")] = "occupancy",
    method: Annotated[
        str, typer.Option(help="'all' or a comma list of " + ", ".join(METHODS) + ".")
    ] = "all",
    eps: Annotated[str, typer.Option(help="Comma list of release budgets.")] = "0.2,0.5,1,2,4",
    draws: Annotated[int, typer.Option(help="Noise draws per budget.")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of every draw.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON only.")] = True,
) -> None:
    """Seed 000's Occupancy evaluation: F1 and attack AUC per method and budget, runtime,
    peak memory."""
    try:
        methods = METHODS if method.strip() == "all" else tuple(
            m.strip() for m in method.split(",") if m.strip()
        )  # fmt: skip
        try:
            eps_list = tuple(float(e) for e in eps.split(",") if e.strip())
        except ValueError:
            raise ParameterError(f"not a comma list of numbers: {eps!r}", field="eps") from None
        result = bench_gcdp(dataset, methods, eps_list, draws, seed)
    except ParameterError as error:
        print(f"error: {error}", file=sys.stderr)
        raise typer.Exit(2) from None
    print(json.dumps(result, indent=None if as_json else 2))
