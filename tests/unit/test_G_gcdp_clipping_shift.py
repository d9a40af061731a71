"""``protocol.clipping_shift`` names a channel whose test windows lie wholly outside the
training file's clipping interval far more often than its training windows (helper G's
user trial, 2026-12-06): a test file in °F against a training file in °C released every
Temperature window at the interval's top, NonPrivate F1 96.9 instead of 98.5, silently."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.app.gcdp_datasets import READINGS, SATURATED_EXCESS, clipping_shift

from tests.unit.test_bench_gcdp import synthetic_frame

HEADER = "Temperature,Humidity,Light,CO2,HumidityRatio,Occupancy\n"


def _write(path, x, y):
    rows = (",".join(f"{v:.6g}" for v in r) + f",{int(o)}\n" for r, o in zip(x, y, strict=True))
    path.write_text(HEADER + "".join(rows))
    return path


def _shift(train, test, clip="iqr"):
    readings = dataclasses.replace(READINGS, clip=clip)
    out = bench.bench_gcdp(methods=("NonPrivate",), eps_list=(1.0,), draws=1, window=30,
                           timing=False, train_file=train, test_file=test,
                           readings=readings)  # fmt: skip
    return out["protocol"]["clipping_shift"]


@pytest.mark.parametrize("clip", ["iqr", "minmax"])
def test_a_test_file_in_another_unit_is_named(tmp_path, clip) -> None:
    x, y = synthetic_frame(900, 1)
    x2, y2 = synthetic_frame(600, 2)
    train = _write(tmp_path / "train.csv", x, y)
    same = _write(tmp_path / "test.csv", x2, y2)
    hot = x2.copy()
    hot[:, 0] = hot[:, 0] * 9 / 5 + 32 + 100  # far above any training Temperature
    fahrenheit = _write(tmp_path / "test_f.csv", hot, y2)
    assert _shift(train, same, clip) is None
    note = _shift(train, fahrenheit, clip)
    assert note.startswith("Temperature: 100% of the test windows lie wholly above")
    assert "Humidity" not in note and "another unit" in note


def test_the_rule_counts_each_side_against_the_training_windows() -> None:
    train = np.full((10, 5), 0.5)
    train[:6, 2] = 0.0  # Light at 0 in 60 % of the training windows (nights)
    test = np.full((10, 5), 0.5)
    test[:, 2] = 0.0  # 100 % at 0: an excess of 0.4 < SATURATED_EXCESS, no note
    test[:5, 3] = 1.0  # CO2 above in 50 % against 0 %: named
    assert SATURATED_EXCESS == 0.5
    note = clipping_shift(train, test)
    assert note.startswith("CO2: 50% of the test windows lie wholly above") and "Light" not in note
    assert clipping_shift(train, train) is None
