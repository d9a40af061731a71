"""``ldpfleet bench cpr``: seed 003's evaluation, in-process (no broker needed).

For each data set (``devices.periodic``: how a periodic stream is built from it), each
trial draws a record and builds a stream of ``n`` samples in [0, 1]; the SAME trial streams
are used for every (ε, w) and every method (common random numbers), so differences between
cells are not sampling noise of the inputs. Trial seeds derive from (seed, data set, trial).

- Detection accuracy per (ε, w): the share of trials whose CPR period (``collector.period``)
  equals the true period exactly.
- Cosine distance per method and ε at one w (``collector.metrics.cosine_distance`` between
  the reconstruction and the clean stream): CPR, SW, SW_moving, SW_filter on SW reports
  at ε0 = ε/w; Laplace (Laplace reports at ε0, then smoothing); LBD (LDP-IDS budget
  division at (ε, w)). Same budget for all.
- Speed: CPR milliseconds per stream of 10,000 reports, and the wall time to reconstruct a
  fleet of such streams with one worker process per core.

The bench's parts, each a module with one job (every name importable from here, as when
this was one module): ``bench_cpr_args`` (limits and argument checks), ``bench_cpr_speed``
(the speed block), ``bench_cpr_grid`` (the period-detection grid, ``--grid``),
``cpr_grid_streams`` (the grid's streams and templates), ``cpr_period_baselines`` (the
grid's two plain detectors), ``bench_cpr_markdown`` (the docs tables). Here: seed 003's
cells, ``bench_cpr`` itself, the false-claim check (``python -m ldpfleet.app.bench_cpr``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import as_completed

import numpy as np
from ldpfleet.app.bench_cpr_args import (
    MAX_FLEET_STREAMS,
    MAX_LENGTH,
    MAX_TRIALS,
    MIN_LENGTH,
    SEED_MAX,
    _check_budgets,
    _check_count,
    _check_distinct,
    _check_names,
    _check_windows,
    check_bench_args,
    check_datasets,
)
from ldpfleet.app.bench_cpr_grid import (
    APERIODIC_EPS0,
    APERIODIC_KINDS,
    APERIODIC_LENGTHS,
    COSINE_TRIALS,
    DETECTORS,
    GRID_DRIFT,
    GRID_EPS0,
    GRID_SHAPES,
    GRID_SOURCES,
    _aperiodic_cell,
    _detect_all,
    _grid_budgets,
    _grid_cell,
    _grid_shapes,
    _grid_sources,
    bench_period_grid,
    claims_upper95,
    grid_cells,
    sign_test_p,
)
from ldpfleet.app.bench_cpr_markdown import (
    BELOW_LEVEL,
    _below,
    _cell_row,
    _grid_cell_table,
    _grid_fallback,
    _grid_false_claims,
    _grid_intro,
    _grid_summary,
    _source_counts,
    _summary_row,
    false_claim_markdown,
    grid_markdown,
    held_out_markdown,
    markdown,
)
from ldpfleet.app.bench_cpr_speed import (
    SLOW_SPEED_CALLS,
    SLOW_SPEED_STREAM,
    _cpu_ms,
    _cpu_speed,
    _detector_speed,
    _slow_stream_line,
    _slow_stream_speed,
    _speed,
    slow_speed_stream,
)
from ldpfleet.app.cpr_grid_streams import (
    GRID_MAX_LENGTH,
    HELD_OUT_GENERATORS,
    HELD_OUT_KINDS,
    HELD_OUT_LENGTHS,
    HELD_OUT_SEED,
    TEMPLATE_FIELD,
    GridTemplate,
    _arma,
    _checked_cycle,
    _clipped,
    _drift_walk,
    _exp_decay,
    _file_stem,
    _fractional,
    _grid_templates,
    _level_shifts,
    _logistic_step,
    _markov_switch,
    _normalise01,
    _occupancy_days,
    _outlier_bursts,
    _split_template_spec,
    _student_t,
    _table,
    _template_error,
    aperiodic_stream,
    grid_stream,
    grid_template,
    load_grid_template,
    source_name,
    trial_rng,
)
from ldpfleet.app.cpr_period_baselines import (
    _baseline_input,
    autocorrelation_period,
    folded_variance_period,
)
from ldpfleet.collector.baselines import laplace_perturb, laplace_smoothed, lbd
from ldpfleet.collector.metrics import cosine_distance
from ldpfleet.collector.period import detect_period
from ldpfleet.collector.pools import interruptible_pool
from ldpfleet.collector.reconstruct import SMOOTHING_WINDOW, reconstruct
from ldpfleet.devices.periodic import (
    DATA_ROOT,
    DATASETS,
    DEFAULT_LENGTH,
    make_trial,
)
from ldpfleet.protocol.sw import SquareWave
from scipy import stats

# the public names: defined here or in the modules this one gathers
__all__ = [
    "APERIODIC_EPS0",
    "APERIODIC_KINDS",
    "APERIODIC_LENGTHS",
    "BELOW_LEVEL",
    "COSINE_TRIALS",
    "DATA_ROOT",
    "DETECTORS",
    "GRID_DRIFT",
    "GRID_EPS0",
    "GRID_MAX_LENGTH",
    "GRID_SHAPES",
    "GRID_SOURCES",
    "HELD_OUT_GENERATORS",
    "HELD_OUT_KINDS",
    "HELD_OUT_LENGTHS",
    "HELD_OUT_SEED",
    "MAX_FLEET_STREAMS",
    "MAX_LENGTH",
    "MAX_TRIALS",
    "MIN_LENGTH",
    "SEED_MAX",
    "SLOW_SPEED_CALLS",
    "SLOW_SPEED_STREAM",
    "TEMPLATE_FIELD",
    "GridTemplate",
    "aperiodic_stream",
    "autocorrelation_period",
    "bench_period_grid",
    "check_bench_args",
    "check_datasets",
    "claims_upper95",
    "false_claim_markdown",
    "folded_variance_period",
    "grid_cells",
    "grid_markdown",
    "grid_stream",
    "grid_template",
    "held_out_markdown",
    "load_grid_template",
    "markdown",
    "sign_test_p",
    "slow_speed_stream",
    "source_name",
    "trial_rng",
]
# private names of the one-module bench this was, kept importable from here (tests call
# ``_slow_stream_speed``, ``_detector_speed``; scripts ``_grid_cell``, ``_normalise01``)
__all__ += [
    "_aperiodic_cell",
    "_arma",
    "_baseline_input",
    "_below",
    "_cell_row",
    "_check_budgets",
    "_check_count",
    "_check_distinct",
    "_check_names",
    "_check_windows",
    "_checked_cycle",
    "_clipped",
    "_cpu_ms",
    "_cpu_speed",
    "_detect_all",
    "_detector_speed",
    "_drift_walk",
    "_exp_decay",
    "_file_stem",
    "_fractional",
    "_grid_budgets",
    "_grid_cell",
    "_grid_cell_table",
    "_grid_fallback",
    "_grid_false_claims",
    "_grid_intro",
    "_grid_shapes",
    "_grid_sources",
    "_grid_summary",
    "_grid_templates",
    "_level_shifts",
    "_logistic_step",
    "_markov_switch",
    "_normalise01",
    "_occupancy_days",
    "_outlier_bursts",
    "_slow_stream_line",
    "_slow_stream_speed",
    "_source_counts",
    "_speed",
    "_split_template_spec",
    "_student_t",
    "_summary_row",
    "_table",
    "_template_error",
]

METHODS = ("cpr", "sw", "sw_moving", "sw_filter", "laplace", "lbd")
DETECTION_EPS = (1.0, 2.0, 3.0, 4.0, 5.0)
DETECTION_W = (5, 10, 15, 20, 25)
COSINE_EPS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0)


def _trial(dataset: str, seed: int, trial: int, n: int):
    return make_trial(dataset, trial_rng(seed, dataset, trial, "stream"), n=n)


def _detection_cell(args: tuple) -> dict:
    dataset, eps, w, trials, n, seed = args
    correct = 0
    for trial in range(trials):
        truth = _trial(dataset, seed, trial, n)
        mechanism = SquareWave(eps / w)
        reports = mechanism.perturb(truth.stream, trial_rng(seed, dataset, trial, f"sw{eps}/{w}"))
        correct += detect_period(reports).period == truth.period
    return {"dataset": dataset, "eps": eps, "w": w, "accuracy": correct / trials}


def _cosine_cell(args: tuple) -> list[dict]:
    dataset, eps, w, trials, n, seed, methods = args
    distances: dict[str, list[float]] = {m: [] for m in methods}
    for trial in range(trials):
        truth = _trial(dataset, seed, trial, n)
        clean = truth.stream
        eps0 = eps / w
        mechanism = SquareWave(eps0)
        reports = mechanism.perturb(clean, trial_rng(seed, dataset, trial, f"sw{eps}/{w}"))
        for method in methods:
            if method == "laplace":
                noisy = laplace_perturb(clean, eps0, trial_rng(seed, dataset, trial, f"lap{eps}"))
                values = laplace_smoothed(noisy, SMOOTHING_WINDOW)
            elif method == "lbd":
                values = lbd(clean, eps, w, trial_rng(seed, dataset, trial, f"lbd{eps}")).release
            else:
                values = reconstruct(method, reports, mechanism).values
            distances[method].append(cosine_distance(values, clean))
    return [
        {
            "dataset": dataset,
            "eps": eps,
            "w": w,
            "method": method,
            "mean": float(np.mean(values)),
            # one trial has no spread to estimate: None (JSON null), not 0.0, which read as
            # an exact mean (helper P, 2026-12-06: --trials 1 printed "sem": 0.0)
            "sem": float(np.std(values, ddof=1) / np.sqrt(len(values)))
            if len(values) > 1
            else None,
        }
        for method, values in distances.items()
    ]


def bench_cpr(
    datasets: tuple[str, ...] = DATASETS,
    *,
    detection_eps: tuple[float, ...] = DETECTION_EPS,
    detection_w: tuple[int, ...] = DETECTION_W,
    cosine_eps: tuple[float, ...] = COSINE_EPS,
    cosine_w: int = 5,
    trials: int = 100,
    n: int = DEFAULT_LENGTH,
    seed: int = 0,
    methods: tuple[str, ...] = METHODS,
    fleet_streams: int = 1000,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Run the evaluation; returns a JSON-ready dict. ``progress(done, total)`` is called
    as each (data set, ε, w) cell finishes (the speed measurement counts as one)."""
    check_datasets(datasets)
    check_bench_args(detection_eps=detection_eps, detection_w=detection_w, cosine_eps=cosine_eps,
                     cosine_w=cosine_w, trials=trials, n=n, seed=seed,
                     fleet_streams=fleet_streams)  # fmt: skip
    workers = workers or os.cpu_count() or 1
    detection_jobs = [
        (d, eps, w, trials, n, seed) for d in datasets for w in detection_w for eps in detection_eps
    ]
    cosine_jobs = [
        (d, eps, cosine_w, trials, n, seed, methods) for d in datasets for eps in cosine_eps
    ]
    started = time.perf_counter()
    total = len(detection_jobs) + len(cosine_jobs) + 1
    with interruptible_pool(max_workers=workers) as pool:
        futures = [pool.submit(_detection_cell, job) for job in detection_jobs]
        futures += [pool.submit(_cosine_cell, job) for job in cosine_jobs]
        if progress is not None:
            progress(0, total)
            for done, _ in enumerate(as_completed(futures), 1):
                progress(done, total)
        results = [future.result() for future in futures]  # in job order
    detection = results[: len(detection_jobs)]
    cosine = [row for rows in results[len(detection_jobs) :] for row in rows]
    evaluation_seconds = time.perf_counter() - started
    cpr_lowest = {}
    for dataset in datasets:
        for eps in cosine_eps:
            rows = [r for r in cosine if r["dataset"] == dataset and r["eps"] == eps]
            best = min(rows, key=lambda r: r["mean"])["method"] if rows else None
            cpr_lowest[f"{dataset} eps={eps:g}"] = best == "cpr"
    speed = _speed(fleet_streams, seed, workers)
    if progress is not None:
        progress(total, total)
    return {
        "bench": "cpr",
        "datasets": list(datasets),
        "n": n,
        "trials": trials,
        "seed": seed,
        "period_match": "exact",
        "detection": detection,
        "cosine_w": cosine_w,
        "cosine": cosine,
        "cpr_lowest_cosine_everywhere": all(cpr_lowest.values()) if cpr_lowest else None,
        "cpr_lowest_cosine": cpr_lowest,
        "evaluation_seconds": round(evaluation_seconds, 1),
        "speed": speed,
    }


