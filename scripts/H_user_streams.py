"""detect_period on a user's own streams, against the two baselines of ``ldpfleet bench cpr``
(helper H, 2026-12-06). Public API only (``ldpfleet.SquareWave``, ``ldpfleet.detect_period``)
plus the bench's baselines (``ldpfleet.app.cpr_period_baselines``, called as
``app/bench_cpr_grid.py`` calls them: defaults). Nothing here was tuned on.

Columns no earlier check read (grep of scripts/ app/ devices/ collector/ tests/):

- ``raisin_extent``: Raisin ``Extent`` (900 grains, file order);
- ``music_zcr``: Turkish-music ``_Zero-crossingrate_Mean`` (400 clips, file order);
- ``darwin_air``: DARWIN ``air_time1 .. air_time25`` of each participant, participant-major;
- ``wisdm_zabsoldev``: WISDM v1.1 transformed ``ZABSOLDEV`` (5,418 windows, file order);
- ``intel_temp_test``: Intel Lab temperature test file (``intelTemperatureTest.csv``), one
  mote's first day (48 half-hours), the only template with its own period (48).

Periodic, "repeat a slice with jitter": one cycle = T consecutive values of the column at a
random start, min-max scaled to [0, 1]; cycle k of the stream is ``m + (c - m) a_k`` (``m``
the cycle's mean, ``a_k ~ 1 + N(0, 0.1^2)``) plus N(0, 0.03^2) per sample, clipped to [0, 1];
then ``ldpfleet.SquareWave(eps0).perturb(x, rng)`` as docs/cpr.md does. (T, n): (7, 140),
(25, 125), (25, 500), (64, 640), (150, 3000); intel (48, 480), (48, 2400).

Daily cycles from timestamps: UCI Occupancy's three files joined on their timestamps
(2015-02-02 .. 02-18, gaps of 7 h and 29 h filled by linear interpolation of the bin means),
averaged into bins of B minutes (B = 30, 10, 5: T = 48, 144, 288 samples a day); a trial
takes a window of 10 whole days from a random bin (n = 10 T), scales it by its 1 % / 99 %
quantiles to [0, 1] (clipped) and privatises it. Columns ``Temperature``, ``Humidity``,
``Light``, ``CO2``. Real data: weekends and occupancy make days differ; T is the day.

Aperiodic, from the same columns (n = 500 and 3,000): ``shuffled`` (n values drawn without
replacement, with replacement when the column is shorter), ``walk`` (the cumulative sum of
the column's successive differences in random order, min-max scaled), ``trend`` (0.7 t/n +
0.3 × shuffled values), ``sorted`` (n drawn values, sorted: a monotone quantile curve).

    python scripts/H_user_streams.py periodic TRIALS OUT.jsonl
    python scripts/H_user_streams.py daily TRIALS OUT.jsonl
    python scripts/H_user_streams.py aperiodic TRIALS OUT.jsonl
    python scripts/H_user_streams.py table OUT.jsonl ...
    python scripts/H_user_streams.py causes T N    # where a baseline wins at (T, N): why

Seeds ``[SEED, block, cell index, trial]``, SEED = 7_310_041.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np
from ldpfleet.app.cpr_period_baselines import autocorrelation_period, folded_variance_period

import ldpfleet

SEED = 7_310_041
DATA = Path(__file__).resolve().parent.parent / "data"
EPS0 = (0.5, 1.0, 2.0, 5.0)
SHAPES = ((7, 140), (25, 125), (25, 500), (64, 640), (150, 3000))
SOURCES = ("raisin_extent", "music_zcr", "darwin_air", "wisdm_zabsoldev")


def _csv_column(path: Path, name: str) -> np.ndarray:
    with path.open(newline="") as f:
        return np.array([float(row[name]) for row in csv.DictReader(f)])


@functools.cache
def column(source: str) -> np.ndarray:
    """The raw column a template source reads (module docstring)."""
    if source == "raisin_extent":
        return _csv_column(DATA / "uci-raisin/Raisin_Dataset.csv", "Extent")
    if source == "music_zcr":
        path = DATA / "uci-turkish-music-emotion/Acoustic_Features.csv"
        return _csv_column(path, "_Zero-crossingrate_Mean")
    if source == "darwin_air":
        with (DATA / "uci-darwin/data.csv").open(newline="") as f:
            rows = list(csv.DictReader(f))
        return np.array([float(r[f"air_time{k}"]) for r in rows for k in range(1, 26)])
    if source == "wisdm_zabsoldev":
        text = (DATA / "wisdm-v1.1-transformed/WISDM_ar_v1.1_transformed.arff").read_text()
        lines = text.split("@data", 1)[1].split()
        names = [
            ln.split()[1].strip('"')
            for ln in text.split("@data", 1)[0].splitlines()
            if ln.lower().startswith("@attribute")
        ]
        idx = names.index("ZABSOLDEV")
        values = []
        for ln in lines:
            parts = ln.split(",")
            if len(parts) == len(names):
                try:
                    values.append(float(parts[idx]))
                except ValueError:
                    continue
        return np.array(values)
    if source == "intel_temp_test":
        rows = np.loadtxt(DATA / "intel-lab/intelTemperatureTest.csv", delimiter=",")
        return rows[:, :48].ravel()  # each mote's first day, mote-major
    raise ValueError(source)


def _scale(v: np.ndarray) -> np.ndarray | None:
    lo, hi = float(v.min()), float(v.max())
    return None if hi - lo <= 1e-12 * max(1.0, abs(hi)) else (v - lo) / (hi - lo)


def cycle(source: str, period: int, rng: np.random.Generator) -> np.ndarray:
    """One cycle: ``period`` consecutive values at a random start, scaled to [0, 1]."""
    col = column(source)
    if source == "intel_temp_test":  # one mote's day (period 48)
        mote = int(rng.integers(col.size // 48))
        return _scale(col[mote * 48 : (mote + 1) * 48])
    for _ in range(100):
        start = int(rng.integers(col.size - period + 1))
        c = _scale(col[start : start + period])
        if c is not None:
            return c
    raise RuntimeError(f"no non-constant slice of {source}")


def repeat_with_jitter(c: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    period = c.size
    k = -(-n // period)
    m = float(c.mean())
    amps = 1.0 + 0.1 * rng.standard_normal(k)
    x = (m + (c[None, :] - m) * amps[:, None]).ravel()[:n]
    return np.clip(x + 0.03 * rng.standard_normal(n), 0.0, 1.0)


@functools.cache
def occupancy_minutes() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Minutes since 2015-02-02 00:00 and the columns, the three files joined."""
    t0 = datetime(2015, 2, 2)
    minutes, cols = [], {k: [] for k in ("Temperature", "Humidity", "Light", "CO2")}
    for name in ("datatest.txt", "datatraining.txt", "datatest2.txt"):
        with (DATA / "uci-occupancy" / name).open(newline="") as f:
            reader = csv.reader(f)
            header = next(reader)  # 7 names over 8 fields: the rows lead with their number
            for fields in reader:
                row = dict(zip(header, fields[1:], strict=True))
                ts = datetime.strptime(row["date"], "%Y-%m-%d %H:%M:%S")
                minutes.append((ts - t0).total_seconds() / 60.0)
                for k in cols:
                    cols[k].append(float(row[k]))
    order = np.argsort(minutes, kind="stable")
    return np.asarray(minutes)[order], {k: np.asarray(v)[order] for k, v in cols.items()}


