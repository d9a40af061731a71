"""``ldpfleet bench gcdp --decimal ","`` (helper F): a user's Occupancy-format files written
with decimal commas (a European spreadsheet's export: ``23,18``, ``1.050,0``, fields
separated by semicolons) read as a scenario's ``[source] decimal = ","`` reads them, with
the same refusals (a comma-separated file; ``1.234`` alone, ambiguous)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import typer
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.collector.gcdp.evaluation import load_occupancy
from ldpfleet.devices.sources import load_table
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

from tests.unit.test_bench_gcdp import synthetic_frame

HEADER = ("Temperature", "Humidity", "Light", "CO2", "HumidityRatio", "Occupancy")
_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def _comma(cell: str) -> str:
    """``cell`` as a German spreadsheet writes it: a decimal comma, and points grouping the
    digits of a number of 1,000 or more ("1050.5" -> "1.050,5", "1050" -> "1.050,0"); an
    integer below 1,000 (a label, "478") as it is."""
    if not _NUMBER.fullmatch(cell) or ("." not in cell and len(cell.lstrip("-")) < 4):
        return cell
    whole, _, frac = cell.partition(".")
    sign, digits = ("-", whole[1:]) if whole.startswith("-") else ("", whole)
    groups = []
    while len(digits) > 3:
        groups.insert(0, digits[-3:])
        digits = digits[:-3]
    return sign + ".".join([digits, *groups]) + "," + (frac or "0")


def _rows(x: np.ndarray, y: np.ndarray) -> list[list[str]]:
    """The records as a dot file's cells; CO2 + 500 so that some values pass 1,000 (grouped
    in the comma file), Light rounded to integers on some records (kept as integers)."""
    x = x.copy()
    x[:, 3] += 500.0
    x[::7, 2] = np.round(x[::7, 2])
    return [[f"{v:.6g}" for v in row] + [str(int(o))] for row, o in zip(x, y, strict=True)]


def _write(path, rows, delimiter: str, convert=lambda c: c) -> str:
    lines = [delimiter.join(HEADER)]
    lines += [delimiter.join([*(convert(c) for c in r[:-1]), r[-1]]) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """(train dot, test dot, train comma, test comma): the same numbers, two notations."""
    folder = tmp_path_factory.mktemp("decimal")
    train, test = _rows(*synthetic_frame(900, 1)), _rows(*synthetic_frame(600, 2))
    return (
        _write(folder / "train.csv", train, ","),
        _write(folder / "test.csv", test, ","),
        _write(folder / "train-de.csv", train, ";", _comma),
        _write(folder / "test-de.csv", test, ";", _comma),
    )


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(bench.bench_gcdp_command)
    return app


def _invoke(*args: str):
    return CliRunner().invoke(_app(), [*args, "--eps", "1", "--draws", "2", "--method",
                                       "NonPrivate,Lap-DP,GC-DP"])  # fmt: skip


def test_the_comma_file_is_the_dot_file_converted(files):
    text = Path(files[3]).read_text()
    assert ";1.0" in text and ",0;" in text  # grouped CO2 values and "x,0" both occur
    assert re.search(r";\d{1,3},\d", text)  # and plain decimal commas
    for dot, comma in ((files[0], files[2]), (files[1], files[3])):
        x, y = load_occupancy(dot)
        xc, yc = load_occupancy(comma, decimal=",")
        assert np.array_equal(x, xc) and np.array_equal(y, yc)  # bit for bit


def test_the_bench_reads_the_numbers_as_the_scenario_sources_do(files):
    # "same reader": a scenario's [source] decimal = "," reads the same matrix
    names, matrix = load_table(files[3], decimal=",")
    x, y = load_occupancy(files[3], decimal=",")
    assert names == list(HEADER)
    assert np.array_equal(matrix[:, :5], x) and np.array_equal(matrix[:, 5], y)


def test_command_with_decimal_commas_gives_the_dot_files_results(files):
    dot = _invoke("--train-file", files[0], "--test-file", files[1])
    comma = _invoke("--train-file", files[2], "--test-file", files[3], "--decimal", ",")
    assert dot.exit_code == 0 and comma.exit_code == 0, (dot.output, comma.output)
    a, b = json.loads(dot.stdout), json.loads(comma.stdout)
    assert (a["protocol"]["decimal"], b["protocol"]["decimal"]) == (".", ",")
    for key in ("f1", "f1_std", "attack_auc", "calibration", "ablation_eps1"):
        assert a[key] == b[key], key
    assert a["f1"]["NonPrivate"]["1.0"] > 90  # a real classification, not a collapse


def test_decimal_applies_to_the_given_files_only(files):
    # a comma test file against the shipped training file (decimal points): the shipped
    # file is read with its points
    prep = bench.prepare("occupancy", window=30, test_file=files[3], decimal=",")
    ref = bench.prepare("occupancy", window=30, test_file=files[1])
    assert np.array_equal(prep.test_f, ref.test_f)


@pytest.mark.parametrize(
    ("args", "option", "needles"),
    [
        # not a decimal mark: the limit and the value
        (("--decimal", ";", "--test-file", "{3}"), "--decimal", ("'.' or ','", "got ';'")),
        # a comma-separated file: a comma cannot be its decimal mark (as source.decimal)
        (("--decimal", ",", "--test-file", "{1}"), "--decimal",
         ("must be '.' for", "got ','", "separated by commas", "semicolons or tabs")),
        # no file of the user's: the shipped files have decimal points
        (("--decimal", ","), "--decimal", ("must be '.' without --train-file", "got ','")),
        (("--decimal", ",", "--dataset", "intel"), "--decimal",
         ("applies to occupancy only", "'intel'")),
        # the comma file read with decimal points: named, with the option
        (("--test-file", "{3}"), "--test-file",
         ("must be a finite number, got '", "decimal comma?", "--decimal ','")),
    ],
)  # fmt: skip
def test_command_refusals_name_the_option_limit_and_value(files, args, option, needles):
    out = _invoke(*(a.format(*files) for a in args))
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {option}: "), out.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert "Traceback" not in out.output


@pytest.mark.parametrize("cell", ["1.234", "23.7", "-0.5", ".5"])
def test_a_decimal_point_under_decimal_comma_is_refused_not_guessed(tmp_path, files, cell):
    # "1.234" is 1.234 with a point or 1234 grouped: refused naming its line, as a
    # scenario source refuses it (never read as either)
    lines = Path(files[3]).read_text().splitlines()
    cells = lines[3].split(";")
    cells[0] = cell
    lines[3] = ";".join(cells)
    path = tmp_path / "mixed.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError) as info:
        load_occupancy(path, decimal=",")
    assert f"line 4: Temperature must be a finite number, got '{cell}'" in str(info.value)
    assert "a decimal point under --decimal ','" in str(info.value)
    out = _invoke("--train-file", files[2], "--test-file", str(path), "--decimal", ",")
    assert out.exit_code == 2 and out.output.startswith("error: --test-file: "), out.output
    assert f"got '{cell}' (a decimal point under --decimal ','" in out.output


@pytest.mark.parametrize(
    ("cell", "value"),
    [
        ("1.050,0", 1050.0),
        ("-0,5", -0.5),
        (",5", 0.5),
        ("1,5e3", 1500.0),
        ("21", 21.0),
        # French grouping, as a scenario's source reads it (space, no-break, narrow no-break)
        ("1 050,0", 1050.0),
        ("1\u00a0050,0", 1050.0),
        ("1\u202f050,0", 1050.0),
    ],
)
def test_decimal_comma_cells(tmp_path, cell, value):
    path = tmp_path / "one.csv"
    path.write_text(";".join(HEADER) + f"\n{cell};27,2;426;721,25;0,0047;1\n")
    x, y = load_occupancy(path, decimal=",")
    assert x[0, 0] == value and x[0, 3] == 721.25 and y.tolist() == [1]


def test_load_occupancy_refuses_an_unknown_decimal_mark(files):
    with pytest.raises(ParameterError) as info:
        load_occupancy(files[1], decimal=";")
    assert info.value.field == "decimal" and info.value.value == ";"
    with pytest.raises(ParameterError) as info:
        load_occupancy(files[1], decimal=",")  # comma-separated
    assert info.value.field == "decimal" and "separated by commas" in info.value.reason
