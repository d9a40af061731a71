"""The released histogram reads buckets above the highest significant one as empty (issue
20, helper G; docs/cadr-private.md "Released histogram: noise above the top significant
bucket (2026-12-05, helper G)"); the per-node release is unchanged."""

import numpy as np
import pytest
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.bucket_isotonic import bootstrap_counts, empty_above_significant
from ldpfleet.collector.degree_postprocess import (
    MODE_Z,
    _spread,
    histogram_prior,
    post_process,
    search_priors,
    unimodal_degree_prior,
)
from ldpfleet.protocol.errors import ParameterError


def test_mass_above_the_top_significant_bucket_is_returned_in_proportion():
    sums = [100.0, 300.0, 50.0, 8.0, 12.0]  # sd 5, z 3: buckets 0-2 significant (>= 15)
    counts = [100.0, 300.0, 50.0, 10.0, 40.0]
    got = empty_above_significant(counts, sums, 5.0, 3.0)
    np.testing.assert_allclose(got, [100 * 500 / 450, 300 * 500 / 450, 50 * 500 / 450, 0, 0])
    assert got.sum() == pytest.approx(500.0)


def test_a_significant_top_bucket_keeps_the_counts():
    counts = [100.0, 300.0, 50.0, 10.0, 40.0]
    np.testing.assert_array_equal(
        empty_above_significant(counts, [100.0, 300.0, 50.0, 8.0, 15.0], 5.0, 3.0), counts
    )
    # nothing significant, or no mass left below the top: unchanged
    np.testing.assert_array_equal(empty_above_significant(counts, [1.0] * 5, 5.0, 3.0), counts)
    np.testing.assert_array_equal(
        empty_above_significant([0.0, 0.0, 5.0], [20.0, 0.0, 0.0], 5.0, 3.0), [0.0, 0.0, 5.0]
    )


def test_bad_input_is_refused_naming_the_field():
    with pytest.raises(ParameterError, match="counts"):
        empty_above_significant([1.0, 2.0], [1.0, 2.0, 3.0], 1.0, 3.0)
    with pytest.raises(ParameterError, match="sd"):
        empty_above_significant([1.0, 2.0], [1.0, 2.0], 0.0, 3.0)
    with pytest.raises(ParameterError, match="z"):
        empty_above_significant([1.0, 2.0], [1.0, 2.0], 1.0, -1.0)


def _wide_top():
    """600 devices of degree <= 10; the last bucket (40, 599] empty but its noisy sum
    positive (below 3 sds): the old reading spread it up to degree 599."""
    n, eps, m = 600, 1.0, 5
    ts = [1, 3, 6, 10, 20, 40]
    sd = noise_sd(eps, n, m)
    sums = [100.0, 200.0, 180.0, 120.0, 0.5 * sd, -0.3 * sd, 2.5 * sd]
    return sums, ts, 599, n, eps, m


def test_histogram_prior_puts_no_mass_above_the_top_significant_bucket():
    sums, ts, d, n, eps, m = _wide_top()
    old = _spread(bootstrap_counts(sums, n, eps, m), ts, d, True)
    assert old[41:].sum() > 1e-3  # the noise the rule removes was there
    new = histogram_prior(sums, ts, d, n, eps, m)
    assert new[11:].sum() == 0.0 and new.sum() == pytest.approx(1.0)
    assert MODE_Z == 3.0


def test_the_per_node_release_is_unchanged():
    sums, ts, d, n, eps, m = _wide_top()
    prior, hist = search_priors(sums, ts, d, n, eps, m)
    np.testing.assert_array_equal(prior, unimodal_degree_prior(sums, ts, d, n, eps, m))
    old_hist = _spread(bootstrap_counts(sums, n, eps, m), ts, d, True)
    y = np.random.default_rng(7).laplace(4.0, 6.0, n)
    new, old = post_process(y, 12, 1.0, prior, hist), post_process(y, 12, 1.0, prior, old_hist)
    np.testing.assert_array_equal(new.estimates, old.estimates)
    assert not np.array_equal(new.histogram, old.histogram)
