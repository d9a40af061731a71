"""Canaries through the protocol MACHINES as they run (issue 21) — theory of operation.

The function-level entries of the battery call a mechanism class directly (``WarnerRR``,
``dsr_release``, ``SquareWave``); a bug in how a machine BUILDS or USES the mechanism
(``WarnerRR(2 * eps)`` inside ``protocol/lpea.py``, a ledger that lets a device overspend)
passes them. These canaries drive the real sans-I/O machines with the messages a peer, the
relay or the collector would send, and read what the machine publishes:

* ``lpea-answer`` — an LPEA-LOW node (``protocol.lpea.LpeaNode``, compact mode as
  ``CadrDevice`` builds it, Warner RR at the eps it is given) answers one neighbour's edge
  request; the output is the ``ans`` item it queues for the relay, i.e. the bit the
  requester (and the relay, and through it the collector's trace) sees. D: the node has
  capacity (theta = 1, no kept edge: the true answer is "yes"); D': in round 0 another
  neighbour's establish filled its capacity (true answer "no"). Round 1 is the audited
  round in both worlds. Claim: the eps the node was built with (per answer).
* ``cadr-dsr`` — one ``protocol.cadr_device.CadrDevice`` driven through a whole run (plan,
  theta, the relay's NDOE and LPEA steps and deliveries, end of LPEA): the output is the
  ``value`` of the ``DsrReport`` it publishes on ``up/dsr`` (what the collector sees). D:
  the device lists theta neighbours that all propose an edge (it keeps theta); D': it
  lists none (node-LDP: only its own list changes; kept degree 0). Claim: the report's
  own ``eps`` (= (1 - alpha) eps of the plan, the plan's eps chosen so that this is the
  audited eps; the sampler checks the report states it).
* ``stream-ledger`` — a ``protocol.stream.StreamReporter`` with its own ledger (w-event,
  ``WindowAccount(eps, w)``, w = 2) is ASKED to privatise each of 2 steps at the whole
  window budget eps (a configuration whose per-step eps0 is w times eps / w: the device is
  asked for more than its budget allows). A correct ledger grants step 0 and refuses step
  1, so the readings all 0 vs all 1 leak eps; a ledger that grants twice the window (or
  forgets the window's first edge, or does not charge) lets both reports out: 2 eps.
  The 2 readings arrive in ONE ``add_readings`` call, as the fleet delivers a batch (the
  ledger's ``charge_run``: a run whose first step fits but whose second does not must be
  cut after the first; refused runs fall back to one charge at a time, which checks each
  step against the history).
  Output: the privatised values (a refused step shows as -1). Claim: the window budget.
* ``stream-batch`` (SW) and ``stream-batch-laplace`` (Laplace) — a ``StreamReporter`` (w =
  2, window budget eps, eps/2 per step)
  privatises one batch of 2 readings in one ``add_readings`` call: D reads (0, 0), D'
  reads (0, 1) (w-event neighbours: readings inside one window change). The honest device
  draws its noise per value, so only the second report differs in law (eps/2 < eps: the
  audit stays inconclusive). Noise drawn once per BATCH makes the two reports of D equal
  always and those of D' almost never (witness "reports equal"): the difference of two
  reports then reveals the difference of two readings, which the ``stream`` canary (all 0
  vs all 1) cannot see (a shared draw over equal readings is no worse than one report).
  Output: the 2 privatised values.

Each entry is registered in ``battery.BATTERY`` (``MACHINE_BATTERY``) so ``ldpfleet audit
all`` runs it; the family-wise gamma of ``audit all`` covers them (Bonferroni over every
audit).
"""

from __future__ import annotations

import math

import numpy as np
from ldpfleet.collector.audit.core import Canary

__all__ = [
    "CADR_ALPHA",
    "CADR_THETA",
    "MACHINE_BATTERY",
    "STREAM_LEDGER_W",
    "cadr_dsr_release",
    "lpea_answer",
    "over_asked_stream",
    "stream_batch",
]

RUN = "audit"
LPEA_NEIGHBOURS = ("n0001", "n0002")  # n0001 asks in round 1; n0002 fills v in D'
CADR_THETA = 4
CADR_ALPHA = 0.1
CADR_BOUND = 8  # the public degree bound D of the plan
CADR_PARTS = 4
STREAM_LEDGER_W = 2
REFUSED = -1.0


