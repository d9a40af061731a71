"""A researcher's own CSV (helper Q): ``source.path = "~/data/x.csv"`` was looked up as a
folder named ``~`` ("file not found: ~/gh.csv ... looked in /cwd/~/gh.csv"), while a
``[graph] source`` path may start with ``~``; and an Excel export's first line ``sep=;``
was read as a header ("line 2 has 4 fields, header has 2")."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.devices.sources import load_table
from ldpfleet.scenarios.schema import parse_scenario

SCENARIO = """
[scenario]
name = "user-csv"
[fleet]
devices = 2
[stream]
steps = 10
eps = 2.0
w = 5
[source]
kind = "csv"
path = "{path}"
column = "temp"
bounds = [0.0, 60.0]
"""

ROWS = "time;temp;hum\n2024-01-01 00:00;20.5;40\n2024-01-01 00:10;21.0;41\n"


def test_a_source_path_may_start_with_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "data-home").mkdir()
    (tmp_path / "data-home" / "gh.csv").write_text(ROWS)
    monkeypatch.chdir(tmp_path / "data-home")  # not where the file is named from
    loaded = parse_scenario(SCENARIO.format(path="~/data-home/gh.csv"))
    assert loaded.source_spec().path == str(tmp_path / "data-home" / "gh.csv")


def test_an_excel_sep_line_names_the_delimiter(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_text("sep=;\n" + ROWS.replace(";", ";"))
    names, matrix = load_table(str(path))
    assert list(names) == ["temp", "hum"]
    np.testing.assert_allclose(matrix[:, 0], [20.5, 21.0])


def test_an_excel_sep_line_with_commas(tmp_path):
    path = tmp_path / "excel-comma.csv"
    path.write_text(
        'sep=,\r\n"time","temp","hum"\r\n"2024-01-01",20.5,40\r\n"2024-01-02",21,41\r\n'
    )
    names, matrix = load_table(str(path))
    assert list(names) == ["temp", "hum"]
    np.testing.assert_allclose(matrix[:, 1], [40, 41])


def test_a_column_named_in_another_case_gets_a_did_you_mean(tmp_path):
    import pytest
    from ldpfleet.scenarios.schema import ScenarioError

    path = tmp_path / "gh.csv"
    path.write_text(ROWS.replace("temp", "Temp (°C)"))
    with pytest.raises(ScenarioError) as info:
        parse_scenario(SCENARIO.format(path=path))
    assert "did you mean 'Temp (°C)'?" in str(info.value), str(info.value)


def test_a_column_name_in_a_headerless_file_says_there_is_no_header(tmp_path):
    import pytest
    from ldpfleet.scenarios.schema import ScenarioError

    path = tmp_path / "nohdr.csv"
    path.write_text(ROWS.split("\n", 1)[1])  # the data lines only
    with pytest.raises(ScenarioError) as info:
        parse_scenario(SCENARIO.format(path=path))
    message = str(info.value)
    assert "has no header line" in message and "0..1" in message, message


def test_an_excel_workbook_is_refused_in_one_sentence(tmp_path):
    """A zip is tried as a NumPy .npz (same magic bytes): a workbook's XML member came back
    as bytes and ``ldpfleet run`` ended in a traceback (AttributeError: 'bytes' object has
    no attribute 'ndim')."""
    import zipfile

    import pytest
    from ldpfleet.devices.sources import SourceError

    book = tmp_path / "readings.xlsx"
    with zipfile.ZipFile(book, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")
    with pytest.raises(SourceError) as info:
        load_table(str(book))
    message = str(info.value)
    assert "Excel workbook" in message and "CSV" in message, message
    other = tmp_path / "bundle.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("data/readings.csv", "t,temp\n1,2\n")
    with pytest.raises(SourceError) as info:
        load_table(str(other))
    message = str(info.value)
    assert "zip archive" in message and "data/readings.csv" in message, message


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_a_compressed_csv_is_read_as_an_edge_list_is(tmp_path, suffix):
    """``greenhouse.csv.gz`` was "not UTF-8 text (byte 0x8b on line 1): save it as UTF-8";
    a [graph] source reads gzip, bzip2 and xz, so a CSV source does too."""
    import bz2
    import gzip
    import lzma

    pack = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[suffix]
    path = tmp_path / f"gh.csv{suffix}"
    path.write_bytes(pack(ROWS.encode()))
    names, matrix = load_table(str(path))
    assert list(names) == ["temp", "hum"]
    np.testing.assert_allclose(matrix[:, 0], [20.5, 21.0])


def test_a_broken_compressed_csv_is_one_sentence(tmp_path):
    from ldpfleet.devices.sources import SourceError

    path = tmp_path / "gh.csv.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00broken")
    with pytest.raises(SourceError) as info:
        load_table(str(path))
    assert "gzip" in str(info.value) and info.value.field == "source.path", str(info.value)


def test_a_text_file_starting_with_bzh_is_text(tmp_path):
    path = tmp_path / "bzh.csv"
    path.write_text("BZh_level;temp\n1.5;20.5\n2.5;21.0\n")
    names, matrix = load_table(str(path))
    assert list(names) == ["BZh_level", "temp"] and matrix.shape == (2, 2)
