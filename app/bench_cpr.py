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
"""

from __future__ import annotations

import functools
import math
import os
import time
import zlib
from collections.abc import Callable
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ldpfleet.app.suggest import near_miss
from ldpfleet.collector.analytics import reconstruct_streams
from ldpfleet.collector.baselines import laplace_perturb, laplace_smoothed, lbd
from ldpfleet.collector.cpr import cpr, cpr_many, phase_templates
from ldpfleet.collector.metrics import cosine_distance
from ldpfleet.collector.period import check_stream, detect_period
from ldpfleet.collector.pools import interruptible_pool
from ldpfleet.collector.reconstruct import SMOOTHING_WINDOW, reconstruct
from ldpfleet.devices.periodic import (
    DATA_ROOT,
    DATASETS,
    DEFAULT_LENGTH,
    dataset_records,
    make_trial,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanism_contract import EPS_MIN, below_eps_min
from ldpfleet.protocol.stream import StreamConfig
from ldpfleet.protocol.sw import EPS_MAX, SquareWave
from scipy import signal, stats

METHODS = ("cpr", "sw", "sw_moving", "sw_filter", "laplace", "lbd")
DETECTION_EPS = (1.0, 2.0, 3.0, 4.0, 5.0)
DETECTION_W = (5, 10, 15, 20, 25)
COSINE_EPS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0)
MIN_LENGTH = 3 * 48  # 3 cycles of the longest period a data set draws (synthetic: 12 .. 48)
# bench cpr's upper limits (docs/cpr.md "Options"; helper Q's held-out QA: --trials and
# --fleet-streams 1e11 ran without end, --n 1e12 was numpy's MemoryError traceback)
MAX_LENGTH = 1_000_000  # samples per stream (8 MB a stream), as GRID_MAX_LENGTH below
MAX_TRIALS = 10_000  # trials per cell (and --grid-trials, --aperiodic-trials)
MAX_FLEET_STREAMS = 10_000  # streams of 10,000 reports: 10,000 x 80 kB = 0.8 GB in memory
SEED_MAX = 2**63 - 1  # as --seed of ldpfleet run ([scenario] seed)


def _check_count(value: object, field: str, minimum: int, maximum: int | None = None) -> None:
    """An integer in [minimum, maximum] (no upper limit when ``maximum`` is None)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ParameterError(
            f"must be an integer >= {minimum}, got {value!r}",
            field=field,
            limit=f"an integer >= {minimum}",
            value=value,
        )
    if maximum is not None and value > maximum:
        raise ParameterError(
            f"must be an integer <= {maximum:,}, got {value!r}",
            field=field,
            limit=f"an integer <= {maximum:,}",
            value=value,
        )


def _check_budgets(values: tuple, field: str) -> None:
    if not values:
        raise ParameterError(
            "must name at least one budget", field=field, limit="at least one budget", value=values
        )
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise ParameterError(
                f"must be a number, got {value!r}", field=field, limit="a number", value=value
            )
        if not (np.isfinite(value) and value > 0):
            raise ParameterError(
                f"must be finite and > 0, got {value!r}",
                field=field,
                limit="finite and > 0",
                value=value,
            )
    _check_distinct(values, field, label=lambda value: f"{value:g}")


def _check_distinct(values, field: str, label=repr) -> None:
    """Refuse a value given twice (``label``: how the results name it; budgets by ``:g``,
    6 significant digits, the key of ``cpr_lowest_cosine`` and the tables' column heads):
    ``--eps 1 --eps 1`` ran every cell twice and printed two identical columns."""
    seen: dict[str, object] = {}
    for value in values:
        key = label(value)
        if key in seen:
            raise ParameterError(
                f"each value once (distinct to 6 significant digits for a budget), got "
                f"{seen[key]!r} and {value!r}",
                field=field,
                limit="each value once (distinct to 6 significant digits for a budget)",
                value=value,
            )
        seen[key] = value


def _check_names(names, allowed, field: str, noun: str) -> None:
    """At least one name, each one of ``allowed``, each once."""
    if not names:
        raise ParameterError(
            f"must name at least one {noun}", field=field, limit=f"at least one {noun}", value=names
        )
    for name in names:
        if name not in allowed:
            raise ParameterError(
                f"{name!r} is not one of {', '.join(allowed)}{near_miss(name, allowed)}",
                field=field,
                limit=f"one of {', '.join(allowed)}",
                value=name,
            )
    _check_distinct(names, field)


def check_datasets(datasets) -> None:
    """Data sets of ``devices.periodic.DATASETS``, each once."""
    _check_names(datasets, DATASETS, "datasets", "data set")


def _check_windows(detection_w, cosine_w, n) -> None:
    """Windows of 1 .. n reports each, listed once: a window longer than the stream spends
    eps / w per report on reports that do not exist (``--w 100000 --n 200`` printed
    accuracy 0.0 for every cell, silently)."""
    if not detection_w:
        raise ParameterError(
            "must name at least one window",
            field="w",
            limit="at least one window",
            value=detection_w,
        )
    for field, w in [("cosine_w", cosine_w)] + [("w", w) for w in detection_w]:
        _check_count(w, field, 1)
        if w > n:
            raise ParameterError(
                f"must be <= --n ({n}), the samples per stream: a window longer than the "
                f"stream is not a window of it, got {w!r}",
                field=field,
                limit=f"<= --n ({n})",
                value=w,
            )
    _check_distinct(detection_w, "w")


def check_bench_args(*, detection_eps=(1.0,), detection_w=(1,), cosine_eps=(1.0,), cosine_w=1,
                     trials=1, n=MIN_LENGTH, seed=0, fleet_streams=0) -> None:  # fmt: skip
    """Refuse what ``bench_cpr`` cannot evaluate, naming the field, the limit and the value
    (held-out, u5: ``--trials 0``, ``--w 0``, ``--n 0`` and ``--seed -1`` ended in
    tracebacks; ``--trials -3`` printed NaN means, ``--cosine-w -2`` was reported as a bad
    ``eps``)."""
    _check_count(trials, "trials", 1, MAX_TRIALS)
    _check_count(n, "n", MIN_LENGTH, MAX_LENGTH)
    _check_count(seed, "seed", 0, SEED_MAX)
    _check_count(fleet_streams, "fleet_streams", 0, MAX_FLEET_STREAMS)
    _check_windows(detection_w, cosine_w, n)
    _check_budgets(detection_eps, "eps")
    _check_budgets(cosine_eps, "cosine_eps")
    # each report spends eps / w (w-event LDP); the mechanisms take [EPS_MIN, EPS_MAX]
    for field, budgets, windows in (("eps", detection_eps, detection_w),
                                    ("cosine_eps", cosine_eps, (cosine_w,))):  # fmt: skip
        eps, w = max(budgets), min(windows)
        if eps / w > EPS_MAX:
            raise ParameterError(
                f"must be <= {EPS_MAX:g} x the window ({w}): each report spends eps / w, "
                f"got {eps!r}",
                field=field,
                limit=f"<= {EPS_MAX:g} x the window ({w})",
                value=eps,
            )
        eps, w = min(budgets), max(windows)
        if eps / w < EPS_MIN:
            raise ParameterError(
                f"must be >= {EPS_MIN:g} x the window ({w}) = {EPS_MIN * w:g}: each report "
                f"spends eps / w, and below {EPS_MIN:g} per report Square Wave degenerates "
                f"(p == q), got {eps!r}",
                field=field,
                limit=f">= {EPS_MIN:g} x the window ({w}) = {EPS_MIN * w:g}",
                value=eps,
            )


