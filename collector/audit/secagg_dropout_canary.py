"""The SecAgg self-mask canary: a device declared dropped after its masked input was sent.

Claim. Bonawitz et al. (CCS 2017, §4; ``protocol/secagg``, docs/secagg.md): when device
u's masked input y_u reaches the server only after the masked stage closed (u "dropped"
with the message in flight: the server saw y_u, but u is in U2 \\ U3), the server asks
the survivors for u's mask-key shares, rebuilds s_u and can remove u's pairwise masks
from y_u. What is left is x_u + PRG(b_u): the self mask alone hides x_u, and the
survivors must never also reveal a share of u's self-mask seed b_u (each answers one
share per node, of the kind asked for, once; 2t > holders, so no split of the requests
gets t of both). As a DP claim about the server's view: two input vectors that differ in
the dropped device's input only (the survivors' sum, all the server is entitled to, is
the same) give identically distributed views, eps = 0 (delta = 0): any eps_LB > 0 is a
violation. ``secagg`` (no dropouts) cannot see a missing SELF mask (the pairwise masks
still hide y_u when nobody drops); this entry can.

What is run. Per trial, three sessions of the REAL machines (``SecAggServer`` and one
``SecAggClient`` per device, dim 1, ``FixedPoint(0, 1, 1, bits=32)``: inputs 0 and 1 are
the integers 0 and 1), driven by direct calls on virtual time as ``secagg_view`` does
(``drive_session``), every key, self-mask seed, share and graph labelling drawn from the
trial's generator (``SCENARIOS``):

* ``full3`` — 3 devices, full graph (t = 2): the device at position 0 sends its masked
  input, which is held back until the server's masked-stage deadline has closed the stage
  (then delivered: the honest server counts it late and ignores it);
* ``full5`` — 5 devices, full graph (t = 3): the same late device, and the device at
  position 1 drops BEFORE its masked input (its last will, ``SaAbort``, replaces it, as
  ``secagg_split_canary`` does), so the survivors reveal the mask keys of two dropped
  devices;
* ``ring6`` — 6 devices on a SecAgg+ ring (Harary, degree 2, t = 2; positions in ring
  order, ``secagg_split_canary.ring_order``): the late device at position 0, whose two
  neighbours are its only share holders.

Positions are the labels in order (the full graphs) or the ring order (ring6), drawn
independently of the inputs. Worlds: D gives the late device the input 1 and every other
device 0; D' gives every device 0. The survivors' sum is 0 in both.

The view (one row per trial, 4 columns per scenario, ``dropout_columns()``): what the
server received and computes from it — the late y_u as it arrived; y_u minus every
pairwise mask u shares with N(u) ∩ U2 (the neighbours u masked with: ``SaDeliver``'s
``completed``), with s_u rebuilt from the s-shares the survivors revealed and the
neighbours' advertised keys (``ABORTED`` = -1 without t s-shares); that value minus
PRG(b_u) when t b-shares of u were revealed (``ABORTED`` otherwise: always, for honest
devices); and the released encoded sum (``ABORTED`` when the server released none). Every
share counts as the server receives it, before it validates the response (a response the
honest server rejects has still been read). Honest: the first two columns are uniform
mod 2^32 in both worlds (the second is encode(x_u) + PRG(b_u)), the third is -1 and the
fourth 0, so no event separates the worlds beyond chance (false alarm <= gamma, the
audit's own guarantee). Planted bugs (``collector.audit.mutants``):

* a device that skips its self mask: y_u minus the pairwise masks is encode(x_u), 1 in D
  and 0 in D', every trial;
* devices that reveal BOTH shares of a dropped device: the server rebuilds b_u too and
  reads encode(x_u) in the third column, every trial (the honest server rejects those
  responses as a whole and aborts: it has read them by then);
* a server that sums the late masked input of a device it declared dropped: NOT a leak,
  and the audit rightly stays silent — its survivors were asked for u's mask-key shares,
  answer once, and so never reveal b_u; the session cannot rebuild b_u and aborts in both
  worlds. The curious server reading the late y_u is exactly what this canary's view
  already grants it: only the self mask protects x_u.

A deterministic separation is certified as soon as the evaluation runs per world n satisfy
n > ln(gamma / 2) / ln(1/2) (``stats.runs_to_certify(0, gamma)``: 12 at ``audit all``'s
per-audit gamma, 22 at gamma = 1e-6); the entry's 60 + 60 are five times that.

Cost. About 15 ms of X25519 / HKDF / AES-GCM / Shamir per trial (three sessions, 14
devices) on a quiet machine, about 2 s for the entry's 120 trials (5.2 s of CPU measured
at load 6); ``audit all`` runs it once and copies the row to its other budgets
(``core.ZERO_CLAIM_ENTRIES``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ldpfleet.collector.audit.core import Canary, Witness
from ldpfleet.collector.audit.secagg_split_canary import ring_order
from ldpfleet.collector.audit.secagg_view import drive_session
from ldpfleet.protocol import topics

__all__ = [
    "DROPOUT_BATTERY",
    "SCENARIOS",
    "DropoutScenario",
    "DropoutSession",
    "dropout_columns",
    "dropout_row",
]

DROPOUT_BITS = 32
DROPOUT_TRIALS = 120  # 60 + 60 runs per world (the module docstring: 12 evaluation runs do)
RUN = "audit"
SESSION = "drop0"
MODULUS = 2**DROPOUT_BITS
ABORTED = -1.0  # a column the server could not compute (nothing released or rebuilt)
COLUMNS = ("late y", "late y - pairwise", "late y - all masks", "released sum")


@dataclass(frozen=True)
class DropoutScenario:
    """One session shape: ``devices`` on ``graph`` (``degree`` for SecAgg+); the device
    at position ``late`` sends its masked input too late; those at ``before`` drop before
    sending it (last will)."""

    name: str
    devices: int
    graph: str = "full"
    degree: int | None = None
    late: int = 0
    before: tuple[int, ...] = ()


SCENARIOS: tuple[DropoutScenario, ...] = (
    DropoutScenario("full3", 3),
    DropoutScenario("full5", 5, before=(1,)),
    DropoutScenario("ring6", 6, graph="harary", degree=2),
)


def dropout_columns() -> list[str]:
    """Column names of a view row: 4 per scenario (``COLUMNS``)."""
    return [f"{s.name}: {c}" for s in SCENARIOS for c in COLUMNS]


class DropoutSession:
    """One driven session of ``scenario`` with the late device's input ``x_late`` (every
    other input 0): the machines, what the server received, and its outcome; ``row()`` is
    the server's view (module docstring)."""

    def __init__(self, scenario: DropoutScenario, x_late: float, rng: np.random.Generator) -> None:
        from ldpfleet.protocol.secagg.client import SecAggClient
        from ldpfleet.protocol.secagg.encoding import FixedPoint
        from ldpfleet.protocol.secagg.server import SecAggServer

        self.scenario = scenario
        fixed = FixedPoint(0.0, 1.0, 1.0, bits=DROPOUT_BITS)
        devices = [f"dev{i:02d}" for i in range(scenario.devices)]
        self.server = SecAggServer(
            RUN, SESSION, devices, 1, fixed, graph=scenario.graph, degree=scenario.degree,
            stage_timeout=10.0, now=0.0, random_bytes=rng.bytes,
        )  # fmt: skip
        labels = sorted(self.server.device_of)
        order = ring_order(self.server.neighbours) if scenario.graph == "harary" else labels
        by_position = [self.server.device_of[label] for label in order]
        self.late_device = by_position[scenario.late]
        self.late = self.server.label_of[self.late_device]
        self.dropping = {by_position[p] for p in scenario.before}
        self.inputs = {d: x_late if d == self.late_device else 0.0 for d in devices}
        self.clients = {
            d: SecAggClient(RUN, SESSION, d, [self.inputs[d]], random_bytes=rng.bytes)
            for d in devices
        }
        self.held: list[tuple[topics.Topic, object]] = []  # the late masked input in flight
        self.late_masked: int | None = None  # y_u as the server saw it
        self.s_public: dict[int, bytes] = {}  # label -> advertised mask key
        self.revealed: dict[tuple[int, str], dict[int, int]] = {}  # (node, kind) -> shares
        self.released: float | None = None
        self.aborted: str | None = None

    def run(self) -> DropoutSession:
        """Drive the session to its end (virtual time: a deadline fires when all is quiet;
        the held masked input arrives after the deadline that closed the masked stage)."""
        from ldpfleet.protocol.secagg.server import Aborted, SumReady

        drive_session(self.server, self.clients, self._upstream, self._arriving_late)
        for event in self.server.pop_events():
            if isinstance(event, SumReady):
                self.released = float(event.encoded_total[0])
            elif isinstance(event, Aborted):
                self.aborted = event.reason
        return self

    def _arriving_late(self) -> list[tuple[topics.Topic, object]]:
        if self.server.state in ("idle", "advertise", "share", "masked"):
            return []
        arriving, self.held = self.held, []
        return arriving

    def _upstream(self, topic: topics.Topic, message) -> tuple[topics.Topic, object] | None:
        """What a device sends, recorded as the server sees it; the late device's masked
        input is held back (seen now, delivered late), a dropping device's replaced by its
        last will."""
        from ldpfleet.protocol.secagg.client import unpack_vector
        from ldpfleet.protocol.secagg.messages import SaAbort, SaAdvertise, SaMasked, SaUnmask
        from ldpfleet.protocol.secagg.shamir import share_from_bytes

        label = self.server.label_of[topic.sender]
        if isinstance(message, SaMasked) and topic.sender in self.dropping:
            message = SaAbort(
                run=RUN, sender=topic.sender, session=SESSION, round=0, stage="after_shares",
                reason="connection lost (last will)",
            )  # fmt: skip
            return topics.parse(topics.up(RUN, topic.sender, "sa_abort")), message
        if isinstance(message, SaMasked) and label == self.late:
            self.late_masked = int(unpack_vector(message.masked, 1, DROPOUT_BITS)[0])
            self.held.append((topic, message))
            return None
        if isinstance(message, SaAdvertise):
            self.s_public[label] = message.s_public
        elif isinstance(message, SaUnmask):
            for entry in message.shares:
                shares = self.revealed.setdefault((entry.node, entry.kind), {})
                shares[label] = share_from_bytes(entry.share)
        return topic, message

    def _secret(self, node: int, kind: str) -> bytes | None:
        """The secret of ``kind`` of ``node`` rebuilt from the revealed shares, or None
        (fewer than t shares)."""
        from ldpfleet.protocol.secagg import crypto, shamir

        shares = self.revealed.get((node, kind), {})
        if len(shares) < self.server.threshold:
            return None
        return shamir.combine(shares, self.server.threshold, length=crypto.KEY_BYTES)

    def row(self) -> list[float]:
        """The server's view of the session: the 4 ``COLUMNS``."""
        from ldpfleet.protocol.secagg import crypto
        from ldpfleet.protocol.secagg.client import apply_pairwise, pairwise_mask, self_mask
        from ldpfleet.protocol.secagg.encoding import sub_mod

        released = ABORTED if self.released is None else self.released
        if self.late_masked is None:
            raise RuntimeError("the late device sent no masked input")
        u, bits = self.late, DROPOUT_BITS
        y = np.array([self.late_masked], dtype=np.uint64)
        key = self._secret(u, "s")
        if key is None:
            return [float(y[0]), ABORTED, ABORTED, released]
        private = crypto.x25519_private_key(key)
        for v in sorted(self.server.neighbours[u] & self.server.u2):
            mask = pairwise_mask(
                crypto.agree(private, self.s_public[v]),
                run=RUN, session=SESSION, round=0, u=u, v=v, dim=1, bits=bits,
            )  # fmt: skip
            y = apply_pairwise(y, mask, u=v, v=u, bits=bits)  # minus sign(u, v) mask
        seed = self._secret(u, "b")
        unmasked = ABORTED if seed is None else float(sub_mod(y, self_mask(seed, 1, bits), bits)[0])
        return [float(self.late_masked), float(y[0]), unmasked, released]


