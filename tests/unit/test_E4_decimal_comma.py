"""``[source] decimal = ","``: a European spreadsheet's export replays as it is.

Found (helper E's user trial, round 4, 2026-12-06): a semicolon file with decimal commas
(``Zeitstempel;Temperatur (°C);Feuchte`` over ``01.03.2024 00:00;19,98;50``), the export of
every German, French or Italian Excel, was refused ("numbers need a decimal point: convert
the file") and there was no setting to read it. Now ``decimal = ","`` reads it; a number
written with a point is not a number there (``1.234`` is 1234 in such a file, never 1.234);
a comma-separated file, a NumPy file and ``gcdp.utility_column`` with it are refused naming
``source.decimal``.
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.devices.sources import CsvSpec, SourceError, csv_stream, load_table
from ldpfleet.scenarios.schema_errors import ScenarioError

from ldpfleet.scenario_dict import parse_scenario

EURO = (
    "Zeitstempel;Temperatur (°C);Feuchte\n"
    "01.03.2024 00:00;19,98;50\n"
    "01.03.2024 00:10;-0,5;51\n"
    "01.03.2024 00:20;,25;52\n"
    "01.03.2024 00:30;1,5e1;53\n"
)


def _scenario(path, extra: str = "", gcdp: str = "") -> str:
    return f"""
[scenario]
name = "euro"
seed = 1
[fleet]
devices = 2
[stream]
steps = 8
eps = 4.0
w = 4
[source]
kind = "csv"
path = "{path}"
column = "Temperatur (°C)"
bounds = [-5.0, 30.0]
{extra}
{gcdp}
"""


def test_decimal_commas_are_read_with_a_point(tmp_path):
    path = tmp_path / "euro.csv"
    path.write_text(EURO, encoding="utf-8")
    names, matrix = load_table(str(path), decimal=",")
    assert names == ["Temperatur (°C)", "Feuchte"]  # the header as written
    assert matrix[:, 0].tolist() == [19.98, -0.5, 0.25, 15.0]
    spec = CsvSpec(str(path), "Temperatur (°C)", decimal=",")
    assert csv_stream(spec, 0, 1, 4)[0].tolist() == [19.98, -0.5, 0.25, 15.0]


def test_without_the_setting_the_refusal_names_it(tmp_path):
    path = tmp_path / "euro.csv"
    path.write_text(EURO, encoding="utf-8")
    with pytest.raises(SourceError) as refused:
        CsvSpec(str(path), "Temperatur (°C)")
    assert 'source.decimal = ","' in str(refused.value), refused.value


def test_a_header_less_file_of_decimal_commas(tmp_path):
    path = tmp_path / "bare.csv"
    path.write_text("19,5;1\n20,25;2\n", encoding="utf-8")
    names, matrix = load_table(str(path), decimal=",")
    assert names == ["0", "1"] and matrix.tolist() == [[19.5, 1.0], [20.25, 2.0]]


def test_a_decimal_point_is_not_read_as_one(tmp_path):
    """``1.234`` in a decimal-comma file is digit grouping (1234): never read as 1.234."""
    path = tmp_path / "grouped.csv"
    path.write_text("t;temp;n\na;1,5;1\nb;1.234;2\n", encoding="utf-8")
    with pytest.raises(SourceError) as refused:
        CsvSpec(str(path), "temp", decimal=",")
    message = str(refused.value)
    assert "'temp'" in message and "line 3" in message and "1.234" in message, message
    assert CsvSpec(str(path), "n", decimal=",").column == "n"  # a column no one reads: fine


def test_gaps_are_filled_as_in_any_file(tmp_path):
    path = tmp_path / "gaps.tsv"
    path.write_text("t\ttemp\n1\t3,0\n2\t\n3\t5,0\n", encoding="utf-8")
    spec = CsvSpec(str(path), "temp", decimal=",", missing="interpolate")
    assert csv_stream(spec, 0, 1, 3)[0].tolist() == [3.0, 4.0, 5.0]


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("commas.csv", "a,b\n1,5\n", "separated by commas"),
        ("x.npy", None, "NumPy file"),
    ],
)
def test_refused_where_a_decimal_comma_cannot_be(tmp_path, name, content, words):
    path = tmp_path / name
    if content is None:
        np.save(path, np.arange(4.0))
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(SourceError) as refused:
        CsvSpec(str(path), 0, decimal=",")
    assert refused.value.field == "source.decimal" and words in str(refused.value)


def test_a_scenario_runs_it_and_refuses_another_mark(tmp_path):
    path = tmp_path / "euro.csv"
    path.write_text(EURO, encoding="utf-8")
    loaded = parse_scenario(_scenario(path.as_posix(), 'decimal = ","'))
    assert loaded.source_spec().decimal == ","
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(_scenario(path.as_posix(), 'decimal = ";"'))
    assert refused.value.field == "source.decimal" and refused.value.value == ";"
    commas = tmp_path / "commas.csv"
    commas.write_text("Temperatur (°C),b\n1,2\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as comma_fields:
        parse_scenario(_scenario(commas.as_posix(), 'decimal = ","'))
    assert comma_fields.value.field == "source.decimal" and comma_fields.value.value == ","
    assert "semicolons or tabs" in comma_fields.value.limit
    with pytest.raises(ScenarioError) as unset:
        parse_scenario(_scenario(path.as_posix()))
    assert 'source.decimal = ","' in str(unset.value)


def test_gcdp_utility_labels_with_decimal_commas(tmp_path):
    """The collector reads the labels with the fleet's decimal mark (gcdp_stage)."""
    from ldpfleet.collector.gcdp_stage import load_calibration
    from ldpfleet.scenarios.plans import gcdp_stage_config

    path = tmp_path / "room.csv"
    rows = "".join(f"{i};{20 + i % 3},5;{i // 8 % 2}\n" for i in range(64))
    path.write_text("t;Temperatur (°C);occ\n" + rows, encoding="utf-8")
    calibration = tmp_path / "room-public.csv"  # a public file, not the protected source
    calibration.write_text("t;Temperatur (°C);occ\n" + rows, encoding="utf-8")
    gcdp = (
        f'[gcdp]\neps_rel = 1.0\nwindow = 4\ncalibration_path = "{calibration.as_posix()}"\n'
        'utility_column = "occ"'
    )
    raw = _scenario(path.as_posix(), 'decimal = ","', gcdp).replace(
        "eps = 4.0\nw = 4", 'mechanism = "raw"'
    )
    loaded = parse_scenario(raw)
    assert loaded.calibration_spec().decimal == ","
    _data, labels = load_calibration(gcdp_stage_config(loaded))
    assert labels is not None and set(np.unique(labels)) == {0.0, 1.0}