def trial_rng(seed: int, dataset: str, trial: int, purpose: str) -> np.random.Generator:
    """Independent, reproducible randomness per (seed, data set, trial, purpose)."""
    return np.random.default_rng(
        [seed, zlib.crc32(dataset.encode()), trial, zlib.crc32(purpose.encode())]
    )


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
            "sem": float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0,
        }
        for method, values in distances.items()
    ]


def _cpu_ms(call: Callable[[], object]) -> float:
    started = time.process_time()
    call()
    return 1000 * (time.process_time() - started)


def _cpu_speed(mechanism: SquareWave, reports: np.ndarray, rng: np.random.Generator) -> dict:
    """CPU time (``time.process_time``, not disturbed by other processes' load the way wall
    time is): the 10,000-report stream (median of 20), synthetic streams of 100 and 1,000
    reports (median over 32 streams), and the same short streams in one chunk of 64
    (``cpr_many``, as the analytics pool runs them), per stream."""
    out = {
        "cpr_cpu_ms_10k_median": round(
            float(np.median([_cpu_ms(lambda: cpr(reports, mechanism)) for _ in range(20)])), 2
        )
    }
    for n, key in ((100, "100"), (1000, "1k")):
        streams = [
            mechanism.perturb(make_trial("synthetic", rng, n=n).stream, rng) for _ in range(64)
        ]
        cpr(streams[0], mechanism)
        one = [_cpu_ms(functools.partial(cpr, y, mechanism)) for y in streams[:32]]
        out[f"cpr_cpu_ms_{key}_median"] = round(float(np.median(one)), 3)
        out[f"cpr_many_cpu_ms_{key}_per_stream"] = round(
            _cpu_ms(functools.partial(cpr_many, streams, mechanism)) / len(streams),
            3,
        )
    return out


SLOW_SPEED_STREAM = ("intel", 1000, 10, 5.0)  # (source, period, cycles, eps0); _slow_stream_speed
SLOW_SPEED_CALLS = 10  # ... calls timed (CPU time; the median and the maximum reported)


def slow_speed_stream(seed: int) -> np.ndarray:
    """The issue-19 worst case of ``detect_period`` as a bench stream: 10,000 SW reports of
    a grid template with period 1,000 (10 cycles, amplitude jitter 0.02), ``SLOW_SPEED_STREAM``
    (intel at eps0 = 5: the slowest of the bench-grid sources x eps0 0.2 / 1 / 5 at
    T = 1,000 on the code of 2026-12-05, 47.8 ms CPU there; long periods cost most: the
    integer refinement folds ~250 neighbours of 1,000-3,000 samples, docs/cpr.md "Speed")."""
    source, period, cycles, eps0 = SLOW_SPEED_STREAM
    rng = np.random.default_rng([seed, period, int(10 * eps0)])
    clean = grid_stream(grid_template(source, period, rng), period * cycles, rng, 0.02, 0.0)
    return SquareWave(eps0).perturb(clean, rng)


def _slow_stream_speed(seed: int, calls: int = SLOW_SPEED_CALLS) -> dict:
    """``detect_period``'s CPU time on ``slow_speed_stream`` (after one warm-up call): the
    median and the maximum of ``calls`` calls, and which stream it is (issue 19's budget:
    one 10,000-report stream under 50 ms)."""
    reports = slow_speed_stream(seed)
    detect_period(reports)
    timings = [_cpu_ms(functools.partial(detect_period, reports)) for _ in range(calls)]
    source, period, cycles, eps0 = SLOW_SPEED_STREAM
    return {
        "detect_period_10k_t1000_stream": (
            f"{source}, T = {period}, {cycles} cycles ({period * cycles:,} reports), "
            f"eps0 = {eps0:g}"
        ),
        "detect_period_cpu_ms_10k_t1000_median": round(float(np.median(timings)), 2),
        "detect_period_cpu_ms_10k_t1000_max": round(float(np.max(timings)), 2),
    }


def _slow_stream_line(speed: dict) -> list[str]:
    """The report line of ``_slow_stream_speed`` (none for results without it)."""
    if "detect_period_cpu_ms_10k_t1000_median" not in speed:
        return []
    return [
        f"detect_period CPU time on the slow stream ({speed['detect_period_10k_t1000_stream']}): "
        f"{speed['detect_period_cpu_ms_10k_t1000_median']} ms median, "
        f"{speed['detect_period_cpu_ms_10k_t1000_max']} ms max of {SLOW_SPEED_CALLS}."
    ]


def _speed(fleet_streams: int, seed: int, workers: int) -> dict:
    rng = np.random.default_rng(seed)
    mechanism = SquareWave(1.0)
    one = make_trial("synthetic", rng, n=10_000)
    reports = mechanism.perturb(one.stream, rng)
    cpr(reports, mechanism)  # warm caches (transition matrices, imports)
    timings = []
    for _ in range(20):
        started = time.perf_counter()
        cpr(reports, mechanism)
        timings.append(time.perf_counter() - started)
    result = {
        "cpr_ms_per_stream_10k_median": round(1000 * float(np.median(timings)), 2),
        "cpr_ms_per_stream_10k_max": round(1000 * float(np.max(timings)), 2),
    }
    result.update(_cpu_speed(mechanism, reports, np.random.default_rng([seed, 1])))
    result.update(_slow_stream_speed(seed))
    if fleet_streams:
        streams = {
            f"d{i:05d}": mechanism.perturb(make_trial("synthetic", rng, n=10_000).stream, rng)
            for i in range(fleet_streams)
        }
        config = StreamConfig("bench", "sw", 5.0, 5, 10_000, 100, 0.0, 1.0)
        started = time.perf_counter()
        out = reconstruct_streams(config, streams, "cpr", workers=workers)
        result.update(
            fleet_streams=len(out),
            fleet_reports_per_stream=10_000,
            fleet_workers=workers,
            fleet_seconds=round(time.perf_counter() - started, 2),
        )
    return result


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


def markdown(result: dict, command: str) -> str:
    """The docs tables: detection accuracy per (ε, w) and cosine distance per method/ε."""
    lines = [
        f"Generated by `{command}` (n = {result['n']}, {result['trials']} trials per cell).",
        "",
    ]
    eps_values = sorted({r["eps"] for r in result["detection"]})
    for dataset in result["datasets"]:
        rows = [r for r in result["detection"] if r["dataset"] == dataset]
        if not rows:
            continue
        lines += [f"**Detection accuracy (%), {dataset}**", ""]
        lines.append("| w \\ ε | " + " | ".join(f"{e:g}" for e in eps_values) + " |")
        lines.append("|---" * (len(eps_values) + 1) + "|")
        for w in sorted({r["w"] for r in rows}):
            cells = {r["eps"]: r["accuracy"] for r in rows if r["w"] == w}
            lines.append(
                f"| {w} | " + " | ".join(f"{100 * cells[e]:.0f}" for e in eps_values) + " |"
            )
        lines.append("")
    methods = list(dict.fromkeys(r["method"] for r in result["cosine"]))
    cos_eps = sorted({r["eps"] for r in result["cosine"]})
    for dataset in result["datasets"]:
        rows = [r for r in result["cosine"] if r["dataset"] == dataset]
        if not rows:
            continue
        lines += [
            f"**Mean cosine distance, {dataset}, w = {result['cosine_w']}** (lower is better)",
            "",
        ]
        lines.append("| method \\ ε | " + " | ".join(f"{e:g}" for e in cos_eps) + " |")
        lines.append("|---" * (len(cos_eps) + 1) + "|")
        for method in methods:
            cells = {r["eps"]: r["mean"] for r in rows if r["method"] == method}
            lines.append(f"| {method} | " + " | ".join(f"{cells[e]:.3f}" for e in cos_eps) + " |")
        lines.append("")
    speed = result["speed"]
    lines.append(
        f"CPR on one stream of 10,000 reports: {speed['cpr_ms_per_stream_10k_median']} ms (median)"
        + (
            f"; {speed['fleet_streams']} such streams with {speed['fleet_workers']} workers: "
            f"{speed['fleet_seconds']} s."
            if "fleet_seconds" in speed
            else "."
        )
    )
    if "cpr_cpu_ms_10k_median" in speed:
        lines.append(
            f"CPU time (median): 10,000 reports {speed['cpr_cpu_ms_10k_median']} ms; "
            f"1,000 reports {speed['cpr_cpu_ms_1k_median']} ms "
            f"({speed['cpr_many_cpu_ms_1k_per_stream']} ms per stream in a chunk of 64); "
            f"100 reports {speed['cpr_cpu_ms_100_median']} ms "
            f"({speed['cpr_many_cpu_ms_100_per_stream']} ms in a chunk of 64)."
        )
    lines += _slow_stream_line(speed)
    return "\n".join(lines)


