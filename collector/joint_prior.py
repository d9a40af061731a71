"""A degree distribution read from the θ search's counts AND the DSR values (method "clip").

Theory of operation (issue 20, helper T; docs/cadr-private.md "A joint prior for clip").

Two public releases describe the TRUE degrees ``d_i`` of the ``n`` devices:

- the DP θ search's noisy bucket counts ``s_j = #{i : d_i ∈ B_j} + noise_j`` over the
  grid's buckets ``B_0 = 0..t_0``, ``B_j = (t_(j-1), t_j]``, the last ``(t_k, D]``; the
  noise has the public standard deviation ``σ`` (``collector.bucket_denoise.noise_sd``).
  The dp pipeline reads them into a distribution over ``0..D`` (the "reading":
  ``degree_postprocess.search_priors``: the per-node prior and the histogram's);
- under method "clip" each device's ``y_i = min(d_i, θ) + Lap(b)``, ``b = θ / ε_dsr``:
  an EXACT-model observation of ``min(d, θ)`` (the kept ratio is 1), which the reading
  ignores. Below θ the ``y_i`` resolve the shape the wide buckets cannot.

``joint_prior`` returns the distribution ``p`` over ``0..D`` that maximises the joint
log-likelihood of both releases over the BUCKET MASSES (the shape inside each bucket kept
from the start below),

    F(p) = Σ_i log Σ_d p_d Lap(y_i − min(d, θ); b)  −  Σ_j (n P_j − n R_j)² / (2 σ²)

where ``P_j`` is ``p``'s mass in bucket ``j`` and ``R_j`` the reading's: the DSR values'
Laplace mixture (a maximum likelihood of a mixing distribution, Kiefer & Wolfowitz, Ann.
Math. Stat. 1956, here over a (K+1)-parameter family) plus the bucket counts' noise law
taken as Gaussian of sd σ, centred on the reading's bucket masses (the reading is the
counts-only estimate the pipeline already trusts; with the raw sums as the centre the
term's maximiser alone is the plain projection, ``degree_postprocess.degree_prior``). The
y_i say nothing about how the degrees ``>= θ`` are spread: the bucket holding θ and every
bucket above it form ONE cell ``U`` of the reading's shape over ``0..D`` and a free mass.
The count term of ``U`` is evaluated at that shape: ``(T − R_U)² Σ_j W_j²`` (``W_j`` the
reading's share of ``U`` in bucket ``j``). Opt-in (``free_shape=True``): the shape inside
each group is free too (per degree below θ, and ``U``'s split at θ) — on the
calibration set it sharpened the histogram into spikes (summed L1 19.77 → 23.69 at 100
steps) and is not the rule; as the PER-NODE prior (10 steps,
``degree_postprocess.PER_NODE_FREE_SHAPE``) it removed the half-bucket bias on regular
graphs in wide buckets but failed its fresh evaluation on mixed graphs (summed MAE +0.019
%; docs/preregistration/O-free-shape.md): opt-in too. ``shape_smoothing`` mixes each step's
free shape with the start's (tried on calibration, not used).

Computed by EM (Dempster, Laird & Rubin, JRSS B 1977), for a penalised likelihood (Green,
JRSS B 1990): the E-step is each release's posterior over the atoms (degrees below θ and
the atom ``>= θ``), ``a`` their column sums, ``A_g`` their sums per group (a bucket below
θ's, or ``U``); the M-step maximises ``Σ_g A_g log X_g − count term`` over the group
masses exactly: ``A_g / X_g + 2 c_g (R_g − X_g) = λ`` (``c_g = n² / (2 σ²)``, times ``Σ
W_j²`` for ``U``) — the positive root of a quadratic, decreasing in λ, with λ found by
bisection so that ``Σ X_g = 1``; inside a group the start's shape. Each step keeps ``p >=
0``, ``Σ p = 1`` and never lowers ``F`` (a minorise-maximise step; ``F`` is concave in
the group masses, so the steps climb to its maximum). The start is the reading mixed with
``START_UNIFORM`` of the uniform distribution on the atoms (a bucket the reading left
empty gets a shape, and a mass EM can grow if the releases ask for it);
``ITERATIONS`` steps, deterministic.

Limits (exact properties, tested in tests/unit/test_T_joint_prior.py): when the releases
carry no information (``b → ∞``) the first term is constant and the group masses stay the
reading's (a fixed point); when the releases are exact (``b → 0``) and the counts' term
weak (``σ`` large), the group masses are the fleet's true ones whatever the reading's.
Inputs: the releases, θ, ε_dsr,
the reading, the grid, D, n and σ (public): post-processing, no budget (Dwork & Roth
2014, Prop. 2.1). Only for a release whose model is exact (method "clip", kept ratio 1).
"""

