"""A space-separated file (Intel Lab's ``mote_locs.txt``: ``1 21.5 23``) is refused with a
hint that spaces are not a delimiter (helper E's user trial, 2026-12-06: the refusal said
only "no numeric columns ... line 2")."""

from __future__ import annotations

import pytest
from ldpfleet.devices.sources import CsvSpec, SourceError, csv_stream


def test_space_separated_numbers_get_the_delimiter_hint(tmp_path):
    path = tmp_path / "mote_locs.txt"
    path.write_text("1 21.5 23\n2 24.5 20\n3 19.5 19\n")
    with pytest.raises(SourceError) as refused:
        csv_stream(CsvSpec(path=str(path), column=0), 0, 1, 3)
    assert refused.value.field == "source.path"
    assert "separated by spaces" in str(refused.value)


def test_a_text_column_gets_no_such_hint(tmp_path):
    path = tmp_path / "words.csv"
    path.write_text("name\nalpha beta\ngamma delta\n")
    with pytest.raises(SourceError) as refused:
        csv_stream(CsvSpec(path=str(path), column=0), 0, 1, 2)
    assert "no numeric columns" in str(refused.value)
    assert "separated by spaces" not in str(refused.value)
