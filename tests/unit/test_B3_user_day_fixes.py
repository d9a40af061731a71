"""Helper B's user day (2026-12-07, claim R7; scripts/B_user_day.py): one test per fix, each
failing on the code before it.

- A number written with a full-width comma "２０，５" (a CJK locale's export) under
  ``decimal = ","`` was skipped as a text column with no hint (the known gap of the brief),
  and under either decimal mark a column whose first value is a number written with a mark
  of another script ("２０，５", "２１．５", "٢٠٫٥", "−3.5") was skipped silently, so a
  numeric ``column = 0`` replayed the NEXT column. Now the file is refused naming the cell
  and the mark, against the file's decimal mark.
- ``[cadr] dropout`` rounding to no device (``round(dropout x n) = 0``) ran with no dropout
  while the scenario asked for one; now refused naming field, limit and value. The refusal
  of a dropout past the limit names the value too.
- An edge list ending in a DOS end-of-file mark (Ctrl-Z) was refused ("expected two node
  ids, got '\\x1a'") while the CSV sources drop it.
"""

from __future__ import annotations

import pytest
from ldpfleet.app.cli import app
from ldpfleet.devices import sources
from ldpfleet.devices.graphs import load_graph
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario
from typer.testing import CliRunner


def _csv_scenario(path, column: str | int, decimal: str) -> str:
    column_value = f'"{column}"' if isinstance(column, str) else str(column)
    return (
        '[scenario]\nname = "b3"\nseed = 1\n\n[fleet]\ndevices = 2\n\n'
        "[stream]\nsteps = 4\neps = 4.0\nw = 4\n\n"
        f'[source]\nkind = "csv"\npath = "{path.name}"\ncolumn = {column_value}\n'
        f'bounds = [0.0, 40.0]\ndecimal = "{decimal}"\n'
    )


def _refusal(tmp_path, text: str, column: str | int, decimal: str) -> ScenarioError:
    path = tmp_path / "data.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_csv_scenario(path, column, decimal), path=tmp_path / "s.toml")
    return caught.value


FULL_WIDTH = "t;h\n２０，５;1\n２１，２５;2\n"


def test_a_full_width_comma_under_decimal_comma_is_named(tmp_path):
    message = str(_refusal(tmp_path, FULL_WIDTH, "t", ","))
    assert "'２０，５'" in message and "U+FF0C" in message, message
    assert "is not ','" in message and "line 2" in message, message


def test_a_full_width_comma_under_decimal_point_says_to_set_decimal_comma(tmp_path):
    message = str(_refusal(tmp_path, FULL_WIDTH, "t", "."))
    assert "U+FF0C" in message and 'source.decimal = ","' in message, message


@pytest.mark.parametrize(
    ("text", "decimal", "mark"),
    [
        (FULL_WIDTH, ",", "U+FF0C"),
        ("t,h\n２１．５,1\n２２．５,2\n", ".", "U+FF0E"),
        ("t;h\n٢٠٫٥;1\n٢١٫٥;2\n", ",", "U+066B"),
        ("t,h\n\u22123.5,1\n\u22122.5,2\n", ".", "U+2212"),
    ],
)
def test_a_column_index_never_names_the_column_after_a_skipped_foreign_number(
    tmp_path, text, decimal, mark
):
    """``column = 0`` read column ``h`` (1, 2) silently: the first column, numbers written
    with a mark of another script, was skipped as text and the indices shifted."""
    error = _refusal(tmp_path, text, 0, decimal)
    assert error.field == "source.path" and mark in str(error), str(error)
    assert "column 't'" in str(error), str(error)


def test_the_arabic_separator_is_named_against_a_decimal_comma():
    hint = sources.foreign_mark_hint("٢٠٫٥", decimal=",")
    assert "U+066B" in hint and "is not ','" in hint, hint
    assert "is not '.'" in sources.foreign_mark_hint("٢٠٫٥")  # unchanged under "."


def test_no_foreign_mark_hint_for_text():
    assert sources.foreign_mark_hint("abc，", decimal=",") == ""
    assert sources.foreign_mark_hint("２０，５，１", decimal=",") == ""  # no number either way


def test_a_text_column_without_numbers_still_passes(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("name;t\nabc，d;20,5\nx;21,5\n", encoding="utf-8")
    loaded = parse_scenario(_csv_scenario(path, 0, ","), path=tmp_path / "s.toml")
    assert sources.load_table(str(path), decimal=",")[1].tolist() == [[20.5], [21.5]]
    assert loaded.spec.source.column == 0


# --------------------------------------------------------------------------- [cadr] dropout

GRAPH = "erdos_renyi:n=60,p=0.1,seed=4"  # noise_parties(60) = 54: 1 .. 6 may leave


def _cadr(dropout: float) -> str:
    return (
        '[scenario]\nname = "drop"\nseed = 11\n\n'
        f'[graph]\nsource = "{GRAPH}"\n\n[cadr]\neps = 3.0\ndropout = {dropout!r}\n'
    )


@pytest.mark.parametrize("dropout", [1e-300, 0.005, 0.5 / 60])
def test_a_dropout_that_rounds_to_no_device_is_refused(dropout):
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_cadr(dropout))
    error = caught.value
    assert error.field == "cadr.dropout" and error.value == dropout, error
    assert "no device" in str(error) and "0.008333" in error.limit, (str(error), error.limit)


