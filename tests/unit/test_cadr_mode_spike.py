"""The unimodal tail's mode must be a significantly occupied bucket (issue 20, helper C2;
docs/cadr-private.md "Mid-size fleets: error rising with ε"): a noise spike in the narrow
last bucket ``(t_k, D]`` (width 1) has the highest count per degree and was taken as the
mode, so the falling fit never reached it and the prior kept it (sbm-80-2x40, ε = 5, seed
22: 7.9 devices at degree 79, five nodes released there, MAE 6.85 against 2.275)."""

from __future__ import annotations

import numpy as np
from ldpfleet.collector.bucket_denoise import noise_sd, simplex_projection
from ldpfleet.collector.bucket_isotonic import unimodal_tail_counts
from ldpfleet.collector.degree_postprocess import MODE_Z, unimodal_degree_prior

# the captured run (scripts/C_rising.py capture band2 22: sbm-80-2x40, ε = 5, seed 22)
THRESHOLDS = [0, 1, 2, 3, 4, 5, 6, 8, 11, 15, 19, 25, 34, 45, 59, 78]
SUMS = [0, 1, 1, 6, 11, 6, 4, 14, 26, 34, 6, 7, 2, 8, 5, -1, 13]
N, D, EPS_THETA, PARTIES = 80, 79, 0.5, 72


def _widths():
    return np.diff(np.array([-1, *THRESHOLDS, D]))


def test_a_spike_in_the_narrow_top_bucket_is_not_the_mode():
    prior = unimodal_degree_prior(SUMS, THRESHOLDS, D, N, EPS_THETA, PARTIES)
    assert prior[THRESHOLDS[-1] + 1 :].sum() * N < 0.5  # was 7.9 devices at degree 79


def test_without_mode_z_the_spike_is_the_mode_and_kept():
    sd = noise_sd(EPS_THETA, N, PARTIES)
    counts, _ = unimodal_tail_counts(SUMS, _widths(), N, sd)
    assert counts[-1] > 7  # the old reading: this test pins what the rule changes


def test_mode_z_changes_nothing_when_the_highest_level_is_significant():
    """A bucket whose sum is at least MODE_Z σ and has the highest level stays the mode:
    the counts are the same as without the rule (bit for bit)."""
    sd = noise_sd(EPS_THETA, N, PARTIES)
    sums = [0, 1, 1, 6, 11, 6, 4, 14, 26, 34, 6, 7, 2, 8, 5, -1, 0]
    a = unimodal_tail_counts(sums, _widths(), N, sd)
    b = unimodal_tail_counts(sums, _widths(), N, sd, mode_z=MODE_Z)
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]


def test_no_significant_bucket_falls_back_to_every_live_bucket():
    sd = noise_sd(EPS_THETA, 20, PARTIES)
    sums = [3, 2, 4, 1, 5, 2, 0, 1, 0, 2, 0, 0, 1, -2, 0, 1, 2]
    a = unimodal_tail_counts(sums, _widths(), 20, sd)
    b = unimodal_tail_counts(sums, _widths(), 20, sd, mode_z=MODE_Z)
    assert np.array_equal(a[0], b[0])


def test_above_the_gate_the_prior_is_still_the_projection():
    sums = [s * 40 for s in SUMS]  # n = 3,200: count signal ratio far above 8
    prior = unimodal_degree_prior(sums, THRESHOLDS, D, 3200, EPS_THETA, PARTIES)
    proj = simplex_projection(np.asarray(sums, dtype=float), 3200)
    assert np.isclose(prior[THRESHOLDS[-1] + 1 :].sum() * 3200, proj[-1])