from __future__ import annotations

import numpy as np
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.validate import finite_reals, integer_at_least, positive_real

__all__ = [
    "ITERATIONS",
    "START_UNIFORM",
    "checked_thresholds",
    "joint_prior",
    "joint_search_priors",
    "median_group_tilt",
]

ITERATIONS = 100
# the start's share of the uniform distribution on the atoms (calibration, graph seeds
# 3301-3320: 0.001 / 0.01 / 0.05 gave summed histogram EMD -5.4 / -5.3 / -4.2 %)
START_UNIFORM = 0.01
_BISECTIONS = 60


def _releases(released: object) -> np.ndarray:
    return finite_reals(released, "released")


def _reading(reading: object, degree_bound: int) -> np.ndarray:
    r = np.asarray(reading, dtype=float).reshape(-1)
    if (
        r.size != degree_bound + 1
        or not np.all(np.isfinite(r))
        or np.any(r < 0)
        or not np.isclose(r.sum(), 1.0)
    ):
        raise ParameterError(
            f"must be a distribution over 0..{degree_bound}: non-negative, summing to 1",
            field="reading",
            limit=f"a distribution over 0..{degree_bound}",
            value=reading,
        )
    return r / r.sum()


def checked_thresholds(thresholds: list[int], degree_bound: int) -> list[int]:
    """The θ search's bucket thresholds as ints, refused unless ascending, distinct and
    within ``[0, degree_bound]`` (at least one): the check of every reading of the
    counts, here and in ``degree_postprocess``."""
    ts = [int(t) for t in thresholds]
    if ts != sorted(set(ts)) or not ts or ts[0] < 0 or ts[-1] > degree_bound:
        raise ParameterError(
            f"must be ascending, distinct and within [0, {degree_bound}], got {ts[:5]}...",
            field="thresholds",
            limit=f"ascending, distinct, within [0, {degree_bound}]",
            value=thresholds,
        )
    return ts


def _bucket_of(thresholds: list[int], degree_bound: int) -> np.ndarray:
    ts = checked_thresholds(thresholds, degree_bound)
    return np.searchsorted(np.array(ts), np.arange(degree_bound + 1), side="left")


def _group_masses(a: np.ndarray, centre: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The M-step's group masses: ``X_g`` maximising ``Σ a_g log X_g − Σ c_g (X_g −
    R_g)²`` on the simplex (module docstring), by bisection on the multiplier λ."""

    def masses(lam: float) -> np.ndarray:
        half = 2.0 * weight * centre - lam
        root = np.sqrt(half * half + 8.0 * weight * a)
        # the positive root, in the form without cancellation on each side of half = 0
        low = 2.0 * a / np.where(root - half > 0, root - half, 1.0)
        return np.where(half > 0, (half + root) / (4.0 * weight), low)

    lo, hi = -1.0, 1.0  # Σ X is decreasing in λ: bracket the root
    while masses(lo).sum() < 1.0:
        lo *= 2.0
    while masses(hi).sum() > 1.0:
        hi *= 2.0
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if masses(mid).sum() > 1.0 else (lo, mid)
    x = masses(0.5 * (lo + hi))
    return x / x.sum()


def _smoothing(value: object) -> float:
    w = float(value)  # type: ignore[arg-type]
    if not 0.0 <= w <= 1.0:
        raise ParameterError(
            f"must be in [0, 1], got {value!r}",
            field="shape_smoothing", limit="in [0, 1]", value=value,
        )  # fmt: skip
    return w


def _dsr_inputs(released, reading, theta, eps_dsr) -> tuple:
    """The checked inputs both readings of the DSR values share: the releases, the reading
    over degrees 0..d (its length names the degree bound d), θ (at most d) and the DSR
    values' Laplace scale b = θ / ε_dsr; ``ParameterError`` naming the field otherwise."""
    y = _releases(released)
    r = np.asarray(reading, dtype=float).reshape(-1)
    d = integer_at_least(r.size - 1, "degree_bound", 1)
    r = _reading(r, d)
    t = min(integer_at_least(theta, "theta", 1), d)
    return y, r, d, t, t / positive_real(eps_dsr, "eps_dsr")


