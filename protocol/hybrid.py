"""The Hybrid Mechanism (HM) of Wang et al. — theory of operation.

Wang et al., ICDE 2019 (``protocol.piecewise``), Section III-C: with probability ``alpha``
report the Piecewise Mechanism's output, otherwise Duchi et al.'s (``protocol.duchi``),
both at the full ``eps``, where

    alpha = 1 - e^(-eps/2)  if eps > eps*,   else 0,
    eps*  = ln((-5 + 2 (6353 - 405 sqrt(241))^(1/3) + 2 (6353 + 405 sqrt(241))^(1/3)) / 27)
          ~ 0.61,

the choice that minimises the worst-case variance. The coin does not depend on the input
and both branches are pure ``eps``-LDP, so for every output set S
``P(S | t) = alpha P_PM(S | t) + (1 - alpha) P_D(S | t) <= e^eps P(S | t')``: HM is pure
``eps``-LDP. Both branches are unbiased for ``t = 2x - 1``, so HM is, with
``Var = alpha Var_PM(t) + (1 - alpha) Var_D(t)``. A report tells its branch (Duchi's are
exactly ``+-C_D``; PM's are grid midpoints, a different set: a PM midpoint equal to the
double ``C_D`` would need its 31 low mantissa bits zero, and would cost an error ~1e-7), so
``estimate`` applies each branch's own estimator: PM's grid law has the slope ``gain``
(``E[y] = gain t``, within 5e-7 of 1), which ``(y + 1) / 2`` alone would miss by
``alpha (gain - 1) t / 2``. The estimate is unbiased for ``alpha x_PM + (1 - alpha) x``,
``x_PM`` being PM's rounding of ``x`` to ``1 / M`` (``|x_PM - x| <= 2.4e-7``).

Sampling is exact: the coin is "Duchi" with the exact ``Bernoulli(exp(-eps / 2))``
(``samplers.bernoulli_exp`` on the float ``eps``'s rational), so ``P(PM) = alpha`` exactly
(the former ``rng.random() < alpha`` rounded it to a multiple of ``2**-53``); both branches
are exact samplers (``protocol.piecewise``: grid midpoints; ``protocol.duchi``: +-C). Per
input the coin, then both branches are drawn for every input (so the number of draws does
not depend on the data or the coin). ``alpha`` is the float of the coin's probability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from ldpfleet.protocol.duchi import DuchiMechanism
from ldpfleet.protocol.mechanism_contract import (
    check_budget,
    checked_report_values,
    checked_rng,
    unit_inputs,
)
from ldpfleet.protocol.piecewise import PiecewiseMechanism
from ldpfleet.protocol.samplers import bernoulli_exp

__all__ = ["EPS_STAR", "HybridMechanism"]

_ROOT = math.sqrt(241.0)
EPS_STAR = math.log(
    (-5.0 + 2.0 * (6353.0 - 405.0 * _ROOT) ** (1 / 3) + 2.0 * (6353.0 + 405.0 * _ROOT) ** (1 / 3))
    / 27.0
)


@dataclass(frozen=True)
class HybridMechanism:
    """PM with probability alpha, Duchi et al.'s mechanism otherwise (inputs in [0, 1])."""

    eps: float
    alpha: float = field(init=False, repr=False, compare=False)
    piecewise: PiecewiseMechanism = field(init=False, repr=False, compare=False)
    duchi: DuchiMechanism = field(init=False, repr=False, compare=False)
    output_low: float = field(init=False, repr=False, compare=False)
    output_high: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = check_budget(self.eps)
        alpha = -math.expm1(-eps / 2.0) if eps > EPS_STAR else 0.0
        piecewise, duchi = PiecewiseMechanism(eps), DuchiMechanism(eps)
        # PM's range holds Duchi's +-C except above eps ~ 31.9, where PM's grid bound is
        # 1.0 and the double C_Duchi still above it (up to eps ~ 38.1)
        bound = max(piecewise.bound, duchi.bound) if alpha > 0.0 else duchi.bound
        for name, value in (
            ("eps", eps),
            ("alpha", alpha),
            ("piecewise", piecewise),
            ("duchi", duchi),
            ("output_low", -bound),
            ("output_high", bound),
        ):
            object.__setattr__(self, name, value)

    def perturb(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """PM's report where the coin says so (exactly ``alpha = 1 - exp(-eps / 2)``, or
        never when ``alpha`` is 0), Duchi's elsewhere."""
        checked_rng(rng)
        arr = unit_inputs(x)
        if self.alpha > 0.0:
            use_duchi = bernoulli_exp(rng, Fraction(self.eps) / 2, arr.size)
            use_piecewise = ~np.asarray(use_duchi).reshape(arr.shape)
        else:
            use_piecewise = np.zeros(arr.shape, dtype=bool)
        from_piecewise = self.piecewise.perturb(arr, rng)
        from_duchi = self.duchi.perturb(arr, rng)
        out = np.where(use_piecewise, from_piecewise, from_duchi)
        return float(out) if out.ndim == 0 else out  # a scalar in, a float out (as sw)

    def in_domain(self, y: np.ndarray) -> np.ndarray:
        """Within PM's range [-C_PM, C_PM] or +-C_Duchi (C_PM > C_Duchi below eps ~ 31.9,
        where PM's grid bound becomes 1.0); only +-C_Duchi when alpha = 0."""
        if self.alpha == 0.0:
            return self.duchi.in_domain(y)
        return self.piecewise.in_domain(y) | self.duchi.in_domain(y)

    def estimate(self, y: np.ndarray) -> np.ndarray:
        """Per-report unbiased estimates of x, by branch: ``(y + 1) / 2`` for Duchi's +-C,
        PM's own estimate (``(y / gain + 1) / 2``, its grid's slope) for the rest."""
        yy = np.asarray(y, dtype=float)
        duchi = (yy + 1.0) / 2.0
        if self.alpha == 0.0:
            return duchi
        return np.where(np.abs(yy) == self.duchi.bound, duchi, self.piecewise.estimate(yy))

    def estimate_mean(self, y: np.ndarray) -> float:
        """Unbiased estimate of the mean input. ``y``: at least one report, each an output
        of the mechanism (else ``ParameterError`` naming it)."""
        return float(np.mean(self.estimate(checked_report_values(self, y))))

    def variance(self, x: np.ndarray) -> np.ndarray:
        """Variance of one report's estimate of ``x``: the branches' mixed by alpha."""
        return self.alpha * self.piecewise.variance(x) + (1.0 - self.alpha) * self.duchi.variance(x)
