"""Held-out check of the CPR claims (C3, C4, C5, C8 of docs/claims.md) on generators, templates,
lengths, budgets and seeds that appear nowhere in the project's grid (helper H, 2026-12-07).
Nothing here was tuned on: the families, shapes, budgets and the seed were fixed before the
first run. Detector code is untouched; streams are privatised as ``app/bench_cpr_grid.py``
privatises them (``SquareWave(eps0).perturb(clean, rng)``) and answered by the public
``ldpfleet.detect_period`` / ``ldpfleet.cpr`` and the bench's two baselines (defaults).

Parts (each writes one JSON line per cell to ``--out``, appending):

- ``aperiodic`` (C3): ten families generated here (none is a grid or held-out generator of
  ``app/cpr_grid_streams.py``; the AR(1)s have a stationary start and fresh seeds):
  ``arma21`` (AR 1.3, -0.4: real roots 0.8 and 0.5; MA -0.5), ``ar1_095`` / ``ar1_099``
  (stationary start), ``pink`` (1/f spectrum, synthesised on 2n and cut), ``garch``
  (GARCH(1,1) returns, omega 0.05, alpha 0.1, beta 0.85), ``garch_walk`` (their cumulative
  sum), ``regimes`` (piecewise constant, change points a Bernoulli process of mean spacing
  L ~ U(10, max(10, n / 5)), uniform levels, N(0, 0.03^2)), ``poisson_spikes`` (level 0.1 +
  N(0, 0.03^2), one-sample spikes to U(0.6, 1) at Poisson times of rate U(1/200, 1/20)),
  ``logistic_trend`` (logistic over the stream, centre U(0.3, 0.7) n, width U(0.05, 0.3) n,
  plus AR(1) 0.5 noise sd 0.05), ``drift_walk2`` (steps N(mu, 1), mu ~ U(-0.3, 0.3)),
  ``int_levels`` (iid Poisson(lambda) counts, lambda ~ U(0.5, 5), divided by their max).
  Lengths 60, 250, 1,000, 4,000, 20,000; eps0 0.2, 1, 5 (0.5 and 2 at 1,000).
- ``periodic`` (C4, C5): five templates: ``heartbeat`` (P wave, sharp QRS, T wave: Gaussians
  on a baseline), ``triangle``, ``trapezoid`` (rise 10 %, high 30 %, fall 10 %, low 50 %),
  ``random_cycle`` (a cycle of T uniform values from the trial's RNG, circularly smoothed over
  max(1, T // 8) samples), ``humidity_ratio`` (T consecutive minutes of UCI Occupancy
  ``datatest.txt`` ``HumidityRatio`` from a random start: a column no CPR check reads).
  Each cycle min-max scaled to [0, 1], a random phase, cycle k scaled about its mean by
  1 + N(0, 0.05^2), plus N(0, 0.03^2), clipped. (T, cycles): (8, 60), (13, 4), (21, 25),
  (37, 9), (59, 40), (90, 3), (131, 12), (311, 6), (640, 5); eps0 0.3, 1, 3. Answers
  classified exact / T +- 1 / near (within max(1, T^2 // n), as scripts/cpr_user_heldout.py) /
  2T (+-1) / T/2 (+-1) / other multiple or divisor / far /
  abstain, for ``detect_period`` and both baselines. On the first ``--rec-trials`` trials:
  ``ldpfleet.cpr`` as run against ``ldpfleet.cpr(..., CprConfig(period=T))``, cosine distance
  to the clean stream (``collector.metrics.cosine_distance``, as the grid).
- ``speed`` (C8): ``detect_period`` CPU time (``time.process_time``, warm) on 10,000-report
  streams: every aperiodic family and every template at T = 37, 250, 1,000, eps0 1.

    python scripts/H_heldout_cpr.py run --out /tmp/H.jsonl [--part aperiodic|periodic|speed]
        [--trials 200] [--periodic-trials 40] [--rec-trials 8] [--lengths 60,250]
        [--trial-offset 10000] [--families pink,garch] [--templates triangle]
        [--shapes "8,60;13,4"] [--eps 1]
    python scripts/H_heldout_cpr.py summary /tmp/H.jsonl [--cells]   (markdown tables)

Seeds ``[SEED, part, crc32(cell tag), trial]``, SEED = 8_120_731 (grep finds it nowhere else).
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
from ldpfleet.app.cpr_period_baselines import autocorrelation_period, folded_variance_period
from ldpfleet.collector.metrics import cosine_distance
from scipy import signal, stats

import ldpfleet

SEED = 8_120_731
DATA = Path(__file__).resolve().parent.parent / "data"
PARTS = {"aperiodic": 1, "periodic": 2, "speed": 3}

APERIODIC_LENGTHS = (60, 250, 1000, 4000, 20000)
APERIODIC_EPS0 = (0.2, 1.0, 5.0)
EXTRA_EPS0 = {1000: (0.5, 2.0)}  # two more budgets at one length
PERIODIC_SHAPES = (
    (8, 60),
    (13, 4),
    (21, 25),
    (37, 9),
    (59, 40),
    (90, 3),
    (131, 12),
    (311, 6),
    (640, 5),
)
PERIODIC_EPS0 = (0.3, 1.0, 3.0)
SPEED_PERIODS = (37, 250, 1000)
BASELINE_MAX_N = 1000  # baselines on aperiodic streams up to this length (they never abstain)


def rng_for(part: str, tag: str, trial: int) -> np.random.Generator:
    return np.random.default_rng([SEED, PARTS[part], zlib.crc32(tag.encode()), trial])


def norm01(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, float)
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.full(x.size, 0.5)


# -- aperiodic families --------------------------------------------------------------------


def _arma21(n, rng):
    burn = 300
    e = rng.standard_normal(n + burn)
    return norm01(signal.lfilter([1.0, -0.5], [1.0, -1.3, 0.4], e)[burn:])


def _ar1_stationary(phi, n, rng):
    e = rng.standard_normal(n)
    e[0] /= math.sqrt(1.0 - phi * phi)  # x_0 from the stationary law
    return norm01(signal.lfilter([1.0], [1.0, -phi], e))


def _pink(n, rng):
    m = 2 * n
    f = np.fft.rfftfreq(m)
    amp = np.zeros_like(f)
    amp[1:] = f[1:] ** -0.5
    spec = amp * (rng.standard_normal(f.size) + 1j * rng.standard_normal(f.size))
    return norm01(np.fft.irfft(spec, m)[:n])


def _garch_returns(n, rng, omega=0.05, alpha=0.1, beta=0.85):
    burn = 200
    z = rng.standard_normal(n + burn)
    x = np.empty(n + burn)
    s2 = omega / (1.0 - alpha - beta)
    for t in range(n + burn):
        x[t] = math.sqrt(s2) * z[t]
        s2 = omega + alpha * x[t] * x[t] + beta * s2
    return x[burn:]


def _regimes(n, rng):
    spacing = rng.uniform(10.0, max(10.0, n / 5.0))
    cuts = np.flatnonzero(rng.random(n) < 1.0 / spacing)
    levels = rng.random(cuts.size + 1)
    x = levels[np.searchsorted(cuts, np.arange(n), side="right")]
    return np.clip(x + 0.03 * rng.standard_normal(n), 0.0, 1.0)


def _poisson_spikes(n, rng):
    rate = rng.uniform(1 / 200, 1 / 20)
    x = 0.1 + 0.03 * rng.standard_normal(n)
    times = np.flatnonzero(rng.random(n) < rate)
    x[times] = rng.uniform(0.6, 1.0, times.size)
    return np.clip(x, 0.0, 1.0)


def _logistic_trend(n, rng):
    t = np.arange(n)
    centre = rng.uniform(0.3, 0.7) * n
    width = rng.uniform(0.05, 0.3) * n
    noise = signal.lfilter([1.0], [1.0, -0.5], rng.standard_normal(n)) * 0.05 * math.sqrt(0.75)
    return np.clip(0.1 + 0.8 / (1.0 + np.exp(-(t - centre) / width)) + noise, 0.0, 1.0)


def _drift_walk2(n, rng):
    return norm01(np.cumsum(rng.uniform(-0.3, 0.3) + rng.standard_normal(n)))


def _int_levels(n, rng):
    counts = rng.poisson(rng.uniform(0.5, 5.0), n).astype(float)
    top = counts.max()
    return counts / top if top > 0 else counts


FAMILIES = {
    "arma21": _arma21,
    "ar1_095": functools.partial(_ar1_stationary, 0.95),
    "ar1_099": functools.partial(_ar1_stationary, 0.99),
    "pink": _pink,
    "garch": lambda n, rng: norm01(_garch_returns(n, rng)),
    "garch_walk": lambda n, rng: norm01(np.cumsum(_garch_returns(n, rng))),
    "regimes": _regimes,
    "poisson_spikes": _poisson_spikes,
    "logistic_trend": _logistic_trend,
    "drift_walk2": _drift_walk2,
    "int_levels": _int_levels,
}


def family(name: str):
    """A family of ``FAMILIES``, or ``level_<c>[_<sd>]``: the constant ``c`` in [0, 1] plus
    N(0, sd^2) (sd 0.03 by default), clipped (the quiet part of ``poisson_spikes``), or
    ``grid:<kind>``: the grid's own ``aperiodic_stream(kind, ...)`` (follow-ups, not in the
    default run)."""
    if name.startswith("grid:"):  # the project's own generator, for comparison
        from ldpfleet.app.cpr_grid_streams import aperiodic_stream

        kind = name.removeprefix("grid:")
        return lambda n, rng: aperiodic_stream(kind, n, rng)
    if name.startswith("level_"):  # level_<c> or level_<c>_<sd>
        c, _, sd = name.removeprefix("level_").partition("_")
        c, sd = float(c), float(sd or 0.03)
        return lambda n, rng: np.clip(c + sd * rng.standard_normal(n), 0.0, 1.0)
    return FAMILIES[name]


# -- periodic templates --------------------------------------------------------------------


@functools.cache
def humidity_ratio() -> np.ndarray:
    with (DATA / "uci-occupancy" / "datatest.txt").open(newline="") as f:
        return np.array([float(row["HumidityRatio"]) for row in csv.DictReader(f)])


def template(name: str, period: int, rng: np.random.Generator) -> np.ndarray:
    u = (np.arange(period) / period + rng.random()) % 1.0
    if name == "heartbeat":

        def bump(c, w, a):
            d = (u - c + 0.5) % 1.0 - 0.5
            return a * np.exp(-0.5 * (d / w) ** 2)

        w_qrs = max(0.012, 0.6 / period)  # at least ~one sample wide
        cyc = bump(0.2, 0.025, 0.15) + bump(0.3, w_qrs, 1.0) - bump(0.33, w_qrs, 0.2)
        cyc = cyc + bump(0.55, 0.05, 0.3)
    elif name == "triangle":
        cyc = 1.0 - np.abs(2.0 * u - 1.0)
    elif name == "trapezoid":
        cyc = np.interp(u, [0.0, 0.1, 0.4, 0.5, 1.0], [0.0, 1.0, 1.0, 0.0, 0.0])
    elif name == "random_cycle":
        raw = rng.random(period)
        k = max(1, period // 8)
        cyc = np.convolve(np.concatenate([raw, raw[: k - 1]]), np.ones(k) / k, "valid")[:period]
    elif name == "humidity_ratio":
        col = humidity_ratio()
        start = int(rng.integers(col.size - period))
        cyc = col[start : start + period]
        while np.ptp(cyc) == 0:
            start = int(rng.integers(col.size - period))
            cyc = col[start : start + period]
    else:
        raise ValueError(name)
    return norm01(cyc)


TEMPLATES = ("heartbeat", "triangle", "trapezoid", "random_cycle", "humidity_ratio")


def periodic_stream(cycle: np.ndarray, cycles: int, rng) -> np.ndarray:
    period = cycle.size
    mean = float(cycle.mean())
    amp = 1.0 + 0.05 * rng.standard_normal(cycles)
    x = (mean + (cycle[None, :] - mean) * amp[:, None]).ravel()
    return np.clip(x + 0.03 * rng.standard_normal(period * cycles), 0.0, 1.0)


def classify(hat: int | None, period: int, cycles: int) -> str:
    if hat is None:
        return "abstain"
    if hat == period:
        return "exact"
    if abs(hat - period) == 1:
        return "off1"
    if abs(hat - period) <= max(1, period * period // (period * cycles)):
        return "near"  # scripts/cpr_user_heldout.py's "near": within max(1, T^2 // n)
    if abs(hat - 2 * period) <= 1:
        return "double"
    if abs(2 * hat - period) <= 2:
        return "half"
    ratio = hat / period
    if ratio > 1 and abs(hat - round(ratio) * period) <= 1:
        return "multiple"
    if ratio < 1 and abs(period - round(period / hat) * hat) <= round(period / hat):
        return "divisor"
    return "far"


# -- the parts -----------------------------------------------------------------------------


def _cpu(fn, *args):
    t0 = time.process_time()
    out = fn(*args)
    return out, (time.process_time() - t0) * 1e3


def aperiodic_cell(name: str, n: int, eps0: float, trials: int, offset: int = 0) -> dict:
    tag = f"{name}/{n}/{eps0}"
    claims, periods, cpu = 0, [], []
    base = Counter()
    base_trials = 0
    for trial in range(offset, offset + trials):
        rng = rng_for("aperiodic", tag, trial)
        reports = ldpfleet.SquareWave(eps0).perturb(family(name)(n, rng), rng)
        est, ms = _cpu(ldpfleet.detect_period, reports)
        cpu.append(ms)
        if est.period is not None:
            claims += 1
            periods.append(int(est.period))
        if n <= BASELINE_MAX_N and trial < offset + 20:  # they never abstain: a check on 20 streams
            base_trials += 1
            base["folded_variance"] += folded_variance_period(reports) is not None
            base["autocorrelation"] += autocorrelation_period(reports) is not None
    return {
        "part": "aperiodic",
        "family": name,
        "n": n,
        "eps0": eps0,
        "trials": trials,
        "trial_offset": offset,
        "claims": claims,
        "claimed_periods": periods,
        "baseline_trials": base_trials,
        "baseline_claims": dict(base),
        "cpu_ms_median": float(np.median(cpu)),
        "cpu_ms_max": float(np.max(cpu)),
    }


def periodic_cell(
    name: str, period: int, cycles: int, eps0: float, trials: int, rec: int, offset: int = 0
):
    tag = f"{name}/{period}/{cycles}/{eps0}"
    n = period * cycles
    kinds = {d: Counter() for d in ("detect_period", "folded_variance", "autocorrelation")}
    ours_only = Counter()
    base_only = Counter()
    answers = []
    recon = []
    for trial in range(offset, offset + trials):
        rng = rng_for("periodic", tag, trial)
        clean = periodic_stream(template(name, period, rng), cycles, rng)
        sw = ldpfleet.SquareWave(eps0)
        reports = sw.perturb(clean, rng)
        found = {
            "detect_period": ldpfleet.detect_period(reports).period,
            "folded_variance": folded_variance_period(reports),
            "autocorrelation": autocorrelation_period(reports),
        }
        for d, hat in found.items():
            kinds[d][classify(hat, period, cycles)] += 1
        for d in ("folded_variance", "autocorrelation"):
            ours_only[d] += found["detect_period"] == period and found[d] != period
            base_only[d] += found[d] == period and found["detect_period"] != period
        answers.append(found["detect_period"])
        if trial < offset + rec:
            run = ldpfleet.cpr(reports, sw)
            told = ldpfleet.cpr(reports, sw, ldpfleet.CprConfig(period=period))
            recon.append(
                {
                    "period": run.period,
                    "kind": classify(run.period, period, cycles),
                    "same_as_detect": run.period == found["detect_period"],
                    "cos_run": cosine_distance(run.reconstruction, clean),
                    "cos_true": cosine_distance(told.reconstruction, clean),
                }
            )
    return {
        "part": "periodic",
        "trial_offset": offset,
        "template": name,
        "period": period,
        "cycles": cycles,
        "n": n,
        "eps0": eps0,
        "trials": trials,
        "kinds": {d: dict(c) for d, c in kinds.items()},
        "ours_only": dict(ours_only),
        "baseline_only": dict(base_only),
        "below_p": {
            d: sign_p(base_only[d], ours_only[d]) for d in ("folded_variance", "autocorrelation")
        },
        "answers": answers,
        "reconstruction": recon,
    }


def sign_p(base_wins: int, ours_wins: int) -> float:
    """One-sided exact sign test (as ``app/bench_cpr_grid.sign_test_p``)."""
    if base_wins == 0:
        return 1.0
    return float(stats.binom.sf(base_wins - 1, base_wins + ours_wins, 0.5))


def speed_rows(streams: int) -> list[dict]:
    ldpfleet.detect_period(np.random.default_rng(0).random(500))  # warm: imports, caches
    rows = []
    n = 10_000
    for fam in FAMILIES:
        cpu = []
        for trial in range(streams):
            rng = rng_for("speed", f"{fam}/{n}", trial)
            reports = ldpfleet.SquareWave(1.0).perturb(FAMILIES[fam](n, rng), rng)
            cpu.append(_cpu(ldpfleet.detect_period, reports)[1])
        rows.append({"part": "speed", "stream": fam, "n": n, "cpu_ms": cpu})
    for name in TEMPLATES:
        for period in SPEED_PERIODS:
            cpu = []
            for trial in range(streams):
                rng = rng_for("speed", f"{name}/{period}", trial)
                clean = periodic_stream(template(name, period, rng), n // period, rng)
                reports = ldpfleet.SquareWave(1.0).perturb(clean, rng)
                cpu.append(_cpu(ldpfleet.detect_period, reports)[1])
            rows.append(
                {"part": "speed", "stream": f"{name}/T{period}", "n": clean.size, "cpu_ms": cpu}
            )
    return rows


def _shapes(text: str | None):
    """``T,cycles;T,cycles`` -> ((T, cycles), ...)."""
    if text is None:
        return None
    return tuple(tuple(int(v) for v in pair.split(",")) for pair in text.split(";"))


def _csv(text: str | None, cast):
    return None if text is None else tuple(cast(v) for v in text.split(","))


def run(args) -> None:
    parts = [args.part] if args.part else ["aperiodic", "periodic", "speed"]
    eps_filter = _csv(args.eps, float)
    out = open(args.out, "a")  # noqa: SIM115 (one line per cell, flushed)

    def emit(row):
        row["seed"] = SEED
        out.write(json.dumps(row) + "\n")
        out.flush()

    t_start = time.time()
    if "aperiodic" in parts:
        families = _csv(args.families, str) or tuple(FAMILIES)
        for n in _csv(args.lengths, int) or APERIODIC_LENGTHS:
            for eps0 in eps_filter or APERIODIC_EPS0 + EXTRA_EPS0.get(n, ()):
                for name in families:
                    row = aperiodic_cell(name, n, eps0, args.trials, args.trial_offset)
                    emit(row)
                    print(
                        f"{time.time() - t_start:7.0f}s {name} n={n} eps0={eps0}: "
                        f"{row['claims']}/{row['trials']}",
                        file=sys.stderr,
                    )
    if "periodic" in parts:
        for name in _csv(args.templates, str) or TEMPLATES:
            for period, cycles in _shapes(args.shapes) or PERIODIC_SHAPES:
                for eps0 in eps_filter or PERIODIC_EPS0:
                    row = periodic_cell(
                        name,
                        period,
                        cycles,
                        eps0,
                        args.periodic_trials,
                        args.rec_trials,
                        args.trial_offset,
                    )
                    emit(row)
                    k = row["kinds"]["detect_period"]
                    print(
                        f"{time.time() - t_start:7.0f}s {name} ({period},{cycles}) eps0={eps0}: "
                        f"{dict(k)}",
                        file=sys.stderr,
                    )
    if "speed" in parts:
        for row in speed_rows(args.speed_streams):
            emit(row)
    out.close()


# -- summary -------------------------------------------------------------------------------


def cp_upper(k: int, n: int, level: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound (``app/bench_cpr_grid.claims_upper95``)."""
    return float(stats.beta.ppf(level, k + 1, n - k)) if k < n else 1.0


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def summary(path: str, cells: bool) -> None:
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    ap = [r for r in rows if r["part"] == "aperiodic"]
    pe = [r for r in rows if r["part"] == "periodic"]
    sp = [r for r in rows if r["part"] == "speed"]
    print(
        f"# summary of {path}: {len(ap)} aperiodic cells, {len(pe)} periodic cells, "
        f"{len(sp)} speed rows, seed {SEED}\n"
    )
    if ap and cells:
        _cells_aperiodic(ap)
    elif ap:
        _summary_aperiodic(ap)
    if pe:
        _summary_periodic(pe)
    if sp:
        _summary_speed(sp)


