"""``degree_postprocess.PER_NODE_TAIL_FLOOR_ABOVE_TOP`` (helper E5, issue 20; docs/
preregistration/E5-floor-above-top.md): the per-node prior's tail floor only above the top
significant bucket, so a lone noise spike far above cannot keep its mass while the real
tail's weak buckets below it are floored."""

from __future__ import annotations

import numpy as np
from ldpfleet.collector import degree_postprocess as dp

# plc-400-m6 at ε = 5, run seed 2 (scripts/E5_heldout_graphs.py): the θ search's noisy sums
THRESHOLDS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 13, 16, 21, 27, 34, 44, 56, 72, 91, 117, 149,
              191, 244, 311, 398]  # fmt: skip
SUMS = [6, -7, -2, -7, 1, 4, 101, 68, 60, 60, 47, 23, 27, 2, 9, 9, 4, 7, 0, -1, -10, 30, -5, 2,
        10, 6]  # fmt: skip
N, D, EPS_THETA, PARTIES = 400, 399, 0.5, 360


def _prior(monkeypatch, above_top):
    monkeypatch.setattr(dp, "PER_NODE_TAIL_FLOOR_ABOVE_TOP", above_top)
    return dp.unimodal_degree_prior(SUMS, THRESHOLDS, D, N, EPS_THETA, PARTIES)


def _tail(prior):
    """Devices the prior puts on the real tail (degrees 28-103: the graph's) and in the
    spike's bucket (150-191, where no degree lies)."""
    return N * prior[28:104].sum(), N * prior[150:192].sum()


def test_off_by_default_and_keep_through_keeps_the_buckets_below():
    assert dp.PER_NODE_TAIL_FLOOR_ABOVE_TOP is False
    sums = np.array([3.0, 50.0, 2.0, 40.0, -2.0, 1.0])
    assert dp.tail_floored(sums, 3.0, (2.0, 0.1)).tolist() == [3.0, 50.0, 0.1, 40.0, 0.1, 0.1]
    kept = dp.tail_floored(sums, 3.0, (2.0, 0.1), keep_through=3)
    assert kept.tolist() == [3.0, 50.0, 2.0, 40.0, 0.1, 0.1]


def test_a_lone_spike_no_longer_holds_the_whole_tail(monkeypatch):
    """The run's θ is 27 (its true tail: 24 devices of degree 28-103). With the floor alone
    the spike is all of the prior's tail (the release put those devices at 152-154: MAE
    11.49 against the constant median's 5.15); kept above the top significant bucket, the
    real tail's weak buckets keep their devices (the run's release: 4.70)."""
    assert dp.count_signal_ratio(N, len(SUMS), EPS_THETA, PARTIES) >= dp.UNIMODAL_RATIO_MAX
    real, spike = _tail(_prior(monkeypatch, False))
    assert real < 0.5 and spike > 25
    real, spike = _tail(_prior(monkeypatch, True))
    assert real > 10
