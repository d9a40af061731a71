"""The secure-aggregation server's view as an audited mechanism — theory of operation.

Claim. Secure aggregation (Bonawitz et al., CCS 2017; ``protocol/secagg``) promises that
an honest-but-curious server learns nothing about the inputs beyond their sum: two input
vectors with the same sum give the server identically distributed views. As a DP claim
that is eps = 0 (delta = 0), so ANY certified eps_LB > 0 is a violation.

What is run. One session of the REAL machines — a ``SecAggServer`` and ``SECAGG_CLIENTS``
``SecAggClient``s (full graph, dim 1, ``FixedPoint(0, 1, 1, bits=32)``: an input 0 or 1 is
encoded as the integer 0 or 1 mod 2^32) — connected by direct calls as in
``tests/unit/test_secagg_machines.py``, no broker, no dropouts. Every key, self-mask seed
and share comes from ``random_bytes`` drawn from the trial's generator (seeded; the real
devices use ``os.urandom``). Worlds: D = inputs (1, 0, 0, ...), D' = (0, 1, 0, ...): the
same sum.

The view (one row per session, ``view_columns()``): what the server receives and computes
from it — every client's masked input y_u (from its ``SaMasked``), every client's
y_u - PRG(b_u) after the server's OWN reconstruction of the self-mask seed b_u from the
b-shares the survivors reveal in the unmask stage (the server legitimately learns b_u of
every survivor; Bonawitz §4), and the unmasked encoded total (``ABORTED`` = -1 when the
server refused the total as out of range — it has seen the shares by then). Correctly
masked, y_u and y_u - PRG(b_u) are uniform mod 2^32 in both worlds (the pairwise masks of the other
clients hide x_u); the total is 1 in both. A client that skips its pairwise masks leaves
y_u - PRG(b_u) = encode(x_u): the server reads the input.

What this entry cannot see without dropouts: a skipped SELF mask (the pairwise masks
still hide y_u when nobody drops). The ``secagg-dropout`` entry
(``collector/audit/secagg_dropout_canary.py``) sees it: a device declared dropped after
its masked input was sent, whose mask key the server rebuilds.

Cost. A session is ~2.4 ms of X25519 / HKDF / AES-GCM / Shamir for 3 clients, so the
default 1,000 sessions per world (500 + 500) take about 5 s for both worlds.
"""

from __future__ import annotations

import numpy as np
from ldpfleet.collector.audit.core import Canary, Witness
from ldpfleet.protocol import topics

__all__ = ["SECAGG_BATTERY", "secagg_session", "secagg_witnesses", "view_columns"]

SECAGG_CLIENTS = 3
SECAGG_BITS = 32
SECAGG_TRIALS = 1000
RUN = "audit"
SESSION = "sa0"
MODULUS = 2**SECAGG_BITS
ABORTED = -1.0  # the "sum" column of a session the server aborted (nothing released)


def view_columns(n: int = SECAGG_CLIENTS) -> list[str]:
    """Column names of a view row: masked y_u, unmasked y_u - PRG(b_u), the total."""
    return [f"masked {u}" for u in range(n)] + [f"unmasked {u}" for u in range(n)] + ["sum"]


def drive_session(server, clients: dict, upstream, after_timer=None) -> None:
    """Run a SecAgg ``server`` and its ``clients`` (pure machines, by device id) to the
    session's end on virtual time: deliver every message until all is quiet, then advance
    to the server's next deadline. Each message a device sends passes ``upstream(topic,
    message)``, which returns what the server receives (recorded, or replaced: a dropping
    device's last will), or None: nothing now (a message held back, in flight). After
    each deadline the server handled, ``after_timer()`` (when given) returns the (topic,
    message) pairs that reach it then (a held message arriving late)."""
    now = 0.0
    server.start(now)
    while True:
        while True:  # deliver until quiet
            batch = server.pop_outbound()
            for client in clients.values():
                batch += client.pop_outbound()
            if not batch:
                break
            for out in batch:
                topic = topics.parse(out.topic)
                if topic.family == "in":
                    clients[topic.recipient].receive(topic, out.message, now)
                elif topic.family == "up":
                    delivered = upstream(topic, out.message)
                    if delivered is not None:
                        server.receive(*delivered, now)
        if server.finished:
            return
        deadline = server.next_timer()
        if deadline is None:
            raise RuntimeError("secure aggregation stalled")
        now = max(now, deadline)
        server.handle_timer(now)
        for delivered in after_timer() if after_timer is not None else ():
            server.receive(*delivered, now)


