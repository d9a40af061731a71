"""Helper D: one decimal-mark checker, and the small input surprises of a user's files.

- The decimal mark was checked in three places with three sentences (``[source] decimal``,
  ``load_occupancy``, ``bench gcdp --decimal``): one checker, ``devices.sources.check_decimal``,
  raises one ``DecimalMarkError`` (a ``SourceError`` and a ``ParameterError``) naming the
  caller's field, the limit and the value. ``load_table(path, decimal=";")`` read the file
  with decimal points, silently.
- Digits of other scripts (full-width "１２３", Arabic-Indic "١٢٣") are read as the numbers
  they are, by both readers and by both paths of ``_cell_matrix``.
- An integer beyond 2**53 (a 17-digit counter, a Unix time in nanoseconds) was read as the
  nearest float64, silently: refused naming column, line and value (as a NumPy file's).
- A DOS end-of-file mark (Ctrl-Z) at the very end of a file was "line 4 has 1 fields".
- ``bench gcdp --train-file book.xls`` said "not UTF-8": the format is named, by the CSV
  source's own table of formats.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import typer
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.collector.gcdp.evaluation import load_occupancy
from ldpfleet.devices import sources
from ldpfleet.devices.sources import (
    CsvSpec,
    DecimalMarkError,
    SourceError,
    binary_format,
    check_decimal,
    load_table,
)
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

from tests.unit.test_G_user_round4 import BINARY

HEADER = ("Temperature", "Humidity", "Light", "CO2", "HumidityRatio", "Occupancy")


def _occupancy_text(rows: int = 40, co2: str = "600", last: str = "") -> str:
    lines = [",".join(HEADER)]
    lines += [f"20.{k % 10},30.2,400,{co2},0.0045,{k % 2}" for k in range(rows)]
    return "\n".join(lines) + "\n" + last


# --------------------------------------------------------------------------- the checker


def test_the_checker_names_the_callers_field_the_limit_and_the_value():
    for field in ("source.decimal", "decimal", "--decimal"):
        with pytest.raises(DecimalMarkError) as info:
            check_decimal(";", field=field)
        error = info.value
        assert isinstance(error, SourceError) and isinstance(error, ParameterError)
        assert (error.field, error.limit, error.value) == (field, "'.' or ','", ";")
        assert str(error) == f"{field}: {error.reason}"
        assert "got ';'" in error.reason and "'.' or ','" in error.reason
    with pytest.raises(DecimalMarkError) as info:
        check_decimal(",", field="source.decimal", delimiter=",", path="data.csv")
    error = info.value
    assert (error.field, error.value) == ("source.decimal", ",")
    assert "semicolons or tabs" in error.limit
    assert "data.csv" in error.reason and "separated by commas" in error.reason
    assert check_decimal(",", field="decimal", delimiter=";", path="x") == ","
    assert check_decimal(".", field="decimal", delimiter=",", path="x") == "."
    for bad in (None, 1, ".,", ""):
        with pytest.raises(DecimalMarkError):
            check_decimal(bad, field="decimal")


def test_the_error_survives_pickling_with_its_fields():
    with pytest.raises(DecimalMarkError) as info:
        check_decimal("x", field="source.decimal")
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is DecimalMarkError
    assert (again.field, again.limit, again.value, str(again)) == (
        info.value.field,
        info.value.limit,
        info.value.value,
        str(info.value),
    )


def test_the_three_callers_say_one_sentence(tmp_path):
    """``[source] decimal``, ``load_occupancy`` and ``bench gcdp --decimal``: one reason,
    each with its own field; ``load_table`` and ``CsvSpec`` no longer read a file with an
    unknown mark (``load_table`` read it with decimal points, silently)."""
    path = tmp_path / "t.csv"
    path.write_text(_occupancy_text())
    reasons = {}
    for name, call, field in (
        ("CsvSpec", lambda: CsvSpec(path=str(path), column="CO2", decimal=";"), "source.decimal"),
        ("load_table", lambda: load_table(str(path), decimal=";"), "source.decimal"),
        ("load_occupancy", lambda: load_occupancy(path, decimal=";"), "decimal"),
        ("bench", lambda: bench.bench_gcdp("occupancy", ("NonPrivate",), (1.0,), 1, 0,
                                           test_file=str(path), decimal=";"), "decimal"),
    ):  # fmt: skip
        with pytest.raises(DecimalMarkError) as info:
            call()
        assert (info.value.field, info.value.value) == (field, ";"), name
        reasons[name] = info.value.reason
    assert len(set(reasons.values())) == 1, reasons


def test_a_comma_mark_for_a_comma_separated_file_is_one_sentence_in_both_readers(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(_occupancy_text())
    with pytest.raises(DecimalMarkError) as source:
        load_table(str(path), decimal=",")
    with pytest.raises(DecimalMarkError) as occupancy:
        load_occupancy(path, decimal=",")
    assert source.value.reason == occupancy.value.reason
    assert (source.value.field, occupancy.value.field) == ("source.decimal", "decimal")
    assert source.value.limit == occupancy.value.limit


def test_the_bench_command_names_the_option(tmp_path):
    app = typer.Typer()
    app.command()(bench.bench_gcdp_command)
    out = CliRunner().invoke(app, ["--decimal", ";", "--eps", "1", "--draws", "1"])
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert lines == [f"error: --decimal: {check_decimal_reason(';')}"], out.output


def check_decimal_reason(value: str) -> str:
    with pytest.raises(DecimalMarkError) as info:
        check_decimal(value, field="decimal")
    return info.value.reason


# --------------------------------------------------------------------------- digits


FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


@pytest.mark.parametrize("digits", [FULL_WIDTH, ARABIC_INDIC], ids=["full-width", "arabic"])
def test_digits_of_other_scripts_read_as_the_numbers_they_are(tmp_path, digits):
    text = _occupancy_text()
    header, _, body = text.partition("\n")
    plain, local = tmp_path / "plain.csv", tmp_path / "local.csv"
    plain.write_text(text, encoding="utf-8")
    local.write_text(header + "\n" + body.translate(digits), encoding="utf-8")
    assert "٠" in local.read_text(encoding="utf-8") or "０" in local.read_text(encoding="utf-8")
    names, matrix = load_table(str(local))
    assert names == load_table(str(plain))[0]
    assert np.array_equal(matrix, load_table(str(plain))[1])
    x, y = load_occupancy(local)
    x0, y0 = load_occupancy(plain)
    assert np.array_equal(x, x0) and np.array_equal(y, y0)


def test_digits_of_other_scripts_with_decimal_commas(tmp_path):
    path = tmp_path / "de.csv"
    path.write_text("a;b\n" + "١٢,٥;３,２５\n" + "1,5;2\n", encoding="utf-8")
    assert load_table(str(path), decimal=",")[1].tolist() == [[12.5, 3.25], [1.5, 2.0]]


CELLS = [
    ["１２", "٣٤"],  # digits of other scripts: read
    ["1２.５", "-٣e٢"],
    ["１２．５", "1"],  # a full-width point is not a decimal point: refused
    ["٢١٫٥", "1"],  # nor the Arabic decimal separator
    ["12345678901234567", "1"],  # read here; refused later (_cell_matrix's own check)
    ["4\x1a", "1"],  # a Ctrl-Z inside the file: refused
    ["1_000", "1"],  # digit grouping: refused (numpy would read it)
]


@pytest.mark.parametrize("cells", CELLS, ids=[repr(c[0]) for c in CELLS])
def test_the_numpy_fast_path_and_the_cell_by_cell_path_agree(cells):
    """``_cell_matrix`` tries numpy's conversion of the whole table first and reads cell by
    cell (``_cell_value``) when it fails: both give the same number or the same refusal
    (NaN, then named) for every cell."""
    slow = np.array([[sources._cell_value(cell) for cell in cells]])
    try:
        fast = np.array([cells], dtype=np.float64) if "_" not in "".join(cells) else None
    except ValueError:
        fast = None  # numpy refuses the table: the cell-by-cell path reads it
    if fast is not None:
        assert np.array_equal(fast, slow), (fast, slow)
    data = [(2, cells)]
    matrix, broken, _, _ = sources._cell_matrix([list(cells)], data)
    single = [
        sources._cell_matrix([[cell]], [(2, [cell])])[0][0, 0] for cell in cells
    ]  # each cell alone: the fast path wherever numpy reads it
    assert np.array_equal(matrix[0], np.array(single), equal_nan=True)
    for k, cell in enumerate(cells):
        assert (k in broken) == (not np.isfinite(matrix[0, k])), (cell, broken)


# --------------------------------------------------------------------------- precision


def test_an_integer_beyond_2_53_in_a_column_read_is_refused_naming_it(tmp_path):
    path = tmp_path / "counter.csv"
    path.write_text("t_ns,energy\n1733540123456789012,5\n1733540123456789999,6\n")
    with pytest.raises(SourceError) as info:
        CsvSpec(path=str(path), column="t_ns")
    message = str(info.value)
    for needle in ("'1733540123456789012'", "'t_ns'", "line 2", "2**53", "1.7335401234567890e+18"):
        assert needle in message, message
    with pytest.raises(SourceError):
        load_table(str(path))  # every column read
    # a column no source reads does not refuse the file (as a bad cell there)
    assert CsvSpec(path=str(path), column="energy").column == "energy"


def test_an_integer_that_a_float64_holds_and_a_float_written_number_are_read(tmp_path):
    path = tmp_path / "ok.csv"
    path.write_text("a,b\n9007199254740992,1.7335401234567890e18\n-9007199254740992,2.5\n")
    assert load_table(str(path))[1][:, 0].tolist() == [2.0**53, -(2.0**53)]
    big = tmp_path / "big.csv"
    big.write_text("a\n1\n-9007199254740993\n")
    with pytest.raises(SourceError, match="line 3"):
        load_table(str(big))


def test_the_refusal_is_the_same_on_the_cell_by_cell_path(tmp_path):
    """A gap elsewhere in the table ("NA": numpy refuses the table) reads cell by cell."""
    path = tmp_path / "gappy.csv"
    path.write_text("a,b\n12345678901234567,1\n2,NA\n")
    with pytest.raises(SourceError) as info:
        CsvSpec(path=str(path), column="a")
    assert "'12345678901234567'" in str(info.value) and "2**53" in str(info.value)


def test_an_occupancy_channel_beyond_2_53_is_refused_naming_line_and_column(tmp_path):
    path = tmp_path / "occ.csv"
    path.write_text(_occupancy_text(co2="12345678901234567"))
    with pytest.raises(ValueError) as info:
        load_occupancy(path)
    message = str(info.value)
    assert "line 2" in message and "CO2" in message and "2**53" in message, message
    assert "'12345678901234567'" in message, message


# --------------------------------------------------------------------------- Ctrl-Z


@pytest.mark.parametrize("ending", ["\x1a", "\r\n\x1a", "\x1a\x1a\x1a"])
def test_a_trailing_ctrl_z_is_the_end_of_the_file(tmp_path, ending):
    text = _occupancy_text().replace("\n", "\r\n" if ending.startswith("\r") else "\n")
    plain, dos = tmp_path / "plain.csv", tmp_path / "dos.csv"
    plain.write_bytes(text.encode())
    dos.write_bytes(text.rstrip("\r\n").encode() + ending.encode())
    assert np.array_equal(load_table(str(dos))[1], load_table(str(plain))[1])
    x, y = load_occupancy(dos)
    assert np.array_equal(x, load_occupancy(plain)[0]) and np.array_equal(
        y, load_occupancy(plain)[1]
    )


def test_a_trailing_ctrl_z_in_utf16(tmp_path):
    path = tmp_path / "u16.txt"
    path.write_bytes("a\tb\r\n1.5\t2\r\n3.5\t4\r\n\x1a".encode("utf-16"))
    assert load_table(str(path))[1].tolist() == [[1.5, 2.0], [3.5, 4.0]]


def test_a_ctrl_z_elsewhere_is_refused_as_before(tmp_path):
    path = tmp_path / "mid.csv"
    path.write_text("a,b\n1.5,2\n3.5,4\x1a\n5.5,6\n")
    with pytest.raises(SourceError, match=r"non-numeric value '4\\x1a' in column 'b' at line 3"):
        load_table(str(path))
    occupancy = tmp_path / "occ.csv"
    text = _occupancy_text().split("\n")
    text[3] += "\x1a"
    occupancy.write_text("\n".join(text))
    with pytest.raises(ValueError, match="line 4: Occupancy must be 0 or 1"):
        load_occupancy(occupancy)
    last_line = tmp_path / "last.csv"
    last_line.write_text("a,b\n1.5,2\n3.5,4\n\x1a\n")  # a Ctrl-Z line, then a newline
    with pytest.raises(SourceError, match="line 4"):
        load_table(str(last_line))


# --------------------------------------------------------------------------- formats


@pytest.mark.parametrize(("name", "data", "what"), BINARY, ids=[b[0] for b in BINARY])
def test_an_occupancy_file_in_a_binary_format_is_named_as_a_source_names_it(
    tmp_path, name, data, what
):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ValueError) as info:
        load_occupancy(path)
    message = str(info.value)
    assert what in message and "UTF-8 text" not in message, message
    assert binary_format(data) in message  # the one table of formats
    with pytest.raises(SourceError) as source:
        load_table(str(path))
    assert binary_format(data) in str(source.value)


def test_bench_gcdp_train_file_xls_names_the_format(tmp_path):
    path = tmp_path / "book.xls"
    path.write_bytes(BINARY[0][1])
    app = typer.Typer()
    app.command()(bench.bench_gcdp_command)
    out = CliRunner().invoke(app, ["--train-file", str(path), "--eps", "1", "--draws", "1"])
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --train-file: "), out.output
    assert "Excel 97-2003" in lines[0] and "not UTF-8" not in lines[0], lines[0]
    assert lines[0].count(str(path)) == 1, lines[0]


def test_text_is_no_binary_format():
    assert binary_format(b"a,b\n1,2\n") is None
    assert binary_format(b"\x93NUMPY\x01\x00") is None  # the CSV source reads NumPy files


@pytest.mark.parametrize(
    ("cell", "mark"),
    [("２１．５", "U+FF0E"), ("٢١٫٥", "U+066B"), ("－３", "U+FF0D"), ("\u22123.5", "U+2212")],
)
def test_a_mark_of_another_script_is_named_in_both_readers(tmp_path, cell, mark):
    """Digits of any script are read, a decimal point or sign of another script is not: the
    refusal names the mark (it said only "non-numeric value")."""
    later = tmp_path / "later.csv"
    later.write_text(f"a,b\n1.5,1\n{cell},2\n", encoding="utf-8")
    first = tmp_path / "first.csv"
    first.write_text(f"a,b\n{cell},1\n1.5,2\n", encoding="utf-8")
    for path in (later, first):
        with pytest.raises(SourceError) as info:
            CsvSpec(path=str(path), column="a")
        assert mark in str(info.value) and repr(cell) in str(info.value), str(info.value)
    occupancy = tmp_path / "occ.csv"
    occupancy.write_text(_occupancy_text().replace("20.3,", f"{cell},", 1), encoding="utf-8")
    with pytest.raises(ValueError) as info:
        load_occupancy(occupancy)
    message = str(info.value)
    assert "Temperature must be a finite number" in message and mark in message, message


def test_no_mark_hint_for_text_or_plain_bad_values():
    assert sources.foreign_mark_hint("abc．") == ""
    assert sources.foreign_mark_hint("1.5") == ""
    assert sources.foreign_mark_hint("inf") == ""


def test_an_edge_list_broken_past_its_gzip_header_is_one_sentence(tmp_path):
    """The [graph] reader had its own copy of the compressed-file table without the CSV
    source's fixes: a gzip edge list whose deflate stream is broken past a header that
    reads raised zlib.error (a traceback); now one sentence naming the graph field."""
    from ldpfleet.devices.graphs import load_graph
    from ldpfleet.protocol.errors import ParameterError

    path = tmp_path / "broken.edges.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 64)
    with pytest.raises(ParameterError) as info:
        load_graph(str(path))
    assert info.value.field == "graph" and "broken gzip data" in str(info.value)


def test_an_edge_list_starting_with_bzh_is_text_not_bzip2(tmp_path):
    """bzip2's magic is "BZh" and a block-size digit (the CSV source's rule, now the graph
    reader's too): a text file starting "BZhello" is not called broken bzip2 data."""
    from ldpfleet.devices.compressed import compression

    assert compression(b"BZhello 1\n") is None
    assert compression(b"BZh91AY&SY") == "bzip2"