def joint_prior(
    released: object,
    theta: int,
    eps_dsr: float,
    reading: object,
    thresholds: list[int],
    devices: int,
    sigma: float,
    *,
    iterations: int = ITERATIONS,
    free_shape: bool = False,
    shape_smoothing: float = 0.0,
) -> np.ndarray:
    """The distribution over ``0..D`` (``D = len(reading) - 1``) of the true degrees from
    the θ search's counts (through their ``reading``, with the counts' public noise sd
    ``sigma``) and the DSR values ``released`` of method "clip" (``min(d, θ) + Lap(θ /
    eps_dsr)``): ``iterations`` EM steps on the joint likelihood (module docstring).
    ``devices``: the public n (the count term's scale). Float array, non-negative,
    summing to 1. ``shape_smoothing`` (``free_shape`` only, in ``[0, 1]``): each step's
    shape inside a group is ``(1 − w)`` the free one plus ``w`` the start's (a Dirichlet
    prior centred on the start's shape with pseudo-counts ``w / (1 − w)`` times the
    group's; 0: the free shape). Post-processing: no budget."""
    y, r, d, t, b = _dsr_inputs(released, reading, theta, eps_dsr)
    n = integer_at_least(devices, "devices", 1)
    s = positive_real(sigma, "sigma")
    steps = integer_at_least(iterations, "iterations", 0)
    w = _smoothing(shape_smoothing)
    bucket = _bucket_of(thresholds, d)
    u = int(np.flatnonzero(bucket == bucket[t])[0])  # U: θ's bucket and every one above
    if u == 0:
        return r.copy()  # one cell: nothing below θ's bucket for the releases to shape
    # atoms: degrees 0..θ-1, then the atom ">= θ" (the reading's shape over θ..D)
    tail = r[t:].copy()
    tail = tail / tail.sum() if tail.sum() > 0 else np.eye(tail.size)[0]
    groups = np.append(bucket[:t], bucket[t]).astype(np.int64)
    groups = np.minimum(groups, bucket[t])  # the buckets of U are one group
    n_groups = int(bucket[t]) + 1
    centre = np.bincount(groups[:-1], weights=r[:t], minlength=n_groups)
    centre[-1] = r[u:].sum()
    share = np.bincount(bucket[u:] - bucket[u], weights=r[u:]) / max(r[u:].sum(), 1e-300)
    weight = np.full(n_groups, n * n / (2.0 * s * s))
    weight[-1] *= float(np.sum(share**2)) if r[u:].sum() > 0 else 1.0
    dist = np.abs(y[:, None] - np.arange(t + 1)[None, :])
    kernel = np.exp(-(dist - dist.min(axis=1, keepdims=True)) / b)
    p = np.append(r[:t], r[t:].sum())
    p = (1.0 - START_UNIFORM) * p + START_UNIFORM / (t + 1)  # every atom, U's too
    start_mass = np.bincount(groups, weights=p, minlength=n_groups)
    start_shape = p / np.where(start_mass > 0, start_mass, 1.0)[groups]
    if centre[-1] > 0:  # U keeps the reading's shape (module docstring)
        in_u = groups == n_groups - 1
        start_shape[in_u] = np.append(r[u:t], r[t:].sum()) / centre[-1]
        p = start_mass[groups] * start_shape
    for _ in range(steps):
        post = kernel * p
        post /= post.sum(axis=1, keepdims=True)
        a = post.sum(axis=0)
        big_a = np.bincount(groups, weights=a, minlength=n_groups)
        x = _group_masses(big_a, centre, weight)
        if free_shape:
            inside = np.where(big_a[groups] > 0, a / np.where(big_a > 0, big_a, 1.0)[groups], 0.0)
            inside = (1.0 - w) * inside + w * start_shape
        else:
            inside = start_shape
        p = x[groups] * inside
        p /= p.sum()
    return np.concatenate([p[:t], p[t] * tail])