# -- the period-detection grid (issue 19): the detector against two plain baselines ----------

GRID_SOURCES = (
    "darwin",
    "darwin_column",
    "music",
    "raisin",
    "occupancy",
    "intel",
    "wisdm",
    "square",
    "spikes",
    "sawtooth",
    "two_harmonics",
)
GRID_SHAPES = (  # (period, cycles): n = period x cycles; periods 8 .. n / 3, cycles 3 .. 60
    (8, 60),
    (12, 30),
    (25, 12),
    (50, 3),
    (144, 12),
    (144, 30),
    (174, 12),
    (400, 5),
)
GRID_EPS0 = (0.2, 0.5, 1.0, 2.0, 5.0)
GRID_MAX_LENGTH = 1_000_000  # samples of one grid stream (a user's own --grid-shape)
GRID_DRIFT = ((0.02, 0.0), (0.05, 0.0), (0.02, 0.02))  # (amplitude jitter, phase drift)
APERIODIC_KINDS = ("white", "random_walk", "ar1", "ar1_slow", "trend")
APERIODIC_LENGTHS = (150, 300, 1000, 3000)
APERIODIC_EPS0 = (0.2, 1.0, 5.0)
DETECTORS = ("detect_period", "folded_variance", "autocorrelation")
COSINE_TRIALS = 10  # grid cells: cosine distances on the first 10 trials (EM is the cost)


# -- a user's own templates (--grid-template FILE[:COLUMN]): one cycle each, as a record -----

TEMPLATE_FIELD = "grid_template"  # the CLI shows it as --grid-template


@dataclass(frozen=True, eq=False)
class GridTemplate:
    """A user's own grid template: ``cycle`` (at least 2 finite numbers, not all equal) is
    ONE cycle of the pattern, its length the native period. It is used exactly as a record
    of a built-in data-set source (``grid_template``): scaled to [0, 1], resampled to each
    grid period by periodic linear interpolation, tiled by ``grid_stream``. ``name``
    (``stem:column``, e.g. ``datatest2:CO2``) is the ``source`` of its result rows; a colon
    never occurs in a built-in source's name."""

    name: str
    cycle: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ParameterError(
                f"name must be a non-empty text, got {self.name!r}",
                field=TEMPLATE_FIELD,
                limit="a non-empty text",
                value=self.name,
            )
        object.__setattr__(self, "cycle", _checked_cycle(self.name, self.cycle))

    @property
    def table(self) -> np.ndarray:
        """The template as a one-record table, as ``_table`` gives a built-in data set."""
        return self.cycle[np.newaxis, :]


def _split_template_spec(spec: str) -> tuple[str, str | None]:
    """``FILE[:COLUMN]`` as (file, column or None): a spec naming an existing file is the
    file (a path may hold a colon); else the longest part before a colon that names an
    existing file is the file and everything after that colon the column, which may hold
    colons itself (``meter.csv:load:kW``; issue 19, helper A: the split at the last colon
    looked for a file ``meter.csv:load``); if no such part exists, the text after the last
    colon is the column (the reader then names the missing file)."""
    if os.path.exists(spec) or ":" not in spec:
        return spec, None
    cuts = [i for i, char in enumerate(spec) if char == ":" and i > 0]
    for cut in reversed(cuts):  # the longest file first: "C:" or "a:b" folders stay whole
        if os.path.isfile(spec[:cut]):
            return spec[:cut], spec[cut + 1 :]
    path, _, column = spec.rpartition(":")
    if not path:
        return spec, None
    return path, column


def _template_error(spec: str, reason: str, *, limit: str, value: object) -> ParameterError:
    """The refusal of template ``spec``: ``reason`` after the quoted spec, ``limit`` the rule
    broken and ``value`` the value refused (as ``ParameterError.limit`` / ``.value``)."""
    # quoted: "FILE:COLUMN: ..." unquoted read ":COLUMN:" as an emoji code in the CLI's
    # rich console (bad.csv:v: printed "bad.csv✌")
    return ParameterError(f"{spec!r}: {reason}", field=TEMPLATE_FIELD, limit=limit, value=value)


def load_grid_template(spec: str) -> GridTemplate:
    """Read ``FILE[:COLUMN]`` (CSV, TSV or one number a line; a header line or none; gzip,
    bzip2 and xz unpacked) with the scenarios' reader (``devices.sources.CsvSpec``): the
    column by header name or 0-based index among the numeric columns, the first numeric
    column without one. Its values are one cycle (``GridTemplate``). A missing file, an
    unknown column, a non-numeric or missing cell (NaN, text: named by line and value),
    fewer than 2 values, more than ``GRID_MAX_LENGTH`` or a constant column is a
    ``ParameterError`` on ``grid_template`` naming the spec and the value."""
    from ldpfleet.devices.sources import CsvSpec, SourceError, csv_stream, table_columns

    if not isinstance(spec, str) or not spec:
        raise ParameterError(
            f"must be FILE[:COLUMN], got {spec!r}",
            field=TEMPLATE_FIELD,
            limit="FILE[:COLUMN]",
            value=spec,
        )
    path, column = _split_template_spec(spec)
    if column == "":
        raise _template_error(
            spec,
            "the column after ':' is empty (a name or a 0-based index)",
            limit="a column name or a 0-based index after ':'",
            value=spec,
        )
    try:
        names, rows = table_columns(path)
        if column is None:
            column = 0
        elif column not in names and column.isdigit():
            column = int(column)  # a 0-based index among the numeric columns
        source = CsvSpec(path, column)
        values = csv_stream(source, 0, 1, rows)[0] if rows else np.empty(0)
    except SourceError as error:
        # the scenarios' advice on gaps (source.missing = ...) has no grid option
        reason = error.reason.split(": set source.missing", 1)[0]
        raise _template_error(
            spec, reason, limit="a readable file with that numeric column", value=spec
        ) from None
    column_name = names[source.column] if isinstance(source.column, int) else source.column
    return GridTemplate(f"{_file_stem(path)}:{column_name}", _checked_cycle(spec, values))


def _file_stem(path: str) -> str:
    """The file's name without its compression and table suffixes (``day.csv.gz``: day)."""
    name = Path(path).name
    for suffix in (".gz", ".bz2", ".xz"):
        name = name.removesuffix(suffix)
    return Path(name).stem or name


