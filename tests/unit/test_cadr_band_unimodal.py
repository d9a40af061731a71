"""The unimodal-tail reading of the θ search's counts (issue 20, helper C):
``collector.bucket_isotonic.unimodal_tail_counts`` and
``collector.degree_postprocess.unimodal_degree_prior``."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.bucket_denoise import simplex_projection
from ldpfleet.collector.bucket_isotonic import unimodal_tail_counts
from ldpfleet.collector.degree_postprocess import (
    degree_prior,
    post_process,
    unimodal_degree_prior,
)
from ldpfleet.protocol.cadr_theta_noise import noise_sd
from ldpfleet.protocol.errors import ParameterError

# karate club on the fleet (``ldpfleet bench cadr --graph karate-g.dat --transport memory
# --runs 1 --eps 3``, seed 0, 2026-12-05): the DSR releases (device order n0000..n0033),
# θ = 3, ε_dsr = 2.38, D = 33, and the θ search's noisy counts (ε_θ = 0.5, 31 parties).
KARATE_RELEASES = [
    5.66057, 2.359171, 3.778617, 3.352573, 1.414626, 3.048807, 1.434517, -0.20632, 3.660566,
    1.865195, 3.04894, 0.949671, 4.250095, 1.443928, -0.696273, -0.116511, 3.896073,
    -1.973938, 0.674683, 1.687503, -1.735531, -1.306652, -0.997023, 4.70145, -0.064808,
    2.772307, 0.860487, 6.972773, -0.550035, 5.819283, 1.911314, 3.925158, 3.019379, 2.362391,
]  # fmt: skip
KARATE_DEGREES = [
    16, 9, 10, 6, 3, 4, 4, 4, 5, 2, 3, 1, 2, 5, 2, 2, 2, 2, 2, 3, 2, 2, 2, 5, 3, 3, 2, 4, 3, 4,
    4, 6, 12, 17,
]  # fmt: skip
KARATE_SUMS = [7, 7, 15, 4, 1, -2, 5, -5, -11, 2, -2, 3, 2, -11, 3, 15, 3]
KARATE_THRESHOLDS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 18, 22, 26, 32]


def _karate_estimates(prior: np.ndarray) -> np.ndarray:
    return post_process(KARATE_RELEASES, 3, 2.38, prior).estimates


def test_karate_fleet_capped_nodes_follow_a_noise_spike_with_the_projection():
    """The mechanism: the bucket (26, 32] holds 15 (noise, 2.5 sd) and the projection
    keeps it, so the prior's mass at d >= θ = 3 lies mostly at 27-32 and every capped
    node is released at that tail's median, 27."""
    prior = degree_prior(KARATE_SUMS, KARATE_THRESHOLDS, 33, 34)
    assert prior[27:33].sum() > 0.5 * prior[3:].sum()
    estimates = _karate_estimates(prior)
    assert int(np.sum(estimates == 27)) == 14
    assert np.mean(np.abs(estimates - np.array(KARATE_DEGREES))) > 10.0


def test_karate_fleet_unimodal_prior_releases_no_node_above_the_largest_degree():
    """With the unimodal tail the spike is pooled with the empty buckets below it: no
    node goes beyond the largest true degree (17), and the MAE is below all zeros'."""
    prior = unimodal_degree_prior(KARATE_SUMS, KARATE_THRESHOLDS, 33, 34, 0.5, 31)
    estimates = _karate_estimates(prior)
    degrees = np.array(KARATE_DEGREES)
    assert estimates.max() <= degrees.max()
    assert np.mean(np.abs(estimates - degrees)) < np.mean(degrees)  # all zeros: 4.59


def test_noise_free_falling_counts_come_back_exactly():
    counts = np.array([0.0, 5.0, 30.0, 20.0, 10.0, 6.0, 0.0])
    widths = np.array([1, 1, 1, 2, 3, 5, 8])
    out, kept = unimodal_tail_counts(counts, widths, int(counts.sum()), 5.0)
    assert kept
    np.testing.assert_allclose(out, counts)


def test_isolated_high_spike_is_pooled_down():
    """A spike of 2 sds in an empty wide bucket far above the mode: the projection keeps
    it, the falling fit spreads it over the empty buckets below and projects most away."""
    sd = 6.0
    sums = np.array([2.0, 20.0, 9.0, -3.0, 1.0, -4.0, 12.0, -2.0])
    widths = np.array([1, 1, 1, 2, 3, 4, 6, 10])
    n = 30
    out, kept = unimodal_tail_counts(sums, widths, n, sd)
    assert kept
    assert out.sum() == pytest.approx(n)
    assert out[6] < 0.5 * simplex_projection(sums, n)[6]


def test_a_second_mode_far_beyond_the_noise_is_kept():
    """Isolated nodes plus a dense community (a real second mode of 300 devices, 50 sds):
    the falling fit misses by far more than the noise, so the plain projection is kept."""
    sums = np.array([600.0, 5.0, 2.0, 300.0, 3.0])
    widths = np.array([1, 2, 3, 4, 10])
    out, kept = unimodal_tail_counts(sums, widths, 910, 6.0)
    assert not kept
    np.testing.assert_allclose(out, simplex_projection(sums, 910))


