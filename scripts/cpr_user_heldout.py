"""Held-out streams of a new user (issue 19, helper A, 2026-12-05): ``detect_period`` with
its defaults against the two baselines of ``ldpfleet bench cpr`` (folded variance,
autocorrelation) on streams that no CPR test, bench or earlier held-out check uses.

Periodic templates (one cycle, min-max normalised to [0, 1], resampled to the cell's period
by periodic linear interpolation when its native length differs, repeated with amplitude
jitter N(0, 0.02^2), clipped to [0, 1]):

- data-set columns no CPR bench reads: Intel Lab *humidity* (one sensor's first day of
  half-hour readings, native T = 48), Occupancy daily *CO2* and *humidity* (10-minute means,
  T = 144), Raisin *Eccentricity* of 30 consecutive grains, Turkish-music *chromagram* means
  (T = 12), WISDM *YAVG* of 40 consecutive examples;
- shapes: an asymmetric pulse train (duty 5-20 %), a decay within each cycle
  (exp(-u / 0.15)), an amplitude-modulated cycle (a two-harmonic cycle times
  0.55 + 0.45 sin(2 pi t / P), P = n / 2.7: not a multiple of T), a smooth cycle with
  outliers (1 % of the samples replaced by 0 or 1 at random times: not periodic), integer
  counts (Poisson(1 + 8 c_t) with c the sawtooth cycle, divided by 20 and clipped: what a
  user would send of a bounded counter).

(T, n): (8, 24), (8, 400), (13, 1000), (23, 100), (37, 3000), (61, 250), (150, 1000),
(333, 1000), (1000, 10000): periods 8 .. n/3, 3 to 77 cycles, n not a multiple of T in
six of nine. Per-report eps0 0.2, 1, 5 (SW, ``SquareWave(eps0)``). Plus a long cell,
(997, 100000), eps0 1, 3 trials per source.

Aperiodic (false claims; the baselines never abstain, so only ``detect_period`` is scored):
white (iid uniform), random walk, AR(1) phi = 0.7, a linear trend + N(0, 0.05^2), one level
shift at a uniform position + N(0, 0.05^2), iid Student t2 (min-max scaled); n = 24, 100,
1,000, 5,000; eps0 0.2, 1, 5.

Trial seeds ``[SEED, cell index, trial]``, SEED = 94117 (grep finds it nowhere else).
Nothing here was tuned on: the detector is main's, run once on these streams.

Run: ``nice -n 5 python scripts/cpr_user_heldout.py periodic TRIALS OUT.jsonl``,
``... aperiodic TRIALS OUT.jsonl``, ``... long OUT.jsonl``, then
``python scripts/cpr_user_heldout.py table PERIODIC.jsonl APERIODIC.jsonl [LONG.jsonl]``.
"""

from __future__ import annotations

import csv
import functools
import json
import sys
import time

import numpy as np
from ldpfleet.app.bench_cpr import (
    DATA_ROOT,
    autocorrelation_period,
    claims_upper95,
    folded_variance_period,
    grid_stream,
    sign_test_p,
)
from ldpfleet.collector.cpr import phase_templates
from ldpfleet.collector.metrics import cosine_distance
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave
from scipy import signal

SEED = 94117
DATA_SOURCES = (
    "intel_humidity",
    "occ_co2",
    "occ_humidity",
    "raisin_ecc",
    "music_chroma",
    "wisdm_yavg",
)
SHAPES = ("pulse", "decay", "am", "outliers", "counts")
SOURCES = DATA_SOURCES + SHAPES
PERIOD_N = (
    (8, 24),
    (8, 400),
    (13, 1000),
    (23, 100),
    (37, 3000),
    (61, 250),
    (150, 1000),
    (333, 1000),
    (1000, 10000),
)
EPS0 = (0.2, 1.0, 5.0)
APERIODIC = ("white", "random_walk", "ar1_0.7", "trend", "level_shift", "student_t2")
APERIODIC_N = (24, 100, 1000, 5000)
COSINE_TRIALS = 5


