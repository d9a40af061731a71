"""A CSV file shorter than the stream is replayed, and the source says how many times
(helper G): ``replay_cycles`` / ``source_cycles_entry`` (devices/sources.py) give the
cycles and the one warning results.json carries (``source_cycles``, docs/results.md)."""

from __future__ import annotations

import pytest
from ldpfleet.devices.sources import (
    CsvSpec,
    SourceError,
    SyntheticSpec,
    csv_stream,
    replay_cycles,
    source_cycles_entry,
)


def _csv(tmp_path, rows: int, name: str = "short.csv") -> str:
    path = tmp_path / name
    path.write_text("temp\n" + "".join(f"{20 + k % 7}.5\n" for k in range(rows)))
    return str(path)


def test_a_50_row_file_under_1800_steps_is_replayed_36_times(tmp_path):
    spec = CsvSpec(path=_csv(tmp_path, 50), column="temp")
    assert replay_cycles(spec, 1800) == {
        "records": 50,
        "steps": 1800,
        "cycles": 36.0,
        "max_replays": 36,
    }
    entry, warnings = source_cycles_entry(spec, 1800)
    assert entry["cycles"] == 36.0
    assert len(warnings) == 1
    for words in ("short.csv", "50 rows", "1800 steps", "replayed 36 times", "per simulated"):
        assert words in warnings[0], warnings[0]


def test_the_max_replays_match_what_a_device_replays(tmp_path):
    """A device starts at an offset: each record is replayed floor or ceil(steps/records)
    times, and the largest count is ``max_replays``."""
    spec = CsvSpec(path=_csv(tmp_path, 7), column="temp", stride=3)
    entry = replay_cycles(spec, 30)
    assert entry["cycles"] == pytest.approx(30 / 7)
    for device in range(5):
        series, _ = csv_stream(spec, device, 5, 30)
        start = (device * 3) % 7
        counts = [0] * 7
        for step in range(30):
            counts[(start + step) % 7] += 1
        assert max(counts) == entry["max_replays"] == 5
        assert len(series) == 30


def test_no_warning_when_the_file_covers_the_stream(tmp_path):
    spec = CsvSpec(path=_csv(tmp_path, 50), column="temp")
    entry, warnings = source_cycles_entry(spec, 50)
    assert entry == {"records": 50, "steps": 50, "cycles": 1.0, "max_replays": 1}
    assert warnings == []
    assert source_cycles_entry(spec, 20)[0]["cycles"] == 0.4


def test_the_rows_layout_counts_columns_as_records(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("".join(",".join(f"{r + c}.0" for c in range(4)) + "\n" for r in range(3)))
    spec = CsvSpec(path=str(path), column=0, layout="rows")
    entry, warnings = source_cycles_entry(spec, 10)
    assert entry == {"records": 4, "steps": 10, "cycles": 2.5, "max_replays": 3}
    assert "4 columns (time steps)" in warnings[0]


def test_dropped_rows_shorten_the_file(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("temp\n1.0\nNA\n3.0\n4.0\n")
    spec = CsvSpec(path=str(path), column="temp", missing="drop")
    assert replay_cycles(spec, 6)["records"] == 3


def test_a_synthetic_source_has_no_entry():
    assert source_cycles_entry(SyntheticSpec(), 100) == (None, [])


def test_bad_steps_are_a_typed_error(tmp_path):
    spec = CsvSpec(path=_csv(tmp_path, 5), column="temp")
    with pytest.raises(SourceError) as caught:
        replay_cycles(spec, 0)
    assert caught.value.field == "steps"
