"""CADR-LDP budget split and its ledger — theory of operation.

The CADR-LDP spec (``/work/shared/reference/cadr-ldp.md``; Zhang et al., arXiv 2507.10627)
spends a node's total budget ``eps`` on three releases that all read the node's adjacency
list, with ``0 < alpha < 1`` (the seed's Fig. 6 uses ``alpha = 0.1``):

- NDOE: ``alpha eps / 2``, the exponential mechanism (McSherry & Talwar, FOCS 2007);
- LPEA-LOW: ``alpha eps / 2``, Warner randomized response (Warner, JASA 1965);
- DSR: ``(1 - alpha) eps``, the Laplace mechanism (Dwork et al., TCC 2006).

By sequential composition the three together are ``eps``-node-LDP.

The DP θ search (``protocol.cadr_theta_noise``; the "dp" pipeline) is a fourth release:
the collector opens one secure sum of noisy bucket counts. Its budget comes out of the
``alpha`` part, so that DSR keeps ``(1 - alpha) eps`` (the release's noise, and the
post-processing aimed at it, do not change): with ``theta_fraction = f``

- θ search: ``f alpha eps``, the two-sided geometric mechanism by Pólya shares;
- NDOE and LPEA: ``(1 - f) alpha eps / 2`` each;
- DSR: ``(1 - alpha) eps``,

still ``eps`` in all, now covering everything the collector sees (the θ-search sum, the
NDOE codes, the RR answers, the release). ``f = 0`` is the paper's split (exact θ search,
charged nothing). The "dp" pipeline uses ``THETA_FRACTION = 0.6`` (eps = 3, alpha = 0.1:
0.18 for θ, 0.06 each for NDOE and LPEA). Measured (docs/cadr-private.md, θ-search
accuracy): at 1/3 the noisy θ was within 25% of the exact rule's θ in 23-33% of seeds at
eps = 0.5-1, at 0.6 in 40-78%; the NDOE codes are near-uniform even at the paper's 0.15.

``open_ledger`` gives a device a ``PrivacyLedger`` with one total-budget account ``"node"``
of ``eps``; ``charge_all`` charges the parts with their mechanism labels, so the account's
spend is ``eps`` (up to floating rounding, far below ``1e-12``) and any further charge is
refused with ``BudgetExhausted`` by the ledger (whose relative tolerance is ``1e-9``: a
charge below ``1e-9 eps`` would be absorbed as rounding, any real release is far above
that).

Caveat on LPEA (recorded, not resolved here): the spec charges Warner RR ``alpha eps / 2``
ONCE per node, and this module follows it. A node that answers ``k`` edge-add requests gives
``k`` independent RR answers about its own state ``|Bbar_j| < theta``; sequential composition
alone bounds that by ``k alpha eps / 2``, so the once-per-node charge relies on the paper's
own argument (not restated in the spec) and should be checked by whoever wires LPEA.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ldpfleet.protocol.errors import BudgetExhausted, LocalProtocolError, ParameterError
from ldpfleet.protocol.ledger import BudgetAccount, PrivacyLedger
from ldpfleet.protocol.validate import positive_real

__all__ = [
    "ACCOUNT",
    "ALPHA_DEFAULT",
    "MECHANISM_LABELS",
    "THETA_FRACTION",
    "THETA_LABEL",
    "CadrBudget",
]

ACCOUNT = "node"
ALPHA_DEFAULT = 0.1
MECHANISM_LABELS = ("exponential", "warner_rr", "laplace")
THETA_LABEL = "geometric"  # the DP θ search's two-sided geometric mechanism
THETA_FRACTION = 0.6  # the dp pipeline's share of the alpha part for the θ search


@dataclass(frozen=True)
class CadrBudget:
    """The split of a node's budget ``eps`` into θ search / NDOE / LPEA / DSR (module
    docstring); ``theta_fraction = 0`` (default): the paper's three parts, ``theta = 0``."""

    eps: float
    alpha: float = ALPHA_DEFAULT
    theta_fraction: float = 0.0
    theta: float = field(init=False, compare=False)
    ndoe: float = field(init=False, compare=False)
    lpea: float = field(init=False, compare=False)
    dsr: float = field(init=False, compare=False)

    def __post_init__(self) -> None:
        eps = positive_real(self.eps, "eps")
        alpha = positive_real(self.alpha, "alpha")  # refuses alpha <= 0, NaN, inf, bools
        if alpha >= 1.0:
            raise ParameterError(f"must satisfy 0 < alpha < 1, got {self.alpha!r}", field="alpha")
        f = self.theta_fraction
        if isinstance(f, bool) or not isinstance(f, int | float) or not 0.0 <= f < 1.0:
            raise ParameterError(
                f"must satisfy 0 <= theta_fraction < 1, got {f!r}", field="theta_fraction"
            )
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "theta_fraction", float(f))
        object.__setattr__(self, "theta", f * alpha * eps)
        if f == 0.0:  # the paper's split, with its floating operations
            object.__setattr__(self, "ndoe", alpha * eps / 2.0)
            object.__setattr__(self, "lpea", alpha * eps / 2.0)
        else:
            object.__setattr__(self, "ndoe", (1.0 - f) * alpha * eps / 2.0)
            object.__setattr__(self, "lpea", (1.0 - f) * alpha * eps / 2.0)
        object.__setattr__(self, "dsr", (1.0 - alpha) * eps)

    @classmethod
    def for_pipeline(cls, eps: float, alpha: float, pipeline: str, searched: bool) -> CadrBudget:
        """The split a run uses: ``THETA_FRACTION`` when the "dp" pipeline searches θ
        (``searched``: the rule is not a given θ), the paper's split otherwise."""
        if pipeline not in ("dp", "paper"):
            raise ParameterError(f"must be 'dp' or 'paper', got {pipeline!r}", field="pipeline")
        return cls(eps, alpha, THETA_FRACTION if pipeline == "dp" and searched else 0.0)

    def parts(self) -> tuple[tuple[str, float], ...]:
        """``(mechanism label, budget)`` in release order: the θ search (only when
        ``theta_fraction > 0``), NDOE, LPEA, DSR."""
        paper = tuple(zip(MECHANISM_LABELS, (self.ndoe, self.lpea, self.dsr), strict=True))
        return ((THETA_LABEL, self.theta), *paper) if self.theta > 0 else paper

    def as_dict(self) -> dict[str, float]:
        """The split by part name (``theta`` only when it is charged): results.json's
        ``budget``."""
        names = {THETA_LABEL: "theta", "exponential": "ndoe", "warner_rr": "lpea"}
        return {names.get(label, "dsr"): eps for label, eps in self.parts()}

    def open_ledger(self, owner: str) -> PrivacyLedger:
        """A fresh ledger for device ``owner`` with one ``BudgetAccount`` ``"node"`` of eps."""
        ledger = PrivacyLedger(owner)
        ledger.open_account(ACCOUNT, BudgetAccount(self.eps))
        return ledger

    def charge_all(self, ledger: PrivacyLedger) -> None:
        """Charge every part (``parts()``) to the ledger's ``"node"`` account, all or
        nothing: if they do not fit in what is left, ``BudgetExhausted`` is raised before any
        charge is recorded."""
        acct = ledger.account(ACCOUNT)
        if not isinstance(acct, BudgetAccount):
            raise LocalProtocolError(f"account {ACCOUNT!r} must be a total budget", field="ledger")
        total = math.fsum(eps for _, eps in self.parts())
        if not acct.can_charge(total):
            acct.refusals += 1
            raise BudgetExhausted(
                f"the CADR-LDP releases need {total:.6g} but only {acct.remaining:.6g} "
                f"of eps = {acct.eps:.6g} is left",
                field="eps",
            )
        for label, eps in self.parts():
            ledger.charge(ACCOUNT, eps, mechanism=label)
