"""A researcher's own CSV (helper Q): a header-less export whose first column is an ISO
date-time. ``header = "auto"`` took its first data line for a header (it has a text field,
the date), so ``column = 0`` silently dropped the first reading and ``column = "temp"``
was refused with the data as "columns: 17.76, 60.0"."""

from __future__ import annotations

import numpy as np
from ldpfleet.devices.sources import load_table

ROWS = [
    "2024-03-01T00:00;17.76;60.0;ok",
    "2024-03-01T00:10;17.86;59.6;ok",
    "2024-03-01T00:20;18.01;59.1;ok",
]


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_headerless_file_starting_with_a_date_keeps_its_first_row(tmp_path):
    path = _write(tmp_path, "nohdr.csv", ROWS)
    names, matrix = load_table(path)
    assert names == ("1", "2") or list(names) == ["1", "2"]
    np.testing.assert_allclose(matrix[:, 0], [17.76, 17.86, 18.01])


def test_a_date_header_name_is_still_a_header(tmp_path):
    path = _write(tmp_path, "hdr.csv", ["timestamp;temp;hum;note", *ROWS])
    names, matrix = load_table(path)
    assert list(names) == ["temp", "hum"]
    np.testing.assert_allclose(matrix[:, 0], [17.76, 17.86, 18.01])


def test_a_header_of_numbers_over_dated_rows_is_still_a_header(tmp_path):
    # sensor ids as column names, a text name over the date column: a header
    path = _write(tmp_path, "ids.csv", ["time;1;2;note", *ROWS])
    names, matrix = load_table(path)
    assert list(names) == ["1", "2"]
    assert matrix.shape == (3, 2)