@functools.cache
def occupancy_bins(name: str, minutes_per_bin: int) -> np.ndarray:
    """Bin means of ``name`` from the first to the last whole bin, empty bins interpolated."""
    minutes, cols = occupancy_minutes()
    b = np.floor(minutes / minutes_per_bin).astype(int)
    lo, hi = b.min(), b.max()
    sums = np.bincount(b - lo, weights=cols[name], minlength=hi - lo + 1)
    counts = np.bincount(b - lo, minlength=hi - lo + 1)
    have = counts > 0
    idx = np.arange(hi - lo + 1)
    means = np.interp(idx, idx[have], sums[have] / counts[have])
    # start at the first midnight so that phase 0 is a midnight (not needed for detection)
    per_day = 1440 // minutes_per_bin
    first = (-lo) % per_day
    return means[first:]


def daily_stream(name: str, minutes_per_bin: int, days: int, rng) -> np.ndarray:
    series = occupancy_bins(name, minutes_per_bin)
    n = days * (1440 // minutes_per_bin)
    start = int(rng.integers(series.size - n + 1))
    w = series[start : start + n]
    lo, hi = np.quantile(w, [0.01, 0.99])
    return np.clip((w - lo) / (hi - lo), 0.0, 1.0)


def aperiodic(kind: str, source: str, n: int, rng) -> np.ndarray:
    col = column(source) if source in SOURCES else occupancy_bins(source, 10)
    draw = rng.choice(col, n, replace=col.size < n)
    if kind == "shuffled":
        return _scale(draw)
    if kind == "walk":
        steps = np.diff(col)
        steps = rng.choice(steps - steps.mean(), n, replace=steps.size < n)
        return _scale(np.cumsum(steps))
    if kind == "trend":
        return 0.7 * np.arange(n) / n + 0.3 * _scale(draw)
    if kind == "sorted":
        return _scale(np.sort(draw))
    raise ValueError(kind)


def _answers(reports: np.ndarray) -> dict:
    t = time.process_time()
    est = ldpfleet.detect_period(reports)
    cpu = time.process_time() - t
    return {
        "ours": est.period,
        "fv": folded_variance_period(reports),
        "ac": autocorrelation_period(reports),
        "cpu_ms": 1000 * cpu,
    }


def _write(out: str, rows: list[dict]) -> None:
    with open(out, "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def main_periodic(trials: int, out: str) -> None:
    cells = [(s, t, n) for s in SOURCES for t, n in SHAPES]
    cells += [("intel_temp_test", 48, 480), ("intel_temp_test", 48, 2400)]
    for ci, (source, period, n) in enumerate(cells):
        for eps0 in EPS0:
            sw = ldpfleet.SquareWave(eps0)
            rows = []
            for trial in range(trials):
                rng = np.random.default_rng([SEED, 1, ci, int(eps0 * 10), trial])
                x = repeat_with_jitter(cycle(source, period, rng), n, rng)
                row = {"block": "periodic", "source": source, "T": period, "n": n}
                rows.append({**row, "eps0": eps0, **_answers(sw.perturb(x, rng))})
            _write(out, rows)
        print(source, period, n, flush=True)


def main_daily(trials: int, out: str) -> None:
    cells = [(c, b) for c in ("Temperature", "Humidity", "Light", "CO2") for b in (30, 10, 5)]
    for ci, (name, minutes) in enumerate(cells):
        for eps0 in EPS0:
            sw = ldpfleet.SquareWave(eps0)
            rows = []
            for trial in range(trials):
                rng = np.random.default_rng([SEED, 2, ci, int(eps0 * 10), trial])
                x = daily_stream(name, minutes, 10, rng)
                period = 1440 // minutes
                row = {"block": "daily", "source": f"occ_{name}", "T": period, "n": x.size}
                rows.append({**row, "eps0": eps0, **_answers(sw.perturb(x, rng))})
            _write(out, rows)
        print(name, minutes, flush=True)


def main_aperiodic(trials: int, out: str) -> None:
    sources = [*SOURCES, "Light", "CO2"]
    kinds = ("shuffled", "walk", "trend", "sorted")
    cells = [(s, k, n) for s in sources for k in kinds for n in (500, 3000)]
    for ci, (source, kind, n) in enumerate(cells):
        for eps0 in EPS0:
            sw = ldpfleet.SquareWave(eps0)
            rows = []
            for trial in range(trials):
                rng = np.random.default_rng([SEED, 3, ci, int(eps0 * 10), trial])
                x = aperiodic(kind, source, n, rng)
                t = time.process_time()
                est = ldpfleet.detect_period(sw.perturb(x, rng))
                cpu = 1000 * (time.process_time() - t)
                rows.append(
                    {
                        "block": "aperiodic",
                        "source": source,
                        "kind": kind,
                        "n": n,
                        "eps0": eps0,
                        "ours": est.period,
                        "cpu_ms": cpu,
                    }
                )
            _write(out, rows)
        print(source, kind, n, flush=True)


def main_causes(period: int, n: int) -> None:
    """Where a baseline is right and ``detect_period`` is not, at (``period``, ``n``): the
    same streams as ``periodic`` (same seeds), with the detector's candidate and p-value."""
    cells = [(s, t, m) for s in SOURCES for t, m in SHAPES]
    tally: dict[str, int] = {}
    for ci, (source, t, m) in enumerate(cells):
        if (t, m) != (period, n):
            continue
        for eps0 in EPS0:
            sw = ldpfleet.SquareWave(eps0)
            for trial in range(20):
                rng = np.random.default_rng([SEED, 1, ci, int(eps0 * 10), trial])
                x = repeat_with_jitter(cycle(source, t, rng), m, rng)
                y = sw.perturb(x, rng)
                est = ldpfleet.detect_period(y)
                base = {folded_variance_period(y), autocorrelation_period(y)}
                if est.period == t or t not in base:
                    continue
                if est.period is None:
                    kind = (
                        "abstained, candidate = T"
                        if est.candidate == t
                        else (f"abstained, candidate {est.candidate}")
                    )
                else:
                    kind = f"claimed {est.period}"
                key = kind if "candidate =" in kind else kind.split(" ")[0]
                tally[key] = tally.get(key, 0) + 1
                print(source, eps0, trial, kind, f"p_adj={est.p_value:.2g}")
    print(tally)


def _sign_p(k: int, m: int) -> float:
    """P(X >= k), X ~ Bin(m, 1/2): one-sided paired sign test on m discordant pairs."""
    return sum(math.comb(m, j) for j in range(k, m + 1)) / 2**m if m else 1.0


def table(paths: list[str]) -> str:
    rows = [json.loads(ln) for p in paths for ln in Path(p).read_text().splitlines()]
    out = []
    per = [r for r in rows if r["block"] in ("periodic", "daily")]
    keys = sorted({(r["source"], r["T"], r["n"]) for r in per}, key=lambda k: (k[0], k[1], k[2]))
    out.append(
        "| source | T | n | "
        + " | ".join(f"ε0 {e:g}" for e in EPS0)
        + " | ±1 (ours) | abstain | CPU ms med / max |"
    )
    out.append("|---" * (7 + len(EPS0) - 3) + "|")
    below = []
    totals = {"ours": 0, "fv": 0, "ac": 0, "n": 0}
    for key in keys:
        cells = []
        sel_all = [r for r in per if (r["source"], r["T"], r["n"]) == key]
        for e in EPS0:
            sel = [r for r in sel_all if r["eps0"] == e]
            hit = {m: [r[m] == r["T"] for r in sel] for m in ("ours", "fv", "ac")}
            counts = {m: sum(v) for m, v in hit.items()}
            for m in ("ours", "fv", "ac"):
                totals[m] += counts[m]
            totals["n"] += len(sel)
            mark = ""
            for m in ("fv", "ac"):
                base_only = sum(b and not o for o, b in zip(hit["ours"], hit[m], strict=True))
                ours_only = sum(o and not b for o, b in zip(hit["ours"], hit[m], strict=True))
                p = _sign_p(base_only, base_only + ours_only)
                if p < 0.05:
                    mark = "*"
                    below.append((key, e, m, counts["ours"], counts[m], p))
            cells.append(f"{counts['ours']}{mark} / {counts['fv']} / {counts['ac']}")
        near = sum(r["ours"] is not None and abs(r["ours"] - r["T"]) == 1 for r in sel_all)
        abst = sum(r["ours"] is None for r in sel_all)
        cpu = sorted(r["cpu_ms"] for r in sel_all)
        out.append(
            f"| {key[0]} | {key[1]} | {key[2]:,} | "
            + " | ".join(cells)
            + f" | {near} | {abst} | {cpu[len(cpu) // 2]:.1f} / {cpu[-1]:.1f} |"
        )
    out.append("")
    out.append(
        f"exact: ours {totals['ours']} / folded variance {totals['fv']} / "
        f"autocorrelation {totals['ac']} of {totals['n']}"
    )
    for key, e, m, o, b, p in below:
        out.append(f"below {m}: {key} eps0 {e}: ours {o}, baseline {b}, sign p = {p:.2g}")
    ap = [r for r in rows if r["block"] == "aperiodic"]
    if ap:
        out.append("")
        out.append("| source | kind | n | claims by ε0 0.5 / 1 / 2 / 5 | periods claimed |")
        out.append("|---|---|---|---|---|")
        akeys = sorted({(r["source"], r["kind"], r["n"]) for r in ap})
        total = claims = 0
        for key in akeys:
            sel = [r for r in ap if (r["source"], r["kind"], r["n"]) == key]
            by = [sum(r["ours"] is not None for r in sel if r["eps0"] == e) for e in EPS0]
            per_eps = len(sel) // len(EPS0)
            claimed = sorted(r["ours"] for r in sel if r["ours"] is not None)
            total += len(sel)
            claims += sum(by)
            out.append(
                f"| {key[0]} | {key[1]} | {key[2]:,} | "
                + " / ".join(map(str, by))
                + f" of {per_eps} | {claimed[:12]} |"
            )
        out.append(f"false claims: {claims} of {total} ({100 * claims / total:.2f} %)")
    return "\n".join(out)


def main(argv: list[str]) -> None:
    if argv[0] == "table":
        print(table(argv[1:]))
        return
    if argv[0] == "causes":
        main_causes(int(argv[1]), int(argv[2]))
        return
    trials, out = int(argv[1]), argv[2]
    {"periodic": main_periodic, "daily": main_daily, "aperiodic": main_aperiodic}[argv[0]](
        trials, out
    )


if __name__ == "__main__":
    main(sys.argv[1:])
