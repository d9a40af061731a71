"""collector.joint_prior.median_group_tilt (issue 20, claim D9, helper E6;
docs/preregistration/E6-median-tilt.md): the per-node prior's shape inside the θ-search
bucket holding its median, tilted by the DSR values' likelihood when a χ²₁ likelihood-ratio
test says so. Deterministic properties on fixed seeds: an equal-degree fleet inside a wide
bucket is found (the release on its degree, where the reading's assumed shape put it one
off), uninformative releases leave the prior bit-identical, the group's mass and every
other atom are kept, a one-atom group is untouched, the refusals; and the switch's default."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import degree_postprocess as dp
from ldpfleet.collector.joint_prior import median_group_tilt
from ldpfleet.protocol.errors import ParameterError

# buckets 0..6, 7..9, 10..12, 13..15, 16..D (the wide bucket (9, 12] holds θ = 12)
THRESHOLDS = [6, 9, 12, 15]
D = 30
THETA = 12


def _prior() -> np.ndarray:
    """Almost all mass in (9, 12] and above, spread evenly over 10, 11, 12 with a thin
    tail: the shape the reading assumes when the neighbouring buckets are empty."""
    p = np.full(D + 1, 1e-3)
    p[10:13] = 0.3
    return p / p.sum()


def _releases(seed: int, n: int, degree: int, eps_dsr: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.minimum(degree, THETA) + rng.laplace(0.0, THETA / eps_dsr, size=n)


def _atoms(p: np.ndarray) -> np.ndarray:
    return np.append(p[:THETA], p[THETA:].sum())


def test_equal_degrees_inside_a_wide_bucket_are_found():
    # 1,000 devices all of degree 10, ε_dsr = 4.5 (b = 2.67): the kept shape releases every
    # device at 11 (MAE 1); the tilt puts the median, and every release, on 10
    y = _releases(7, 1000, 10, 4.5)
    p = _prior()
    b = THETA / 4.5
    before = dp.posterior_degree_medians(y, p, THETA, b, 1.0, dp.CLIP_MARGIN)
    after = dp.posterior_degree_medians(
        y, median_group_tilt(y, THETA, 4.5, p, THRESHOLDS, 0.05), THETA, b, 1.0, dp.CLIP_MARGIN
    )
    assert np.mean(np.abs(before - 10)) >= 0.9  # the rule's target: without it, one off
    assert np.mean(np.abs(after - 10)) == 0.0


def test_uninformative_releases_keep_the_prior():
    # ε_dsr = 1e-4: the releases' likelihood is flat in λ, the statistic far below 3.84
    y = _releases(3, 500, 10, 1e-4)
    p = _prior()
    # (the prior comes back re-normalised: equal to the last bits)
    np.testing.assert_allclose(
        median_group_tilt(y, THETA, 1e-4, p, THRESHOLDS, 0.05), p, rtol=1e-12
    )


def test_the_groups_mass_and_every_other_atom_are_kept():
    y = _releases(11, 1000, 10, 4.5)
    p = _prior()
    q = median_group_tilt(y, THETA, 4.5, p, THRESHOLDS, 0.05)
    assert not np.array_equal(q, p)
    assert np.isclose(q.sum(), 1.0) and np.all(q >= 0)
    a, b = _atoms(p), _atoms(q)
    group = np.arange(THETA + 1) >= 10  # the cell of θ's bucket: atoms 10, 11 and >= 12
    assert np.isclose(a[group].sum(), b[group].sum())
    np.testing.assert_allclose(a[~group], b[~group])
    # the >= θ atom's split over θ..D is the prior's
    np.testing.assert_allclose(q[THETA:] / q[THETA:].sum(), p[THETA:] / p[THETA:].sum())


def test_a_one_atom_group_is_untouched():
    # median in bucket 0..6 made of one degree: thresholds with width-1 buckets there
    p = np.full(D + 1, 1e-3)
    p[3] = 0.9
    p /= p.sum()
    y = _releases(5, 500, 4, 4.5)
    q = median_group_tilt(y, THETA, 4.5, p, [2, 3, 9, 12], 0.05)
    np.testing.assert_allclose(q, p, rtol=1e-12)


@pytest.mark.parametrize("level", [0.0, 1.0, -0.1, 2.0])
def test_a_level_outside_the_unit_interval_is_refused(level):
    y = _releases(1, 50, 10, 1.0)
    with pytest.raises(ParameterError) as err:
        median_group_tilt(y, THETA, 1.0, _prior(), THRESHOLDS, level)
    assert err.value.field == "level"


def test_the_switch_is_on_at_the_registered_level():
    assert dp.PER_NODE_MEDIAN_TILT_LEVEL == 0.05


def test_search_priors_apply_the_tilt_to_the_per_node_prior_only(monkeypatch):
    # the dp pipeline's call site: the equal-degree fleet's per-node prior tilted onto 10,
    # the histogram's reading identical with the switch off and on
    rng = np.random.default_rng(2)
    n, eps_dsr, eps_theta = 1000, 4.5, 0.5
    ts = [0, 1, 2, 3, 4, 5, 6, 9, 12, 16, 22]
    sums = np.zeros(len(ts) + 1)
    sums[8] = n  # every device in (9, 12]
    sums += rng.normal(0.0, dp.noise_sd(eps_theta, n, 1), size=sums.size)
    y = _releases(9, n, 10, eps_dsr)
    args = (sums, ts, 40, n, eps_theta, 1)
    on = dp.search_priors(*args, exact_releases=(y, THETA, eps_dsr))
    monkeypatch.setattr(dp, "PER_NODE_MEDIAN_TILT_LEVEL", None)
    off = dp.search_priors(*args, exact_releases=(y, THETA, eps_dsr))
    np.testing.assert_array_equal(on[1], off[1])
    b = THETA / eps_dsr
    est_on = dp.posterior_degree_medians(y, on[0], THETA, b, 1.0, dp.CLIP_MARGIN)
    est_off = dp.posterior_degree_medians(y, off[0], THETA, b, 1.0, dp.CLIP_MARGIN)
    assert np.mean(np.abs(est_off - 10)) > 0.5  # the assumed shape: off the true degree
    assert np.mean(np.abs(est_on - 10)) == 0.0
