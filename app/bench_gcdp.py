"""``ldpfleet bench gcdp``: seed 000's evaluation (Sections 5.1-5.4), in-process.

Datasets: ``occupancy`` (below), ``intel`` and ``wisdm`` (Intel Lab and WISDM; their fixed
protocols are in ``app.gcdp_datasets`` and ``docs/gcdp-datasets.md``). One loop serves
all three: tau selection, methods x budgets x draws (F1 + attack AUC on the same releases),
the Table 11 ablations at eps = 1, runtime and memory.

Occupancy protocol (fixed before any privatized run; ``collector.gcdp.evaluation`` has the
helpers):

* ``datatraining.txt`` is the public calibration AND training portion (eps_cal = 0, the
  seed's public-calibration mode); ``datatest.txt`` is the protected release data.
* Nodes: the five channels, clipped to Tukey's fences of the training values (within the
  training range) and scaled to [0, 1] (``Readings.clip``; docs/gcdp.md "Readings").
  Released query per test window: the d = 5 channel means of ``window`` (default
  30) consecutive records, non-overlapping, never crossing a file. Protected unit: one
  clipped channel value at one timestamp (seed Table: "one clipped channel value at one
  timestamp"), Gamma(u) = {u}, so the certificate of a window mean is B_k = 1/window
  (``mean_bound``). Windows are disjoint, so each test window is one release invocation of
  eps_rel (parallel composition over windows).
* Calibration (Algorithms 1-3) on the training records: graph at tau chosen from
  ``TAU_GRID`` by validation F1 of GC-DP at eps = 1 (ties -> smaller; validation = the
  training windows, see the docs); empirical influence from Algorithm 2's mask on one
  occurrence per window mean, as the fleet path (``Readings.xi_mask``; "node" masks every
  value of the channel in a window, the literal reading of seed §4.3; docs/gcdp.md
  "Masking-delta scale"); utility
  mu_k = the normalised drop of the fixed classifier's training-window F1 when coordinate k
  is masked (seed §4.4; ``Readings.utility``). Gau-DP's l2 certificate is the
  occurrence-level one, max_k B_k (``Readings.gau_l2``).
* Methods (Table 4): NonPrivate, Lap-DP, Gau-DP (delta = 1e-5), Ada-DP, Risk-DP
  (scales = bounds), GC-DP. One fixed logistic classifier trained once on non-private
  training windows; test F1 (positive class, %) averaged over ``draws`` noise draws.
* Runtime and peak traced memory of one calibration-and-release pass per method at eps = 1
  (wall time without tracemalloc; memory in a separate traced pass).
* Attack AUC (Section 5.3 diagnostic, our choice since the seed does not pin it): protected
  attribute = the window's HumidityRatio mean above the training-window median; fixed
  attacker (``Readings.attack``, kept ``"temporal"``) = logistic regression trained once on
  non-private training windows from the other four channels, each window averaged with its
  3 neighbours on each side in time, applied to the same average of the privatized release;
  oriented AUC max(AUC, 1-AUC) averaged over the same draws as F1. ``noise_law`` gives the
  informed attackers (and the oracles) each method's noise from the public theta.
* Oracles (diagnostics, Occupancy): ``bayes_bound_f1`` per method and
  ``best_allocation_bound_f1`` bound what a classifier of a release can reach (they know
  the test windows and labels); above ``ORACLE_WINDOWS`` test windows they score a seeded
  stratified subset (``oracle_windows``).

Draw generators derive from (seed, eps, draw) only: common random numbers across methods
(paired comparisons), and a cell does not depend on which other methods or budgets were
requested.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from ldpfleet.app.bench_commands import GCDP_DATASETS as DATASETS
from ldpfleet.app.bench_commands import (
    GCDP_DRAWS_MAX,
    GCDP_EPS_MAX,
    GCDP_EPS_MIN,
    GCDP_SEED_MAX,
    bench_gcdp_command,
)
from ldpfleet.app.bench_commands import GCDP_METHODS as METHODS
from ldpfleet.app.gcdp_datasets import (
    ATTACK_LAG,
    DATA_ROOT,
    READINGS,
    Prepared,
    Readings,
    prepare,
)
from ldpfleet.app.suggest import near_miss
from ldpfleet.collector.gcdp import (
    ada_dp,
    allocate_budget,
    calibrate_from_data,
    empirical_influence,
    gau_dp,
    gaussian_grid,
    gc_dp,
    l2_certificate,
    lap_dp,
    laplace_release,
    non_private,
    release_scales,
    risk_dp,
    uniform_allocation,
)
from ldpfleet.collector.gcdp.constants import EPS_REL_GRID, TAU_GRID
from ldpfleet.collector.gcdp.evaluation import (
    CHANNELS,
    NoiseLaw,
    f1_percent,
    informed_attack_scores,
    informed_gaussian_scores,
    oriented_auc,
    temporal_smooth,
)
from ldpfleet.devices.sources import check_decimal
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.validate import integer_in

__all__ = [
    "METHODS",
    "SEED_AUC",
    "SEED_F1",
    "SEED_TABLES",
    "Readings",
    "bench_gcdp",
    "bench_gcdp_command",
    "chosen_tau",
    "select_tau",
    "tau_margin",
    "tau_validation_draws",
]

# The command line ``bench_gcdp_command``, and METHODS and DATASETS it names, are in
# app/bench_commands.py: its ``--help`` imports nothing heavy.

WINDOW = 30
GAU_DELTA = 1e-5
DATA_DIR = DATA_ROOT / "uci-occupancy"

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

_PRIVATE = ("Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP")
_T12 = ("Lap-DP", "Ada-DP", "Risk-DP", "GC-DP")  # Table 12 columns (without GC-DP-Cache)


def _by_eps(rows: list[tuple[float, ...]]) -> dict[str, dict[float, float]]:
    """Seed table rows (one per eps in EPS_REL_GRID, columns = _PRIVATE) -> method -> eps."""
    columns = zip(*rows, strict=True)
    return {
        m: dict(zip(EPS_REL_GRID, c, strict=True)) for m, c in zip(_PRIVATE, columns, strict=True)
    }


def _ablation(f1: tuple[float, ...], auc: tuple[float, ...]) -> dict[str, tuple[float, float]]:
    return dict(zip(list(ABLATIONS)[:5], zip(f1, auc, strict=True), strict=True))


# Seed 000 per dataset: Table 7 (WISDM macro-F1) / Table 8 (Intel Lab anomaly F1), Table 10
# (attack AUC; its eps = 1 row is Table 9), Table 11 (ablations at eps = 1), Table 12.
SEED_TABLES = {
    "occupancy": {"f1": SEED_F1, "auc": SEED_AUC, "ablation": SEED_ABLATION,
                  "runtime_s": SEED_RUNTIME_S, "peak_mem_mb": SEED_PEAK_MB},
    "intel": {
        "f1": _by_eps([(68.7, 69.5, 73.8, 75.1, 79.6), (76.4, 77.2, 80.9, 81.8, 84.5),
                       (81.2, 81.9, 84.4, 85.1, 86.7), (84.8, 85.2, 87.0, 87.5, 89.1),
                       (87.6, 88.0, 89.5, 89.9, 91.3)]),
        "auc": _by_eps([(0.719, 0.711, 0.684, 0.641, 0.603), (0.763, 0.754, 0.721, 0.674, 0.628),
                        (0.801, 0.792, 0.756, 0.704, 0.652), (0.838, 0.829, 0.793, 0.741, 0.689),
                        (0.872, 0.864, 0.828, 0.779, 0.731)]),
        "ablation": _ablation((85.3, 84.8, 83.6, 84.2, 86.7), (0.681, 0.642, 0.631, 0.699, 0.652)),
        "runtime_s": dict(zip(_T12, (0.18, 0.41, 1.28, 2.46), strict=True)),
        "peak_mem_mb": dict(zip(_T12, (27.6, 36.9, 52.8, 61.3), strict=True)),
    },
    "wisdm": {
        "f1": _by_eps([(54.9, 55.6, 59.8, 60.7, 65.2), (63.7, 64.1, 68.6, 69.4, 72.9),
                       (68.4, 69.2, 72.6, 73.5, 75.8), (72.1, 72.8, 74.9, 75.4, 77.1),
                       (74.8, 75.1, 76.4, 76.8, 78.2)]),
        "auc": _by_eps([(0.672, 0.664, 0.648, 0.617, 0.582), (0.713, 0.705, 0.681, 0.644, 0.604),
                        (0.748, 0.739, 0.711, 0.674, 0.621), (0.782, 0.773, 0.744, 0.703, 0.653),
                        (0.817, 0.808, 0.779, 0.738, 0.692)]),
        "ablation": _ablation((74.2, 73.6, 72.1, 73.0, 75.8), (0.648, 0.613, 0.602, 0.671, 0.621)),
        "runtime_s": dict(zip(_T12, (0.15, 0.36, 1.04, 2.18), strict=True)),
        "peak_mem_mb": dict(zip(_T12, (24.1, 33.5, 48.7, 57.4), strict=True)),
    },
}  # fmt: skip


def _rng(seed: int, method: str, eps: float, draw: int) -> np.random.Generator:
    """Common random numbers: draw k at budget eps uses the same generator for every method
    (``method`` is deliberately not part of the key), so method differences are paired
    comparisons and identical allocations give identical releases."""
    del method
    return np.random.default_rng([seed, round(eps * 1e6), draw])


def _calibration(nodes, masking, cmap, bounds, utility, tau, *, lag_window: int = 3,
                 compress: bool = True, allocation: dict | None = None,
                 neighbour_delta: str = "coordinate", direct: bool = True) -> dict:  # fmt: skip
    """Algorithms 1-2 on the public calibration nodes, with the fixed certificate ``bounds``
    and utility. ``lag_window``/``compress``/``allocation`` (Algorithm 3 keyword overrides,
    used by the GC-DP release only) are the Table 11 ablation switches; ``neighbour_delta``
    is the ``xi_neighbours`` reading of the expansion term (``empirical_influence``).
    ``direct``: also Risk-DP's ``direct_scales`` (xi without the expansion term, a second
    ``empirical_influence`` pass), which only the ``risk_scales=direct`` reading reads;
    False leaves the key out (``_calibrate_prepared`` asks for it only under that reading)."""
    graph = calibrate_from_data(nodes, tau=tau, lag_window=lag_window)
    deltas = masking()
    xi = empirical_influence(deltas, graph, cmap, compress=compress,
                             neighbour_delta=neighbour_delta)  # fmt: skip
    cal = {
        "allocation": dict(allocation or {}),
        "bounds": bounds,
        "scales": release_scales(bounds, xi),
        "exposure": graph.exposure_norm,
        "utility": utility,
        "edges": [list(map(int, e)) for e in graph.edges],
        "coordinate_map": cmap,
    }
    if direct:  # Risk-DP's "direct" scales
        cal["direct_scales"] = release_scales(
            bounds, empirical_influence(deltas, graph, cmap, gamma=0.0)
        )
    return cal


def _calibrate_prepared(prep: Prepared, tau: float, *, fresh_utility: bool = False,
                        **switches) -> dict:  # fmt: skip
    """Algorithms 1-3's inputs for ``prep`` at ``tau``; ``fresh_utility`` recomputes mu_k
    (the masking utility on the validation windows) inside the pass, as a timed pass must."""
    fresh = fresh_utility and prep.compute_utility is not None
    utility = prep.compute_utility() if fresh else prep.utility
    # the xi_neighbours reading (docs/gcdp.md, "Masking-delta scale"); "coordinate" is the
    # seed's literal delta_jk, the default wherever the Readings have no such field
    neighbour = getattr(prep.readings, "xi_neighbours", "coordinate")
    # Risk-DP's direct scales only where its reading reads them (``_risk_scales``)
    direct = getattr(prep.readings, "risk_scales", "bounds") == "direct"
    cal = _calibration(prep.train_nodes, prep.masking, prep.coordinate_map, prep.bounds,
                       utility, tau, neighbour_delta=neighbour, direct=direct,
                       **switches)  # fmt: skip
    cal["gau_l2"] = prep.gau_l2
    cal["gau_changed"] = prep.gau_changed
    cal["readings"] = prep.readings
    return cal


def select_tau(
    prep: Prepared, draws: int, seed: int, tick: Callable[[], None] = lambda: None
) -> tuple[float, dict[float, float]]:
    """Table 5's rule: tau from ``TAU_GRID`` maximising the mean GC-DP F1 at eps = 1 on the
    validation windows over ``draws`` releases (generator stream 2); ties -> smaller. Under
    ``split = "refit"`` the choice is made on ``prep.selection`` (the held-out protocol).

    Returns:
        ``(tau, {tau: mean validation F1})`` (``tau_validation_draws``, ``chosen_tau``)."""
    return chosen_tau(tau_validation_draws(prep, draws, seed, tick))


def tau_validation_draws(
    prep: Prepared, draws: int, seed: int, tick: Callable[[], None] = lambda: None
) -> dict[float, np.ndarray]:
    """The draws ``select_tau`` scores: each tau of ``TAU_GRID``'s GC-DP F1 at eps = 1 on
    the validation windows (of ``prep.selection`` under ``split = "refit"``), one per draw
    k, generator key (seed, 1e6, k, 2): every tau's draw k shares its key (paired).

    Returns:
        ``{tau: array of the ``draws`` F1 values}``, ``TAU_GRID`` order (``tick`` after each)."""
    sel = prep.selection or prep
    val_f, val_l = sel.validation_windows
    rows = {}
    for tau in TAU_GRID:
        cal = _calibrate_prepared(sel, tau)
        scores: list[float] = []
        _mean_f1("GC-DP", sel, val_f, val_l, cal, 1.0, draws, seed, None, 2, scores=scores)
        rows[tau] = np.array(scores)
        tick()
    return rows


def chosen_tau(rows: dict[float, np.ndarray]) -> tuple[float, dict[float, float]]:
    """Table 5's rule on ``tau_validation_draws``' rows: the tau of the highest mean F1,
    ties -> smaller.

    Returns:
        ``(tau, {tau: mean F1 over the draws})``."""
    scores = {tau: float(np.mean(row)) for tau, row in rows.items()}
    return max(scores, key=lambda t: (scores[t], -t)), scores


def tau_margin(rows: dict[float, np.ndarray], tau: float) -> dict:
    """How firmly the draws choose ``tau`` (results ``calibration.tau_margin``): the
    runner-up (the best other tau of the grid, ties -> smaller) among those whose draws
    differ from ``tau``'s (``same_draws``: the taus every draw of which scored as ``tau``'s,
    the same choice on these draws), the mean F1 difference over the paired draws and its
    standard error (sd of the differences, ddof 1, / sqrt(draws); None with one draw). The
    choice is within noise, another ``--seed`` likely choosing another tau, when the
    difference is below two standard errors (``note``): over seeds 0..19 on the shipped
    files the chosen tau took four values (docs/preregistration/F-tau-spread.md).

    Returns:
        ``{"runner_up", "f1_difference", "standard_error", "same_draws", "note"}``."""
    chosen = rows[tau]
    same = [t for t in rows if t != tau and np.array_equal(rows[t], chosen)]
    others = [t for t in rows if t != tau and t not in same]
    out = {"runner_up": None, "f1_difference": None, "standard_error": None,
           "same_draws": same, "note": None}  # fmt: skip
    if not others:
        return out
    means = {t: float(np.mean(rows[t])) for t in others}
    runner = max(others, key=lambda t: (means[t], -t))
    diff = chosen - rows[runner]
    se = float(np.std(diff, ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else None
    out.update(runner_up=runner, f1_difference=round(float(np.mean(diff)), 4),
               standard_error=None if se is None else round(se, 4))  # fmt: skip
    if se is None or float(np.mean(diff)) < 2.0 * se:
        out["note"] = (
            f"tau {tau} beats {runner} by less than two standard errors of its "
            f"{diff.size} validation draws: another --seed may choose {runner}"
        )
    return out


# what ``protocol.gau_sampler`` says of each ``gau_sigma`` reading (it said "zCDP accounting"
# whatever the reading before 2026-12-05)
GAU_CALIBRATION_NAMES = {
    "zcdp": "zCDP accounting",
    "classic": "classic sigma (raised to the zCDP one where smaller)",
    "analytic": "Balle-Wang's continuous sigma (not certified for this sampler)",
    "analytic_discrete": "the exact discrete-Gaussian curve (analytic calibration, CKS Thm 7)",
}


def gau_calibration(readings: Readings, changed: int) -> str:
    """Gau-DP's sigma rule: ``readings.gau_sigma``, except that the exact discrete curve
    (``"analytic_discrete"``, one changed coordinate) falls back to ``"zcdp"`` where one
    protected unit moves ``changed > 1`` coordinates (WISDM; ``gau_l2="sum"``)."""
    if readings.gau_sigma == "analytic_discrete" and changed > 1:
        return "zcdp"
    return readings.gau_sigma


def _risk_scales(cal: dict, readings: Readings) -> np.ndarray:
    """Risk-DP's scale numerators under ``readings.risk_scales``: the certificates B
    (kept), GC-DP's max(B, xi), or max(B, xi) without xi's graph-compressed expansion."""
    if readings.risk_scales == "gcdp":
        return cal["scales"]
    if readings.risk_scales == "direct":
        return cal["direct_scales"]
    return cal["bounds"]


def _release(method: str, y: np.ndarray, cal: dict, eps: float, rng: np.random.Generator):
    b = cal["bounds"]
    common = {"low": 0.0, "high": 1.0, "rng": rng}
    if method == "NonPrivate":
        return non_private(y, 0.0, 1.0)
    if method == "Lap-DP":
        return lap_dp(y, bounds=b, eps_rel=eps, **common)
    readings = cal.get("readings", READINGS)
    if method == "Gau-DP":
        delta = float(readings.gau_delta)  # GAU_DELTA unless the gau_delta reading says
        return gau_dp(y, bounds=b, eps=eps, delta=delta, l2_sensitivity=cal.get("gau_l2"),
                      changed_coordinates=cal.get("gau_changed"),
                      calibration=gau_calibration(readings, cal.get("gau_changed") or y.shape[-1]),
                      **common)  # fmt: skip
    if method == "Ada-DP":
        return ada_dp(y, bounds=b, scales=cal["scales"], utility=cal["utility"], eps_rel=eps,
                      **common)  # fmt: skip
    if method == "Risk-DP":
        scales = _risk_scales(cal, readings)
        offset = {"exposure_offset": 1e-8} if readings.risk_offset == "eta" else {}
        return risk_dp(y, bounds=b, scales=scales, exposure_norm=cal["exposure"], eps_rel=eps,
                       coordinate_map=cal.get("coordinate_map"), **common,
                       **offset)  # fmt: skip
    return gc_dp(y, bounds=b, scales=cal["scales"], utility=cal["utility"],
                 exposure_norm=cal["exposure"], eps_rel=eps, **common,
                 coordinate_map=cal.get("coordinate_map"),
                 **cal.get("allocation", {}))  # fmt: skip


def _budgets(cal: dict, eps: float) -> np.ndarray:
    """The GC-DP (Algorithm 3) budgets of a calibration at ``eps``."""
    return allocate_budget(eps, cal["scales"], cal["utility"], cal["exposure"],
                           cal.get("coordinate_map"), **cal.get("allocation", {}))  # fmt: skip


def printed_budgets(budgets: np.ndarray, digits: int = 6) -> list[float]:
    """``budgets`` rounded to ``digits`` decimals so that the printed parts add up, as
    decimals, to their total rounded the same way (largest remainders take the last units):
    rounded one by one, six budgets of 1/6 printed 0.166667 each, summing to 1.000002,
    which read as overspending the window budget."""
    scale = 10**digits
    exact = np.asarray(budgets, dtype=float) * scale
    units = np.floor(exact).astype(np.int64)
    short = round(float(exact.sum())) - int(units.sum())
    if short > 0:
        units[np.argsort(-(exact - units), kind="stable")[:short]] += 1
    return [round(int(u) / scale, digits) for u in units]


def noise_law(method: str, cal: dict, eps: float) -> NoiseLaw:
    """The noise law of ``method``'s release at ``eps`` under ``cal`` (what ``_release``
    draws, computed from the public theta alone): Laplace b_k = s_k / eps_k for the pure-eps
    methods, Gau-DP's sigma on every coordinate, zeros for NonPrivate. The informed
    attacker's knowledge; tests hold it against the releases' empirical noise."""
    b = np.asarray(cal["bounds"], dtype=float)
    d = b.size
    readings = cal.get("readings", READINGS)
    if method == "NonPrivate":
        return NoiseLaw("laplace", np.zeros(d))
    if method == "Gau-DP":
        sens = l2_certificate(b)
        if cal.get("gau_l2") is not None:
            sens = min(float(cal["gau_l2"]), sens)
        changed = d if cal.get("gau_changed") is None else cal["gau_changed"]
        rule = gau_calibration(readings, changed)
        grid = gaussian_grid(eps, float(readings.gau_delta), sens, changed, rule)
        return NoiseLaw("gaussian", np.full(d, grid.sigma))
    if method == "Lap-DP":
        scales, budgets = b, uniform_allocation(eps, d)
    elif method == "Ada-DP":
        scales = np.asarray(cal["scales"], dtype=float)
        budgets = allocate_budget(eps, scales, cal["utility"], np.zeros(d), None, beta_r=0.0)
    elif method == "Risk-DP":
        scales = np.asarray(_risk_scales(cal, readings), dtype=float)
        offset = {"exposure_offset": 1e-8} if readings.risk_offset == "eta" else {}
        budgets = allocate_budget(eps, scales, np.zeros(d), cal["exposure"],
                                  cal.get("coordinate_map"), beta_u=0.0, **offset)  # fmt: skip
    else:
        scales, budgets = np.asarray(cal["scales"], dtype=float), _budgets(cal, eps)
    return NoiseLaw("laplace", scales / np.asarray(budgets, dtype=float))


def _attack_scores(method, prep: Prepared, cal, eps, released, train_rel, rows):
    """The attacker's (decision values, predictions) on ``released`` (clipped, windows in
    time order) under ``prep.readings.attack``; ``rows`` selects the scored windows."""
    readings = prep.readings
    inputs = prep.attack_inputs
    if readings.attack.startswith("informed"):
        law = noise_law(method, cal, eps)
        seen = released if rows is None else released[rows]
        law = NoiseLaw(law.kind, law.scale[inputs])
        scorer = (
            informed_attack_scores if readings.attack == "informed" else informed_gaussian_scores
        )
        score = scorer(seen[:, inputs], prep.train_f[:, inputs], prep.train_protected, law)
        return score, (score >= 0.0).astype(int)
    attacker = prep.attacker
    if readings.attack == "temporal":
        released = temporal_smooth(released, ATTACK_LAG)
        attacker = prep.temporal_attacker
        if readings.attacker_fit == "private":
            train_rel = temporal_smooth(train_rel, ATTACK_LAG)
    if readings.attacker_fit == "private":
        attacker = prep.fit_attacker(train_rel[:, inputs], prep.train_protected)
    seen = (released if rows is None else released[rows])[:, inputs]
    return attacker.decision(seen), attacker.predict(seen)


def _release_all(method, feats, cal, eps, rng) -> np.ndarray:
    """Every window released with the same theta (one invocation per row, batched)."""
    out = _release(method, np.asarray(feats, dtype=float), cal, eps, rng)
    return np.clip(out, 0.0, 1.0)  # fixed post-processing before the classifier


def _draw(method, prep: Prepared, feats, labels, cal, eps, rng_key, attack) -> tuple:
    """One release of ``feats``: (task score, oriented attack AUC, attack F1 as a fraction);
    the attack entries are None without ``attack`` = (protected labels, test rows). Under
    ``task_fit`` / ``attacker_fit = "private"`` the classifier / attacker is refitted on a
    release of the training windows by the same method and budget (generator key + (1,))."""
    seed, k, stream = rng_key
    key = [seed, round(eps * 1e6), k] + ([stream] if stream else [])
    released = _release_all(method, feats, cal, eps, np.random.default_rng(key))
    readings = prep.readings
    private_fit = "private" in (readings.task_fit, readings.attacker_fit)
    if private_fit and method != "NonPrivate":
        train_key = [seed, round(eps * 1e6), k, 1] + ([stream] if stream else [])
        train_rel = _release_all(method, prep.train_f, cal, eps, np.random.default_rng(train_key))
    else:
        train_rel = prep.train_f
    model = prep.model
    if readings.task_fit == "private":
        model = prep.fit_task(train_rel, prep.train_l)
    pred = np.asarray(model.predict(released))
    score, one = prep.metric(labels, pred), _one_class(pred)
    if attack is None:
        return score, None, None, one
    protected, rows = attack
    decision, predicted = _attack_scores(method, prep, cal, eps, released, train_rel, rows)
    auc = oriented_auc(protected, decision)
    return score, auc, f1_percent(protected, predicted) / 100.0, one


def _one_class(pred: np.ndarray) -> int | None:
    """The class every window was predicted, or None when the predictions differ."""
    classes = np.unique(pred)
    return int(classes[0]) if classes.size == 1 else None


# how a one-class prediction reads, by data set (default: "always class c")
CLASS_NAMES = {
    "occupancy": {1: "always occupied", 0: "never occupied"},
    "intel": {1: "always anomalous", 0: "never anomalous"},
}


def collapse_note(one_class: list[int | None], names: dict[int, str]) -> str | None:
    """Says when draws of a method predicted one class for every window (``one_class``:
    each draw's class, or None), whose score is then that of a constant prediction (the F1
    of "always occupied", or 0) rather than of the release; None when no draw did."""
    hits = [c for c in one_class if c is not None]
    if not hits:
        return None
    which = ", ".join(names.get(c, f"always class {c}") for c in sorted(set(hits)))
    return (
        f"{len(hits)} of {len(one_class)} draws predict one class for every window "
        f"({which}): such a draw's score is that of a constant prediction"
    )


def _mean_f1(method, prep: Prepared, feats, labels, cal, eps, draws, seed, attack=None,
             stream: int = 0, scores: list | None = None) -> tuple:  # fmt: skip
    """Mean and std of the task metric over ``draws`` releases, (with ``attack``) the
    mean oriented attack AUC and attack F1 on the SAME releases (None without), and each
    draw's one predicted class (None: both classes predicted; ``collapse_note``). Draw k's
    generator is keyed (seed, eps, k) for the test windows (``stream`` 0, as ``_rng``) and
    (seed, eps, k, stream) otherwise (2: validation), so validation noise is independent.
    ``scores``: a list that receives each draw's task metric (``tau_validation_draws``)."""
    rows = [_draw(method, prep, feats, labels, cal, eps, (seed, k, stream), attack)
            for k in range(draws)]  # fmt: skip
    scores = [] if scores is None else scores
    scores.extend(r[0] for r in rows)
    auc = float(np.mean([r[1] for r in rows])) if attack is not None else None
    attack_f1 = float(np.mean([r[2] for r in rows])) if attack is not None else None
    one_class = [r[3] for r in rows]
    return float(np.mean(scores)), float(np.std(scores)), auc, attack_f1, one_class


