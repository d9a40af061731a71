"""Held-out Occupancy-format files through ``ldpfleet bench gcdp`` (helper D, issue 19).

Builds a user's variants of the shipped files (rows shuffled in time, a subset of columns,
extra columns in another order, semicolons, decimal commas, gaps, a day missing, 5-minute
sampling, a constant channel, 50 rows, 200,000 rows, labels "yes"/"no"), runs the bench on
each (training file = the shipped ``datatraining.txt`` unless the row says otherwise) and
prints docs/gcdp.md's "Held-out files" table: F1 of NonPrivate (the clipping-only release),
Lap-DP, Ada-DP and GC-DP beside the majority-class and always-occupied baselines, the run
time, and each refused file's one-line error. ``--base-rate`` adds the F1 each method would
have on datatest2's windows at datatest's positive share (TPR and FPR kept), which separates
the base-rate effect from a shift of the windows.

    python scripts/gcdp_user_heldout.py [--eps 0.2,0.5,1,2,4] [--draws 10] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import random
import time
from pathlib import Path

import numpy as np
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.app.gcdp_datasets import prepare
from ldpfleet.protocol.errors import ParameterError

DATA = Path(__file__).resolve().parent.parent / "data" / "uci-occupancy"
COLS = ["date", "Temperature", "Humidity", "Light", "CO2", "HumidityRatio", "Occupancy"]
METHODS = ("NonPrivate", "Lap-DP", "Ada-DP", "GC-DP")


def _read(name: str) -> list[list[str]]:
    with open(DATA / name) as handle:
        reader = csv.reader(handle)
        next(reader)
        return [row[1:] for row in reader]  # drop the row id


def _write(path: Path, rows, cols=COLS, delimiter=",") -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, delimiter=delimiter)
        writer.writerow(cols)
        writer.writerows(rows)
    return path


def _shifted(blocks, total: int) -> list[list[str]]:
    """The blocks concatenated until ``total`` rows, each shifted to follow the last."""
    out, last, k = [], None, 0
    while len(out) < total:
        block = blocks[k % len(blocks)]
        k += 1
        first = dt.datetime.fromisoformat(block[0][0])
        offset = last + dt.timedelta(minutes=1) - first if last else dt.timedelta(0)
        for row in block[: total - len(out)]:
            last = dt.datetime.fromisoformat(row[0]) + offset
            out.append([last.strftime("%Y-%m-%d %H:%M:%S"), *row[1:]])
    return out


def variants(out: Path) -> list[tuple[str, Path, Path | None]]:
    """(name, test file, training file or None for the shipped one), written to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    train, test, test2 = _read("datatraining.txt"), _read("datatest.txt"), _read("datatest2.txt")
    rng = random.Random(5)
    shuffled = test2[:]
    rng.shuffle(shuffled)
    days = sorted({r[0][:10] for r in test2})
    order = ["Occupancy", "CO2", "site", "Light", "date", "HumidityRatio", "Humidity",
             "Temperature"]  # fmt: skip
    where = {c: i for i, c in enumerate(COLS)}
    gaps = [[("" if 1 <= i <= 5 and rng.random() < 0.01 else v) for i, v in enumerate(r)]
            for r in test2]  # fmt: skip
    w = _write
    return [
        ("datatest.txt", DATA / "datatest.txt", None),
        ("datatest2.txt", DATA / "datatest2.txt", None),
        ("datatest2, extra columns, other order", w(out / "t2-extra.csv", [
            [r[where[c]] if c in where else "roomA" for c in order] for r in test2], order),
         None),
        ("datatest2, semicolons", w(out / "t2-semi.csv", test2, delimiter=";"), None),
        ("datatest2, a day missing", w(out / "t2-day.csv", [r for r in test2
                                                           if r[0][:10] != days[2]]), None),
        ("datatest2, 5-minute sampling", w(out / "t2-5min.csv", test2[::5]), None),
        ("datatest2, Humidity constant", w(out / "t2-const.csv", [
            [r[0], r[1], test2[0][2], *r[3:]] for r in test2]), None),
        ("datatest2, training at 5 minutes", DATA / "datatest2.txt",
         w(out / "train-5min.csv", train[::5])),
        ("200,000 rows (time-shifted copies)", w(out / "big.csv", _shifted(
            [test2, test, train], 200_000)), None),
        ("datatest2, shuffled, no date column", w(out / "t2-shuf-nodate.csv",
                                                  [r[1:] for r in shuffled], COLS[1:]), None),
        ("datatest2, shuffled", w(out / "t2-shuf.csv", shuffled), None),
        ("datatest2, no HumidityRatio", w(out / "t2-subset.csv", [
            r[:5] + r[6:] for r in test2], COLS[:5] + COLS[6:]), None),
        ("datatest2, decimal commas", w(out / "t2-comma.csv", [
            [v.replace(".", ",") if i else v for i, v in enumerate(r)] for r in test2],
            delimiter=";"), None),
        ("datatest2, 1 % empty cells", w(out / "t2-gaps.csv", gaps), None),
        ("datatest2, labels yes/no", w(out / "t2-yesno.csv", [
            [*r[:6], "yes" if r[6] == "1" else "no"] for r in test2]), None),
        ("50 rows", w(out / "tiny.csv", test[:50]), None),
    ]  # fmt: skip


