"""Helper R's review of the user-day input fixes: cases each fail on main 0a943d6e."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest
from ldpfleet.collector.gcdp.evaluation import load_occupancy
from ldpfleet.devices import sources
from ldpfleet.devices.sources import SourceError, load_table


@pytest.fixture(autouse=True)
def _fresh_cache():
    sources.clear_table_cache()
    yield
    sources.clear_table_cache()


def test_a_text_csv_whose_header_starts_with_lzip_is_read(tmp_path):
    """devices.compressed.NOT_UNPACKED matched b"LZIP" alone; lzip's header is "LZIP" then
    its version byte 1, so a plain CSV with a first column "LZIP..." was refused as lzip."""
    path = tmp_path / "codes.csv"
    path.write_text("LZIP,value\n1,2\n3,4\n")
    names, matrix = load_table(str(path), header=True)
    assert list(names) == ["LZIP", "value"] and np.array_equal(matrix, [[1, 2], [3, 4]])


def test_a_list_of_integers_is_not_said_to_have_a_decimal_point(tmp_path):
    """Under decimal ',' a first value '1,2,3' was said to group 'its digits with commas
    before a decimal point': it has none."""
    path = tmp_path / "d.csv"
    path.write_text("a;b\n1;1,2,3\n2;4\n")
    with pytest.raises(SourceError) as info:
        load_table(str(path), header=True, decimal=",")
    assert "before a decimal point" not in str(info.value), info.value


def test_a_full_width_grouping_comma_is_not_called_a_decimal_comma(tmp_path):
    """'１，２３４' (a Japanese export's 1,234 = 1234) was hinted as a decimal comma needing
    source.decimal = ','; following that advice reads 1.234."""
    path = tmp_path / "jp.csv"
    path.write_text("a,b\n1,\uff11\uff0c\uff12\uff13\uff14\n2,5\n", encoding="utf-8")
    with pytest.raises(SourceError) as info:
        load_table(str(path), header=True)
    assert 'needs source.decimal = ","' not in str(info.value), info.value


def test_an_archived_occupancy_file_is_named_in_the_command(tmp_path):
    """bench gcdp's Occupancy reader calls binary_format without the name: the advice
    said 'tar -tf FILE'."""
    data = b"Date,Temperature,Occupancy\n2015-02-04 17:51:00,23.18,1\n"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("occ.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    path = tmp_path / "occ.tar"
    path.write_bytes(buffer.getvalue())
    with pytest.raises(ValueError) as error:
        load_occupancy(path)
    assert "occ.tar" in str(error.value) and "FILE" not in str(error.value), error.value
