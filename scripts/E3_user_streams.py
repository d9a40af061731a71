"""Period detection on streams nobody tuned it to, round 3 (issue 19, helper E, 2026-12-06).

A user's trial of the public API, run from a non-editable install: ``ldpfleet.detect_period``
with its defaults against the two baselines of ``ldpfleet bench cpr``
(``ldpfleet.app.cpr_period_baselines``: folded variance, autocorrelation) on templates and
aperiodic controls that no CPR script, bench or earlier held-out check uses
(``app/cpr_grid_streams.py``, ``app/cpr_held_out_periodic.py``, ``scripts/cpr_user_heldout.py``
and ``scripts/cpr_*`` were read to avoid them). Nothing here was tuned on.

Periodic templates (one cycle scaled to [0, 1]; a data-set cycle is resampled to the cell's
period by periodic linear interpolation; repeated with amplitude jitter N(0, 0.02^2) by
``grid_stream``, clipped to [0, 1]):

- ``wisdm_resultant``: WISDM v1.1 ``RESULTANT`` of 50 consecutive examples (the grid reads
  the binned X/Y/Z columns, the held-out check ``YAVG``);
- ``music_roughness``: Turkish-music ``_Roughness_Mean`` of 40 consecutive clips (the grid
  reads one clip's MFCC means, the held-out check its chromagram means);
- ``intel_hum_test``: one Intel Lab mote's humidity over one day of the *test* file
  (``intelHumidityTest.csv``, day 1 or 2: days no earlier check reads; the held-out check
  read the train file's first day, the grid temperatures);
- ``pulse5``: a pulse train of duty cycle 5 % (``max(1, round(0.05 T))`` samples high);
- ``missing_beat``: a pulse of 10 % duty every beat ``b`` with every k-th beat missing, so
  the stream's period is ``T = k b`` (k = 3 or 4 by cell); an answer ``b`` is counted
  apart (``beat``);
- ``mult_noise``: a smooth asymmetric two-harmonic cycle times log-normal noise
  ``exp(0.3 Z)`` per sample (multiplicative, no chirp), scaled by 0.6 and clipped;
- ``level_shift``: a two-harmonic cycle of amplitude 0.5 plus a step of 0.3 at n / 2.

(T, n): (12, 600) 50 cycles; (97, 1000) 10.3 cycles; (101, 404) 4 cycles; (1009, 10000)
9.9 cycles (a prime period near the slow T = 1,000 case; the 10,000-report timing cell);
``missing_beat`` uses (12, 600) with k = 3 and (100, 1000), (404, 1616), (1000, 10000) with
k = 4. Per-report eps0 0.5, 1, 2, 5 (``ldpfleet.SquareWave(eps0)``). Long cell:
(97, 100000), eps0 1 and 5, 3 trials per template, folded variance skipped there (one
stream would take ~30 s of its O(n^2) scan; the autocorrelation baseline is an FFT).

Aperiodic controls (``detect_period`` only; the baselines never abstain):
``cauchy`` (iid Cauchy, min-max scaled: a few huge spikes), ``student_t1.5`` (iid t with 1.5
degrees of freedom scaled by its 1 % / 99 % quantiles and clipped), ``markov_onoff``
(0.25 / 0.75 levels, geometric durations of mean 20, + N(0, 0.05^2)), ``renewal_onoff``
(durations uniform in 10 .. 40: a broad spectral bump near 50 without a period), ``fgn_0.9``
(fractional Gaussian noise, Hurst 0.9, Davies-Harte), ``reflect_walk`` (a random walk of
step sd 0.05 reflected at 0 and 1), ``raisin_shuffled`` (Raisin ``Perimeter`` drawn iid from
the 900 grains: a skewed white stream), ``const_0.5`` and ``const_1`` (a constant, at the
middle and at the top of SW's input range); n = 300, 1,000, 10,000.

``two_sines``: sin(2 pi t / P) + sin(2 pi t / (P phi)), P uniform in 11 .. 29, phi the
golden ratio (the worst-approximable ratio: no integer T <= n/3 is close to a multiple of
both), random phases. It has no period. A claim T is counted as a *near-period* when the
fold at T keeps both sines in phase over the stream (phase slip of each, summed over the
n / T cycles, below a quarter turn), else as *other*.

Trial seeds ``[SEED, block, cell index, trial]``, SEED = 606113 (grep finds it nowhere else).

Run (each under ~5 CPU-min here; ``nice -n 5``):
``python scripts/E3_user_streams.py periodic TRIALS OUT.jsonl [BLOCK]``,
``... aperiodic TRIALS OUT.jsonl [BLOCK]`` (BLOCK: the seed block, 1 and 2 by default;
the pre-registered evaluation of docs/preregistration/E3-long-divisors.md uses 21 and 22),
``... long OUT.jsonl``, ``... edges TRIALS OUT.jsonl``
(periods 3, 4, 5, a prime at n / 3, and 10 cycles of 9,973 in 100,000), then
``python scripts/E3_user_streams.py table PERIODIC.jsonl APERIODIC.jsonl LONG.jsonl``
(``... cells PERIODIC.jsonl``: one row per template and shape, the counts per eps0).
Measured with TRIALS = 20 (periodic) and 100 (aperiodic); docs/cpr.md has the table.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from ldpfleet.app.cpr_grid_streams import grid_stream
from ldpfleet.app.cpr_period_baselines import autocorrelation_period, folded_variance_period
from ldpfleet.collector.metrics import cosine_distance

import ldpfleet

SEED = 606113
DATA = Path(__file__).resolve().parents[1] / "data"
DATA_SOURCES = ("wisdm_resultant", "music_roughness", "intel_hum_test")
SHAPES = ("pulse5", "missing_beat", "mult_noise", "level_shift")
SOURCES = DATA_SOURCES + SHAPES
PERIOD_N = ((12, 600), (97, 1000), (101, 404), (1009, 10000))
BEAT_PERIOD_N = ((12, 600, 3), (100, 1000, 4), (404, 1616, 4), (1000, 10000, 4))
EPS0 = (0.5, 1.0, 2.0, 5.0)
APERIODIC = (
    "cauchy",
    "student_t1.5",
    "markov_onoff",
    "renewal_onoff",
    "fgn_0.9",
    "reflect_walk",
    "raisin_shuffled",
    "const_0.5",
    "const_1",
    "two_sines",
)
APERIODIC_N = (300, 1000, 10000)
COSINE_TRIALS = 3
# scored apart from the false-claim rate: a phase-wandering cycle (a stochastic cycle,
# docs/cpr-grid.md "Not part of the promise") and two incommensurate sines (near-periods)
NOT_APERIODIC_NOISE = ("renewal_onoff", "two_sines")
GOLDEN = (1 + 5**0.5) / 2


def _norm(values) -> np.ndarray:
    values = np.asarray(values, float)
    low, high = values.min(), values.max()
    return (values - low) / (high - low) if high > low else np.zeros_like(values)


@functools.cache
def _table(source: str) -> np.ndarray:
    """Rows of native cycles of a data-set template."""
    if source == "wisdm_resultant":
        path = DATA / "wisdm-v1.1-transformed" / "WISDM_ar_v1.1_transformed.arff"
        lines = path.read_text().split("@data", 1)[1].split()
        res = np.array([float(line.split(",")[44]) for line in lines if line.count(",") > 44])
        return res[: res.size // 50 * 50].reshape(-1, 50)
    if source == "music_roughness":
        path = DATA / "uci-turkish-music-emotion" / "Acoustic_Features.csv"
        with path.open(newline="") as handle:
            rough = np.array([float(r["_Roughness_Mean"]) for r in csv.DictReader(handle)])
        return rough[: rough.size // 40 * 40].reshape(-1, 40)
    if source == "intel_hum_test":
        rows = np.loadtxt(DATA / "intel-lab" / "intelHumidityTest.csv", delimiter=",")
        return np.concatenate([rows[:, :48], rows[:, 48:96]])
    raise ValueError(source)


def _two_harmonics(u: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return _norm(np.sin(2 * np.pi * u) + 0.5 * np.sin(4 * np.pi * u + 6 * rng.random()))


def template(source: str, period: int, rng: np.random.Generator, beats: int = 1) -> np.ndarray:
    """One cycle of ``period`` samples in [0, 1]."""
    u = (np.arange(period) / period + rng.random()) % 1.0
    if source == "pulse5":
        width = max(1, round(0.05 * period))
        cycle = np.zeros(period)
        cycle[(np.arange(width) + rng.integers(period)) % period] = 1.0
        return cycle
    if source == "missing_beat":
        beat = period // beats
        width = max(1, round(0.1 * beat))
        cycle = np.zeros(period)
        start = int(rng.integers(beat))
        for k in range(beats - 1):  # the last beat of the cycle is missing
            cycle[start + k * beat + np.arange(width)] = 1.0
        return cycle
    if source in ("mult_noise", "level_shift"):
        return _two_harmonics(u, rng)
    table = _table(source)
    cycle = _norm(table[int(rng.integers(len(table)))])
    while np.ptp(cycle) == 0:
        cycle = _norm(table[int(rng.integers(len(table)))])
    if cycle.size == period:
        return cycle
    grid = np.arange(period) * cycle.size / period
    return np.interp(grid, np.arange(cycle.size + 1), np.append(cycle, cycle[0]))


def clean_stream(
    source: str, period: int, n: int, rng: np.random.Generator, beats: int = 1
) -> np.ndarray:
    """The periodic input in [0, 1] of one trial."""
    base = grid_stream(template(source, period, rng, beats), n, rng, 0.02, 0.0)
    if source == "mult_noise":
        return np.clip(0.6 * base * np.exp(0.3 * rng.standard_normal(n)), 0.0, 1.0)
    if source == "level_shift":
        return np.clip(0.1 + 0.5 * base + 0.3 * (np.arange(n) >= n // 2), 0.0, 1.0)
    return base


def _fgn(n: int, hurst: float, rng: np.random.Generator) -> np.ndarray:
    """Fractional Gaussian noise by circulant embedding (Davies-Harte)."""
    k = np.arange(n + 1, dtype=float)
    gamma = 0.5 * (
        np.abs(k + 1) ** (2 * hurst) - 2 * k ** (2 * hurst) + np.abs(k - 1) ** (2 * hurst)
    )
    row = np.concatenate([gamma, gamma[-2:0:-1]])
    lam = np.maximum(np.fft.fft(row).real, 0.0)
    m = row.size
    z = rng.standard_normal(m) + 1j * rng.standard_normal(m)
    return np.fft.fft(np.sqrt(lam / m) * z).real[:n]


def _onoff(n: int, rng: np.random.Generator, durations) -> np.ndarray:
    out = np.empty(n)
    t, level = 0, int(rng.integers(2))
    while t < n:
        d = int(durations())
        out[t : t + d] = 0.25 + 0.5 * level
        t, level = t + d, 1 - level
    return np.clip(out + 0.05 * rng.standard_normal(n), 0.0, 1.0)


@functools.cache
def _raisin_perimeter() -> np.ndarray:
    with (DATA / "uci-raisin" / "Raisin_Dataset.csv").open(newline="") as handle:
        return _norm([float(r["Perimeter"]) for r in csv.DictReader(handle)])


def aperiodic(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, tuple]:
    """An aperiodic input in [0, 1] and, for ``two_sines``, its two periods."""
    if kind == "cauchy":
        return _norm(rng.standard_cauchy(n)), ()
    if kind == "student_t1.5":
        x = rng.standard_t(1.5, n)
        low, high = np.quantile(x, [0.01, 0.99])
        return np.clip((x - low) / (high - low), 0.0, 1.0), ()
    if kind == "markov_onoff":
        return _onoff(n, rng, lambda: rng.geometric(1 / 20)), ()
    if kind == "renewal_onoff":
        return _onoff(n, rng, lambda: rng.integers(10, 41)), ()
    if kind == "fgn_0.9":
        return _norm(_fgn(n, 0.9, rng)), ()
    if kind == "reflect_walk":
        x = np.empty(n)
        v = rng.random()
        for t, step in enumerate(0.05 * rng.standard_normal(n)):
            v = abs(v + step)
            v = 2.0 - v if v > 1.0 else v
            x[t] = v
        return x, ()
    if kind == "raisin_shuffled":
        return rng.choice(_raisin_perimeter(), n), ()
    if kind.startswith("const_"):
        return np.full(n, float(kind.removeprefix("const_"))), ()
    if kind == "two_sines":
        p1 = rng.uniform(11.0, 29.0)
        p2 = p1 * GOLDEN
        t = np.arange(n)
        x = np.sin(2 * np.pi * t / p1 + 6 * rng.random()) + np.sin(
            2 * np.pi * t / p2 + 6 * rng.random()
        )
        return _norm(x), (p1, p2)
    raise ValueError(kind)


def near_period(claim: int, n: int, periods: tuple) -> bool:
    """Whether folding at ``claim`` keeps every sine of ``periods`` in phase over the stream:
    the phase slip per cycle times the n / claim cycles below a quarter turn for each."""
    for p in periods:
        ratio = claim / p
        if abs(ratio - round(ratio)) * n / claim >= 0.25 or round(ratio) == 0:
            return False
    return True


def periodic_cells() -> list[tuple[str, int, int, float, int]]:
    """(source, T, n, eps0, beats) in a fixed order (the seed index)."""
    out = []
    for s in SOURCES:
        shapes = BEAT_PERIOD_N if s == "missing_beat" else [(t, n, 1) for t, n in PERIOD_N]
        out += [(s, t, n, e, k) for t, n, k in shapes for e in EPS0]
    return out


def _sign_test_p(base_only: int, ours_only: int) -> float:
    """One-sided paired sign test: P(at least ``base_only`` of the discordant pairs go to
    the baseline | each goes either way with probability 1/2)."""
    m = base_only + ours_only
    return float(sum(math.comb(m, i) for i in range(base_only, m + 1)) / 2**m) if m else 1.0


def run_periodic_cell(
    index: int, cell: tuple, trials: int, block: int = 1, fv: bool = True
) -> dict:
    source, period, n, eps0, beats = cell
    sw = ldpfleet.SquareWave(eps0)
    names = ("ours", "fv", "ac") if fv else ("ours", "ac")
    hits = dict.fromkeys(names, 0)
    ours_only = dict.fromkeys(names[1:], 0)
    base_only = dict.fromkeys(names[1:], 0)
    abstain = off1 = near = far = beat = 0
    answers, cpu, cos_run, cos_true = [], [], [], []
    for trial in range(trials):
        rng = np.random.default_rng([SEED, block, index, trial])
        clean = clean_stream(source, period, n, rng, beats)
        reports = sw.perturb(clean, rng)
        start = time.process_time()
        hat = ldpfleet.detect_period(reports).period
        cpu.append(time.process_time() - start)
        found = {"ours": hat, "ac": autocorrelation_period(reports)}
        if fv:
            found["fv"] = folded_variance_period(reports)
        for name in names:
            hits[name] += found[name] == period
        for name in names[1:]:
            ours_only[name] += hat == period and found[name] != period
            base_only[name] += found[name] == period and hat != period
        answers.append(hat)
        if hat is None:
            abstain += 1
        elif hat != period:
            off1 += abs(hat - period) == 1
            beat += beats > 1 and hat == period // beats
            near += abs(hat - period) <= max(1, period * period // n)
            far += abs(hat - period) > max(1, period * period // n)
        if trial < COSINE_TRIALS and n <= 1000:
            run = ldpfleet.cpr(reports, sw)
            told = ldpfleet.cpr(reports, sw, ldpfleet.CprConfig(period=period))
            cos_run.append(cosine_distance(run.reconstruction, clean))
            cos_true.append(cosine_distance(told.reconstruction, clean))
    return {
        "source": source,
        "period": period,
        "n": n,
        "eps0": eps0,
        "beats": beats,
        "trials": trials,
        "hits": hits,
        "ours_only": ours_only,
        "base_only": base_only,
        "below_p": {k: _sign_test_p(base_only[k], ours_only[k]) for k in ours_only},
        "abstain": abstain,
        "off_by_one": off1,
        "beat": beat,
        "near": near,
        "far": far,
        "answers": answers,
        "cos_run": cos_run,
        "cos_true": cos_true,
        "cpu_ms_median": 1000 * float(np.median(cpu)),
        "cpu_ms_max": 1000 * float(np.max(cpu)),
    }


def run_aperiodic_cell(
    index: int, kind: str, n: int, eps0: float, trials: int, block: int = 2
) -> dict:
    claims, periods, near_periods, cpu = 0, [], 0, []
    sw = ldpfleet.SquareWave(eps0)
    for trial in range(trials):
        rng = np.random.default_rng([SEED, block, index, trial])
        clean, sines = aperiodic(kind, n, rng)
        reports = sw.perturb(clean, rng)
        start = time.process_time()
        est = ldpfleet.detect_period(reports)
        cpu.append(time.process_time() - start)
        if est.period is not None:
            claims += 1
            periods.append(est.period)
            near_periods += bool(sines) and near_period(est.period, n, sines)
    return {
        "kind": kind,
        "n": n,
        "eps0": eps0,
        "trials": trials,
        "claims": claims,
        "near_period_claims": near_periods,
        "periods": periods,
        "cpu_ms_median": 1000 * float(np.median(cpu)),
        "cpu_ms_max": 1000 * float(np.max(cpu)),
    }


def _write(out: str, rows) -> None:
    with open(out, "w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
            handle.flush()


def main_periodic(trials: int, out: str, block: int = 1) -> None:
    cells = periodic_cells()
    _write(out, (run_periodic_cell(i, c, trials, block) for i, c in enumerate(cells)))


def main_aperiodic(trials: int, out: str, block: int = 2) -> None:
    cells = [(k, n, e) for k in APERIODIC for n in APERIODIC_N for e in EPS0]
    _write(out, (run_aperiodic_cell(i, *c, trials, block) for i, c in enumerate(cells)))


def main_long(out: str) -> None:
    cells = [(s, 97, 100_000, e, 1) for s in SOURCES if s != "missing_beat" for e in (1.0, 5.0)]
    _write(out, (run_periodic_cell(i, c, 3, block=3, fv=False) for i, c in enumerate(cells)))


EDGE_PERIOD_N = ((3, 600), (4, 600), (5, 1000), (331, 993))
EDGE_SOURCES = ("pulse5", "intel_hum_test", "mult_noise")


def main_edges(trials: int, out: str) -> None:
    """The smallest periods (3, 4, 5) and a prime period at n / 3 exactly (331 of 993),
    eps0 2 and 5; then (9973, 100000), 10 cycles of a prime period, 2 trials, no folded
    variance (block 4)."""
    cells = [(s, t, n, e, 1) for s in EDGE_SOURCES for t, n in EDGE_PERIOD_N for e in (2.0, 5.0)]
    rows = [run_periodic_cell(i, c, trials, block=4) for i, c in enumerate(cells)]
    long = [(s, 9973, 100_000, 5.0, 1) for s in EDGE_SOURCES]
    rows += [run_periodic_cell(100 + i, c, 2, block=4, fv=False) for i, c in enumerate(long)]
    _write(out, rows)


def _load(path: str) -> list[dict]:
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def table(periodic: str, aperiodic_path: str, long: str = "") -> str:
    rows = _load(periodic)
    lines = [
        "| source | T | n | ours | fv | ac | below (p<0.05) | abstain | off-by-one | near | far"
        " | ms median / max |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["source"], r["period"], r["n"]), []).append(r)
    below_cells = []
    for (source, period, n), rs in groups.items():
        tot = {k: sum(r["hits"][k] for r in rs) for k in rs[0]["hits"]}
        trials = sum(r["trials"] for r in rs)
        below = [r for r in rs if min(r["below_p"].values()) < 0.05]
        below_cells += below
        lines.append(
            f"| {source} | {period} | {n} | {tot['ours']}/{trials} | {tot['fv']} | {tot['ac']} | "
            f"{', '.join(format(r['eps0'], 'g') for r in below) or '-'} | "
            f"{sum(r['abstain'] for r in rs)} | {sum(r['off_by_one'] for r in rs)} | "
            f"{sum(r['near'] for r in rs)} | {sum(r['far'] for r in rs)} | "
            f"{np.median([r['cpu_ms_median'] for r in rs]):.1f} / "
            f"{max(r['cpu_ms_max'] for r in rs):.1f} |"
        )
    tot = {k: sum(r["hits"][k] for r in rows) for k in rows[0]["hits"]}
    lines.append("")
    lines.append(
        f"Cells {len(rows)}, below a baseline (p < 0.05) {len(below_cells)}, clearly "
        f"(p < 0.05/{len(rows)}) "
        f"{sum(min(r['below_p'].values()) < 0.05 / len(rows) for r in rows)}; exact "
        + ", ".join(f"{k} {v}" for k, v in tot.items())
        + f" of {sum(r['trials'] for r in rows)}; off-by-one "
        f"{sum(r['off_by_one'] for r in rows)}; missing-beat answers at the beat "
        f"{sum(r['beat'] for r in rows)}"
    )
    for r in below_cells:
        lines.append(
            f"- below: {r['source']} ({r['period']}, {r['n']}) eps0 {r['eps0']:g}: ours "
            f"{r['hits']['ours']}, fv {r['hits']['fv']}, ac {r['hits']['ac']} of {r['trials']}; "
            f"p {min(r['below_p'].values()):.3g}; answers {r['answers']}"
        )
    run = [c for r in rows for c in r["cos_run"]]
    true = [c for r in rows for c in r["cos_true"]]
    right = [
        (a, b)
        for r in rows
        for a, b, ans in zip(r["cos_run"], r["cos_true"], r["answers"], strict=False)
        if ans == r["period"]
    ]
    lines.append(
        f"Cosine distance, CPR as run / told T, {len(run)} streams (n <= 1000, 3 per cell): "
        f"{np.mean(run):.4f} / {np.mean(true):.4f}; where the period is right "
        f"({len(right)}): max |ratio - 1| "
        f"{max((abs(a / b - 1) if b else abs(a - b)) for a, b in right):.2e}"
    )
    nulls = _load(aperiodic_path)
    lines += [
        "",
        "| aperiodic | n | claims by eps0 0.5 / 1 / 2 / 5 | periods claimed |",
        "|---|---|---|---|",
    ]
    by: dict[tuple, list[dict]] = {}
    for r in nulls:
        by.setdefault((r["kind"], r["n"]), []).append(r)
    for (kind, n), rs in by.items():
        extra = ""
        if kind == "two_sines":
            extra = f" (near-period {sum(r['near_period_claims'] for r in rs)})"
        lines.append(
            f"| {kind} | {n} | {' / '.join(str(r['claims']) for r in rs)} of "
            f"{rs[0]['trials']}{extra} | {sorted(p for r in rs for p in r['periods'])[:12]} |"
        )
    plain = [r for r in nulls if r["kind"] not in NOT_APERIODIC_NOISE]
    claims = sum(r["claims"] for r in plain)
    trials = sum(r["trials"] for r in plain)
    worst = max(plain, key=lambda r: r["claims"])
    lines.append(
        f"\nFalse claims (without {', '.join(NOT_APERIODIC_NOISE)}): {claims} of {trials} "
        f"({100 * claims / trials:.2f} %), "
        f"worst cell {worst['kind']} n={worst['n']} eps0={worst['eps0']:g}: "
        f"{worst['claims']} of {worst['trials']}"
    )
    ten = [r for r in nulls if r["n"] == 10000]
    lines.append(
        f"10,000-report aperiodic streams: CPU ms median of cell medians "
        f"{np.median([r['cpu_ms_median'] for r in ten]):.1f}, "
        f"max {max(r['cpu_ms_max'] for r in ten):.1f}"
    )
    if long:
        lines += [
            "",
            "| long (97, 100000) | eps0 | ours | ac | answers | CPU s median |",
            "|---|---|---|---|---|---|",
        ]
        for r in _load(long):
            lines.append(
                f"| {r['source']} | {r['eps0']:g} | {r['hits']['ours']}/{r['trials']} | "
                f"{r['hits']['ac']} | {r['answers']} | {r['cpu_ms_median'] / 1000:.2f} |"
            )
    return "\n".join(lines)


def cell_table(periodic: str) -> str:
    """Every cell: exact answers ours / folded variance / autocorrelation per eps0 (of the
    trials), then off-by-one answers, abstentions and CPU ms (median / max) over the row."""
    rows = _load(periodic)
    eps = sorted({r["eps0"] for r in rows})
    head = " | ".join(f"ε0 {e:g}" for e in eps)
    lines = [
        f"| template | T | n | {head} | off-by-one | abstain | CPU ms |",
        "|---|---|---|" + "---|" * len(eps) + "---|---|---|",
    ]
    groups: dict[tuple, dict] = {}
    for r in rows:
        groups.setdefault((r["source"], r["period"], r["n"]), {})[r["eps0"]] = r
    for (source, period, n), by in groups.items():
        cells = []
        for e in eps:
            h = by[e]["hits"]
            mark = "*" if min(by[e]["below_p"].values()) < 0.05 else ""
            cells.append(f"{h['ours']}{mark} / {h.get('fv', '-')} / {h['ac']}")
        rs = list(by.values())
        lines.append(
            f"| {source} | {period:,} | {n:,} | {' | '.join(cells)} | "
            f"{sum(r['off_by_one'] for r in rs)} | {sum(r['abstain'] for r in rs)} | "
            f"{np.median([r['cpu_ms_median'] for r in rs]):.1f} / "
            f"{max(r['cpu_ms_max'] for r in rs):.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    mode = argv[0] if argv else ""
    if mode == "periodic":
        main_periodic(int(argv[1]), argv[2], *map(int, argv[3:4]))
    elif mode == "aperiodic":
        main_aperiodic(int(argv[1]), argv[2], *map(int, argv[3:4]))
    elif mode == "long":
        main_long(argv[1])
    elif mode == "edges":
        main_edges(int(argv[1]), argv[2])
    elif mode == "table":
        print(table(*argv[1:]))
    elif mode == "cells":
        print(cell_table(argv[1]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
