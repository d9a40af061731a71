"""Devices that drop out of a CADR-LDP fleet run for good (``[cadr] dropout``).

A seeded fraction of the devices crash at one stage of the DP θ search's secure sum
(``dropout_stage``, the stages of ``[secure_sum]``: ``devices.secagg_agent``) and release
nothing afterwards. Which devices is the run's seed's choice (``dropped_devices``), the
same in every process that runs a shard of the fleet. The θ search still opens: each
device's Pólya noise share is sized for the ``m = noise_parties(n)`` sharers
(``protocol.cadr_theta_noise``, "Dropouts"), so any ``m`` or more survivors add up to the
whole ε_θ noise, and the secure sum aborts before unmasking when fewer than ``m`` are left
(``min_inputs``). ``check_dropout`` refuses, with the field, the limit and the value, a
dropout the run could not take:

- more devices than ``n - m`` (the noise would no longer be whole);
- a fraction so small that ``round(dropout x n)`` is no device: the run would show no
  dropout while the scenario asks for one;
- no θ search (a given θ, or the small-fleet rule): there is no secure sum to drop out of;
- pipeline "paper": its exact θ search (Deviation rounds, several secure sums of exact
  bits) has no noise margin and its method ``ll`` negotiates through the relay;
- a negotiated method (``ll``, ``lh``, ``ra``): the relay's lock-step rounds wait for every
  device's batch, so a crashed device would stall each round to its deadline;
- collector partitions (``[collector] partitions > 1``): the workers' DSR intake waits for
  every device of its partition (``collector.cadr_partition``, not built for dropouts).

"For good" because that is what a crash is: the device does not come back for the DSR
release, so the released sequence covers the survivors (results.json ``dropped``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ldpfleet.devices.secagg_agent import DROPOUT_STAGES
from ldpfleet.protocol.cadr_theta_noise import noise_parties
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg import graph as secagg_graph

__all__ = [
    "DROPOUT_SEED_TAG",
    "abort_risk_warnings",
    "check_dropout",
    "dropout_count",
    "dropped_devices",
]

DROPOUT_SEED_TAG = 0xCAD0  # the chooser's stream: numpy.random.default_rng([seed, tag])


def dropout_count(fraction: float, devices: int) -> int:
    """How many of ``devices`` drop out: ``round(fraction x devices)`` (``[secure_sum]``'s
    rule)."""
    return round(fraction * devices)


def dropped_devices(names: Sequence[str], fraction: float, seed: int) -> frozenset[str]:
    """The devices of ``names`` (the fleet, in index order) that drop out: a seeded choice
    of ``dropout_count`` of them, the same wherever the devices run. Returns the set."""
    count = dropout_count(fraction, len(names))
    if not count:
        return frozenset()
    chooser = np.random.default_rng([seed, DROPOUT_SEED_TAG])
    return frozenset(str(name) for name in chooser.choice(list(names), size=count, replace=False))


def check_dropout(
    fraction: float,
    stage: str,
    *,
    devices: int,
    pipeline: str,
    method: str,
    searched: bool,
    partitions: int = 1,
) -> None:
    """Refuse a dropout the run cannot take (module docstring); nothing for ``fraction`` 0.

    Raises:
        ParameterError: naming ``dropout`` (or ``dropout_stage``), the limit and the value.
    """
    if not fraction:
        return
    if not (isinstance(fraction, int | float) and 0 <= fraction < 1):
        raise ParameterError(
            f"must be a fraction in [0, 1), got {fraction!r}",
            field="dropout",
            limit="in [0, 1)",
            value=fraction,
        )
    if stage not in DROPOUT_STAGES:
        raise ParameterError(
            f"{stage!r} is not one of {', '.join(DROPOUT_STAGES)}",
            field="dropout_stage",
            limit=f"one of {', '.join(DROPOUT_STAGES)}",
            value=stage,
        )
    if pipeline != "dp":
        _refuse(
            fraction,
            'pipeline "dp"',
            'the paper\'s exact pipeline (pipeline = "paper") searches θ by exact sums with '
            'no noise margin and negotiates through the relay: use pipeline = "dp" or '
            "dropout = 0",
        )
    if method != "clip":
        _refuse(
            fraction,
            'method "clip" (the dp pipeline\'s "auto")',
            f"method {method!r} negotiates through the relay, whose lock-step rounds wait for "
            'every device: use method = "clip" (or "auto") or dropout = 0',
        )
    if not searched:
        _refuse(
            fraction,
            'a θ search (theta = "auto-dev", not chosen by the small-fleet rule)',
            "devices drop out of the θ search's secure sum and this run searches no θ",
        )
    if partitions > 1:
        _refuse(
            fraction,
            "collector.partitions = 1",
            f"the {partitions} partition workers' DSR intake waits for every device",
        )
    parties = noise_parties(devices)
    leaving = dropout_count(fraction, devices)
    if not leaving:
        least = 0.5 / devices
        raise ParameterError(
            f"dropout = {fraction:g} of {devices} devices is round({fraction:g} x {devices}) "
            f"= 0: no device drops out, so the run would show no dropout at all; give "
            f"dropout > {least:.4g} (one device or more), or 0 for none",
            field="dropout",
            limit=f"round(dropout x {devices}) >= 1 (dropout > {least:.4g}), or 0",
            value=fraction,
        )
    if devices - leaving < parties:
        most = (devices - parties) / devices
        raise ParameterError(
            f"dropout = {fraction:g}: "
            f"{leaving} of {devices} devices dropping out leaves {devices - leaving}, fewer "
            f"than the {parties} the θ search's noise is shared by (noise_parties(n) = "
            f"ceil(0.9 n)): the secure sum would abort; at most {devices - parties} may leave "
            f"(dropout <= {most:.4g})",
            field="dropout",
            limit=f"leaves >= {parties} of {devices} devices (dropout <= {most:.4g})",
            value=fraction,
        )


def _refuse(fraction: float, limit: str, why: str) -> None:
    raise ParameterError(
        f"dropout = {fraction:g} needs {limit}: {why}",
        field="dropout",
        limit=limit,
        value=fraction,
    )


def abort_risk_warnings(fraction: float, stage: str, devices: int) -> list[str]:
    """The sentence for results.json ``warnings`` when the θ search's SecAgg+ session (the
    default Harary graph of ``devices``) may abort before unmasking in more than
    ``ABORT_RISK_LIMIT`` (1e-3) of runs with this dropout: a device left with fewer than t
    live share holders, or (leaving before the masked input) the survivors' graph split
    (``protocol.secagg.graph.session_abort_bound``, as ``[secure_sum]`` warns). An abort
    releases nothing and the run fails. Returns the sentences (none below the limit)."""
    leaving = dropout_count(fraction, devices)
    if not leaving or devices < 2:
        return []
    degree = secagg_graph.default_degree(devices)
    threshold = secagg_graph.default_threshold(degree + 1)
    before = secagg_graph.leaves_before_masked(stage)
    bound = secagg_graph.session_abort_bound(
        devices, degree, threshold, leaving, before_masked=before
    )
    if bound <= secagg_graph.ABORT_RISK_LIMIT:
        return []
    return [
        f"dropout: {leaving} of {devices} devices leaving {stage} may abort up to {bound:.2%} "
        f"of θ-search secure sums before unmasking (neighbors = {degree}, t = {threshold}; "
        f"over {secagg_graph.ABORT_RISK_LIMIT:.1%}): the run then fails and releases nothing"
    ]
