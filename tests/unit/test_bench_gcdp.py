"""``ldpfleet bench gcdp`` (scenarios/bench_gcdp.py) on a small synthetic Occupancy-like
frame: result structure, determinism, NonPrivate dominance, parameter refusal, the command."""

from __future__ import annotations

import json

import ldpfleet.app.bench_gcdp as bench
import numpy as np
import pytest
import typer
from ldpfleet.collector.gcdp.evaluation import (
    f1_percent,
    fit_logistic,
    label_utility,
    load_occupancy,
    window_means,
)
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

WINDOW = 10


def synthetic_frame(records: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Five channels; occupancy alternates in blocks of 3 windows. Light and CO2 are far
    apart between the classes (Light 0-20 vs 480-500), so every clean window is classified
    correctly; the other channels are noise or weakly correlated."""
    rng = np.random.default_rng(seed)
    y = ((np.arange(records) // (3 * WINDOW)) % 2).astype(int)
    temp = 20 + 2 * y + rng.normal(0, 0.5, records)
    hum = 27 + rng.normal(0, 1.0, records)
    light = np.where(y == 1, 480.0, 0.0) + rng.uniform(0, 20, records)
    co2 = 450 + 400 * y + rng.normal(0, 30, records)
    ratio = 0.0045 + 0.0002 * y + rng.normal(0, 5e-5, records)
    return np.column_stack([temp, hum, light, co2, ratio]), y


@pytest.fixture(scope="module")
def frame():
    tx, ty = synthetic_frame(600, 1)
    sx, sy = synthetic_frame(300, 2)
    return tx, ty, sx, sy


def run(frame, **kw):
    args = {"eps_list": (0.5, 2.0), "draws": 3, "seed": 7, "window": WINDOW, "data": frame}
    args.update(kw)
    return bench.bench_gcdp("occupancy", **args)


@pytest.fixture(scope="module")
def result(frame):
    return run(frame)


def test_structure(result):
    assert set(result["f1"]) == set(bench.METHODS)
    for method in bench.METHODS:
        assert set(result["f1"][method]) == {"0.5", "2.0"}
        assert all(0.0 <= v <= 100.0 for v in result["f1"][method].values())
        assert set(result["f1_std"][method]) == {"0.5", "2.0"}
        assert result["runtime_s"][method] >= 0.0
        assert result["peak_mem_mb"][method] >= 0.0
    assert result["protocol"]["window"] == WINDOW
    assert result["protocol"]["test_windows"] == 30
    assert result["calibration"]["tau"] in (0.10, 0.15, 0.20, 0.25, 0.30)
    assert len(result["calibration"]["scales"]) == 5
    # Proposition 1 on the calibrated scales: s_k >= B_k
    cal = result["calibration"]
    assert all(s >= b for s, b in zip(cal["scales"], cal["bounds"], strict=True))
    assert sum(result["calibration"]["gcdp_budgets_eps1"]) <= 1.0 + 5 * 5e-7  # 6-digit rounding
    assert all(0.5 <= v <= 1.0 for m in result["attack_auc"].values() for v in m.values())
    assert result["seed_attack_auc"]["GC-DP"]["1.0"] == 0.637
    assert result["seed_f1"]["GC-DP"]["1.0"] == 96.4
    json.dumps(result)  # JSON-serialisable


def test_deterministic_for_a_seed(frame, result):
    again = run(frame, timing=False)
    assert again["f1"] == result["f1"]
    assert again["f1_std"] == result["f1_std"]
    assert again["attack_auc"] == result["attack_auc"]
    assert again["calibration"] == result["calibration"]
    # a cell does not depend on which other methods were requested
    only = run(frame, methods=("GC-DP",), timing=False)
    assert only["f1"]["GC-DP"] == result["f1"]["GC-DP"]


def test_nonprivate_dominates(result):
    # Tolerance. F1 is at most 100 for any prediction, so a private release can beat the
    # non-private one by at most 100 - F1(NonPrivate). On this frame the clean test windows
    # are separated by a wide margin (Light 0-20 vs 480-500 of a 0-500 range), so
    # F1(NonPrivate) = 100 and the tolerance is 0 up to float rounding of the mean (1e-9).
    nonprivate = result["f1"]["NonPrivate"]
    assert all(v == pytest.approx(100.0) for v in nonprivate.values())
    tol = 100.0 - min(nonprivate.values()) + 1e-9
    for method in bench.METHODS:
        for eps, value in result["f1"][method].items():
            assert nonprivate[eps] >= value - tol


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"dataset": "uci-har"}, "dataset"),
        ({"methods": ("Foo",)}, "methods"),
        ({"methods": ()}, "methods"),
        ({"methods": ("Lap-DP", "Lap-DP")}, "methods"),
        ({"eps_list": ()}, "eps_list"),
        ({"eps_list": (0.0,)}, "eps_list"),
        ({"eps_list": (-1.0,)}, "eps_list"),
        ({"eps_list": (float("nan"),)}, "eps_list"),
        ({"draws": 0}, "draws"),
        ({"draws": 1.5}, "draws"),
        ({"seed": -1}, "seed"),
        ({"window": 0}, "window"),
        ({"window": 10_000}, "window"),
    ],
)
def test_refusal(frame, kwargs, field):
    args = {"dataset": "occupancy", "eps_list": (1.0,), "draws": 1, "window": WINDOW}
    args.update(kwargs)
    with pytest.raises(ParameterError) as info:
        bench.bench_gcdp(data=frame, timing=False, **args)
    assert info.value.field == field


def test_helpers():
    x, y = synthetic_frame(100, 3)
    feats, labels = window_means(x, y, WINDOW)
    assert feats.shape == (10, 5) and labels.tolist() == [0, 0, 0, 1, 1, 1, 0, 0, 0, 1]
    model = fit_logistic(feats, labels)
    assert f1_percent(labels, model.predict(feats)) == 100.0
    mu = label_utility(feats, labels)
    assert np.all((mu >= 0) & (mu <= 1)) and mu[2] > mu[1]
    assert f1_percent(np.array([1, 0]), np.array([0, 0])) == 0.0


def test_loader_reads_the_occupancy_layout(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text(
        '"date","Temperature","Humidity","Light","CO2","HumidityRatio","Occupancy"\n'
        '"1","2015-02-04 17:51:00",23.18,27.272,426,721.25,0.0047,1\n'
        '"2","2015-02-04 17:52:00",23.15,27.2675,429.5,714,0.0048,0\n'
    )
    x, y = load_occupancy(path)
    assert x.shape == (2, 5) and x[0, 2] == 426 and y.tolist() == [1, 0]


def test_command(frame, monkeypatch):
    real = bench.bench_gcdp
    monkeypatch.setattr(
        bench,
        "bench_gcdp",
        lambda *a, **k: real(*a, **{**k, "window": WINDOW, "data": frame, "timing": False}),
    )
    app = typer.Typer()
    app.command()(bench.bench_gcdp_command)
    runner = CliRunner()
    ok = runner.invoke(app, ["--method", "Lap-DP,GC-DP", "--eps", "1", "--draws", "2"])
    assert ok.exit_code == 0, ok.output
    out = json.loads(ok.stdout)
    assert set(out["f1"]) == {"Lap-DP", "GC-DP"}
    bad = runner.invoke(app, ["--eps", "one"])
    assert bad.exit_code == 2
    bad = runner.invoke(app, ["--method", "Nope"])
    assert bad.exit_code == 2


def test_ablation_table(result):
    table = result["ablation_eps1"]
    assert list(table) == list(bench.ABLATIONS)
    for row in table.values():
        assert 0.0 <= row["f1"] <= 100.0 and 0.5 <= row["attack_auc"] <= 1.0
        assert sum(row["budgets_eps1"]) <= 1.0 + 5 * 5e-7  # 6-digit rounding
    assert table["GC-DP"]["seed_f1"] == 96.4 and table["GC-DP (seed eta)"]["seed_f1"] is None
    full = result["calibration"]["gcdp_budgets_eps1"]
    assert table["GC-DP"]["budgets_eps1"] == full
    # w/o Risk is beta_r = 0: exposure plays no part in the budgets
    r = result["calibration"]["exposure_norm"]
    if max(r) > min(r):
        assert table["w/o Risk"]["budgets_eps1"] != full


OCC_HEADER = '"date","Temperature","Humidity","Light","CO2","HumidityRatio","Occupancy"\n'


def test_loader_reads_files_without_the_row_id_or_with_other_columns(tmp_path):
    """A file written without the row id (pandas ``index=False``) read every channel one
    column to the right ("list index out of range"); one with an extra column, the same."""
    noid = tmp_path / "noid.txt"
    noid.write_text(OCC_HEADER + "2015-02-04 17:51:00,23.18,27.272,426,721.25,0.0047,1\n")
    extra = tmp_path / "extra.txt"
    extra.write_text(
        "Occupancy,CO2,Note,Light,Humidity,Temperature,HumidityRatio\n"
        "7,1,721.25,x,426,27.272,23.18,0.0047\n"
    )
    for path in (noid, extra):
        x, y = load_occupancy(path)
        assert x.tolist() == [[23.18, 27.272, 426.0, 721.25, 0.0047]] and y.tolist() == [1]


def test_loader_reads_rows_ending_in_a_delimiter(tmp_path):
    """Rows ending in a delimiter (``...,1,``; some exporters write one) are one field wider
    than the header, like rows with a leading row id: the empty last field was read as a
    row id, every column one to the right, so the channels were read from their right-hand
    neighbours and Occupancy from an extra ``Zone`` column, silently. A leading row id is
    still read as one (the shipped layout), and a missing last value of a file with row ids
    is still named."""
    header = "date,Temperature,Humidity,Light,CO2,HumidityRatio,Occupancy,Zone\n"
    path = tmp_path / "trailing.txt"
    path.write_text(
        header + "2015-02-04 17:51:00,23.18,27.272,426,721.25,0.0047,1,0,\n"
        "2015-02-04 17:52:00,23.15,27.2,429.5,714,0.0048,0,1,\n"
    )
    x, y = load_occupancy(path)
    assert x[0].tolist() == [23.18, 27.272, 426.0, 721.25, 0.0047] and y.tolist() == [1, 0]
    path.write_text(OCC_HEADER + "2015-02-04 17:51:00,23.18,27.272,426,721.25,0.0047,1,\n")
    assert load_occupancy(path)[1].tolist() == [1]
    path.write_text(OCC_HEADER + '"1","2015-02-04 17:51:00",23.18,27.272,426,721.25,0.0047,\n')
    with pytest.raises(ValueError, match="line 2: Occupancy must be a finite number, got ''"):
        load_occupancy(path)


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ('"2","2015-02-04 17:52:00",23.15,nan,429.5,714,0.0048,0\n', "line 3: Humidity"),
        ('"2","2015-02-04 17:52:00",23.15,27.2,,714,0.0048,0\n', "line 3: Light"),
        ('"2","2015-02-04 17:52:00",23.15,27.2,429.5,714,0.0048,2\n', "Occupancy must be 0 or 1"),
        ('"2","2015-02-04 17:52:00",23.15,27.2,429.5,714\n', "line 3 has 6 fields, expected 8"),
    ],
)
def test_loader_refuses_bad_rows_naming_the_line(tmp_path, row, needle):
    """A NaN row was dropped silently (the windows shifted), a label 2 read as occupied."""
    path = tmp_path / "d.txt"
    path.write_text(
        OCC_HEADER + '"1","2015-02-04 17:51:00",23.18,27.272,426,721.25,0.0047,1\n' + row
    )
    with pytest.raises(ValueError, match=needle):
        load_occupancy(path)


def test_loader_refuses_records_out_of_time_order(tmp_path):
    """Held-out (u5): a shuffled file was read as is, its windows averaging unrelated
    minutes. Equal dates pass, and a date column in another format is not checked."""
    first = '"1","2015-02-04 17:51:00",23.18,27.272,426,721.25,0.0047,1\n'
    same = '"2","2015-02-04 17:51:00",23.15,27.2,429.5,714,0.0048,0\n'
    back = '"3","2015-02-04 17:50:59",23.15,27.2,429.5,714,0.0048,0\n'
    path = tmp_path / "d.txt"
    path.write_text(OCC_HEADER + first + same + back)
    with pytest.raises(ValueError, match="line 4: date '2015-02-04 17:50:59' is earlier than "
                       "'2015-02-04 17:51:00' on line 3"):  # fmt: skip
        load_occupancy(path)
    path.write_text(OCC_HEADER + first + same)
    assert load_occupancy(path)[1].tolist() == [1, 0]
    path.write_text(OCC_HEADER + first.replace("2015-02-04", "Feb 04 2015") + back)
    assert load_occupancy(path)[1].tolist() == [1, 0]


def test_loader_refuses_a_column_named_twice(tmp_path):
    """Held-out (u5): a second ``Light`` column was ignored silently (the first was read)."""
    path = tmp_path / "d.txt"
    path.write_text(
        "Temperature,Humidity,Light,CO2,HumidityRatio,Occupancy,Light\n"
        "23.18,27.272,426,721.25,0.0047,1,0\n"
    )
    with pytest.raises(ValueError, match="column 'Light' appears 2 times in the header"):
        load_occupancy(path)


def _occupancy_file(path, records: int, label) -> object:
    """An Occupancy-format file of ``records`` identical readings, the label of record i
    ``label(i)``."""
    rows = "".join(
        f'"{i}","2015-02-04 17:{i:02d}:00",23.18,27.272,426,721.25,0.0047,{label(i)}\n'
        for i in range(records)
    )
    path.write_text(OCC_HEADER + rows)
    return path


@pytest.mark.parametrize("name", ["train_file", "test_file"])
def test_a_file_shorter_than_one_window_is_named(tmp_path, name):
    """Held-out (u5): the error named neither the file nor the window length."""
    path = _occupancy_file(tmp_path / "tiny.txt", 10, lambda i: i % 2)
    with pytest.raises(ParameterError) as info:
        bench.bench_gcdp(
            "occupancy", methods=("GC-DP",), eps_list=(1.0,), draws=1, timing=False,
            **{name: str(path)},
        )  # fmt: skip
    assert info.value.field == name
    assert f"{path} has 10 records, fewer than one window of 30" in str(info.value)


def test_a_training_file_too_short_for_the_validation_cut_is_named(tmp_path):
    """A training file of 40 records holds a window of 30 but not a training and a
    validation window (the default split, refit, cuts one): the error named the window and
    the 40 records, not the file they came from."""
    path = _occupancy_file(tmp_path / "short.txt", 40, lambda i: (i // 10) % 2)
    with pytest.raises(ParameterError) as info:
        bench.bench_gcdp(
            "occupancy", methods=("GC-DP",), eps_list=(1.0,), draws=1, timing=False,
            train_file=str(path),
        )  # fmt: skip
    assert info.value.field == "window"
    assert f"in the 40 training records of {path} (train_file), got 30" in str(info.value)


def test_loader_names_a_missing_column(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text('"date","Temperature","Humidity","Light","HumidityRatio","Occupancy"\n')
    with pytest.raises(ValueError, match="no column 'CO2' in the header"):
        load_occupancy(path)


@pytest.mark.parametrize(
    ("name", "label"), [("train_file", 0), ("train_file", 1), ("test_file", 0), ("test_file", 1)]
)
def test_a_one_class_file_is_refused(tmp_path, name, label):
    """A training file of one class gave F1 0 silently (the classifier never predicts 1); a
    test file of one class stopped in a TypeError (the oracles compare the two classes)."""
    path = tmp_path / "d.txt"
    rows = "".join(
        f'"{i}","2015-02-04 17:51:00",23.18,27.272,426,721.25,0.0047,{label}\n' for i in range(300)
    )
    path.write_text(OCC_HEADER + rows)
    with pytest.raises(ParameterError) as info:
        bench.bench_gcdp(
            "occupancy", methods=("GC-DP",), eps_list=(1.0,), draws=1, timing=False,
            **{name: str(path)},
        )  # fmt: skip
    assert info.value.field == name and f"all have Occupancy {label}" in str(info.value)


@pytest.mark.parametrize("delimiter", [";", "\t"])
def test_loader_reads_semicolon_and_tab_separated_files_like_the_comma_file(tmp_path, delimiter):
    """The scenarios' CSV reader (devices/sources.py) sniffs comma, semicolon and tab; the
    GC-DP loader read only commas, so ``bench gcdp --train-file`` of a ';' export failed
    (one field a line: 'no column ... in the header'). The shipped test file rewritten
    with ';' or a tab (quotes kept where the original has them) reads identically."""
    import csv
    from pathlib import Path

    shipped = Path(__file__).parents[2] / "data" / "uci-occupancy" / "datatest.txt"
    with open(shipped, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    other = tmp_path / "datatest.txt"
    with open(other, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, delimiter=delimiter, lineterminator="\n").writerows(rows)
    assert delimiter in other.read_text().splitlines()[0]
    x, y = load_occupancy(shipped)
    x2, y2 = load_occupancy(other)
    assert x.shape == (2665, 5) and np.array_equal(x, x2) and np.array_equal(y, y2)


# --- odd option values (helper Q; each failed on the old code: accepted, or a traceback) ---


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"eps_list": (1e300,)}, "eps_list"),  # ran; printed budgets overflowed a cast
        ({"eps_list": (1e-300,)}, "eps_list"),  # ran, keyed as budget 0
        ({"eps_list": (50.5,)}, "eps_list"),
        ({"eps_list": (float("inf"),)}, "eps_list"),
        ({"eps_list": (1.0, 1.0)}, "eps_list"),  # one table column, silently
        ({"eps_list": (1.0, 1.0000001)}, "eps_list"),  # same generator key
        ({"draws": 10_001}, "draws"),  # 1e11 ran for ever
        ({"seed": 2**63}, "seed"),
    ],
)
def test_refusal_of_impossible_values(frame, kwargs, field):
    args = {"dataset": "occupancy", "eps_list": (1.0,), "draws": 1, "window": WINDOW}
    args.update(kwargs)
    with pytest.raises(ParameterError) as info:
        bench.bench_gcdp(data=frame, timing=False, **args)
    assert info.value.field == field


def test_budget_limits_are_accepted(frame):
    out = run(frame, eps_list=(0.001, 50.0), draws=1, methods=("Lap-DP",), timing=False)
    assert set(out["f1"]["Lap-DP"]) == {"0.001", "50.0"}


def test_an_extreme_training_value_under_minmax_is_refused(frame):
    """One Light value of 1e300 in the training records: under clip = minmax every other
    value scaled to ~0 and F1 dropped silently (old code: ran). Refused naming the
    channel; under clip = iqr (Tukey's fences) it runs."""
    tx, ty, sx, sy = frame
    tx = tx.copy()
    tx[5, 2] = 1e300
    minmax = bench.Readings(clip="minmax", split="train")
    with pytest.raises(ParameterError) as info:
        run((tx, ty, sx, sy), readings=minmax, methods=("Lap-DP",), timing=False)
    assert info.value.field == "train_f[:, 2]" and "Light" in str(info.value)
    assert "--clip iqr" in str(info.value)
    iqr = bench.Readings(clip="iqr", split="train")
    run((tx, ty, sx, sy), readings=iqr, methods=("Lap-DP",), draws=1, timing=False)


def test_a_sparse_feature_passes_the_spread_check(frame):
    """98% of the windows at one value (a sparse feature) is not a squeeze."""
    tx, ty, sx, sy = frame
    tx = tx.copy()
    tx[:, 1] = 0.0
    tx[:WINDOW, 1] = 5.0  # one window of 60 away from the rest
    run((tx, ty, sx, sy), readings=bench.Readings(clip="minmax", split="train"),
        methods=("Lap-DP",), draws=1, timing=False)  # fmt: skip


def _command_app(frame, monkeypatch):
    real = bench.bench_gcdp
    monkeypatch.setattr(
        bench, "bench_gcdp", lambda *a, **k: real(*a, **{**k, "data": frame, "timing": False})
    )
    app = typer.Typer()
    app.command()(bench.bench_gcdp_command)
    return app


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--eps", "1e300"], "--eps: must be budgets in [0.001, 50], got 1e+300"),
        (["--eps", "nan"], "--eps: must be budgets in [0.001, 50], got nan"),
        (["--eps", "1,1"], "--eps: must be distinct budgets"),
        (["--eps", ""], "--eps: must be a non-empty list"),
        (["--eps", "one"], "--eps: not a comma list of numbers"),
        (["--method", "GC-DP,GC-DP"], "--method: must be distinct names"),
        (["--draws", "0"], "--draws: must be an integer in [1, 10,000], got 0"),
        (["--draws", "100000000000"], "--draws: must be an integer in [1, 10,000]"),
        (["--seed", "-1"], "--seed: must be an integer in [0,"),
        (["--window", "0"], "--window: must be an integer >= 1, got 0"),
        (["--dataset", "intel", "--window", "5"], "--window: applies to occupancy only"),
        (["--clip", "0:1"], "--clip: must be one of iqr, minmax"),
        (["--readings", "split=x"], "--readings split: must be one of"),
    ],
)
def test_command_names_the_option_the_limit_and_the_value(frame, monkeypatch, args, needle):
    """Old code: "eps_list: must be a non-empty list of finite budgets > 0" (no value, a
    field that is no option), 1e300 and 1e11 draws accepted, and --window silently
    ignored for intel (its default 30 was passed for every data set)."""
    bad = CliRunner().invoke(_command_app(frame, monkeypatch), ["--draws", "1", *args])
    assert bad.exit_code == 2, bad.output
    assert needle in bad.stderr, bad.stderr


def test_command_window_default_is_thirty_for_occupancy(frame, monkeypatch):
    seen = {}
    monkeypatch.setattr(bench, "bench_gcdp", lambda *a, **k: seen.update(k) or {})
    app = typer.Typer()
    app.command()(bench.bench_gcdp_command)
    ok = CliRunner().invoke(app, ["--draws", "1"])
    assert ok.exit_code == 0, ok.output
    assert seen["window"] is None  # bench_gcdp's default: WINDOW = 30
    assert bench.WINDOW == 30
