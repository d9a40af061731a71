"""Review R5 (2026-12-07): the parsed-table cache (``devices.sources._parse_table``) is keyed
on (real path, mtime_ns, size, cap). A file rewritten with the same size inside one tick of
the file system's clock keeps its mtime (ext4 stamps files with a coarse clock, ~4 ms; FAT
and exFAT, the USB sticks CSV files travel on, in 2 s; HFS+ and some NFS servers in 1 s),
and so does any file whose mtime a tool restores (``cp -p``, ``rsync -t``, ``touch -r``):
the same process then replays the OLD values with no word. ``os.utime`` below gives the
second version the first one's mtime, which is what such a clock or tool does; nothing
here depends on timing."""

from __future__ import annotations

import os

from ldpfleet.devices import sources
from ldpfleet.devices.sources import CsvSpec, clear_table_cache, load_table


def _write_same_stamp(path, text: str, stamp: int) -> None:
    path.write_text(text)
    os.utime(path, ns=(stamp, stamp))


def test_an_edit_that_keeps_size_and_mtime_is_read_again(tmp_path):
    path = tmp_path / "readings.csv"
    stamp = 1_700_000_000_123_456_789
    _write_same_stamp(path, "t\n1.5\n2.5\n", stamp)
    clear_table_cache()
    try:
        assert load_table(str(path))[1][:, 0].tolist() == [1.5, 2.5]
        _write_same_stamp(path, "t\n7.5\n8.5\n", stamp)  # same size, same mtime
        assert os.stat(path).st_mtime_ns == stamp
        assert load_table(str(path))[1][:, 0].tolist() == [7.5, 8.5]
    finally:
        clear_table_cache()


def test_a_spec_made_after_the_edit_replays_the_new_values(tmp_path):
    """A second run in one process (a bench loop, a notebook) builds a new spec: it must
    see the file as it is now, not the first run's parse."""
    path = tmp_path / "readings.csv"
    stamp = 1_700_000_000_123_456_789
    _write_same_stamp(path, "t\n1.5\n2.5\n", stamp)
    clear_table_cache()
    try:
        first = CsvSpec(path=str(path), column="t")
        assert sources._spec_table(first)[1][:, 0].tolist() == [1.5, 2.5]
        _write_same_stamp(path, "t\n7.5\n8.5\n", stamp)
        second = CsvSpec(path=str(path), column="t")
        assert sources._spec_table(second)[1][:, 0].tolist() == [7.5, 8.5]
    finally:
        clear_table_cache()
