"""Occupancy-format files a user exports (helper G's user trial, 2026-12-06): Excel's US
AM/PM dates are checked for time order, and a header row repeated by ``cat`` is named."""

from __future__ import annotations

import pytest
from ldpfleet.collector.gcdp.evaluation import load_occupancy

HEADER = "date,Temperature,Humidity,Light,CO2,HumidityRatio,Occupancy\n"


def _row(date: str, occupied: int) -> str:
    return f"{date},23.1,27.2,{400 if occupied else 0}.0,700.5,0.0047,{occupied}\n"


def _ampm(day: int, minute: int) -> str:
    hour, mm = divmod(minute, 60)
    h12 = hour % 12 or 12
    return f"2/{day}/2015 {h12}:{mm:02d}:00 {'AM' if hour < 12 else 'PM'}"


def test_ampm_dates_out_of_order_are_refused(tmp_path) -> None:
    later = [_row(_ampm(13, m), m % 2) for m in range(700, 760)]
    earlier = [_row(_ampm(12, m), m % 2) for m in range(700, 760)]
    p = tmp_path / "swapped.csv"
    p.write_text(HEADER + "".join(later + earlier))
    with pytest.raises(ValueError, match="line 62: date '2/12/2015 11:40:00 AM' is earlier"):
        load_occupancy(p)


def test_ampm_dates_in_order_pass_across_noon(tmp_path) -> None:
    rows = [_row(_ampm(12, m), m % 2) for m in range(690, 750)]  # 11:30 AM .. 12:29 PM
    p = tmp_path / "ok.csv"
    p.write_text(HEADER + "".join(rows))
    assert len(load_occupancy(p)[0]) == 60


def test_a_repeated_header_is_named(tmp_path) -> None:
    rows = [_row(f"2015-02-12 10:{m:02d}:00", m % 2) for m in range(40)]
    p = tmp_path / "joined.csv"
    p.write_text(HEADER + "".join(rows[:20]) + HEADER + "".join(rows[20:]))
    with pytest.raises(ValueError, match=r"line 22: .*the header row again: files joined with cat"):
        load_occupancy(p)
