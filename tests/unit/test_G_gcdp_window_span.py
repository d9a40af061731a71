"""``protocol.sampling`` compares the files' window durations, not only their median steps
(helper G's user trial, 2026-12-06): a test file with 40 % of its records dropped at
random (a lossy logger) keeps a median step of about 60 s, so a window of 30 records spans
~49 min against the training file's 29 with no note. The median window span per file is
now given (``train_window_s``, ``test_window_s``) and a 1.5x difference is a note."""

from __future__ import annotations

import datetime as dt

import numpy as np
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.app.gcdp_datasets import _window_span

from tests.unit.test_bench_gcdp import synthetic_frame

WINDOW = 30
HEADER = "date,Temperature,Humidity,Light,CO2,HumidityRatio,Occupancy\n"


def _write(path, x, y, keep):
    start = dt.datetime(2015, 2, 4)
    lines = [HEADER]
    for i in np.flatnonzero(keep):
        when = start + dt.timedelta(seconds=60 * int(i))
        lines.append(f"{when:%Y-%m-%d %H:%M:%S}," + ",".join(f"{v:.6g}" for v in x[i]))
        lines.append(f",{int(y[i])}\n")
    path.write_text("".join(lines))
    return path


def _sampling(train, test) -> dict:
    out = bench.bench_gcdp(methods=("NonPrivate",), eps_list=(1.0,), draws=1, window=WINDOW,
                           timing=False, train_file=train, test_file=test)  # fmt: skip
    return out["protocol"]["sampling"]


def test_records_dropped_at_random_lengthen_the_test_windows_and_say_so(tmp_path) -> None:
    x, y = synthetic_frame(900, 1)
    train = _write(tmp_path / "train.csv", x, y, np.ones(900, bool))
    x2, y2 = synthetic_frame(1500, 2)
    keep = np.random.default_rng(4).random(1500) > 0.4  # ~60 % kept
    lossy = _write(tmp_path / "lossy.csv", x2, y2, keep)
    sampling = _sampling(train, lossy)
    assert sampling["train_step_s"] == 60 and sampling["test_step_s"] == 60  # medians alike
    assert sampling["train_window_s"] == 29 * 60
    assert 1.5 * 29 * 60 < sampling["test_window_s"] < 2.0 * 29 * 60
    assert "records are missing between others in the test file" in sampling["note"]
    whole = _write(tmp_path / "whole.csv", x2, y2, np.ones(1500, bool))
    same = _sampling(train, whole)
    assert same["note"] is None and same["test_window_s"] == 29 * 60


def test_window_span_reads_whole_windows_only() -> None:
    steps = np.array([60.0] * 29 + [999.0] + [60.0] * 29 + [120.0] * 10)  # 2 windows + rest
    assert _window_span(steps, 30) == 29 * 60  # the step between windows is not inside one
    assert _window_span(steps[:59], 30) == 29 * 60  # 60 records: the last window's end
    assert _window_span(steps[:20], 30) is None and _window_span(None, 30) is None
    assert _window_span(steps, 1) is None
