"""``ldpfleet bench gcdp-timing`` and ``ldpfleet bench gcdp-scaling``: the speed part of
issue 6 (seed 000, Table 12 and the calibration-cost claim of Section 5).

Timing (``bench_gcdp_timing``). Same Occupancy protocol as ``bench gcdp`` (its ``prepare``
with the kept readings: IQR clipping, windows of 30 records, d = M = 5 channel means,
public calibration on ``datatraining.txt`` with the held-out validation windows, release
of every ``datatest.txt`` window at eps = 1). tau is selected exactly as ``bench gcdp``
does (``select_tau``: validation F1 of GC-DP at eps = 1, ties -> smaller) before any
timing, or given. One pass per method:

* Lap-DP: the certificates B_k and the release of all test windows (uniform budgets);
* Ada-DP, Risk-DP, GC-DP: ``bench gcdp``'s own calibration (``_calibrate_prepared``):
  Algorithms 1-2 on the training records and the masking utility mu_k of the fixed
  classifier on the validation windows, recomputed in every pass, then Algorithm 3 + 4 for
  every test window (one batched release);
* GC-DP-Cache: ``collector.gcdp.cache.CachedCalibration`` with a predeclared
  ``DriftMonitor(threshold=DRIFT_THRESHOLD)``. theta was calibrated once before timing
  (the "first" refresh). A pass computes the drift summary of the current calibration slice
  (the public lag-0 absolute Pearson matrix, strict upper triangle, of the calibration
  records), asks the cache, which reuses theta while the monitor accepts, and releases every
  test window with the cached theta.

Every method is warmed up once (untimed), then the methods are timed round-robin
``repeats`` times (so slow drift of the machine hits them alike) and the median, min and
max wall time are reported, with the process CPU time of the same passes (``cpu_s``; on a
machine shared with other jobs the wall time measures the load as much as the code).
Peak traced Python memory (``tracemalloc``) comes from one
separate traced pass per method, never from a timed one.

Scaling (``bench_gcdp_scaling``). Synthetic correlated data: ``N`` records of ``M`` nodes,
each node a random mix of four latent processes (two AR(1), two sinusoids) plus unit noise,
min-max normalised to [0, 1]; seeded. Per M, each calibration step is timed separately:
Algorithm 1 scores (``lagged_abs_pearson``, L = 3), graph build (``build_calibration_graph``
at Table 5's tau = 0.15, K = 5), Algorithm 2 (``masking_deltas`` of the d = M window means
+ ``empirical_influence`` + ``release_scales``), Algorithm 3 (utility scores +
``allocate_budget``) and one Algorithm 4 release of one window (``laplace_release``).
Calibration total = the four calibration steps; medians over ``repeats``.
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from ldpfleet.app.bench_commands import (
    GCDP_REPEATS_MAX,
    GCDP_SEED_MAX,
    bench_gcdp_scaling_command,
    bench_gcdp_timing_command,
)
from ldpfleet.app.bench_commands import SCALING_DEFAULT_PLOT as DEFAULT_PLOT
from ldpfleet.app.bench_commands import SCALING_DEFAULT_RECORDS as DEFAULT_RECORDS
from ldpfleet.app.bench_gcdp import (
    WINDOW,
    _calibrate_prepared,
    _counter,
    _release_all,
    _rng,
    method_names,
    select_tau,
)
from ldpfleet.app.gcdp_datasets import Prepared, prepare
from ldpfleet.collector.gcdp import (
    allocate_budget,
    build_calibration_graph,
    empirical_influence,
    lagged_abs_pearson,
    laplace_release,
    mean_bound,
    release_scales,
    window_masking_deltas,
)
from ldpfleet.collector.gcdp.cache import CachedCalibration, DriftMonitor
from ldpfleet.collector.gcdp.constants import TAU_GRID
from ldpfleet.collector.gcdp.correlation import lagged_correlations
from ldpfleet.collector.gcdp.evaluation import (
    fit_logistic,
    fit_normalizer,
    masking_utility,
    normalize,
    window_means,
)
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "DEFAULT_MS",
    "DEFAULT_PLOT",
    "SCALING_STEPS",
    "SEED_TABLE12_S",
    "TIMED_METHODS",
    "bench_gcdp_scaling",
    "bench_gcdp_scaling_command",
    "bench_gcdp_timing",
    "bench_gcdp_timing_command",
    "drift_summary",
    "synthetic_nodes",
]

TIMED_METHODS = ("Lap-DP", "Ada-DP", "Risk-DP", "GC-DP", "GC-DP-Cache")
# Seed 000, Table 12 (Occupancy, one calibration-and-release pass, seconds).
SEED_TABLE12_S = {"Lap-DP": 0.04, "Ada-DP": 0.11, "Risk-DP": 0.23, "GC-DP": 0.39,
                  "GC-DP-Cache": 0.14}  # fmt: skip
SEED_PEAK_MB = {"GC-DP": 21.7}  # the seed's process memory; ours is traced Python memory
DRIFT_THRESHOLD = 0.05  # predeclared: largest allowed change of any pair's lag-0 |corr|
TARGET_SPEEDUP = 3.0

DEFAULT_MS = (10, 30, 100, 300, 1000)
# DEFAULT_RECORDS, DEFAULT_PLOT and the two commands: app/bench_commands.py (their --help
# imports nothing heavy)
SCALING_WINDOW = 20  # window of the synthetic d = M window means (100 windows of 2,000)
SCALING_TAU = 0.15  # Table 5
SCALING_STEPS = ("scores", "graph", "influence", "allocation", "release")
CALIBRATION_STEPS = SCALING_STEPS[:4]


# --- parameter checks -------------------------------------------------------------------


# limits of the commands' integers (--repeats 1e10 and --records 1e11 ran for ever or died
# in a MemoryError traceback; docs/gcdp.md "Evaluation")
REPEATS_MAX = GCDP_REPEATS_MAX
SEED_MAX = GCDP_SEED_MAX
MS_MAX = 3_000  # the scores step holds M x M matrices: 3,000 -> 72 MB each
VALUES_MAX = 20_000_000  # records x largest M synthetic values: 160 MB of float64


def _int_at_least(value: object, field: str, low: int, high: int | None = None) -> int:
    """``value`` as an integer in [low, high] (``high`` None: no upper limit), else a
    ``ParameterError`` naming ``field``, the limits and the value."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ParameterError(
            f"must be an integer >= {low}, got {value!r}",
            field=field,
            limit=f"an integer >= {low}",
            value=value,
        )
    if high is not None and value > high:
        raise ParameterError(
            f"must be an integer <= {high:,}, got {value!r}",
            field=field,
            limit=f"an integer <= {high:,}",
            value=value,
        )
    return value