def bayes_bound_f1(prep: Prepared, eps: float, draws: int, seed: int, method: str = "Lap-DP",
                   cal: dict | None = None) -> float:  # fmt: skip
    """Diagnostic: mean F1 (%) of an oracle on ``method``'s releases of the test windows
    (default Lap-DP; ``cal`` the calibration of an adaptive method). For each release it
    scores every window by the likelihood ratio of the two classes, each class being the
    EMPIRICAL mixture of the clean test windows of that class convolved with the release
    noise (``noise_law``: Laplace ``s_k / eps_k`` or Gau-DP's Gaussian, unclipped), and
    takes the best threshold on the test labels. It knows what no fair classifier knows
    (the test windows' clean values, their labels, the threshold), so it bounds from above
    what a classifier of that method's release can reach (generator key (seed, eps, draw,
    3))."""
    cal = {"bounds": prep.bounds, "gau_l2": prep.gau_l2, "gau_changed": prep.gau_changed,
           "readings": prep.readings, **(cal or {})}  # fmt: skip
    law = noise_law(method, cal, eps)
    x, y = oracle_windows(prep, seed)
    scores = []
    for k in range(draws):
        rng = np.random.default_rng([seed, round(eps * 1e6), k, 3])
        released = _release(method, x, cal, eps, rng)
        scores.append(_oracle_f1(x, y, law, released))
    return float(np.mean(scores))


