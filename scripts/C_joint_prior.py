"""EXPERIMENT (did not work; not used by any pipeline): the per-node prior re-weighted by
the DSR releases and the θ search's counts jointly. Measured by ``scripts/C_rising.py``
(reading ``joint``) and docs/cadr-private.md "Mid-size fleets: error rising with ε":
no better than main on the calibration sets, because ``r`` and the mass at the cap are
nearly interchangeable in the releases' likelihood (a heavy tail at ``r θ`` looks like
nodes of degree ``r θ``). Knobs for that measurement: ``ANCHOR`` (``"prior"``: the counts'
term is centred on the prior's own bucket masses; ``"counts"``: on the raw noisy sums)
and ``R_OVERRIDE`` (a fixed r: the oracle with the true r).

Theory of operation (issue 20, helper C2; docs/cadr-private.md "Mid-size fleets: error
rising with ε"). The dp pipeline's per-node release is the posterior median of the true
degree ``d`` given ``y_i = k_i + Lap(b)`` under a prior read from the θ search's noisy
bucket counts alone (``degree_postprocess.unimodal_degree_prior``) and the model ``k ≈ r
min(d, θ)`` with ``r = mean(y) / E_prior[min(d, θ)]``. On fleets of 24-150 devices those
counts carry noise of sd σ ≈ 6 per bucket against a few devices per bucket: positive noise
in empty high buckets survives (a heavy flat tail, within the noise of a falling one), so
``E_prior[min(d, θ)]`` is too large, ``r`` too small, and every node's ``y_i / r`` lands
too high; the nodes near the cap go to the heavy tail. At small ε the releases are flat
and the margin keeps every node at the prior's median, so this costs nothing; at large ε
the nodes follow their releases through the wrong ``r`` and prior and the error RISES
with ε (oracles: the true prior removes the excess).

The releases themselves say how the fleet's mass lies below θ: ``n`` values with Laplace
scale ``b = θ / ε_dsr``. Here the bucket masses ``q_j`` (the prior's shape inside each
bucket kept) maximise the joint log-likelihood of both public releases,

    Σ_i log Σ_j q_j A_ij(r)  -  Σ_j (s_j - n q_j)² / (2 σ²),

``A_ij(r) = Σ_{d in bucket j} w_d Lap(y_i - r min(d, θ); b)`` (``w`` the prior's
within-bucket shape), the counts' noise taken as Gaussian of the public sd σ (the
projection ``degree_prior`` starts from is that term alone, over the simplex). ``r`` is
re-read from the current prior by the same moment equation (``kept_ratio``), alternating
``ROUNDS`` times. When the releases carry little information (``b`` large) their term is
flat and the counts' term decides; when they carry much, they overrule a count that is
within its noise. Inputs: the releases, θ, ε_dsr, the counts, thresholds, D, n, ε_θ and
the noise parties: post-processing, no budget. Applied only below
``degree_postprocess.UNIMODAL_RATIO_MAX`` (``count_signal_ratio``); above it the prior is
returned unchanged (bit-identical runs).
"""

from __future__ import annotations

import numpy as np
from ldpfleet.collector.bucket_denoise import noise_sd
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

__all__ = ["ROUNDS", "joint_prior"]

ROUNDS = 4
ANCHOR = "prior"
R_OVERRIDE = None


def _shape(prior: np.ndarray, bucket: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-degree weight inside its bucket (the prior's shape; uniform in an empty bucket)
    and the prior's bucket masses."""
    mass = np.bincount(bucket, weights=prior, minlength=k)
    size = np.bincount(bucket, minlength=k).astype(float)
    w = np.where(mass[bucket] > 0, prior / np.where(mass[bucket] > 0, mass[bucket], 1), 0.0)
    w = np.where(mass[bucket] > 0, w, 1.0 / size[bucket])
    return w, mass


def _log_a(y, w, bucket, k, theta, scale, r) -> np.ndarray:
    """``log A_ij(r)`` (module docstring), shape (n, K)."""
    kept = r * np.minimum(np.arange(w.size), theta)
    logl = -np.abs(y[:, None] - kept[None, :]) / scale  # (n, D + 1), up to a constant
    logw = np.log(np.where(w > 0, w, 1e-300))
    out = np.full((y.size, k), -np.inf)
    for j in range(k):
        cols = np.flatnonzero(bucket == j)
        if cols.size:
            out[:, j] = logsumexp(logl[:, cols] + logw[cols][None, :], axis=1)
    return out


def _fit_masses(log_a, sums, n, var, start) -> np.ndarray:
    """The bucket masses maximising the joint log-likelihood (module docstring)."""
    usable = np.isfinite(log_a).any(axis=0)
    la = np.where(np.isfinite(log_a), log_a, -1e300)

    def negative(z):
        q = softmax(z)
        lq = np.log(np.maximum(q, 1e-300))
        rows = la + lq[None, :]
        total = logsumexp(rows, axis=1)
        resp = np.exp(rows - total[:, None])  # responsibilities, (n, K)
        resid = sums - n * q
        value = -total.sum() + (resid**2 / (2 * var)).sum()
        grad_q = -resp.sum(axis=0) / np.maximum(q, 1e-300) - n * resid / var
        grad_z = q * (grad_q - q @ grad_q)
        return value, grad_z

    z0 = np.log(np.maximum(np.where(usable, start, 0.0), 1e-12))
    res = minimize(negative, z0, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return softmax(res.x)


def joint_prior(
    released: np.ndarray,
    theta: int,
    eps_dsr: float,
    prior: np.ndarray,
    bucket_sums: object,
    thresholds: list[int],
    eps_theta: float,
    parties: int,
) -> np.ndarray:
    """``prior`` (over ``0..D``) with its bucket masses re-fitted to the releases and the
    counts jointly (module docstring). Callers gate it (``UNIMODAL_RATIO_MAX``)."""
    y = np.asarray(released, dtype=float)
    p = np.asarray(prior, dtype=float)
    sums = np.asarray(bucket_sums, dtype=float)
    n, k = y.size, sums.size
    bucket = np.searchsorted(np.asarray(thresholds), np.arange(p.size), side="left")
    # the buckets wholly at or above θ share one likelihood: one group, the prior's shape
    lows = np.concatenate([[0], np.asarray(thresholds) + 1])
    first_tail = int(np.searchsorted(lows, theta, side="left"))
    var = np.full(k, noise_sd(eps_theta, n, parties) ** 2)
    if first_tail < k - 1:  # a group's sum has its buckets' summed noise variance
        bucket = np.minimum(bucket, first_tail)
        var = np.append(var[:first_tail], var[first_tail:].sum())
        sums = np.append(sums[:first_tail], sums[first_tail:].sum())
        k = first_tail + 1
    w, q = _shape(p, bucket, k)
    if ANCHOR == "prior":
        sums = n * q
    scale = theta / eps_dsr
    caps = np.minimum(np.arange(p.size), theta)
    for _ in range(ROUNDS):
        pi = q[bucket] * w
        expected = float(pi @ caps)
        r = 1.0 if expected <= 0 else min(1.0, max(1e-6, float(np.mean(y)) / expected))
        if R_OVERRIDE is not None:
            r = R_OVERRIDE
        q = _fit_masses(_log_a(y, w, bucket, k, theta, scale, r), sums, n, var, q)
    pi = q[bucket] * w
    return pi / pi.sum()