def _check_plot(plot: str | Path | None) -> None:
    """``plot``: a ``.png`` path that is not a folder, checked before the timed passes
    (a .txt path failed after them in a matplotlib ValueError traceback; a folder such as
    /tmp was written as /tmp.png)."""
    if plot is None or not str(plot):
        return
    path = Path(plot)
    if path.suffix.lower() != ".png":
        raise ParameterError(
            f"must be a .png path ('' for no plot), got {str(plot)!r}",
            field="plot",
            limit="a .png path ('' for no plot)",
            value=str(plot),
        )
    if path.is_dir():
        raise ParameterError(
            f"{str(plot)!r} is a folder: give a .png file path",
            field="plot",
            limit="a .png file path, not a folder",
            value=str(plot),
        )


def _seconds(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 6),
        "min": round(min(values), 6),
        "max": round(max(values), 6),
    }


# --- Occupancy timing (Table 12) ---------------------------------------------------------


def drift_summary(calibration: np.ndarray) -> np.ndarray:
    """The public drift summary GC-DP-Cache's monitor reads: the strict upper triangle of
    the lag-0 absolute Pearson matrix of the calibration records (values in [0, 1])."""
    rho0 = lagged_correlations(calibration, 0)[0]
    return rho0[np.triu_indices(rho0.shape[0], k=1)]


