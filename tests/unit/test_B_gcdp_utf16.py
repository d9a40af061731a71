"""UTF-16 Occupancy files are read by GC-DP as by the stream CSV sources (helper B, issue 19).

A CSV source saved as UTF-16 with its byte-order mark (Excel's "Unicode Text", tab
separated; PowerShell's ``>``) was read by the scenarios' sources since helper P's fix, but
``bench gcdp --train-file`` and the ``[gcdp]`` order check refused it: "line 1 is not UTF-8
text (byte 0xff)". Both now decode with the one function ``devices.sources.decode_text``
(through ``csv_text``, which also reads an Excel ``sep=`` line for both).
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.gcdp import evaluation
from ldpfleet.collector.gcdp.evaluation import check_date_order, load_occupancy, record_steps
from ldpfleet.devices import sources

HEADER = ["date", "Temperature", "Humidity", "Light", "CO2", "HumidityRatio", "Occupancy"]
ROWS = [
    ["2015-02-04 17:51:00", "23.18", "27.272", "426", "721.25", "0.00479", "1"],
    ["2015-02-04 17:52:00", "23.15", "27.2675", "429.5", "714", "0.00478", "1"],
    ["2015-02-04 17:53:00", "23.15", "27.245", "426", "713.5", "0.00478", "0"],
]


def _text(delimiter: str) -> str:
    return "\r\n".join(delimiter.join(row) for row in [HEADER, *ROWS]) + "\r\n"


def _write(tmp_path, encoding: str, delimiter: str = ","):
    path = tmp_path / f"{encoding}.csv"
    if encoding.endswith("-bom"):  # a BOM written by hand: utf-16-le / -be add none
        path.write_bytes(("\ufeff" + _text(delimiter)).encode(encoding[:-4]))
    else:
        path.write_bytes(_text(delimiter).encode(encoding))
    return path


def test_the_occupancy_reader_decodes_with_the_sources_decoder(tmp_path, monkeypatch):
    """One decoder, not two: the Occupancy-format reader calls the CSV sources' own
    (``csv_text``, which decodes with ``decode_text``)."""
    assert evaluation.csv_text is sources.csv_text
    calls = []
    real = sources.decode_text
    monkeypatch.setattr(sources, "decode_text", lambda raw: calls.append(raw) or real(raw))
    load_occupancy(_write(tmp_path, "utf-16"))
    assert len(calls) == 1 and calls[0].startswith(b"\xff\xfe")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le-bom", "utf-16-be-bom", "utf-8-sig"])
@pytest.mark.parametrize("delimiter", [",", "\t"])
def test_utf16_reads_the_same_values_as_utf8(tmp_path, encoding, delimiter):
    x, y = load_occupancy(_write(tmp_path, "utf-8", delimiter))
    x16, y16 = load_occupancy(_write(tmp_path, encoding, delimiter))
    np.testing.assert_array_equal(x16, x)
    assert y16.tolist() == y.tolist() == [1, 1, 0]
    # the date column's checks read it too (steps of 60 s; the order check passes)
    assert record_steps(_write(tmp_path, encoding, delimiter)).tolist() == [60.0, 60.0]
    check_date_order(_write(tmp_path, encoding, delimiter))


def test_a_utf16_file_out_of_time_order_is_refused_as_utf8_is(tmp_path):
    rows = [ROWS[1], ROWS[0], ROWS[2]]
    text = "\r\n".join(",".join(row) for row in [HEADER, *rows]) + "\r\n"
    path = tmp_path / "back.csv"
    path.write_bytes(text.encode("utf-16"))
    with pytest.raises(ValueError, match=r"line 3: date '2015-02-04 17:51:00' is earlier"):
        load_occupancy(path)


def test_a_broken_utf16_file_is_named_as_utf16(tmp_path):
    path = tmp_path / "cut.csv"
    path.write_bytes(_text(",").encode("utf-16")[:-1])  # an odd byte count
    with pytest.raises(ValueError, match="starts with a UTF-16 byte-order mark but is not UTF-16"):
        load_occupancy(path)


def test_latin1_is_still_refused_naming_the_line(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(_text(",").replace("Light", "Lumière").encode("latin-1"))
    with pytest.raises(ValueError, match=r"line 1 is not UTF-8 text \(byte 0xe8\)"):
        load_occupancy(path)


def test_an_excel_sep_line_is_read_as_the_sources_read_it(tmp_path):
    """Excel's ``sep=;`` first line: the CSV sources read the file, the Occupancy reader
    refused it (header 'sep=', ''); line numbers still count the sep line."""
    path = tmp_path / "sep.csv"
    path.write_text("sep=;\n" + _text(";").replace("\r\n", "\n"))
    x, y = load_occupancy(path)
    np.testing.assert_array_equal(x, load_occupancy(_write(tmp_path, "utf-8"))[0])
    assert y.tolist() == [1, 1, 0]
    assert record_steps(path).tolist() == [60.0, 60.0]
    path.write_text(path.read_text().replace("713.5", "x"))
    with pytest.raises(ValueError, match=r"line 5: CO2 must be a finite number, got 'x'"):
        load_occupancy(path)