def _checked_cycle(spec: str, values: object) -> np.ndarray:
    """``values`` as a read-only float cycle: 1-D, 2 .. GRID_MAX_LENGTH finite numbers, not
    all equal."""
    try:
        values = np.array(values, dtype=float)
    except (TypeError, ValueError):
        raise _template_error(
            spec,
            f"a cycle must be numbers, got {values!r:.80}",
            limit="numbers",
            value=values,
        ) from None
    if values.ndim != 1:
        raise _template_error(
            spec,
            f"a cycle must be 1-D, got shape {values.shape}",
            limit="a 1-D cycle (value: its shape)",
            value=values.shape,
        )
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        k = int(bad[0])
        raise _template_error(
            spec,
            f"value {k} (0-based) is {float(values[k])!r}: need finite numbers",
            limit="finite numbers (value: the first bad one)",
            value=float(values[k]),
        )
    if values.size < 2:
        raise _template_error(
            spec,
            f"a cycle needs at least 2 numbers, got {values.size} ({values.tolist()!r})",
            limit="at least 2 numbers (value: the count)",
            value=values.size,
        )
    if values.size > GRID_MAX_LENGTH:
        raise _template_error(
            spec,
            f"a cycle holds at most {GRID_MAX_LENGTH:,} numbers, got {values.size:,}",
            limit=f"at most {GRID_MAX_LENGTH:,} numbers (value: the count)",
            value=values.size,
        )
    if np.ptp(values) == 0:
        raise _template_error(
            spec,
            f"every one of its {values.size} values is {values[0]:g}: a constant column has "
            "no cycle to detect",
            limit="values not all equal (value: the one value)",
            value=float(values[0]),
        )
    values.flags.writeable = False
    return values


def _grid_templates(templates) -> tuple[GridTemplate, ...]:
    """``templates`` (specs or ``GridTemplate``s) loaded, each name once."""
    if templates is None:
        return ()
    templates = (templates,) if isinstance(templates, str | GridTemplate) else tuple(templates)
    loaded = tuple(t if isinstance(t, GridTemplate) else load_grid_template(t) for t in templates)
    seen: dict[str, int] = {}
    for k, template in enumerate(loaded):
        if template.name in seen:
            raise ParameterError(
                f"each template once: {templates[seen[template.name]]!r} and "
                f"{templates[k]!r} are both named {template.name!r} (file stem and column)",
                field=TEMPLATE_FIELD,
                limit="each template once",
                value=templates[k],
            )
        seen[template.name] = k
    return loaded


def source_name(source: str | GridTemplate) -> str:
    """The ``source`` a grid row carries: a built-in's name or a user template's."""
    return source.name if isinstance(source, GridTemplate) else source


def _baseline_input(x: object, min_period: int, max_period: int | None):
    """The centred stream and the periods a baseline scans, or None when there is nothing to
    scan (no period in ``min_period .. max_period``, ``n // 3`` by default, or a constant
    stream). Bad input is a ``ParameterError`` naming ``x`` or its sample ``x[k]``
    (``collector.period.check_stream``); the stream is brought into ``[0.5, 1)`` by a power
    of two first (exact: the answer is that of the unscaled stream), so samples near the
    float range do not overflow the squares."""
    arr = check_stream(x, "x")
    n = arr.size
    max_period = n // 3 if max_period is None else max_period
    top = float(np.max(np.abs(arr))) if n else 0.0
    if max_period < min_period or top == 0.0:
        return None
    arr = np.ldexp(arr, -math.frexp(top)[1])
    centred = arr - float(np.mean(arr))
    if not np.any(centred):
        return None
    return centred, np.arange(min_period, max_period + 1)


def folded_variance_period(x: np.ndarray, min_period: int = 2, max_period: int | None = None):
    """Plain folded-variance baseline: for every ``T``, fold the whole cycles
    (``k = n // T``) of the centred stream, score the folded mean's energy above the noise
    floor ``mean(m_T^2) - mean(var_T) / k`` and return the smallest ``T`` within 90% of the
    best score. Never abstains on a stream with a period to scan; ``None`` where there is
    none (fewer than ``3 * min_period`` samples, or a constant stream)."""
    checked = _baseline_input(x, min_period, max_period)
    if checked is None:
        return None
    x, periods = checked
    n = x.size
    score = np.empty(periods.size)
    for i, period in enumerate(periods):
        k = n // period
        seg = x[: k * period].reshape(k, period)
        score[i] = np.mean(seg.mean(axis=0) ** 2) - np.mean(seg.var(axis=0, ddof=1)) / k
    best = float(score.max())
    if best <= 0.0:
        return int(periods[int(np.argmax(score))])
    return int(periods[np.flatnonzero(score >= 0.9 * best)[0]])


def autocorrelation_period(x: np.ndarray, min_period: int = 2, max_period: int | None = None):
    """Plain autocorrelation baseline: the unbiased sample autocorrelation
    ``r_T = (sum_t x_t x_{t+T} / (n - T)) / (sum_t x_t^2 / n)`` of the centred stream; the
    smallest ``T`` within 90% of the best ``r_T``. Never abstains on a stream with a period
    to scan; ``None`` where there is none (as ``folded_variance_period``)."""
    checked = _baseline_input(x, min_period, max_period)
    if checked is None:
        return None
    x, periods = checked
    n = x.size
    max_period = int(periods[-1])
    nfft = 1 << (2 * n - 1).bit_length()
    spec = np.fft.rfft(x, nfft)
    ac = np.fft.irfft(spec.real**2 + spec.imag**2, nfft)[: max_period + 1]
    r = ac / (n - np.arange(max_period + 1)) / (ac[0] / n)
    r = r[min_period:]
    best = float(r.max())
    if best <= 0.0:
        return min_period + int(np.argmax(r))
    return min_period + int(np.flatnonzero(r >= 0.9 * best)[0])


def _normalise01(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, float)
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else np.zeros_like(values)


@functools.cache
def _occupancy_days() -> np.ndarray:
    """Daily cycles of UCI Occupancy light: 10-minute means, one row per full day (T = 144)."""
    import csv

    path = DATA_ROOT / "uci-occupancy" / "datatraining.txt"
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))[1:]
    stamps = np.array([np.datetime64(r[1].replace(" ", "T")) for r in rows])
    light = np.array([float(r[4]) for r in rows])
    minute = (stamps - stamps[0].astype("datetime64[D]")).astype("timedelta64[m]").astype(int)
    slot = minute // 10
    sums = np.bincount(slot, weights=light)
    counts = np.bincount(slot)
    full = sums.size // 144
    means = np.divide(sums, counts, out=np.full(sums.size, np.nan), where=counts > 0)
    days = means[: full * 144].reshape(full, 144)
    ok = np.isfinite(days).all(axis=1)
    return days[ok]


@functools.cache
def _table(source: str) -> np.ndarray:
    if source == "darwin":
        return dataset_records("darwin")
    if source == "darwin_column":  # one feature over the 174 participants (T = 174)
        return dataset_records("darwin").T
    if source in ("music", "raisin"):
        return dataset_records(source)
    if source == "occupancy":
        return _occupancy_days()
    if source == "intel":  # one sensor's first day of half-hour temperatures (T = 48)
        rows = np.loadtxt(DATA_ROOT / "intel-lab" / "intelTemperatureTrain.csv", delimiter=",")
        return rows[:, :48]
    if source == "wisdm":  # one example's binned X, Y, Z acceleration distributions (30)
        path = DATA_ROOT / "wisdm-v1.1-transformed" / "WISDM_ar_v1.1_transformed.arff"
        lines = path.read_text().split("@data", 1)[1].split()
        rows = [line.split(",")[2:32] for line in lines if line.count(",") > 32]
        table = np.array([[float(v) for v in row] for row in rows[:2000]])
        return table[np.ptp(table, axis=1) > 0]
    raise ValueError(source)


