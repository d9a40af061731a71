"""CSV files the way users have them (held-out QA, helper S): every one is either read as
numpy reads it or refused before the fleet starts, naming the file, the line, the column
and the value — never silently mis-read.

Found: a one-column file with a decimal comma under a header ("temp" / "20,038") was read
as a leading row id 20 and the value 38 (every reading wrong, the run completed); a
semicolon file with decimal commas skipped its decimal-comma column as "text", so
``column = 0`` read the next column; a header-less semicolon file with decimal commas was
split at the comma (the sniffer's tie went to the comma) and read the integer parts.
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.devices.sources import SourceError, load_table
from ldpfleet.protocol.delimiters import sniff_delimiter
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

SCENARIO = """
[scenario]
name = "user-csv"
seed = 1
[fleet]
devices = 2
[stream]
steps = 30
eps = 2.0
w = 5
[source]
kind = "csv"
path = "{path}"
column = 0
bounds = [0.0, 60.0]
"""


def _write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_decimal_comma_under_a_one_name_header_is_not_a_row_id(tmp_path):
    path = _write(tmp_path, "t.csv", "temp\n20,038\n21,254\n19,5\n")
    with pytest.raises(SourceError) as caught:
        load_table(path)
    message = str(caught.value)
    assert path in message and "line 2" in message and "decimal comma" in message, message
    assert "(20,038)" in message, message


def test_row_ids_may_skip_or_go_back_but_not_repeat(tmp_path):
    """Row ids were required to be consecutive: a UCI file with rows dropped ("1", "2", "5")
    was refused as a decimal-comma file, and a shuffled one never reached the date-order
    check that names its problem. Distinct integer ids are ids; a repeated one (the integer
    part of a decimal comma repeating) is refused."""
    dropped = _write(tmp_path, "d.csv", '"a","b"\n"1",7,8\n"2",9,10\n"5",11,12\n')
    assert load_table(dropped)[1].tolist() == [[7, 8], [9, 10], [11, 12]]
    shuffled = _write(tmp_path, "s.csv", '"a","b"\n"2",7,8\n"1",9,10\n')
    assert load_table(shuffled)[1].tolist() == [[7, 8], [9, 10]]
    repeated = _write(tmp_path, "r.csv", "temp,hum\n20,5,30\n21,0,31\n20,7,29\n")
    with pytest.raises(SourceError) as caught:
        load_table(repeated)
    message = str(caught.value)
    assert "line 4" in message and "'20' (also on line 2)" in message, message
    assert "decimal comma" in message, message


@pytest.mark.parametrize(
    "text",
    [
        '"a","b"\n"1",7,8\n"2",9,10\n',  # UCI Occupancy: consecutive integer ids
        '"a","b"\n"140",7,8\n"141",9,10\n',  # datatest.txt starts at 140
        "temp\n2024-01-01 00:00,7\n2024-01-01 00:01,9\n",  # a text row label
    ],
)
def test_row_ids_and_row_labels_are_still_dropped(tmp_path, text):
    names, table = load_table(_write(tmp_path, "t.csv", text))
    assert table[:, -1].tolist() in ([8, 10], [7, 9]), (names, table)


def test_a_decimal_comma_column_is_not_skipped_as_text(tmp_path):
    """``column = 0`` counts numeric columns; skipping temp as text made it read hum."""
    path = _write(tmp_path, "t.csv", "temp;hum\n20,5;50\n21,5;51\n")
    with pytest.raises(SourceError) as caught:
        load_table(path)
    message = str(caught.value)
    assert all(s in message for s in (path, "'temp'", "line 2", "'20,5'", "decimal comma"))
    with pytest.raises(ScenarioError) as refused:  # before any device starts
        parse_scenario(SCENARIO.format(path=path))
    assert "decimal comma" in str(refused.value), refused.value


def test_a_digit_grouped_column_is_not_skipped_as_text(tmp_path):
    path = _write(tmp_path, "t.csv", 'light,temp\n"1,200.5",20.5\n"1,300.25",21.5\n')
    with pytest.raises(SourceError) as caught:
        load_table(path)
    assert "'light'" in str(caught.value) and "'1,200.5'" in str(caught.value), caught.value


def test_a_text_column_is_still_skipped(tmp_path):
    names, table = load_table(_write(tmp_path, "t.csv", "day,temp\nmon,20.5\ntue,21.5\n"))
    assert names == ["temp"] and table.tolist() == [[20.5], [21.5]]


def test_semicolons_and_decimal_commas_without_a_header_are_not_split_at_the_comma(tmp_path):
    assert sniff_delimiter("20,038;0\n21,254;1\n") == ";"
    assert sniff_delimiter("a,b\n1,2\n") == ","
    with pytest.raises(SourceError) as caught:
        load_table(_write(tmp_path, "t.csv", "20,038;0\n21,254;1\n19,5;2\n"))
    assert "decimal comma" in str(caught.value), caught.value


@pytest.mark.parametrize(
    "text",
    [
        "temp,hum\n20.5,50\n21.25,51\n",
        "temp;hum\n20.5;50\n21.25;51\n",
        "temp\thum\n20.5\t50\n21.25\t51\n",
        '"temp","hum"\n"20.5","50"\n"21.25","51"\n',
        "20.5,50\n21.25,51\n",
        "temp,hum\r\n20.5,50\r\n21.25,51\r\n",
        "temp, hum\n 20.5, 50\n 21.25, 51\n",
        "temp,hum\n2.05e1,5e1\n+21.25,51\n",
    ],
)
def test_good_files_read_as_numpy_reads_them(tmp_path, text):
    path = _write(tmp_path, "t.csv", text)
    names, table = load_table(path)
    assert table.tolist() == [[20.5, 50.0], [21.25, 51.0]], (names, table)
    delimiter = sniff_delimiter(text)
    skip = 0 if text[0].isdigit() else 1
    expected = (
        np.genfromtxt(path, delimiter=delimiter, skip_header=skip, dtype=float, converters=None)
        if '"' not in text
        else np.array([[20.5, 50.0], [21.25, 51.0]])
    )
    assert np.array_equal(table, expected)


# --- NumPy files (held-out QA, helper S) ----------------------------------------------------
# A .npz or .npy path was read as CSV text and refused as "not UTF-8 text (byte 0x8c on
# line 1): save it as UTF-8", which no re-encoding fixes. Now read: an .npz's 1-D members
# are the columns (by key), a .npy is one column (1-D) or rows x columns (2-D); anything
# else is refused naming the file, the key, the index and the value.


def _npz(tmp_path, name="d.npz", **arrays):
    path = tmp_path / name
    np.savez(path, **arrays)
    return str(path)


def test_an_npz_reads_its_members_as_columns(tmp_path):
    temp = np.linspace(15.0, 25.0, 50)
    path = _npz(tmp_path, temp=temp, hum=np.arange(50))  # an int member reads exactly
    names, table = load_table(path)
    assert names == ["temp", "hum"]
    assert np.array_equal(table, np.column_stack([temp, np.arange(50.0)]))
    scenario = parse_scenario(SCENARIO.format(path=path).replace("column = 0", 'column = "hum"'))
    assert scenario.spec.source.path == path


def test_an_npy_reads_as_one_column_or_a_table(tmp_path):
    one, two = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(one, np.arange(5.0))
    np.save(two, np.arange(6.0).reshape(3, 2))
    assert load_table(str(one)) == (["0"], load_table(str(one))[1])
    assert load_table(str(one))[1].tolist() == [[0.0], [1.0], [2.0], [3.0], [4.0]]
    assert load_table(str(two))[1].tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


@pytest.mark.parametrize(
    ("arrays", "words"),
    [
        ({"temp": np.zeros((2, 50))}, ["'temp'", "shape (2, 50)", "1-D"]),
        ({"temp": np.array([1.0, np.nan, 2.0])}, ["'temp'", "index 1", "nan"]),
        ({"temp": np.array(["1.5", "2"])}, ["'temp'", "<U3"]),
        ({"temp": np.array([1 + 2j])}, ["'temp'", "complex"]),
        ({"temp": np.array([True, False])}, ["'temp'", "bool"]),
        ({"temp": np.arange(3.0), "hum": np.arange(4.0)}, ["'hum'", "4", "3"]),
        ({"temp": np.array([], dtype=float)}, ["'temp'", "no values"]),
        ({"temp": np.array([2**53 + 1, 0])}, ["'temp'", "index 0", "9007199254740993"]),
    ],
)
def test_bad_npz_files_are_refused_naming_the_member(tmp_path, arrays, words):
    path = _npz(tmp_path, **arrays)
    with pytest.raises(SourceError) as caught:
        load_table(path)
    message = str(caught.value)
    assert path in message and all(w in message for w in words), message


def test_an_object_npz_is_refused_without_unpickling(tmp_path):
    path = tmp_path / "o.npz"
    np.savez(path, temp=np.array([1.0, "a"], dtype=object))
    with pytest.raises(SourceError) as caught:
        load_table(str(path))
    assert "'temp'" in str(caught.value) and "object" in str(caught.value), caught.value


def test_a_wrong_npz_key_is_named_before_the_fleet_starts(tmp_path):
    path = _npz(tmp_path, foo=np.arange(50.0))
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(SCENARIO.format(path=path).replace("column = 0", 'column = "temp"'))
    assert "'temp'" in str(caught.value) and "foo" in str(caught.value), caught.value


def test_a_broken_zip_is_refused(tmp_path):
    path = tmp_path / "x.npz"
    path.write_bytes(b"PK\x03\x04" + b"\0" * 20)
    with pytest.raises(SourceError) as caught:
        load_table(str(path))
    assert str(path) in str(caught.value), caught.value


def test_devices_replay_an_npz_column_exactly(tmp_path):
    from ldpfleet.devices.sources import CsvSpec, csv_stream

    temp = np.random.default_rng(3).normal(20.0, 2.0, 40)
    path = _npz(tmp_path, temp=temp, hum=np.arange(40))
    stream, truth = csv_stream(CsvSpec(path=path, column="temp", stride=7), 1, 2, 50)
    assert np.array_equal(stream, np.roll(temp, -7)[np.arange(50) % 40])
    assert truth.period is None


@pytest.mark.parametrize("header", ["true", "false"])
@pytest.mark.parametrize("name", ["d.npz", "d.npy"])
def test_a_header_with_a_numpy_file_is_refused_naming_source_header(tmp_path, name, header):
    """`header = true` with an .npz or .npy path was silently ignored (a NumPy file has no
    header line: its columns are named by key or index; helper Q): refused naming
    source.header; "auto" (the default) still reads the file."""
    path = tmp_path / name
    if name.endswith(".npz"):
        np.savez(path, temp=np.arange(50.0))
    else:
        np.save(path, np.arange(50.0))
    text = SCENARIO.format(path=str(path)).replace("column = 0", f"column = 0\nheader = {header}")
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text)
    message = str(caught.value)
    assert "source.header" in message and str(path) in message, message
    with pytest.raises(SourceError, match=r"source\.header"):
        load_table(str(path), header=header == "true")
    assert parse_scenario(SCENARIO.format(path=str(path))).spec.source.header == "auto"


# --- helper Q: time order, repeated headers, and the documented acceptances -------------


@pytest.mark.parametrize(
    "text",
    [
        "date,temp\n2015-02-04 17:51:00,20.0\n2015-02-04 17:50:00,21.0\n",
        '"date","temp"\n"1","2015-02-04T17:51:00",20.0\n"2","2015-02-04T17:50:00",21.0\n',
        "temp\n2015-02-04 17:51,20.0\n2015-02-04 17:50,21.0\n",  # dates as row labels
    ],
)
def test_iso_times_going_back_are_refused_naming_both_lines(tmp_path, text):
    """A shuffled export was replayed as consecutive steps with no word (old code: read;
    only [gcdp] checked the order)."""
    path = _write(tmp_path, "t.csv", text)
    with pytest.raises(SourceError) as caught:
        load_table(path)
    message = str(caught.value)
    assert "goes back in time" in message and "line 3" in message and "line 2" in message


def test_equal_times_and_non_iso_dates_pass(tmp_path):
    equal = _write(tmp_path, "e.csv", "date,temp\n2015-02-04 17:51,20.0\n2015-02-04 17:51,21\n")
    assert load_table(equal)[1].tolist() == [[20.0], [21.0]]
    other = _write(tmp_path, "o.csv", "date,temp\n04/02/2015 17:51,20.0\n03/02/2015 17:50,21\n")
    assert load_table(other)[1].tolist() == [[20.0], [21.0]]  # [gcdp] reads these formats


@pytest.mark.parametrize(
    "text",
    [
        "temp,hum\ntemp,hum\n20.0,30.0\n",  # read as "no numeric columns"
        "temp,hum\n20.0,30.0\ntemp,hum\n21.0,31.0\n",  # two exports joined: broken cells
        '"date","temp"\n"1","2015-02-04 17:51:00",20.0\n"date","temp"\n"2","x",21.0\n',
    ],
)
def test_a_repeated_header_line_is_refused_naming_it(tmp_path, text):
    path = _write(tmp_path, "h.csv", text)
    with pytest.raises(SourceError) as caught:
        load_table(path)
    assert "repeats the header line" in str(caught.value), str(caught.value)


@pytest.mark.parametrize(
    ("text", "names", "rows"),
    [
        # a row-id column the header names is a column like any other (a source reads the
        # column it names; ids with gaps or repeats there are not checked)
        ("id,temp\n1,20.0\n1,21.0\n", ["id", "temp"], [[1, 20], [1, 21]]),
        # trailing empty columns and an all-empty column are dropped as non-numeric (a
        # source naming one is refused, test below)
        ("temp,hum,,\n20.0,30.0,,\n21.0,31.0,,\n", ["temp", "hum"], [[20, 30], [21, 31]]),
        ("temp,hum\n20.0,\n21.0,\n", ["temp"], [[20], [21]]),
        # one data row: a stream of one value, cycled (streams longer than the data wrap)
        ("temp,hum\n20.0,30.0\n", ["temp", "hum"], [[20, 30]]),
    ],
)
def test_documented_acceptances(tmp_path, text, names, rows):
    got_names, matrix = load_table(_write(tmp_path, "a.csv", text))
    assert got_names == names and matrix.tolist() == rows


@pytest.mark.parametrize(
    ("text", "column", "words"),
    [
        # every value missing (helper M: "", NA, NaN, ... are missing values, not text)
        ("temp,hum\n20.0,\n21.0,\n", "hum", "is entirely missing"),
        ("temp,hum\n20.0,nan\n21.0,nan\n", "hum", "is entirely missing"),
        ("temp,hum\n20.0,30.0\n21.0,nan\n", "hum", "missing value 'nan'"),
        ("temp,hum\n20.0,30.0\n21.0,abc\n", "hum", "non-numeric value 'abc'"),
        ("temp,temp\n20.0,30.0\n21.0,31.0\n", "temp", "names 2 columns"),
        # one of them text: the numeric one was read, the other never mentioned (helper S2)
        ("temp,temp\n20.0,warm\n21.0,cold\n", "temp", "numeric column 0 and a column that"),
        ("room,temp,room\nA,20.0,1\nB,21.0,2\n", "room", "its first value 'A', line 2"),
        ("temp,hum\n", "temp", "has a header but no data rows"),
        ("temp,hum\n20.0,30.0\n21.0\n", "temp", "line 3"),
    ],
)
def test_a_source_reading_a_bad_column_is_refused(tmp_path, text, column, words):
    path = _write(tmp_path, "b.csv", text)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(SCENARIO.replace("column = 0", f'column = "{column}"').format(path=path))
    assert words in str(caught.value), str(caught.value)