def lpea_answer(eps: float, full: bool, rng: np.random.Generator) -> int:
    """The bit an LPEA-LOW node ``v`` answers to neighbour n0001's request in round 1: ``v``
    has capacity (``full=False``) or its capacity was filled in round 0 (``full=True``)."""
    from ldpfleet.protocol.lpea import LpeaNode

    asker, filler = LPEA_NEIGHBOURS
    node = LpeaNode(RUN, "v", dict.fromkeys(LPEA_NEIGHBOURS, 0), 1, eps, rng, "low", compact=True)
    node.start_round(0, 0.0)
    if full:
        node.receive_item(filler, "est", 0, 0, 0.0)  # filler proposes: v keeps it (cap 1)
    node.finish_requests(0.0)
    node.pop_items()
    node.start_round(1, 0.0)
    node.pop_items()
    node.receive_item(asker, "req", 0, 1, 0.0)
    (answer,) = [item for item in node.pop_items() if item.kind == "ans"]
    return int(answer.value)


def _lpea(eps: float, delta: float):
    from ldpfleet.collector.audit.battery import AuditSpec

    def sampler(full: bool):
        return lambda rng, n: np.array([lpea_answer(eps, full, rng) for _ in range(n)], float)

    canary = Canary(
        "v has capacity vs v full (theta = 1), n0001's request in round 1",
        sampler(False),
        sampler(True),
    )
    return AuditSpec("lpea-answer", canary, {"answer": lambda y: np.asarray(y)}, eps, trials=4000)


def cadr_dsr_release(eps_dsr: float, listed: int, rng: np.random.Generator) -> float:
    """One ``CadrDevice`` run (module docstring) whose list has ``listed`` neighbours, all
    proposing an edge; returns the ``value`` of its published ``DsrReport``."""
    from ldpfleet.protocol import topics
    from ldpfleet.protocol.cadr_device import CadrDevice
    from ldpfleet.protocol.cadr_messages import CadrPlan, CadrTheta, DsrReport
    from ldpfleet.protocol.peer_relay import RELAY_ID, PeerDelivery, PeerItem, PeerStep

    neighbours = [f"n{i:04d}" for i in range(1, listed + 1)]
    device = CadrDevice(RUN, "v", neighbours, rng)
    collector = {"run": RUN, "sender": topics.COLLECTOR_ID}
    relay = {"run": RUN, "sender": RELAY_ID}
    ctl = topics.parse(topics.ctl(RUN, "cadr_plan"))
    step_topic = topics.parse(topics.ctl(RUN, "peer_step"))
    inbox = topics.parse(topics.inbox(RUN, "v", RELAY_ID))
    plan_eps = eps_dsr / (1.0 - CADR_ALPHA)
    plan = CadrPlan(
        **collector,
        eps=plan_eps,
        alpha=CADR_ALPHA,
        method="ll",
        degree_bound=CADR_BOUND,
        ndoe_parts=CADR_PARTS,
    )
    device.receive(ctl, plan, 0.0)
    device.receive(
        topics.parse(topics.ctl(RUN, "cadr_theta")), CadrTheta(**collector, theta=CADR_THETA), 0.0
    )
    device.receive(step_topic, PeerStep(**relay, seq=1, phase="ndoe", round=0), 0.0)
    codes = [PeerItem(n, "code", 0) for n in neighbours]
    device.receive(
        inbox, PeerDelivery(**relay, seq=2, phase="ndoe", round=0, step=1, items=codes), 0.0
    )
    device.receive(step_topic, PeerStep(**relay, seq=3, phase="ndoe", round=0, finished=True), 0.0)
    device.receive(step_topic, PeerStep(**relay, seq=4, phase="lpea", round=0), 0.0)
    # every listed neighbour proposes an edge, then answers v's request "no"
    items = [PeerItem(n, "est", 0) for n in neighbours] + [
        PeerItem(n, "ans", 0) for n in neighbours
    ]
    device.receive(
        inbox, PeerDelivery(**relay, seq=5, phase="lpea", round=0, step=1, items=items), 0.0
    )
    device.receive(step_topic, PeerStep(**relay, seq=6, phase="lpea", round=0, finished=True), 0.0)
    (report,) = [o.message for o in device.pop_outbound() if isinstance(o.message, DsrReport)]
    if not math.isclose(report.eps, eps_dsr, rel_tol=1e-9):
        raise AssertionError(f"the report states eps {report.eps}, the audit claims {eps_dsr}")
    return float(report.value)