def _pass_factory(methods, prep: Prepared, tau, seed):
    """One zero-argument callable per method (one calibration-and-release pass each) and
    the cache, primed with its first calibration when GC-DP-Cache is timed. Calibration is
    ``bench gcdp``'s own (``_calibrate_prepared``), utility recomputed in every pass."""

    def calibrate() -> dict:
        return _calibrate_prepared(prep, tau, fresh_utility=True)

    def lap() -> None:
        cal = {"bounds": prep.bounds}
        _release_all("Lap-DP", prep.test_f, cal, 1.0, _rng(seed, "Lap-DP", 1.0, 0))

    def calibrated(method: str) -> Callable[[], None]:
        def run() -> None:
            _release_all(method, prep.test_f, calibrate(), 1.0, _rng(seed, method, 1.0, 0))

        return run

    cache: CachedCalibration[dict] = CachedCalibration(calibrate, DriftMonitor(DRIFT_THRESHOLD))
    decisions = []
    if "GC-DP-Cache" in methods:  # theta calibrated earlier, outside every timed pass
        decisions.append(cache.theta_for(drift_summary(prep.train_nodes)))

    def cached() -> None:
        decision = cache.theta_for(drift_summary(prep.train_nodes))
        decisions.append(decision)
        _release_all("GC-DP", prep.test_f, decision.theta, 1.0, _rng(seed, "GC-DP", 1.0, 0))

    everything = {
        "Lap-DP": lap,
        "Ada-DP": calibrated("Ada-DP"),
        "Risk-DP": calibrated("Risk-DP"),
        "GC-DP": calibrated("GC-DP"),
        "GC-DP-Cache": cached,
    }
    return {method: everything[method] for method in methods}, cache, decisions


