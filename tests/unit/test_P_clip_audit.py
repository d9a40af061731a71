"""The ``degree-clip`` audit entry (collector/audit/graph_canaries.py): the star pair that
refutes LPEA at ε, driven through method clip's real ``CadrDevice`` machines, is
inconclusive against ε itself; planted bugs (half the noise scale, the unclipped degree)
are certified above ε. Deterministic: fixed audit seeds."""

from __future__ import annotations

import numpy as np
from ldpfleet.app.audit_cli import BATTERY_NAMES
from ldpfleet.collector.audit.battery import BATTERY, run_audit
from ldpfleet.collector.audit.graph_canaries import (
    GRAPH_BATTERY,
    clip_release,
    construction,
)

from ldpfleet import protocol


def test_degree_clip_is_registered_for_audit_all():
    assert "degree-clip" in GRAPH_BATTERY and "degree-clip" in BATTERY
    assert "degree-clip" in BATTERY_NAMES


def test_the_driver_releases_every_nodes_own_clipped_degree():
    gc = construction("star", leaves=3)  # v = 0 lists 1..3 in D, nobody in D'
    theta = 2
    rng = np.random.default_rng(0)  # eps = 400: noise scale theta / 400
    d = np.rint(clip_release(gc.lists_d, theta, 400.0, rng, degree_bound=3))
    dp = np.rint(clip_release(gc.lists_dprime, theta, 400.0, rng, degree_bound=3))
    assert d.tolist() == [2, 1, 1, 1] and dp.tolist() == [0, 1, 1, 1]  # the leaves keep v


def test_clip_is_inconclusive_against_eps_where_lpea_is_refuted():
    for seed in (1, 3):
        result = run_audit("degree-clip", 1.0, trials=2000, gamma=0.05, seed=seed)
        assert result.verdict == "inconclusive" and result.eps_claimed == 1.0, result


def test_half_the_noise_is_caught(monkeypatch):
    """Planted bug: the device's Laplace scale is θ / (2 ε_dsr): the view is 2ε-node-LDP."""
    real = protocol.dsr.dsr_scale
    monkeypatch.setattr(protocol.dsr, "dsr_scale", lambda theta, eps: real(theta, 2 * eps))
    broken = run_audit("degree-clip", 1.0, trials=2000, gamma=0.05, seed=3)
    assert broken.verdict == "violation" and broken.eps_lb > 1.0, broken


def test_the_unclipped_degree_is_caught(monkeypatch):
    """Planted bug: the device releases its whole degree (8 leaves) instead of min(d, θ)."""
    import ldpfleet.protocol.cadr_device as device

    real = device.dsr_release
    # the module's ``min`` keeps its first argument (the device's ``min(d, θ)`` becomes d;
    # its other uses in this driver are no-ops), and the release adds the right noise to it
    monkeypatch.setattr(device, "min", lambda first, *rest: first, raising=False)
    monkeypatch.setattr(device, "dsr_release", lambda k, t, e, rng: k + real(0, t, e, rng))
    broken = run_audit("degree-clip", 1.0, trials=2000, gamma=0.05, seed=3)
    assert broken.verdict == "violation" and broken.eps_lb > 1.0, broken
