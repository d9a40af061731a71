"""collector.joint_prior: the joint likelihood of the θ search's counts (through their
reading) and the DSR values of method "clip" (issue 20, helper T). Deterministic
properties only: a distribution, a never-lowered objective, the two limits (uninformative
releases keep the reading's bucket masses; exact releases with weak counts find the true
ones), one cell, determinism, the refusals."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.joint_prior import joint_prior, joint_search_priors
from ldpfleet.protocol.errors import ParameterError

THRESHOLDS = [1, 3, 7, 15, 31]  # buckets 0..1, 2..3, 4..7, 8..15, 16..31, 32..D
D = 60


def _masses(p: np.ndarray, thresholds: list[int] = THRESHOLDS) -> np.ndarray:
    bucket = np.searchsorted(np.array(thresholds), np.arange(p.size), side="left")
    return np.bincount(bucket, weights=p, minlength=len(thresholds) + 1)


def _reading(masses: list[float]) -> np.ndarray:
    """A distribution over 0..D, each bucket's mass spread evenly over its degrees."""
    bucket = np.searchsorted(np.array(THRESHOLDS), np.arange(D + 1), side="left")
    width = np.bincount(bucket)
    r = np.asarray(masses, dtype=float)[bucket] / width[bucket]
    return r / r.sum()


