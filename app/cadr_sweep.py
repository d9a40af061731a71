"""``ldpfleet bench cadr-sweep``: the private CADR-LDP evaluation tables, in-process.

Runs ``collector.cadr_reference.private_run`` (the whole private pipeline, secure sums
replaced by exact sums) over a grid and averages ``runs`` seeds per cell (seeds
``seed .. seed + runs - 1``, the same seeds in every cell):

- θ sweep at one budget ε: MAE and MSE of the released degree sequence for every method
  and every θ of the grid, plus θ by Sum and θ by Deviation (computed once: every method
  searches θ with the same ε_dsr = (1-α)ε, see the ``cadr_reference`` docstring) and, per
  method, the θ that minimises the measured MAE, next to the MAE at the two chosen θ.
  The θ of the two searches are added to the evaluated θ if the grid lacks them.
- shape check per method and metric: the argmin θ* of the mean series, the largest rise
  before θ* and the largest drop after it (both 0 for a series that decreases then
  increases), and the standard error of the cell means, so that "convex-shaped apart from
  noise" is a number, not an impression. ``lowest`` lists, per θ, which method has the
  lowest MAE, and for every θ where a given method (LL) is not lowest, the gap and the gap
  in standard errors.
- ε sweep: MAE and MSE for every budget of a list at each method's θ by Deviation for
  that ε (reported), and at a fixed θ = that method's MAE-minimising θ of the θ sweep.
- pipelines (``sweep_pipelines``): for every budget and method, the paper's pipeline (θ by
  Deviation, the raw DSR release) against the "dp" pipeline (θ by Deviation aimed at the
  post-processed error, the post-processed release; ``collector.degree_postprocess``),
  per-node MAE / MSE and the histogram's L1 / EMD, the paper's release post-processed at
  its own θ, and the trivial baselines (the constant TRUE median — a non-private oracle —
  and all zeros) scored the same way.

The default method clip (``--methods ... ,clip``; in the default list) is swept by the same
functions on its own into ``result["clip"]`` and shown as its own rows labelled
``CLIP_LABEL`` ("clip (default; DSR ε − ε_θ)") in every table of the methods — vs θ, chosen
θ, shape, vs ε, pipelines, histograms — but never inside the projections' comparison (the
bold lowest MAE, the winner counts): it negotiates nothing and spends on its release the αε
they spend on NDOE / LPEA, so it is not the equal-DSR-budget comparison. Its θ searches use
its own ε_dsr (ε at a given θ and in the paper pipeline), so its "θ by Deviation" is its own,
not the projections' shared θ. Projection-only figures (kept-edge ratio, the Thm 3.5 bound
with its RR term) are in the JSON rows but no table: for clip they describe no projection.

Cells run in a process pool (``workers``; the graph is handed to each worker once by the
pool initializer) and the result does not depend on the number of workers: each cell
seeds its own generator. ``markdown`` renders the tables of ``docs/cadr-private.md``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np
import typer
from ldpfleet.app.bench_commands import CADR_SWEEP_DEFAULT_EPS_LIST as DEFAULT_EPS_LIST
from ldpfleet.app.bench_commands import CADR_SWEEP_DEFAULT_THETAS as DEFAULT_THETAS
from ldpfleet.app.bench_commands import bench_cadr_sweep
from ldpfleet.app.suggest import near_miss
from ldpfleet.collector.cadr_reference import (
    METHODS,
    RUN_METHODS,
    as_dict,
    choose_theta,
    dp_theta,
    private_run,
)
from ldpfleet.collector.degree_postprocess import noise_weight, trivial_baselines
from ldpfleet.collector.pools import interruptible_pool
from ldpfleet.devices.graphs import Graph
from ldpfleet.protocol.cadr_budget import (
    CADR_EPS_MAX,
    CADR_EPS_MIN,
    CadrBudget,
    check_run_eps,
    negotiates,
    resolve_degree_bound,
    small_fleet_theta,
)
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "DEFAULT_EPS_LIST",
    "DEFAULT_THETAS",
    "bench_cadr_sweep",
    "cadr_sweep",
    "markdown",
    "parse_eps",
    "parse_methods",
    "parse_thetas",
    "shape_check",
    "sweep_eps",
    "sweep_pipelines",
    "sweep_theta",
    "theta_accuracy",
    "theta_choices",
]

METRICS = ("mae", "mse", "distribution_l1", "kept_edge_ratio", "bound_mean")
# what ``--methods`` accepts and its default: the projections compared at an equal DSR
# budget (``METHODS``), then the default method clip (``RUN_METHODS``), which is NOT part of
# that comparison: it spends the αε the others negotiate with on its own release
SWEEP_METHODS = RUN_METHODS
CLIP_LABEL = "clip (default; DSR ε − ε_θ)"


# --- inputs --------------------------------------------------------------------------------


def parse_thetas(spec: str) -> list[int]:
    """Sorted distinct θ from ``"1..100"`` (inclusive), ``"5..100:5"`` (step), ``"1,2,4"``
    or a comma-separated mix of these; every θ must be an integer >= 1."""
    out: set[int] = set()
    for raw in spec.split(","):
        token = raw.strip()
        try:
            if ".." in token:
                span, _, step = token.partition(":")
                lo, hi = (int(x) for x in span.split(".."))
                stride = int(step) if step else 1
                if stride < 1 or hi < lo:
                    raise ValueError
                out.update(range(lo, hi + 1, stride))
            else:
                out.add(int(token))
        except ValueError:
            raise ParameterError(
                f"{token!r} is not an integer, a range a..b or a stepped range a..b:s",
                field="thetas",
                limit="an integer, a range a..b or a stepped range a..b:s",
                value=token,
            ) from None
    if not out or min(out) < 1:
        raise ParameterError(
            f"needs integers >= 1, got {spec!r}", field="thetas", limit="integers >= 1", value=spec
        )
    return sorted(out)


def parse_eps(spec: str) -> list[float]:
    """Sorted distinct budgets from a comma-separated list (``"1,1.5,2"``); empty: none."""
    if not spec.strip():
        return []
    try:
        values = sorted({float(x) for x in spec.split(",")})
    except ValueError:
        raise ParameterError(
            f"must be comma-separated numbers, got {spec!r}",
            field="eps",
            limit="comma-separated numbers",
            value=spec,
        ) from None
    if any(not math.isfinite(e) or not CADR_EPS_MIN <= e <= CADR_EPS_MAX for e in values):
        raise ParameterError(
            f"budgets must be in [{CADR_EPS_MIN:g}, {CADR_EPS_MAX:g}] (the [cadr] eps range), "
            f"got {spec!r}",
            field="eps",
            limit=f"budgets in [{CADR_EPS_MIN:g}, {CADR_EPS_MAX:g}]",
            value=spec,
        )
    return values


def parse_methods(spec: str) -> tuple[str, ...]:
    """Methods in the given order from ``"ll,lh,ra,er,clip"`` (each one of
    ``SWEEP_METHODS``: the projections ``METHODS`` and the default method clip)."""
    chosen = tuple(dict.fromkeys(m.strip() for m in spec.split(",") if m.strip()))
    bad = [m for m in chosen if m not in SWEEP_METHODS]
    if bad or not chosen:
        raise ParameterError(
            f"{bad[0] if bad else spec!r} is not one of {', '.join(SWEEP_METHODS)}"
            f"{near_miss(bad[0], SWEEP_METHODS) if bad else ''}",
            field="methods",
            limit=f"one of {', '.join(SWEEP_METHODS)}",
            value=bad[0] if bad else spec,
        )
    return chosen


def theta_choices(degrees: np.ndarray, eps: float, alpha: float, method: str = "ll") -> dict:
    """θ by Sum and θ by Deviation at ε_dsr = (1-α)ε (the same for every projection
    method); for ``method`` clip at its own ε_dsr = ε (the paper pipeline: ε_θ = 0)."""
    eps_dsr = CadrBudget(eps, alpha, negotiation=negotiates(method)).dsr
    by_sum, sum_rounds = choose_theta(degrees, "auto-sum", eps_dsr)
    by_dev, dev_rounds = choose_theta(degrees, "auto-dev", eps_dsr)
    return {
        "eps": eps,
        "eps_dsr": eps_dsr,
        "by_sum": by_sum,
        "by_sum_rounds": sum_rounds,
        "by_deviation": by_dev,
        "by_deviation_rounds": dev_rounds,
    }


def _kind(methods: Sequence[str]) -> str:
    """The method whose budget split picks θ for all of ``methods``: they must all be
    projections (``METHODS``: one ε_dsr = (1-α)ε) or all clip (ε_dsr = ε); a sweep mixing
    the two would search θ at the wrong budget for one of them."""
    kinds = {negotiates(m) for m in methods}
    if len(kinds) > 1:
        raise ParameterError(
            f"one call sweeps the projections ({', '.join(METHODS)}) or clip, got {list(methods)}",
            field="methods",
            limit=f"all of {', '.join(METHODS)} or clip alone",
            value=list(methods),
        )
    return methods[0] if methods else "ll"


# --- running cells -------------------------------------------------------------------------

_WORKER_GRAPH: list[Graph] = []


def _init_worker(graph: Graph) -> None:
    _WORKER_GRAPH[:] = [graph]


def _run_cell(job: tuple) -> dict:
    """``(method, θ or rule, eps, alpha, seed[, pipeline])`` -> the run as a dict."""
    method, theta, eps, alpha, seed, *pipeline = job
    return as_dict(private_run(_WORKER_GRAPH[0], method, theta, eps, alpha, seed, *pipeline))


class _Counts:
    """Cells done / cells known so far, reported to ``progress(done, total)``."""

    def __init__(self, progress: Callable[[int, int], None] | None = None) -> None:
        self.progress = progress
        self.done = 0
        self.total = 0

    def add(self, cells: int) -> None:
        self.total += cells
        self._report()

    def tick(self) -> None:
        self.done += 1
        self._report()

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(self.done, self.total)


_COUNTS = [_Counts()]  # the running sweep's counter (cadr_sweep sets it)


def _run_cells(graph: Graph, jobs: list[tuple], workers: int) -> list[dict]:
    """``private_run`` for every job, in job order (worker count changes nothing else);
    each finished job counts one cell of the running sweep's progress."""
    counts = _COUNTS[0]
    counts.add(len(jobs))
    if workers <= 1 or len(jobs) <= 1:
        _init_worker(graph)
        out = []
        for job in jobs:
            out.append(_run_cell(job))
            counts.tick()
        return out
    with interruptible_pool(
        max_workers=workers, initializer=_init_worker, initargs=(graph,)
    ) as pool:
        out = []
        chunk = max(1, len(jobs) // (8 * workers))
        for result in pool.map(_run_cell, jobs, chunksize=chunk):
            out.append(result)
            counts.tick()
        return out


def _aggregate(runs: list[dict]) -> dict:
    """Mean and standard error of the mean (None for one run) of each metric over runs."""
    out: dict = {}
    for name in METRICS:
        values = np.array([r[name] for r in runs], dtype=float)
        out[name] = float(values.mean())
        out[f"{name}_se"] = (
            float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else None
        )
    return out


def _cells(
    graph: Graph, keys: list[tuple[str, int, float]], alpha: float, seeds: Sequence[int], workers
) -> tuple[dict[tuple, dict], float]:
    """Aggregated figures per (method, θ, ε) and the summed per-run seconds."""
    jobs = [(m, t, e, alpha, s) for (m, t, e) in keys for s in seeds]
    results = _run_cells(graph, jobs, workers)
    per_key: dict[tuple, list[dict]] = {}
    for job, result in zip(jobs, results, strict=True):
        per_key.setdefault(job[:3], []).append(result)
    cpu = sum(r["seconds"] for r in results)
    cells = {}
    for key, runs in per_key.items():
        cells[key] = {**_aggregate(runs), "spent": runs[0]["spent"]}
    return cells, cpu


# --- analysis ------------------------------------------------------------------------------


def shape_check(
    thetas: Sequence[int], means: Sequence[float], ses: Sequence[float | None] | None = None
) -> dict:
    """Unimodality of a mean series over increasing θ: ``argmin`` θ*, ``rise_before`` =
    the largest step UP before θ*, ``drop_after`` = the largest step DOWN after θ* (both 0
    iff the series decreases to θ* and increases after it), ``violation`` = their max.
    With the standard errors ``ses`` of the means, ``violation_se`` is the largest such
    wrong-way step divided by its own standard error ``sqrt(se_k^2 + se_(k+1)^2)``
    (None without errors): ~N(0, 1)-sized values are what noise alone produces."""
    m = np.asarray(means, dtype=float)
    k = int(np.argmin(m))
    steps = np.diff(m)
    wrong = np.concatenate([np.maximum(steps[:k], 0.0), np.maximum(-steps[k:], 0.0)])
    rise = float(wrong[:k].max()) if k > 0 else 0.0
    drop = float(wrong[k:].max()) if k < len(steps) else 0.0
    violation_se = None
    if ses is not None and all(e is not None for e in ses) and len(steps):
        e = np.asarray(ses, dtype=float)
        step_se = np.sqrt(e[:-1] ** 2 + e[1:] ** 2)
        if not np.any((wrong > 0) & (step_se == 0)):  # else: a sure wrong-way step, no z
            violation_se = float(np.max(wrong / np.where(step_se > 0, step_se, 1.0)))
    return {
        "argmin": int(thetas[k]),
        "min": float(m[k]),
        "first": float(m[0]),
        "last": float(m[-1]),
        "rise_before": rise,
        "drop_after": drop,
        "violation": max(rise, drop),
        "violation_se": violation_se,
    }


def _series(rows: list[dict], method: str, metric: str) -> tuple[list[int], list[float], list]:
    mine = [r for r in rows if r["method"] == method]
    return (
        [r["theta"] for r in mine],
        [r[metric] for r in mine],
        [r[f"{metric}_se"] for r in mine],
    )


def _mae_at(rows: list[dict], method: str, theta: int) -> float | None:
    return next((r["mae"] for r in rows if r["method"] == method and r["theta"] == theta), None)


def sweep_theta(
    graph: Graph,
    methods: Sequence[str],
    thetas: Sequence[int],
    eps: float,
    alpha: float,
    runs: int,
    seed: int = 0,
    workers: int = 1,
    reference: str = "ll",
) -> dict:
    """MAE/MSE vs θ per method at ``eps``; searches vs measured argmin; shape; lowest.
    θ above the degree bound D of these runs (pipeline "paper": the graph's maximum
    degree) are not run — the devices refuse them — and are listed in
    ``dropped_above_bound``; a grid with no θ <= D is refused (field ``thetas``)."""
    started = time.perf_counter()
    choices = theta_choices(graph.degrees(), eps, alpha, _kind(methods))
    bound = max(int(graph.degrees().max()), 1) if graph.n else 1
    grid, dropped = _theta_grid(thetas, bound)
    evaluated = sorted(set(grid) | {choices["by_sum"], choices["by_deviation"]})
    seeds = list(range(seed, seed + runs))
    cells, cpu = _cells(graph, [(m, t, eps) for m in methods for t in evaluated], alpha, seeds,
                        workers)  # fmt: skip
    rows = [
        {"method": m, "theta": t, "in_grid": t in grid, **cells[(m, t, eps)]}
        for m in methods
        for t in evaluated
    ]
    per_method = {m: _method_summary(rows, m, choices) for m in methods}
    lowest, not_lowest = _lowest_by_theta(rows, evaluated, reference)
    return {
        "eps": eps,
        "alpha": alpha,
        "runs": runs,
        "seeds": [seeds[0], seeds[-1]],
        "grid": grid,
        "degree_bound": bound,
        "dropped_above_bound": dropped,
        "thetas": evaluated,
        "choices": choices,
        "rows": rows,
        "methods": per_method,
        "lowest": lowest,
        "reference": reference,
        "reference_lowest_count": sum(1 for x in lowest if x["method"] == reference),
        "reference_not_lowest": not_lowest,
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(cpu, 1),
    }


def _theta_grid(thetas: Sequence[int], bound: int) -> tuple[list[int], list[int]]:
    """The θ of ``thetas`` a run takes (<= the degree bound ``bound``) and those dropped
    (above it: the devices refuse them), each sorted, once; a grid with none left is
    refused (``ParameterError``, field ``thetas``)."""
    dropped = sorted(t for t in set(thetas) if t > bound)
    grid = sorted(t for t in set(thetas) if t <= bound)
    if not grid:
        raise ParameterError(
            f"must hold a θ <= the degree bound D = {bound} (the graph's maximum degree; "
            f"the devices refuse a larger θ), got {dropped[:8]}",
            field="thetas",
            limit=f"a θ <= the degree bound D = {bound}",
            value=dropped,
        )
    return grid, dropped


def _method_summary(rows: list[dict], m: str, choices: dict) -> dict:
    """One method's θ sweep: the MAE- and MSE-minimising θ, the θ band whose MAE is within
    noise of the minimum, the MAE at the two searched θ, the series' shapes."""
    ts, maes, ses = _series(rows, m, "mae")
    shape = {metric: shape_check(*_series(rows, m, metric)) for metric in ("mae", "mse")}
    best = shape["mae"]["argmin"]
    se_best = ses[ts.index(best)] or 0.0
    # θ whose mean MAE is within 2 standard errors of a difference of the minimum
    band = [t for t, v in zip(ts, maes, strict=True)
            if v <= shape["mae"]["min"] + 2 * math.sqrt(2) * se_best]  # fmt: skip
    known = [s for s in ses if s is not None]
    return {
        "argmin_mae": best,
        "mae_at_argmin": shape["mae"]["min"],
        "mae_se_at_argmin": ses[ts.index(best)],
        "near_min_thetas": [min(band), max(band)],
        "argmin_mse": shape["mse"]["argmin"],
        "mse_at_argmin": shape["mse"]["min"],
        "by_sum": choices["by_sum"],
        "mae_at_by_sum": _mae_at(rows, m, choices["by_sum"]),
        "by_deviation": choices["by_deviation"],
        "mae_at_by_deviation": _mae_at(rows, m, choices["by_deviation"]),
        "shape": shape,
        "mae_se_max": max(known) if known else None,
        "spent": rows[[r["method"] for r in rows].index(m)]["spent"],
    }


def _lowest_by_theta(
    rows: list[dict], evaluated: list[int], reference: str
) -> tuple[list[dict], list[dict]]:
    """Per θ, the method of lowest MAE; and for every θ where ``reference`` is not it,
    the gap to the lowest (absolute, relative, in standard errors)."""
    lowest = []
    not_lowest = []
    for t in evaluated:
        here = {r["method"]: r for r in rows if r["theta"] == t}
        best_m = min(here, key=lambda k: here[k]["mae"])
        lowest.append({"theta": t, "method": best_m})
        if reference in here and best_m != reference:
            ref, win = here[reference], here[best_m]
            se = math.sqrt((ref["mae_se"] or 0.0) ** 2 + (win["mae_se"] or 0.0) ** 2)
            gap = ref["mae"] - win["mae"]
            not_lowest.append({
                "theta": t, "best": best_m, "gap": gap, "relative_gap": gap / win["mae"],
                "gap_in_se": gap / se if se > 0 else None,
            })  # fmt: skip
    return lowest, not_lowest


def sweep_eps(
    graph: Graph,
    methods: Sequence[str],
    eps_list: Sequence[float],
    alpha: float,
    runs: int,
    seed: int = 0,
    workers: int = 1,
    fixed_theta: dict[str, int] | None = None,
    fixed_label: str = "argmin_mae",
) -> dict:
    """MAE/MSE vs ε per method at θ by Deviation (per ε) and at ``fixed_theta[method]``."""
    started = time.perf_counter()
    degrees = graph.degrees()
    choices = {e: theta_choices(degrees, e, alpha, _kind(methods)) for e in eps_list}
    keys: list[tuple[str, int, float]] = []
    for e in eps_list:
        for m in methods:
            keys.append((m, choices[e]["by_deviation"], e))
            if fixed_theta is not None:
                keys.append((m, fixed_theta[m], e))
    keys = list(dict.fromkeys(keys))
    seeds = list(range(seed, seed + runs))
    cells, cpu = _cells(graph, keys, alpha, seeds, workers)
    rows = []
    for e in eps_list:
        for m in methods:
            dev = choices[e]["by_deviation"]
            rows.append({"eps": e, "method": m, "rule": "by_deviation", "theta": dev,
                         **cells[(m, dev, e)]})  # fmt: skip
            if fixed_theta is not None:
                t = fixed_theta[m]
                rows.append({"eps": e, "method": m, "rule": fixed_label, "theta": t,
                             **cells[(m, t, e)]})  # fmt: skip
    return {
        "alpha": alpha,
        "runs": runs,
        "eps": list(eps_list),
        "choices": [choices[e] for e in eps_list],
        "fixed_theta": fixed_theta,
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(cpu, 1),
    }


PIPELINE_METRICS = ("mae", "mse", "histogram_l1", "histogram_emd")
THETA_FRACTIONS = (1.0 / 3.0, 0.6, 0.8, None)  # None: the dp pipeline's rule (theta_extra)


def theta_accuracy(
    graph: Graph,
    eps_list: Sequence[float],
    alpha: float,
    fractions: Sequence[float] = THETA_FRACTIONS,
    draws: int = 40,
    seed: int = 0,
) -> dict:
    """The DP θ search alone (``cadr_reference.dp_theta``), ``draws`` noise draws per
    (ε, θ fraction): the chosen θ against ``theta_exact`` (the same rule on the true
    counts: the non-private optimum of the search), as ratios. A (ε, fraction) whose budget
    a run refuses (``CadrBudget.with_fraction``: ε_θ below ``THETA_EPS_MIN``, ε out of
    range) is a row with ``refused`` (the sentence) and no figures. The buckets span the
    dp pipeline's public bound (``degree_bound``: D = n − 1, ``resolve_degree_bound``), as
    in its runs, not the graph's maximum degree."""
    started = time.perf_counter()
    degrees = graph.degrees()
    bound, _ = resolve_degree_bound("auto", "dp", graph.n, int(degrees.max()))
    rows = []
    counts = _COUNTS[0]
    counts.add(len(eps_list) * len(fractions))
    for e in eps_list:
        for f in fractions:
            counts.tick()
            try:  # the checks of a real run: eps in range, ε_θ >= THETA_EPS_MIN
                budget = (
                    CadrBudget.for_pipeline(e, alpha, "dp", True, graph.n)
                    if f is None
                    else CadrBudget.with_fraction(e, alpha, f)
                )
            except ParameterError as err:  # a budget no fleet would run: no figures
                rows.append({"eps": e, "fraction": f, "refused": str(err)})
                continue
            weight = noise_weight(budget.dsr)
            found = [
                dp_theta(degrees, budget, weight, np.random.default_rng([seed + s, 1]), bound)
                for s in range(draws)
            ]
            exact = found[0][1]["theta_exact"]
            ratio = np.array([theta for theta, _ in found]) / exact
            # the rule's row on a fleet the small-fleet rule takes: the dp pipeline runs no
            # θ search there (θ = ⌈√D⌉), so the row measures a search no run makes
            small = small_fleet_theta(e, alpha, graph.n, bound) if f is None else None
            rows.append({
                "eps": e, "fraction": f, "eps_theta": budget.theta, "theta_exact": exact,
                "small_fleet_theta": small,
                "median_ratio": float(np.median(ratio)),
                "ratio_q25": float(np.percentile(ratio, 25)),
                "ratio_q75": float(np.percentile(ratio, 75)),
                "within_25pct": float(np.mean(np.abs(ratio - 1) <= 0.25)),
                "exact_share": float(np.mean(ratio == 1)),
            })  # fmt: skip
    return {
        "draws": draws,
        "degree_bound": bound,
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }


def sweep_pipelines(
    graph: Graph,
    methods: Sequence[str],
    eps_list: Sequence[float],
    alpha: float,
    runs: int,
    seed: int = 0,
    workers: int = 1,
) -> dict:
    """Per (ε, method): the "paper" and "dp" pipelines (θ by Deviation each), their
    releases and the paper release's post-processing, means and standard errors over
    ``runs`` seeds; the trivial baselines once (they do not depend on the run)."""
    started = time.perf_counter()
    seeds = list(range(seed, seed + runs))
    keys = [(m, e, p) for e in eps_list for m in methods for p in ("paper", "dp")]
    jobs = [(m, "auto-dev", e, alpha, s, p) for (m, e, p) in keys for s in seeds]
    results = _run_cells(graph, jobs, workers)
    per_key: dict[tuple, list[dict]] = {}
    for job, result in zip(jobs, results, strict=True):
        per_key.setdefault((job[0], job[2], job[5]), []).append(result)
    rows = []
    for m, e, p in keys:
        group = per_key[(m, e, p)]
        row: dict = {
            "eps": e,
            "method": m,
            "pipeline": p,
            "theta": sorted({r["theta"] for r in group}),
        }
        for part in ("raw", "postprocessed"):
            for name in PIPELINE_METRICS:
                values = np.array([r[part][name] for r in group], dtype=float)
                row[f"{part}_{name}"] = float(values.mean())
                row[f"{part}_{name}_se"] = (
                    float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else None
                )
        rows.append(row)
    return {
        "alpha": alpha,
        "runs": runs,
        "eps": list(eps_list),
        "rows": rows,
        "baselines": results[0]["baselines"] if results else {},
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(sum(r["seconds"] for r in results), 1),
    }


def cadr_sweep(
    graph: Graph,
    *,
    methods: Sequence[str] = SWEEP_METHODS,
    thetas: Sequence[int] | None = None,
    eps: float = 3.0,
    eps_list: Sequence[float] = (),
    alpha: float = 0.1,
    runs: int = 5,
    seed: int = 0,
    workers: int = 2,
    pipelines: bool = False,
    theta_draws: int = 40,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The θ sweep at ``eps`` (unless ``thetas`` is empty/None), then the ε sweep over
    ``eps_list`` at θ by Deviation and at each method's MAE-minimising θ of the θ sweep,
    and with ``pipelines`` the paper-vs-dp comparison over ``eps_list``.
    A JSON-ready dict (module docstring). ``progress(done, total)``: cells (runs, and
    θ-accuracy rows) done and known so far, after each one. The projections of
    ``methods`` (``METHODS``) fill ``theta_sweep``, ``eps_sweep`` and ``pipelines`` as
    ever; clip, if listed, is swept by the same functions on its own (its θ searched at
    its own ε_dsr) into ``result["clip"]`` (the same three keys), so that no equal-budget
    figure changes and clip never enters their comparisons (lowest MAE, winners)."""
    _COUNTS[0] = _Counts(progress)
    try:
        return _cadr_sweep(graph, methods, thetas, eps, eps_list, alpha, runs, seed, workers,
                           pipelines, theta_draws)  # fmt: skip
    finally:
        _COUNTS[0] = _Counts()


def _cadr_sweep(
    graph, methods, thetas, eps, eps_list, alpha, runs, seed, workers, pipelines, theta_draws
) -> dict:
    if runs < 1:
        raise ParameterError(f"must be >= 1, got {runs}", field="runs", limit=">= 1", value=runs)
    CadrBudget(check_run_eps(eps), alpha)  # refuses a bad eps / alpha before any work
    started = time.perf_counter()
    result: dict = {
        "bench": "cadr-sweep",
        "graph": graph.name,
        "nodes": graph.n,
        "edges": graph.edges(),
        "max_degree": int(graph.degrees().max()) if graph.n else 0,
        "methods": list(methods),
        "clip": None,
        "alpha": alpha,
        "runs": runs,
        "seed": seed,
        "workers": workers,
        "theta_sweep": None,
        "eps_sweep": None,
        "pipelines": None,
        "baselines": trivial_baselines(graph.degrees()) if graph.n else {},
    }
    compared = tuple(m for m in methods if negotiates(m))
    own = tuple(m for m in methods if not negotiates(m))
    args = (eps, eps_list, alpha, runs, seed, workers, pipelines)
    if compared:
        result.update(_sweeps(graph, compared, thetas, *args))
    if own:
        result["clip"] = _sweeps(graph, own, thetas, *args)
    if pipelines and eps_list:
        result["theta_accuracy"] = theta_accuracy(graph, eps_list, alpha, draws=theta_draws)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def _sweeps(graph, methods, thetas, eps, eps_list, alpha, runs, seed, workers, pipelines) -> dict:
    """The θ sweep, the ε sweep and the pipelines for ``methods`` (all projections or all
    clip: ``_kind``)."""
    out: dict = {"theta_sweep": None, "eps_sweep": None, "pipelines": None}
    fixed = None
    if thetas:
        sweep = sweep_theta(graph, methods, thetas, eps, alpha, runs, seed, workers,
                            reference="ll" if negotiates(methods[0]) else methods[0])  # fmt: skip
        out["theta_sweep"] = sweep
        fixed = {m: sweep["methods"][m]["argmin_mae"] for m in methods}
    if eps_list:
        out["eps_sweep"] = sweep_eps(graph, methods, eps_list, alpha, runs, seed, workers,
                                     fixed, f"argmin_mae_at_eps_{eps:g}")  # fmt: skip
    if pipelines and eps_list:
        out["pipelines"] = sweep_pipelines(graph, methods, eps_list, alpha, runs, seed, workers)
    return out


# --- markdown ------------------------------------------------------------------------------


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _display_thetas(sweep: dict) -> list[int]:
    """All θ for a short grid; else 1..5, multiples of 5, and every θ the tables cite."""
    thetas = sweep["thetas"]
    if len(thetas) <= 25:
        return thetas
    cited = {sweep["choices"]["by_sum"], sweep["choices"]["by_deviation"]}
    cited |= {v["argmin_mae"] for v in sweep["methods"].values()}
    cited |= {v["argmin_mse"] for v in sweep["methods"].values()}
    return [t for t in thetas if t <= 5 or t % 5 == 0 or t in cited or t == thetas[-1]]


def _band_summary(sweep: dict, methods: Sequence[str], bands: int = 5) -> list[str]:
    """Per band of consecutive θ: how often the reference method is lowest, its mean MAE
    minus each other method's (positive: the reference is worse), and its largest lead
    lost (relative to the winner) with that gap in standard errors."""
    ref = sweep["reference"]
    others = [m for m in methods if m != ref]
    by_key = {(r["method"], r["theta"]): r for r in sweep["rows"]}
    gaps = {x["theta"]: x for x in sweep["reference_not_lowest"]}
    lines = [
        f"| θ | {ref.upper()} lowest at | "
        + " | ".join(f"mean {ref.upper()} − {m.upper()}" for m in others)
        + f" | largest {ref.upper()} deficit (θ, winner, SE) |",
        "|---" * (3 + len(others)) + "|",
    ]
    for band in np.array_split(np.array(sweep["thetas"]), min(bands, len(sweep["thetas"]))):
        ts = band.tolist()
        diffs = [
            np.mean([by_key[(ref, t)]["mae"] - by_key[(m, t)]["mae"] for t in ts]) for m in others
        ]
        lost = [gaps[t] for t in ts if t in gaps]
        worst = max(lost, key=lambda x: x["relative_gap"]) if lost else None
        worst_text = (
            f"{100 * worst['relative_gap']:.1f}% (θ={worst['theta']}, "
            f"{worst['best'].upper()}, {_f(worst['gap_in_se'], 1)} SE)"
            if worst
            else "–"
        )
        lines.append(
            f"| {ts[0]}–{ts[-1]} | {len(ts) - len(lost)} of {len(ts)} | "
            + " | ".join(f"{d:+.2f}" for d in diffs)
            + f" | {worst_text} |"
        )
    lines.append("")
    return lines


def markdown(result: dict, command: str) -> str:
    """The tables of docs/cadr-private.md. clip (``result["clip"]``) gets its own rows,
    labelled ``CLIP_LABEL``, after the projections' in every table of the methods (vs θ,
    chosen θ, shape, vs ε, pipelines, histograms), never inside their comparisons (bold
    lowest MAE, winner counts): it is not the equal-DSR-budget comparison."""
    methods = [m for m in result["methods"] if negotiates(m)]
    clip = result.get("clip") or {}
    lines = [
        f"Generated by `{command}`: {result['graph']} ({result['nodes']:,} nodes, "
        f"{result['edges']:,} edges, max degree {result['max_degree']}), α = "
        f"{result['alpha']:g}, {result['runs']} runs per cell (seeds {result['seed']}.."
        f"{result['seed'] + result['runs'] - 1}), {result['workers']} worker process(es), "
        f"{result['seconds']:.0f} s in all.",
        "",
    ]
    lines += _baseline_lines(result.get("baselines") or {})
    lines += _theta_sweep_lines(result["theta_sweep"], methods, clip.get("theta_sweep"))
    if result["eps_sweep"]:
        lines += _eps_sweep_lines(result["eps_sweep"], methods, result.get("baselines"))
    if clip.get("eps_sweep"):
        lines += _clip_eps_lines(clip["eps_sweep"], result.get("baselines"))
    pipelines = _with_clip_rows(result.get("pipelines"), clip.get("pipelines"))
    if pipelines:
        lines += _pipeline_lines(pipelines, [*methods, *_methods_of(clip.get("pipelines"))])
    if result.get("theta_accuracy"):
        lines += _theta_accuracy_lines(result["theta_accuracy"])
    return "\n".join(lines)


def _label(method: str) -> str:
    """A method's name in the tables: LL, LH, RA, ER; clip as ``CLIP_LABEL``."""
    return method.upper() if negotiates(method) else CLIP_LABEL


def _clip_note() -> str:
    """The sentence every clip table carries: why it is not in the comparison."""
    return (
        f"{CLIP_LABEL} is the default method, NOT part of the equal-DSR-budget comparison: "
        "no NDOE, LPEA or projection; each node releases clip(own degree, 0, θ) + "
        "Laplace(θ/ε_dsr) at ε_dsr = ε − ε_θ (the projections: (1 − α)ε; ε_θ = 0 at a given "
        "θ and in the paper pipeline), θ searched at that ε_dsr; never in the bold or the "
        "winner counts."
    )


def _methods_of(sweep: dict | None) -> list[str]:
    return list(dict.fromkeys(r["method"] for r in sweep["rows"])) if sweep else []


def _theta_sweep_lines(sweep: dict | None, methods: Sequence[str], clip: dict | None) -> list[str]:
    """The θ sweep's tables: the projections' (θ table, chosen θ, shape, winners) with
    clip's rows appended to the chosen-θ and shape tables and its own θ table."""
    lines: list[str] = []
    if sweep and methods:
        lines += _theta_table(sweep, methods)
    if clip:
        lines += ([""] if lines else []) + _clip_theta_lines(clip)
    choice = _choice_table(sweep, methods) if sweep and methods else []
    shape = _shape_table(sweep, methods) if sweep and methods else []
    if clip:  # the header of each is 5 lines: blank, caption, blank, header, rule
        choice = (choice or _choice_table(clip, ["clip"])[:5]) + _choice_table(clip, ["clip"])[5:]
        shape = (shape or _shape_table(clip, ["clip"])[:5]) + _shape_table(clip, ["clip"])[5:]
    lines += choice + shape
    if sweep and methods:
        lines += _winner_lines(sweep, methods)
    elif clip:
        lines.append("")
    return lines


def _clip_theta_lines(sweep: dict) -> list[str]:
    """clip's MAE and MSE at each θ of its sweep."""
    c = sweep["choices"]
    lines = [
        f"**{CLIP_LABEL} vs θ at ε = {sweep['eps']:g}** (ε_dsr = {c['eps_dsr']:.3g}; "
        f"{len(sweep['thetas'])} θ × {sweep['runs']} runs in {sweep['seconds']:.0f} s wall). "
        f"θ by Sum = {c['by_sum']}, θ by Deviation = {c['by_deviation']} (at its ε_dsr). "
        + _clip_note()
        + _dropped_note(sweep),
        "",
        f"| θ | MAE {CLIP_LABEL} | MSE {CLIP_LABEL} |",
        "|---|---|---|",
    ]
    by_theta = {r["theta"]: r for r in sweep["rows"]}
    for t in _display_thetas(sweep):
        lines.append(f"| {t} | {_f(by_theta[t]['mae'])} | {_f(by_theta[t]['mse'], 0)} |")
    return lines


def _clip_eps_lines(eps_sweep: dict, baselines: dict | None) -> list[str]:
    """clip's MAE and MSE vs ε, one table per θ rule, the trivial baselines beside."""
    extra = _baseline_columns(baselines)
    lines: list[str] = []
    for rule in dict.fromkeys(r["rule"] for r in eps_sweep["rows"]):
        title = (
            "its own θ by Deviation at each ε (searched at its ε_dsr = ε)"
            if rule == "by_deviation"
            else "θ fixed at its MAE-minimising θ of the θ sweep "
            f"({eps_sweep['fixed_theta']['clip']})"
        )
        lines += [
            f"**{CLIP_LABEL}: MAE / MSE vs ε, {title}** ({eps_sweep['runs']} runs per cell). "
            + _clip_note(),
            "",
            *_with_columns(
                ["| ε | θ | MAE clip | MSE clip |", "|---|---|---|---|"], [h for h, _ in extra]
            ),
        ]
        for r in (r for r in eps_sweep["rows"] if r["rule"] == rule):
            cells = [_f(r["mae"]), _f(r["mse"], 0), *(value for _, value in extra)]
            lines.append(f"| {r['eps']:g} | {r['theta']} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _with_clip_rows(sweep: dict | None, clip: dict | None) -> dict | None:
    """The pipelines' result with clip's rows added (its own sweep's), for one table."""
    if not clip:
        return sweep
    if not sweep:
        return clip
    return {
        **sweep,
        "rows": sweep["rows"] + clip["rows"],
        "seconds": sweep["seconds"] + clip["seconds"],
        "clip": True,
    }


def _metric_header(first: str, methods: Sequence[str]) -> list[str]:
    """The header and rule of a table with ``first`` columns, then MAE and MSE per method."""
    upper = [m.upper() for m in methods]
    return [
        f"| {first} | " + " | ".join(f"MAE {u}" for u in upper) + " | "
        + " | ".join(f"MSE {u}" for u in upper) + " |",
        "|---" * (first.count("|") + 1 + 2 * len(methods)) + "|",
    ]  # fmt: skip


def _metric_cells(cells: dict[str, dict], methods: Sequence[str]) -> list[str]:
    """MAE per method (the lowest in bold), then MSE per method."""
    maes = {m: cells[m]["mae"] for m in methods}
    best = min(maes, key=maes.get)
    out = [f"**{_f(maes[m])}**" if m == best else _f(maes[m]) for m in methods]
    return out + [_f(cells[m]["mse"], 0) for m in methods]


def _dropped_note(sweep: dict) -> str:
    """The sentence naming the θ of the grid above the degree bound ("" when none)."""
    dropped = sweep.get("dropped_above_bound") or []
    if not dropped:
        return ""
    shown = f"{dropped[0]}–{dropped[-1]}" if len(dropped) > 1 else str(dropped[0])
    return (
        f" θ above the degree bound D = {sweep['degree_bound']} not run ({len(dropped)} of "
        f"the grid: {shown}; the devices refuse them)."
    )


def _theta_table(sweep: dict, methods: Sequence[str]) -> list[str]:
    """The θ sweep: MAE and MSE per method at each displayed θ."""
    c = sweep["choices"]
    lines = [
        f"**θ sweep at ε = {sweep['eps']:g}** (ε_dsr = {c['eps_dsr']:.3g}; "
        f"{len(sweep['thetas'])} θ × {len(methods)} methods × {sweep['runs']} runs in "
        f"{sweep['seconds']:.0f} s wall, {sweep['cpu_seconds']:.0f} s of runs). "
        f"θ by Sum = {c['by_sum']} ({c['by_sum_rounds']} secure sums), θ by Deviation = "
        f"{c['by_deviation']} ({c['by_deviation_rounds']} secure counts). Bold: lowest "
        "mean MAE of the row." + _dropped_note(sweep),
        "",
        *_metric_header("θ", methods),
    ]
    by_key = {(r["method"], r["theta"]): r for r in sweep["rows"]}
    for t in _display_thetas(sweep):
        cells = _metric_cells({m: by_key[(m, t)] for m in methods}, methods)
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return lines


def _choice_table(sweep: dict, methods: Sequence[str]) -> list[str]:
    """Per method: the chosen θ (by Sum, by Deviation) against the MAE-minimising θ."""
    lines = [
        "",
        "**Chosen θ vs the θ minimising the measured MAE** (MAE ± standard error over "
        "runs; 'near-min θ': the θ whose mean MAE is within 2√2 standard errors of the "
        "minimum, i.e. not distinguishable from it by these runs)",
        "",
        "| method | argmin θ (MAE) | MAE there | near-min θ | θ by Sum | MAE | "
        "θ by Deviation | MAE | argmin θ (MSE) | MSE there |",
        "|---" * 10 + "|",
    ]
    for m in methods:
        v = sweep["methods"][m]
        lo, hi = v["near_min_thetas"]
        lines.append(
            f"| {_label(m)} | {v['argmin_mae']} | {_f(v['mae_at_argmin'])} ± "
            f"{_f(v['mae_se_at_argmin'])} | {lo}–{hi} | {v['by_sum']} | "
            f"{_f(v['mae_at_by_sum'])} | {v['by_deviation']} | "
            f"{_f(v['mae_at_by_deviation'])} | {v['argmin_mse']} | "
            f"{_f(v['mse_at_argmin'], 0)} |"
        )
    return lines


def _shape_table(sweep: dict, methods: Sequence[str]) -> list[str]:
    """Per method and metric: whether the series over θ decreases then increases."""
    lines = [
        "",
        "**Shape check** (series over all evaluated θ; 'rise before' = largest step up "
        "before the argmin, 'drop after' = largest step down after it; both 0 for a "
        "series that decreases then increases; the last column divides the worst of "
        "these wrong-way steps by the standard error of that step, ~1-2 for noise)",
        "",
        "| method | metric | argmin θ | at θ=first | min | at θ=last | rise before | "
        "drop after | worst wrong-way step / its SE |",
        "|---" * 9 + "|",
    ]
    for m in methods:
        for metric, digits in (("mae", 2), ("mse", 0)):
            s = shape_check(*_series(sweep["rows"], m, metric))
            lines.append(
                f"| {_label(m)} | {metric.upper()} | {s['argmin']} | {_f(s['first'], digits)}"
                f" | {_f(s['min'], digits)} | {_f(s['last'], digits)} | "
                f"{_f(s['rise_before'], digits)} | {_f(s['drop_after'], digits)} | "
                f"{_f(s['violation_se'], 1)} |"
            )
    return lines


def _winner_lines(sweep: dict, methods: Sequence[str]) -> list[str]:
    """How often the reference method is lowest, and where it is not (a table of up to
    15 θ, else a summary by bands of θ)."""
    ref = sweep["reference"].upper()
    lines = [
        "",
        f"**{ref} lowest MAE** at {sweep['reference_lowest_count']} of "
        f"{len(sweep['thetas'])} θ. Winner counts: "
        + ", ".join(
            f"{m.upper()} {sum(1 for x in sweep['lowest'] if x['method'] == m)}" for m in methods
        )
        + ".",
        "",
    ]
    if 0 < len(sweep["reference_not_lowest"]) <= 15:
        lines += [
            f"| θ | lowest | its MAE lead over {ref} | relative | in SE of the difference |",
            "|---|---|---|---|---|",
        ]
        for x in sweep["reference_not_lowest"]:
            lines.append(
                f"| {x['theta']} | {x['best'].upper()} | {_f(x['gap'])} | "
                f"{100 * x['relative_gap']:.1f}% | {_f(x['gap_in_se'], 1)} |"
            )
        lines.append("")
    elif sweep["reference_not_lowest"]:
        lines += _band_summary(sweep, methods)
    return lines


def _eps_sweep_lines(
    eps_sweep: dict, methods: Sequence[str], baselines: dict | None = None
) -> list[str]:
    """One table per θ rule: MAE and MSE per method at each ε, then (given ``baselines``)
    the constant-median and all-zero releases' MAE and MSE beside them."""
    extra = _baseline_columns(baselines)
    lines: list[str] = []
    for rule in dict.fromkeys(r["rule"] for r in eps_sweep["rows"]):
        rows = [r for r in eps_sweep["rows"] if r["rule"] == rule]
        title = (
            "θ by Deviation at each ε (same θ for every method)"
            if rule == "by_deviation"
            else "θ fixed at each method's MAE-minimising θ of the θ sweep ("
            + ", ".join(f"{m.upper()} {eps_sweep['fixed_theta'][m]}" for m in methods)
            + ")"
        )
        lines += [
            f"**MAE / MSE vs ε, {title}** ({eps_sweep['runs']} runs per cell; the ε "
            f"sweep took {eps_sweep['seconds']:.0f} s wall)",
            "",
            *_with_columns(_metric_header("ε | θ", methods), [h for h, _ in extra]),
        ]
        for e in eps_sweep["eps"]:
            here = {r["method"]: r for r in rows if r["eps"] == e}
            thetas = sorted({here[m]["theta"] for m in methods})
            shown = str(thetas[0]) if len(thetas) == 1 else "per method"
            cells = _metric_cells(here, methods)
            cells += [value for _, value in extra]
            lines.append(f"| {e:g} | {shown} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _baseline_columns(baselines: dict | None) -> list[tuple[str, str]]:
    """(header, cell) of the trivial releases' MAE and MSE, "median / zero" ([] if none)."""
    if not baselines:
        return []
    median, zero = baselines["constant_median_oracle"], baselines["all_zero"]
    return [
        ("MAE median (oracle) / zero", f"{_f(median['mae'])} / {_f(zero['mae'])}"),
        ("MSE median (oracle) / zero", f"{_f(median['mse'], 0)} / {_f(zero['mse'], 0)}"),
    ]


def _with_columns(header: list[str], names: list[str]) -> list[str]:
    """A table's header and rule lines with ``names`` appended as columns."""
    if not names:
        return header
    return [header[0] + " " + " | ".join(names) + " |", header[1] + "---|" * len(names)]


def _baseline_lines(baselines: dict) -> list[str]:
    """The trivial releases every table is to be read against (one line each)."""
    if not baselines:
        return []
    median, zero = baselines["constant_median_oracle"], baselines["all_zero"]

    def text(b: dict) -> str:
        return (
            f"MAE {_f(b['mae'])}, MSE {_f(b['mse'], 0)}, histogram L1 {_f(b['histogram_l1'], 3)}"
            f", EMD {_f(b['histogram_emd'])}"
        )

    return [
        "**Trivial baselines** (release nothing about anyone; scored like every release "
        f"below): constant median — every node gets the TRUE median degree {median['value']} "
        f"(a non-private oracle; no private release knows it): {text(median)}; all zero: "
        f"{text(zero)}.",
        "",
    ]


def _pipeline_lines(sweep: dict, methods: Sequence[str]) -> list[str]:
    """The paper-vs-dp tables (``sweep_pipelines``)."""
    by_key = {(r["eps"], r["method"], r["pipeline"]): r for r in sweep["rows"]}
    return _pipeline_error_lines(sweep, methods, by_key) + _pipeline_histogram_lines(
        sweep, methods, by_key
    )


def _pipeline_error_lines(sweep: dict, methods: Sequence[str], by_key: dict) -> list[str]:
    """The paper-vs-dp table of the per-node MAE / MSE, with the trivial baselines'."""
    median = sweep["baselines"]["constant_median_oracle"]
    zero = sweep["baselines"]["all_zero"]
    lines = [
        f"**Paper pipeline vs the dp pipeline (post-processing), θ by Deviation in each** "
        f"({sweep['runs']} runs per cell, ± standard error; {sweep['seconds']:.0f} s wall). "
        "'paper': θ for the raw Laplace error, the raw DSR release; 'paper + pp': the same "
        "release post-processed at the paper's θ; 'dp': θ aimed at the post-processed error "
        "and the post-processed release. Last columns: the constant TRUE median (non-private "
        "oracle) and all-zero releases. Bold: the lowest of the row's three MAEs."
        + (" " + _clip_note() if any(not negotiates(m) for m in methods) else ""),
        "",
        "| ε | method | θ paper | MAE paper | MAE paper + pp | θ dp | MAE dp | MSE paper | "
        "MSE paper + pp | MSE dp | MAE median (oracle) | MAE zero | MSE median (oracle) / zero |",
        "|---" * 13 + "|",
    ]
    for e in sweep["eps"]:
        for m in methods:
            paper, dp = by_key[(e, m, "paper")], by_key[(e, m, "dp")]
            maes = {
                "paper": (paper["raw_mae"], paper["raw_mae_se"]),
                "pp": (paper["postprocessed_mae"], paper["postprocessed_mae_se"]),
                "dp": (dp["postprocessed_mae"], dp["postprocessed_mae_se"]),
            }
            best = min(maes, key=lambda k: maes[k][0])
            cell = {
                k: (f"**{_f(v)}**" if k == best else _f(v))
                + (f" ± {_f(se)}" if se is not None else "")
                for k, (v, se) in maes.items()
            }
            lines.append(
                f"| {e:g} | {_label(m)} | {_thetas(paper['theta'])} | {cell['paper']} | "
                f"{cell['pp']} | {_thetas(dp['theta'])} | {cell['dp']} | "
                f"{_f(paper['raw_mse'], 0)} | {_f(paper['postprocessed_mse'], 0)} | "
                f"{_f(dp['postprocessed_mse'], 0)} | {_f(median['mae'])} | {_f(zero['mae'])} | "
                f"{_f(median['mse'], 0)} / {_f(zero['mse'], 0)} |"
            )
    return lines


def _pipeline_histogram_lines(sweep: dict, methods: Sequence[str], by_key: dict) -> list[str]:
    """The paper-vs-dp table of the degree histogram's L1 / EMD, with the baselines'."""
    median = sweep["baselines"]["constant_median_oracle"]
    zero = sweep["baselines"]["all_zero"]
    lines = [
        "",
        "**Degree histogram vs the true one** (L1 = Σ_k |P(k) − Q(k)|, EMD = earth mover's "
        "distance in degrees; 'paper': the rounded, clipped noisy releases; 'paper + pp': "
        "the consistent histogram of their deconvolved distribution; 'dp': the θ search's "
        "noisy bucket counts read by `boot` and spread over the degrees, "
        "`degree_postprocess.search_priors`)",
        "",
        "| ε | method | L1 paper | L1 paper + pp | L1 dp | EMD paper | EMD paper + pp | "
        "EMD dp | L1 / EMD median (oracle) | L1 / EMD zero |",
        "|---" * 10 + "|",
    ]
    for e in sweep["eps"]:
        for m in methods:
            paper, dp = by_key[(e, m, "paper")], by_key[(e, m, "dp")]
            lines.append(
                f"| {e:g} | {_label(m)} | {_f(paper['raw_histogram_l1'], 3)} | "
                f"{_f(paper['postprocessed_histogram_l1'], 3)} | "
                f"{_f(dp['postprocessed_histogram_l1'], 3)} | {_f(paper['raw_histogram_emd'])} | "
                f"{_f(paper['postprocessed_histogram_emd'])} | "
                f"{_f(dp['postprocessed_histogram_emd'])} | "
                f"{_f(median['histogram_l1'], 3)} / {_f(median['histogram_emd'])} | "
                f"{_f(zero['histogram_l1'], 3)} / {_f(zero['histogram_emd'])} |"
            )
    lines.append("")
    return lines


def _theta_accuracy_lines(acc: dict) -> list[str]:
    lines = [
        f"**DP θ search: chosen θ vs the non-private optimum, against its budget** "
        f"({acc['draws']} noise draws per row; buckets over the dp pipeline's public bound "
        f"D = {acc.get('degree_bound', 'graph max')}; 'exact θ': the same rule on the true counts; "
        "ratio = chosen / exact; ε_θ = fraction × α ε; 'rule': the dp pipeline's ε_θ, "
        "`theta_extra`: max(0.6 α ε, min(ε/2, 0.5, 1200/n)) from ε = 1 up, "
        "(1 − 0.4 α − 0.1) ε at ε ≤ 0.5, linear in between; above ε = 0.5 a fleet of "
        "25–150 devices takes max(that, min(0.86 ε, 1.5, ε*)), ε* where the counts' signal "
        "ratio reaches 8: `CadrBudget.for_pipeline`; 'rule, not run (θ = t)': the "
        "small-fleet rule takes this fleet at that ε, so a dp run searches no θ and uses "
        "t = ⌈√D⌉)",
        "",
        "| ε | fraction | ε_θ | exact θ | median ratio | ratio IQR | within ±25% | exactly |",
        "|---" * 8 + "|",
    ]
    for r in acc["rows"]:
        if "refused" in r:
            fraction = "rule" if r["fraction"] is None else format(r["fraction"], ".2f")
            cells = f"| {r['eps']:g} | {fraction} | refused: {r['refused']} |"
            lines.append(cells + " |" * 5)
            continue
        fraction = "rule" if r["fraction"] is None else format(r["fraction"], ".2f")
        if r.get("small_fleet_theta") is not None:
            fraction = f"rule, not run (θ = {r['small_fleet_theta']})"
        lines.append(
            f"| {r['eps']:g} | {fraction} "
            f"| {r['eps_theta']:.3f} | {r['theta_exact']} "
            f"| {r['median_ratio']:.2f} | {r['ratio_q25']:.2f}–{r['ratio_q75']:.2f} | "
            f"{100 * r['within_25pct']:.0f}% | {100 * r['exact_share']:.0f}% |"
        )
    lines.append("")
    return lines


def _thetas(values: list[int]) -> str:
    return str(values[0]) if len(values) == 1 else f"{min(values)}–{max(values)}"


if __name__ == "__main__":  # python -m ldpfleet.app.cadr_sweep [OPTIONS]: the same command
    from ldpfleet.app import bench_commands

    bench_commands.CADR_SWEEP_PROG = "python -m ldpfleet.app.cadr_sweep"
    typer.run(bench_commands.bench_cadr_sweep)
