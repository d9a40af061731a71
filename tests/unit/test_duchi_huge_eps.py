"""Duchi's one-bit mechanism (and Hybrid, which uses it) at the package's largest budgets,
now that the cap of 32 is lifted to ``EPS_MAX = 50`` (protocol/duchi.py, module docstring).

Statistical thresholds (fixed seeds). With ``N = 10**6`` reports per input:

* inputs ``x = 0.3``: the count of ``+C`` is ``Binomial(N, P)``, ``P = 1/(e^eps + 1) + 0.3
  tanh(eps/2)`` (``= 0.3`` to 1e-17), compared with ``N P`` in units of ``sqrt(N P (1 -
  P))`` (= 458; the normal approximation is accurate there) at ``|z| <= 5.1``: two-sided
  ``3.4e-7``;
* inputs ``x = 0`` and ``x = 1``: the rare answer (``+C`` for 0, ``-C`` for 1) has
  probability ``L = 1/(e^eps + 1)`` (``4.2e-18`` at 40, ``1.9e-22`` at 50): the test wants
  none in ``N`` reports, which fails with probability ``1 - (1 - L)^N <= N L <= 4.3e-12``.

So a case makes one 3.4e-7 comparison and two of at most 4.3e-12: two cases (40, 50) give a
false-failure rate of ``6.8e-7``, near 1e-6. (A sample cannot see ``L`` itself; that the
coin realises it exactly is what the scripted draws and ``test_exact_coins`` show.)
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol.duchi import DuchiMechanism
from ldpfleet.protocol.hybrid import HybridMechanism
from ldpfleet.protocol.mechanism_contract import EPS_MAX
from ldpfleet.protocol.samplers import rr_lie

from tests.unit.test_exact_coins import _ScriptedGenerator

Z = 5.1  # two-sided 3.4e-7 per comparison (module docstring)
N = 10**6


@pytest.mark.parametrize("eps", [40.0, EPS_MAX])
def test_duchi_law_at_huge_budgets(eps):
    """Refused before (the cap of 32). The honest answers follow the law; the rare ones
    stay out of reach of a sample (module docstring)."""
    mech = DuchiMechanism(eps)
    rng = np.random.default_rng(20261205)
    high = int(np.sum(mech.perturb(np.full(N, 0.3), rng) > 0))
    p = float(mech.prob_high(np.array(0.3)))
    assert abs(high - N * p) <= Z * math.sqrt(N * p * (1.0 - p)), (high, p)
    assert not (mech.perturb(np.zeros(N), rng) > 0).any()
    assert (mech.perturb(np.ones(N), rng) > 0).all()


@pytest.mark.parametrize("eps", [40.0, 49.99, EPS_MAX])
def test_the_rare_answer_is_reachable_and_its_coin_exact(eps):
    """The lie coin runs on the exact rational of ``eps`` (``k / 2**47`` at worst above 32:
    the fractional coin's int64 path) and lies on the draws that realise
    ``Bernoulli(exp(-eps))``; the analysis' ``rare`` is the double of ``1/(e^eps + 1)``."""
    mech = DuchiMechanism(eps)
    assert mech.coin_eps == Fraction(eps) and mech.coin_eps.denominator <= 2**47
    assert rr_lie(_ScriptedGenerator(), mech.coin_eps, 1).tolist() == [True]
    assert mech.rare == pytest.approx(1.0 / (math.exp(eps) + 1.0), rel=1e-12) and mech.rare > 0


@pytest.mark.parametrize("eps", [32.5, 40.0, EPS_MAX])
def test_hybrid_serves_huge_budgets_and_reads_both_branches(eps):
    """Refused before (its Duchi branch's cap). Above eps ~ 38.1 both branches' bounds are
    1.0: Duchi's reports are exactly +-1, PM's midpoints never are, so ``estimate`` still
    tells the branches apart."""
    mech = HybridMechanism(eps)
    x = np.linspace(0.0, 1.0, 257)
    duchi = mech.duchi.perturb(x, np.random.default_rng(4))
    piecewise = mech.piecewise.perturb(x, np.random.default_rng(5))
    assert mech.in_domain(duchi).all() and mech.in_domain(piecewise).all()
    assert not np.isin(np.abs(piecewise), [mech.duchi.bound]).any()
    np.testing.assert_array_equal(mech.estimate(duchi), (duchi + 1.0) / 2.0)
    np.testing.assert_array_equal(mech.estimate(piecewise), mech.piecewise.estimate(piecewise))