# the oracles compare every release with every clean window (n x n x d per release, ~200
# releases a run): above this many test windows they score a seeded stratified subset (a
# 200,000-record file, 6,666 windows, ran > 5 CPU minutes in 3.9 GB)
ORACLE_WINDOWS = 500


def oracle_windows(prep: Prepared, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The test windows and labels the oracles score: all of them when there are at most
    ``ORACLE_WINDOWS``, else ``ORACLE_WINDOWS`` of them drawn without replacement by the
    generator keyed (seed, 4), each class in proportion to its share (at least one window
    of each), kept in time order. The same for every method, budget and draw."""
    x, y = prep.test_f, np.asarray(prep.test_l)
    n = y.size
    if n <= ORACLE_WINDOWS:
        return x, y
    rng = np.random.default_rng([seed, 4])
    classes = np.unique(y)
    counts = {c: max(1, round(ORACLE_WINDOWS * float(np.mean(y == c)))) for c in classes}
    counts[classes[-1]] = ORACLE_WINDOWS - sum(counts[c] for c in classes[:-1])
    picked = [rng.choice(np.flatnonzero(y == c), size=counts[c], replace=False) for c in classes]
    rows = np.sort(np.concatenate(picked))
    return x[rows], y[rows]


def oracle_windows_note(prep: Prepared) -> dict:
    """Results ``oracle_windows``: how many test windows the oracles scored, of how many."""
    n = int(np.asarray(prep.test_l).size)
    return {
        "windows": min(n, ORACLE_WINDOWS),
        "of": n,
        "subset": None
        if n <= ORACLE_WINDOWS
        else (
            f"a seeded stratified subset of {ORACLE_WINDOWS} windows (generator (seed, 4)): "
            "the oracles cost n x n x d per release"
        ),
    }


def _oracle_f1(x: np.ndarray, y: np.ndarray, law: NoiseLaw, released: np.ndarray) -> float:
    """The oracle's F1 (%) on one release of the windows ``x`` (labels ``y``)."""
    if y.min() == y.max():
        return float("nan")
    scale = np.maximum(np.asarray(law.scale, dtype=float), 1e-12)
    diff = (released[:, None, :] - x[None, :, :]) / scale
    loglik = -(np.abs(diff) if law.kind == "laplace" else 0.5 * diff**2).sum(axis=2)
    by_class = [_log_mean_exp(loglik[:, y == c]) for c in (0, 1)]
    return best_threshold_f1(y, by_class[1] - by_class[0])


def best_threshold_f1(labels: np.ndarray, scores: np.ndarray) -> float:
    """max over thresholds t of the positive-class F1 (%) of ``scores >= t`` (each distinct
    score a threshold; vectorised: F1 = 2 TP / (predicted + actual positives))."""
    y = np.asarray(labels).astype(int)
    order = np.argsort(-np.asarray(scores, dtype=float), kind="mergesort")
    ranked = np.asarray(scores, dtype=float)[order]
    tp = np.cumsum(y[order])
    cut = np.flatnonzero(np.append(ranked[1:] != ranked[:-1], True))  # last of each tie
    if y.sum() == 0:
        return 0.0
    return float(np.max(200.0 * tp[cut] / (cut + 1 + y.sum())))


def oracle_allocations(eps: float, d: int) -> list[np.ndarray]:
    """The budget splits the best-allocation oracle tries: uniform, all of the budget above
    Algorithm 3's floor eps_min = eps / (100 d) on one coordinate, or halved between two."""
    floor = eps / (100 * d)
    free = eps - d * floor
    out = [np.full(d, eps / d)]
    for a in range(d):
        for b in range(a, d):
            split = np.full(d, floor)
            split[a] += free / 2
            split[b] += free / 2
            out.append(split)
    return out


def best_allocation_bound_f1(prep: Prepared, eps: float, draws: int, seed: int) -> dict:
    """Diagnostic: the oracle of ``bayes_bound_f1`` on Laplace releases with scales B_k and
    each split of ``oracle_allocations`` (every one sums to eps, so each is an eps-DP
    release under the certificates); returns the best mean F1 (%) and its split. It bounds
    what any pure-eps method that only moves budget between coordinates in that family
    (Lap-DP, and near Ada-DP / Risk-DP / GC-DP's shapes) can reach on these windows."""
    bounds = np.asarray(prep.bounds, dtype=float)
    x, y = oracle_windows(prep, seed)
    best = (-1.0, None)
    for split in oracle_allocations(eps, bounds.size):
        law = NoiseLaw("laplace", bounds / split)
        scores = []
        for k in range(draws):
            rng = np.random.default_rng([seed, round(eps * 1e6), k, 3])
            released = laplace_release(x, bounds=bounds, scales=bounds, budgets=split,
                                       eps_rel=eps, low=0.0, high=1.0, rng=rng)  # fmt: skip
            scores.append(_oracle_f1(x, y, law, released))
        best = max(best, (float(np.mean(scores)), split), key=lambda t: t[0])
    return {"f1": round(best[0], 4), "budgets": printed_budgets(best[1])}


def _log_mean_exp(a: np.ndarray) -> np.ndarray:
    top = a.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(a - top).mean(axis=1, keepdims=True)))[:, 0]


