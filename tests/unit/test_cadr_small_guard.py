"""The small-fleet guard of the dp post-processing (issue 20, docs/cadr-private.md "Small
graphs: the limit and the guard"): when the θ search's counts carry less than one
device-count of signal (``n < √K · σ``), the per-node release does not read them."""

import numpy as np
import pytest
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.protocol.cadr_theta_noise import bucket_count, bucket_grid
from ldpfleet.protocol.errors import ParameterError


def _florentine_like_run():
    """The shape of florentine's run (n = 15, seed 2, ε = 3): θ = D = 14, ε_θ = 0.5, the
    bucket sums of the θ search with most noise mass in the top bucket, every true degree
    in 1..6 and DSR values around them (fixed numbers, no generator)."""
    degrees = np.array([1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 6, 1])
    n, bound, eps_theta = degrees.size, 14, 0.5
    thresholds = bucket_grid(bound, bucket_count(n, eps_theta))
    sums = [3, 2, -3, -1, 3, -1, -4, 1, 4, 2, -3, -2, -3, 7, 15][: len(thresholds) + 1]
    sums += [0] * (len(thresholds) + 1 - len(sums))
    released = degrees * 0.6 + np.array([0.4, -0.3, 0.2, 0.1, -0.2, 0.3, 0.0, -0.1] * 2)[:n]
    noise = dpp.ThetaNoise(eps_theta=eps_theta, parties=14, buckets=len(thresholds) + 1)
    return degrees, released, sums, thresholds, bound, noise


def test_signal_ratio_is_devices_over_the_summed_noise_sd():
    ratio = dpp.count_signal_ratio(15, 16, 0.5, 14)
    assert ratio == pytest.approx(15 / (4 * noise_sd(0.5, 15, 14)))
    assert ratio < dpp.SIGNAL_RATIO_MIN < dpp.count_signal_ratio(4039, 48, 0.3, 3636)


def test_noisy_counts_of_a_tiny_fleet_are_not_read_per_node():
    """Fails on the old code (no ``theta_noise``): there every node was released at the
    prior's median 14 (MAE 11.3 against 2.7 for all zeros)."""
    degrees, released, sums, thresholds, bound, noise = _florentine_like_run()
    prior = dpp.degree_prior(sums, thresholds, bound, degrees.size)
    theta, eps_dsr = 14, 2.0
    plain = dpp.post_process(released, theta, eps_dsr, prior)
    guarded = dpp.post_process(released, theta, eps_dsr, prior, theta_noise=noise)
    dsr_only = dpp.post_process(released, theta, eps_dsr)
    zero_mae = float(np.mean(degrees))
    assert np.mean(np.abs(plain.estimates - degrees)) > zero_mae  # the catastrophe
    assert not guarded.prior_trusted and plain.prior_trusted
    np.testing.assert_array_equal(guarded.estimates, dsr_only.estimates)
    np.testing.assert_array_equal(guarded.histogram, plain.histogram)  # histogram unchanged
    assert np.mean(np.abs(guarded.estimates - degrees)) < zero_mae


def test_a_fleet_whose_counts_carry_signal_is_released_as_before():
    rng = np.random.default_rng(7)
    degrees = rng.poisson(8, 3000)
    bound, eps_theta = 2999, 0.5
    thresholds = bucket_grid(bound, bucket_count(degrees.size, eps_theta))
    sums = np.bincount(np.searchsorted(thresholds, degrees), minlength=len(thresholds) + 1)
    prior = dpp.degree_prior(sums, thresholds, bound, degrees.size)
    released = np.minimum(degrees, 9) + rng.laplace(0, 9 / 2.0, degrees.size)
    noise = dpp.ThetaNoise(eps_theta, 2700, len(thresholds) + 1)
    plain = dpp.post_process(released, 9, 2.0, prior)
    guarded = dpp.post_process(released, 9, 2.0, prior, theta_noise=noise)
    assert guarded.prior_trusted
    np.testing.assert_array_equal(guarded.estimates, plain.estimates)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"eps_theta": 0.0, "parties": 3, "buckets": 16}, "eps_theta"),
        ({"eps_theta": 0.5, "parties": 0, "buckets": 16}, "parties"),
        ({"eps_theta": 0.5, "parties": 3, "buckets": 1}, "buckets"),
        ({"eps_theta": 0.5, "parties": 3, "buckets": 16, "survivors": 0}, "survivors"),
    ],
)
def test_bad_noise_law_is_a_typed_error_naming_the_field(kwargs, field):
    with pytest.raises(ParameterError) as err:
        dpp.ThetaNoise(**kwargs)
    assert err.value.field == field


def test_theta_noise_needs_a_prior():
    with pytest.raises(ParameterError) as err:
        dpp.post_process([1.0, 2.0], 2, 1.0, theta_noise=dpp.ThetaNoise(0.5, 2, 3))
    assert err.value.field == "theta_noise"


def test_the_survivors_of_the_search_not_the_releases_decide():
    """A fleet's θ search may have had other survivors than the DSR round: the guard
    reads the search's own (the noise and the signal are theirs)."""
    degrees, released, sums, thresholds, bound, noise = _florentine_like_run()
    prior = dpp.degree_prior(sums, thresholds, bound, degrees.size)
    many = dpp.ThetaNoise(noise.eps_theta, 14, noise.buckets, survivors=4000)
    assert dpp.post_process(released, 14, 2.0, prior, theta_noise=many).prior_trusted
