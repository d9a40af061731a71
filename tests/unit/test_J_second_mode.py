"""The released histogram's g raised to the top of a significant stretch
(``collector.bucket_isotonic.second_mode_top``, issue 20, helper J): tier 1, pure
functions on hand-made noisy sums (no noise drawn, no transport)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.bucket_isotonic import (
    TAIL_LEVEL,
    bootstrap_counts,
    geometric_tail_counts,
    second_mode_top,
)
from ldpfleet.protocol.errors import ParameterError

SD = 2.0
K = 16  # buckets 0..15


def _threshold(start: int, g: int, length: int, size: int = K, level: float = TAIL_LEVEL):
    """The docstring's threshold for the stretch of ``length`` from ``start`` above ``g``."""
    k = start - g
    z = math.log(k * (k + 1) * (size - start) / (2 * level)) / math.sqrt(2)
    return z * SD * math.sqrt(length)


def test_a_single_bucket_right_above_g_passes_at_its_threshold_and_not_below():
    t = _threshold(1, 0, 1)
    y = np.zeros(K)
    y[0] = 100.0
    y[1] = t + 1e-9
    assert second_mode_top(y, 0, SD, level=TAIL_LEVEL) == 1
    y[1] = t - 1e-6
    assert second_mode_top(y, 0, SD, level=TAIL_LEVEL) == 0


def test_a_planted_second_mode_of_buckets_each_below_the_single_bucket_thresholds_moves_g():
    # les misérables' shape: a bulk in bucket 1, a second mode in buckets 7-10, each 3.3
    # sds: below H's jump threshold (3 + ln 6/√2 ≈ 4.27 sds) and this scan's single-bucket
    # one, but the four together pass (6.6 sds per √4 against ≈ 5.8); three do not, so the
    # shortest passing stretch from start 7 is 7-10 and g moves to 10
    y = np.zeros(K)
    y[1] = 40.0
    y[7:11] = 3.3 * SD
    assert _threshold(7, 1, 1) > 3.3 * SD and (3 + math.log(6) / math.sqrt(2)) * SD > 3.3 * SD
    assert _threshold(7, 1, 3) > 3 * 3.3 * SD and _threshold(7, 1, 4) <= 4 * 3.3 * SD
    assert second_mode_top(y, 1, SD, level=TAIL_LEVEL) == 10


def test_the_scan_repeats_above_the_new_g():
    y = np.zeros(K)
    y[0] = 100.0
    y[1] = _threshold(1, 0, 1) + 0.1
    y[2] = _threshold(2, 1, 1) + 0.1
    assert second_mode_top(y, 0, SD, level=TAIL_LEVEL) == 2


def test_a_falling_tail_of_noise_size_above_g_leaves_g_and_is_re_placed():
    # a falling tail each bucket well inside the noise: g stays, the geometric tail
    # re-places the counts' tail mass exactly as without the scan
    y = np.array([60.0, 30.0, 2.5, 2.0, 1.5, 1.0, 0.5, 0.0, -1.0, 0.5, 2.0, -0.5])
    widths = np.array([1, 1, 1, 2, 2, 3, 5, 8, 13, 20, 30, 50])
    counts = np.clip(y, 0, None)
    assert second_mode_top(y, 1, SD, level=TAIL_LEVEL) == 1
    with_scan = geometric_tail_counts(y, counts, widths, SD, mode_z=3.0, stretch_level=TAIL_LEVEL)
    without = geometric_tail_counts(y, counts, widths, SD, mode_z=3.0)
    np.testing.assert_array_equal(with_scan, without)
    assert not np.array_equal(with_scan, counts)  # the tail was re-placed


def test_geometric_tail_counts_keeps_a_planted_second_mode_where_the_counts_put_it():
    y = np.zeros(K)
    y[1] = 40.0
    y[7:11] = 3.3 * SD
    y[13] = 1.0  # a little noise above the mode
    counts = np.clip(y, 0, None)
    widths = np.arange(1, K + 1)
    got = geometric_tail_counts(
        y, counts, widths, SD, mode_z=3.0, gap_corrected=True, stretch_level=TAIL_LEVEL
    )
    main = geometric_tail_counts(y, counts, widths, SD, mode_z=3.0, gap_corrected=True)
    np.testing.assert_array_equal(got[:11], counts[:11])  # the mode kept
    assert got.sum() == pytest.approx(counts.sum())
    assert main[7:11].sum() < 0.5 * counts[7:11].sum()  # without the scan: moved down


def test_no_bucket_above_g_and_top_at_the_last_bucket():
    y = np.array([5.0, 1.0, 30.0])
    assert second_mode_top(y, 2, SD, level=TAIL_LEVEL) == 2


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"top": 16}, "top"),
        ({"top": -1}, "top"),
        ({"top": 1.5}, "top"),
        ({"noise_sd": 0.0}, "noise_sd"),
        ({"level": 1.0}, "level"),
        ({"level": 0.0}, "level"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    args = {"top": 0, "noise_sd": SD, "level": TAIL_LEVEL, **kwargs}
    with pytest.raises(ParameterError) as err:
        second_mode_top(np.zeros(K), args["top"], args["noise_sd"], level=args["level"])
    assert err.value.field == field
    assert str(kwargs[field]) in str(err.value)  # the value that came


def test_bad_stretch_level_of_geometric_tail_counts_names_the_field():
    y = np.array([30.0, 1.0, 1.0])
    with pytest.raises(ParameterError) as err:
        geometric_tail_counts(y, y.clip(0), [1, 1, 1], SD, mode_z=3.0, stretch_level=2.0)
    assert err.value.field == "stretch_level"


def test_histogram_prior_raises_g_by_the_stretch_scan():
    # a bulk at degrees 0-1 and a second mode of 4 buckets at 3.5 noise sds each, far
    # from the bulk: H's scan stops at the bulk, the stretch passes, so the released
    # histogram keeps the mode's mass at its degrees (without the scan it moves down)
    ts, d, n, eps, m = list(range(1, 16)), 40, 200, 1.0, 180
    sd = noise_sd(eps, n, m)
    sums = np.zeros(16)
    sums[1] = 200.0 - 4 * 3.5 * sd
    sums[7:11] = 3.5 * sd
    boot = bootstrap_counts(sums, n, eps, m)
    widths = np.diff(np.array([-1, *ts, d]))
    want = geometric_tail_counts(
        sums, boot, widths, sd, mode_z=dpp.MODE_Z, gap_corrected=True, stretch_level=TAIL_LEVEL
    )
    without = geometric_tail_counts(sums, boot, widths, sd, mode_z=dpp.MODE_Z, gap_corrected=True)
    got = dpp.histogram_prior(sums, ts, d, n, eps, m)
    np.testing.assert_allclose(got, dpp._spread(want, ts, d, True), rtol=0, atol=1e-15)
    mode = slice(8, 12)  # buckets 7-10 (width 1) hold degrees 8-11
    assert got[mode].sum() > 0.9 * boot[7:11].sum() / n
    assert dpp._spread(without, ts, d, True)[mode].sum() < 0.5 * got[mode].sum()