def run_one(test: Path, train: Path | None, eps, draws: int) -> dict:
    """The bench's result on one file, or {"error": ...}; with the wall time."""
    start = time.perf_counter()
    try:
        out = bench.bench_gcdp("occupancy", METHODS, eps, draws, 0, train_file=train,
                               test_file=test, timing=False)  # fmt: skip
    except ParameterError as error:
        return {"error": str(error), "seconds": time.perf_counter() - start}
    out["seconds"] = time.perf_counter() - start
    return out


def table(rows, eps) -> str:
    """docs/gcdp.md's markdown table."""
    lines = [
        "| file | windows (occupied) | ε | NonPrivate (clipping only) | Lap-DP | Ada-DP | GC-DP "
        "| majority class | always occupied | run s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, out in rows:
        if "error" in out:
            lines.append(f"| {name} | refused: `{out['error']}` | | | | | | | | "
                         f"{out['seconds']:.1f} |")  # fmt: skip
            continue
        proto, base = out["protocol"], out["protocol"]["baselines"]
        for j, e in enumerate(eps):
            f1 = [out["f1"][m][str(float(e))] for m in METHODS]
            head = (f"| {name} | {proto['test_windows']} ({proto['test_positive_share']:.0%}) "
                    if j == 0 else "| | ")  # fmt: skip
            tail = (f"{base['majority_class']['f1']:.1f} | {base['always_occupied_f1']:.1f} | "
                    f"{out['seconds']:.1f} |" if j == 0 else "| | |")  # fmt: skip
            lines.append(head + f"| {e:g} | " + " | ".join(f"{v:.1f}" for v in f1) + " | " + tail)
    return "\n".join(lines)


def base_rate(eps: float, draws: int, share: float) -> dict:
    """Each method's mean F1 on datatest2's releases (the bench's generators) recomputed at
    the positive share ``share``: F1 = 2 TPR s / (TPR s + FPR (1 - s) + s)."""
    prep = prepare("occupancy", test_file=DATA / "datatest2.txt")
    tau = bench_tau(prep)
    cal = bench._calibrate_prepared(prep, tau)
    y = np.asarray(prep.test_l)
    out = {}
    for method in METHODS:
        f1 = []
        for k in range(draws):
            rng = np.random.default_rng([0, round(eps * 1e6), k])
            pred = np.asarray(prep.model.predict(bench._release_all(method, prep.test_f, cal,
                                                                    eps, rng)))  # fmt: skip
            tpr, fpr = pred[y == 1].mean(), pred[y == 0].mean()
            f1.append(200 * tpr * share / (tpr * share + fpr * (1 - share) + share))
        out[method] = round(float(np.mean(f1)), 1)
    return out


def bench_tau(prep) -> float:
    """The bench's tau (chosen on the training file's validation windows)."""
    return bench.bench_gcdp("occupancy", ("GC-DP",), (1.0,), 1, 0, timing=False,
                            test_file=DATA / "datatest2.txt")["calibration"]["tau"]  # fmt: skip


def tau_transfer(test_file: Path, eps: float, draws: int) -> dict:
    """GC-DP's mean test F1 at each tau of ``TAU_GRID`` (the bench's generators): whether
    the tau chosen on the training file's validation windows is also good on ``test_file``."""
    from ldpfleet.collector.gcdp.constants import TAU_GRID
    from ldpfleet.collector.gcdp.evaluation import f1_percent

    prep = prepare("occupancy", test_file=test_file)
    y = np.asarray(prep.test_l)
    out = {}
    for tau in TAU_GRID:
        cal = bench._calibrate_prepared(prep, tau)
        f1 = []
        for k in range(draws):
            rng = np.random.default_rng([0, round(eps * 1e6), k])
            released = bench._release_all("GC-DP", prep.test_f, cal, eps, rng)
            f1.append(f1_percent(y, np.asarray(prep.model.predict(released))))
        out[tau] = round(float(np.mean(f1)), 1)
    from ldpfleet.collector.gcdp.evaluation import masking_utility

    # mu_k as the bench computes it (training validation windows) and on the test windows
    out["mu_training"] = [round(float(v), 3) for v in prep.utility]
    out["mu_test"] = [round(float(v), 3) for v in masking_utility(prep.model, prep.test_f, y)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", default="0.2,0.5,1,2,4")
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("/tmp/gcdp-user-files"))
    parser.add_argument("--base-rate", action="store_true")
    parser.add_argument("--tau-transfer", action="store_true")
    args = parser.parse_args()
    eps = tuple(float(e) for e in args.eps.split(","))
    if args.tau_transfer:  # only this table
        for name in ("datatest.txt", "datatest2.txt"):
            print(
                name, "GC-DP test F1 by tau at eps = 1:", tau_transfer(DATA / name, 1.0, args.draws)
            )
        return
    rows = []
    for name, test, train in variants(args.out):
        rows.append((name, run_one(test, train, eps, args.draws)))
        print(f"# {name}: {rows[-1][1].get('error') or 'ok'} ({rows[-1][1]['seconds']:.1f} s)",
              flush=True)  # fmt: skip
    print(table(rows, eps))
    if args.base_rate:
        for e in eps:
            print(
                f"eps {e:g}: datatest2 at datatest's share 0.364:", base_rate(e, args.draws, 0.3636)
            )


if __name__ == "__main__":
    main()
