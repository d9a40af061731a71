"""The Piecewise Mechanism (PM) of Wang et al. — theory of operation.

Wang, Xiao, Yang, Zhao, Hui, Shin, Shin and Yu, "Collecting and Analyzing Multidimensional
Data with Local Differential Privacy", ICDE 2019, Algorithm 2. The input ``x`` in [0, 1] is
mapped to ``t = 2x - 1`` in [-1, 1]; with ``e2 = e^(eps/2)``,

    C = (e2 + 1) / (e2 - 1),   l(t) = (C + 1)/2 t - (C - 1)/2,   r(t) = l(t) + C - 1,

the report ``y`` in [-C, C] has density ``p = (e^eps - e2) / (2 e2 + 2)`` on the centre
piece ``[l(t), r(t)]`` (width ``C - 1``, mass ``e2 / (e2 + 1)``) and ``q = p / e^eps`` on
the rest of [-C, C]. The density takes only the values ``p`` and ``q = p e^-eps`` whatever
the input, so the mechanism is pure ``eps``-LDP. ``E[y] = t`` (unbiased; ``(y + 1) / 2``
estimates x) and

    Var[y | t] = t^2 / (e2 - 1) + (e2 + 3) / (3 (e2 - 1)^2)

(Lemma 1 of the paper; a quarter of it on the [0, 1] scale).

Sampling is by inverse CDF with exactly one uniform per input, as ``protocol.sw`` does: the
three pieces [-C, l), [l, r], (r, C] have masses ``q (l + C)``, ``p (C - 1)``, ``q (C - r)``
(floating point: the result is clipped into [-C, C]; no continuous noise beyond the
generator's 53-bit uniforms is needed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from ldpfleet.protocol.mechanism_contract import (
    check_budget,
    checked_report_values,
    unit_inputs,
)

__all__ = ["PiecewiseMechanism", "pm_variance"]


def pm_variance(eps: float, t: np.ndarray) -> np.ndarray:
    """Var[y | t] of the Piecewise Mechanism on the [-1, 1] scale (Lemma 1)."""
    e2m1 = math.expm1(eps / 2.0)
    tt = np.asarray(t, dtype=float)
    return tt**2 / e2m1 + (e2m1 + 4.0) / (3.0 * e2m1**2)


@dataclass(frozen=True)
class PiecewiseMechanism:
    """The Piecewise Mechanism on inputs in [0, 1] (reports in [-C, C])."""

    eps: float
    bound: float = field(init=False, repr=False, compare=False)  # C
    p: float = field(init=False, repr=False, compare=False)
    q: float = field(init=False, repr=False, compare=False)
    output_low: float = field(init=False, repr=False, compare=False)
    output_high: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = check_budget(self.eps)
        e2 = math.exp(eps / 2.0)
        bound = 1.0 / math.tanh(eps / 4.0)  # (e2 + 1) / (e2 - 1)
        p = e2 * math.expm1(eps / 2.0) / (2.0 * (e2 + 1.0))  # (e^eps - e2) / (2 e2 + 2)
        for name, value in (
            ("eps", eps),
            ("bound", bound),
            ("p", p),
            ("q", p * math.exp(-eps)),
            ("output_low", -bound),
            ("output_high", bound),
        ):
            object.__setattr__(self, name, value)

    def centre(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The high-density piece ``[l(t), r(t)]`` for inputs ``x`` in [0, 1]."""
        t = 2.0 * np.asarray(x, dtype=float) - 1.0
        left = (self.bound + 1.0) / 2.0 * t - (self.bound - 1.0) / 2.0
        return left, left + self.bound - 1.0

    def perturb(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Reports in [-C, C], one uniform draw per input (inverse CDF)."""
        arr = unit_inputs(x)
        left, right = self.centre(arr)
        u = rng.random(arr.shape)
        c, p, q = self.bound, self.p, self.q
        below = q * (left + c)
        inside = below + p * (c - 1.0)
        y = np.where(
            u < below,
            -c + u / q,
            np.where(u < inside, left + (u - below) / p, right + (u - inside) / q),
        )
        return np.clip(y, -c, c)

    def in_domain(self, y: np.ndarray) -> np.ndarray:
        """Finite and within [-C, C]."""
        yy = np.asarray(y, dtype=float)
        return np.isfinite(yy) & (np.abs(yy) <= self.bound)

    def density(self, y: np.ndarray, v: float) -> np.ndarray:
        """Output density at ``y`` for input ``v``: p on the centre piece, q elsewhere."""
        left, right = self.centre(np.asarray(v, dtype=float))
        yy = np.asarray(y, dtype=float)
        inside = (yy >= left) & (yy <= right)
        return np.where(self.in_domain(yy), np.where(inside, self.p, self.q), 0.0)

    def estimate(self, y: np.ndarray) -> np.ndarray:
        """Per-report unbiased estimates of x: ``(y + 1) / 2``."""
        return (np.asarray(y, dtype=float) + 1.0) / 2.0

    def estimate_mean(self, y: np.ndarray) -> float:
        """Unbiased estimate of the mean input. ``y``: at least one report, each an output
        of the mechanism (else ``ParameterError`` naming it)."""
        return float(np.mean(self.estimate(checked_report_values(self, y))))

    def variance(self, x: np.ndarray) -> np.ndarray:
        """Variance of one report's estimate of ``x`` (a quarter of Lemma 1's)."""
        return pm_variance(self.eps, 2.0 * np.asarray(x, dtype=float) - 1.0) / 4.0
