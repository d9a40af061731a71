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

Run: ``nice -n 5 python scripts/cpr_user_heldout.py periodic TRIALS OUT.jsonl [T,n]``,
``... aperiodic TRIALS OUT.jsonl``, ``... long OUT.jsonl``, then
``... oracle PERIODIC.jsonl ORACLE.jsonl`` (the told-T reference on the cells below a
baseline), then ``python scripts/cpr_user_heldout.py table PERIODIC.jsonl APERIODIC.jsonl
LONG.jsonl ORACLE.jsonl``.
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
from scipy import signal, stats

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


def oracle_hits(index: int, cell: tuple, trials: int) -> int:
    """The reference of ``bench_cpr.single_period_oracle`` on this script's streams (same
    trial seeds): a detector TOLD the true period, testing only it against white noise at
    1 % (one-way ANOVA of the phases over the whole cycles). A searching detector held to
    1 % false claims cannot be expected above it."""
    source, period, n, eps0 = cell
    hits = 0
    for trial in range(trials):
        rng = np.random.default_rng([SEED, index, trial])
        reports = SquareWave(eps0).perturb(clean_stream(source, period, n, rng), rng)
        k = n // period
        x = reports[: k * period].reshape(k, period)
        hits += bool(stats.f_oneway(*x.T).pvalue < 0.01)
    return hits


def main_oracle(periodic: str, out: str) -> None:
    """``oracle_hits`` for every cell of a periodic run where ``detect_period`` is below a
    baseline (paired sign test p < 0.05)."""
    cells = periodic_cells()
    with open(out, "w") as handle:
        for r in _load(periodic):
            if min(r["below_p"].values()) >= 0.05:
                continue
            cell = (r["source"], r["period"], r["n"], r["eps0"])
            hits = oracle_hits(cells.index(cell), cell, r["trials"])
            handle.write(json.dumps({"cell": cell, "oracle": hits, **r}) + "\n")


def main_periodic(trials: int, out: str, only: str = "") -> None:
    """Every periodic cell, or with ``only = "T,n"`` the cells of that shape (same seeds)."""
    with open(out, "w") as handle:
        for index, cell in enumerate(periodic_cells()):
            if only and tuple(map(int, only.split(","))) != cell[1:3]:
                continue
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


def _is_below(r: dict, level: float) -> bool:
    return min(r["below_p"].values()) < level


def _block_rows(rows: list[dict], level: float) -> list[str]:
    """One line per (T, n, eps0): exact answers of the three detectors summed over the
    sources, abstentions, wrong answers near / far, cells below a baseline."""
    out = [
        "| T | n | cycles | eps0 | ours | folded var. | autocorr. | abstain | wrong near / far "
        "| cells below (clearly) | cos CPR as run / at true T |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["period"], r["n"], r["eps0"]) for r in rows})
    for period, n, eps0 in keys:
        sub = [r for r in rows if (r["period"], r["n"], r["eps0"]) == (period, n, eps0)]
        trials = sum(r["trials"] for r in sub)
        hits = {k: sum(r["hits"][k] for r in sub) for k in ("ours", "fv", "ac")}
        below = sum(_is_below(r, 0.05) for r in sub)
        clearly = sum(_is_below(r, level) for r in sub)
        cos_run = np.mean([r["cos_run"] for r in sub])
        cos_true = np.mean([r["cos_true"] for r in sub])
        out.append(
            f"| {period} | {n:,} | {n / period:.1f} | {eps0:g} | {hits['ours']}/{trials} | "
            f"{hits['fv']}/{trials} | {hits['ac']}/{trials} | "
            f"{sum(r['abstain'] for r in sub)} | {sum(r['near'] for r in sub)} / "
            f"{sum(r['far'] for r in sub)} | {below} ({clearly}) | "
            f"{cos_run:.3f} / {cos_true:.3f} |"
        )
    return out


def _below_rows(rows: list[dict], oracle: dict, level: float) -> list[str]:
    out = [
        "| source | T | n | eps0 | ours | folded var. | autocorr. | told-T oracle | "
        "p (fv) | p (ac) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if not _is_below(r, 0.05):
            continue
        key = (r["source"], r["period"], r["n"], r["eps0"])
        t = r["trials"]
        star = "**" if _is_below(r, level) else ""
        out.append(
            f"| {star}{r['source']}{star} | {r['period']} | {r['n']:,} | {r['eps0']:g} | "
            f"{r['hits']['ours']}/{t} | {r['hits']['fv']}/{t} | {r['hits']['ac']}/{t} | "
            f"{oracle.get(key, '-')} | {r['below_p']['fv']:.2g} | {r['below_p']['ac']:.2g} |"
        )
    return out


def _null_rows(null: list[dict]) -> list[str]:
    out = ["| kind | n | eps0 0.2 | eps0 1 | eps0 5 |", "|---|---|---|---|---|"]
    for kind in APERIODIC:
        for n in APERIODIC_N:
            cell = {r["eps0"]: r for r in null if r["kind"] == kind and r["n"] == n}
            out.append(
                f"| {kind} | {n:,} | "
                + " | ".join(f"{cell[e]['claims']}/{cell[e]['trials']}" for e in EPS0)
                + " |"
            )
    return out


def table(periodic: str, aperiodic_path: str, long: str = "", oracle_path: str = "") -> str:
    """The markdown of docs/cpr.md's "Held-out streams (2026-12-05)": the totals, one line
    per (T, n, eps0) summed over the 11 sources, the cells below a baseline (with the
    told-T oracle of ``oracle`` mode where given; bold: clearly, p < 0.05 / cells) and
    the false claims per aperiodic cell."""
    rows = _load(periodic) + (_load(long) if long else [])
    level = 0.05 / len(rows)
    oracle = {tuple(r["cell"]): r["oracle"] for r in _load(oracle_path)} if oracle_path else {}
    totals = {k: sum(r["hits"][k] for r in rows) for k in ("ours", "fv", "ac")}
    trials = sum(r["trials"] for r in rows)
    null = _load(aperiodic_path)
    claims = sum(r["claims"] for r in null)
    total = sum(r["trials"] for r in null)
    worst = max(null, key=lambda r: r["claims"])
    summary = [
        f"Periodic: {len(rows)} cells, {trials:,} streams; exact answers ours "
        f"{totals['ours']:,}, folded variance {totals['fv']:,}, autocorrelation "
        f"{totals['ac']:,}; cells below a baseline (paired sign test p < 0.05) "
        f"{sum(_is_below(r, 0.05) for r in rows)}, clearly (p < 0.05/{len(rows)}) "
        f"{sum(_is_below(r, level) for r in rows)}.",
        "",
        f"Aperiodic: {claims} claims of {total:,} streams ({100 * claims / total:.2f} %, "
        f"95 % upper {100 * claims_upper95(claims, total):.2f} %); worst cell "
        f"{worst['kind']}/{worst['n']}/{worst['eps0']:g}: {worst['claims']} of "
        f"{worst['trials']}.",
    ]
    return "\n".join(
        [
            *summary,
            "",
            *_block_rows(rows, level),
            "",
            *_below_rows(rows, oracle, level),
            "",
            *_null_rows(null),
        ]
    )


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "periodic":
        main_periodic(int(sys.argv[2]), sys.argv[3], *sys.argv[4:5])
    elif mode == "aperiodic":
        main_aperiodic(int(sys.argv[2]), sys.argv[3])
    elif mode == "oracle":
        main_oracle(sys.argv[2], sys.argv[3])
    elif mode == "long":
        main_long(sys.argv[2])
    elif mode == "table":
        print(table(*sys.argv[2:6]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
