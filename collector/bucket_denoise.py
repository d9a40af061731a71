"""Empirical-Bayes denoising of the DP θ search's noisy bucket counts (no extra budget).

The θ search (``protocol.cadr_theta_noise``) opens one noisy count per degree bucket:
``y_j = x_j + Z_j`` with ``x_j`` the true count and ``Z_j`` the secure sum's noise. With
``s`` survivors each adding a Pólya share for ``m = noise_parties`` parties, ``Z_j`` is
``NB(s/m, 1 - a) - NB(s/m, 1 - a)``, ``a = exp(-ε_θ / 2)`` (the two-sided geometric of
ratio ``a`` when ``s = m``; module docstring there). Everything here reads only the
``y_j``, ``n = s``, ``m`` and ``ε_θ``: post-processing, no budget.

Estimator (Robbins' empirical Bayes, "g-modelling": Efron, "Large-Scale Inference", 2010,
ch. 1; the prior estimated by the non-parametric maximum likelihood of Kiefer & Wolfowitz,
Ann. Math. Stat. 1956): treat the ``k + 1`` true counts as draws from an unknown
distribution ``g`` over ``0..n``; estimate ``g`` by EM (``g ← mean_j P(x_j = c | y_j,
g)``, ``ITERATIONS`` steps from the uniform distribution: each keeps ``g`` a distribution
and never lowers the likelihood ``Π_j Σ_c g(c) f(y_j - c)``, ``f`` the noise law above);
then each bucket's count is its posterior mean ``E[x_j | y_j, g]`` and the counts are
scaled to sum to ``n`` (a multiplicative scaling keeps an empty bucket empty, where the
least-squares projection would add the same amount to every bucket).

Why: with ``n`` small against the noise (``K_50``: 17 buckets, noise sd ≈ 6) the least-
squares projection (``degree_postprocess.simplex_projection``) leaves the positive noise
of the empty buckets as spurious prior mass (about 15 % of it on ``K_50``), and posterior
medians follow it. The NPMLE of ``g`` puts most of its mass on the few count levels the
data support (on ``K_50``: 0 and 50), so a bucket whose noisy count is a few noise units
from 0 is read as empty; a count far above the noise is kept almost unchanged
(``E[x | y] ≈ y`` when ``f`` is narrow against the spacing of ``g``'s atoms). Counts close
to each other (within the noise) are pulled together: noise-free sums come back exactly
only when their distinct values are far apart against the noise scale.
"""

from __future__ import annotations

import math

import numpy as np
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.validate import integer_at_least, positive_real

__all__ = ["THRESHOLD_SDS", "denoise_counts", "noise_sd"]

THRESHOLD_SDS = 2.0


def noise_sd(eps_theta: float, survivors: int, parties: int) -> float:
    """The standard deviation of ``NB(s/m, 1 - a) - NB(s/m, 1 - a)``, ``a = exp(-ε_θ /
    2)``: ``sqrt(2 (s/m) a) / (1 - a)`` (a negative binomial ``NB(r, 1 - a)`` counting
    failures has variance ``r a / (1 - a)^2``)."""
    eps = positive_real(eps_theta, "eps_theta")
    s = integer_at_least(survivors, "survivors", 1)
    m = integer_at_least(parties, "parties", 1)
    a = math.exp(-eps / 2)
    return math.sqrt(2 * (s / m) * a) / (1 - a)


def denoise_counts(
    bucket_sums: object,
    devices: int,
    eps_theta: float,
    parties: int,
    *,
    threshold_sds: float = THRESHOLD_SDS,
) -> np.ndarray:
    """The bucket counts (module docstring): the buckets whose noisy count is below
    ``threshold_sds`` noise standard deviations are read as empty, the others projected
    onto ``{x >= 0, Σ x = devices}`` (least squares); all buckets are projected when none
    passes. Non-negative floats summing to ``devices``, a function of the noisy
    ``bucket_sums``, ``devices`` (the survivors whose shares are in the sums),
    ``eps_theta`` and ``parties`` only."""
    from ldpfleet.collector.degree_postprocess import simplex_projection

    n = integer_at_least(devices, "devices", 1)
    k = positive_real(threshold_sds, "threshold_sds")
    y = np.asarray(bucket_sums, dtype=float).reshape(-1)
    if y.size == 0 or not np.all(np.isfinite(y)):
        raise ParameterError(
            f"must be a non-empty array of finite numbers, got {y.size} values",
            field="bucket_sums",
        )
    keep = y >= k * noise_sd(eps_theta, n, parties)
    if not np.any(keep):
        return simplex_projection(y, n)
    out = np.zeros(y.size)
    out[keep] = simplex_projection(y[keep], n)
    return out