def _counter(progress, total: int) -> Callable[[], None]:
    """``tick()`` reporting ``progress(done, total)`` after each cell (no-op without one)."""
    state = {"done": 0}

    def tick() -> None:
        state["done"] += 1
        if progress is not None:
            progress(state["done"], total)

    return tick


def _check(methods, eps_list, draws, seed, dataset) -> tuple[tuple[str, ...], tuple[float, ...]]:
    if dataset not in DATASETS:
        raise ParameterError(
            f"{dataset!r} is not one of {', '.join(DATASETS)}{near_miss(dataset, DATASETS)}",
            field="dataset",
            limit=f"one of {', '.join(DATASETS)}",
            value=dataset,
        )
    methods = method_names(methods, METHODS)
    eps_t = _check_budgets(eps_list)
    integer_in(draws, "draws", 1, GCDP_DRAWS_MAX)
    integer_in(seed, "seed", 0, GCDP_SEED_MAX)
    return methods, eps_t


def method_names(methods, known: tuple[str, ...]) -> tuple[str, ...]:
    """``methods`` as a tuple of distinct names from ``known``, else a ``ParameterError``
    (field ``methods``) naming the first unknown or repeated name, with the known name it
    matches but for case and punctuation (``gcdp`` -> 'GC-DP'; it said only "must be
    distinct names from ..." for a name that was not repeated but misspelt)."""
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    limit = f"distinct names from {', '.join(known)}"
    if not methods:
        raise ParameterError(f"must name at least one of {', '.join(known)}, got none",
                             field="methods", limit=limit, value=methods)  # fmt: skip
    for i, name in enumerate(methods):
        if name not in known:
            folded = {_fold(k): k for k in known}
            hint = folded.get(_fold(name))
            hint = f" (did you mean {hint!r}?)" if hint else near_miss(name, known)
            raise ParameterError(
                f"{name!r} is not one of {', '.join(known)}{hint}; names are case-sensitive",
                field="methods", limit=limit, value=name,
            )  # fmt: skip
        if name in methods[:i]:
            raise ParameterError(
                f"must be distinct names from {', '.join(known)}: {name!r} is given twice",
                field="methods", limit=limit, value=name,
            )  # fmt: skip
    return methods


