"""Helper P (2026-12-07): a fleet's devices replay a CSV source without an ``os.stat``
each. ``devices.sources._table`` stat-ed the file three times per call (cache key, folder,
regular file) and ``csv_stream`` reached it several times per device: for thousands of
devices that was measurable in the audit battery (helper A). A spec now keeps the key of
the file as it was when the spec was made; the next spec (the next run) reads an edited
file again."""

import os

import numpy as np
import pytest
from ldpfleet.devices.sources import CsvSpec, clear_table_cache, csv_stream, load_table


def _count_stats(monkeypatch) -> list:
    calls = []
    real = os.stat

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(os, "stat", counting)
    return calls


@pytest.mark.parametrize(
    "kwargs",
    [
        {"column": "v", "missing": "previous"},
        {"column": 0, "layout": "rows", "missing": "previous"},
        {"column": "v", "columns": ("u", "v"), "column_bounds": ((0, 1),) * 2, "missing": "drop"},
        {"column": "v", "missing": "interpolate"},
    ],
)
def test_devices_replay_without_a_stat_each(tmp_path, monkeypatch, kwargs):
    path = tmp_path / "data.csv"
    path.write_text("u,v\n" + "".join(f"{i},{'NA' if i == 3 else i / 2}\n" for i in range(20)))
    clear_table_cache()
    spec = CsvSpec(str(path), **kwargs)
    calls = _count_stats(monkeypatch)
    streams = [csv_stream(spec, i, 40, 30)[0] for i in range(40)]
    assert calls == []
    assert all(np.isfinite(s).all() for s in streams)


def test_an_edited_file_is_read_again_by_the_next_spec(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("t,v\n" + "".join(f"{i},{i}.5\n" for i in range(10)))
    clear_table_cache()
    first = CsvSpec(str(path), "v")
    assert csv_stream(first, 0, 1, 3)[0].tolist() == [0.5, 1.5, 2.5]
    path.write_text("t,v\n" + "".join(f"{i},{10 * i}.25\n" for i in range(12)))
    second = CsvSpec(str(path), "v")
    assert csv_stream(second, 0, 1, 3)[0].tolist() == [0.25, 10.25, 20.25]
    assert load_table(str(path))[1][:2, 1].tolist() == [0.25, 10.25]


def test_one_stat_per_table_read(tmp_path, monkeypatch):
    path = tmp_path / "data.csv"
    path.write_text("t,v\n1,2\n3,4\n")
    clear_table_cache()
    calls = _count_stats(monkeypatch)
    load_table(str(path))
    assert calls == [str(path)]
