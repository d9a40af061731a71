"""Distribution reconstruction from Square Wave reports by EM / EMS — theory of operation.

Li et al., "Estimating Numerical Distributions under Local Differential Privacy" (SIGMOD 2020),
pair the Square Wave (SW) randomizer with a post-processing step that reconstructs the *whole*
input distribution rather than just its mean: the section on distribution reconstruction by
Expectation Maximisation (EM) and EM with Smoothing (EMS). Seed 003 (CPR) reuses it per phase
bin of a folded periodic stream, with few buckets (16-64), and turns the result into
posterior-mean pseudo-samples. Everything here is post-processing of the privatized reports,
so it has no privacy cost.

Discretisation
    The input domain ``[0, 1]`` is cut into ``d_in`` equal buckets ``B_i`` with centres
    ``v_i = (i + 1/2) / d_in`` (``input_centres``); the output domain
    ``[output_low, output_high]`` into ``d_out`` equal buckets ``A_j`` (``output_edges``).
    The unknown is the pmf ``theta_i = P(v in B_i)``; the data are the bucket counts ``n_j``
    of the reports (``bucket_counts``).

Transition matrix (closed form)
    ``M[j, i] = P(y in A_j | v ~ Uniform(B_i))``. For a fixed ``v`` the SW density is ``p`` on
    the window ``W(v)`` (width ``2b``) and ``q`` elsewhere, so
    ``P(y in A | v) = q |A| + (p - q) |A ∩ W(v)|``. Averaging over ``v`` uniform on
    ``C = [c1, c2]`` needs ``J = ∫_C |A ∩ W(v)| dv``.

    * ``"sw"``: ``W(v) = [v - b, v + b]``. With ``G(u) = clip(u + b, 0, 2b)`` (the length of
      ``(-inf, u] ∩ [-b, b]``), ``|[a1, a2] ∩ W(v)| = G(a2 - v) - G(a1 - v)`` and
      ``J = H(a2 - c1) - H(a2 - c2) - H(a1 - c1) + H(a1 - c2)`` where ``H' = G``:
      ``H(u) = 0`` (``u <= -b``), ``(u + b)^2 / 2`` (``|u| <= b``), ``2 b u`` (``u >= b``).
      The code evaluates each difference ``H(hi) - H(lo)`` as one integral of ``G`` over
      ``[lo, hi]`` (ramp part in the product form ``(r2 - r1)(r2 + r1 + 2b)/2``, flat part
      ``2b * length``) so the result carries an absolute error of a few ulps of ``|C|``, not
      of 1: after dividing by ``|C|`` every column still sums to 1 within ~1e-13 (measured
      up to 1024 x 1024).
    * ``"sw01"``: the window is ``[a, a + 2b]`` with ``a = clip(v - b, 0, 1 - 2b)``. Split
      ``C`` at ``b`` and ``1 - b``: on ``[b, 1 - b]`` the window is centred (as for ``"sw"``);
      on ``[0, b)`` it is the fixed ``[0, 2b]``, on ``(1 - b, 1]`` the fixed ``[1 - 2b, 1]``,
      so those parts contribute a constant overlap times their length.

    Finally ``M[j, i] = q |A_j| + (p - q) J / |B_i|``. Each column sums to
    ``q * (domain width) + (p - q) * 2b = 1``. Matrices are cached per
    ``(eps, variant, d_in, d_out)`` and returned read-only.

EM (Li et al.)
    Maximise ``L(theta) = sum_j n_j log((M theta)_j)`` by the multiplicative update
    ``theta <- theta * (M^T (n / (M theta))) / N`` (``N = sum_j n_j``), renormalised. Plain EM
    never decreases ``L``; it stops when one iteration gains less than ``tol`` (absolute, in
    nats of the *total* log-likelihood; default ``1e-3``) or at ``max_iter``.
    With many buckets plain EM over-fits the sampling noise into spikes.

EMS
    After every M-step apply the binomial smoothing ``theta <- S theta`` (interior rows
    ``(1/4, 1/2, 1/4)``, rows ``(2/3, 1/3)`` at *both* ends, i.e. ``S[0, :2] = (2/3, 1/3)`` and
    ``S[-1, -2:] = (1/3, 2/3)``) and renormalise. Smoothing can lower ``L``; a negative gain is
    "less than ``tol``", so the same rule stops a row at its first non-improving iteration.

Batching
    ``em`` runs ``G`` independent rows (e.g. CPR phase bins) at once: each iteration is two
    ``(k, d_out) x (d_out, d_in)`` products over the ``k`` rows still running; a row that
    met the stopping rule is frozen (keeps its last ``theta``), so a batched row gives the
    same answer as the row alone (up to the last bit: see ``em_owners``). Rows with no
    counts return the uniform pmf. ``em_owners`` runs the rows of several owners (the
    phases of several CPR streams) in one loop with each owner's matrix products shaped as
    in its own ``em`` call, so each owner gets exactly its ``em`` result (a product with one
    row is gemv in numpy, whose rounding differs from a row of a gemm; rows of gemms with
    >= 2 rows do not depend on the count).

Posterior means
    For seed 003's pseudo-samples: ``E[v | y in A_j] = sum_i v_i M[j, i] theta_i /
    sum_i M[j, i] theta_i`` with ``v_i`` the bucket centres. They are NOT monotone in ``j``
    over the whole output range: the SW density has a flat floor ``q``, so a report far from
    the bulk of ``theta`` carries little information and its posterior mean shrinks back
    towards the prior mean; they increase across the central output buckets.

Bucket count rule (``default_buckets``)
    ``d = 2^k`` with ``k = floor(log2(n) / 2 + 1/2)`` — the power of two nearest to
    ``sqrt(n)`` on a log scale (ties go up) — clamped to ``[16, 1024]``. E.g. 256 samples -> 16,
    512 -> 32, 20 000 -> 128, 10^6 -> 1024. More buckets than ``sqrt(n)`` leave too few
    reports per output bucket for the counts to carry information; fewer than 16 blur any
    shape. (The reference sheet says 64..1024; the floor is 16 here so that CPR's per-phase-bin
    EM with a few hundred reports gets few buckets.)
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass

import numpy as np
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.sw import SquareWave

__all__ = [
    "EMResult",
    "bucket_counts",
    "default_buckets",
    "em",
    "em_owners",
    "estimate_distribution",
    "input_centres",
    "output_edges",
    "posterior_means",
    "transition_matrix",
]

MIN_BUCKETS = 16
MAX_BUCKETS = 1024
_TINY = np.finfo(float).tiny


# -- validation helpers ----------------------------------------------------------------------


def _check_count(value: object, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(
            f"must be an integer, got {value!r}", field=name, limit="an integer", value=value
        )
    if int(value) < minimum:
        raise ParameterError(
            f"must be >= {minimum}, got {value!r}", field=name, limit=f">= {minimum}", value=value
        )
    return int(value)


def _check_mechanism(mechanism: object) -> SquareWave:
    if not isinstance(mechanism, SquareWave):
        raise ParameterError(
            f"must be a SquareWave, got {type(mechanism).__name__}",
            field="mechanism",
            limit="a SquareWave",
            value=mechanism,
        )
    return mechanism


_MUST = ("must be ", "must lie ", "must ")  # a reason without them is its rule (.limit)


def _first_bad(mask: np.ndarray, name: str, values: np.ndarray, reason: str) -> None:
    """Refuse the first element of ``values`` where ``mask`` holds: ``field`` names its index,
    ``.limit`` is ``reason`` without its leading "must (be|lie)", ``.value`` the element."""
    if np.any(mask):
        idx = np.unravel_index(int(np.flatnonzero(mask)[0]), mask.shape)
        where = name if mask.ndim == 0 else f"{name}[{', '.join(str(int(k)) for k in idx)}]"
        limit = next((reason.removeprefix(p) for p in _MUST if reason.startswith(p)), reason)
        raise ParameterError(
            f"{reason}, got {values[idx]!r}", field=where, limit=limit, value=values[idx].item()
        )


# -- buckets -----------------------------------------------------------------------------------


def input_centres(d_in: int) -> np.ndarray:
    """Centres ``v_i = (i + 1/2) / d_in`` of the ``d_in`` equal input buckets on ``[0, 1]``."""
    d = _check_count(d_in, "d_in")
    return (np.arange(d, dtype=float) + 0.5) / d


def output_edges(mechanism: SquareWave, d_out: int) -> np.ndarray:
    """``d_out + 1`` equal-width edges over ``[output_low, output_high]`` (both ends exact)."""
    mech = _check_mechanism(mechanism)
    d = _check_count(d_out, "d_out")
    edges = np.linspace(mech.output_low, mech.output_high, d + 1)
    edges[0], edges[-1] = mech.output_low, mech.output_high
    return edges


# -- transition matrix -------------------------------------------------------------------------


def _ramp_integral(lo: np.ndarray, hi: np.ndarray, b: float) -> np.ndarray:
    """``H(hi) - H(lo) = ∫_lo^hi G(u) du`` with ``G(u) = clip(u + b, 0, 2b)`` (``lo <= hi``).

    ``H(u)`` is 0 for ``u <= -b``, ``(u + b)^2 / 2`` for ``|u| <= b`` and ``2 b u`` for
    ``u >= b``; the difference is evaluated piecewise so no large values cancel.
    """
    r_lo = np.clip(lo, -b, b)
    r_hi = np.clip(hi, -b, b)
    ramp = (r_hi - r_lo) * (r_hi + r_lo + 2.0 * b) / 2.0
    flat = 2.0 * b * (np.maximum(hi, b) - np.maximum(lo, b))
    return ramp + flat


def _centred_overlap_integral(
    a1: np.ndarray, a2: np.ndarray, c1: np.ndarray, c2: np.ndarray, b: float
) -> np.ndarray:
    """``∫_{c1}^{c2} |[a1, a2] ∩ [v - b, v + b]| dv``
    ``= H(a2 - c1) - H(a2 - c2) - H(a1 - c1) + H(a1 - c2)``."""
    return _ramp_integral(a2 - c2, a2 - c1, b) - _ramp_integral(a1 - c2, a1 - c1, b)


def _overlap(a1: np.ndarray, a2: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.maximum(np.minimum(a2, hi) - np.maximum(a1, lo), 0.0)


@functools.lru_cache(maxsize=16)
def _transition_matrix_cached(eps: float, variant: str, d_in: int, d_out: int) -> np.ndarray:
    mech = SquareWave(eps, variant)
    b, p, q = mech.b, mech.p, mech.q
    edges = output_edges(mech, d_out)
    a1 = edges[:-1, None]  # (d_out, 1)
    a2 = edges[1:, None]
    c = np.arange(d_in + 1, dtype=float) / d_in
    c1 = c[None, :-1]  # (1, d_in)
    c2 = c[None, 1:]
    width_c = c2 - c1
    if variant == "sw":
        joint = _centred_overlap_integral(a1, a2, c1, c2, b)
    else:
        # centred window on C ∩ [b, 1 - b]; fixed windows on C ∩ [0, b) and C ∩ (1 - b, 1]
        m1 = np.clip(c1, b, 1.0 - b)
        m2 = np.clip(c2, b, 1.0 - b)
        left = np.clip(c2, 0.0, b) - np.clip(c1, 0.0, b)
        right = np.clip(c2, 1.0 - b, 1.0) - np.clip(c1, 1.0 - b, 1.0)
        joint = (
            _centred_overlap_integral(a1, a2, m1, m2, b)
            + _overlap(a1, a2, 0.0, 2.0 * b) * left
            + _overlap(a1, a2, 1.0 - 2.0 * b, 1.0) * right
        )
    matrix = q * (a2 - a1) + (p - q) * joint / width_c
    matrix.setflags(write=False)
    return matrix


def transition_matrix(mechanism: SquareWave, d_in: int, d_out: int) -> np.ndarray:
    """``M`` of shape ``(d_out, d_in)``: ``M[j, i] = P(y in output bucket j | v ~ U(B_i))``.

    Closed form (see the module docstring); cached per ``(eps, variant, d_in, d_out)``; the
    returned array is shared and read-only.
    """
    mech = _check_mechanism(mechanism)
    return _transition_matrix_cached(
        mech.eps, mech.variant, _check_count(d_in, "d_in"), _check_count(d_out, "d_out")
    )


# -- counts ------------------------------------------------------------------------------------


def bucket_counts(
    y: np.ndarray,
    mechanism: SquareWave,
    d_out: int,
    groups: np.ndarray | None = None,
    n_groups: int = 1,
) -> np.ndarray:
    """Float counts of reports per output bucket and group, shape ``(n_groups, d_out)``.

    Buckets are ``[e_k, e_{k+1})`` on ``output_edges(mechanism, d_out)``; a report exactly at
    ``output_high`` goes to the last bucket. ``groups[k]`` (integers in ``[0, n_groups)``)
    assigns report ``k`` to a row; ``None`` puts every report in row 0. Raises
    ``ParameterError`` (a ``ValueError``) naming the field — ``y[k]`` for a report that is
    not finite or outside ``[output_low, output_high]``, ``groups[k]`` for a bad group.
    """
    mech = _check_mechanism(mechanism)
    d = _check_count(d_out, "d_out")
    g = _check_count(n_groups, "n_groups")
    yy = np.asarray(y, dtype=float).reshape(-1)
    _first_bad(
        ~mech.in_domain(yy),
        "y",
        yy,
        f"report must be finite and in [{mech.output_low!r}, {mech.output_high!r}]",
    )
    edges = output_edges(mech, d)
    bucket = np.clip(np.searchsorted(edges, yy, side="right") - 1, 0, d - 1)
    if groups is None:
        if g != 1:
            raise ParameterError(
                f"must be 1 when groups is None, got {g}",
                field="n_groups",
                limit="1 when groups is None",
                value=g,
            )
        flat = bucket
    else:
        gg = np.asarray(groups)
        if gg.size != yy.size:
            raise ParameterError(
                f"must have the shape of y {np.shape(y)}, got {gg.shape}",
                field="groups",
                limit=f"the shape of y {np.shape(y)} (value: its shape)",
                value=gg.shape,
            )
        gg = gg.reshape(-1)
        if gg.size and not np.issubdtype(gg.dtype, np.integer):
            raise ParameterError(
                f"must be integers, got dtype {gg.dtype}",
                field="groups",
                limit="integers (value: the dtype)",
                value=str(gg.dtype),
            )
        gg = gg.astype(np.int64, copy=False)
        _first_bad((gg < 0) | (gg >= g), "groups", gg, f"must lie in [0, {g})")
        flat = gg * d + bucket
    counts = np.bincount(flat, minlength=g * d).astype(float)
    return counts.reshape(g, d)


# -- EM / EMS ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class EMResult:
    """Output of ``em`` for ``G`` rows."""

    theta: np.ndarray  # (G, d_in) estimated pmf over the input buckets; rows sum to 1
    iterations: np.ndarray  # (G,) iterations used per row (0 for rows without counts)
    log_likelihood: np.ndarray  # (G,) final sum_j n_j log((M theta)_j) per row
    converged: np.ndarray  # (G,) True if the row met the tolerance (or had no counts)


def _normalise_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to sum 1; a row summing to 0 becomes uniform (no division by zero)."""
    total = x.sum(axis=1, keepdims=True)
    if total.min() > 0:  # the usual case: the same division, without the masked output
        return x / total
    out = np.full_like(x, 1.0 / x.shape[1])
    np.divide(x, total, out=out, where=total > 0)
    return out


