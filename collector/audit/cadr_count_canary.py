"""Canaries of the DP θ search's count release, through the device machines (issue 20).

What the collector sees of the θ search of the "dp" pipeline is ONE secure sum: the sum of
the surviving devices' answers to the bucket query, each answer the one-hot vector of the
device's degree bucket plus its Pólya noise share (``protocol.cadr_theta_noise``). These
canaries drive real ``protocol.cadr_device.CadrDevice`` machines with the plan
(``theta_fraction > 0``) and the bucket ``CadrQuery`` the collector broadcasts, take the
answer each machine hands to its secure-aggregation client (``CadrDevice.theta_answer``)
and output the survivors' sum — exactly the vector the secure sum opens
(tests/e2e/test_cadr_theta_noise.py checks the secure sum equals it).

* ``cadr-theta-count`` — ``COUNT_DEVICES`` devices, all survive, the plan's
  ``noise_parties = COUNT_DEVICES``: the noise of the mechanism itself.
* ``cadr-theta-count-dropout`` — ``DROPOUT_DEVICES`` = 10 devices, the plan's
  ``noise_parties`` from the real ``protocol.cadr_theta_noise.noise_parties(10)``, looked
  up through the module when the plan is built (so a bug planted in that function is in
  the plan the devices get), and only the first ``DROPOUT_SURVIVORS`` = 9 answers summed:
  the fewest survivors the collector's rule accepts (the correct ``noise_parties(10)``,
  ``ceil(0.9 · 10)``; device 9 drops out, and its machine is not run since none of its
  answer reaches the sum). Correct, 9 shares of ``NB(1/9)`` make the whole two-sided
  geometric noise; with ``noise_parties(n) = n`` they are 9 of ``NB(1/10)``, less than the
  claim (the ``theta noise without the dropout margin`` mutant, ``collector.audit.mutants``).

D: device 0 lists no neighbour (bucket 0); D': it lists ``CADR_COUNT_BOUND`` neighbours
(the last bucket) — node-LDP neighbours, only device 0's list changes (device 0 always
survives); the other devices list one neighbour each in both worlds. Claim: the θ part of
the plan's budget (``CadrBudget.theta``, the plan's eps chosen so that it is the audited
eps). Witnesses: the first bucket, the last bucket, and first minus last (the two entries
that move: the L1 sensitivity is 2, split over them); the dropout entry adds
``min(first, 1 - last)``, whose event ``>= t`` is the quadrant {first >= t, last <= 1 - t}.
With the correct noise (two-sided geometric of ratio ``a = exp(-eps / 2)`` on each entry,
memoryless tails) the event's log-ratio between the worlds is exactly eps at every
``t >= 1``; with the mutant's ``NB(0.9) - NB(0.9)`` per entry it is eps + 0.16 at
eps = 2, t = 1 (exact sums; docs/audit.md, "cadr-theta-count-dropout"). First minus last
cannot see that mutant: its noise is ``NB(1.8) - NB(1.8)``, whose tail ratios stay below
e^eps at every threshold (1.95 at eps = 2), and one entry alone leaks eps / 2 + 0.1.

One budget in ``audit all`` (``DROPOUT_AUDIT_EPS``, ``battery.audit_all_budgets``). What
the dropout entry checks beyond ``cadr-theta-count`` is the plan's ``noise_parties``
margin — integer logic that does not depend on eps — while the mechanism itself (the
shares, their ratio, the one-hot vector) is audited at every budget by
``cadr-theta-count``. Its planted bug is visible only near eps = 2: with 40,000 runs per
world the exact catch probability at the battery's per-audit gamma 0.05/85 is 0.958 at
eps = 2 (0.957 at 1.5, 0.82 at 1, 0.13 at 0.5; scripts/C_dropout_power.py, docs/audit.md).
So ``audit all`` runs this entry once, at the listed budget nearest ``DROPOUT_AUDIT_EPS``
= 2 on a log scale: its audits at 0.5 and 1 cost about 95 + 75 s of CPU, over a third of
the 87-audit battery's 462 s, for little power. ``ldpfleet audit
cadr-theta-count-dropout --eps E`` still audits any single budget.
"""

