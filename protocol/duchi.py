"""Duchi et al.'s one-bit mechanism for a value in [-1, 1] — theory of operation.

Duchi, Jordan and Wainwright ("Minimax Optimal Procedures for Locally Private Estimation",
JASA 2018), in the one-dimensional form Wang et al. (ICDE 2019, Algorithm 1) compare
against. The input ``x`` in [0, 1] is mapped to ``t = 2x - 1`` in [-1, 1]; with

    C = (e^eps + 1) / (e^eps - 1)        (= coth(eps / 2))

the report is ``+C`` with probability ``1/2 + t / (2C)`` and ``-C`` otherwise. The two
inputs ``t = 1`` and ``t = -1`` give the extreme odds ``e^eps / (e^eps + 1)`` against
``1 / (e^eps + 1)``, so the mechanism is pure ``eps``-LDP. ``E[y] = C (2 P(+C) - 1) = t``:
the report is unbiased for ``t``, and ``(y + 1) / 2`` for ``x``, with variance
``(C^2 - t^2) / 4`` per report on the [0, 1] scale.

Sampling is exact: ``P(+C) = x e^eps / (e^eps + 1) + (1 - x) / (e^eps + 1)``, i.e. draw the
bit ``Bernoulli(x)`` (``samplers.bernoulli_float``: exact for the double ``x``) and answer it
through Warner randomized response (``samplers.rr_lie``: the lie coin
``Bernoulli(1 / (e^eps + 1))`` exactly, for the rational of the float ``eps``). The former
``rng.random() < P(+C)`` rounded the rare answer's probability to a multiple of ``2**-53``:
0 above ``eps ~ 36.7`` (an infinite privacy loss), hence a cap of 32 until the coin was exact.

Every ``eps`` up to the package's ``EPS_MAX = 50`` is served. The lie coin never forms the
probability ``1 / (e^50 + 1) ~ 1.9e-22`` as a number: it takes ``eps`` as its exact rational
(a double in (32, 50] is ``k / 2**47`` at worst) and draws ``Bernoulli(exp(-eps))`` as
``floor(eps)`` coins ``Bernoulli(exp(-1))`` and one ``Bernoulli(exp(-frac))`` (CKS Alg. 1),
each from bounded uniform integers (``rng.integers(0, den * k) < num``, ``den <= 2**47``:
the int64 path, ``den * k`` below ``2**62`` until ``k ~ 2**15``, probability ``1 / k!``):
``P(lie) = e^-eps / (1 + e^-eps)`` exactly, and the answer ratio of inputs 1 and 0 is
``(1 - L) / L = e^eps`` exactly. Above ``eps ~ 38.1`` the double ``C`` rounds to 1.0: the
reports are +-1, still two distinct outputs; the estimate ``(y + 1) / 2`` is then off by
at most ``(C - 1) / 2 < 1e-16`` (an ``e^-eps`` bias, below the double's resolution of x).
``rare`` and ``prob_high`` remain for the analysis (doubles: ``rare`` is ``1.9e-22`` at 50,
no underflow).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from ldpfleet.protocol.mechanism_contract import (
    check_budget,
    checked_report_values,
    checked_rng,
    report_floats,
    unit_inputs,
)
from ldpfleet.protocol.samplers import bernoulli_float, rr_lie

__all__ = ["DuchiMechanism"]

_TOLERANCE = 1e-12  # relative: a report must be +-C up to float rounding


@dataclass(frozen=True)
class DuchiMechanism:
    """Duchi et al.'s one-bit mechanism on inputs in [0, 1] (reports are +-C)."""

    eps: float
    bound: float = field(init=False, repr=False, compare=False)  # C
    rare: float = field(init=False, repr=False, compare=False)  # 1 / (e^eps + 1)
    coin_eps: Fraction = field(init=False, repr=False, compare=False)  # the lie coin's eps
    output_low: float = field(init=False, repr=False, compare=False)
    output_high: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = check_budget(self.eps)  # every eps <= EPS_MAX (module docstring)
        bound = 1.0 / math.tanh(eps / 2.0)
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "bound", bound)
        object.__setattr__(self, "rare", 1.0 / (math.exp(eps) + 1.0))
        object.__setattr__(self, "coin_eps", Fraction(eps))
        object.__setattr__(self, "output_low", -bound)
        object.__setattr__(self, "output_high", bound)

    def prob_high(self, x: np.ndarray) -> np.ndarray:
        """P(report = +C) for inputs ``x`` in [0, 1]: ``1/(e^eps + 1) + x / C`` (``1/C =
        tanh(eps/2)``; ``= 1/2 + t/(2C)``, the rare answer without cancellation)."""
        return self.rare + np.asarray(x, dtype=float) / self.bound

    def perturb(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Reports +-C: the exact coin ``Bernoulli(x)`` answered through exact randomized
        response (module docstring)."""
        checked_rng(rng)
        arr = unit_inputs(x)
        bit = bernoulli_float(rng, arr)
        lie = rr_lie(rng, self.coin_eps, bit.size).reshape(bit.shape)
        out = np.where(bit != lie, self.bound, -self.bound)
        return float(out) if out.ndim == 0 else out  # a scalar in, a float out (as sw)

    def in_domain(self, y: np.ndarray) -> np.ndarray:
        """Finite and equal to +C or -C (up to float rounding)."""
        yy = report_floats(y)
        close = np.abs(np.abs(yy) - self.bound) <= _TOLERANCE * self.bound
        return np.isfinite(yy) & close

    def estimate(self, y: np.ndarray) -> np.ndarray:
        """Per-report unbiased estimates of x: ``(y + 1) / 2``."""
        return (np.asarray(y, dtype=float) + 1.0) / 2.0

    def estimate_mean(self, y: np.ndarray) -> float:
        """Unbiased estimate of the mean input. ``y``: at least one report, each an output
        of the mechanism (else ``ParameterError`` naming it)."""
        return float(np.mean(self.estimate(checked_report_values(self, y))))

    def variance(self, x: np.ndarray) -> np.ndarray:
        """Variance of one report's estimate given input ``x``: ``(C^2 - t^2) / 4``."""
        t = 2.0 * np.asarray(x, dtype=float) - 1.0
        return (self.bound**2 - t**2) / 4.0