# -- the false-claim bound with more trials (issue 19) ----------------------------------------


def _claims_only(args: tuple) -> dict:
    """``detect_period`` alone on an aperiodic cell: the streams of ``_aperiodic_cell`` (same
    trial seeds, so the first trials are the grid's), claims counted."""
    kind, n, eps0, trials, seed = args
    claims = 0
    for trial in range(trials):
        rng = trial_rng(seed, "aperiodic", trial, f"{kind}/{n}/{eps0}")
        reports = SquareWave(eps0).perturb(aperiodic_stream(kind, n, rng), rng)
        claims += detect_period(reports).period is not None
    upper = claims_upper95(claims, trials)
    return {
        "kind": kind,
        "n": n,
        "eps0": eps0,
        "trials": trials,
        "claims": claims,
        "rate": claims / trials,
        "upper95": upper,  # one-sided 95% Clopper-Pearson upper bound of the true rate
        "p_rate_ge_1pct": float(stats.binom.cdf(claims, trials, 0.01)),
    }


def false_claim_check(
    *, trials: int = 2000, seed: int = 0, workers: int | None = None, cells=None
) -> list[dict]:
    """Every aperiodic cell of the grid (or ``cells``: (kind, n, eps0) triples) with
    ``trials`` trials of ``detect_period``: claims, the one-sided 95% Clopper-Pearson upper
    bound of the false-claim rate, and ``P(Bin(trials, 1%) <= claims)`` (the exact p-value
    of "the true rate is >= 1%")."""
    cells = cells or [
        (kind, n, eps0)
        for kind in APERIODIC_KINDS
        for n in APERIODIC_LENGTHS
        for eps0 in APERIODIC_EPS0
    ]
    jobs = [(kind, n, eps0, trials, seed) for kind, n, eps0 in cells]
    with interruptible_pool(max_workers=workers or os.cpu_count() or 1) as pool:
        return list(pool.map(_claims_only, jobs))


