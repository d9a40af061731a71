"""The SecAgg+ split-graph canary: a sum over a disconnected survivor set is never released.

Claim. In SecAgg+ (Bell et al., CCS 2020) a pairwise mask joins neighbours only. Once the
server has removed the survivors' self masks and the masks shared with dropped devices
(what unmasking does), the masks left cancel within each connected part of the survivors'
graph, so a graph in several parts would give away each part's own sum, not only the
total. The server (``protocol.secagg.server``) therefore aborts at the masked stage's
close when the survivors' graph is split (``SecAggServer._split``), before anything is
unmasked. As a DP claim about the server's view: two input vectors with the same survivor
sum must give identically distributed views, eps = 0 (delta = 0): any eps_LB > 0 is a
violation.

What is run. One session of the REAL machines per trial — a ``SecAggServer`` on a SecAgg+
(Harary) ring, ``SPLIT_DEVICES`` = 6 devices of degree 2 (threshold t = 2: each device's
secrets have 3 holders, itself and its two neighbours), and one ``SecAggClient`` per device
(dim 1, ``FixedPoint(0, 1, 1, bits=32)``: inputs 0 and 1 are the integers 0 and 1) —
connected by direct calls as ``secagg_view`` does, no broker. Every key, self-mask seed,
share and the ring's random labelling come from the trial's generator. The ring is read
from the server (``SecAggServer.neighbours``) and walked from its smallest label: the
devices at positions 1 and 4 drop after sending their shares, announcing it as the fleet's
devices do (``SaAbort``, an MQTT last will: ``devices.secagg_agent``'s ``after_shares``),
which cuts the ring into the arcs {5, 0} and {2, 3}; each arc is still unmaskable on its
own (every secret keeps t = 2 live holders), so only the split check stops the session.
Worlds: D gives the device at position 0 the input 1 and every other device 0; D' gives
it to the device at position 3. The survivors' sum is 1 in both (the inputs are placed by
position on a ring drawn independently of them, so the pair is a valid neighbouring pair
for every graph).

The view (one row per session, ``SPLIT_COLUMNS``): the released sum (``ABORTED`` = -1 when
the server released none), and the sums of the part holding position 0 and of the part
holding position 3 that the server computes from what it has received: for a part P,
sum over u in P of y_u - PRG(b_u), minus the masks u shares with dropped neighbours v
(PRG of the X25519 agreement of v's reconstructed mask key with u's advertised key), with
b_u and s_v rebuilt from the shares the survivors revealed in the unmask stage (``ABORTED``
when nothing was unmasked). The honest server aborts every session at the masked stage's
close: its view is the constant row (-1, -1, -1) in both worlds, so no event separates them
and the audit can never certify eps_LB > 0 (false-alarm probability exactly 0, whatever
the seed or gamma). A server that unmasks the split ring (the mutant ``secagg unmasks a
split survivors' graph``, ``collector.audit.mutants``) shows the part sums (1, 0) in D
and (0, 1) in D', every session: the audit certifies a violation as soon as the
evaluation runs per world n satisfy n > ln(gamma / 2) / ln(1/2) (one-sided
Clopper-Pearson at gamma / 2 on n of n against 0 of n: alpha_lo = (gamma/2)^(1/n),
beta_hi = 1 - alpha_lo, eps_LB > 0 iff alpha_lo > 1/2), i.e. 12 runs at the battery's
per-audit gamma 0.05 / 87 and 25 at gamma = 1e-6; the entry's 100 + 100 are far above.

Cost. About 10 ms of X25519 / HKDF / AES-GCM / Shamir per session (6 clients), 2 s for
the entry's 200 sessions.
"""

from __future__ import annotations

import numpy as np
from ldpfleet.collector.audit.core import Canary, Witness
from ldpfleet.collector.audit.secagg_view import drive_session
from ldpfleet.protocol import topics

__all__ = [
    "SPLIT_BATTERY",
    "SPLIT_COLUMNS",
    "SPLIT_DEVICES",
    "SplitSession",
    "split_ring_session",
]