def bench_gcdp_timing(
    repeats: int = 20,
    seed: int = 0,
    *,
    methods: Sequence[str] = TIMED_METHODS,
    tau: float | None = None,
    tau_draws: int = 10,
    window: int = WINDOW,
    data: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Median (min, max) wall time of one calibration-and-release pass at eps = 1 per
    method on Occupancy, peak traced memory, and the seed's Table 12 next to ours.

    ``data`` = (train_x, train_y, test_x, test_y) replaces the files; ``tau`` skips the
    selection (which otherwise uses ``tau_draws`` draws, as ``bench gcdp --draws``).
    ``progress(done, total)`` is called after every pass (warm-up, timed, traced)."""
    methods = _timed_methods(methods)
    repeats = _int_at_least(repeats, "repeats", 1, REPEATS_MAX)
    seed = _int_at_least(seed, "seed", 0, SEED_MAX)
    tau_draws = _int_at_least(tau_draws, "tau_draws", 1)
    window = _int_at_least(window, "window", 1)
    if tau is not None and tau not in TAU_GRID:
        raise ParameterError(
            f"must be one of {list(TAU_GRID)}, got {tau!r}",
            field="tau",
            limit=f"one of {list(TAU_GRID)}",
            value=tau,
        )
    prep = prepare("occupancy", data, window)
    tau_selected = tau is None
    if tau is None:
        tau = select_tau(prep, tau_draws, seed)[0]

    passes, cache, decisions = _pass_factory(methods, prep, tau, seed)
    tick = _counter(progress, len(methods) * (repeats + 2))
    for run in passes.values():  # warm-up (imports, caches), untimed
        run()
        tick()
    times, cpu = _timed(passes, methods, repeats, tick)
    memory = _peak_memory(passes, methods, tick)
    runtime = {method: _seconds(values) for method, values in times.items()}
    speedup = {
        method: round(SEED_TABLE12_S[method] / runtime[method]["median"], 2) for method in methods
    }
    return {
        "dataset": "occupancy",
        "protocol": _timing_protocol(prep, window, tau, tau_selected, repeats, seed),
        "cache": _cache_summary(cache, decisions),
        "runtime_s": runtime,
        "runtime_samples_s": {m: [round(v, 6) for v in times[m]] for m in methods},
        # CPU seconds of this process per pass (all its threads): robust to other jobs'
        # load on a shared machine, where the wall time is not
        "cpu_s": {method: _seconds(values) for method, values in cpu.items()},
        "peak_mem_mb": memory,
        "seed_runtime_s": {m: SEED_TABLE12_S[m] for m in methods},
        "seed_peak_mem_mb": dict(SEED_PEAK_MB),
        "speedup_vs_seed": speedup,
        "target_speedup": TARGET_SPEEDUP,
        "meets_target": {m: speedup[m] >= TARGET_SPEEDUP for m in methods},
    }


def _timed_methods(methods: Sequence[str]) -> tuple[str, ...]:
    """``methods`` as a tuple of distinct names from ``TIMED_METHODS`` (or refused)."""
    return method_names(methods, TIMED_METHODS)


def _timed(
    passes: dict[str, Callable[[], object]], methods: tuple[str, ...], repeats: int,
    tick: Callable[[], None],
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:  # fmt: skip
    """Wall and CPU seconds of each pass, round-robin over the methods in every repeat."""
    times: dict[str, list[float]] = {method: [] for method in methods}
    cpu: dict[str, list[float]] = {method: [] for method in methods}
    for _ in range(repeats):
        for method in methods:
            start, start_cpu = time.perf_counter(), time.process_time()
            passes[method]()
            times[method].append(time.perf_counter() - start)
            cpu[method].append(time.process_time() - start_cpu)
            tick()
    return times, cpu


def _peak_memory(
    passes: dict[str, Callable[[], object]], methods: tuple[str, ...], tick: Callable[[], None]
) -> dict[str, float]:
    """The tracemalloc peak (MiB) of one separate pass per method."""
    memory = {}
    for method in methods:
        tracemalloc.start()
        try:
            passes[method]()
            memory[method] = round(tracemalloc.get_traced_memory()[1] / 2**20, 3)
        finally:
            tracemalloc.stop()
        tick()
    return memory


def _timing_protocol(prep, window: int, tau: float, tau_selected: bool, repeats: int,
                     seed: int) -> dict:  # fmt: skip
    """What was timed and how (results ``protocol``)."""
    return {
        "window": window,
        "split": prep.readings.split,
        "train_records": int(prep.train_nodes.shape[0]),
        "train_windows": int(prep.train_f.shape[0]),
        "validation_windows": int((prep.selection or prep).validation_windows[0].shape[0]),
        "test_windows": int(prep.test_f.shape[0]),
        "utility": "masking utility on the validation windows (bench gcdp's), every pass",
        "eps_rel": 1.0,
        "tau": tau,
        "tau_selected": tau_selected,
        "repeats": repeats,
        "warmup_passes": 1,
        "order": "round-robin over methods in every repeat",
        "seed": seed,
        "memory": "tracemalloc peak of one separate pass (Python allocations only)",
    }


def _cache_summary(cache, decisions) -> dict:
    """The GC-DP-Cache passes: calibrations, cached passes and why each one refreshed."""
    reasons = [d.reason for d in decisions]
    return {
        "drift_summary": "lag-0 |Pearson| of the calibration records, upper triangle",
        "drift_threshold": DRIFT_THRESHOLD,
        "calibrations": cache.refreshes,
        "cached_passes": max(len(decisions) - 1, 0),
        "reasons": {r: reasons.count(r) for r in dict.fromkeys(reasons)},
        "max_distance": round(max((d.distance for d in decisions), default=0.0), 6),
    }


# --- synthetic scaling ----------------------------------------------------------------


def synthetic_nodes(m: int, records: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(records x m data in [0, 1], the latent factors): each node mixes two AR(1)
    processes (phi = 0.95, 0.8) and two sinusoids (periods 200 and 57 records) with
    N(0, 1) loadings, plus N(0, 1) noise; min-max normalised per node."""
    rng = np.random.default_rng([seed, m, records])
    t = np.arange(records)
    factors = np.empty((records, 4))
    for col, phi in ((0, 0.95), (1, 0.8)):
        shocks = rng.normal(size=records)
        level = 0.0
        for step in range(records):
            level = phi * level + shocks[step]
            factors[step, col] = level
    factors[:, 2] = 2.0 * np.sin(2 * np.pi * t / 200)
    factors[:, 3] = 2.0 * np.sin(2 * np.pi * t / 57 + 1.0)
    x = factors @ rng.normal(size=(4, m)) + rng.normal(size=(records, m))
    low, high = fit_normalizer(x)
    return normalize(x, low, high), factors


def _scaling_once(x: np.ndarray, labels: np.ndarray, window: int, rng,
                  model=None) -> dict[str, float]:  # fmt: skip
    """One timed calibration (4 steps) and one release on the (records x M) matrix.
    ``model`` is the fixed downstream classifier of the window means (fitted once per M,
    outside the timing; fitted here when None); the utility step is ``bench gcdp``'s
    masking utility of that classifier."""
    m = x.shape[1]
    if model is None:
        model = fit_logistic(*window_means(x, labels, window))
    bounds = np.full(m, mean_bound(0.0, 1.0, window))
    out = {}
    start = time.perf_counter()
    scores = lagged_abs_pearson(x, lag_window=3, lam=0.6)
    out["scores"] = time.perf_counter() - start

    start = time.perf_counter()
    graph = build_calibration_graph(scores, tau=SCALING_TAU)
    out["graph"] = time.perf_counter() - start

    start = time.perf_counter()
    deltas = window_masking_deltas(x, window, unit="occurrence")
    scales = release_scales(bounds, empirical_influence(deltas, graph))
    out["influence"] = time.perf_counter() - start

    start = time.perf_counter()
    feats, win_labels = window_means(x, labels, window)
    utility = masking_utility(model, feats, win_labels)
    budgets = allocate_budget(1.0, scales, utility, graph.exposure_norm)
    out["allocation"] = time.perf_counter() - start

    start = time.perf_counter()
    laplace_release(feats[0], bounds=bounds, scales=scales, budgets=budgets, eps_rel=1.0,
                    low=0.0, high=1.0, rng=rng)  # fmt: skip
    out["release"] = time.perf_counter() - start
    out["edges"] = len(graph.edges)
    return out


def _check_scaling(ms, records, repeats, seed) -> tuple[int, ...]:
    try:
        ms_t = tuple(ms)
    except TypeError:
        raise ParameterError(
            "must be a list of node counts", field="ms", limit="a list of node counts", value=ms
        ) from None
    if (
        not ms_t
        or any(isinstance(v, bool) or not isinstance(v, int) or v < 2 for v in ms_t)
        or len(set(ms_t)) != len(ms_t)
    ):
        raise ParameterError(
            f"must be distinct integers >= 2, got {list(ms_t)!r}",
            field="ms",
            limit="distinct integers >= 2",
            value=list(ms_t),
        )
    if max(ms_t) > MS_MAX:
        raise ParameterError(
            f"must be node counts <= {MS_MAX:,}, got {max(ms_t)!r}",
            field="ms",
            limit=f"node counts <= {MS_MAX:,}",
            value=max(ms_t),
        )
    _int_at_least(records, "records", 2 * SCALING_WINDOW)
    if records * max(ms_t) > VALUES_MAX:
        raise ParameterError(
            f"records x largest M = {records:,} x {max(ms_t):,} synthetic values is over "
            f"{VALUES_MAX:,} (160 MB): lower --records or --ms, got {records!r}",
            field="records",
            limit=f"records x largest M <= {VALUES_MAX:,}",
            value=records,
        )
    _int_at_least(repeats, "repeats", 1, REPEATS_MAX)
    _int_at_least(seed, "seed", 0, SEED_MAX)
    return tuple(sorted(ms_t))


def bench_gcdp_scaling(
    ms: Sequence[int] = DEFAULT_MS,
    records: int = DEFAULT_RECORDS,
    repeats: int = 3,
    seed: int = 0,
    *,
    plot: str | Path | None = DEFAULT_PLOT,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Median time of each calibration step against the node count M (synthetic data),
    and a log-log plot written to ``plot`` (``None``: no plot). ``progress(done, total)``
    is called after every pass (one warm-up and ``repeats`` timed passes per M)."""
    ms_t = _check_scaling(ms, records, repeats, seed)
    _check_plot(plot)
    tick = _counter(progress, len(ms_t) * (repeats + 1))
    rows = []
    for m in ms_t:
        x, factors = synthetic_nodes(m, records, seed)
        labels = (factors[:, 0] > np.median(factors[:, 0])).astype(int)
        samples: dict[str, list[float]] = {step: [] for step in (*SCALING_STEPS, "total")}
        edges = 0
        model = fit_logistic(*window_means(x, labels, SCALING_WINDOW))  # untimed, once
        _scaling_once(x, labels, SCALING_WINDOW, np.random.default_rng([seed, m]), model)
        tick()
        for rep in range(repeats):
            rng = np.random.default_rng([seed, m, rep])
            once = _scaling_once(x, labels, SCALING_WINDOW, rng, model)
            tick()
            edges = int(once["edges"])
            for step in SCALING_STEPS:
                samples[step].append(once[step])
            samples["total"].append(sum(once[step] for step in CALIBRATION_STEPS))
        rows.append(
            {
                "m": m,
                "edges": edges,
                "median_s": {k: round(statistics.median(v), 6) for k, v in samples.items()},
                "max_s": {k: round(max(v), 6) for k, v in samples.items()},
            }
        )
    largest = rows[-1]["median_s"]
    dominant = max(CALIBRATION_STEPS, key=lambda step: largest[step])
    exponents = {}
    if len(rows) >= 2:  # log-log slope between the two largest M
        lo, hi = rows[-2], rows[-1]
        span = np.log(hi["m"] / lo["m"])
        for step in (*SCALING_STEPS, "total"):
            a, b = lo["median_s"][step], hi["median_s"][step]
            exponents[step] = round(float(np.log(b / a) / span), 2) if a > 0 and b > 0 else None
    result = {
        "protocol": {
            "data": "synthetic: 4 latent processes (2 AR(1), 2 sinusoids) mixed into M "
            "nodes with N(0,1) loadings + N(0,1) noise, min-max normalised",
            "records": records,
            "window": SCALING_WINDOW,
            "d": "M window means (a(k) = {k})",
            "tau": SCALING_TAU,
            "lag_window": 3,
            "repeats": repeats,
            "warmup_passes": 1,
            "seed": seed,
            "total": "scores + graph + influence + allocation (release not included)",
        },
        "steps": {
            "scores": "Algorithm 1 steps 1-2: lagged_abs_pearson",
            "graph": "Algorithm 1 steps 3-9: build_calibration_graph",
            "influence": "Algorithm 2: masking_deltas + empirical_influence + release_scales",
            "allocation": "Algorithm 3: masking utility of the fixed window classifier "
            "(masking_utility, as bench gcdp) + allocate_budget",
            "release": "Algorithm 4: laplace_release of one window (d = M)",
        },
        "rows": rows,
        "dominant_step_at_max_m": dominant,
        "loglog_slope_last_two_m": exponents,
        "plot": None,
    }
    if plot is not None and str(plot):
        result["plot"] = str(_plot(rows, Path(plot), records))
    return result


def _plot(rows: list[dict], path: Path, records: int) -> Path:
    try:
        import matplotlib
    except ImportError:
        raise ParameterError(
            "needs matplotlib (pip install matplotlib), or pass an empty --plot",
            field="plot",
            limit="matplotlib installed, or an empty --plot",
            value=str(path),
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    ms = [row["m"] for row in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for step in SCALING_STEPS:
        ax.plot(ms, [row["median_s"][step] for row in rows], marker="o", linewidth=1.2,
                label=step)  # fmt: skip
    ax.plot(ms, [row["median_s"]["total"] for row in rows], marker="s", linewidth=2.5,
            color="black", label="calibration total")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of nodes M")
    ax.set_ylabel("median wall time (s)")
    ax.set_title(f"GC-DP calibration time vs M (synthetic, N = {records:,} records)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
