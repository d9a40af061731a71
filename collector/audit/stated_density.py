"""The stated-density check: does a mechanism's own ``density`` contradict its claim?

Theory of operation. A user mechanism may state ``density(y, v)``, the law of its report
y given input v (docs/mechanisms.md). Pure eps-LDP means ``density(y, a) <= e^eps
density(y, b)`` for EVERY report y and inputs a, b, including reports so far in a tail
that a few thousand runs never draw them. A Gaussian mechanism calibrated for (eps,
delta) and claimed as pure eps has a log-ratio linear in y: below eps wherever the
audit's samples fall (eps_LB -0.28 at a claim of 1 with 6,000 runs per world; helper D,
2026-12-06), above it from about sigma^2 eps out, where a sample needs ~10^7 runs. The
statistical audit cannot certify that; the mechanism's own density states it.

So ``stated_density_check`` evaluates the density at the reports of a small sample (a
generator of its own, seeded from the audit's seed: the audit's draws are untouched) and
at points beyond them (the sample's range pushed out by 1/2, 1 and 2 widths each side),
for every pair of the audit's inputs, and reports the largest log-ratio it finds.
Probes beyond the sample that the density refuses (raises, a NaN, a negative value: a
discrete mechanism's table indexed off its support) are skipped; reports of the sample
itself are not (the likelihood-ratio witness evaluates them already). A density of 0 for
one input where the other's is at least ``SUPPORT_FLOOR`` (far above underflow) is an
output only one input can produce: an infinite ratio. Both below ``RATIO_FLOOR`` (near
underflow): skipped, no ratio is reliable there.

This is not a statistical bound: it is the mechanism's own statement, checked. A wrong
``density`` on a private mechanism is flagged too (and it would mislead the
likelihood-ratio witness and ``bench mechanisms``' analytic column as well): either way
the plugin needs a fix. The flag needs ``max_log_ratio > eps (1 + REL_TOL) + ABS_TOL``,
so a tight mechanism (Laplace, RR: ratio exactly e^eps) is not flagged for its rounding.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

__all__ = ["ABS_TOL", "REL_TOL", "stated_density_check"]

SAMPLE_PER_INPUT = 200  # reports drawn at each of the inputs 0, 1/2, 1
PUSH_OUT = (0.5, 1.0, 2.0)  # probes: the sample's range pushed out by these widths
REL_TOL = 1e-6  # a tight density's log-ratio is eps up to floating-point rounding
ABS_TOL = 1e-9
SUPPORT_FLOOR = 1e-200  # a density this large is no underflow
RATIO_FLOOR = 1e-290  # both densities below this: no reliable ratio


def _densities(mech, y: np.ndarray, v: float) -> np.ndarray | None:
    """``density(y, v)`` as float64, or None when the density refuses those reports."""
    try:
        d = np.asarray(mech.density(y, v), dtype=np.float64)
        d = np.broadcast_to(d, y.shape).astype(np.float64)
    except Exception:  # a probe off the support: skipped, never fatal
        return None
    if not np.all(np.isfinite(d)) or np.any(d < 0):
        return None
    return d


def _log_ratio(da: np.ndarray, db: np.ndarray) -> np.ndarray:
    """log(da / db) where it is reliable; +inf where only da is (clearly) positive;
    NaN where neither is reliable."""
    out = np.full(da.shape, np.nan)
    both = (da >= RATIO_FLOOR) & (db >= RATIO_FLOOR)
    out[both] = np.log(da[both]) - np.log(db[both])
    out[(db == 0) & (da >= SUPPORT_FLOOR)] = math.inf
    return out


def stated_density_check(
    mech, name: str, eps: float, inputs: Sequence[float], seed: int
) -> dict | None:
    """The largest log-ratio ``density(y, a) / density(y, b)`` over the pairs of
    ``inputs`` and the probed reports (module docstring), as a JSON-ready dict
    (``max_log_ratio``, the ``report`` and ``inputs`` where it is reached, ``probes``,
    ``exceeds_claim``), or None when ``mech`` states no density."""
    from ldpfleet.protocol.mechanism_contract import contract_reports

    if not callable(getattr(mech, "density", None)):
        return None
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5D]))
    sample = np.concatenate(
        [contract_reports(mech, np.full(SAMPLE_PER_INPUT, x), rng, name) for x in (0.0, 0.5, 1.0)]
    ).astype(np.float64)
    lo, hi = float(sample.min()), float(sample.max())
    width = hi - lo
    probes = [sample]
    if width > 0 and math.isfinite(width):
        for k in PUSH_OUT:
            probes.append(np.array([lo - k * width, hi + k * width]))
    best = {"max_log_ratio": -math.inf, "report": None, "inputs": None}
    checked = 0
    for index, y in enumerate(probes):
        dens = {x: _densities(mech, y, x) for x in inputs}
        if any(d is None for d in dens.values()):
            if index == 0:  # the sample's own reports: the witness already needs them
                return None
            continue
        checked += y.size
        for a, b in itertools.permutations(inputs, 2):
            ratio = _log_ratio(dens[a], dens[b])
            if np.all(np.isnan(ratio)):
                continue
            i = int(np.nanargmax(ratio))
            if ratio[i] > best["max_log_ratio"]:
                best = {"max_log_ratio": float(ratio[i]), "report": float(y[i]), "inputs": [a, b]}
    top = best["max_log_ratio"]
    return {
        "max_log_ratio": top if math.isfinite(top) else (None if top < 0 else "inf"),
        "report": best["report"],
        "inputs": best["inputs"],
        "probes": checked,
        "exceeds_claim": bool(top > eps * (1 + REL_TOL) + ABS_TOL),
    }
