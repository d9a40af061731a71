"""The audit's own statistics (collector/audit/stats.py, selection.py, core.py): closed
forms that pin what the existing tests leave free (helper T2's planted-bug hunt, round 2).
A bug here can make every audit pass or every audit fail, so each test names the mutant
it kills."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.collector.audit import audit_samples, select_test
from ldpfleet.collector.audit.stats import eps_lower_bound, largest_eps_lb, runs_to_certify


@pytest.mark.parametrize(("n_d", "n_dprime"), [(500, 2000), (2000, 500), (30, 7)])
def test_largest_eps_lb_uses_each_worlds_own_run_count(n_d, n_dprime):
    """Kills A08: ``largest_eps_lb`` counting D' with ``n_d`` runs (the two worlds' run
    counts swapped or shared). Closed form: every run of D in the event gives
    alpha_lo = (gamma/2)^(1/n_d); none of D' gives beta_hi = 1 - (gamma/2)^(1/n_d')."""
    gamma = 0.05
    level = gamma / 2
    want = math.log(level ** (1 / n_d) / (1 - level ** (1 / n_dprime)))
    assert largest_eps_lb(n_d, n_dprime, gamma=gamma) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("gamma", [0.05, 0.01, 1e-6])
@pytest.mark.parametrize("delta", [0.0, 1e-3])
def test_runs_to_certify_is_the_fewest_runs(gamma, delta):
    """The definition in ``runs_to_certify``'s docstring, checked directly for many claims:
    the answer n certifies the claim and n - 1 does not (an off-by-one in its closed form
    fails here). A06, its downward float correction dropped, survives this test: the
    closed form is already the fewest on every input tried (an equivalent mutant but at
    a float rounding edge)."""
    for eps in np.linspace(0.05, 6.0, 120):
        n = runs_to_certify(float(eps), gamma=gamma, delta=delta)
        assert n is not None
        assert largest_eps_lb(n, n, gamma=gamma, delta=delta) > eps
        assert n == 1 or largest_eps_lb(n - 1, n - 1, gamma=gamma, delta=delta) <= eps


def test_mirrored_claim_is_certified_with_its_complement_counts():
    """Kills S02 (also caught by test_audit.py::test_mirrored_event_is_found, through a
    verdict; this pins the figure): the privacy-direction -1 candidate scored on the
    event's own counts with the worlds swapped, complement forgotten (the evaluation
    then counts the complement).
    D' = all 0, D = half 0 half 1: only the mirrored claim P_D[s > 0] <= e^eps P_D'[s > 0]
    separates when D' is passed first. Auditing the selection samples themselves must
    certify exactly the selection bound, ln(alpha_lo(100 of 200) / beta_hi(0 of 200))."""
    half = np.r_[np.zeros(100), np.ones(100)]
    zeros = np.zeros(200)
    gamma = 0.05
    want = eps_lower_bound(100, 200, 0, 200, gamma=gamma)[0]
    for pair in ((half, zeros), (zeros, half)):
        test = select_test(*pair, gamma=gamma)
        assert test.selection_eps == pytest.approx(want, rel=1e-12)
        res = audit_samples(pair, pair, {"v": lambda y: y}, eps=0.1, gamma=gamma)
        assert res.eps_lb == pytest.approx(want, rel=1e-12)


def test_selection_and_evaluation_count_the_same_event():
    """Kills S01 and S04 (also caught, statistically, by test_audit.py's planted-bug
    battery; this pins them exactly): the selection counting ``s > t`` where the evaluation counts
    ``s >= t`` (or the reverse). On discrete scores the chosen threshold is an observed
    value; the certified counts on the same samples must be the selection's counts, so
    auditing the selection samples themselves reproduces the selection bound."""
    rng = np.random.default_rng(7)
    d = rng.integers(0, 4, 300).astype(float)
    dp = rng.integers(1, 5, 300).astype(float)
    res = audit_samples((d, dp), (d, dp), {"v": lambda y: y}, eps=0.1, gamma=0.05)
    assert res.eps_lb == pytest.approx(res.selection[0].selection_eps, rel=1e-12)


def test_certified_bound_is_at_gamma_whatever_the_selection_level():
    """Kills C03: ``audit_samples`` certifying at ``selection_gamma`` (the level the
    candidates were scored at) instead of ``gamma``. A loose selection level (0.5) must
    not loosen the certificate: the result's bounds are ``eps_lower_bound`` at ``gamma``
    on the result's own counts."""
    rng = np.random.default_rng(3)
    sel = (rng.normal(1.0, 1.0, 400), rng.normal(0.0, 1.0, 400))
    ev = (rng.normal(1.0, 1.0, 400), rng.normal(0.0, 1.0, 400))
    res = audit_samples(sel, ev, {"v": lambda y: y}, eps=0.1, gamma=0.01, selection_gamma=0.5)
    want = eps_lower_bound(
        res.hits_numerator, res.n_numerator, res.hits_denominator, res.n_denominator, gamma=0.01
    )
    assert (res.eps_lb, res.alpha_lo, res.beta_hi) == pytest.approx(want, rel=1e-12)
    assert res.gamma == 0.01


def test_the_most_these_runs_can_certify_is_at_the_audited_delta():
    """Kills C06: ``eps_lb_max`` (the "too few trials" figure) computed at delta = 0 when
    the audit's claim has a delta: a delta lowers what the runs can certify
    (ln((alpha_lo - delta) / beta_hi)), so the figure at 0 overstates the audit's power."""
    sel = (np.ones(300), np.zeros(300))
    res = audit_samples(sel, sel, {"v": lambda y: y}, eps=1.0, gamma=0.05, delta=0.05)
    want = largest_eps_lb(300, 300, gamma=0.05, delta=0.05)
    assert res.eps_lb_max == pytest.approx(want, rel=1e-12)
    assert res.eps_lb_max < largest_eps_lb(300, 300, gamma=0.05) - 0.01
