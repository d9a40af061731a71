"""The audit driver: a canary pair, a witness battery, selection, evaluation, verdict
(seed 001, Sections 3.2-3.5; sample sizes on the reference page gcdp-and-audit.md).

Theory of operation. A ``Canary`` is a fixed neighbouring pair (D, D') given as two
samplers: ``sample_d(rng, n)`` / ``sample_dprime(rng, n)`` run the mechanism under test n
times on D / D' and return the n outputs. The four sample sets (selection and evaluation,
each world) are drawn from four independent generators spawned from one
``numpy.random.SeedSequence`` (independent seeds per world and per phase). Every witness
(a callable mapping the n outputs to n real scores; user callables welcome) is scored on the
SELECTION samples only (``selection.select_test``); the witness, threshold, tail and
privacy direction with the largest selection bound are fixed, and only then is that one
test counted on the EVALUATION samples: one-sided Clopper-Pearson bounds at gamma/2 each
and ``eps_LB = ln((alpha_lo - delta) / beta_hi)``. Choosing the witness on selection data
means exactly one test is certified, so the false-alarm probability of a correct mechanism
is <= gamma with no multiple-testing correction. ``eps_LB > eps`` is a violation (a
certified counterexample); anything else is inconclusive, never a proof of privacy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from ldpfleet.collector.audit.selection import DistinguishingTest, event_counts, select_test
from ldpfleet.collector.audit.stats import (
    check_gamma,
    check_seed,
    eps_lower_bound,
    is_real,
    largest_eps_lb,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanism_contract import EPS_MAX, EPS_MIN

__all__ = [
    "EPS_CLAIM_RULE",
    "ZERO_CLAIM_ENTRIES",
    "AuditResult",
    "Canary",
    "Witness",
    "WitnessResult",
    "audit",
    "audit_samples",
    "check_claimed_eps",
]

Sampler = Callable[[np.random.Generator, int], Any]
Witness = Callable[[Any], np.ndarray]


@dataclass(frozen=True)
class Canary:
    """A neighbouring pair as two mechanism samplers (n runs on D, n runs on D')."""

    name: str
    sample_d: Sampler
    sample_dprime: Sampler
    description: str = ""


@dataclass(frozen=True)
class WitnessResult:
    """One witness's best test on the selection samples."""

    witness: str
    threshold: float
    tail: int
    privacy_direction: int
    selection_eps: float


@dataclass(frozen=True)
class AuditResult:
    """The certified outcome of one audit (one canary, one chosen witness test)."""

    mechanism: str
    canary: str
    eps_claimed: float
    delta: float
    gamma: float
    n_sel: int
    n_eval: int
    witness: str
    threshold: float
    tail: int
    privacy_direction: int
    hits_numerator: int  # evaluation outputs in the event, world of the numerator
    hits_denominator: int
    n_numerator: int
    n_denominator: int
    alpha_lo: float
    beta_hi: float
    eps_lb: float
    verdict: str  # "violation" | "inconclusive"
    seed: int | None = None
    selection: list[WitnessResult] = field(default_factory=list)
    canary_pair: tuple[float, float] | None = None  # the inputs chosen by a pair search
    inputs_searched: int | None = None  # how many grid inputs that search compared
    # the largest eps_LB these evaluation runs could certify at all (every run of the
    # numerator world in the event, none of the other): at or below eps_claimed, the audit
    # could not have found a violation (too few trials)
    eps_lb_max: float = math.inf
    # a user mechanism stating ``density``: the largest log-ratio its own density gives
    # (``stated_density.stated_density_check``; None: no density, dropped from the JSON)
    stated_density: dict | None = None

    def to_dict(self) -> dict:
        """JSON-ready (``-inf`` bounds become None; the pair-search fields only when set)."""
        out = asdict(self)
        for key in ("canary_pair", "inputs_searched", "stated_density"):
            if out[key] is None:
                del out[key]
        if "canary_pair" in out:
            out["canary_pair"] = list(out["canary_pair"])
        if not math.isfinite(out["eps_lb_max"]):
            out["eps_lb_max"] = None if out["eps_lb_max"] < 0 else str(out["eps_lb_max"])
        for key in ("eps_lb", "threshold"):
            if not math.isfinite(out[key]):
                out[key] = None if key == "eps_lb" else str(out[key])
        for row in out["selection"]:
            for key in ("selection_eps", "threshold"):
                if not math.isfinite(row[key]):
                    row[key] = None if key == "selection_eps" else str(row[key])
        return out


def _check_sizes(n_sel: int, n_eval: int) -> None:
    for name, value in (("n_sel", n_sel), ("n_eval", n_eval)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ParameterError(
                f"must be an integer >= 1, got {value!r}",
                field=name,
                limit="an integer >= 1",
                value=value,
            )


# The one rule of a claimed eps, for every audit (``audit``, ``battery.run_audit``,
# ``ldpfleet audit --eps``): a budget the mechanisms compute (``check_budget``'s range,
# [EPS_MIN, EPS_MAX]), or 0 for an audit whose claim is that nothing leaks (secagg's).
# NaN said "a finite number >= 0" here while 0 and 51 said "in (0, 50]" (the mechanism's
# check) and 1e-20 "must be >= 1e-12" (helper B, 2026-12-07): one sentence for them all.
# The battery entries whose claim is that nothing leaks (eps = 0 whatever budget is passed):
# the only ones ``ldpfleet audit --eps 0`` audits (test_B4_audit_eps.py checks the list
# against the specs).
ZERO_CLAIM_ENTRIES = ("secagg", "secagg-split", "secagg-dropout")
EPS_CLAIM_RULE = (
    f"a number in [{EPS_MIN:g}, {EPS_MAX:g}], or 0 for an audit that claims nothing leaks "
    f"({', '.join(ZERO_CLAIM_ENTRIES)})"
)


def check_claimed_eps(eps: object, *, zero: bool = True) -> float:
    """A claimed eps by ``EPS_CLAIM_RULE``: a real number in [EPS_MIN, EPS_MAX], or 0 when
    ``zero`` (the audit's claim may be that nothing leaks; ``ldpfleet audit`` passes False
    for an entry that claims a budget). Returns it as a float.

    Raises:
        ParameterError: field ``eps``, the rule as its limit, the value (text too: the
            CLI's ``--eps abc``), in one sentence whatever the value."""
    try:
        value = float(eps) if is_real(eps) else math.nan  # type: ignore[arg-type]
    except OverflowError:  # an int beyond a float (10**400)
        value = math.inf
    if not (EPS_MIN <= value <= EPS_MAX or (zero and value == 0.0)):
        raise ParameterError(
            f"must be {EPS_CLAIM_RULE}, got {eps!r}",
            field="eps",
            limit=EPS_CLAIM_RULE,
            value=eps,
        )
    return value


def _check_eps(eps: float) -> float:
    return check_claimed_eps(eps)


def _scores(witness: Witness, outputs: Any, n: int, name: str) -> np.ndarray:
    values = np.asarray(witness(outputs), dtype=float).ravel()
    if values.size != n:
        raise ParameterError(
            f"returned {values.size} scores for {n} outputs",
            field=name,
            limit=f"{n} scores, one per output (value: the count returned)",
            value=values.size,
        )
    if not np.all(np.isfinite(values)):
        raise ParameterError(
            "returned a non-finite score",
            field=name,
            limit="finite scores (value: the first non-finite one)",
            value=float(values[~np.isfinite(values)][0]),
        )
    return values


def _check_levels(
    gamma: float, selection_gamma: float | None, witnesses: Mapping[str, Witness]
) -> float:
    """``gamma``, then ``selection_gamma`` and at least one witness; the level the
    candidate events are scored at on the selection runs."""
    check_gamma(gamma)
    choose_at = gamma if selection_gamma is None else check_gamma(selection_gamma)
    if not witnesses:
        raise ParameterError(
            "needs at least one witness",
            field="witnesses",
            limit="at least one witness",
            value=witnesses,
        )
    return choose_at


def _select_rows(
    witnesses: Mapping[str, Witness], sel_d: Any, sel_dp: Any, *, choose_at: float, delta: float
) -> list[WitnessResult]:
    """Each witness's best test on the selection runs (``selection.select_test``)."""
    n_sel, n_sel_p = len(sel_d), len(sel_dp)
    rows: list[WitnessResult] = []
    for name, witness in witnesses.items():
        test = select_test(
            _scores(witness, sel_d, n_sel, name),
            _scores(witness, sel_dp, n_sel_p, name),
            gamma=choose_at,
            delta=delta,
        )
        rows.append(
            WitnessResult(
                name, test.threshold, test.tail, test.privacy_direction, test.selection_eps
            )
        )
    return rows


def _evaluation_counts(
    witness: Witness, name: str, chosen: DistinguishingTest, ev_d: Any, ev_dp: Any
) -> tuple[int, int, int, int]:
    """The chosen test counted on the evaluation runs: ``(k_num, n_num, k_den, n_den)``,
    the numerator world's hits and runs, then the denominator's (for a negative privacy
    direction, the complement event with the worlds swapped)."""
    n_ev, n_ev_p = len(ev_d), len(ev_dp)
    hits_d = event_counts(_scores(witness, ev_d, n_ev, name), chosen.threshold, chosen.tail)
    hits_dp = event_counts(_scores(witness, ev_dp, n_ev_p, name), chosen.threshold, chosen.tail)
    if chosen.privacy_direction > 0:
        return hits_d, n_ev, hits_dp, n_ev_p
    # the complement event with the worlds swapped
    return n_ev_p - hits_dp, n_ev_p, n_ev - hits_d, n_ev


def audit_samples(
    selection: tuple[Any, Any],
    evaluation: tuple[Any, Any],
    witnesses: Mapping[str, Witness],
    *,
    eps: float,
    delta: float = 0.0,
    gamma: float = 0.05,
    mechanism: str = "",
    canary: str = "",
    seed: int | None = None,
    selection_gamma: float | None = None,
) -> AuditResult:
    """Audit already-collected outputs: ``selection = (outputs under D, under D')`` picks the
    test, ``evaluation`` (independent runs) certifies it. Used by ``audit`` and by the
    end-to-end audit, whose outputs come from fleet traces. ``selection_gamma`` (default
    ``gamma``) is the level the candidate events are scored at on the selection runs; the
    certified bound is at ``gamma`` whatever it is."""
    eps = _check_eps(eps)
    choose_at = _check_levels(gamma, selection_gamma, witnesses)
    sel_d, sel_dp = selection
    ev_d, ev_dp = evaluation
    n_sel, n_sel_p, n_ev, n_ev_p = (len(x) for x in (sel_d, sel_dp, ev_d, ev_dp))
    rows = _select_rows(witnesses, sel_d, sel_dp, choose_at=choose_at, delta=delta)
    best = max(rows, key=lambda r: r.selection_eps)  # first witness wins ties
    chosen = DistinguishingTest(
        best.threshold, best.tail, best.privacy_direction, best.selection_eps
    )
    k_num, n_num, k_den, n_den = _evaluation_counts(
        witnesses[best.witness], best.witness, chosen, ev_d, ev_dp
    )
    eps_lb, alpha_lo, beta_hi = eps_lower_bound(
        k_num, n_num, k_den, n_den, gamma=gamma, delta=delta
    )
    return AuditResult(
        mechanism=mechanism,
        canary=canary,
        eps_claimed=eps,
        delta=float(delta),
        gamma=float(gamma),
        n_sel=min(n_sel, n_sel_p),
        n_eval=min(n_ev, n_ev_p),
        witness=best.witness,
        threshold=chosen.threshold,
        tail=chosen.tail,
        privacy_direction=chosen.privacy_direction,
        hits_numerator=k_num,
        hits_denominator=k_den,
        n_numerator=n_num,
        n_denominator=n_den,
        alpha_lo=alpha_lo,
        beta_hi=beta_hi,
        eps_lb=eps_lb,
        verdict="violation" if eps_lb > eps else "inconclusive",
        seed=seed,
        selection=rows,
        eps_lb_max=largest_eps_lb(n_num, n_den, gamma=gamma, delta=delta),
    )


def audit(
    canary: Canary,
    witnesses: Mapping[str, Witness],
    *,
    eps: float,
    delta: float = 0.0,
    n_sel: int = 1000,
    n_eval: int = 1000,
    gamma: float = 0.05,
    seed: int = 0,
    mechanism: str = "",
) -> AuditResult:
    """Run the canary's mechanism ``n_sel + n_eval`` times per world (four independent
    generators), choose the test on the selection runs, certify it on the evaluation runs."""
    _check_sizes(n_sel, n_eval)
    seed = check_seed(seed)
    sel_d_seed, sel_dp_seed, ev_d_seed, ev_dp_seed = np.random.SeedSequence(seed).spawn(4)

    def run(sampler: Sampler, seq: np.random.SeedSequence, n: int) -> Any:
        return sampler(np.random.default_rng(seq), n)

    return audit_samples(
        (run(canary.sample_d, sel_d_seed, n_sel), run(canary.sample_dprime, sel_dp_seed, n_sel)),
        (run(canary.sample_d, ev_d_seed, n_eval), run(canary.sample_dprime, ev_dp_seed, n_eval)),
        witnesses,
        eps=eps,
        delta=delta,
        gamma=gamma,
        mechanism=mechanism,
        canary=canary.name,
        seed=seed,
    )