def dropout_row(x_late: float, rng: np.random.Generator) -> np.ndarray:
    """One trial: every scenario's session with the late device's input ``x_late``."""
    row: list[float] = []
    for scenario in SCENARIOS:
        row += DropoutSession(scenario, x_late, rng).run().row()
    return np.array(row)


def dropout_witnesses() -> dict[str, Witness]:
    """Each scenario's late y minus the pairwise masks, minus all masks, and released sum."""

    def col(j: int):
        return lambda y: np.atleast_2d(np.asarray(y, dtype=float))[:, j]

    names = dropout_columns()
    return {
        name: col(names.index(name))
        for s in SCENARIOS
        for name in (f"{s.name}: {c}" for c in COLUMNS[1:])
    }


def _secagg_dropout(eps: float, delta: float):
    """Battery entry: the claim is eps = 0 whatever budget the caller passes (as
    ``secagg``'s)."""
    from ldpfleet.collector.audit.battery import AuditSpec

    del eps

    def sampler(x_late: float):
        return lambda rng, count: np.stack([dropout_row(x_late, rng) for _ in range(count)])

    canary = Canary(
        "SecAgg 3 full / 5 full (+1 dropped before) / 6 ring: a device's masked input arrives "
        "after the masked stage closed, its input 1 vs 0, same survivors' sum",
        sampler(1.0),
        sampler(0.0),
    )
    return AuditSpec(
        "secagg-dropout",
        canary,
        dropout_witnesses(),
        0.0,
        delta=delta,
        trials=DROPOUT_TRIALS,
        notes="claim eps = 0: a device declared dropped keeps its input hidden by its self mask",
    )


DROPOUT_BATTERY = {"secagg-dropout": _secagg_dropout}