def _fold(name: object) -> str:
    """``name`` without case, '-', '_' or spaces (``Gc_dp`` and ``GC-DP`` fold alike)."""
    return "".join(c for c in str(name).casefold() if c not in "-_ ")


def _check_budgets(eps_list) -> tuple[float, ...]:
    """The release budgets: a non-empty list of finite numbers in [GCDP_EPS_MIN,
    GCDP_EPS_MAX], distinct to 6 decimals (a draw's generator keys its budget to 6
    decimals, and the tables key it by value: a repeated budget was one column, silently)."""
    eps_t = tuple(float(e) for e in eps_list)
    if not eps_t:
        raise ParameterError(
            "must be a non-empty list of budgets, got none",
            field="eps_list",
            limit="a non-empty list of budgets",
            value=eps_t,
        )
    keys: dict[int, float] = {}
    for e in eps_t:
        if not (np.isfinite(e) and GCDP_EPS_MIN <= e <= GCDP_EPS_MAX):
            raise ParameterError(
                f"must be budgets in [{GCDP_EPS_MIN:g}, {GCDP_EPS_MAX:g}], got {e!r}",
                field="eps_list",
                limit=f"budgets in [{GCDP_EPS_MIN:g}, {GCDP_EPS_MAX:g}]",
                value=e,
            )
        key = round(e * 1e6)
        if key in keys:
            raise ParameterError(
                f"must be distinct budgets (to 6 decimals), got {keys[key]!r} and {e!r}",
                field="eps_list",
                limit="distinct budgets (to 6 decimals)",
                value=e,
            )
        keys[key] = e
    return eps_t