def held_out_cells(kinds: tuple[str, ...] = HELD_OUT_KINDS) -> list[tuple[str, int, float]]:
    """The held-out false-claim cells: every kind x ``HELD_OUT_LENGTHS`` x ``APERIODIC_EPS0``
    (run them with ``false_claim_check(cells=..., seed=HELD_OUT_SEED)``)."""
    return [(kind, n, eps0) for kind in kinds for n in HELD_OUT_LENGTHS for eps0 in APERIODIC_EPS0]


def single_period_oracle(
    period: int = 50, cycles: int = 3, eps0=(1.0, 2.0, 5.0), trials: int = 40, seed: int = 0
) -> list[dict]:
    """An upper-bound-style reference for the few-cycle cells: a detector TOLD the true
    period, testing only it (no search, no multiplicity) against WHITE noise alone at 1%
    (one-way ANOVA of the phases, F(T - 1, n - T)), on the grid's own streams (jitter 0.02,
    same trial seeds). Any detector that claims a period on at most 1% of white-noise
    streams and searches over many periods does worse than this; where it is below a
    baseline's accuracy, no such detector can match the baseline."""
    out = []
    for e in eps0:
        for source in GRID_SOURCES:
            hits = 0
            for trial in range(trials):
                tag = f"{source}/{period}/{cycles}/{e}/0.02/0.0"
                rng = trial_rng(seed, "grid", trial, tag)
                clean = grid_stream(grid_template(source, period, rng), period * cycles, rng)
                x = SquareWave(e).perturb(clean, rng).reshape(cycles, period)
                hits += stats.f_oneway(*x.T).pvalue < 0.01
            out.append({"source": source, "eps0": e, "accuracy": hits / trials})
    return out