def test_the_fit_test_level_is_the_chi_square_quantile():
    """The misfit at which the fit is rejected is the (1 - level) quantile of χ² with one
    degree of freedom per fitted bucket: a violation just inside is kept, just outside not."""
    from scipy.special import chdtri

    sd, widths = 1.0, np.array([1, 1, 1])
    limit = chdtri(3, 1e-3)  # 16.3: three fitted buckets (the mode and the two above)
    # levels (200, 100, 100 + v): the falling fit pools the last two, misfit v²/2
    for v, expected in ((np.sqrt(2 * limit) - 0.01, True), (np.sqrt(2 * limit) + 0.01, False)):
        sums = np.array([200.0, 100.0, 100.0 + v])
        _, kept = unimodal_tail_counts(sums, widths, round(float(sums.sum())), sd)
        assert kept is expected


def test_the_prior_is_a_distribution_over_0_to_D():
    prior = unimodal_degree_prior(KARATE_SUMS, KARATE_THRESHOLDS, 33, 34, 0.5, 31)
    assert prior.shape == (34,)
    assert prior.min() >= 0 and prior.sum() == pytest.approx(1.0)
    assert noise_sd(0.5, 34, 31) > 5  # the counts' sd: the spike of 15 is 2.5 of them


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"widths": [1, 1]}, "widths"),
        ({"widths": [0, 0, 0]}, "widths"),
        ({"widths": [1, -1, 1]}, "widths"),
        ({"noise_sd": 0.0}, "noise_sd"),
        ({"level": 1.0}, "level"),
        ({"devices": 0}, "devices"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    args = {"bucket_sums": [3.0, 2.0, 1.0], "widths": [1, 1, 1], "devices": 6, "noise_sd": 1.0}
    args.update(kwargs)
    with pytest.raises(ParameterError) as err:
        unimodal_tail_counts(**args)
    assert err.value.field == field


def test_counts_with_signal_are_read_as_degree_prior_reads_them():
    """At a count signal ratio of at least UNIMODAL_RATIO_MAX the prior is
    ``degree_prior``'s of the tail-floored sums, spikes above 2 sds included (500 devices:
    ratio 14.7 at ε_θ = 0.5)."""
    from ldpfleet.collector.degree_postprocess import UNIMODAL_RATIO_MAX, count_signal_ratio

    thresholds = [10, 50, 90, 120, 200, 300, 400]
    sums = [0.0, 2.0, 300.0, 180.0, 3.0, 20.0, 1.0, -3.0]
    assert count_signal_ratio(500, len(sums), 0.5, 100) >= UNIMODAL_RATIO_MAX
    shaped = unimodal_degree_prior(sums, thresholds, 499, 500, 0.5, 100)
    # with PER_NODE_TAIL_FLOOR's floor: the buckets above the densest below 2 noise sds
    # (2 x 12.6 here: 3, 20, 1, -3; not 180) hold the floor before the projection (helper F)
    floored = [0.0, 2.0, 300.0, 180.0, 0.1, 0.1, 0.1, 0.1]
    np.testing.assert_array_equal(shaped, degree_prior(floored, thresholds, 499, 500))
    # a mid-size fleet's counts (ratio below 8) with a spike of 3 sds in (200, 300]:
    # the spike is pooled with the empty bucket below it and mostly projected away
    small = [0.0, 2.0, 30.0, 18.0, -1.0, 12.0, 0.0, -3.0]
    assert count_signal_ratio(50, len(small), 0.5, 100) < UNIMODAL_RATIO_MAX
    low = unimodal_degree_prior(small, thresholds, 499, 50, 0.5, 100)
    plain = degree_prior(small, thresholds, 499, 50)
    assert low[201:301].sum() < 0.5 * plain[201:301].sum()


def test_the_gate_value_itself_reads_the_counts_plainly(monkeypatch):
    """The gate is the first ratio that reads the counts as ``degree_prior`` does: a ratio
    equal to ``UNIMODAL_RATIO_MAX`` is plain, one just below takes the unimodal tail
    (docs/cadr-private.md, "The gate's neighbourhood": ratios 4-16 measured)."""
    import ldpfleet.collector.degree_postprocess as dpp

    thresholds = [10, 50, 90, 120, 200, 300, 400]
    small = [0.0, 2.0, 30.0, 18.0, -1.0, 12.0, 0.0, -3.0]  # a spike of 3 sds in (200, 300]
    ratio = dpp.count_signal_ratio(50, len(small), 0.5, 100)
    plain = degree_prior(small, thresholds, 499, 50)
    monkeypatch.setattr(dpp, "UNIMODAL_RATIO_MAX", ratio)
    at_gate = unimodal_degree_prior(small, thresholds, 499, 50, 0.5, 100)
    np.testing.assert_array_equal(at_gate, plain)
    monkeypatch.setattr(dpp, "UNIMODAL_RATIO_MAX", float(np.nextafter(ratio, np.inf)))
    below_gate = unimodal_degree_prior(small, thresholds, 499, 50, 0.5, 100)
    assert below_gate[201:301].sum() < 0.5 * plain[201:301].sum()
