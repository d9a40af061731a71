"""Private-calibration mode with composed accounting — seed 000, Section 4.2 (and Algorithm 1
step 2, Algorithm 2 steps 3-4, Theorem 1's composition clause).

Theory of operation. When the calibration records belong to the protected population, every
release-dependent parameter of theta = (W, r_bar, mu, xi_hat, tau, eps) must come from an
explicitly budgeted DP release. The collector computes, on the protected calibration data,

* the pairwise score vector ``S(D) in [0, 1]^P`` with ``P = M (M - 1) / 2`` (the strict upper
  triangle of the Algorithm 1 score matrix, row-major: (0,1), (0,2), ..., (M-2, M-1));
* the utility vector ``V_mu(D) in [0, 1]^d`` and the empirical-influence vector
  ``V_xi(D) in [0, 1]^d`` (one entry per released coordinate);
* the validation utility ``U(D, t) in [0, 1]`` of every candidate threshold ``t`` of a finite
  public grid ``T`` (default Table 5's ``TAU_GRID``),

and releases them (``PrivateCalibration.release``) as

    S~_j    = Pi_[0,1](S_j + Z_j),       Z_j ~ Laplace(0, Delta_1 S / eps_G),     j = 1..P
    V~_mu,k = Pi_[0,1](V_mu,k + Z_k),    Z_k ~ Laplace(0, Delta_1 V_mu / eps_mu), k = 1..d
    V~_xi,k = Pi_[0,1](V_xi,k + Z'_k),   Z'_k ~ Laplace(0, Delta_1 V_xi / eps_xi)
    tau~    = t with probability  exp(eps_tau U(D, t) / (2 Delta U)) / sum_t' (same)

all noise independent. The Laplace noise is exact (``protocol.samplers.laplace_on_grid`` on
the grid 2**-32, the l1 sensitivity raised by one grid step per coordinate; floating-point
``rng.laplace`` would leak through its low bits, Mironov CCS 2012).
The sensitivities are the seed's universal bounds, used by default:
``Delta_1 S <= P`` (every coordinate is in [0, 1]), ``Delta_1 V_a <= d`` and ``Delta U <= 1``.
Each release is eps-DP by the Laplace / exponential mechanism (Dwork et al. 2006; McSherry &
Talwar 2007), projection is post-processing, and by sequential composition the calibration
kernel is eps_cal-DP with

    eps_cal = eps_G + eps_tau + eps_mu + eps_xi.

Theorem 1 then makes calibration followed by the Algorithm 4 release (eps_rel, charged by the
caller) (eps_cal + eps_rel)-DP. ``PrivateCalibrationRelease.theta`` runs Algorithms 1-3 on the
released values only — thresholding, degree cap, normalisation, exposure, scales and the
allocation are post-processing and never read the protected records again.

Accounting. ``release`` validates every input first, then checks that the whole eps_cal fits
the named ``PrivacyLedger`` account (``BudgetExhausted``, nothing charged and nothing drawn,
if not), and then, for each of the four mechanisms in the fixed order S, tau, V_mu, V_xi,
charges its budget with its mechanism label (``MECHANISM_LABELS``) BEFORE drawing its noise.
``eps_cal`` is defined as the left-to-right float sum in that same order, so after a
successful release the account's ``spent`` has grown by exactly ``eps_cal`` (a fresh account
reads ``spent == eps_cal`` bit for bit).

Choices where the seed is ambiguous (also listed in ``docs/gcdp.md``):

* Symmetry of S~: the seed releases the P-vector of unordered pairs, so one noise draw per
  pair is mirrored into both ``S~_ij`` and ``S~_ji``; the matrix is symmetric by construction,
  its diagonal is 0, and the input diagonal is ignored (it is not one of the P scores).
* Tighter sensitivities: the seed allows a smaller ``Delta_1`` "only when proved for the stated
  score and adjacency". ``score_sensitivity``, ``utility_sensitivity``,
  ``influence_sensitivity`` and ``tau_sensitivity`` default to the universal bounds P, d, d
  and 1 and may only be LOWERED by the caller (as with ``B_k``, the proof is the caller's
  obligation); a value above the universal bound is refused as a configuration error.
* xi_hat from V~_xi: Algorithm 2 step 4 says "project the private score"; the released
  ``V~_xi`` is already in [0, 1], and it is additionally capped at ``g_max`` (post-processing,
  a no-op for Table 5's ``g_max = 1``) so that xi_hat has the same range as in public mode.
  No ``kappa`` inflation is applied (the seed inflates only the public score).
* tau grid: the candidates are a public, finite, duplicate-free grid in [0, 1] fixed before
  calibration (default ``TAU_GRID``); the exponential mechanism has no tie rule (the seed's
  "ties -> smaller" applies to public validation only).
* Atomicity: the up-front check makes a refusal leave the account and the generator
  untouched. Should a later per-mechanism charge still be refused (only possible if the
  account is changed concurrently), the exception propagates and nothing drawn is returned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from ldpfleet.collector.gcdp.allocation import allocate_budget
from ldpfleet.collector.gcdp.constants import TAU_GRID, GcdpConstants
from ldpfleet.collector.gcdp.graph import CalibrationGraph, build_calibration_graph
from ldpfleet.collector.gcdp.sensitivity import release_scales
from ldpfleet.collector.gcdp.validate import (
    integer_at_least,
    positive_real,
    real_in_range,
    unit_vector,
)
from ldpfleet.protocol.errors import BudgetExhausted, ParameterError
from ldpfleet.protocol.exponential import ExponentialMechanism
from ldpfleet.protocol.ledger import PrivacyLedger, WindowAccount
from ldpfleet.protocol.samplers import laplace_on_grid

__all__ = [
    "CAL_ACCOUNT",
    "MECHANISM_LABELS",
    "PrivateCalibration",
    "PrivateCalibrationRelease",
    "PrivateTheta",
    "laplace_scale",
    "pair_count",
    "pairs_to_matrix",
    "upper_pairs",
]

CAL_ACCOUNT = "gcdp_calibration"
MECHANISM_LABELS = {
    "S": "gcdp_cal_S_laplace",
    "tau": "gcdp_cal_tau_exponential",
    "mu": "gcdp_cal_V_mu_laplace",
    "xi": "gcdp_cal_V_xi_laplace",
}


def pair_count(n_nodes: int) -> int:
    """``P = M (M - 1) / 2``, the number of unordered node pairs."""
    m = integer_at_least(n_nodes, "n_nodes", 2)
    return m * (m - 1) // 2


FINE_GRID = 2.0**-32  # the calibration vectors lie in [0, 1]


def _exact_laplace(
    rng: np.random.Generator, values: np.ndarray, sensitivity: float, eps: float
) -> np.ndarray:
    """``values`` + exact Laplace noise on the grid ``FINE_GRID * Z``
    (``protocol.samplers.laplace_on_grid``; floating-point ``rng.laplace`` leaks its input
    through the low bits, Mironov CCS 2012). Rounding to the grid may move each of the n
    coordinates by up to one more grid step, so the l1 sensitivity paid for is
    ``sensitivity + n * FINE_GRID`` (the scale through ``laplace_scale``, one ulp up so that
    float rounding never lowers it)."""
    arr = np.asarray(values, dtype=float)
    scale = laplace_scale(sensitivity + arr.size * FINE_GRID, eps)
    return np.asarray(
        laplace_on_grid(rng, arr, float(np.nextafter(scale, np.inf)), FINE_GRID), dtype=float
    )


def laplace_scale(sensitivity: float, eps: float) -> float:
    """The Laplace scale ``Delta_1 / eps`` of a bounded-vector release."""
    return sensitivity / eps


def upper_pairs(matrix: np.ndarray) -> np.ndarray:
    """The strict upper triangle of a square matrix as a P-vector, row-major."""
    rows, cols = np.triu_indices(matrix.shape[0], k=1)
    return matrix[rows, cols]


def pairs_to_matrix(pairs: np.ndarray, n_nodes: int) -> np.ndarray:
    """The symmetric M x M matrix with zero diagonal whose upper triangle is ``pairs``."""
    out = np.zeros((n_nodes, n_nodes))
    rows, cols = np.triu_indices(n_nodes, k=1)
    out[rows, cols] = pairs
    out[cols, rows] = pairs
    return out


def _sensitivity(value: float | None, field_name: str, universal: float) -> float:
    if value is None:
        return float(universal)
    out = positive_real(value, field_name)
    if out > universal:
        raise ParameterError(
            f"must be <= the universal bound {universal:g} (Section 4.2), got {value!r}",
            field=field_name,
            limit=f"<= the universal bound {universal:g}",
            value=value,
        )
    return out


def _check_grid(grid: object) -> tuple[float, ...]:
    try:
        items = list(grid)  # type: ignore[call-overload]
    except TypeError:
        raise ParameterError(
            f"must be a sequence of thresholds, got {grid!r}",
            field="tau_grid",
            limit="a sequence of thresholds",
            value=grid,
        ) from None
    if not items:
        raise ParameterError(
            "must hold at least one threshold",
            field="tau_grid",
            limit="at least one threshold",
            value=items,
        )
    out = tuple(real_in_range(t, f"tau_grid[{i}]", 0.0, 1.0) for i, t in enumerate(items))
    if len(set(out)) != len(out):
        raise ParameterError(
            f"must not repeat a threshold, got {out!r}",
            field="tau_grid",
            limit="no repeated threshold (value: the first repeat)",
            value=next(t for i, t in enumerate(out) if t in out[:i]),
        )
    return out


@dataclass(frozen=True)
class PrivateTheta:
    """theta of a private calibration: the Algorithm 1 ``graph`` built from S~ at tau~, the
    empirical scores ``xi_hat`` (from V~_xi), the release numerators ``scales`` s_k =
    max(B_k, xi_hat_k), the Algorithm 3 ``budgets`` eps_k (sum <= eps_rel), and ``tau``."""

    graph: CalibrationGraph
    xi_hat: np.ndarray
    scales: np.ndarray
    budgets: np.ndarray
    tau: float


@dataclass(frozen=True)
class PrivateCalibrationRelease:
    """The eps_cal-DP calibration output: S~ as a symmetric ``scores`` matrix, ``utility``
    V~_mu, ``influence`` V~_xi, the chosen ``tau`` (grid index ``tau_index``), and the budget
    ``eps_cal`` charged. Everything derived from it is post-processing."""

    scores: np.ndarray
    utility: np.ndarray
    influence: np.ndarray
    tau: float
    tau_index: int
    eps_cal: float
    constants: GcdpConstants = field(repr=False)

    def theta(
        self,
        *,
        eps_rel: float,
        bounds: object,
        coordinate_map: Sequence[Sequence[int]] | None = None,
        eps_min: float | None = None,
    ) -> PrivateTheta:
        """Algorithms 1-3 on the released values (post-processing): graph from S~ at tau~
        with Table 5's K and alpha, xi_hat = min(g_max, V~_xi), s_k = max(B_k, xi_hat_k),
        and the allocation of ``eps_rel`` with utility V~_mu. ``eps_rel`` is NOT charged
        here: the caller charges it before the Algorithm 4 release."""
        c = self.constants
        graph = build_calibration_graph(
            self.scores, tau=self.tau, degree_cap=c.degree_cap, alpha=c.alpha
        )
        xi_hat = np.minimum(self.influence, c.g_max)
        scales = release_scales(bounds, xi_hat)
        budgets = allocate_budget(
            eps_rel,
            scales,
            self.utility,
            graph.exposure_norm,
            coordinate_map,
            eps_min=eps_min,
            beta_r=c.beta_r,
            beta_g=c.beta_g,
            beta_u=c.beta_u,
            eta=c.eta,
            exposure_offset=c.exposure_offset,
        )
        return PrivateTheta(
            graph=graph, xi_hat=xi_hat, scales=scales, budgets=budgets, tau=self.tau
        )


def _check_ledger_and_rng(ledger: object, rng: object) -> None:
    """``release``'s ledger (a ``PrivacyLedger``) and generator (a numpy ``Generator``)."""
    if not isinstance(ledger, PrivacyLedger):
        raise ParameterError(
            f"must be a PrivacyLedger, got {type(ledger).__name__}",
            field="ledger",
            limit="a PrivacyLedger",
            value=ledger,
        )
    if not isinstance(rng, np.random.Generator):
        raise ParameterError(
            f"must be a numpy.random.Generator, got {type(rng).__name__}",
            field="rng",
            limit="a numpy.random.Generator",
            value=rng,
        )