def joint_search_priors(
    released: object,
    theta: int,
    eps_dsr: float,
    priors: tuple[np.ndarray, np.ndarray],
    thresholds: list[int],
    devices: int,
    sigma: float,
    *,
    per_node: bool = False,
    histogram: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """``degree_postprocess.search_priors``' two readings (per-node prior, histogram's)
    each replaced by its ``joint_prior`` with the DSR values where asked: by default the
    histogram's only (``histogram``; ``per_node``: opt-in — on the calibration set it moved
    the summed per-node MAE by +0.004 of 279.35, docs/preregistration/T-joint-prior.md; the
    dp pipeline's own per-node re-weighting, gated by ε_dsr, is
    ``degree_postprocess.JOINT_PER_NODE``: docs/preregistration/Y-joint-per-node.md).
    For method "clip" only. Post-processing: no budget."""
    node, hist = priors
    args = (thresholds, devices, sigma)
    if per_node:
        node = joint_prior(released, theta, eps_dsr, node, *args)
    if histogram:
        hist = joint_prior(released, theta, eps_dsr, hist, *args)
    return node, hist


TILT_SPAN = 20.0  # the tilt's range: λ · (the group's atom span) within ±TILT_SPAN
_TILT_GRID = 161


def median_group_tilt(
    released: object,
    theta: int,
    eps_dsr: float,
    prior: object,
    thresholds: list[int],
    level: float,
) -> np.ndarray:
    """``prior`` (a distribution over ``0..D``, the per-node prior of method "clip") with
    the shape inside ONE group — the θ-search bucket holding the prior's median (the cell
    ``U`` of θ's bucket and every one above when the median is there; atoms as in
    ``joint_prior``: the degrees below θ and the atom ``>= θ``) — exponentially tilted,
    ``shape_a e^(λ a)``, with ``λ`` the maximiser of the DSR values' Laplace-mixture
    log-likelihood (the group's mass and every other atom kept, so the count term does
    not move). The tilt is kept only when its likelihood-ratio statistic ``2 (ℓ(λ̂) −
    ℓ(0))`` exceeds the upper ``level`` quantile of χ²₁ (a one-parameter model check:
    under the reading's shape, λ = 0, an interior point, the statistic is asymptotically
    χ²₁); otherwise ``prior`` itself. ``λ`` is searched on a grid with λ · span in
    ±``TILT_SPAN``. Post-processing of the releases and the counts: no budget."""
    from scipy.stats import chi2

    y, p, d, t, b = _dsr_inputs(released, prior, theta, eps_dsr)
    alpha = positive_real(level, "level")
    if alpha >= 1.0:
        raise ParameterError(
            f"must be in (0, 1), got {level!r}", field="level", limit="in (0, 1)", value=level
        )
    bucket = _bucket_of(thresholds, d)
    m = int(np.searchsorted(np.cumsum(p), 0.5 - 1e-12, side="left"))
    groups = np.minimum(bucket[: t + 1], bucket[t])
    in_g = groups == min(int(bucket[m]), int(bucket[t]))
    if int(in_g.sum()) < 2:
        return p
    atoms = np.append(p[:t], p[t:].sum())
    mass = float(atoms[in_g].sum())
    if mass <= 0:
        return p
    pos = np.flatnonzero(in_g).astype(float)
    shape = atoms[in_g] / mass
    dist = np.abs(y[:, None] - np.arange(t + 1)[None, :])
    kernel = np.exp(-(dist - dist.min(axis=1, keepdims=True)) / b)
    other = kernel[:, ~in_g] @ atoms[~in_g]
    inside = kernel[:, in_g]
    centred = pos - pos.mean()
    span = float(pos[-1] - pos[0])

    def tilted(lam: float) -> np.ndarray:
        z = lam * centred
        w = shape * np.exp(z - z.max())
        return w / w.sum()

    def loglik(lam: float) -> float:
        like = other + mass * (inside @ tilted(lam))
        return float(np.sum(np.log(np.maximum(like, 1e-300))))

    grid = np.linspace(-TILT_SPAN, TILT_SPAN, _TILT_GRID) / span
    values = np.array([loglik(lam) for lam in grid])
    k = int(np.argmax(values))
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    for _ in range(40):  # golden-section refinement between the grid neighbours
        a, c = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        lo, hi = (lo, c) if loglik(a) >= loglik(c) else (a, hi)
    lam = 0.5 * (lo + hi)
    best = max(loglik(lam), float(values[k]))
    lam = lam if loglik(lam) >= values[k] else float(grid[k])
    if 2.0 * (best - loglik(0.0)) <= float(chi2.ppf(1.0 - alpha, 1)):
        return p
    new = atoms.copy()
    new[in_g] = mass * tilted(lam)
    tail = p[t:] / p[t:].sum() if p[t:].sum() > 0 else np.eye(d + 1 - t)[0]
    out = np.concatenate([new[:t], new[t] * tail])
    return out / out.sum()
