"""Wire messages of the CADR-LDP fleet protocol (collector <-> devices).

The stages and who sends what are in ``protocol.cadr_device`` (device side) and
``collector.cadr_fleet`` (collector side); peer messages between devices travel through
``protocol.peer_relay``; the θ search's sums through secure aggregation
(``protocol.secagg``). Topics:

=================  ==========================  ============================================
message            topic                       meaning
=================  ==========================  ============================================
``CadrPlan``       ``ctl/cadr_plan``           ε, α, method, public degree bound, NDOE parts
``CadrQuery``      ``ctl/cadr_query``          one θ-search question, answered by a secure sum
``CadrTheta``      ``ctl/cadr_theta``          the θ every device projects to (clips at)
``DsrReport``      ``up/dsr``                  the device's Laplace release of its degree
``Ack``            ``in/collector``            the report is persisted
``DegreeRelease``  ``rel/degrees``             noisy degrees, histogram (+ post-processed)
=================  ==========================  ============================================
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from ldpfleet.protocol.messages import Epsilon, Ident, Message
from msgspec import Meta

__all__ = [
    "CADR_MESSAGES",
    "MAX_DEGREE",
    "CadrPlan",
    "CadrQuery",
    "CadrTheta",
    "DegreeRelease",
    "DsrReport",
]

MAX_DEGREE = 1_000_000
Degree = Annotated[int, Meta(ge=1, le=MAX_DEGREE)]
# "clip": no relay phase; each device releases its own clipped degree (protocol.cadr_budget)
FleetMethod = Literal["ll", "lh", "ra", "clip"]


class CadrPlan(Message, tag="cadr_plan", kw_only=True):
    """Collector -> all devices: the run's parameters. ``degree_bound`` is the public bound
    D on degrees (θ is searched in [1, D]; NDOE partitions cover [0, D])."""

    eps: Epsilon
    alpha: Annotated[float, Meta(gt=0.0, lt=1.0)]
    method: FleetMethod
    degree_bound: Degree
    ndoe_parts: Annotated[int, Meta(ge=1, le=1000)]
    # the DP θ search (protocol.cadr_theta_noise): its share of the alpha part (0: the
    # paper's exact search) and m, the survivors whose noise shares make up the noise
    theta_fraction: Annotated[float, Meta(ge=0.0, lt=1.0)] = 0.0
    # and its extra share of eps taken from DSR at small eps (protocol.cadr_budget.theta_extra)
    theta_extra: Annotated[float, Meta(ge=0.0, lt=1.0)] = 0.0
    noise_parties: Annotated[int, Meta(ge=0, le=MAX_DEGREE)] = 0


class CadrQuery(Message, tag="cadr_query", kw_only=True):
    """Collector -> all devices: answer secure-sum session ``session`` with, per threshold
    t, ``[d > t]`` (``measure="above"``, search by Deviation) or the local error
    ``max(0, d - t) + t / eps_dsr`` (``measure="error"``, search by Sum), or — the DP θ
    search of a plan with ``theta_fraction > 0`` — the one-hot vector of its degree's
    bucket between the thresholds plus its Pólya noise share (``measure="bucket"``,
    ``protocol.cadr_theta_noise``; length ``len(thresholds) + 1``)."""

    session: Ident
    measure: Literal["above", "error", "bucket"]
    thresholds: Annotated[
        list[Annotated[int, Meta(ge=0, le=MAX_DEGREE)]], Meta(min_length=1, max_length=100_000)
    ]


class CadrTheta(Message, tag="cadr_theta", kw_only=True):
    """Collector -> all devices: the projection threshold θ."""

    theta: Degree


class DsrReport(Message, tag="dsr_report", kw_only=True):
    """Device -> collector: ``value`` = clip(kept degree, 0, θ) + Laplace(θ / eps)."""

    value: float
    theta: Degree
    eps: Epsilon
    mechanism: Literal["laplace"] = "laplace"


class DegreeRelease(Message, tag="degree_release", kw_only=True):
    """Collector -> analysts (``rel/degrees``): the noisy degree sequence (``values[k]`` is
    ``devices[k]``'s release) and the degree histogram over ``0..theta`` (rounded, clipped).
    With ``pipeline = "dp"`` also the post-processed release
    (``collector.degree_postprocess``): ``estimates[k]``, the posterior median of
    ``devices[k]``'s degree, and ``estimate_histogram``, the consistent histogram over
    ``0..theta`` (both empty under ``"paper"``)."""

    theta: Degree
    devices: Annotated[list[Ident], Meta(max_length=MAX_DEGREE)]
    values: Annotated[list[float], Meta(max_length=MAX_DEGREE)]
    histogram: Annotated[list[Annotated[int, Meta(ge=0)]], Meta(max_length=MAX_DEGREE + 1)]
    pipeline: Literal["dp", "paper"] = "paper"
    estimates: Annotated[
        list[Annotated[int, Meta(ge=0, le=MAX_DEGREE)]], Meta(max_length=MAX_DEGREE)
    ] = msgspec.field(default_factory=list)
    estimate_histogram: Annotated[
        list[Annotated[int, Meta(ge=0)]], Meta(max_length=MAX_DEGREE + 1)
    ] = msgspec.field(default_factory=list)


CADR_MESSAGES = (CadrPlan, CadrQuery, CadrTheta, DsrReport, DegreeRelease)
