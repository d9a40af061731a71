"""Gaps found by helper T4's planted-bug hunt in the library's readers
(ldpfleet/outputs.py): ``read_reports`` of a partitioned run reads every partition's store
(``collector-p*.sqlite``), not the first. The test names the mutants it kills."""

from __future__ import annotations

import numpy as np
from ldpfleet.collector.store import ReportStore

from ldpfleet import read_reports


def _store(path, rows):
    store = ReportStore(path)
    store.persist(rows)
    store.close()


def test_a_partitioned_runs_reports_come_from_every_partition(tmp_path):
    """Kills OU2 (only the first partition's store read: half the fleet's reports gone
    without a word), OU7 (the partition stores not looked for: FileNotFoundError on a
    partitioned run's folder) and OU1 (the devices in the order the stores were read, not
    in device order)."""
    _store(tmp_path / "collector-p0.sqlite", [("d0002", 0, 0, [0.5, 0.25], 1.0)])
    _store(tmp_path / "collector-p1.sqlite", [("d0001", 1, 2, [0.75], 1.0),
                                              ("d0001", 0, 0, [0.1, 0.2], 1.0)])  # fmt: skip
    streams = read_reports(tmp_path)
    assert list(streams) == ["d0001", "d0002"]
    np.testing.assert_array_equal(streams["d0001"], [0.1, 0.2, 0.75])
    np.testing.assert_array_equal(streams["d0002"], [0.5, 0.25])
