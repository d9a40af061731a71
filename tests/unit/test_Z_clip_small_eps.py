"""Method clip at small ε (protocol.cadr_budget, "Clip at small ε"; helper Z): where ll's
split would leave clip's DSR less than ``CLIP_DSR_USEFUL_EPS``, the θ search takes all but
``CLIP_DSR_SHARE`` of ε; the budget still sums to ε, DSR stays positive, the plan can carry
the split, and no negotiated method moves."""

from __future__ import annotations

import math

import pytest
from ldpfleet.protocol import cadr_budget as cb
from ldpfleet.protocol.cadr_budget import THETA_FRACTION, CadrBudget, clip_theta_extra

TAU = 0.2


@pytest.fixture
def rule_on(monkeypatch):
    monkeypatch.setattr(cb, "CLIP_DSR_USEFUL_EPS", TAU)


def _ll_dsr_for_clip(eps: float, n: int) -> float:
    ll = CadrBudget.for_pipeline(eps, 0.1, "dp", True, n)
    return eps - ll.theta


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 0.75, 1.0, 2.0, 3.0, 5.0])
@pytest.mark.parametrize("n", [30, 80, 150, 151, 1000, 4039])
def test_clip_budget_sums_to_eps_and_dsr_stays_positive(rule_on, eps, n):
    clip = CadrBudget.for_pipeline(eps, 0.1, "dp", True, n, "clip")
    assert math.isclose(math.fsum(e for _, e in clip.parts()), eps, rel_tol=1e-12)
    assert clip.dsr > 0 and clip.ndoe == clip.lpea == 0.0
    ll_dsr = _ll_dsr_for_clip(eps, n)
    if ll_dsr < TAU:  # the rule fires: DSR keeps CLIP_DSR_SHARE of ε
        assert clip.dsr == pytest.approx(cb.CLIP_DSR_SHARE * eps, rel=1e-9)
        assert clip.theta == pytest.approx((1 - cb.CLIP_DSR_SHARE) * eps, rel=1e-9)
    else:  # unchanged: ll's θ part, DSR the rest
        assert clip.theta == CadrBudget.for_pipeline(eps, 0.1, "dp", True, n).theta
        assert clip.dsr == eps - clip.theta


def test_where_it_fires_at_alpha_one_tenth(rule_on):
    """ε = 0.5: every n; ε = 0.75: 25-150 devices; ε = 1: 25-122 (the weak-count rule's ε_θ
    falls below 0.8 from n = 123); ε >= 2: never (n >= 25)."""

    def fires(eps, n):
        return CadrBudget.for_pipeline(eps, 0.1, "dp", True, n, "clip").dsr < 0.1 * eps

    assert all(fires(0.5, n) for n in (25, 80, 150, 1000, 4039))
    assert fires(0.75, 25) and fires(0.75, 150) and not fires(0.75, 151)
    assert fires(1.0, 25) and fires(1.0, 122) and not fires(1.0, 123)
    assert not fires(1.0, 1000) and not fires(1.0, 4039)
    assert not any(fires(e, n) for e in (2.0, 3.0, 5.0) for n in (25, 80, 150, 1000, 4039))


def test_the_rules_boundary_is_strict(monkeypatch):
    """At τ equal to ll's clip DSR the rule does not fire; one ulp above, it does."""
    eps, alpha = 0.75, 0.1
    extra = cb.theta_extra(eps, alpha, 80)
    dsr = eps - (THETA_FRACTION * alpha + extra) * eps
    monkeypatch.setattr(cb, "CLIP_DSR_USEFUL_EPS", dsr)
    assert clip_theta_extra(eps, alpha, extra) == extra
    monkeypatch.setattr(cb, "CLIP_DSR_USEFUL_EPS", math.nextafter(dsr, math.inf))
    assert clip_theta_extra(eps, alpha, extra) == 1.0 - cb.CLIP_DSR_SHARE - THETA_FRACTION * alpha
    monkeypatch.setattr(cb, "CLIP_DSR_USEFUL_EPS", None)  # off: ll's share always
    assert clip_theta_extra(eps, alpha, extra) == extra


def test_the_plan_carries_the_split(rule_on):
    """A device rebuilds its budget from the plan's theta_fraction and theta_extra
    (protocol.cadr_device): it must equal the collector's, and the extra must fit the
    plan message's bound (< 1 - α)."""
    for eps, n in ((0.5, 40), (0.75, 80), (1.0, 150), (0.5, 4039)):
        clip = CadrBudget.for_pipeline(eps, 0.1, "dp", True, n, "clip")
        device = CadrBudget(eps, 0.1, clip.theta_fraction, clip.theta_extra, negotiation=False)
        assert (device.theta, device.dsr) == (clip.theta, clip.dsr)
        assert 0 < clip.theta_extra < 1 - 0.1


@pytest.mark.parametrize("method", ["ll", "lh", "ra", "er"])
def test_negotiated_methods_do_not_move(rule_on, method, monkeypatch):
    for eps, n in ((0.5, 30), (0.75, 80), (1.0, 150), (3.0, 4039)):
        on = CadrBudget.for_pipeline(eps, 0.1, "dp", True, n, method)
        monkeypatch.setattr(cb, "CLIP_DSR_USEFUL_EPS", None)
        off = CadrBudget.for_pipeline(eps, 0.1, "dp", True, n, method)
        monkeypatch.setattr(cb, "CLIP_DSR_USEFUL_EPS", TAU)
        assert on == off and on.parts() == off.parts()


def test_paper_pipeline_and_a_given_theta_do_not_move(rule_on):
    for searched, pipeline in ((False, "dp"), (True, "paper")):
        clip = CadrBudget.for_pipeline(0.5, 0.1, pipeline, searched, 80, "clip")
        assert clip.theta == 0.0 and clip.dsr == 0.5


def test_the_rule_is_off_by_default_and_ego_facebook_at_eps_1_keeps_lls_split():
    """Off by default: on, at τ = 1.0 (passed on generated graphs), it moved ego-Facebook's
    ε = 1 release onto the prior's median (MAE 31.21 -> 32.02, the constant median's), so
    clip keeps ll's θ part everywhere (docs/cadr-private.md, "Clip at small ε")."""
    assert cb.CLIP_DSR_USEFUL_EPS is None
    for eps, n in ((0.75, 60), (1.0, 4039), (3.0, 4039)):
        clip = CadrBudget.for_pipeline(eps, 0.1, "dp", True, n, "clip")
        assert clip.theta == CadrBudget.for_pipeline(eps, 0.1, "dp", True, n).theta
