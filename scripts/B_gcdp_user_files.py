"""Occupancy-format files nobody shipped, through the CLI as a user runs it (helper B, issue 19).

Builds files from a copy of the UCI Occupancy and Intel Lab data (``--data``, a folder with
``uci-occupancy/`` and ``intel-lab/``; the project never reads it at run time) into
``--out``, then runs, with the ``ldpfleet`` executable given (a non-editable install):

* ``ldpfleet bench gcdp --train-file A --test-file B --method NonPrivate,Lap-DP,GC-DP
  --eps 1 --draws 2`` per case, and
* the occupancy-release scenario with ``[source] path`` = B and ``[gcdp] calibration_path``
  = A (``run FILE -b memory``) per case,

and prints one line per run: exit status, seconds, and either the F1 figures and notes
(bench), the release's line (run), or the one-sentence refusal. Exit 2 with a sentence
or exit 0 with sensible figures is a pass; anything else (a traceback, exit 1, a silent
wrong reading) is a finding.

    python scripts/B_gcdp_user_files.py --data ../shared/data --out /tmp/B-user \\
        --ldpfleet /work/venv-B-user/bin/ldpfleet [--only NAME,...] [--no-run]
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import itertools
import json
import math
import subprocess
import time
from pathlib import Path

COLS = ["date", "Temperature", "Humidity", "Light", "CO2", "HumidityRatio", "Occupancy"]
ISO = "%Y-%m-%d %H:%M:%S"


def _read_occupancy(path: Path) -> list[list[str]]:
    """The shipped layout's rows without their row id (7 fields: COLS)."""
    with open(path, newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        return [row[1:] for row in reader]


def _write(path: Path, rows, cols, *, delimiter=",", newline="\n", encoding="utf-8") -> Path:
    with open(path, "w", newline="", encoding=encoding) as handle:
        writer = csv.writer(handle, delimiter=delimiter, lineterminator=newline)
        writer.writerow(cols)
        writer.writerows(rows)
    return path


def _when(row) -> dt.datetime:
    return dt.datetime.fromisoformat(row[0])


def _minutely(rows):
    """Rows on exact minutes (the shipped dates wobble by a second)."""
    out = []
    for row in rows:
        t = _when(row)
        t = (t + dt.timedelta(seconds=30)).replace(second=0)
        out.append([t.strftime(ISO), *row[1:]])
    return out


def _halfminute(rows):
    """30-s sampling: each minute followed by the midpoint to the next (label of the first)."""
    out = []
    for a, b in itertools.pairwise(rows):
        out.append(a)
        t = _when(a) + dt.timedelta(seconds=30)
        mid = [f"{(float(x) + float(y)) / 2:.6g}" for x, y in zip(a[1:6], b[1:6], strict=True)]
        out.append([t.strftime(ISO), *mid, a[6]])
    out.append(rows[-1])
    return out


def _repeated(rows, total: int):
    """The rows repeated with dates continuing one minute apart until ``total`` rows."""
    start = _when(rows[0])
    return [
        [(start + dt.timedelta(minutes=i)).strftime(ISO), *rows[i % len(rows)][1:]]
        for i in range(total)
    ]


def _reformat(rows, fmt: str):
    return [[_when(row).strftime(fmt), *row[1:]] for row in rows]


def _humidity_ratio(temp_c: float, rh: float) -> float:
    """kg water / kg dry air at sea level (Magnus formula)."""
    p_ws = 610.94 * math.exp(17.625 * temp_c / (temp_c + 243.04))
    p_w = rh / 100.0 * p_ws
    return 0.62198 * p_w / (101325.0 - p_w)


def _intel_rows(data: Path, mote: int) -> list[list[str]]:
    """Mote ``mote``'s half-hour series (train then test steps) as Occupancy-format rows:
    Light and CO2 absent from the lab's copy are written as constants, Occupancy = the
    temperature above its median (a user's own label)."""

    def series(name: str) -> list[float]:
        values = []
        for part in ("Train", "Test"):
            with open(data / "intel-lab" / f"intel{name}{part}.csv", newline="") as handle:
                values += [float(v) for v in list(csv.reader(handle))[mote]]
        return values

    temp, hum = series("Temperature"), series("Humidity")
    median = sorted(temp)[len(temp) // 2]
    start = dt.datetime(2004, 2, 28, 0, 0)
    return [
        [
            (start + dt.timedelta(minutes=30 * i)).strftime(ISO),
            f"{t:.2f}", f"{h:.2f}", "0", "450", f"{_humidity_ratio(t, h):.6f}",
            str(int(t > median)),
        ]
        for i, (t, h) in enumerate(zip(temp, hum, strict=True))
    ]  # fmt: skip


def build(data: Path, out: Path) -> dict[str, tuple[Path, Path]]:
    """Every case's (train, test) files."""
    out.mkdir(parents=True, exist_ok=True)
    train = _minutely(_read_occupancy(data / "uci-occupancy" / "datatraining.txt"))
    test = _minutely(_read_occupancy(data / "uci-occupancy" / "datatest.txt"))
    plain_train = _write(out / "train.csv", train, COLS)
    plain_test = _write(out / "test.csv", test, COLS)
    cases: dict[str, tuple[Path, Path]] = {"plain": (plain_train, plain_test)}

    def both(name, make, suffix="csv"):
        cases[name] = (make(train, out / f"{name}-train.{suffix}"),
                       make(test, out / f"{name}-test.{suffix}"))  # fmt: skip

    order = [6, 5, 3, 1, 0, 4, 2]  # Occupancy first, date in the middle
    both("reordered", lambda rows, p: _write(p, [[r[i] for i in order] for r in rows],
                                             [COLS[i] for i in order]))  # fmt: skip
    extra = ["room", *COLS[:3], "Pressure", *COLS[3:], "note"]
    both("extra-columns", lambda rows, p: _write(
        p, [["R1", *r[:3], "1013.2", *r[3:], "ok"] for r in rows], extra))  # fmt: skip
    both("no-date", lambda rows, p: _write(p, [r[1:] for r in rows], COLS[1:]))
    both("no-humidityratio", lambda rows, p: _write(
        p, [r[:5] + r[6:] for r in rows], COLS[:5] + COLS[6:]))  # fmt: skip
    both("sampling-30s", lambda rows, p: _write(p, _halfminute(rows), COLS))
    both("sampling-5min", lambda rows, p: _write(p, rows[::5], COLS))
    # gaps of hours: 3 h cut from the middle of each file, and 8 h more in the training file
    both("gaps-hours", lambda rows, p: _write(
        p, rows[: len(rows) // 2] + rows[len(rows) // 2 + 180 :], COLS))  # fmt: skip
    both("date-dmy", lambda rows, p: _write(p, _reformat(rows, "%d/%m/%Y %H:%M"), COLS))
    both("date-us-ampm", lambda rows, p: _write(
        p, _reformat(rows, "%m/%d/%Y %I:%M:%S %p"), COLS))  # fmt: skip
    both("date-epoch", lambda rows, p: _write(
        p, [[str(int(_when(r).timestamp())), *r[1:]] for r in rows], COLS))  # fmt: skip
    cases["few-thousand"] = (_write(out / "few-thousand-train.csv", train[:3000], COLS),
                             _write(out / "few-thousand-test.csv", test[:2000], COLS))  # fmt: skip
    cases["200k"] = (_write(out / "200k-train.csv", _repeated(train, 200_000), COLS), plain_test)
    both("crlf", lambda rows, p: _write(p, rows, COLS, newline="\r\n"))
    both(
        "semicolon-decimal-comma",
        lambda rows, p: _write(
            p, [[r[0], *(v.replace(".", ",") for v in r[1:])] for r in rows], COLS, delimiter=";"
        ),
    )
    both("semicolon", lambda rows, p: _write(p, rows, COLS, delimiter=";"))
    both("utf16-tab", lambda rows, p: _write(
        p, rows, COLS, delimiter="\t", newline="\r\n", encoding="utf-16"), "txt")  # fmt: skip
    zeros = [[*r[:6], "0"] for r in test]
    cases["test-all-zero"] = (plain_train, _write(out / "test-all-zero.csv", zeros, COLS))
    cases["train-all-zero"] = (_write(out / "train-all-zero.csv", [[*r[:6], "0"] for r in train],
                                      COLS), plain_test)  # fmt: skip
    cases["mixed-rate"] = (plain_train, cases["sampling-5min"][1])
    cases["200k-test"] = (plain_train, cases["200k"][0])
    cases["header-only"] = (plain_train, _write(out / "header-only.csv", [], COLS))
    both("labels-float", lambda rows, p: _write(p, [[*r[:6], f"{float(r[6]):.1f}"]
                                                    for r in rows], COLS))  # fmt: skip
    both("date-iso-z", lambda rows, p: _write(p, _reformat(rows, "%Y-%m-%dT%H:%M:%SZ"), COLS))

    def excel_sep(rows, path):
        _write(path, rows, COLS, delimiter=";")
        path.write_text("sep=;\n" + path.read_text())
        return path

    both("excel-sep-line", excel_sep)
    both("lowercase-header", lambda rows, p: _write(p, rows, [c.lower() for c in COLS]))
    both("quoted-row-id", lambda rows, p: _write(
        p, [[str(i + 1), *r] for i, r in enumerate(rows)], COLS))  # fmt: skip
    intel = _intel_rows(data, 7)
    cases["intel-halfhour"] = (_write(out / "intel-train.csv", intel[:144], COLS),
                               _write(out / "intel-test.csv", intel[144:], COLS))  # fmt: skip
    return cases


def _scenario(template: str, train: Path, test: Path, path: Path) -> Path:
    text = template.replace('"data/uci-occupancy/datatest.txt"', json.dumps(str(test)))
    text = text.replace('"data/uci-occupancy/datatraining.txt"', json.dumps(str(train)))
    path.write_text(text)
    return path


def _bench_line(stdout: str) -> str:
    doc = json.loads(stdout)
    f1 = {m: v.get("1.0") for m, v in doc["f1"].items()}
    proto = doc["protocol"]
    sampling = proto.get("sampling") or {}
    notes = [n for n in (sampling.get("note"), (proto.get("nonprivate_test") or {}).get(
        "collapsed")) if n]  # fmt: skip
    return (f"F1 {f1} windows train/val/test {proto['train_windows']}/"
            f"{proto.get('validation_windows')}/{proto['test_windows']} step "
            f"{sampling.get('train_step_s')}/{sampling.get('test_step_s')} s"
            + (f" notes: {notes}" if notes else ""))  # fmt: skip


def _run_line(out: Path) -> str:
    doc = json.loads((out / "results.json").read_text())
    gcdp = doc.get("gcdp") or {}
    acc = gcdp.get("accuracy") or {}
    return (f"released {gcdp.get('windows_released')}/{gcdp.get('windows_expected')} "
            f"MAE {acc.get('mae')} warnings {len(doc.get('warnings') or [])}: "
            + " | ".join(w[:160] for w in doc.get("warnings") or []))  # fmt: skip


def _last_error(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1][:400] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("/tmp/B-user"))
    parser.add_argument("--ldpfleet", default="ldpfleet")
    parser.add_argument("--only", default="")
    parser.add_argument("--no-run", action="store_true", help="bench only, no scenario runs")
    args = parser.parse_args()
    cases = build(args.data, args.out)
    template = (Path(__file__).resolve().parent.parent / "scenarios" /
                "occupancy-release.toml").read_text()  # fmt: skip
    only = set(filter(None, args.only.split(",")))
    tally = {"bench": [0, 0, 0], "run": [0, 0, 0]}  # exit 0, exit 2, other
    for name, (train, test) in cases.items():
        if only and name not in only:
            continue
        bench = [
            args.ldpfleet,
            "bench",
            "gcdp",
            "--train-file",
            str(train),
            "--test-file",
            str(test),
            "--method",
            "NonPrivate,Lap-DP,GC-DP",
            "--eps",
            "1",
            "--draws",
            "2",
        ]
        kinds = [("bench", bench)]
        if not args.no_run:
            scenario = _scenario(template, train, test, args.out / f"{name}.toml")
            run_out = args.out / f"run-{name}"
            kinds.append(("run", [args.ldpfleet, "run", str(scenario), "-b", "memory",
                                  "--out", str(run_out)]))  # fmt: skip
        for kind, command in kinds:
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, timeout=900)
            seconds = time.perf_counter() - started
            slot = {0: 0, 2: 1}.get(done.returncode, 2)
            tally[kind][slot] += 1
            if done.returncode == 0:
                try:
                    said = _bench_line(done.stdout) if kind == "bench" else _run_line(run_out)
                except Exception as error:  # a finding: exit 0 without its results
                    said = f"UNREADABLE OUTPUT: {error!r}"
            else:
                said = _last_error(done.stderr)
            print(f"{name:24} {kind:5} exit {done.returncode} {seconds:6.1f} s  {said}",
                  flush=True)  # fmt: skip
    print("tally (exit 0, exit 2, other):", tally)


if __name__ == "__main__":
    main()
