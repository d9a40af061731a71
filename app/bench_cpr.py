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

import os
import time
import zlib
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from ldpfleet.collector.analytics import reconstruct_streams
from ldpfleet.collector.baselines import laplace_perturb, laplace_smoothed, lbd
from ldpfleet.collector.cpr import cpr
from ldpfleet.collector.metrics import cosine_distance
from ldpfleet.collector.period import detect_period
from ldpfleet.collector.reconstruct import SMOOTHING_WINDOW, reconstruct
from ldpfleet.devices.periodic import DATASETS, DEFAULT_LENGTH, make_trial
from ldpfleet.protocol.stream import StreamConfig
from ldpfleet.protocol.sw import SquareWave

METHODS = ("cpr", "sw", "sw_moving", "sw_filter", "laplace", "lbd")
DETECTION_EPS = (1.0, 2.0, 3.0, 4.0, 5.0)
DETECTION_W = (5, 10, 15, 20, 25)
COSINE_EPS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0)


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
) -> dict:
    """Run the evaluation; returns a JSON-ready dict."""
    workers = workers or os.cpu_count() or 1
    detection_jobs = [
        (d, eps, w, trials, n, seed) for d in datasets for w in detection_w for eps in detection_eps
    ]
    cosine_jobs = [
        (d, eps, cosine_w, trials, n, seed, methods) for d in datasets for eps in cosine_eps
    ]
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        detection = list(pool.map(_detection_cell, detection_jobs))
        cosine = [row for rows in pool.map(_cosine_cell, cosine_jobs) for row in rows]
    evaluation_seconds = time.perf_counter() - started
    cpr_lowest = {}
    for dataset in datasets:
        for eps in cosine_eps:
            rows = [r for r in cosine if r["dataset"] == dataset and r["eps"] == eps]
            best = min(rows, key=lambda r: r["mean"])["method"] if rows else None
            cpr_lowest[f"{dataset} eps={eps:g}"] = best == "cpr"
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
        "speed": _speed(fleet_streams, seed, workers),
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
    return "\n".join(lines)