def test_a_dropout_of_one_device_loads():
    assert parse_scenario(_cadr(0.0084)).spec.cadr.dropout == 0.0084


def test_a_dropout_past_the_limit_names_its_value():
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_cadr(0.11))
    assert "dropout = 0.11" in str(caught.value), str(caught.value)


def test_the_cli_refuses_a_dropout_of_no_device_in_one_sentence(tmp_path):
    path = tmp_path / "drop.toml"
    path.write_text(_cadr(0.005))
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "cadr.dropout" in result.output
    assert "no device" in result.output and not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- edge lists

EDGES = "# g\n1 2\n2 3\n3 1\n3 4\n"


@pytest.mark.parametrize(
    "data",
    [
        (EDGES + "\x1a").encode(),
        (EDGES + "\x1a\x1a").encode(),
        (EDGES.rstrip("\n") + "\x1a").encode(),
        (EDGES + "\x1a").encode("utf-16"),
    ],
    ids=["after-newline", "a-run", "no-newline", "utf-16"],
)
def test_an_edge_list_ending_in_ctrl_z_reads(tmp_path, data):
    path = tmp_path / "g.txt"
    path.write_bytes(data)
    graph = load_graph(str(path))
    assert (graph.n, graph.edges()) == (4, 4)


def test_a_ctrl_z_inside_an_edge_list_is_still_refused(tmp_path):
    path = tmp_path / "g.txt"
    path.write_bytes(b"1 2\n2\x1a 3\n3 1\n")
    with pytest.raises(ParameterError) as caught:
        load_graph(str(path))
    assert "line 2" in str(caught.value), str(caught.value)


# --------------------------------------------------------------------------- decimal commas


def test_one_column_of_decimal_commas_with_a_header_reads(tmp_path):
    """A spreadsheet saves one column with no separator ("t", "20,5"): under decimal ","
    it was refused as "its fields are separated by commas"."""
    path = tmp_path / "one.csv"
    path.write_text("t\n20,5\n21,25\n-0,5\n", encoding="utf-8")
    names, matrix = sources.load_table(str(path), decimal=",")
    assert names == ["t"] and matrix[:, 0].tolist() == [20.5, 21.25, -0.5]


