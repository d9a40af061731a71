"""Method "clip": the per-node prior as the joint reading with a FREE shape inside each
bucket (issue 20, helper O; ``degree_postprocess.PER_NODE_FREE_SHAPE``,
docs/preregistration/O-free-shape.md): where the per-node prior is the joint reading
(``JOINT_PER_NODE``, ε_dsr >= ``JOINT_PER_NODE_EPS_MIN``) it becomes ``joint_prior(...,
free_shape=True)`` — the Kiefer-Wolfowitz / GMLEB empirical-Bayes prior under the bucket
masses' count term. The histogram's reading is unchanged."""

import numpy as np
import pytest
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.joint_prior import joint_prior
from ldpfleet.protocol.errors import ParameterError

from tests.cadr_fixtures import clip_theta_search, joint_readings


@pytest.mark.parametrize("eps_dsr", [4.0, 0.05])
def test_free_shape_replaces_the_per_node_reading_above_the_gate(monkeypatch, eps_dsr):
    degrees, search, rng = clip_theta_search()
    n, theta = degrees.size, 12
    released = np.minimum(degrees, theta) + rng.laplace(0.0, theta / eps_dsr, n)
    args = (search["bucket_sums"], search["thresholds"], n - 1, n, search["eps"])
    unimodal = dpp.unimodal_degree_prior(*args, search["noise_parties"])
    sd = noise_sd(search["eps"], n, search["noise_parties"])
    monkeypatch.setattr(dpp, "PER_NODE_MEDIAN_TILT_LEVEL", None)  # E6's tilt: its own test
    monkeypatch.setattr(dpp, "JOINT_PER_NODE", True)
    monkeypatch.setattr(dpp, "PER_NODE_FREE_SHAPE", False)
    off_node, off_hist = joint_readings(search, n, released, theta, eps_dsr)
    monkeypatch.setattr(dpp, "PER_NODE_FREE_SHAPE", True)
    on_node, on_hist = joint_readings(search, n, released, theta, eps_dsr)
    np.testing.assert_array_equal(on_hist, off_hist)  # the histogram: unchanged
    ts = search["thresholds"]
    if eps_dsr >= dpp.JOINT_PER_NODE_EPS_MIN:
        steps = dpp.PER_NODE_FREE_SHAPE_ITERATIONS
        want = joint_prior(
            released, theta, eps_dsr, unimodal, ts, n, sd, free_shape=True, iterations=steps
        )
        np.testing.assert_array_equal(on_node, want)
        assert not np.array_equal(on_node, off_node)  # the flag does something here
    else:  # below the gate: the counts' reading, flag or not
        np.testing.assert_array_equal(on_node, unimodal)
        np.testing.assert_array_equal(off_node, unimodal)


def test_free_shape_needs_the_joint_per_node_reading(monkeypatch):
    degrees, search, rng = clip_theta_search()
    n, theta, eps_dsr = degrees.size, 12, 4.0
    released = np.minimum(degrees, theta) + rng.laplace(0.0, theta / eps_dsr, n)
    args = (search["bucket_sums"], search["thresholds"], n - 1, n, search["eps"])
    monkeypatch.setattr(dpp, "JOINT_PER_NODE", False)
    monkeypatch.setattr(dpp, "PER_NODE_FREE_SHAPE", True)
    node, _ = joint_readings(search, n, released, theta, eps_dsr)
    np.testing.assert_array_equal(node, dpp.unimodal_degree_prior(*args, search["noise_parties"]))


def test_free_shape_default_is_pinned():
    """Off until its pre-registered evaluation passes (docs/preregistration/O-free-shape.md)."""
    assert dpp.PER_NODE_FREE_SHAPE is False
    assert dpp.PER_NODE_FREE_SHAPE_ITERATIONS == 10  # the calibrated early stop


def _joint_args():
    degrees, search, rng = clip_theta_search()
    n, theta, eps_dsr = degrees.size, 12, 4.0
    released = np.minimum(degrees, theta) + rng.laplace(0.0, theta / eps_dsr, n)
    args = (search["bucket_sums"], search["thresholds"], n - 1, n, search["eps"])
    unimodal = dpp.unimodal_degree_prior(*args, search["noise_parties"])
    sd = noise_sd(search["eps"], n, search["noise_parties"])
    return (released, theta, eps_dsr, unimodal, search["thresholds"], n, sd)


def test_shape_smoothing_spans_the_free_and_the_kept_shape():
    args = _joint_args()
    kept = joint_prior(*args)
    free = joint_prior(*args, free_shape=True)
    assert not np.array_equal(free, kept)
    np.testing.assert_array_equal(joint_prior(*args, free_shape=True, shape_smoothing=0.0), free)
    np.testing.assert_array_equal(joint_prior(*args, free_shape=True, shape_smoothing=1.0), kept)
    half = joint_prior(*args, free_shape=True, shape_smoothing=0.5)
    assert np.all(half >= 0) and np.isclose(half.sum(), 1.0)
    assert not np.array_equal(half, free) and not np.array_equal(half, kept)


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_shape_smoothing_outside_the_unit_interval_is_refused(bad):
    with pytest.raises(ParameterError) as err:
        joint_prior(*_joint_args(), free_shape=True, shape_smoothing=bad)
    assert err.value.field == "shape_smoothing"