def _norm(values) -> np.ndarray:
    values = np.asarray(values, float)
    low, high = values.min(), values.max()
    return (values - low) / (high - low) if high > low else np.zeros_like(values)


@functools.cache
def _occupancy_days(column: int) -> np.ndarray:
    """Daily cycles of one Occupancy column (10-minute means, full days, T = 144)."""
    path = DATA_ROOT / "uci-occupancy" / "datatraining.txt"
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))[1:]
    stamps = np.array([np.datetime64(r[1].replace(" ", "T")) for r in rows])
    values = np.array([float(r[column]) for r in rows])
    minute = (stamps - stamps[0].astype("datetime64[D]")).astype("timedelta64[m]").astype(int)
    slot = minute // 10
    sums = np.bincount(slot, weights=values)
    counts = np.bincount(slot)
    full = sums.size // 144
    means = np.divide(sums, counts, out=np.full(sums.size, np.nan), where=counts > 0)
    days = means[: full * 144].reshape(full, 144)
    return days[np.isfinite(days).all(axis=1)]


@functools.cache
def _table(source: str) -> np.ndarray:
    """Rows of native cycles for a data-set source."""
    if source == "intel_humidity":
        rows = np.loadtxt(DATA_ROOT / "intel-lab" / "intelHumidityTrain.csv", delimiter=",")
        return rows[:, :48]
    if source == "occ_co2":
        return _occupancy_days(5)
    if source == "occ_humidity":
        return _occupancy_days(3)
    if source == "raisin_ecc":
        with (DATA_ROOT / "uci-raisin" / "Raisin_Dataset.csv").open(newline="") as handle:
            ecc = np.array([float(r["Eccentricity"]) for r in csv.DictReader(handle)])
        return ecc[: ecc.size // 30 * 30].reshape(-1, 30)
    if source == "music_chroma":
        path = DATA_ROOT / "uci-turkish-music-emotion" / "Acoustic_Features.csv"
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        keys = [f"_Chromagram_Mean_{i}" for i in range(1, 13)]
        return np.array([[float(r[k]) for k in keys] for r in rows])
    if source == "wisdm_yavg":
        path = DATA_ROOT / "wisdm-v1.1-transformed" / "WISDM_ar_v1.1_transformed.arff"
        lines = path.read_text().split("@data", 1)[1].split()
        yavg = np.array([float(line.split(",")[33]) for line in lines if line.count(",") > 40])
        return yavg[: yavg.size // 40 * 40].reshape(-1, 40)
    raise ValueError(source)


def template(source: str, period: int, rng: np.random.Generator) -> np.ndarray:
    """One cycle of ``period`` samples in [0, 1] (the base cycle for the shapes whose
    stream is built in ``clean_stream``)."""
    u = (np.arange(period) / period + rng.random()) % 1.0
    if source == "pulse":
        duty = rng.uniform(0.05, 0.20)
        return (u < max(duty, 1.0 / period)).astype(float)
    if source == "decay":
        return np.exp(-u / 0.15)
    if source in ("am", "outliers"):
        return _norm(np.sin(2 * np.pi * u) + 0.6 * np.sin(4 * np.pi * u + 6 * rng.random()))
    if source == "counts":
        return u
    table = _table(source)
    while True:
        cycle = _norm(table[int(rng.integers(len(table)))])
        if np.ptp(cycle) > 0:
            break
    if cycle.size == period:
        return cycle
    grid = np.arange(period) * cycle.size / period
    return np.interp(grid, np.arange(cycle.size + 1), np.append(cycle, cycle[0]))


def clean_stream(source: str, period: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """The periodic input in [0, 1] of one trial."""
    base = grid_stream(template(source, period, rng), n, rng, 0.02, 0.0)
    if source == "am":
        mod = 0.55 + 0.45 * np.sin(2 * np.pi * np.arange(n) / (n / 2.7) + 6 * rng.random())
        return np.clip(base * mod, 0.0, 1.0)
    if source == "outliers":
        hit = rng.random(n) < 0.01
        base[hit] = rng.integers(0, 2, int(hit.sum()))
        return base
    if source == "counts":
        return np.clip(rng.poisson(1.0 + 8.0 * base) / 20.0, 0.0, 1.0)
    return base


def aperiodic(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """An aperiodic input in [0, 1]."""
    if kind == "white":
        return rng.random(n)
    if kind == "random_walk":
        return _norm(np.cumsum(rng.standard_normal(n)))
    if kind == "ar1_0.7":
        return _norm(signal.lfilter([1.0], [1.0, -0.7], rng.standard_normal(n + 200))[200:])
    if kind == "trend":
        return np.clip(np.linspace(0.2, 0.8, n) + 0.05 * rng.standard_normal(n), 0, 1)
    if kind == "level_shift":
        level = np.where(np.arange(n) < rng.integers(1, n), 0.3, 0.7)
        return np.clip(level + 0.05 * rng.standard_normal(n), 0, 1)
    if kind == "student_t2":
        return _norm(rng.standard_t(2.0, n))
    raise ValueError(kind)


def periodic_cells() -> list[tuple[str, int, int, float]]:
    return [(s, t, n, e) for s in SOURCES for t, n in PERIOD_N for e in EPS0]


def run_periodic_cell(index: int, cell: tuple, trials: int) -> dict:
    """Exact matches of the three detectors, paired wins, abstentions, cosine distances of
    CPR as run (detected period, or the constant fallback) and of CPR at the true period."""
    source, period, n, eps0 = cell
    mech = SquareWave(eps0)
    hits = {"ours": 0, "fv": 0, "ac": 0}
    ours_only = {"fv": 0, "ac": 0}
    base_only = {"fv": 0, "ac": 0}
    abstain = near = far = 0
    cos_true, cos_run, cpu = [], [], []
    for trial in range(trials):
        rng = np.random.default_rng([SEED, index, trial])
        clean = clean_stream(source, period, n, rng)
        reports = mech.perturb(clean, rng)
        start = time.process_time()
        hat = detect_period(reports).period
        cpu.append(time.process_time() - start)
        found = {
            "ours": hat,
            "fv": folded_variance_period(reports),
            "ac": autocorrelation_period(reports),
        }
        for name, value in found.items():
            hits[name] += value == period
        for name in ("fv", "ac"):
            ours_only[name] += hat == period and found[name] != period
            base_only[name] += found[name] == period and hat != period
        if hat is None:
            abstain += 1
        elif hat != period:
            near += abs(hat - period) <= max(1, period * period // n)
            far += abs(hat - period) > max(1, period * period // n)
        if trial < COSINE_TRIALS:
            true_t = phase_templates(reports, mech, period)
            cos_true.append(cosine_distance(true_t[np.arange(n) % period], clean))
            fold = hat if hat is not None else 1
            run_t = phase_templates(reports, mech, fold)
            cos_run.append(cosine_distance(run_t[np.arange(n) % fold], clean))
    return {
        "source": source,
        "period": period,
        "n": n,
        "eps0": eps0,
        "trials": trials,
        "hits": hits,
        "ours_only": ours_only,
        "base_only": base_only,
        "below_p": {k: sign_test_p(base_only[k], ours_only[k]) for k in ours_only},
        "abstain": abstain,
        "near": near,
        "far": far,
        "cos_true": float(np.mean(cos_true)),
        "cos_run": float(np.mean(cos_run)),
        "cpu_ms_median": 1000 * float(np.median(cpu)),
    }


def run_aperiodic_cell(index: int, kind: str, n: int, eps0: float, trials: int) -> dict:
    claims = 0
    periods = []
    for trial in range(trials):
        rng = np.random.default_rng([SEED, 10_000 + index, trial])
        est = detect_period(SquareWave(eps0).perturb(aperiodic(kind, n, rng), rng))
        if est.period is not None:
            claims += 1
            periods.append(est.period)
    return {
        "kind": kind,
        "n": n,
        "eps0": eps0,
        "trials": trials,
        "claims": claims,
        "periods": periods,
    }


def main_periodic(trials: int, out: str) -> None:
    with open(out, "w") as handle:
        for index, cell in enumerate(periodic_cells()):
            handle.write(json.dumps(run_periodic_cell(index, cell, trials)) + "\n")
            handle.flush()


def main_long(out: str) -> None:
    with open(out, "w") as handle:
        for index, source in enumerate(SOURCES):
            row = run_periodic_cell(20_000 + index, (source, 997, 100_000, 1.0), 3)
            handle.write(json.dumps(row) + "\n")
            handle.flush()


def main_aperiodic(trials: int, out: str) -> None:
    cells = [(k, n, e) for k in APERIODIC for n in APERIODIC_N for e in EPS0]
    with open(out, "w") as handle:
        for index, (kind, n, eps0) in enumerate(cells):
            handle.write(json.dumps(run_aperiodic_cell(index, kind, n, eps0, trials)) + "\n")
            handle.flush()


def _load(path: str) -> list[dict]:
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def table(periodic: str, aperiodic_path: str, long: str | None = None) -> str:
    """The markdown of docs/cpr.md's "Held-out streams (2026-12-05)"."""
    rows = _load(periodic) + (_load(long) if long else [])
    lines = [
        "| source | T | n | cycles | eps0 | ours | folded var. | autocorr. | abstain | "
        "wrong near / far | below (p < 0.05) | cos CPR as run / at true T |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    below = clearly = 0
    totals = {"ours": 0, "fv": 0, "ac": 0}
    trials = 0
    for r in rows:
        t = r["trials"]
        trials += t
        for k in totals:
            totals[k] += r["hits"][k]
        flags = [k for k in ("fv", "ac") if r["below_p"][k] < 0.05]
        below += bool(flags)
        clearly += any(r["below_p"][k] < 0.05 / len(rows) for k in ("fv", "ac"))
        lines.append(
            f"| {r['source']} | {r['period']} | {r['n']:,} | {r['n'] / r['period']:.1f} | "
            f"{r['eps0']:g} | {r['hits']['ours']}/{t} | {r['hits']['fv']}/{t} | "
            f"{r['hits']['ac']}/{t} | {r['abstain']} | {r['near']} / {r['far']} | "
            f"{', '.join(flags) or '-'} | {r['cos_run']:.3f} / {r['cos_true']:.3f} |"
        )
    null = _load(aperiodic_path)
    claims = sum(r["claims"] for r in null)
    total = sum(r["trials"] for r in null)
    worst = max(null, key=lambda r: r["claims"])
    summary = [
        f"Periodic: {len(rows)} cells, {trials:,} streams; exact answers ours "
        f"{totals['ours']:,}, folded variance {totals['fv']:,}, autocorrelation "
        f"{totals['ac']:,}; cells below a baseline (paired sign test p < 0.05) {below}, "
        f"clearly (p < 0.05/{len(rows)}) {clearly}.",
        f"Aperiodic: {claims} claims of {total:,} streams ({100 * claims / total:.2f} %, "
        f"95 % upper {100 * claims_upper95(claims, total):.2f} %); worst cell "
        f"{worst['kind']}/{worst['n']}/{worst['eps0']:g}: {worst['claims']} of "
        f"{worst['trials']}.",
    ]
    null_lines = ["| kind | n | eps0 0.2 | eps0 1 | eps0 5 |", "|---|---|---|---|---|"]
    for kind in APERIODIC:
        for n in APERIODIC_N:
            cell = {r["eps0"]: r for r in null if r["kind"] == kind and r["n"] == n}
            null_lines.append(
                f"| {kind} | {n:,} | "
                + " | ".join(f"{cell[e]['claims']}/{cell[e]['trials']}" for e in EPS0)
                + " |"
            )
    return "\n".join([*summary, "", *lines, "", *null_lines])


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "periodic":
        main_periodic(int(sys.argv[2]), sys.argv[3])
    elif mode == "aperiodic":
        main_aperiodic(int(sys.argv[2]), sys.argv[3])
    elif mode == "long":
        main_long(sys.argv[2])
    elif mode == "table":
        print(table(*sys.argv[2:5]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