from __future__ import annotations

import math

import numpy as np
from ldpfleet.collector.audit.core import Canary
from ldpfleet.protocol.cadr_budget import THETA_EPS_MIN
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "COUNT_BATTERY",
    "COUNT_DEVICES",
    "DROPOUT_AUDIT_EPS",
    "DROPOUT_DEVICES",
    "DROPOUT_SURVIVORS",
    "cadr_count_release",
    "dropout_count_release",
]

RUN = "audit"
COUNT_DEVICES = 4
DROPOUT_DEVICES = 10
# the fewest survivors the collector accepts of 10: the correct noise_parties(10) = ceil(0.9 ·
# 10). A constant, not a call: under the planted bug the function says 10 (no dropout at
# all); tests/e2e/test_cadr_theta_noise.py checks it against the real function.
DROPOUT_SURVIVORS = 9
CADR_COUNT_BOUND = 8  # the plan's public degree bound D
# the one budget of the dropout entry in ``audit all`` (module docstring, "One budget")
DROPOUT_AUDIT_EPS = 2.0
ALPHA = 0.1


def _count_messages(eps_theta: float, parties: int) -> tuple:
    """The plan (θ budget ``eps_theta``, ``noise_parties = parties``) and the bucket query
    the collector broadcasts, with the topics they arrive on."""
    from ldpfleet.protocol import topics
    from ldpfleet.protocol.cadr_budget import THETA_FRACTION
    from ldpfleet.protocol.cadr_messages import CadrPlan, CadrQuery
    from ldpfleet.protocol.cadr_theta_noise import bucket_grid

    collector = {"run": RUN, "sender": topics.COLLECTOR_ID}
    plan = CadrPlan(
        **collector,
        seq=1,
        eps=eps_theta / (THETA_FRACTION * ALPHA),
        alpha=ALPHA,
        method="ll",
        degree_bound=CADR_COUNT_BOUND,
        ndoe_parts=4,
        theta_fraction=THETA_FRACTION,
        noise_parties=parties,
    )
    query = CadrQuery(
        **collector,
        seq=2,
        session="theta-buckets",
        measure="bucket",
        thresholds=bucket_grid(CADR_COUNT_BOUND),
    )
    plan_topic = topics.parse(topics.ctl(RUN, "cadr_plan"))
    query_topic = topics.parse(topics.ctl(RUN, "cadr_query"))
    return (plan_topic, plan), (query_topic, query)


def cadr_count_release(
    eps_theta: float,
    listed: int,
    rng: np.random.Generator,
    *,
    parties: int = COUNT_DEVICES,
    survivors: int = COUNT_DEVICES,
) -> np.ndarray:
    """The opened sum of one DP θ search (module docstring): devices ``0 .. survivors - 1``
    get the plan with ``noise_parties = parties`` and the bucket query, and their answers
    are summed; device 0 lists ``listed`` neighbours, the others one each."""
    return _count_releases(eps_theta, listed, rng, 1, parties=parties, survivors=survivors)[0]


def _count_releases(
    eps_theta: float, listed: int, rng: np.random.Generator, n: int, *, parties: int,
    survivors: int,
) -> np.ndarray:  # fmt: skip
    """``n`` opened sums of ``cadr_count_release`` drawn one after the other from ``rng``
    (rows): each run builds its ``survivors`` fresh ``CadrDevice`` machines and feeds them
    the plan and the query, as one run alone does. What no run's randomness touches — the
    two messages and their topics (immutable), the devices' names and neighbour lists — is
    made once for the ``n`` runs instead of once per run: the same machines get the same
    inputs and draw the same values in the same order (tests/unit/test_A_count_batch.py)."""
    from ldpfleet.protocol.cadr_device import CadrDevice

    messages = _count_messages(eps_theta, parties)
    devices = [
        (f"d{i:03d}", [f"m{i}x{j:03d}" for j in range(listed if i == 0 else 1)])
        for i in range(survivors)
    ]
    out = []
    for _ in range(n):
        total = None
        for i, (name, neighbours) in enumerate(devices):
            device = CadrDevice(RUN, name, neighbours, rng)
            for topic, message in messages:
                device.receive(topic, message, 0.0)
            assert device.budget is not None and device.theta_answer is not None
            if i == 0 and not math.isclose(device.budget.theta, eps_theta, rel_tol=1e-9):
                raise AssertionError(
                    f"the device's θ budget is {device.budget.theta}, the audit claims {eps_theta}"
                )
            total = device.theta_answer if total is None else total + device.theta_answer
        out.append(np.asarray(total))
    return np.array(out)


