"""collector.bucket_isotonic.top_significant_bucket: the top significant bucket of the
released histogram's geometric tail, chosen by a scan up from the densest bucket whose
threshold grows with the gap it jumps (issue 20, helper H; docs/cadr-private.md,
"Released histogram: the top significant bucket under multiplicity (helper H)"). Tier 1:
the pure function on hand-made sums."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.collector.bucket_isotonic import geometric_tail_counts, top_significant_bucket
from ldpfleet.protocol.errors import ParameterError

SD = 2.0  # the noise sd of the hand-made sums; at mode_z = 3 a sum of 6 is significant


def _threshold(gap: int) -> float:
    """The sum a bucket ``gap`` buckets above the current g needs (3 + ln(gap)/√2 sds)."""
    return (3.0 + math.log(gap) / math.sqrt(2)) * SD


def test_the_uncorrected_rule_is_the_highest_significant_bucket():
    y = [40, 90, 60, 7, 0, 1, 0, 0, 0, 6.5, 0]
    assert top_significant_bucket(y, SD, mode_z=3.0) == 9
    assert top_significant_bucket(y, SD, mode_z=3.0, gap_corrected=False) == 9


def test_a_contiguous_run_is_taken_at_mode_z_and_a_lone_far_spike_is_not():
    # densest bucket 1; buckets 2, 3 continue the run at >= 6; bucket 9 (gap 6 above 3)
    # at 6.5 is below its threshold 6 + 2 ln(6)/√2 ≈ 8.53
    y = [40, 90, 60, 7, 0, 1, 0, 0, 0, 6.5, 0]
    assert top_significant_bucket(y, SD, mode_z=3.0, gap_corrected=True) == 3


@pytest.mark.parametrize("gap", [2, 3, 6, 20])
def test_a_spike_at_a_gap_needs_the_bonferroni_threshold_for_that_gap(gap):
    y = np.zeros(2 + gap + 3)
    y[0], y[1] = 50.0, 12.0  # densest bucket 0, run to bucket 1
    y[1 + gap] = _threshold(gap) - 1e-9
    assert top_significant_bucket(y, SD, mode_z=3.0, gap_corrected=True) == 1
    y[1 + gap] = _threshold(gap)
    assert top_significant_bucket(y, SD, mode_z=3.0, gap_corrected=True) == 1 + gap


def test_the_scan_moves_on_from_each_accepted_bucket_and_takes_the_lowest_first():
    # run 0-1; bucket 3 (gap 2, needs ≈ 6.98) at 7.5 accepted; from there bucket 4 (gap 1,
    # needs 6) at 6.1 accepted; bucket 8 (gap 4 from 4, needs ≈ 7.96) at 8.0 accepted
    y = [50, 20, 0, 7.5, 6.1, 0, 0, 0, 8.0, 0, 0]
    assert top_significant_bucket(y, SD, mode_z=3.0, gap_corrected=True) == 8
    # the lowest qualifying bucket is taken: from 1, bucket 3 (7.5 >= 6.98) before 4, and
    # from 3 bucket 4 needs only 6: the same end whichever order, here by construction
    y2 = [50, 20, 0, 7.5, 0, 0, 0, 0, 0, 0, 0]
    assert top_significant_bucket(y2, SD, mode_z=3.0, gap_corrected=True) == 3


def test_the_scan_starts_at_the_densest_bucket_not_at_the_first_significant_one():
    # bucket 0 significant, bucket 4 the densest: g starts at 4
    y = [10, 0, 0, 0, 80, 30, 0, 0]
    assert top_significant_bucket(y, SD, mode_z=3.0, gap_corrected=True) == 5
    assert top_significant_bucket(y, SD, mode_z=3.0) == 5


@pytest.mark.parametrize("gap_corrected", [False, True])
def test_no_significant_bucket_gives_none(gap_corrected):
    y = [5.9, 1.0, -3.0, 5.0]
    assert top_significant_bucket(y, SD, mode_z=3.0, gap_corrected=gap_corrected) is None


def test_the_geometric_tail_with_the_corrected_g_moves_a_far_spike_down():
    # B's rule starts above the far spike (bucket 9 at 6.5 >= 6) and keeps it there; the
    # corrected g is bucket 3, so the spike's mass is re-placed on the decay above 3
    y = np.array([40, 90, 60, 7, 3, 1, 0, 0, 0, 6.5, 0], float)
    x = np.maximum(y, 0.0)
    widths = np.ones(y.size)
    old = geometric_tail_counts(y, x, widths, SD, mode_z=3.0)
    new = geometric_tail_counts(y, x, widths, SD, mode_z=3.0, gap_corrected=True)
    np.testing.assert_array_equal(old, x)  # nothing above bucket 9 but an empty bucket 10
    np.testing.assert_array_equal(new[:4], x[:4])
    assert new.sum() == pytest.approx(x.sum())
    assert new[9] < 0.25 * x[9]  # most of the spike moved down to the tail
    assert np.all(np.diff(new[4:]) <= 1e-12)  # the re-placed tail falls


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"noise_sd": 0.0}, "noise_sd"),
        ({"noise_sd": -1.0}, "noise_sd"),
        ({"mode_z": 0.0}, "mode_z"),
        ({"mode_z": math.nan}, "mode_z"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    args = {"noise_sd": SD, "mode_z": 3.0, **kwargs}
    with pytest.raises(ParameterError) as err:
        top_significant_bucket(
            [50, 1, 0], args["noise_sd"], mode_z=args["mode_z"], gap_corrected=True
        )
    assert err.value.field == field


def test_bad_sums_name_the_field():
    with pytest.raises(ParameterError) as err:
        top_significant_bucket([1.0, math.inf], SD, mode_z=3.0, gap_corrected=True)
    assert "bucket_sums" in str(err.value) or err.value.field == "bucket_sums"


def test_histogram_prior_chooses_g_by_the_gap_corrected_scan():
    # fails with B's highest-3σ g: a bulk in buckets 0-3 and a noise spike of 10 in the far
    # bucket 9 (320, 500]: at least 3 noise sds (8.85) but below the 6-bucket jump's
    # (3 + ln 6/√2) sds (12.6), so the spike's mass moves down onto the tail
    from ldpfleet.collector import degree_postprocess as dpp
    from ldpfleet.collector.bucket_denoise import noise_sd
    from ldpfleet.collector.bucket_isotonic import bootstrap_counts

    ts, d, n, eps, m = [1, 3, 6, 10, 20, 40, 80, 160, 320], 500, 400, 1.0, 360
    sums = [90.0, 160.0, 100.0, 50.0, 3.0, -2.0, 1.0, -4.0, 0.0, 10.0]
    sd = noise_sd(eps, n, m)
    assert 3 * sd <= 10.0 < (3 + math.log(6) / math.sqrt(2)) * sd
    boot = bootstrap_counts(sums, n, eps, m)
    widths = np.diff(np.array([-1, *ts, d]))
    # a fleet whose counts carry signal: the released reading caps the re-placed mass too
    # (fitted_mass, docs/preregistration/B-tail-mass-gated.md)
    assert dpp.count_signal_ratio(n, len(sums), eps, m) >= dpp.UNIMODAL_RATIO_MAX
    want = geometric_tail_counts(
        sums, boot, widths, sd, mode_z=dpp.MODE_Z, gap_corrected=True, fitted_mass=True
    )
    highest = geometric_tail_counts(sums, boot, widths, sd, mode_z=dpp.MODE_Z)
    got = dpp.histogram_prior(sums, ts, d, n, eps, m)
    np.testing.assert_allclose(got, dpp._spread(want, ts, d, True), rtol=0, atol=1e-15)
    assert got[321:].sum() < 0.01 < dpp._spread(highest, ts, d, True)[321:].sum()