def cp_interval(k: int, n: int) -> tuple[float, float]:
    """Two-sided 95 % Clopper-Pearson interval."""
    lo = float(stats.beta.ppf(0.025, k, n - k + 1)) if k > 0 else 0.0
    hi = float(stats.beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0
    return lo, hi


def _cells_aperiodic(ap: list[dict]) -> None:
    """One line per aperiodic cell (follow-up files): claims, rate, 95 % intervals."""
    print(
        "| family | n | eps0 | trials (first) | claims | rate | 95 % CP (two-sided) | "
        "one-sided upper | P(X >= k) at 1 % |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in ap:
        k, n = r["claims"], r["trials"]
        lo, hi = cp_interval(k, n)
        p1 = float(stats.binom.sf(k - 1, n, 0.01)) if k else 1.0
        print(
            f"| {r['family']} | {r['n']:,} | {r['eps0']:g} | {n:,} ({r.get('trial_offset', 0)}) "
            f"| {k} | {_pct(k / n)} | {_pct(lo)} - {_pct(hi)} | {_pct(cp_upper(k, n))} | "
            f"{p1:.2g} |"
        )
    print()


def _summary_aperiodic(ap: list[dict]) -> None:
    print("## C3: false claims on aperiodic streams (detect_period)\n")
    print(
        "| family | streams | claims | rate | 95 % upper (one-sided CP) | worst cell (n, eps0) | "
        "worst cell upper | claimed periods |"
    )
    print("|---|---|---|---|---|---|---|---|")
    tot_k = tot_n = 0
    for fam in dict.fromkeys(r["family"] for r in ap):
        cells = [r for r in ap if r["family"] == fam]
        k = sum(r["claims"] for r in cells)
        n = sum(r["trials"] for r in cells)
        tot_k += k
        tot_n += n
        worst = max(cells, key=lambda r: (r["claims"] / r["trials"], r["n"]))
        periods = sorted(p for r in cells for p in r["claimed_periods"])
        shown = ", ".join(map(str, periods[:12])) + (" ..." if len(periods) > 12 else "")
        print(
            f"| {fam} | {n:,} | {k} | {_pct(k / n)} | {_pct(cp_upper(k, n))} | "
            f"{worst['claims']} of {worst['trials']} ({worst['n']:,}, {worst['eps0']:g}) | "
            f"{_pct(cp_upper(worst['claims'], worst['trials']))} | {shown} |"
        )
    print(
        f"| **all** | {tot_n:,} | {tot_k} | {_pct(tot_k / tot_n)} | "
        f"{_pct(cp_upper(tot_k, tot_n))} |"
        " | | |\n"
    )
    print("By length and eps0 (claims of streams, all families):\n")
    lengths = sorted({r["n"] for r in ap})
    budgets = sorted({r["eps0"] for r in ap})
    print("| n | " + " | ".join(f"eps0 {e:g}" for e in budgets) + " |")
    print("|---|" + "---|" * len(budgets))
    for n in lengths:
        cells = []
        for e in budgets:
            rs = [r for r in ap if r["n"] == n and r["eps0"] == e]
            cells.append(
                f"{sum(r['claims'] for r in rs)} of {sum(r['trials'] for r in rs):,}" if rs else ""
            )
        print(f"| {n:,} | " + " | ".join(cells) + " |")
    bt = sum(r["baseline_trials"] for r in ap)
    bf = sum(r["baseline_claims"].get("folded_variance", 0) for r in ap)
    ba = sum(r["baseline_claims"].get("autocorrelation", 0) for r in ap)
    print(
        f"\nBaselines on the first 20 streams of each cell with n <= {BASELINE_MAX_N:,}: folded "
        f"variance claims {bf} of {bt}, autocorrelation {ba} of {bt}."
    )
    over = [
        r
        for r in ap
        if cp_upper(r["claims"], r["trials"]) > 0.01 and r["claims"] / r["trials"] > 0.01
    ]
    print(
        f"Cells whose own rate is above 1 %: {len(over)}"
        + "".join(
            f"; {r['family']} ({r['n']}, {r['eps0']:g}) {r['claims']} of {r['trials']}"
            for r in over
        )
    )
    print()


KINDS = ("exact", "off1", "near", "double", "half", "multiple", "divisor", "far", "abstain")


def _summary_periodic(pe: list[dict]) -> None:
    print("## C4: answers on periodic streams (counts of streams)\n")
    print("| template | streams | detector | " + " | ".join(KINDS) + " | wrong of claims |")
    print("|---|---|---|" + "---|" * (len(KINDS) + 1))
    for name in dict.fromkeys(r["template"] for r in pe):
        cells = [r for r in pe if r["template"] == name]
        n = sum(r["trials"] for r in cells)
        for d in ("detect_period", "folded_variance", "autocorrelation"):
            c = Counter()
            for r in cells:
                c.update(r["kinds"][d])
            claimed = n - c["abstain"]
            wrong = claimed - c["exact"]
            print(
                f"| {name} | {n:,} | {d} | "
                + " | ".join(str(c[k]) for k in KINDS)
                + f" | {wrong} of {claimed} ({_pct(wrong / claimed) if claimed else '-'}) |"
            )
    print(
        "\nBy (T, cycles), all templates and budgets (detect_period exact / off1 / near / double"
        " / half / other wrong / abstain; folded variance exact; autocorrelation exact):\n"
    )
    print(
        "| (T, cycles) | n | streams | ours exact | T±1 | near | 2T | T/2 | other | abstain | "
        "fv exact | ac exact | cells below a baseline (p<0.05) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for shape in dict.fromkeys((r["period"], r["cycles"]) for r in pe):
        cells = [r for r in pe if (r["period"], r["cycles"]) == shape]
        c = Counter()
        fv = ac = 0
        for r in cells:
            c.update(r["kinds"]["detect_period"])
            fv += r["kinds"]["folded_variance"].get("exact", 0)
            ac += r["kinds"]["autocorrelation"].get("exact", 0)
        below = [r for r in cells if min(r["below_p"].values()) < 0.05]
        n = sum(r["trials"] for r in cells)
        other = c["multiple"] + c["divisor"] + c["far"]
        print(
            f"| {shape} | {cells[0]['n']:,} | {n} | {c['exact']} | {c['off1']} | {c['near']} | "
            f"{c['double']} | "
            f"{c['half']} | {other} | {c['abstain']} | {fv} | {ac} | {len(below)} of {len(cells)} |"
        )
    below = [r for r in pe if min(r["below_p"].values()) < 0.05]
    ncell = 2 * len(pe)
    print(
        f"\nCells below a baseline (one-sided sign test p < 0.05): {len(below)} of {len(pe)}; "
        f"clearly (p < 0.05 / {ncell}): "
        f"{sum(min(r['below_p'].values()) < 0.05 / ncell for r in below)}"
    )
    for r in below:
        k = r["kinds"]
        print(
            f"- {r['template']} ({r['period']}, {r['cycles']}) eps0 {r['eps0']:g}: ours "
            f"{k['detect_period'].get('exact', 0)}, fv {k['folded_variance'].get('exact', 0)}, "
            f"ac {k['autocorrelation'].get('exact', 0)} of {r['trials']} "
            f"(p fv {r['below_p']['folded_variance']:.3g}, "
            f"ac {r['below_p']['autocorrelation']:.3g})"
        )
    print("\n## C5: reconstruction, `ldpfleet.cpr` as run against the told true period\n")
    rec = [x for r in pe for x in r["reconstruction"]]
    print(
        f"{len(rec)} streams; `cpr`'s period equals `detect_period`'s on "
        f"{sum(x['same_as_detect'] for x in rec)}.\n"
    )
    print(
        "| answer | streams | mean cos as run | mean cos told T | max ratio as run / told T | "
        "streams with ratio > 1.10 |"
    )
    print("|---|---|---|---|---|---|")
    for kind in KINDS:
        xs = [x for x in rec if x["kind"] == kind]
        if not xs:
            continue
        ratio = [x["cos_run"] / x["cos_true"] if x["cos_true"] > 0 else math.inf for x in xs]
        print(
            f"| {kind} | {len(xs)} | {np.mean([x['cos_run'] for x in xs]):.4f} | "
            f"{np.mean([x['cos_true'] for x in xs]):.4f} | {max(ratio):.3f} | "
            f"{sum(q > 1.10 for q in ratio)} |"
        )
    print()


def _summary_speed(sp: list[dict]) -> None:
    print("## C8: detect_period CPU ms on 10,000-report streams (warm, eps0 1)\n")
    allv = [v for r in sp for v in r["cpu_ms"]]
    print("| stream | n | streams | median | max |")
    print("|---|---|---|---|---|")
    for r in sp:
        print(
            f"| {r['stream']} | {r['n']:,} | {len(r['cpu_ms'])} | {np.median(r['cpu_ms']):.1f} | "
            f"{max(r['cpu_ms']):.1f} |"
        )
    print(
        f"\nAll {len(allv)} streams: median {np.median(allv):.1f} ms, max {max(allv):.1f} ms, "
        f"above 50 ms: {sum(v > 50 for v in allv)}.\n"
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--part", choices=tuple(PARTS))
    r.add_argument("--trials", type=int, default=200)
    r.add_argument("--periodic-trials", type=int, default=40)
    r.add_argument("--rec-trials", type=int, default=8)
    r.add_argument("--speed-streams", type=int, default=10)
    r.add_argument("--trial-offset", type=int, default=0, help="first trial index (fresh blocks)")
    r.add_argument("--lengths")
    r.add_argument("--families")
    r.add_argument("--templates")
    r.add_argument("--shapes", help="T,cycles;T,cycles (default: the nine shapes)")
    r.add_argument("--eps")
    s = sub.add_parser("summary")
    s.add_argument("path")
    s.add_argument("--cells", action="store_true", help="aperiodic: one line per cell")
    args = p.parse_args(argv)
    if args.cmd == "run":
        run(args)
    else:
        summary(args.path, args.cells)
    return 0


if __name__ == "__main__":
    sys.exit(main())
