"""``degree_postprocess.PER_NODE_TAIL_FLOOR`` (helper F, issue 20; docs/preregistration/
F-tail-floor.md): on by default (its pre-registration passed); the empty tail buckets'
positive noise no longer lowers the per-node prior's CDF at the median (strong counts only)."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import degree_postprocess as dp


def test_on_by_default_and_off_is_the_sums_themselves():
    assert dp.PER_NODE_TAIL_FLOOR == (2.0, 0.1)
    sums = np.array([3.0, 50.0, 40.0, 4.0, -2.0, 9.0])
    assert dp.tail_floored(sums, 3.0, None) is sums


def test_the_floor_touches_only_weak_buckets_above_the_densest():
    sums = np.array([3.0, 50.0, 40.0, 4.0, -2.0, 9.0])
    out = dp.tail_floored(sums, 3.0, (2.0, 0.1))
    # below the densest (index 1) untouched, 40 and 9 are >= 2 sds, 4 and -2 are not
    assert out.tolist() == [3.0, 50.0, 40.0, 0.1, 0.1, 9.0]
    assert sums.tolist() == [3.0, 50.0, 40.0, 4.0, -2.0, 9.0]  # a copy


def _strong_prior(sums, ts, d, n, monkeypatch, rule):
    monkeypatch.setattr(dp, "PER_NODE_TAIL_FLOOR", rule)
    return dp.unimodal_degree_prior(sums, ts, d, n, 0.5, int(0.9 * n))


def test_the_floor_lifts_the_cdf_at_the_median_back(monkeypatch):
    """Exact counts of 1,500 devices on degrees 4..10 (CDF at 7: 0.6) plus the empty tail
    buckets each holding +6 of noise (about one noise sd at ε_θ = 0.5): the projection takes
    their spurious devices from the occupied buckets; the floor does not."""
    d = 1499
    ts = [*range(0, 17), *np.unique(np.geomspace(18, d - 1, 31).astype(int)).tolist()]
    sums = np.zeros(len(ts) + 1)
    occupied = {4: 150, 5: 200, 6: 250, 7: 300, 8: 250, 9: 200, 10: 150}
    for degree, count in occupied.items():
        sums[degree] = count
    sums[17:] = 6.0
    n = int(sum(occupied.values()))
    assert dp.count_signal_ratio(n, sums.size, 0.5, int(0.9 * n)) >= dp.UNIMODAL_RATIO_MAX
    truth = 900 / 1500  # degrees 4..7
    plain = np.cumsum(_strong_prior(sums, ts, d, n, monkeypatch, None))[7]
    floored = np.cumsum(_strong_prior(sums, ts, d, n, monkeypatch, (2.0, 0.1)))[7]
    assert plain < truth - 0.01  # the bias the trial found (0.587 against 0.600)
    assert floored == pytest.approx(truth, abs=0.001)
