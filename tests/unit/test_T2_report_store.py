"""``collector.store.ReportStore`` on its own (helper T2's planted-bug hunt, round 2):
only end-to-end runs on Mosquitto exercised it."""

from __future__ import annotations

import numpy as np
from ldpfleet.collector.store import ReportStore


def test_the_first_accepted_report_of_a_sequence_number_stands(tmp_path):
    """Kills ST1: ``INSERT OR REPLACE``: a second batch with a (device, seq) already stored
    (a retransmission, or a forged one) would overwrite the values the collector
    acknowledged; the store keeps the first."""
    store = ReportStore(tmp_path / "c.sqlite")
    store.persist([("d1", 0, 0, [0.1, 0.2], 1.0)])
    store.persist([("d1", 0, 0, [0.9, 0.9], 2.0)])
    assert store.persisted_keys() == [("d1", 0)]
    np.testing.assert_array_equal(store.device_values()["d1"], [0.1, 0.2])
    store.close()


def test_values_come_back_in_step_order_whatever_the_arrival_order(tmp_path):
    """Kills ST2: the stream assembled by arrival time (``received``) instead of by step
    (``t0``): a retransmitted early batch that arrived last would be read at the end."""
    store = ReportStore(tmp_path / "c.sqlite")
    store.persist([("d1", 1, 2, [0.3, 0.4], 1.0), ("d2", 0, 0, [5.0], 1.5)])
    store.persist([("d1", 2, 4, [0.5], 2.0)])
    store.persist([("d1", 0, 0, [0.1, 0.2], 3.0)])  # the retransmission, last
    streams = store.device_values()
    assert list(streams) == ["d1", "d2"]
    np.testing.assert_array_equal(streams["d1"], [0.1, 0.2, 0.3, 0.4, 0.5])
    np.testing.assert_array_equal(store.device_values(["d2"])["d2"], [5.0])
    store.close()
