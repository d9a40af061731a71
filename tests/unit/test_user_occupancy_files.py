"""A researcher's own Occupancy-format files for ``ldpfleet bench gcdp --train-file``
(helper Q): a file without its header line, or with the names in another case, was
refused as "no column 'Temperature', ... in the header (it has '0', '463.1', ...)", data
read as names, no word of the case."""

from __future__ import annotations

import pytest
from ldpfleet.collector.gcdp.evaluation import load_occupancy

HEADER = "Temperature\tHumidity\tLight\tCO2\tHumidityRatio\tOccupancy\n"
ROW = "20.1\t30.2\t400\t600\t0.0045\t1\n"


def _refusal(tmp_path, text):
    path = tmp_path / "occ.tsv"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        load_occupancy(path)
    return str(info.value)


def test_a_file_without_its_header_line_says_so(tmp_path):
    message = _refusal(tmp_path, ROW * 40)
    assert "no header line" in message and "Temperature" in message, message


def test_names_in_another_case_are_named(tmp_path):
    message = _refusal(tmp_path, HEADER.lower() + ROW * 40)
    assert "'temperature'" in message and "case" in message, message


@pytest.mark.parametrize(
    ("head", "kind"),
    [(b"\x1f\x8b\x08\x00", "gzip"), (b"BZh91AY", "bzip2"), (b"PK\x03\x04", "zip")],
)
def test_a_compressed_or_zipped_file_says_what_it_is(tmp_path, head, kind):
    """``--train-file train.tsv.gz`` or an .xlsx said "line 1 is not UTF-8 text (byte
    0x8b): save the file as UTF-8"."""
    path = tmp_path / "occ.bin"
    path.write_bytes(head + b"\x00" * 64)
    with pytest.raises(ValueError) as info:
        load_occupancy(path)
    message = str(info.value)
    assert kind in message and "UTF-8" not in message, message
