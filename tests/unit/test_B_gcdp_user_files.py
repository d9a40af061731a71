"""Occupancy-format files of a user's own through bench gcdp (helper B's trial, issue 19;
scripts/B_gcdp_user_files.py).

1. Validation windows of one class: a 240-record half-hour file (Intel Lab temperatures,
   labelled by the user) made 4 training, 1 validation and 3 test windows of 30 records;
   the one validation window was empty, so every tau scored validation F1 0 and every mu_k
   was 0 (an allocation on exposure alone), and the bench printed figures without a word.
   The validation windows now need both classes, as the training and test windows do.
2. A ``date`` column in Unix time (seconds or milliseconds) was in no known format: the
   order and the sampling of such a file went unchecked (``protocol.sampling`` steps None),
   and Python read 13-digit milliseconds as ISO basic dates (1423072260000: 1423-07-22).
"""

from __future__ import annotations

import csv
import datetime as dt

import numpy as np
import pytest
from ldpfleet.app.gcdp_datasets import prepare
from ldpfleet.collector.gcdp.evaluation import DateOrder, load_occupancy, record_steps
from ldpfleet.protocol.errors import ParameterError

from tests.conftest import ROOT

DATA = ROOT / "data" / "uci-occupancy"
COLS = ["date", "Temperature", "Humidity", "Light", "CO2", "HumidityRatio", "Occupancy"]


def _rows(name: str) -> list[list[str]]:
    with open(DATA / name, newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        return [row[1:] for row in reader]


def _write(path, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLS)
        writer.writerows(rows)
    return path


def test_validation_windows_of_one_class_are_refused_naming_the_part(tmp_path):
    rows = _rows("datatraining.txt")
    cut = int(len(rows) * 0.75)  # the last fifth (and more) empty
    train = _write(tmp_path / "train.csv", [[*r[:6], "0" if i >= cut else r[6]]
                                            for i, r in enumerate(rows)])  # fmt: skip
    with pytest.raises(ParameterError) as caught:
        prepare("occupancy", train_file=train, test_file=DATA / "datatest.txt")
    error = caught.value
    assert error.field == "train_file" and error.value == [0]
    assert error.limit == "windows of both classes (0 and 1)"
    assert "validation (the last 20% of the records) windows" in error.reason
    assert "smaller --window" not in error.reason  # 54 windows: not few


def test_few_windows_of_one_class_suggest_a_smaller_window(tmp_path):
    rows = _rows("datatraining.txt")[:240]  # 8 windows: 6 train, 2 validation (empty)
    labels = ["1"] * 60 + ["0"] * 180
    train = _write(tmp_path / "small.csv", [[*r[:6], y] for r, y in zip(rows, labels, strict=True)])
    with pytest.raises(ParameterError) as caught:
        prepare("occupancy", train_file=train, test_file=DATA / "datatest.txt")
    assert "the 2 validation" in caught.value.reason
    assert "(a smaller --window makes more windows)" in caught.value.reason


def test_the_shipped_files_still_validate():
    prepared = prepare("occupancy")
    assert prepared.protocol_head["validation_windows"] == 54


def _unix(rows, scale: int):
    start = dt.datetime(2015, 2, 4, 17, 51, tzinfo=dt.UTC).timestamp()
    return [[str(int((start + 60 * i) * scale)), *r[1:]] for i, r in enumerate(rows)]


@pytest.mark.parametrize("scale", [1, 1000])
def test_unix_time_dates_give_the_sampling(tmp_path, scale):
    path = _write(tmp_path / "unix.csv", _unix(_rows("datatest.txt")[:100], scale))
    steps = record_steps(path)
    assert steps is not None and np.all(steps == 60.0)
    x, _ = load_occupancy(path)
    assert x.shape == (100, 5)


@pytest.mark.parametrize("scale", [1, 1000])
def test_unix_time_dates_out_of_order_are_refused(tmp_path, scale):
    rows = _unix(_rows("datatest.txt")[:10], scale)
    rows[5], rows[6] = rows[6], rows[5]
    path = _write(tmp_path / "back.csv", rows)
    unit = "seconds" if scale == 1 else "milliseconds"
    with pytest.raises(ValueError, match=rf"line 8: date .* is earlier .*unix {unit}"):
        load_occupancy(path)


def test_small_numbers_and_iso_basic_dates_are_not_unix_time():
    order = DateOrder()
    assert order.feed("17", 2) is False  # a counter: no known format, the check stops
    order = DateOrder()
    assert order.feed("20150204", 2) is True  # ISO basic date, read as ISO
    assert order.iso is not None and order.iso[0] == dt.datetime(2015, 2, 4)


def test_the_release_states_the_sampling_of_its_two_files(tmp_path):
    """A calibration file at 1 min against a fleet source at 5 min ran without a word (the
    windows of 30 steps span 30 and 150 minutes); ``gcdp.sampling`` now says so."""
    from ldpfleet.collector.gcdp_stage import sampling_entry

    rows = _rows("datatraining.txt")
    minute = [[r[0][:17] + "00", *r[1:]] for r in rows]  # on whole minutes
    calibration = _write(tmp_path / "cal.csv", minute)
    source = _write(tmp_path / "src.csv", minute[::5])
    entry = sampling_entry(str(calibration), str(source), 30)
    assert entry["calibration_step_s"] == 60.0 and entry["source_step_s"] == 300.0
    assert entry["calibration_window_s"] == 29 * 60 and entry["source_window_s"] == 29 * 300
    assert "a window of 30 steps spans 30 min of calibration records and 150 min" in entry["note"]
    same = sampling_entry(str(calibration), str(calibration), 30)
    assert same["note"] is None and same["source_step_s"] == 60.0
    # the shipped files (a quoted row id, dates a second off the minute) agree
    shipped = sampling_entry(str(DATA / "datatraining.txt"), str(DATA / "datatest.txt"), 30)
    assert shipped["note"] is None and shipped["calibration_step_s"] == 60.0
    # no source path (a synthetic source, or plans without it): the calibration only
    alone = sampling_entry(str(calibration), None, 30)
    assert alone["source_step_s"] is None and alone["note"] is None


def test_the_scenario_release_entry_carries_the_sampling():
    from ldpfleet.collector.gcdp_stage import GcdpStage
    from ldpfleet.scenarios.plans import gcdp_stage_config
    from ldpfleet.scenarios.schema import load_scenario

    loaded = load_scenario(ROOT / "scenarios" / "occupancy-release.toml")
    stage = GcdpStage(gcdp_stage_config(loaded), "r", loaded.device_ids(), seed=6)
    entry = stage.summary()["sampling"]
    assert entry["calibration_step_s"] == 60.0 and entry["note"] is None
    if gcdp_stage_config(loaded).source_path is not None:  # with /tmp/B-plans.diff
        assert entry["source_step_s"] == 60.0


def test_the_sampling_note_is_a_run_warning():
    from ldpfleet.collector.gcdp_stage import release_warnings

    assert release_warnings(None) == [] and release_warnings({"sampling": {"note": None}}) == []
    assert release_warnings({}) == []  # an entry from before the sampling entry
    said = release_warnings({"sampling": {"note": "30 min against 150 min"}})
    assert said == ["gcdp: 30 min against 150 min"]