def bench_gcdp(
    dataset: str = "occupancy",
    methods: tuple[str, ...] | list[str] = METHODS,
    eps_list: tuple[float, ...] | list[float] = EPS_REL_GRID,
    draws: int = 10,
    seed: int = 0,
    *,
    window: int | None = None,
    data: object | None = None,
    timing: bool = True,
    train_file: str | None = None,
    test_file: str | None = None,
    decimal: str = ".",
    readings: Readings = READINGS,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The evaluation of ``dataset`` (one loop for all; the per-dataset protocol is in
    ``app.gcdp_datasets``). ``data`` replaces the files (tests use synthetic frames):
    occupancy (train_x, train_y, test_x, test_y) raw records (records x 5 channels, labels
    0/1); intel (temperature train, temperature test, humidity train, humidity test), motes x
    steps; wisdm a ``WisdmTable``. ``window`` (default 30) is the Occupancy window only;
    so are ``train_file`` (calibration + training) and ``test_file`` (the protected
    release), any Occupancy-format files (default the shipped datatraining / datatest),
    and ``decimal``, the decimal mark of those given files ("." or ","; ``load_occupancy``).
    ``readings`` picks the readings of the seed's open details (``Readings``; defaults =
    the kept ones, docs/gcdp.md). ``progress(done, total)`` is called after every
    evaluated cell (tau candidates, method x budget on the test and validation windows,
    ablations)."""
    methods, eps_t = _check(methods, eps_list, draws, seed, dataset)
    _check_options(dataset, window, train_file, test_file, readings)
    _check_decimal(dataset, decimal, train_file, test_file)
    held_out = readings.split != "train"
    cells = len(TAU_GRID) + len(methods) * len(eps_t) * (2 if held_out else 1)
    tick = _counter(progress, cells + len(ABLATIONS))
    prep = prepare(dataset, data, WINDOW if window is None else window, readings,
                   train_file=train_file, test_file=test_file, decimal=decimal)  # fmt: skip
    check_spread(prep, dataset)
    tau_rows = tau_validation_draws(prep, draws, seed, tick)
    tau, tau_f1 = chosen_tau(tau_rows)
    run = _Evaluation(prep, tau, draws, seed, tick, CLASS_NAMES.get(dataset, {}))
    tables, validation = run.method_tables(methods, eps_t)
    seed_tables = SEED_TABLES[dataset]
    ablation = run.ablations(seed_tables["ablation"])
    seed_f1, seed_auc = seed_tables["f1"], seed_tables["auc"]
    result = {
        "dataset": dataset,
        "protocol": _protocol(prep, draws, seed, readings),
        "calibration": _calibration_table(run.cal, tau, tau_f1, tau_rows),
        "ablation_eps1": ablation,
        "f1": tables["f1"],
        "f1_std": tables["f1_std"],
        # per method and budget: draws whose classifier predicted one class for every window
        # (their F1 is that of "always occupied" or 0; protocol.nonprivate_test for the clean
        # windows), None when no draw did
        "collapsed": tables["collapsed"],
        "seed_f1": {m: {str(e): v for e, v in seed_f1[m].items()} for m in methods if m in seed_f1},
        "attack": prep.attack_info,
        "attack_auc": tables["attack_auc"],
        "attack_f1": tables["attack_f1"],
        "seed_attack_auc": {
            m: {str(e): v for e, v in seed_auc[m].items()} for m in methods if m in seed_auc
        },
    }
    if run.sel.has_validation:
        result["validation"] = validation
    if dataset == "occupancy":
        result.update(_bayes_bounds(prep, methods, eps_t, draws, seed, run.cal))
    if timing:
        result["runtime_s"], result["peak_mem_mb"] = _timings(methods, prep, tau, seed)
        result["seed_runtime_s"] = seed_tables["runtime_s"]
        result["seed_peak_mem_mb"] = seed_tables["peak_mem_mb"]
    return result


# the central 98% of a feature's training windows spanning less than this share of [0, 1]
# while the feature is not constant: the clipping interval is set by an extreme value
SQUEEZE = 1e-6


def check_spread(prep: Prepared, dataset: str) -> None:
    """Refuse training windows whose feature was squeezed by its clipping interval: under
    ``clip = minmax`` one extreme training value (1e300 in a Light column) stretches the
    interval so far that every other value scales to ~0, and F1 dropped with no word
    (Lap-DP 78 -> 59 at eps 1 on the shipped files). Refused when the central windows of a
    feature (without the 1%, at least one, lowest and highest) span more than 0 and less
    than ``SQUEEZE`` of [0, 1]; a sparse feature (all central windows at one value) and
    ``clip = iqr`` (Tukey's fences ignore the extreme value) pass."""
    for part in (prep, prep.selection):
        if part is None:
            continue
        ranked = np.sort(np.asarray(part.train_f, dtype=float), axis=0)
        cut = max(1, ranked.shape[0] // 100)  # at least the one most extreme window each side
        if ranked.shape[0] <= 2 * cut:
            continue
        low, high = ranked[cut], ranked[-1 - cut]
        squeezed = np.flatnonzero((high > low) & (high - low < SQUEEZE))
        if squeezed.size:
            k = int(squeezed[0])
            name = f"{CHANNELS[k]} (feature {k})" if dataset == "occupancy" else f"feature {k}"
            raise ParameterError(
                f"{name}: the central training windows lie within {float(high[k] - low[k]):.3g}"
                f" of the clipping interval [0, 1] (limit {SQUEEZE:g}): an extreme training "
                f"value sets the interval under clip = {prep.readings.clip}; remove it from "
                "the file or use --clip iqr",
                field=f"train_f[:, {k}]",
                limit=f"central training windows wider than {SQUEEZE:g} (value: their width)",
                value=float(high[k] - low[k]),
            )


def _check_options(dataset, window, train_file, test_file, readings) -> None:
    """The Occupancy-only options given for another data set, or readings of a wrong type."""
    for name, value in (("window", window), ("train_file", train_file), ("test_file", test_file)):
        if value is not None and dataset != "occupancy":
            raise ParameterError(
                f"applies to occupancy only, not {dataset!r}",
                field=name,
                limit="occupancy only",
                value=value,
            )
    if not isinstance(readings, Readings):
        raise ParameterError(
            f"must be a Readings, got {readings!r}",
            field="readings",
            limit="a Readings",
            value=readings,
        )


def _check_decimal(dataset, decimal, train_file, test_file) -> None:
    """``decimal``: "." or "," (``devices.sources.check_decimal``, the one check of a decimal
    mark); "," only for the Occupancy files given (the shipped ones have decimal points: ","
    with neither file given read nothing with it, silently)."""
    if check_decimal(decimal, field="decimal") == ".":
        return
    if dataset != "occupancy":
        raise ParameterError(
            f"applies to occupancy only, not {dataset!r}",
            field="decimal",
            limit="occupancy only",
            value=decimal,
        )
    if train_file is None and test_file is None:
        raise ParameterError(
            f"must be '.' without --train-file or --test-file, got {decimal!r}: the shipped "
            "files have decimal points (',' reads the files you give)",
            field="decimal",
            limit="'.' unless --train-file or --test-file is given",
            value=decimal,
        )


@dataclass
class _Evaluation:
    """What ``bench_gcdp``'s stages share: the prepared data and the table the readings are
    chosen on (``sel``), τ and their calibrations, the draws and the progress tick."""

    prep: Prepared
    tau: float
    draws: int
    seed: int
    tick: Callable[[], None]
    class_names: dict[int, str] = field(default_factory=dict)
    sel: Prepared = field(init=False)
    cal: dict = field(init=False)
    sel_cal: dict = field(init=False)

    def __post_init__(self) -> None:
        self.sel = self.prep.selection or self.prep
        self.cal = _calibrate_prepared(self.prep, self.tau)
        self.sel_cal = (
            self.cal if self.sel is self.prep else _calibrate_prepared(self.sel, self.tau)
        )

    def on_test(self, method: str, cal: dict, eps: float) -> tuple:
        """(F1 mean, F1 std, attack AUC, attack F1, each draw's one class) of one method and
        budget on the test windows (noise stream 0)."""
        prep = self.prep
        attack = (prep.protected, prep.attack_rows)
        out = _mean_f1(method, prep, prep.test_f, prep.test_l, cal, eps, self.draws, self.seed,
                       attack, 0)  # fmt: skip
        self.tick()
        return out

    def on_validation(self, method: str, eps: float) -> tuple:
        """The same on the windows the readings are chosen on (noise stream 2)."""
        sel = self.sel
        val_f, val_l = sel.validation_windows
        attack = (sel.val_protected, sel.val_attack_rows)
        out = _mean_f1(method, sel, val_f, val_l, self.sel_cal, eps, self.draws, self.seed,
                       attack, 2)  # fmt: skip
        self.tick()
        return out

    def method_tables(self, methods, eps_t) -> tuple[dict[str, dict], dict[str, dict]]:
        """Method x budget: the test tables (``f1``, ``f1_std``, ``attack_auc``,
        ``attack_f1``, ``collapsed``) and, with held-out validation windows, the validation
        tables."""
        tables: dict[str, dict] = {"f1": {}, "f1_std": {}, "attack_auc": {}, "attack_f1": {}}
        validation: dict[str, dict] = {"f1": {}, "attack_auc": {}}
        collapsed: dict[str, dict] = {}
        for method in methods:
            rows = {str(eps): self.on_test(method, self.cal, eps) for eps in eps_t}
            for i, table in enumerate(tables.values()):
                table[method] = {e: round(r[i], 4) for e, r in rows.items()}
            collapsed[method] = {e: collapse_note(r[4], self.class_names) for e, r in rows.items()}
            if self.sel.has_validation:  # the readings are chosen on this table, never on the test
                rows = {str(e): self.on_validation(method, e) for e in eps_t}
                validation["f1"][method] = {e: round(r[0], 4) for e, r in rows.items()}
                validation["attack_auc"][method] = {e: round(r[2], 4) for e, r in rows.items()}
        return {**tables, "collapsed": collapsed}, validation

    def ablations(self, seed_ablation: dict) -> dict:
        """GC-DP at eps = 1 with each of ``ABLATIONS``' parts switched off or replaced."""
        ablation = {}
        for name, (switches, overrides) in ABLATIONS.items():
            variant = _calibrate_prepared(self.prep, self.tau, **switches, allocation=overrides)
            mean, std, attack_auc, att_f1, one_class = self.on_test("GC-DP", variant, 1.0)
            ablation[name] = {
                "f1": round(mean, 4),
                "f1_std": round(std, 4),
                "attack_auc": round(attack_auc, 4),
                "attack_f1": round(att_f1, 4),
                "collapsed": collapse_note(one_class, self.class_names),
                "budgets_eps1": printed_budgets(_budgets(variant, 1.0)),
                "edges": variant["edges"],
                "seed_f1": seed_ablation.get(name, (None, None))[0],
                "seed_attack_auc": seed_ablation.get(name, (None, None))[1],
            }
        return ablation


def majority_baseline(prep: Prepared) -> dict:
    """Results ``protocol.baselines`` of a data set without its own (Intel Lab, WISDM): the
    training windows' majority class predicted for every test window, scored by the data
    set's metric, and the clipping-only release (the fixed classifier on the clean
    windows: NonPrivate)."""
    label = int(np.bincount(np.asarray(prep.train_l).astype(int)).argmax())
    constant = np.full(np.asarray(prep.test_l).shape, label)
    clean = np.asarray(prep.model.predict(np.clip(prep.test_f, 0.0, 1.0)))
    out = {
        "majority_class": {"label": label, "f1": round(prep.metric(prep.test_l, constant), 4)},
        "clipping_only_f1": round(prep.metric(prep.test_l, clean), 4),
    }
    if set(np.unique(prep.test_l).tolist()) <= {0, 1}:  # a positive-class F1 (Intel Lab)
        ones = np.ones_like(np.asarray(prep.test_l))
        out["always_positive_f1"] = round(prep.metric(prep.test_l, ones), 4)
    return out


def _protocol(prep: Prepared, draws: int, seed: int, readings: Readings) -> dict:
    """The evaluation's protocol (results ``protocol``)."""
    head = dict(prep.protocol_head)
    head.setdefault("baselines", majority_baseline(prep))
    return {
        **head,
        "draws": draws,
        "seed": seed,
        **prep.protocol_tail,
        "eps_cal": 0.0,
        "gau_delta": float(readings.gau_delta),
        "gau_sampler": _gau_sampler_note(prep, readings),
        "gau_l2": prep.gau_l2,
        "readings": readings.as_dict(),
    }


def _gau_sampler_note(prep: Prepared, readings: Readings) -> str:
    changed = prep.gau_changed if prep.gau_changed is not None else prep.bounds.size
    rule = gau_calibration(readings, changed)
    note = "exact discrete Gaussian on a 2^-k grid, " + GAU_CALIBRATION_NAMES[rule]
    if rule != readings.gau_sigma:
        note += f" ({readings.gau_sigma} needs one changed coordinate; {changed} move here)"
    return note


def _calibration_table(cal: dict, tau, tau_f1: dict, tau_rows: dict) -> dict:
    """τ, its validation F1s (mean and sd over the draws, the margin of the choice) and the
    GC-DP calibration (results ``calibration``)."""
    return {
        "tau": tau,
        "tau_validation_f1": {str(t): round(v, 4) for t, v in tau_f1.items()},
        # the spread of each tau's validation draws (ddof 0, as f1_std) and how firmly they
        # chose tau: over seeds 0..19 the shipped files' tau took four values (helper F)
        "tau_validation_f1_std": {str(t): round(float(np.std(r)), 4) for t, r in tau_rows.items()},
        "tau_margin": tau_margin(tau_rows, tau),
        "edges": cal["edges"],
        "bounds": [float(v) for v in cal["bounds"]],
        "scales": [float(v) for v in cal["scales"]],
        "utility": [round(float(v), 4) for v in cal["utility"]],
        "exposure_norm": [round(float(v), 4) for v in cal["exposure"]],
        "gcdp_budgets_eps1": printed_budgets(_budgets(cal, 1.0)),
    }


def _bayes_bounds(prep: Prepared, methods, eps_t, draws: int, seed: int, cal: dict) -> dict:
    """Occupancy's diagnostics: the Bayes-oracle F1 bounds by budget (and method)."""
    return {
        "lap_dp_bayes_bound_f1": {
            str(e): round(bayes_bound_f1(prep, e, draws, seed), 4) for e in eps_t
        },
        "bayes_bound_f1": {
            m: {str(e): round(bayes_bound_f1(prep, e, draws, seed, m, cal), 4) for e in eps_t}
            for m in methods
            if m != "NonPrivate"
        },
        "best_allocation_bound_f1": {
            str(e): best_allocation_bound_f1(prep, e, draws, seed) for e in eps_t
        },
        "oracle_windows": oracle_windows_note(prep),
    }


def _one_pass(method, prep: Prepared, tau, seed) -> None:
    """One calibration-and-release pass at eps = 1 (what each method needs)."""
    if method in ("NonPrivate", "Lap-DP", "Gau-DP"):
        cal = {"bounds": prep.bounds, "gau_l2": prep.gau_l2, "gau_changed": prep.gau_changed,
               "readings": prep.readings}  # fmt: skip
    else:
        cal = _calibrate_prepared(prep, tau, fresh_utility=True)
    _release_all(method, prep.test_f, cal, 1.0, _rng(seed, method, 1.0, 0))


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