SPLIT_DEVICES = 6
SPLIT_DEGREE = 2
SPLIT_BITS = 32
SPLIT_TRIALS = 200  # 100 + 100 runs per world (the module docstring: 12 evaluation runs do)
DROP_POSITIONS = (1, 4)  # ring positions of the devices that drop after their shares
CANARY_POSITIONS = (0, 3)  # D: the input 1 at position 0; D': at position 3
RUN = "audit"
SESSION = "split0"
MODULUS = 2**SPLIT_BITS
ABORTED = -1.0  # a column the server could not compute (nothing released or unmasked)
SPLIT_COLUMNS = ("released sum", "part sum at position 0", "part sum at position 3")


class SplitSession:
    """One driven session: the machines, what the server received, and its outcome.

    ``split_ring_session`` builds and runs it; ``row()`` is the server's view (module
    docstring). ``aborted`` is the server's abort reason (None when it released a sum),
    ``survivors`` the labels whose masked input arrived (U3), ``ring`` the labels in ring
    order from the smallest."""

    def __init__(self, one_at: int, rng: np.random.Generator) -> None:
        from ldpfleet.protocol.secagg.client import SecAggClient
        from ldpfleet.protocol.secagg.encoding import FixedPoint
        from ldpfleet.protocol.secagg.server import SecAggServer

        fixed = FixedPoint(0.0, 1.0, 1.0, bits=SPLIT_BITS)
        devices = [f"dev{i:02d}" for i in range(SPLIT_DEVICES)]
        self.server = SecAggServer(
            RUN, SESSION, devices, 1, fixed, graph="harary", degree=SPLIT_DEGREE,
            stage_timeout=10.0, now=0.0, random_bytes=rng.bytes,
        )  # fmt: skip
        self.ring = ring_order(self.server.neighbours)
        by_position = [self.server.device_of[label] for label in self.ring]
        self.dropping = {by_position[p] for p in DROP_POSITIONS}
        self.inputs = {d: 1.0 if d == by_position[one_at] else 0.0 for d in devices}
        self.clients = {
            d: SecAggClient(RUN, SESSION, d, [self.inputs[d]], random_bytes=rng.bytes)
            for d in devices
        }
        self.masked: dict[int, int] = {}  # label -> y_u
        self.s_public: dict[int, bytes] = {}  # label -> advertised mask key
        self.revealed: dict[tuple[int, str], dict[int, int]] = {}  # (node, kind) -> shares
        self.released: float | None = None
        self.aborted: str | None = None
        self.survivors: frozenset[int] = frozenset()

    def run(self) -> SplitSession:
        """Drive the session to its end (virtual time: a deadline fires when all is quiet)."""
        from ldpfleet.protocol.secagg.server import Aborted, SumReady

        drive_session(self.server, self.clients, self._upstream)
        for event in self.server.pop_events():
            if isinstance(event, SumReady):
                self.released = float(event.encoded_total[0])
                self.survivors = frozenset(self.server.label_of[d] for d in event.survivors)
            elif isinstance(event, Aborted):
                self.aborted = event.reason
        return self

    def _upstream(self, topic: topics.Topic, message) -> tuple[topics.Topic, object]:
        """What a device sends: recorded as the server sees it, and what the server gets;
        a dropping device's masked input is replaced by its last will."""
        from ldpfleet.protocol.secagg.client import unpack_vector
        from ldpfleet.protocol.secagg.messages import SaAbort, SaAdvertise, SaMasked, SaUnmask
        from ldpfleet.protocol.secagg.shamir import share_from_bytes

        label = self.server.label_of[topic.sender]
        if topic.sender in self.dropping and isinstance(message, SaMasked):
            message = SaAbort(
                run=RUN, sender=topic.sender, session=SESSION, round=0, stage="after_shares",
                reason="connection lost (last will)",
            )  # fmt: skip
            topic = topics.parse(topics.up(RUN, topic.sender, "sa_abort"))
        elif isinstance(message, SaAdvertise):
            self.s_public[label] = message.s_public
        elif isinstance(message, SaMasked):
            self.masked[label] = int(unpack_vector(message.masked, 1, SPLIT_BITS)[0])
        elif isinstance(message, SaUnmask):
            for entry in message.shares:
                shares = self.revealed.setdefault((entry.node, entry.kind), {})
                shares[label] = share_from_bytes(entry.share)
        return topic, message

    def part_sum(self, position: int) -> float:
        """The sum of the survivors' part holding ring ``position``, as the server computes
        it from what it received (``ABORTED`` when it unmasked nothing)."""
        if self.released is None:
            return ABORTED
        from ldpfleet.protocol.secagg import graph as graphs

        parts = graphs.components(self.server.neighbours, self.survivors)
        (part,) = [p for p in parts if self.ring[position] in p]
        return float(self._unmasked(part))

    def _unmasked(self, part: frozenset[int]) -> int:
        from ldpfleet.protocol.secagg import crypto, shamir
        from ldpfleet.protocol.secagg.client import apply_pairwise, pairwise_mask, self_mask
        from ldpfleet.protocol.secagg.encoding import add_mod, sub_mod

        t, bits = self.server.threshold, SPLIT_BITS
        total = np.zeros(1, dtype=np.uint64)
        for u in sorted(part):
            seed = shamir.combine(self.revealed[(u, "b")], t, length=crypto.KEY_BYTES)
            total = add_mod(total, np.array([self.masked[u]], dtype=np.uint64), bits)
            total = sub_mod(total, self_mask(seed, 1, bits), bits)
        dropped = {v for (v, kind) in self.revealed if kind == "s"}
        for v in sorted(dropped):
            key = shamir.combine(self.revealed[(v, "s")], t, length=crypto.KEY_BYTES)
            private = crypto.x25519_private_key(key)
            for u in sorted(self.server.neighbours[v] & part):
                shared = crypto.agree(private, self.s_public[u])
                mask = pairwise_mask(
                    shared, run=RUN, session=SESSION, round=0, u=u, v=v, dim=1, bits=bits
                )
                total = apply_pairwise(total, mask, u=v, v=u, bits=bits)
        return int(total[0])

    def row(self) -> np.ndarray:
        """The server's view: released sum, the two canary positions' part sums."""
        released = ABORTED if self.released is None else self.released
        return np.array([released, *(self.part_sum(p) for p in CANARY_POSITIONS)])