def dropout_count_release(eps_theta: float, listed: int, rng: np.random.Generator) -> np.ndarray:
    """The opened sum of the dropout canary (module docstring): ``DROPOUT_SURVIVORS`` of
    ``DROPOUT_DEVICES`` answers, the plan's ``noise_parties`` from the real function."""
    return _dropout_releases(eps_theta, listed, rng, 1)[0]


def _dropout_releases(eps_theta: float, listed: int, rng: np.random.Generator, n: int):
    """``n`` opened sums of ``dropout_count_release`` (rows; ``_count_releases``)."""
    from ldpfleet.protocol import cadr_theta_noise

    parties = cadr_theta_noise.noise_parties(DROPOUT_DEVICES)  # at call time: a planted bug
    return _count_releases(eps_theta, listed, rng, n, parties=parties, survivors=DROPOUT_SURVIVORS)


def _count_batch(eps_theta: float, listed: int, rng: np.random.Generator, n: int):
    """``n`` opened sums of ``cadr_count_release`` with its defaults (rows)."""
    return _count_releases(
        eps_theta, listed, rng, n, parties=COUNT_DEVICES, survivors=COUNT_DEVICES
    )


def _first(y) -> np.ndarray:
    return np.asarray(y)[:, 0]


def _last(y) -> np.ndarray:
    return np.asarray(y)[:, -1]


WITNESSES = {
    "first minus last bucket": lambda y: _first(y) - _last(y),
    "first bucket": _first,
    "last bucket": _last,
}
DROPOUT_WITNESSES = {
    **WITNESSES,
    "min(first, 1 - last bucket)": lambda y: np.minimum(_first(y), 1 - _last(y)),
}


def _count_spec(name: str, releases, label: str, witnesses: dict, trials: int):
    """The battery builder of one count canary: ``releases(eps, listed, rng, n)`` is ``n``
    opened sums (rows) with device 0 listing ``listed`` neighbours."""

    def build(eps: float, delta: float):
        from ldpfleet.collector.audit.battery import AuditSpec

        if eps < THETA_EPS_MIN:  # the θ budget a real dp run refuses (CadrBudget)
            raise ParameterError(
                f"{name} audits the θ search's budget ε_θ, which a dp run refuses below "
                f"{THETA_EPS_MIN} (its exact Pólya shares cost O(1/ε_θ²) per device), "
                f"got {eps:g}",
                field="eps",
                limit=f">= {THETA_EPS_MIN} (the θ search's budget ε_θ)",
                value=eps,
            )

        def sampler(listed: int):
            return lambda rng, n: releases(eps, listed, rng, n)

        canary = Canary(
            f"device 0 lists 0 vs {CADR_COUNT_BOUND} neighbours, {label}",
            sampler(0),
            sampler(CADR_COUNT_BOUND),
        )
        return AuditSpec(name, canary, witnesses, eps, trials=trials)

    return build


COUNT_BATTERY = {
    "cadr-theta-count": _count_spec(
        "cadr-theta-count", _count_batch, f"{COUNT_DEVICES} devices summed", WITNESSES, 4000
    ),
    "cadr-theta-count-dropout": _count_spec(
        "cadr-theta-count-dropout",
        _dropout_releases,
        f"{DROPOUT_SURVIVORS} of {DROPOUT_DEVICES} devices summed (one dropped)",
        DROPOUT_WITNESSES,
        40_000,
    ),
}