def grid_template(source: str | GridTemplate, period: int, rng: np.random.Generator) -> np.ndarray:
    """One cycle of ``period`` samples in [0, 1]: a data-set record (resampled to ``period``
    by periodic linear interpolation when its native length differs), a user's own
    ``GridTemplate`` (the same way: a table of one record) or a synthetic shape."""
    u = (np.arange(period) / period + rng.random()) % 1.0
    if source == "square":
        return (u < 0.5).astype(float)
    if source == "spikes":
        width = max(1, period // 12)
        out = np.zeros(period)
        out[(np.arange(width) + rng.integers(period)) % period] = 1.0
        return out
    if source == "sawtooth":
        return u
    if source == "two_harmonics":
        return _normalise01(np.sin(2 * np.pi * u) + 0.8 * np.sin(4 * np.pi * u + rng.random() * 6))
    table = source.table if isinstance(source, GridTemplate) else _table(source)
    cycle = _normalise01(table[int(rng.integers(len(table)))])
    while np.ptp(cycle) == 0:
        cycle = _normalise01(table[int(rng.integers(len(table)))])
    if cycle.size == period:
        return cycle
    grid = np.arange(period) * cycle.size / period
    return np.interp(grid, np.arange(cycle.size + 1), np.append(cycle, cycle[0]))


def grid_stream(cycle, n, rng, jitter=0.02, drift=0.0) -> np.ndarray:
    """Repeat ``cycle`` to ``n`` samples with amplitude jitter N(0, jitter^2) and, if
    ``drift > 0``, phase drift: sample ``t`` reads the cycle at ``t + D_t`` with ``D`` a
    random walk of step sd ``drift`` samples (a jittery clock), clipped to [0, 1]."""
    period = cycle.size
    t = np.arange(n, dtype=float)
    if drift > 0:
        t = t + np.cumsum(drift * rng.standard_normal(n))
    pos = t % period
    base = np.interp(pos, np.arange(period + 1), np.append(cycle, cycle[0]))
    return np.clip(base + jitter * rng.standard_normal(n), 0.0, 1.0)


def aperiodic_stream(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Aperiodic inputs in [0, 1]: iid uniform, a random walk, AR(1) (phi = 0.95; ``ar1_slow``:
    phi = 0.99; ``ar1_<phi>``, e.g. ``ar1_0.98``: that phi in (-1, 1), for calibration runs
    outside the grid), a linear trend with noise (sd 0.05)."""
    if kind == "white":
        return rng.random(n)
    if kind == "random_walk":
        return _normalise01(np.cumsum(rng.standard_normal(n)))
    if kind.startswith("ar1"):
        phi = {"ar1": 0.95, "ar1_slow": 0.99}.get(kind)
        if phi is None:
            try:
                phi = float(kind.removeprefix("ar1_"))
            except ValueError:
                raise ValueError(kind) from None
            if not -1.0 < phi < 1.0:
                raise ValueError(f"kind {kind!r}: phi must be in (-1, 1), got {phi}")
        return _normalise01(signal.lfilter([1.0], [1.0, -phi], rng.standard_normal(n)))
    if kind == "trend":
        return np.clip(np.linspace(0.1, 0.9, n) + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    if kind in HELD_OUT_GENERATORS:
        return HELD_OUT_GENERATORS[kind](n, rng)
    raise ValueError(kind)


# -- held-out aperiodic families (issue 19): chosen before measuring, never calibrated on ------


def _arma(ar: tuple[float, ...], ma: tuple[float, ...], n: int, rng) -> np.ndarray:
    """``n`` samples of the ARMA process ``(1 - sum ar_i B^i) x = (1 + sum ma_i B^i) e`` after
    a burn-in of 500 samples (e iid N(0, 1)), scaled to [0, 1]."""
    burn = 500
    e = rng.standard_normal(n + burn)
    return _normalise01(signal.lfilter([1.0, *ma], [1.0, *(-a for a in ar)], e)[burn:])


def _level_shifts(n: int, rng) -> np.ndarray:
    """Piecewise constant: 1-3 change points at uniform positions, iid N(0, 1) levels."""
    cuts = np.sort(rng.choice(np.arange(1, n), size=int(rng.integers(1, 4)), replace=False))
    levels = rng.standard_normal(cuts.size + 1)
    return _normalise01(levels[np.searchsorted(cuts, np.arange(n), side="right")])


def _drift_walk(n: int, rng) -> np.ndarray:
    """A random walk with drift: steps N(0.1, 1)."""
    return _normalise01(np.cumsum(0.1 + rng.standard_normal(n)))


def _fractional(d: float, n: int, rng) -> np.ndarray:
    """Long memory: ARFIMA(0, d, 0), the MA(inf) weights ``psi_k = psi_{k-1} (k - 1 + d) / k``
    truncated at ``n + 2000`` lags, applied to iid N(0, 1) by FFT convolution; the last ``n``
    samples."""
    m = n + 2000
    k = np.arange(1, m)
    psi = np.concatenate(([1.0], np.cumprod((k - 1 + d) / k)))
    return _normalise01(signal.fftconvolve(rng.standard_normal(m), psi)[m - n : m])


def _logistic_step(n: int, rng) -> np.ndarray:
    """One smooth step ``1 / (1 + exp(-(t - t0) / w))``, ``t0`` uniform in the middle 60 %,
    ``w`` in [0.01 n, 0.1 n], plus N(0, 0.05^2), clipped to [0, 1]."""
    t = np.arange(n)
    t0 = rng.uniform(0.2, 0.8) * n
    width = rng.uniform(0.01, 0.1) * n
    step = 0.1 + 0.8 / (1.0 + np.exp(-(t - t0) / width))
    return np.clip(step + 0.05 * rng.standard_normal(n), 0.0, 1.0)


def _exp_decay(n: int, rng) -> np.ndarray:
    """``0.1 + 0.8 exp(-t / tau)``, ``tau`` in [0.05 n, 0.5 n], plus N(0, 0.05^2), clipped."""
    tau = rng.uniform(0.05, 0.5) * n
    decay = 0.1 + 0.8 * np.exp(-np.arange(n) / tau)
    return np.clip(decay + 0.05 * rng.standard_normal(n), 0.0, 1.0)


def _student_t(n: int, rng) -> np.ndarray:
    """iid Student t with 2 degrees of freedom (heavy tails), scaled to [0, 1] by min/max."""
    return _normalise01(rng.standard_t(2.0, n))


def _outlier_bursts(n: int, rng) -> np.ndarray:
    """A quiet level 0.2 + N(0, 0.05^2) with sparse bursts: Poisson(1 + n / 300) bursts at
    uniform positions, each 1-5 samples long at a level uniform in [0.6, 1]; clipped."""
    x = 0.2 + 0.05 * rng.standard_normal(n)
    for _ in range(int(rng.poisson(1.0 + n / 300.0))):
        start = int(rng.integers(n))
        x[start : start + int(rng.integers(1, 6))] = rng.uniform(0.6, 1.0)
    return np.clip(x, 0.0, 1.0)


def _markov_switch(n: int, rng) -> np.ndarray:
    """A sticky two-state regime: stay with probability 0.98 (mean stay 50 samples), levels
    0.3 and 0.7, plus N(0, 0.1^2), clipped."""
    switches = rng.random(n) < 0.02
    state = (int(rng.integers(2)) + np.cumsum(switches)) % 2
    return np.clip(0.3 + 0.4 * state + 0.1 * rng.standard_normal(n), 0.0, 1.0)


def _clipped(n: int, rng) -> np.ndarray:
    """AR(1) phi = 0.8 standardised, ``0.5 + 0.6 z`` clipped to [0, 1]: ~40 % of the
    samples sit on a bound."""
    burn = 500
    z = signal.lfilter([1.0], [1.0, -0.8], rng.standard_normal(n + burn))[burn:]
    return np.clip(0.5 + 0.6 * z / np.sqrt(1.0 / (1.0 - 0.64)), 0.0, 1.0)


HELD_OUT_GENERATORS: dict[str, Callable[[int, np.random.Generator], np.ndarray]] = {
    "level_shifts": _level_shifts,
    "drift_walk": _drift_walk,
    "ar2_real": lambda n, rng: _arma((1.4, -0.45), (), n, rng),  # roots 0.9 and 0.5
    "arma11": lambda n, rng: _arma((0.9,), (0.5,), n, rng),
    "fracdiff_0.3": functools.partial(_fractional, 0.3),
    "fracdiff_0.45": functools.partial(_fractional, 0.45),
    "logistic_step": _logistic_step,
    "exp_decay": _exp_decay,
    "student_t2": _student_t,
    "outlier_bursts": _outlier_bursts,
    "markov_switch": _markov_switch,
    "clipped": _clipped,
    # NOT aperiodic: complex roots 0.95 e^{+-2 pi i / 20}, a stochastic cycle of ~20 samples
    # (a spectral peak); reported apart from the false-claim promise
    "ar2_complex": lambda n, rng: _arma((1.9 * np.cos(2 * np.pi / 20), -(0.95**2)), (), n, rng),
}
HELD_OUT_KINDS = tuple(k for k in HELD_OUT_GENERATORS if k != "ar2_complex")
HELD_OUT_LENGTHS = (90, 150, 300, 1000, 3000)
HELD_OUT_SEED = 419  # never used by the grid (0) or a calibration (404, 405, 407, 408)


def _detect_all(reports: np.ndarray) -> dict[str, int | None]:
    return {
        "detect_period": detect_period(reports).period,
        "folded_variance": folded_variance_period(reports),
        "autocorrelation": autocorrelation_period(reports),
    }


def _grid_cell(args: tuple) -> dict:
    source, period, cycles, eps0, jitter, drift, trials, seed = args
    n = period * cycles
    hits = dict.fromkeys(DETECTORS, 0)
    ours_only = dict.fromkeys(DETECTORS[1:], 0)  # paired: detect_period right, baseline wrong
    base_only = dict.fromkeys(DETECTORS[1:], 0)  # ... and the other way round
    abstain = 0
    cos_true, cos_hat, cos_fallback, cos_true_abstain = [], [], [], []
    tag = f"{source_name(source)}/{period}/{cycles}/{eps0}/{jitter}/{drift}"
    for trial in range(trials):
        rng = trial_rng(seed, "grid", trial, tag)
        clean = grid_stream(grid_template(source, period, rng), n, rng, jitter, drift)
        mechanism = SquareWave(eps0)
        reports = mechanism.perturb(clean, rng)
        found = _detect_all(reports)
        for name, value in found.items():
            hits[name] += value == period
        for name in ours_only:
            ours_only[name] += found["detect_period"] == period and found[name] != period
            base_only[name] += found[name] == period and found["detect_period"] != period
        hat = found["detect_period"]
        abstain += hat is None
        if trial >= COSINE_TRIALS:
            continue  # the cosine columns: the first COSINE_TRIALS trials (EM is the cost)
        true_template = phase_templates(reports, mechanism, period)
        cos = cosine_distance(true_template[np.arange(n) % period], clean)
        cos_true.append(cos)
        if hat == period:
            cos_hat.append(cos)  # the same template: the period is the true one
        if hat is None:
            level = phase_templates(reports, mechanism, 1)[0]
            cos_fallback.append(cosine_distance(np.full(n, level), clean))
            cos_true_abstain.append(cos)
    return {
        "source": source_name(source),
        "period": period,
        "cycles": cycles,
        "eps0": eps0,
        "jitter": jitter,
        "drift": drift,
        "trials": trials,
        "accuracy": {name: hits[name] / trials for name in DETECTORS},
        "ours_only": ours_only,
        "baseline_only": base_only,
        "below_p": {name: sign_test_p(base_only[name], ours_only[name]) for name in ours_only},
        "abstain": abstain / trials,
        "cosine_true_period": float(np.mean(cos_true)),
        "cosine_when_detected": float(np.mean(cos_hat)) if cos_hat else None,
        "cosine_fallback": float(np.mean(cos_fallback)) if cos_fallback else None,
        "cosine_true_period_when_abstaining": (
            float(np.mean(cos_true_abstain)) if cos_true_abstain else None
        ),
    }


def sign_test_p(baseline_wins: int, ours_wins: int) -> float:
    """One-sided exact sign test on paired trials: the probability, if both detectors were
    equally accurate, that the baseline wins at least ``baseline_wins`` of the
    ``baseline_wins + ours_wins`` discordant trials (each discordant trial is then a fair
    coin). Small values mean detect_period is really below the baseline in that cell."""
    discordant = baseline_wins + ours_wins
    if baseline_wins == 0:
        return 1.0
    return float(stats.binom.sf(baseline_wins - 1, discordant, 0.5))


def _aperiodic_cell(args: tuple) -> dict:
    kind, n, eps0, trials, seed = args
    claims = dict.fromkeys(DETECTORS, 0)
    for trial in range(trials):
        rng = trial_rng(seed, "aperiodic", trial, f"{kind}/{n}/{eps0}")
        reports = SquareWave(eps0).perturb(aperiodic_stream(kind, n, rng), rng)
        for name, value in _detect_all(reports).items():
            claims[name] += value is not None
    return {
        "kind": kind,
        "n": n,
        "eps0": eps0,
        "trials": trials,
        "false_claims": {name: claims[name] / trials for name in DETECTORS},
    }


def grid_cells(shapes=None, sources=None, eps0=None, templates=None) -> list[tuple]:
    """Every (source, period, cycles, eps0, jitter, drift) of the grid: all sources x shapes
    x eps0 at jitter 0.02, plus the stronger jitter and the phase drift on every source at
    (25, 12) and (144, 12) (the drift cells only where their shape is asked for).

    ``shapes`` (period, cycles) pairs, ``sources`` (of ``GRID_SOURCES``) and ``eps0``
    (per-report budgets) replace the grid's own lists when given: any period >= 2 with at
    least 3 cycles, any finite budget > 0; a smaller grid for a user's own cells.
    ``templates``: a user's own (``FILE[:COLUMN]`` specs or ``GridTemplate``s), sources
    after the built-in ones, in the same cells; with templates and no ``sources``, only the
    templates run (name built-in sources to compare with them)."""
    shapes = _grid_shapes(shapes)
    own = _grid_templates(templates)
    sources = (*(() if own and sources is None else _grid_sources(sources)), *own)
    budgets = GRID_EPS0 if eps0 is None else _grid_budgets(eps0)
    cells = [(s, p, k, e, 0.02, 0.0) for s in sources for (p, k) in shapes for e in budgets]
    cells += [
        (s, p, k, e, j, d)
        for s in sources
        for (p, k) in ((25, 12), (144, 12))
        if (p, k) in shapes
        for e in budgets
        for (j, d) in GRID_DRIFT[1:]
    ]
    return cells


def _grid_shapes(shapes) -> tuple:
    if shapes is None:
        return GRID_SHAPES
    chosen = tuple(tuple(shape) for shape in shapes)
    if not chosen:
        raise ParameterError(
            "must name at least one (period, cycles) pair",
            field="grid_shape",
            limit="at least one (period, cycles) pair",
            value=chosen,
        )
    for shape in chosen:
        if len(shape) != 2:
            raise ParameterError(
                f"must be (period, cycles), got {shape!r}",
                field="grid_shape",
                limit="(period, cycles)",
                value=shape,
            )
        _check_count(shape[0], "grid_shape period", 2)
        _check_count(shape[1], "grid_shape cycles", 3)
        if shape[0] * shape[1] > GRID_MAX_LENGTH:
            raise ParameterError(
                f"period x cycles must be at most {GRID_MAX_LENGTH:,} samples, got "
                f"{shape[0]} x {shape[1]}",
                field="grid_shape",
                limit=f"period x cycles at most {GRID_MAX_LENGTH:,} samples",
                value=shape,
            )
    _check_distinct(chosen, "grid_shape")
    return chosen


def _grid_sources(sources) -> tuple:
    if sources is None:
        return GRID_SOURCES
    chosen = tuple(sources)
    _check_names(chosen, GRID_SOURCES, "grid_source", "template")
    return chosen


def _grid_budgets(eps0) -> tuple:
    budgets = tuple(eps0)
    _check_budgets(budgets, "grid_eps0")
    for eps0 in budgets:
        if eps0 < EPS_MIN:
            raise ParameterError(
                below_eps_min(eps0), field="grid_eps0", limit=f">= {EPS_MIN:g}", value=eps0
            )
        if eps0 > EPS_MAX:
            raise ParameterError(
                f"must be <= {EPS_MAX:g}, the largest budget per report, got {eps0!r}",
                field="grid_eps0",
                limit=f"<= {EPS_MAX:g}",
                value=eps0,
            )
    return tuple(float(e) for e in budgets)


def _detector_speed(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    reports = SquareWave(1.0).perturb(
        grid_stream(grid_template("darwin", 25, rng), 10_000, rng), rng
    )
    detect_period(reports)
    timings = []
    for _ in range(30):
        started = time.perf_counter()
        detect_period(reports)
        timings.append(time.perf_counter() - started)
    return {
        "detect_period_ms_10k_median": round(1000 * float(np.median(timings)), 2),
        "detect_period_ms_10k_max": round(1000 * float(np.max(timings)), 2),
        **_slow_stream_speed(seed),
    }


def bench_period_grid(
    *,
    trials: int = 40,
    aperiodic_trials: int = 200,
    seed: int = 0,
    workers: int | None = None,
    shapes=None,
    sources=None,
    eps0=None,
    templates=None,
) -> dict:
    """The detection grid (exact match, ``trials`` per cell) and the false-claim rates on
    aperiodic streams, for ``detect_period`` and both baselines. ``shapes``, ``sources``,
    ``eps0``, ``templates`` (a user's own, ``load_grid_template``): only these cells
    (``grid_cells``); the aperiodic cells are always run, at ``eps0`` when it is given (else
    the grid's 0.2, 1, 5)."""
    _check_count(trials, "grid_trials", 1, MAX_TRIALS)
    _check_count(aperiodic_trials, "aperiodic_trials", 1, MAX_TRIALS)
    _check_count(seed, "seed", 0, SEED_MAX)
    workers = workers or os.cpu_count() or 1
    cells = [(*c, trials, seed) for c in grid_cells(shapes, sources, eps0, templates)]
    # longest streams first (an even load at the end), results back in grid order
    order = sorted(range(len(cells)), key=lambda i: -cells[i][1] * cells[i][2])
    aperiodic = [
        (kind, n, e, aperiodic_trials, seed)
        for kind in APERIODIC_KINDS
        for n in APERIODIC_LENGTHS
        for e in (APERIODIC_EPS0 if eps0 is None else _grid_budgets(eps0))
    ]
    started = time.perf_counter()
    with interruptible_pool(max_workers=workers) as pool:
        done = list(pool.map(_grid_cell, [cells[i] for i in order], chunksize=2))
        grid = [row for _, row in sorted(zip(order, done, strict=True))]
        null = list(pool.map(_aperiodic_cell, aperiodic))
    return {
        "trials": trials,
        "aperiodic_trials": aperiodic_trials,
        "seed": seed,
        "grid": grid,
        "aperiodic": null,
        "seconds": round(time.perf_counter() - started, 1),
        "speed": _detector_speed(seed),
    }


BELOW_LEVEL = 0.05  # a cell is "below" a baseline if the one-sided sign test gives p < this


def _below(row: dict, level: float) -> bool:
    return min(row["below_p"].values()) < level


def grid_markdown(result: dict, command: str) -> str:
    """Grid tables: a per-source summary with the paired judgement, the false-claim rates,
    and accuracy (%) of detect_period / folded variance / autocorrelation per cell."""
    grid = result["grid"]
    strict = BELOW_LEVEL / len(grid)  # "clearly below": Bonferroni over the cells
    lines = _grid_intro(result, command, len(grid))
    lines += _grid_summary(grid, strict)
    lines += _grid_false_claims(result["aperiodic"])
    lines += _grid_fallback(grid)
    lines += _grid_cell_table(grid, strict)
    speed = result["speed"]
    lines += [
        "",
        f"detect_period on one stream of 10,000 reports: {speed['detect_period_ms_10k_median']} "
        f"ms (median of 30; max {speed['detect_period_ms_10k_max']} ms).",
        *_slow_stream_line(speed),
    ]
    return "\n".join(lines)


def _grid_intro(result: dict, command: str, cells: int) -> list[str]:
    """The grid report's first lines: the command, the trials and how "below" is judged."""
    return [
        f"Generated by `{command}` ({result['trials']} trials per cell, exact match; "
        f"{result['aperiodic_trials']} trials per aperiodic cell).",
        "",
        'How "at least" is judged: every trial of a cell runs the three detectors on the same '
        "reports (paired). Among the discordant trials (one right, the other wrong), equal "
        "accuracy makes the baseline's wins Bin(d, 1/2); a cell is *below* a baseline when the "
        f"one-sided exact sign test gives p < {BELOW_LEVEL:g} (◂◂ in the cell table), and "
        f"*clearly below* when p < {BELOW_LEVEL:g} / {cells} (Bonferroni over the cells, ✖). "
        "◂ marks a cell whose raw count is lower but not significantly so (a baseline that never "
        "abstains hits the right period by chance in 1-2 of 40 noise-only trials).",
        "",
    ]


def _grid_summary(grid: list[dict], strict: float) -> list[str]:
    """The per-source summary table (cells, lower counts, below, clearly below, mean
    accuracies) with its heading and the "all" row."""
    lines = [
        "**Summary per source** (cells; cells with a lower raw count than the better baseline; "
        f"below at p < {BELOW_LEVEL:g}; clearly below; mean accuracy %: ours / folded variance / "
        "autocorrelation)",
        "",
        "| source | cells | lower count | below | clearly below | mean ours | mean FV | mean ACF |",
        "|---|---|---|---|---|---|---|---|",
    ]
    totals = [0, 0, 0, 0]
    for source in dict.fromkeys(r["source"] for r in grid):
        rows = [r for r in grid if r["source"] == source]
        counts = _source_counts(rows, strict)
        for i, v in enumerate(counts):
            totals[i] += v
        lines.append(_summary_row(source, counts, [r["accuracy"] for r in rows]))
    lines.append(_summary_row("**all**", totals, [r["accuracy"] for r in grid]))
    return lines


def _source_counts(rows: list[dict], strict: float) -> tuple[int, int, int, int]:
    """Cells, cells with a lower raw count than the better baseline, below, clearly below."""
    lower = sum(
        a["detect_period"] < max(a["folded_variance"], a["autocorrelation"])
        for a in (r["accuracy"] for r in rows)
    )
    below = sum(_below(r, BELOW_LEVEL) for r in rows)
    clear = sum(_below(r, strict) for r in rows)
    return len(rows), lower, below, clear


def _summary_row(label: str, counts, accuracies: list[dict]) -> str:
    """One summary row: the counts, then the mean accuracy (%) of each detector."""
    means = [100 * np.mean([a[d] for a in accuracies]) for d in DETECTORS]
    return (
        f"| {label} | {counts[0]} | {counts[1]} | {counts[2]} | {counts[3]} | "
        + " | ".join(f"{m:.0f}" for m in means)
        + " |"
    )


def _grid_false_claims(null: list[dict]) -> list[str]:
    """The false-claim table of the aperiodic cells and the pooled / worst rate."""
    lines = [
        "",
        "**False claims on aperiodic streams (%)** (SW reports of the aperiodic input)",
        "",
        "| input | n | ε0 | detect_period | folded variance | autocorrelation |",
        "|---|---|---|---|---|---|",
    ]
    for r in null:
        fc = r["false_claims"]
        lines.append(
            f"| {r['kind']} | {r['n']} | {r['eps0']:g} | "
            + " | ".join(f"{100 * fc[d]:.1f}" for d in DETECTORS)
            + " |"
        )
    worst = max(null, key=lambda r: r["false_claims"]["detect_period"])
    pooled = np.mean([r["false_claims"]["detect_period"] for r in null])
    lines += [
        "",
        f"detect_period claims a period on {100 * pooled:.2f} % of all aperiodic trials; worst "
        f"cell {100 * worst['false_claims']['detect_period']:.1f} % ({worst['kind']}, n = "
        f"{worst['n']}, ε0 = {worst['eps0']:g}).",
    ]
    return lines


def _grid_fallback(grid: list[dict]) -> list[str]:
    """The cost of the fallback where detect_period abstains (nothing if it never did on
    a trial with cosines)."""
    gap = [
        (r["cosine_fallback"] - r["cosine_true_period_when_abstaining"], r["abstain"])
        for r in grid
        if r["cosine_fallback"] is not None
    ]
    if not gap:
        return []
    weight = sum(w for _, w in gap)
    mean_gap = sum(g * w for g, w in gap) / weight
    return [
        "",
        "Fallback where detect_period abstains (CPR's constant reconstruction, the EMS mode of "
        "the whole stream): its cosine distance minus that of CPR given the true period, on "
        f"the same abstaining trials (each cell's first {COSINE_TRIALS}), cells weighted by "
        f"their abstention rate: {mean_gap:+.3f}.",
    ]


def _grid_cell_table(grid: list[dict], strict: float) -> list[str]:
    """The table of every cell (accuracies with the below marks, abstentions, cosines)."""
    lines = [
        "",
        "**Every cell** (accuracy %: ours / FV / ACF; abstain %; mean cosine distance of CPR "
        "given the true period, of CPR where detected, of the fallback where abstaining)",
        "",
        "| source | T | cycles | ε0 | jitter | drift | ours | FV | ACF | abstain | cos true T "
        "| cos detected | cos fallback |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    return lines + [_cell_row(r, strict) for r in grid]


def _cell_row(r: dict, strict: float) -> str:
    """One row of the cell table; ✖ / ◂◂ / ◂ mark a cell below a baseline (clearly,
    significantly, in the raw count only)."""

    def fmt(value):
        return "-" if value is None else f"{value:.3f}"

    a = r["accuracy"]
    mark = ""
    if a["detect_period"] < max(a["folded_variance"], a["autocorrelation"]):
        mark = " ✖" if _below(r, strict) else " ◂◂" if _below(r, BELOW_LEVEL) else " ◂"
    return (
        f"| {r['source']} | {r['period']} | {r['cycles']} | {r['eps0']:g} | {r['jitter']:g} "
        f"| {r['drift']:g} | {100 * a['detect_period']:.0f}{mark} | "
        f"{100 * a['folded_variance']:.0f} | {100 * a['autocorrelation']:.0f} | "
        f"{100 * r['abstain']:.0f} | {fmt(r['cosine_true_period'])} | "
        f"{fmt(r['cosine_when_detected'])} | {fmt(r['cosine_fallback'])} |"
    )


# -- the false-claim bound with more trials (issue 19) ----------------------------------------


def claims_upper95(claims: int, trials: int) -> float:
    """One-sided 95 % Clopper-Pearson upper bound of a claim rate seen as ``claims`` of
    ``trials`` (1.0 when every trial claimed)."""
    return float(stats.beta.ppf(0.95, claims + 1, trials - claims)) if claims < trials else 1.0


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


def held_out_markdown(rows: list[dict], command: str) -> str:
    """The rows of ``false_claim_check`` on ``held_out_cells`` in one compact table: per kind
    and n, claims / trials at each eps0; per kind, all its trials pooled with their one-sided
    95 % Clopper-Pearson upper bound and its worst cell."""
    eps_values = sorted({r["eps0"] for r in rows})
    lines = [
        f"Generated by `{command}`.",
        "",
        "| input | n | " + " | ".join(f"ε0 = {e:g}" for e in eps_values) + " |",
        "|---|---|" + "---|" * len(eps_values),
    ]
    pooled = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        mine = [r for r in rows if r["kind"] == kind]
        for n in dict.fromkeys(r["n"] for r in mine):
            cells = {r["eps0"]: r for r in mine if r["n"] == n}
            lines.append(
                f"| {kind} | {n} | "
                + " | ".join(
                    f"{cells[e]['claims']} / {cells[e]['trials']}" if e in cells else "-"
                    for e in eps_values
                )
                + " |"
            )
        claims, trials = sum(r["claims"] for r in mine), sum(r["trials"] for r in mine)
        upper = claims_upper95(claims, trials)
        worst = max(mine, key=lambda r: r["rate"])
        pooled.append(
            f"| {kind} | {claims} / {trials} | {100 * claims / trials:.2f} | {100 * upper:.2f} "
            f"| {100 * worst['rate']:.1f} (n = {worst['n']}, ε0 = {worst['eps0']:g}) |"
        )
    lines += [
        "",
        "| input | claims / trials | rate % | 95 % upper bound % | worst cell % |",
        "|---|---|---|---|---|",
        *pooled,
    ]
    return "\n".join(lines)


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


def false_claim_markdown(rows: list[dict], command: str) -> str:
    """The table of ``false_claim_check``."""
    lines = [
        f"Generated by `{command}`.",
        "",
        "| input | n | ε0 | trials | claims | rate % | 95 % upper bound % | P(≤ claims if 1 %) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['kind']} | {r['n']} | {r['eps0']:g} | {r['trials']} | {r['claims']} | "
            f"{100 * r['rate']:.2f} | {100 * r['upper95']:.2f} | {r['p_rate_ge_1pct']:.2g} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    # python -m ldpfleet.app.bench_cpr false-claims TRIALS WORKERS [KIND/N/EPS0 ...]
    #     [--markdown] [--seed=S]   (S != 0: held-out streams, not the grid's)
    # python -m ldpfleet.app.bench_cpr grid-shapes WORKERS PERIODxCYCLES ... (JSON)
    import json
    import sys

    seeds = [int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--seed=")]
    argv = [a for a in sys.argv[1:] if a != "--markdown" and not a.startswith("--seed=")]
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