def secagg_session(inputs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One SecAgg session of ``len(inputs)`` clients with scalar inputs; returns the
    server's view row (module docstring)."""
    from ldpfleet.protocol.secagg import crypto, shamir
    from ldpfleet.protocol.secagg.client import SecAggClient, self_mask, unpack_vector
    from ldpfleet.protocol.secagg.encoding import FixedPoint, sub_mod
    from ldpfleet.protocol.secagg.messages import SaMasked, SaUnmask
    from ldpfleet.protocol.secagg.server import SecAggServer, SumReady

    n = len(inputs)
    fixed = FixedPoint(0.0, 1.0, 1.0, bits=SECAGG_BITS)
    devices = [f"dev{i:02d}" for i in range(n)]
    server = SecAggServer(
        RUN, SESSION, devices, 1, fixed, stage_timeout=10.0, now=0.0, random_bytes=rng.bytes
    )
    clients = {
        d: SecAggClient(RUN, SESSION, d, [float(x)], random_bytes=rng.bytes)
        for d, x in zip(devices, inputs, strict=True)
    }
    masked: dict[str, int] = {}
    revealed: dict[int, dict[int, int]] = {}  # node -> {responder: b-share}

    def seen(topic: topics.Topic, message):  # the server's view, recorded as it arrives
        if isinstance(message, SaMasked):
            masked[topic.sender] = int(unpack_vector(message.masked, 1, SECAGG_BITS)[0])
        elif isinstance(message, SaUnmask):
            responder = server.label_of[topic.sender]
            for entry in message.shares:
                if entry.kind == "b":
                    share = shamir.share_from_bytes(entry.share)
                    revealed.setdefault(entry.node, {})[responder] = share
        return topic, message

    drive_session(server, clients, seen)
    ready = [e for e in server.pop_events() if isinstance(e, SumReady)]
    if not ready and len(revealed) < n:
        raise RuntimeError("secure aggregation aborted before the unmask stage")
    # the server's reconstruction of every survivor's self-mask seed b_u from the b-shares
    # it received (also when it then aborts: it refuses an out-of-range total, but the
    # shares were revealed by then)
    row = [float(masked[d]) for d in devices]
    for label, d in sorted((label, d) for d, label in server.label_of.items()):
        seed = shamir.combine(revealed[label], server.threshold, length=crypto.KEY_BYTES)
        y = np.array([masked[d]], dtype=np.uint64)
        row.append(float(sub_mod(y, self_mask(seed, 1, SECAGG_BITS), SECAGG_BITS)[0]))
    row.append(float(ready[0].encoded_total[0]) if ready else ABORTED)
    return np.array(row)


def secagg_witnesses(n: int = SECAGG_CLIENTS) -> dict[str, Witness]:
    """Clients 0's and 1's masked and unmasked values, their differences mod 2^bits, the
    total."""

    def col(j: int):
        return lambda y: np.atleast_2d(np.asarray(y, dtype=float))[:, j]

    def diff(a: int, b: int):
        return lambda y: np.mod(col(a)(y) - col(b)(y), MODULUS)

    return {
        "masked 0": col(0),
        "masked 1": col(1),
        "masked 0 - masked 1": diff(0, 1),
        "unmasked 0": col(n),
        "unmasked 1": col(n + 1),
        "unmasked 0 - unmasked 1": diff(n, n + 1),
        "sum": col(2 * n),
    }


def _secagg(eps: float, delta: float):
    """Battery entry: the claim is eps = 0 whatever budget the caller passes (``ldpfleet
    audit all`` passes 0.5, 1, 2; the JSON then shows eps_claimed = 0)."""
    from ldpfleet.collector.audit.battery import AuditSpec

    del eps
    n = SECAGG_CLIENTS
    d = np.zeros(n)
    d[0] = 1.0
    dprime = np.zeros(n)
    dprime[1] = 1.0

    def sampler(inputs: np.ndarray):
        return lambda rng, count: np.stack([secagg_session(inputs, rng) for _ in range(count)])

    canary = Canary(
        f"{n} clients: inputs (1, 0, 0) vs (0, 1, 0), same sum",
        sampler(d),
        sampler(dprime),
    )
    return AuditSpec(
        "secagg",
        canary,
        secagg_witnesses(n),
        0.0,
        delta=delta,
        trials=SECAGG_TRIALS,
        notes="claim eps = 0 (the server learns only the sum); any eps_LB > 0 is a violation",
    )


SECAGG_BATTERY = {"secagg": _secagg}
