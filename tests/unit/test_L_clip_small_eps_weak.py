"""Clip at small ε limited to fleets whose θ-search counts are weak (protocol.cadr_budget,
``CLIP_SMALL_EPS_MAX_DEVICES``; helper L, issue 20, claim D9): the rule of helper Z
(θ search takes all but ``CLIP_DSR_SHARE`` of ε where ll's split leaves clip's DSR below a
threshold) acts only on fleets of at most ``CLIP_SMALL_EPS_MAX_DEVICES`` devices, so
ego-Facebook (n = 4,039) and wiki-Vote (7,115) never move; the split stays a function of
the public ε, α and n that the plan carries to the devices."""

from __future__ import annotations

import math

import pytest
from ldpfleet.protocol import cadr_budget as cb
from ldpfleet.protocol.cadr_budget import THETA_FRACTION, CadrBudget, clip_theta_extra

LIMIT = 150
EPS_GRID = (0.01, 0.1, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)


@pytest.fixture
def rule_on(monkeypatch):
    monkeypatch.setattr(cb, "CLIP_SMALL_EPS_MAX_DEVICES", LIMIT)


def _clip(eps: float, n: int, method: str = "clip") -> CadrBudget:
    return CadrBudget.for_pipeline(eps, 0.1, "dp", True, n, method)


def _ll_clip_dsr(eps: float, n: int) -> float:
    return eps - _clip(eps, n, "ll").theta


@pytest.mark.parametrize("n", [151, 200, 1000, 3000, 4039, 7115])
def test_the_rule_never_fires_above_the_limit(rule_on, n):
    """ego-Facebook (4,039) and wiki-Vote (7,115) untouched at every ε: clip keeps ll's θ
    part (the split Z's unlimited τ = 1.0 moved at ε = 1: 31.21 -> 32.02)."""
    for eps in EPS_GRID:
        assert _clip(eps, n).theta == _clip(eps, n, "ll").theta


@pytest.mark.parametrize("n", [2, 10, 25, 60, 100, 149, 150])
def test_at_or_below_the_limit_it_fires_exactly_where_lls_clip_dsr_is_below_the_threshold(
    rule_on, n
):
    for eps in EPS_GRID:
        clip = _clip(eps, n)
        assert math.isclose(math.fsum(e for _, e in clip.parts()), eps, rel_tol=1e-12)
        assert clip.dsr > 0 and clip.ndoe == clip.lpea == 0.0
        if _ll_clip_dsr(eps, n) < cb.CLIP_SMALL_EPS_DSR_EPS:
            assert clip.dsr == pytest.approx(cb.CLIP_DSR_SHARE * eps, rel=1e-9)
        else:
            assert clip.theta == _clip(eps, n, "ll").theta


def test_where_it_fires_at_alpha_one_tenth(rule_on):
    """τ = 0.12 on n <= 150: ε 0.5 and 0.75 for every such fleet (ll's clip DSR 0.07 and
    0.105), never from ε = 1 (0.14-0.35) and never above 150 devices."""
    assert cb.CLIP_SMALL_EPS_DSR_EPS == 0.12

    def fires(eps, n):
        return _clip(eps, n).dsr < 0.1 * eps

    assert all(fires(e, n) for e in (0.1, 0.5, 0.75) for n in (25, 80, 150))
    assert not any(fires(e, 151) for e in (0.1, 0.5, 0.75, 1.0, 2.0))
    assert not any(fires(e, n) for e in (1.0, 2.0, 3.0, 5.0) for n in (25, 80, 150))


def test_the_limit_is_inclusive(monkeypatch):
    monkeypatch.setattr(cb, "CLIP_SMALL_EPS_MAX_DEVICES", 80)
    assert _clip(0.75, 80).dsr == pytest.approx(0.05 * 0.75)
    assert _clip(0.75, 81).theta == _clip(0.75, 81, "ll").theta


def test_without_devices_or_with_the_rule_off_clip_keeps_lls_share(monkeypatch):
    eps, alpha = 0.75, 0.1
    extra = cb.theta_extra(eps, alpha, 80)
    assert clip_theta_extra(eps, alpha, extra, 80) == extra  # off by default
    monkeypatch.setattr(cb, "CLIP_SMALL_EPS_MAX_DEVICES", LIMIT)
    assert clip_theta_extra(eps, alpha, extra) == extra  # n unknown: not limited, not on
    fired = 1.0 - cb.CLIP_DSR_SHARE - THETA_FRACTION * alpha
    assert clip_theta_extra(eps, alpha, extra, 80) == fired


def test_the_unlimited_rule_still_overrides(monkeypatch):
    """``CLIP_DSR_USEFUL_EPS`` (Z's rule for every fleet) set: it decides, at any n."""
    monkeypatch.setattr(cb, "CLIP_SMALL_EPS_MAX_DEVICES", LIMIT)
    monkeypatch.setattr(cb, "CLIP_DSR_USEFUL_EPS", 1.0)
    assert _clip(1.0, 4039).dsr == pytest.approx(0.05)


def test_the_plan_carries_the_split(rule_on):
    """A device rebuilds its budget from the plan's theta_fraction and theta_extra."""
    for eps, n in ((0.5, 40), (0.75, 80), (1.0, 150), (0.3, 60), (1.0, 4039)):
        clip = _clip(eps, n)
        device = CadrBudget(eps, 0.1, clip.theta_fraction, clip.theta_extra, negotiation=False)
        assert (device.theta, device.dsr) == (clip.theta, clip.dsr)
        assert 0 < clip.theta_extra < 1 - 0.1


@pytest.mark.parametrize("method", ["ll", "lh", "ra", "er"])
def test_negotiated_methods_do_not_move(monkeypatch, method):
    for eps, n in ((0.5, 30), (0.75, 80), (1.0, 150), (2.0, 60)):
        off = _clip(eps, n, method)
        monkeypatch.setattr(cb, "CLIP_SMALL_EPS_MAX_DEVICES", LIMIT)
        on = _clip(eps, n, method)
        monkeypatch.setattr(cb, "CLIP_SMALL_EPS_MAX_DEVICES", None)
        assert on == off and on.parts() == off.parts()


def test_the_rule_is_off_by_default():
    """Off: it passed its fresh set but failed the confirmation (cells above the constant
    median 23 -> 24; docs/preregistration/L-clip-small-eps-weak-confirm.md)."""
    assert cb.CLIP_SMALL_EPS_MAX_DEVICES is None
    assert _clip(0.75, 60).theta == _clip(0.75, 60, "ll").theta
