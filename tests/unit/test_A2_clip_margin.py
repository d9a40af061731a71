"""``degree_postprocess.CLIP_MARGIN`` (helper A2, issue 20, claim D9; docs/preregistration/
A2-clip-margin.md): method clip's per-node release leaves the prior's median at a posterior
of 1/2 + 0.02 on one side (every other method keeps ``MARGIN`` = 0.05), so a prior median
that the θ search's noise put one degree off no longer holds the whole fleet on it."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import degree_postprocess as dp


def test_defaults():
    assert dp.CLIP_MARGIN == 0.02
    assert dp.MARGIN == 0.05
    assert dp._margin(1.0) == 0.02  # clip: the kept ratio is known
    assert dp._margin(None) == 0.05  # every other method: estimated
    assert "CLIP_MARGIN" in dp.__all__


def test_none_falls_back_to_margin(monkeypatch):
    monkeypatch.setattr(dp, "CLIP_MARGIN", None)
    assert dp._margin(1.0) == dp.MARGIN


def _prior_off_by_one() -> np.ndarray:
    """A prior over 0..20 whose median is 8 by a hair (CDF at 7: 0.49)."""
    p = np.zeros(21)
    p[4:12] = [0.05, 0.1, 0.14, 0.2, 0.2, 0.14, 0.1, 0.07]
    assert np.cumsum(p)[7] == pytest.approx(0.49)
    assert int(np.searchsorted(np.cumsum(p), 0.5 - 1e-12)) == 8
    return p


def test_clip_moves_a_low_release_off_a_hair_thin_median():
    """A node whose DSR value is well below the prior's median 8, at a Laplace scale that
    moves its posterior CDF at 7 to between 0.52 and 0.55: released at 7 under clip's
    margin, held at 8 under 0.05."""
    p = _prior_off_by_one()
    theta, eps_dsr = 10, 0.5
    scale = theta / eps_dsr
    ys = np.linspace(-30.0, 8.0, 381)
    held = dp.posterior_degree_medians(ys, p, theta, scale, 1.0, 0.05)
    moved = dp.posterior_degree_medians(ys, p, theta, scale, 1.0, 0.02)
    assert np.all(moved <= held)
    assert np.any(moved < held)  # some value is released lower under 0.02 ...
    assert np.all(held[moved < held] == 8)  # ... where 0.05 kept the prior's median


def test_post_process_uses_it_for_clip_only(monkeypatch):
    rng = np.random.default_rng(7)
    p = _prior_off_by_one()
    theta, eps_dsr = 10, 0.5
    y = np.minimum(rng.poisson(7.5, 400), theta) + rng.laplace(0, theta / eps_dsr, 400)
    calls = []
    original = dp.posterior_degree_medians

    def spy(*args):
        calls.append(args[-1])
        return original(*args)

    monkeypatch.setattr(dp, "posterior_degree_medians", spy)
    dp.post_process(y, theta, eps_dsr, p, known_ratio=1.0)
    dp.post_process(y, theta, eps_dsr, p)
    assert calls == [pytest.approx(0.02), pytest.approx(0.05)]