def ring_order(neighbours: dict[int, frozenset[int]]) -> list[int]:
    """The labels of a ring (every node of degree 2, one cycle) in cycle order, from the
    smallest label towards its smaller neighbour."""
    start = min(neighbours)
    ring = [start]
    while len(ring) < len(neighbours):
        ahead = sorted(neighbours[ring[-1]] - set(ring))
        if not ahead:
            raise ValueError("not a single cycle")
        ring.append(ahead[0])
    return ring


def split_ring_session(one_at: int, rng: np.random.Generator) -> SplitSession:
    """One session of the canary with the input 1 at ring position ``one_at`` (0 or 3)."""
    return SplitSession(one_at, rng).run()


def split_witnesses() -> dict[str, Witness]:
    """The released sum, the part sum at position 0, and position 0's minus position 3's."""

    def col(j: int):
        return lambda y: np.atleast_2d(np.asarray(y, dtype=float))[:, j]

    return {
        "part sum at position 0": col(1),
        "part 0 minus part 3": lambda y: col(1)(y) - col(2)(y),
        "released sum": col(0),
    }


def _secagg_split(eps: float, delta: float):
    """Battery entry: the claim is eps = 0 whatever budget the caller passes (as
    ``secagg``'s)."""
    from ldpfleet.collector.audit.battery import AuditSpec

    del eps

    def sampler(one_at: int):
        return lambda rng, count: np.stack(
            [split_ring_session(one_at, rng).row() for _ in range(count)]
        )

    canary = Canary(
        f"{SPLIT_DEVICES}-device SecAgg+ ring (degree {SPLIT_DEGREE}) cut in 2 by 2 dropouts: "
        "input 1 in one part vs the other, same sum",
        sampler(CANARY_POSITIONS[0]),
        sampler(CANARY_POSITIONS[1]),
    )
    return AuditSpec(
        "secagg-split",
        canary,
        split_witnesses(),
        0.0,
        delta=delta,
        trials=SPLIT_TRIALS,
        notes="claim eps = 0: a split survivors' graph is never unmasked (each part's sum)",
    )


SPLIT_BATTERY = {"secagg-split": _secagg_split}
