"""The wider small-fleet test at ε <= SMALL_EPS_LOW (helper R, issue 20, claim D9;
docs/preregistration/R-small-eps.md): ``SMALL_FLEET_SMALL_EPS_RATIO``. Where it reaches, what
it must leave alone (ego-Facebook, wiki-Vote, every n >= 500 at ε >= 0.5, every ε > 0.5, the
fleets the rule already covered), checked with the switch on, whatever its default."""

from __future__ import annotations

import pytest
from ldpfleet.protocol import cadr_budget as cb

RATIO = 1.8  # the pre-registered constant


def _plan(eps: float, n: int) -> tuple:
    plan = cb.plan_theta("auto-dev", "dp", eps, 0.1, n, n - 1)
    budget = cb.CadrBudget.for_pipeline(eps, 0.1, "dp", plan.searched, n, "clip")
    return plan.rule, plan.chosen_by, budget.theta, budget.dsr


def _both(monkeypatch, eps: float, n: int) -> tuple[tuple, tuple]:
    monkeypatch.setattr(cb, "SMALL_FLEET_SMALL_EPS_RATIO", None)
    off = _plan(eps, n)
    monkeypatch.setattr(cb, "SMALL_FLEET_SMALL_EPS_RATIO", RATIO)
    return off, _plan(eps, n)


def test_the_ratio_is_one_except_at_small_eps_with_the_switch_on(monkeypatch):
    monkeypatch.setattr(cb, "SMALL_FLEET_SMALL_EPS_RATIO", None)
    assert cb.small_fleet_ratio(0.5) == cb.small_fleet_ratio(0.1) == 1.0
    monkeypatch.setattr(cb, "SMALL_FLEET_SMALL_EPS_RATIO", RATIO)
    assert cb.small_fleet_ratio(0.5) == cb.small_fleet_ratio(0.01) == RATIO
    assert cb.small_fleet_ratio(0.5000001) == cb.small_fleet_ratio(0.75) == 1.0


@pytest.mark.parametrize(("eps", "off_last", "on_last"), [(0.5, 27, 51), (0.25, 56, 102)])
def test_with_the_switch_on_the_rule_reaches_further_at_small_eps(
    monkeypatch, eps, off_last, on_last
):
    # D = n - 1; one boundary each, no gaps below it
    for ratio, last in ((None, off_last), (RATIO, on_last)):
        monkeypatch.setattr(cb, "SMALL_FLEET_SMALL_EPS_RATIO", ratio)
        fired = [n for n in range(2, 3 * on_last) if cb.small_fleet_theta(eps, 0.1, n, n - 1)]
        assert fired == list(range(2, last + 1))


@pytest.mark.parametrize("n", [4039, 7115])  # ego-Facebook, wiki-Vote
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 3.0, 5.0])
def test_ego_facebook_and_wiki_vote_are_unchanged(monkeypatch, n, eps):
    off, on = _both(monkeypatch, eps, n)
    assert off == on
    assert on[1] == "search"


def test_no_fleet_of_500_or_more_moves_at_eps_half(monkeypatch):
    # the rule's reach grows as ε falls; ε = 0.5 is the largest ε it acts at
    for n in range(500, 10001, 7):
        off, on = _both(monkeypatch, 0.5, n)
        assert off == on, n


@pytest.mark.parametrize("eps", [0.75, 1.0, 2.0, 3.0, 5.0])
def test_above_eps_half_nothing_moves(monkeypatch, eps):
    for n in range(2, 400):
        off, on = _both(monkeypatch, eps, n)
        assert off == on, n


def test_fleets_already_under_the_rule_keep_its_theta_and_split(monkeypatch):
    for eps in (0.5, 0.25):
        for n in range(2, 57):
            off, on = _both(monkeypatch, eps, n)
            if off[1] == "small-fleet":
                assert on == off, (eps, n)