def _smooth(theta: np.ndarray) -> np.ndarray:
    """``theta @ S^T``: binomial kernel ``(1/4, 1/2, 1/4)`` inside, ``(2/3, 1/3)`` at both ends."""
    d = theta.shape[1]
    if d == 1:
        return theta.copy()
    out = np.empty_like(theta)
    out[:, 0] = (2.0 / 3.0) * theta[:, 0] + (1.0 / 3.0) * theta[:, 1]
    out[:, -1] = (2.0 / 3.0) * theta[:, -1] + (1.0 / 3.0) * theta[:, -2]
    # 0.25 a + 0.5 b + 0.25 c, in that order (the quarter and half of each entry computed once)
    quarter = 0.25 * theta
    inner = out[:, 1:-1]
    np.multiply(theta[:, 1:-1], 0.5, out=inner)
    np.add(quarter[:, :-2], inner, out=inner)
    inner += quarter[:, 2:]
    return out


def _log_likelihood(n: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """``sum_j n_j log(pred_j)`` per row; ``pred`` floored at the smallest normal float so a
    zero prediction gives a very negative finite value instead of ``-inf`` / a warning."""
    return (n * np.log(np.maximum(pred, _TINY))).sum(axis=1)


def _em_inputs(counts, M, smoothing, tol, max_iter) -> tuple[np.ndarray, np.ndarray, int]:
    """``em``'s and ``em_owners``' argument checks: the matrix, the counts as ``(G, d_out)``
    and the iteration cap."""
    mat = np.asarray(M, dtype=float)
    if mat.ndim != 2 or mat.shape[0] < 1 or mat.shape[1] < 1:
        raise ParameterError(
            f"must be a non-empty 2-D array, got shape {mat.shape}",
            field="M",
            limit="a non-empty 2-D array (value: its shape)",
            value=mat.shape,
        )
    _first_bad(~(np.isfinite(mat) & (mat >= 0)), "M", mat, "must be finite and >= 0")
    d_out = mat.shape[0]
    n = np.asarray(counts, dtype=float)
    if n.ndim == 1:
        n = n[None, :]
    if n.ndim != 2 or n.shape[1] != d_out:
        raise ParameterError(
            f"must have shape ({d_out},) or (G, {d_out}), got {np.shape(counts)}",
            field="counts",
            limit=f"shape ({d_out},) or (G, {d_out}) (value: its shape)",
            value=np.shape(counts),
        )
    _first_bad(~(np.isfinite(n) & (n >= 0)), "counts", n, "must be finite and >= 0")
    if not isinstance(smoothing, (bool, np.bool_)):
        raise ParameterError(
            f"must be a bool, got {smoothing!r}", field="smoothing", limit="a bool", value=smoothing
        )
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (0 <= tol < math.inf):
        raise ParameterError(
            f"must be finite and >= 0, got {tol!r}", field="tol", limit="finite and >= 0", value=tol
        )
    return mat, n, _check_count(max_iter, "max_iter", minimum=0)


def em(
    counts: np.ndarray,
    M: np.ndarray,
    *,
    smoothing: bool = False,
    tol: float = 1e-3,
    max_iter: int = 1000,
    init: np.ndarray | None = None,
) -> EMResult:
    """EM (``smoothing=False``) or EMS (``smoothing=True``) for every row of ``counts``.

    ``counts``: ``(d_out,)`` or ``(G, d_out)`` non-negative; ``M``: ``(d_out, d_in)``
    transition matrix. ``init``: ``(d_in,)`` or ``(G, d_in)`` non-negative starting pmf(s)
    (normalised here), uniform by default. A row stops when one iteration raised its total
    log-likelihood by less than ``tol`` (it keeps that iteration's ``theta``), or at
    ``max_iter``. See the module docstring for the updates.
    """
    mat, n, iters_max = _em_inputs(counts, M, smoothing, tol, max_iter)
    d_in = mat.shape[1]
    rows = n.shape[0]

    uniform = np.full((rows, d_in), 1.0 / d_in)
    theta = uniform.copy() if init is None else _em_start(init, rows, d_in)
    total = n.sum(axis=1)
    empty = total <= 0
    theta[empty] = uniform[empty]
    iterations = np.zeros(rows, dtype=np.int64)
    converged = empty.copy()
    mat_t = np.ascontiguousarray(mat.T)  # (d_in, d_out)
    log_lik = _log_likelihood(n, rows_matmul(theta, mat_t))
    run = _EmRun(theta, log_lik, iterations, converged, n, total, mat, mat_t)
    _em_iterate(run, np.flatnonzero(~empty), smoothing, tol, iters_max)
    return EMResult(
        theta=run.theta, iterations=iterations, log_likelihood=run.log_lik, converged=converged
    )


def _em_start(init, rows: int, d_in: int) -> np.ndarray:
    """The starting pmfs ``init`` (``(d_in,)`` or ``(rows, d_in)``), checked and
    normalised, one row per counts row."""
    start = np.asarray(init, dtype=float)
    if start.ndim == 1:
        start = start[None, :]
    if start.ndim != 2 or start.shape[1] != d_in or start.shape[0] not in (1, rows):
        raise ParameterError(
            f"must have shape ({d_in},) or ({rows}, {d_in}), got {np.shape(init)}",
            field="init",
            limit=f"shape ({d_in},) or ({rows}, {d_in}) (value: its shape)",
            value=np.shape(init),
        )
    _first_bad(~(np.isfinite(start) & (start >= 0)), "init", start, "must be finite, >= 0")
    _first_bad(start.sum(axis=1) <= 0, "init", start.sum(axis=1), "rows must sum to > 0")
    return _normalise_rows(np.broadcast_to(start, (rows, d_in)).copy())


@dataclass
class _EmRun:
    """The state ``_em_iterate`` updates: every row's pmf, log-likelihood, iterations and
    convergence (``theta`` and ``log_lik`` may be replaced by new arrays), and the fixed
    inputs."""

    theta: np.ndarray  # (G, d_in)
    log_lik: np.ndarray  # (G,)
    iterations: np.ndarray  # (G,) int64
    converged: np.ndarray  # (G,) bool
    n: np.ndarray  # (G, d_out) counts
    total: np.ndarray  # (G,) their sums
    mat: np.ndarray  # (d_out, d_in)
    mat_t: np.ndarray  # (d_in, d_out), contiguous


def _em_iterate(run: _EmRun, running: np.ndarray, smoothing: bool, tol: float, iters_max: int):
    """EM iterations of the rows ``running`` until each stops (see ``em``).

    The loop does per row exactly the float operations of the plain update (every matrix
    product through ``rows_matmul``: a row's bits do not depend on the others), with less
    Python and numpy overhead: while every row runs, whole arrays instead of fancy-indexed
    copies; ``pred`` of the next iteration is this iteration's product ``new @ mat_t`` (the
    same product of the same array) as long as no row stopped."""
    mat, mat_t = run.mat, run.mat_t
    everyone = running.size == run.n.shape[0]
    th = run.theta if everyone else run.theta[running]
    nn = run.n if everyone else run.n[running]
    tot = run.total[running, None]
    ll = run.log_lik[running]
    pred = None
    last = 0
    for it in range(1, iters_max + 1):
        if running.size == 0:
            break
        if pred is None:
            pred = rows_matmul(th, mat_t)  # (k, d_out): (M theta)_j per row
        ratio = np.zeros_like(nn)
        np.divide(nn, pred, out=ratio, where=pred > 0)
        new = _normalise_rows(th * rows_matmul(ratio, mat) / tot)
        if smoothing:
            new = _normalise_rows(_smooth(new))
        new_pred = rows_matmul(new, mat_t)
        new_ll = _log_likelihood(nn, new_pred)
        stop = (new_ll - ll) < tol
        last = it
        if not stop.any():
            th, ll, pred = new, new_ll, new_pred
            continue
        # some rows stop: write the running rows back, continue with the rest
        everyone = _em_write_back(run, running, everyone, new, new_ll)
        run.iterations[running] = it
        run.converged[running[stop]] = True
        keep = ~stop
        running = running[keep]
        th, nn, tot, ll = new[keep], nn[keep], tot[keep], new_ll[keep]
        pred = None
    if running.size:  # rows that ran to max_iter
        _em_write_back(run, running, everyone, th, ll)
        run.iterations[running] = last


def _em_write_back(run: _EmRun, running, everyone: bool, theta, log_lik) -> bool:
    """The running rows' pmfs and log-likelihoods into ``run`` (while every row runs,
    the arrays themselves); returns False (no longer every row)."""
    if everyone:
        run.theta, run.log_lik = theta, log_lik
    else:
        run.theta[running] = theta
        run.log_lik[running] = log_lik
    return False


def posterior_means(theta: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``(G, d_out)`` posterior means ``E[v | y in A_j]`` under the prior ``theta[g]``.

    ``theta``: ``(d_in,)`` (treated as one row) or ``(G, d_in)``; ``M``: ``(d_out, d_in)``.
    Uses the input bucket centres; where ``sum_i M[j, i] theta[g, i] = 0`` the prior mean
    ``sum_i v_i theta[g, i] / sum_i theta[g, i]`` is returned (1/2 for an all-zero row).
    """
    mat = np.asarray(M, dtype=float)
    th = np.asarray(theta, dtype=float)
    if th.ndim == 1:
        th = th[None, :]
    if mat.ndim != 2 or th.ndim != 2 or th.shape[1] != mat.shape[1]:
        raise ParameterError(
            f"theta {np.shape(theta)} and M {np.shape(M)} do not match",
            field="theta",
            limit="theta's columns matching M's (value: the two shapes)",
            value=(np.shape(theta), np.shape(M)),
        )
    _first_bad(~(np.isfinite(th) & (th >= 0)), "theta", th, "must be finite and >= 0")
    v = input_centres(mat.shape[1])
    mass = th.sum(axis=1)
    prior = np.full(th.shape[0], 0.5)
    np.divide(th @ v, mass, out=prior, where=mass > 0)
    num = (th * v) @ mat.T
    den = th @ mat.T
    out = np.broadcast_to(prior[:, None], den.shape).copy()
    np.divide(num, den, out=out, where=den > 0)
    return out


def default_buckets(n_samples: int) -> int:
    """Number of buckets for ``n_samples`` reports: the power of two nearest ``sqrt(n)``.

    ``2^k`` with ``k = floor(log2(n) / 2 + 1/2)``, clamped to ``[16, 1024]``: ``n < 512`` gives
    16 (also ``n = 0``), ``[512, 2048)`` 32, ..., ``n >= 2^19 = 524 288`` gives 1024. Computed
    exactly in integers: ``k = n.bit_length() // 2``.
    """
    n = _check_count(n_samples, "n_samples", minimum=0)
    k = n.bit_length() // 2
    return int(min(max(2**k, MIN_BUCKETS), MAX_BUCKETS))


def estimate_distribution(
    y: np.ndarray,
    mechanism: SquareWave,
    *,
    d_in: int | None = None,
    d_out: int | None = None,
    smoothing: bool = True,
    tol: float = 1e-3,
    max_iter: int = 1000,
) -> tuple[np.ndarray, np.ndarray]:
    """``(centres, pmf)``: the input distribution estimated from raw reports ``y``.

    ``d_in`` defaults to ``default_buckets(len(y))``, ``d_out`` to ``d_in``; EMS by default.
    """
    yy = np.asarray(y, dtype=float).reshape(-1)
    di = default_buckets(yy.size) if d_in is None else _check_count(d_in, "d_in")
    do = di if d_out is None else _check_count(d_out, "d_out")
    counts = bucket_counts(yy, mechanism, do)
    result = em(
        counts,
        transition_matrix(mechanism, di, do),
        smoothing=smoothing,
        tol=tol,
        max_iter=max_iter,
    )
    return input_centres(di), result.theta[0]


ROW_BLOCK = 8  # rows_matmul pads every product to a multiple of this many rows


def rows_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for a contiguous ``b``, each row's bits independent of the other rows.

    A BLAS gemm computes a row with its main kernel or, for the rows left over when the
    row count is not a multiple of the kernel's unroll, with a remainder kernel (or gemv for
    one row) that rounds differently: seen here on an AMD EPYC (OpenBLAS of numpy 2.4) the
    last row of every odd-sized product, on the machine before only 1-row products. So the
    same stream's EM gave other last bits alone (``em``) than among other streams
    (``em_owners``, ``cpr_many``, the pool's chunks). Padding every product with zero rows
    to a multiple of ``ROW_BLOCK`` (kernel unrolls of 1, 2, 4 and 8 rows) keeps every row
    on the main kernel. Cost: at most 7 zero rows a product."""
    rows = a.shape[0]
    pad = -rows % ROW_BLOCK
    if pad:
        a = np.concatenate([a, np.zeros((pad, a.shape[1]), dtype=a.dtype)])
        return (a @ b)[:rows]
    return a @ b


def em_owners(
    counts: np.ndarray,
    M: np.ndarray,
    owners: np.ndarray,
    *,
    smoothing: bool = False,
    tol: float = 1e-3,
    max_iter: int = 1000,
) -> EMResult:
    """``em`` (uniform start) for the rows of several owners at once (e.g. the phases of
    several streams): the same result, bit for bit, as ``em(counts[owners == o], M, ...)``
    for each owner ``o`` separately, at the per-iteration overhead of one call. ``owners``:
    ``(G,)`` non-negative integers, each owner's rows contiguous. Since every product goes
    through ``rows_matmul`` (a row's bits do not depend on the other rows) and everything
    else is row by row, that is ``em`` on all the rows at once: the owners are checked,
    not needed."""
    n = _em_inputs(counts, M, smoothing, tol, max_iter)[1]  # counts first, as em checks them
    owner = np.asarray(owners, dtype=np.int64)
    if owner.shape != n.shape[:1]:
        raise ParameterError(
            f"must have shape ({n.shape[0]},), one owner per row of counts, got {owner.shape}",
            field="owners",
            limit=f"shape ({n.shape[0]},), one owner per row of counts (value: its shape)",
            value=owner.shape,
        )
    if owner.size and (owner.min() < 0 or np.any(np.diff(owner) < 0)):
        raise ParameterError(
            "must be non-negative and sorted",
            field="owners",
            limit="non-negative and sorted (value: the least if < 0, else the first out of order)",
            value=int(owner.min())
            if owner.min() < 0
            else int(owner[np.flatnonzero(np.diff(owner) < 0)[0] + 1]),
        )
    return em(counts, M, smoothing=smoothing, tol=tol, max_iter=max_iter)