@dataclass(frozen=True)
class PrivateCalibration:
    """Section 4.2 private-calibration mechanism for ``n_nodes`` = M graph nodes and ``d``
    released coordinates with budgets ``eps_G, eps_tau, eps_mu, eps_xi`` (all > 0).

    Sensitivities default to the seed's universal bounds (P, 1, d, d) and may only be
    lowered (module docstring). Every field is validated at construction."""

    eps_G: float  # the seed's name (capital G)
    eps_tau: float
    eps_mu: float
    eps_xi: float
    n_nodes: int
    d: int
    tau_grid: Sequence[float] = TAU_GRID
    score_sensitivity: float | None = None
    tau_sensitivity: float | None = None
    utility_sensitivity: float | None = None
    influence_sensitivity: float | None = None
    constants: GcdpConstants = field(default_factory=GcdpConstants)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("eps_G", "eps_tau", "eps_mu", "eps_xi"):
            set_(self, name, positive_real(getattr(self, name), name))
        n = integer_at_least(self.n_nodes, "n_nodes", 2)
        d = integer_at_least(self.d, "d", 1)
        set_(self, "n_nodes", n)
        set_(self, "d", d)
        set_(self, "tau_grid", _check_grid(self.tau_grid))
        set_(
            self,
            "score_sensitivity",
            _sensitivity(self.score_sensitivity, "score_sensitivity", pair_count(n)),
        )
        set_(self, "tau_sensitivity", _sensitivity(self.tau_sensitivity, "tau_sensitivity", 1.0))
        set_(
            self,
            "utility_sensitivity",
            _sensitivity(self.utility_sensitivity, "utility_sensitivity", d),
        )
        set_(
            self,
            "influence_sensitivity",
            _sensitivity(self.influence_sensitivity, "influence_sensitivity", d),
        )
        if not isinstance(self.constants, GcdpConstants):
            raise ParameterError(
                f"must be a GcdpConstants, got {type(self.constants).__name__}",
                field="constants",
                limit="a GcdpConstants",
                value=self.constants,
            )
        if not math.isfinite(self.eps_cal):
            raise ParameterError(
                f"must sum to a finite eps_cal, got {self.eps_cal!r}",
                field="eps_G",
                limit="a finite eps_cal",
                value=self.eps_cal,
            )

    @property
    def eps_cal(self) -> float:
        """``eps_G + eps_tau + eps_mu + eps_xi``, summed left to right in charging order."""
        return ((self.eps_G + self.eps_tau) + self.eps_mu) + self.eps_xi

    @property
    def n_pairs(self) -> int:
        return pair_count(self.n_nodes)

    def budgets(self) -> tuple[tuple[str, float], ...]:
        """(mechanism key, eps) in charging order."""
        return (("S", self.eps_G), ("tau", self.eps_tau), ("mu", self.eps_mu), ("xi", self.eps_xi))

    def _tau_mechanism(self) -> ExponentialMechanism:
        return ExponentialMechanism(eps=self.eps_tau, sensitivity=self.tau_sensitivity)

    def tau_probabilities(self, tau_utility: object) -> np.ndarray:
        """Exact selection probabilities of the grid thresholds given ``U(D, t)`` in [0, 1]."""
        u = unit_vector(tau_utility, "tau_utility", len(self.tau_grid))
        return self._tau_mechanism().probabilities(u)

    def _check_scores(self, scores: object) -> np.ndarray:
        try:
            s = np.array(scores, dtype=float)
        except (TypeError, ValueError):
            raise ParameterError(
                "must be a square array of real numbers",
                field="scores",
                limit="a square array of real numbers (value: its type)",
                value=type(scores).__name__,
            ) from None
        m = self.n_nodes
        if s.shape != (m, m):
            raise ParameterError(
                f"must have shape ({m}, {m}), got {s.shape}",
                field="scores",
                limit=f"shape ({m}, {m}) (value: its shape)",
                value=s.shape,
            )
        pairs = upper_pairs(s)
        if not np.all(np.isfinite(pairs)) or np.any(pairs < 0.0) or np.any(pairs > 1.0):
            raise ParameterError(
                "pair scores must be finite and in [0, 1]",
                field="scores",
                limit="pair scores finite and in [0, 1] (value: the first bad one)",
                value=float(pairs[~(np.isfinite(pairs) & (pairs >= 0.0) & (pairs <= 1.0))][0]),
            )
        if not np.array_equal(pairs, upper_pairs(s.T)):
            raise ParameterError(
                "must be symmetric",
                field="scores",
                limit="symmetric (value: the first (i, j), i < j, with s[i, j] != s[j, i])",
                value=tuple(int(i) for i in np.argwhere(np.triu(s != s.T, 1))[0]),
            )
        return pairs

    def release(
        self,
        scores: object,
        utility: object,
        influence: object,
        tau_utility: object,
        *,
        ledger: PrivacyLedger,
        rng: np.random.Generator,
        account: str = CAL_ACCOUNT,
        t: int | None = None,
    ) -> PrivateCalibrationRelease:
        """Release S~, tau~, V~_mu, V~_xi from the protected statistics ``scores`` (M x M
        symmetric score matrix; the diagonal is ignored), ``utility`` V_mu and ``influence``
        V_xi (length d, in [0, 1]) and ``tau_utility`` U(D, t) (one per grid threshold, in
        [0, 1]), charging ``account`` of ``ledger`` (at step ``t`` for a w-event account)."""
        pairs = self._check_scores(scores)
        mu = unit_vector(utility, "utility", self.d)
        xi = unit_vector(influence, "influence", self.d)
        u_tau = unit_vector(tau_utility, "tau_utility", len(self.tau_grid))
        _check_ledger_and_rng(ledger, rng)
        self._check_fits(ledger, account, t)

        def charge(key: str, eps: float) -> None:
            ledger.charge(account, eps, t=t, mechanism=MECHANISM_LABELS[key])

        noisy_pairs, tau_index, noisy_mu, noisy_xi = self._draw(charge, rng, pairs, mu, xi, u_tau)
        matrix = pairs_to_matrix(noisy_pairs, self.n_nodes)
        for arr in (matrix, noisy_mu, noisy_xi):
            arr.setflags(write=False)
        return PrivateCalibrationRelease(
            scores=matrix,
            utility=noisy_mu,
            influence=noisy_xi,
            tau=self.tau_grid[tau_index],
            tau_index=tau_index,
            eps_cal=self.eps_cal,
            constants=self.constants,
        )

    def _check_fits(self, ledger: PrivacyLedger, account: str, t: int | None) -> None:
        """``BudgetExhausted`` unless ``account`` can cover ``eps_cal`` (at step ``t`` for
        a w-event account); nothing is charged or drawn."""
        acct = ledger.account(account)
        fits = (
            acct.can_charge(t, self.eps_cal)
            if isinstance(acct, WindowAccount)
            else acct.can_charge(self.eps_cal)
        )
        if not fits:
            raise BudgetExhausted(
                f"private calibration needs eps_cal = {self.eps_cal:.6g}, which the account "
                f"{account!r} cannot cover; nothing was charged or drawn",
                field="eps_cal",
            )

    def _draw(
        self,
        charge: Callable[[str, float], None],
        rng: np.random.Generator,
        pairs: np.ndarray,
        mu: np.ndarray,
        xi: np.ndarray,
        u_tau: np.ndarray,
    ) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
        """The four releases, each charged before it is drawn, in this order: the pair
        scores, tau (the exponential mechanism), V_mu, V_xi (noisy values clipped to
        [0, 1])."""
        charge("S", self.eps_G)
        noisy_pairs = np.clip(
            _exact_laplace(rng, pairs, self.score_sensitivity, self.eps_G), 0.0, 1.0
        )

        charge("tau", self.eps_tau)
        tau_index = self._tau_mechanism().sample(u_tau, rng)

        charge("mu", self.eps_mu)
        noisy_mu = np.clip(_exact_laplace(rng, mu, self.utility_sensitivity, self.eps_mu), 0.0, 1.0)

        charge("xi", self.eps_xi)
        noisy_xi = np.clip(
            _exact_laplace(rng, xi, self.influence_sensitivity, self.eps_xi), 0.0, 1.0
        )
        return noisy_pairs, tau_index, noisy_mu, noisy_xi
