"""scripts/cadr_bucket_location_trace.py: the within-bucket EM of its counterfactuals
(docs/cadr-private.md, "rr-300-d12: a regular graph inside one wide bucket")."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "cadr_bucket_location_trace.py"


def _script():
    spec = importlib.util.spec_from_file_location("cadr_bucket_location_trace", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tent_case():
    """300 nodes of degree 12, θ = 15, releases 12 + Lap(6.3) at the 300 mid-quantiles of
    the Laplace law (no random draw: their mean is exactly 12); the committed prior's
    shape: a tent over the bucket 12..15 (edges -1, 11, 15, 20; D = 20)."""
    u = (np.arange(300) + 0.5) / 300
    y = 12 - 6.3 * np.sign(u - 0.5) * np.log(1 - 2 * np.abs(u - 0.5))
    prior = np.zeros(21)
    prior[12:16] = [0.18, 0.27, 0.29, 0.26]
    return y, prior / prior.sum(), [-1, 11, 15, 20]


def test_within_bucket_em_keeps_every_bucket_mass():
    y, prior, edges = _tent_case()
    q, ratio = _script().within_bucket_em(y, prior, edges, 15, 6.3, lambda q: 1.0)
    assert ratio == 1.0
    assert np.isclose(q.sum(), 1.0)
    for lo, hi in ((0, 11), (12, 15), (16, 20)):
        assert np.isclose(q[lo : hi + 1].sum(), prior[lo : hi + 1].sum())


def test_with_the_true_kept_ratio_the_releases_locate_the_point_mass():
    # deterministic releases whose mean is the true degree (a random draw's mean has sd
    # √2·6.3/√300 = 0.51, the run-to-run spread of docs/cadr-private.md's counterfactuals)
    y, prior, edges = _tent_case()
    q, _ = _script().within_bucket_em(y, prior, edges, 15, 6.3, lambda q: 1.0)
    assert int(np.searchsorted(np.cumsum(q), 0.5 - 1e-12)) == 12
    assert int(np.searchsorted(np.cumsum(prior), 0.5 - 1e-12)) == 14  # the committed median