def _fleet(seed: int, n: int, theta: int, b: float) -> tuple[np.ndarray, np.ndarray]:
    """True degrees (two modes) and their clip releases min(d, θ) + Lap(b)."""
    rng = np.random.default_rng(seed)
    d = np.concatenate([rng.integers(2, 6, size=n // 2), rng.integers(10, 40, size=n - n // 2)])
    return d, np.minimum(d, theta) + rng.laplace(0.0, b, size=n)


def _objective(y, p, theta, b, reading, n, sigma):
    """F(p) of the module docstring: the releases' log-likelihood minus the count term."""
    k = np.minimum(np.arange(p.size), theta)
    lik = np.exp(-np.abs(y[:, None] - k[None, :]) / b) @ p
    penalty = n * n * np.sum((_masses(p) - _masses(reading)) ** 2) / (2 * sigma**2)
    return float(np.sum(np.log(lik)) - penalty)


def test_every_step_keeps_a_distribution_and_never_lowers_the_objective():
    theta, eps_dsr, n, sigma = 20, 1.0, 400, 15.0
    _, y = _fleet(1, n, theta, theta / eps_dsr)
    reading = _reading([0.1, 0.1, 0.3, 0.2, 0.2, 0.1])
    previous = -np.inf
    for steps in (0, 1, 2, 5, 20, 100):
        p = joint_prior(y, theta, eps_dsr, reading, THRESHOLDS, n, sigma, iterations=steps)
        assert p.shape == (D + 1,) and np.all(p >= 0)
        assert p.sum() == pytest.approx(1.0, abs=1e-12)
        f = _objective(y, p, theta, theta / eps_dsr, reading, n, sigma)
        assert f >= previous - 1e-7 * abs(f)
        previous = f


def test_uninformative_releases_keep_the_reading_bucket_masses():
    # b = θ / 1e-9: every release has the same likelihood under every degree
    _, y = _fleet(2, 300, 20, 5.0)
    reading = _reading([0.05, 0.2, 0.4, 0.15, 0.15, 0.05])
    p = joint_prior(y, 20, 1e-9, reading, THRESHOLDS, 300, 10.0)
    assert np.allclose(_masses(p), _masses(reading), atol=1e-9)
    # θ's bucket (16..31) and the ones above keep the reading's shape exactly
    assert np.allclose(p[16:] / p[16:].sum(), reading[16:] / reading[16:].sum(), atol=1e-12)


def test_exact_releases_and_weak_counts_find_the_true_bucket_masses():
    theta, n = 20, 1000
    d, _ = _fleet(3, n, theta, 1.0)
    y = np.minimum(d, theta).astype(float)  # the noise-free limit of the releases
    reading = _reading([0.3, 0.3, 0.1, 0.1, 0.1, 0.1])  # wrong bucket masses
    p = joint_prior(y, theta, 1e6, reading, THRESHOLDS, n, 1e7)
    truth = _masses(np.bincount(d, minlength=D + 1) / n)
    got = _masses(p)
    # buckets below θ's bucket (0..15): their true masses; θ's bucket and above: their sum
    assert np.allclose(got[:4], truth[:4], atol=1e-6)
    assert got[4:].sum() == pytest.approx(truth[4:].sum(), abs=1e-6)


def test_strong_counts_overrule_the_releases():
    # sigma tiny: the count term pins every bucket mass to the reading's
    _, y = _fleet(4, 500, 20, 2.0)
    reading = _reading([0.3, 0.3, 0.1, 0.1, 0.1, 0.1])
    p = joint_prior(y, 20, 10.0, reading, THRESHOLDS, 500, 1e-6)
    assert np.allclose(_masses(p), _masses(reading), atol=1e-6)


def test_the_releases_raise_buckets_the_reading_left_empty():
    # the reading erased the mode at 10..39 (buckets 8..15, 16..31 and θ's, 32..D); weak
    # counts, informative releases: the joint reading puts the mode's mass back (true 1/2;
    # 0.502 when written)
    theta, n = 40, 2000
    _, y = _fleet(5, n, theta, 1.0)
    reading = _reading([0.3, 0.6, 0.1, 0.0, 0.0, 0.0])
    p = joint_prior(y, theta, theta / 1.0, reading, THRESHOLDS, n, 1e4)
    assert _masses(p)[3:].sum() > 0.4
    assert _masses(p)[5] > 0.1  # θ's bucket too (true 0.141), empty in the reading


def test_theta_in_the_first_bucket_returns_the_reading():
    _, y = _fleet(6, 100, 1, 1.0)
    reading = _reading([0.2, 0.2, 0.2, 0.2, 0.1, 0.1])
    got = joint_prior(y, 1, 1.0, reading, THRESHOLDS, 100, 5.0)
    np.testing.assert_allclose(got, reading, rtol=1e-12, atol=0)


def test_deterministic_and_search_priors_default_to_the_histogram_only():
    _, y = _fleet(7, 300, 20, 10.0)
    node, hist = _reading([0.1, 0.2, 0.3, 0.2, 0.1, 0.1]), _reading([0.2] * 5 + [0.0])
    a = joint_search_priors(y, 20, 2.0, (node, hist), THRESHOLDS, 300, 8.0)
    b = joint_search_priors(y, 20, 2.0, (node, hist), THRESHOLDS, 300, 8.0)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert a[0] is node  # the per-node prior is unchanged unless asked
    assert np.array_equal(a[1], joint_prior(y, 20, 2.0, hist, THRESHOLDS, 300, 8.0))
    both = joint_search_priors(y, 20, 2.0, (node, hist), THRESHOLDS, 300, 8.0, per_node=True)
    assert np.array_equal(both[0], joint_prior(y, 20, 2.0, node, THRESHOLDS, 300, 8.0))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"released": [1.0, float("nan")]}, "released[1]"),  # the first bad entry
        ({"released": []}, "released"),
        ({"reading": np.full(D + 1, 0.5)}, "reading"),
        ({"thresholds": [3, 1]}, "thresholds"),
        ({"thresholds": [1, 3, 7, 15, 31, 99]}, "thresholds"),
        ({"sigma": 0.0}, "sigma"),
        ({"eps_dsr": -1.0}, "eps_dsr"),
        ({"theta": 0}, "theta"),
    ],
)
def test_refuses_bad_input_naming_the_field(kwargs, field):
    args = {
        "released": [1.0, 2.0],
        "theta": 5,
        "eps_dsr": 1.0,
        "reading": _reading([1, 1, 1, 1, 1, 1]),
        "thresholds": THRESHOLDS,
        "devices": 2,
        "sigma": 1.0,
    } | kwargs
    with pytest.raises(ParameterError) as err:
        joint_prior(**args)
    assert err.value.field == field
    assert err.value.limit is not None