def _cadr_dsr(eps: float, delta: float):
    from ldpfleet.collector.audit.battery import AuditSpec

    def sampler(listed: int):
        return lambda rng, n: np.array([cadr_dsr_release(eps, listed, rng) for _ in range(n)])

    canary = Canary(
        f"device lists {CADR_THETA} proposing neighbours vs none (theta = {CADR_THETA})",
        sampler(CADR_THETA),
        sampler(0),
    )
    return AuditSpec(
        "cadr-dsr", canary, {"released degree": lambda y: np.asarray(y)}, eps, trials=4000
    )


def over_asked_stream(eps: float, reading: float, rng: np.random.Generator) -> np.ndarray:
    """A ``StreamReporter`` (w = 2, window budget ``eps``, its own ledger) asked to
    privatise 2 equal readings at eps per step, both in one ``add_readings`` call (the
    fleet's batch path, ``charge_run``); the privatised values (``REFUSED`` where the ledger
    refused)."""
    from ldpfleet.protocol.stream import StreamConfig, StreamReporter

    class OverAskingConfig(StreamConfig):
        @property
        def eps0(self) -> float:  # the whole window budget at every step
            return self.eps

    w = STREAM_LEDGER_W
    config = OverAskingConfig(
        run=RUN, mechanism="sw", eps=eps, w=w, steps=w, batch_steps=1, lo=0.0, hi=1.0
    )
    reporter = StreamReporter(config, "canary", rng)
    reporter.start(0.0)
    reporter.add_readings([reading] * w, 0.0)
    return np.where(np.isnan(reporter.values), REFUSED, reporter.values)


def _stream_ledger(eps: float, delta: float):
    from ldpfleet.collector.audit.battery import AuditSpec
    from ldpfleet.protocol.sw import sw_b

    b = sw_b(eps)

    def sampler(reading: float):
        return lambda rng, n: np.array([over_asked_stream(eps, reading, rng) for _ in range(n)])

    def near(y, centre):
        y = np.asarray(y, dtype=float)
        return np.sum((y != REFUSED) & (np.abs(y - centre) <= b), axis=1).astype(float)

    witnesses = {
        # the Square Wave log-likelihood ratio of the reports, up to a factor
        "near 0 minus near 1": lambda y: near(y, 0.0) - near(y, 1.0),
        "reports near 0": lambda y: near(y, 0.0),
    }
    canary = Canary(
        f"w = {STREAM_LEDGER_W}, asked eps per step; readings all 0 vs all 1",
        sampler(0.0),
        sampler(1.0),
    )
    return AuditSpec("stream-ledger", canary, witnesses, eps, trials=4000)


STREAM_BATCH_W = 2


def stream_batch(
    eps: float, second: float, rng: np.random.Generator, mechanism: str = "sw"
) -> np.ndarray:
    """The 2 reports of one ``StreamReporter`` (``mechanism``, w = 2, window budget ``eps``)
    given the readings (0, ``second``) in one ``add_readings`` call (module docstring)."""
    from ldpfleet.protocol.stream import StreamConfig, StreamReporter

    w = STREAM_BATCH_W
    config = StreamConfig(
        run=RUN, mechanism=mechanism, eps=eps, w=w, steps=w, batch_steps=w, lo=0.0, hi=1.0
    )
    reporter = StreamReporter(config, "canary", rng)
    reporter.start(0.0)
    reporter.add_readings([0.0, second], 0.0)
    return reporter.values.copy()


def _stream_batch_of(mechanism: str, entry: str):
    def build(eps: float, delta: float):
        return _stream_batch(eps, mechanism, entry)

    return build


def _stream_batch(eps: float, mechanism: str, entry: str):
    from ldpfleet.collector.audit.battery import AuditSpec

    def sampler(second: float):
        return lambda rng, n: np.array(
            [stream_batch(eps, second, rng, mechanism) for _ in range(n)]
        )

    witnesses = {
        "reports equal": lambda y: (np.asarray(y)[:, 0] == np.asarray(y)[:, 1]).astype(float),
        "second report": lambda y: np.asarray(y)[:, 1],
    }
    canary = Canary(
        f"{mechanism}, w = {STREAM_BATCH_W}, one batch; readings (0, 0) vs (0, 1)",
        sampler(0.0),
        sampler(1.0),
    )
    return AuditSpec(entry, canary, witnesses, eps, trials=2000)


MACHINE_BATTERY = {
    "lpea-answer": _lpea,
    "cadr-dsr": _cadr_dsr,
    "stream-ledger": _stream_ledger,
    "stream-batch": _stream_batch_of("sw", "stream-batch"),
    "stream-batch-laplace": _stream_batch_of("laplace", "stream-batch-laplace"),
}