def test_an_ansi_export_is_told_how_to_convert(tmp_path):
    """Excel's "CSV" save on a Western-European Windows writes Windows-1252 ("°" is byte
    0xb0): the refusal says so and gives the iconv line."""
    path = tmp_path / "excel.csv"
    path.write_bytes("Zeit;Temperatur (°C)\n1;19,5\n".encode("cp1252"))
    with pytest.raises(SourceError) as refused:
        CsvSpec(str(path), 0, decimal=",")
    message = str(refused.value)
    assert "is not UTF-8 text (byte 0xb0 on line 1): save it as UTF-8" in message, message
    assert "iconv -f cp1252 -t utf-8 excel.csv > utf8-excel.csv" in message, message
    path.write_bytes("Zeit;Temperatur (°C)\n1;19,5\n".encode())
    spec = CsvSpec(str(path), "Temperatur (°C)", decimal=",")
    assert csv_stream(spec, 0, 1, 1)[0].tolist() == [19.5]


def test_points_grouping_digits_before_a_decimal_comma(tmp_path):
    """Excel's "#.##0,0" writes 1050 as "1.050,0": read as 1050; "1.050" alone stays
    refused (a decimal point or grouping: it cannot tell), and so does "0.004,5"."""
    path = tmp_path / "co2.csv"
    path.write_text("t;co2\n1;1.050,0\n2;-1.234.567,25\n3;980,5\n", encoding="utf-8")
    assert load_table(str(path), decimal=",")[1][:, 1].tolist() == [1050.0, -1234567.25, 980.5]
    for cell in ("1.050", "0.004,5", "1.05,0"):
        path.write_text(f"t;co2\n1;980,5\n2;{cell}\n", encoding="utf-8")
        with pytest.raises(SourceError) as refused:
            CsvSpec(str(path), "co2", decimal=",")
        assert "line 3" in str(refused.value) and cell in str(refused.value), refused.value
