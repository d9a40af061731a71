"""A CSV source saved as UTF-16 with its byte-order mark (Excel's "Unicode Text" export,
tab-separated) is read; it was refused as "not UTF-8 text (byte 0xff on line 1)" (helper
P's user trial, 2026-12-06). A UTF-8 file, with or without a BOM, reads as before; a
damaged UTF-16 file is refused saying UTF-16."""

import pytest
from ldpfleet.devices.sources import CsvSpec, SourceError, csv_stream

TEXT = "t\tTemp (°C)\r\n1\t20.5\r\n2\t21.0\r\n3\t19.5\r\n"


@pytest.mark.parametrize(
    "encoding", ["utf-16", "utf-16-le-bom", "utf-16-be-bom", "utf-8-sig", "utf-8"]
)
def test_the_same_values_in_every_encoding(tmp_path, encoding):
    path = tmp_path / f"{encoding}.csv"
    if encoding.endswith("-bom"):
        path.write_bytes(("\ufeff" + TEXT).encode(encoding[:-4]))
    else:
        path.write_bytes(TEXT.encode(encoding))
    values, _ = csv_stream(CsvSpec(path=str(path), column="Temp (°C)"), 0, 1, 4)
    assert values.tolist() == [20.5, 21.0, 19.5, 20.5]


def test_a_truncated_utf16_file_is_named_as_utf16(tmp_path):
    path = tmp_path / "cut.csv"
    path.write_bytes(TEXT.encode("utf-16")[:-1])
    with pytest.raises(SourceError) as caught:
        csv_stream(CsvSpec(path=str(path), column="Temp (°C)"), 0, 1, 4)
    assert "starts with a UTF-16 byte-order mark but is not UTF-16 text" in str(caught.value)


def test_latin1_is_still_refused_as_not_utf8(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(TEXT.replace("\t", ",").encode("latin-1"))
    with pytest.raises(SourceError, match=r"is not UTF-8 text \(byte 0xb0 on line 1\)"):
        csv_stream(CsvSpec(path=str(path), column="Temp (°C)"), 0, 1, 4)