if __name__ == "__main__":
    # python -m ldpfleet.app.bench_cpr false-claims TRIALS WORKERS [KIND/N/EPS0 ...]
    #     [--markdown] [--seed=S]   (S != 0: held-out streams, not the grid's)
    # python -m ldpfleet.app.bench_cpr grid-shapes WORKERS PERIODxCYCLES ... (JSON)
    import json
    import sys

    seeds = [int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--seed=")]
    argv = [a for a in sys.argv[1:] if a != "--markdown" and not a.startswith("--seed=")]
    if not argv or argv[0] not in ("false-claims", "held-out", "oracle", "grid-shapes"):
        print(
            "usage: python -m ldpfleet.app.bench_cpr false-claims|held-out|oracle|grid-shapes "
            "... (the comment above __main__ in app/bench_cpr.py lists the arguments)",
            file=sys.stderr,
        )
        sys.exit(2)
    if argv[0] == "false-claims":
        chosen = [(k, int(n), float(e)) for k, n, e in (c.split("/") for c in argv[3:])]
        rows = false_claim_check(
            trials=int(argv[1]),
            workers=int(argv[2]),
            cells=chosen or None,
            seed=seeds[-1] if seeds else 0,
        )
        command = "python -m ldpfleet.app.bench_cpr " + " ".join(sys.argv[1:])
        print(false_claim_markdown(rows, command) if "--markdown" in sys.argv else json.dumps(rows))
    elif argv[0] == "held-out":
        # python -m ldpfleet.app.bench_cpr held-out TRIALS WORKERS [KIND ...] [--markdown]
        #     (default: every held-out aperiodic kind; seed HELD_OUT_SEED unless --seed=S)
        rows = false_claim_check(
            trials=int(argv[1]),
            workers=int(argv[2]),
            cells=held_out_cells(tuple(argv[3:]) or HELD_OUT_KINDS),
            seed=seeds[-1] if seeds else HELD_OUT_SEED,
        )
        command = "python -m ldpfleet.app.bench_cpr " + " ".join(sys.argv[1:])
        print(held_out_markdown(rows, command) if "--markdown" in sys.argv else json.dumps(rows))
    elif argv[0] == "oracle":  # python -m ldpfleet.app.bench_cpr oracle
        print(json.dumps(single_period_oracle()))
    elif argv[0] == "grid-shapes":
        shapes = [tuple(int(v) for v in c.split("x")) for c in argv[2:]]
        print(json.dumps(bench_period_grid(workers=int(argv[1]), shapes=shapes)))
