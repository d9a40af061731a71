"""Held-out Occupancy-format files (helper G's QA of ``load_occupancy``): layouts nobody
tuned the loader to must be refused with the line, column and value named, or read right."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.gcdp.evaluation import fit_iqr_clip, fit_normalizer, load_occupancy
from ldpfleet.protocol.errors import ParameterError

HEADER = '"date","Temperature","Humidity","Light","CO2","HumidityRatio","Occupancy"\n'


def _row(date: str, occupancy: int = 1) -> str:
    return f"{date},23.18,27.272,426,721.25,0.0047,{occupancy}\n"


def test_dates_with_and_without_a_utc_offset_are_refused_naming_the_line(tmp_path):
    """Held-out: a file whose date column mixes '2015-02-04 17:51:00+00:00' and naive
    '2015-02-04 17:52:00' raised a bare TypeError (can't compare offset-naive and
    offset-aware datetimes) out of the order check, a traceback from bench gcdp."""
    path = tmp_path / "d.csv"
    path.write_text(HEADER + _row("2015-02-04 17:51:00+00:00") + _row("2015-02-04 17:52:00"))
    naive = r"line 3: date '2015-02-04 17:52:00' has no UTC offset, the date on line 2 "
    with pytest.raises(ValueError, match=naive + r"'2015-02-04 17:51:00\+00:00' has one"):
        load_occupancy(path)
    path.write_text(HEADER + _row("2015-02-04 17:51:00") + _row("2015-02-04 17:52:00+01:00"))
    with pytest.raises(ValueError, match=r"line 3: date '2015-02-04 17:52:00\+01:00' has a UTC"):
        load_occupancy(path)
    path.write_text(HEADER + _row("2015-02-04 17:51:00+01:00") + _row("2015-02-04 17:00:00Z"))
    assert load_occupancy(path)[1].tolist() == [1, 1]  # both aware: 16:51 UTC < 17:00 UTC


@pytest.mark.parametrize("fit", [fit_normalizer, fit_iqr_clip])
def test_a_training_range_wider_than_the_largest_float_is_refused_naming_the_column(fit):
    """Held-out: a training file with CO2 values -1.5e308 and 1.5e308 (finite, so the loader
    keeps them) under ``--clip minmax`` gave an interval of width inf, every normalised CO2
    value 0 or NaN, and bench gcdp stopped on "data: must be finite (remove or interpolate
    gaps first)", naming neither the file nor the column."""
    train = np.tile([[20.0, 30.0, 400.0, 600.0, 0.004]], (8, 1))
    train[:, 1] += np.arange(8)
    train[:, 3] = [-1.5e308, 1.5e308] * 4  # the quartiles are extreme too (IQR overflows)
    with pytest.raises(ParameterError, match=r"column 3: .*-1\.5e\+308.*1\.5e\+308") as err:
        fit(train)
    assert err.value.field == "train[:, 3]"


def test_a_date_that_is_not_iso_after_iso_dates_is_refused(tmp_path):
    """Held-out: one unreadable date ('garbage', or an empty cell) after ISO dates stopped the
    order check silently, and the reversed records after it were read as consecutive."""
    path = tmp_path / "d.csv"
    path.write_text(HEADER + _row("2015-02-04 17:51:00") + _row("garbage")
                    + _row("2015-02-04 17:58:00") + _row("2015-02-04 17:52:00"))  # fmt: skip
    with pytest.raises(ValueError, match=r"line 3: date 'garbage' is not an ISO date-time "
                       r"\(line 2's '2015-02-04 17:51:00' is\)"):  # fmt: skip
        load_occupancy(path)
    path.write_text(HEADER + _row("Feb 04 2015 17:51") + _row("garbage"))
    assert load_occupancy(path)[1].tolist() == [1, 1]  # no known format from the start


def test_common_non_iso_date_formats_are_checked_for_time_order(tmp_path):
    """Held-out: a shuffled file with US dates ('02/08/2015 11:06') was read as consecutive
    records (only ISO dates were checked); bench gcdp then failed on an unrelated symptom
    (all training windows of one class) or, on a luckier shuffle, printed numbers. Dates in
    a fixed list of common formats are now checked too; an ambiguous day/month file passes
    if one reading is in time order."""
    path = tmp_path / "d.csv"
    path.write_text(HEADER + _row("02/08/2015 11:06") + _row("02/06/2015 05:44"))
    with pytest.raises(ValueError, match=r"line 3: date '02/06/2015 05:44' is earlier than "
                       r"'02/08/2015 11:06' on line 2 \(read as %m/%d/%Y %H:%M"):  # fmt: skip
        load_occupancy(path)
    path.write_text(HEADER + _row("04.02.2015 17:51:00") + _row("03.02.2015 17:52:00"))
    with pytest.raises(ValueError, match=r"line 3: date '03\.02\.2015 17:52:00' is earlier"):
        load_occupancy(path)
    ordered = ("01/02/2015 10:00", "02/01/2015 10:00", "28/02/2015 10:00")  # d/m only
    path.write_text(HEADER + "".join(_row(d) for d in ordered[:2]))
    assert load_occupancy(path)[1].tolist() == [1, 1]  # m/d reading in order (d/m is not)
    path.write_text(HEADER + _row("27/02/2015 10:00") + _row(ordered[2]))
    assert load_occupancy(path)[1].tolist() == [1, 1]
    path.write_text(HEADER + _row("02/08/2015 11:06") + _row("2015-02-09 11:06"))
    with pytest.raises(ValueError, match=r"line 3: date '2015-02-09 11:06' is not in the "
                       r"format of the dates before it"):  # fmt: skip
        load_occupancy(path)


def test_a_file_that_is_not_utf8_is_refused_naming_the_line(tmp_path):
    """Held-out: a Latin-1 export (an extra column 'Pièce') failed with "'utf-8' codec can't
    decode byte 0xe8 in position 62", a position in a read buffer, not in the file."""
    path = tmp_path / "d.csv"
    text = HEADER.rstrip("\n") + ',"Note"\n' + _row("2015-02-04 17:51:00").rstrip("\n") + ",x\n"
    path.write_bytes(
        (text + _row("2015-02-04 17:52:00").rstrip("\n") + ",pièce\n").encode("latin-1")
    )
    with pytest.raises(ValueError, match=r"line 3 is not UTF-8 text \(byte 0xe8\)"):
        load_occupancy(path)