def test_one_column_of_decimal_commas_without_a_header_says_to_add_one(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("20,5\n21,5\n", encoding="utf-8")  # or two integer fields: not guessed
    with pytest.raises(sources.DecimalMarkError) as caught:
        sources.load_table(str(path), decimal=",")
    assert "needs a header line" in str(caught.value), str(caught.value)


def test_a_comma_separated_file_under_decimal_comma_is_still_refused(tmp_path):
    path = tmp_path / "cs.csv"
    path.write_text("t,h\n20,1\n21,2\n", encoding="utf-8")  # not one column "t,h" of 20.1
    with pytest.raises(sources.DecimalMarkError):
        sources.load_table(str(path), decimal=",")


@pytest.mark.parametrize("space", [" ", "\u00a0", "\u202f"], ids=["space", "nbsp", "nnbsp"])
def test_french_space_grouping_reads_under_decimal_comma(tmp_path, space):
    """ "1 234,5" (a French export) was text: a first value like it had its column skipped
    silently, so column = 0 replayed the next column."""
    path = tmp_path / "fr.csv"
    path.write_text(f"t;h\n1{space}234,5;1\n-12{space}345{space}678,25;2\n", encoding="utf-8")
    assert sources.load_table(str(path), decimal=",")[1][:, 0].tolist() == [1234.5, -12345678.25]
    loaded = parse_scenario(_csv_scenario(path, 0, ","), path=tmp_path / "s.toml")
    assert loaded.spec.source.column == 0


@pytest.mark.parametrize("cell", ["1 234", "1 23,5", "1234 567,8", "1 234.567,8"])
def test_other_space_groupings_stay_text(tmp_path, cell):
    path = tmp_path / "fr.csv"
    path.write_text(f"t;h\n20,5;1\n{cell};2\n", encoding="utf-8")
    with pytest.raises(sources.SourceError) as caught:
        sources.load_table(str(path), decimal=",")
    assert repr(cell) in str(caught.value), str(caught.value)


def test_comma_grouping_under_decimal_comma_is_not_told_to_set_decimal_comma(tmp_path):
    error = _refusal(tmp_path, "t;h\n1,234.5;1\n", "t", ",")
    assert "groups its digits with commas" in str(error), str(error)
    assert 'set source.decimal = ","' not in str(error), str(error)


# --------------------------------------------------------------------------- archives


def _tar(member: str, data: bytes) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


CSV_BYTES = b"t;h\n20,5;1\n21,5;2\n"
NOT_UNPACKED = [
    ("a.tar.gz", lambda: __import__("gzip").compress(_tar("a.csv", CSV_BYTES)), "tar -tf a.tar.gz"),
    ("a.7z", lambda: b"7z\xbc\xaf\x27\x1c" + bytes(40), "7z l a.7z"),
    ("a.csv.zst", lambda: b"\x28\xb5\x2f\xfd" + bytes(40), "zstd -d a.csv.zst"),
    ("a.csv.lz4", lambda: b"\x04\x22\x4d\x18" + bytes(40), "lz4 -d a.csv.lz4"),
    ("a.csv.Z", lambda: b"\x1f\x9d\x90" + b"abc" * 10, "gzip -d a.csv.Z"),
]


@pytest.mark.parametrize(
    ("name", "data", "command"), NOT_UNPACKED, ids=[n for n, *_ in NOT_UNPACKED]
)
def test_a_csv_source_names_an_archive_or_compression_it_does_not_unpack(
    tmp_path, name, data, command
):
    """A .tar.gz was "line 4 of a.tar.gz has 1 fields, expected 2"; zstd, 7z and .Z "not
    UTF-8 text ... a Windows 'ANSI' export?"."""
    path = tmp_path / name
    path.write_bytes(data())
    sources.clear_table_cache()
    with pytest.raises(sources.SourceError) as caught:
        sources.load_table(str(path), decimal=",")
    message = str(caught.value)
    assert command in message and "ANSI" not in message and "fields" not in message, message


@pytest.mark.parametrize("name", ["a.csv.zst", "a.csv.lz4", "a.csv.Z"])
def test_an_edge_list_names_a_compression_it_does_not_unpack(tmp_path, name):
    data, command = next((d, c) for n, d, c in NOT_UNPACKED if n == name)
    path = tmp_path / name
    path.write_bytes(data())
    with pytest.raises(ParameterError) as caught:
        load_graph(str(path))
    assert caught.value.field == "graph" and command in str(caught.value), str(caught.value)


def test_a_twice_gzipped_csv_reads_as_a_twice_gzipped_edge_list_does(tmp_path):
    import gzip

    path = tmp_path / "a.csv.gz.gz"
    path.write_bytes(gzip.compress(gzip.compress(CSV_BYTES)))
    sources.clear_table_cache()
    assert sources.load_table(str(path), decimal=",")[1].tolist() == [[20.5, 1.0], [21.5, 2.0]]


def test_a_third_layer_of_compression_is_named_not_read_as_text(tmp_path):
    """Two layers are unpacked; a third was read on as text: "not UTF-8 text (byte 0x8b
    on line 1)" for a CSV, a misleading sentence for an edge list."""
    import gzip

    thrice = gzip.compress(gzip.compress(gzip.compress(CSV_BYTES)))
    path = tmp_path / "a.csv.gz.gz.gz"
    path.write_bytes(thrice)
    sources.clear_table_cache()
    with pytest.raises(sources.SourceError) as caught:
        sources.load_table(str(path), decimal=",")
    assert "after 2 layers unpacked" in str(caught.value), str(caught.value)
    edges = tmp_path / "edges.txt.gz.gz.gz"
    edges.write_bytes(gzip.compress(gzip.compress(gzip.compress(b"0 1\n1 2\n"))))
    with pytest.raises(ParameterError) as refused:
        load_graph(str(edges))
    assert refused.value.field == "graph" and "after 2 layers unpacked" in str(refused.value)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_csv_in_utf16_without_a_bom_reads_as_an_edge_list_does(tmp_path, encoding):
    """``iconv -t UTF-16LE`` writes no BOM: it was "line 4 of ... has 1 fields, expected 2"
    (LE) or "no numeric columns: '\\x002\\x000...'" (BE), while the edge lists read it."""
    path = tmp_path / "u16.csv"
    path.write_bytes("time;Temp (°C)\n1;20,5\n2;21,5\n".encode(encoding))
    sources.clear_table_cache()
    names, matrix = sources.load_table(str(path), decimal=",")
    assert names == ["time", "Temp (°C)"] and matrix.tolist() == [[1.0, 20.5], [2.0, 21.5]]


@pytest.mark.parametrize("decimal", [",", "."])
def test_a_file_of_one_full_width_column_names_the_mark(tmp_path, decimal):
    """The brief's known gap: "２０，５" alone under decimal "," was "no numeric columns" and
    nothing more."""
    path = tmp_path / "fw.csv"
    path.write_text("t\n２０，５\n２１，５\n", encoding="utf-8")
    sources.clear_table_cache()
    with pytest.raises(sources.SourceError) as caught:
        sources.load_table(str(path), decimal=decimal)
    assert "no numeric columns" in str(caught.value) and "U+FF0C" in str(caught.value)


def test_broken_utf16_without_a_bom_is_not_said_to_start_with_one():
    from ldpfleet.devices.sources import broken_utf16_reason, decode_text

    raw = "t,v\n1,2\n3,4\n".encode("utf-16-le") + b"\x41\xdc"  # a lone low surrogate
    with pytest.raises(UnicodeDecodeError) as caught:
        decode_text(raw)
    reason = broken_utf16_reason(caught.value)
    assert reason.startswith("looks like UTF-16 text (zero bytes, no byte-order mark)"), reason
