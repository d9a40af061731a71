"""``ldpfleet bench secagg``: one secure-aggregation session, end to end over a transport.

N devices (each a ``SecAggAgent`` with its own connection) hold random vectors of length
D in [-1, 1]; a fraction F of them (chosen with the seed) drops out at one stage; the
collector runs ``secure_sum``. Dropping devices announce their departure like an MQTT last
will (``--silent-dropouts`` makes the collector wait for the stage deadline instead).
``exact`` is true when the unmasked integer total equals the sum of the survivors'
fixed-point encodings mod 2^bits, i.e. the protocol lost nothing and added nothing.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from ldpfleet.app.suggest import near_miss
from ldpfleet.broker.select import open_broker
from ldpfleet.collector.secure_sum import secure_sum
from ldpfleet.devices.secagg_agent import DROPOUT_STAGES, SecAggAgent
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg import graph as graphs
from ldpfleet.protocol.secagg.client import SecAggClient
from ldpfleet.protocol.secagg.crypto import signing_keypair
from ldpfleet.protocol.secagg.encoding import FixedPoint, add_mod
from ldpfleet.protocol.secagg.messages import MAX_PARTICIPANTS
from ldpfleet.protocol.secagg.server import check_dim, check_stage_timeout


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# every device's inputs, masked vector and messages live in this one process: measured
# peak RSS 604 MB at 200 x 100,000 and 825 MB at 2,000 x 10,000 (2e7 entries each, ~85 MB
# of it the interpreter), so about 40 bytes an entry; --devices 10000 --dim 100000 (both
# within their own limits) would have asked for ~40 GB (held-out QA, helper T)
MAX_ENTRIES = 10**8
BYTES_PER_ENTRY = 40


def check_options(
    devices: int, dim: int, *, dropout: float, dropout_stage: str, stage_timeout: float, seed: int
) -> None:
    """Refuse a bad option before anything starts, in a ``ParameterError`` naming it, its
    limits and its value (``dropout=1.5`` and ``seed=-1`` were numpy's tracebacks,
    ``dropout_stage="never"`` ran without a word, a ``stage_timeout`` the devices refuse
    hung)."""
    check_dim(dim)  # before drawing the inputs: --dim -1 was numpy's traceback
    check_stage_timeout(stage_timeout)
    if not (_is_int(devices) and 2 <= devices <= MAX_PARTICIPANTS):
        raise ParameterError(
            f"need 2..{MAX_PARTICIPANTS} devices, got {devices!r}",
            field="devices",
            limit=f"2..{MAX_PARTICIPANTS} devices",
            value=devices,
        )
    if devices * dim > MAX_ENTRIES:
        raise ParameterError(
            f"--devices x --dim must be at most {MAX_ENTRIES:,} entries in one session "
            f"(about {BYTES_PER_ENTRY} bytes each in this process: "
            f"{MAX_ENTRIES * BYTES_PER_ENTRY / 1e9:.0f} GB), got {devices} x {dim} = "
            f"{devices * dim:,}; lower --dim to {MAX_ENTRIES // devices} or fewer",
            field="dim",
            limit=f"devices x dim <= {MAX_ENTRIES:,} (value: devices x dim)",
            value=devices * dim,
        )
    if isinstance(dropout, bool) or not isinstance(dropout, int | float) or not 0 <= dropout < 1:
        raise ParameterError(
            f"must be in [0, 1), got {dropout!r}", field="dropout", limit="in [0, 1)", value=dropout
        )
    if dropout_stage not in DROPOUT_STAGES:
        raise ParameterError(
            f"{dropout_stage!r} is not one of {', '.join(DROPOUT_STAGES)}"
            f"{near_miss(dropout_stage, DROPOUT_STAGES)}",
            field="dropout_stage",
            limit=f"one of {', '.join(DROPOUT_STAGES)}",
            value=dropout_stage,
        )
    if not (_is_int(seed) and seed >= 0):
        raise ParameterError(
            f"must be an integer >= 0, got {seed!r}",
            field="seed",
            limit="an integer >= 0",
            value=seed,
        )


def session_degree(devices: int, neighbors: int | None, full: bool) -> int | None:
    """Each device's neighbours in the session (``neighbors``; None: ``default_degree``;
    ``full``: all others), or None for a degree the session refuses itself (naming
    ``--neighbors``)."""
    if full:
        return devices - 1
    degree = graphs.default_degree(devices) if neighbors is None else neighbors
    return degree if _is_int(degree) and 1 <= degree <= devices - 1 else None


def session_graph(devices: int, neighbors: int | None, full: bool) -> tuple[int, int] | None:
    """``(degree, t)`` of the session (``session_degree``, and the server's default
    threshold: a strict majority of a device's share holders, its neighbours and itself),
    or None for a degree the session refuses itself."""
    degree = session_degree(devices, neighbors, full)
    return None if degree is None else (degree, graphs.default_threshold(degree + 1))


def check_survivors(devices: int, dropout: float, neighbors: int | None, full: bool) -> None:
    """Refuse a ``dropout`` that leaves fewer devices than the session's threshold t
    (``session_graph``): every stage then closes with fewer than t replies and the session aborts,
    whatever happens (held-out QA: ``--dropout 0.99`` dropped 198 of 200 devices, then
    exited 1 saying "not exact")."""
    session = session_graph(devices, neighbors, full)
    if session is None:
        return
    degree, threshold = session
    why = f" (degree {degree}: t = (degree + 1) // 2 + 1)"
    graphs.check_dropout_survivors(dropout, devices, threshold, why)


SERVER_STREAM = 0x5E5  # the seed's second stream: the server's randomness (graph labelling)
ABORT_WARNING_ABOVE = 0.01  # a warning when more than 1 % of such sessions may abort


def abort_risk(
    devices: int,
    dropout: float,
    neighbors: int | None,
    full: bool,
    dropout_stage: str = "after_shares",
) -> dict:
    """The share of sessions that may abort before unmasking when
    ``round(dropout * devices)`` random devices drop at ``dropout_stage``: for want of
    live share holders (``graphs.abort_probability_bound``) or, when they leave before
    their masked input, because the survivors' graph splits
    (``graphs.split_probability_bound``), and a ``warnings`` sentence when it is above
    ``ABORT_WARNING_ABOVE`` naming the smallest odd ``--neighbors`` that keeps it below
    (else no sentence). Empty for a degree the session refuses itself."""
    session = session_graph(devices, neighbors, full)
    if session is None:
        return {}
    degree, threshold = session
    dropping = round(dropout * devices)
    split = graphs.leaves_before_masked(dropout_stage)
    # in floating point (the exact integers took 193 s to advise on --devices 10000
    # --dropout 0.45, a degree at a time)
    bound = graphs.session_abort_bound(devices, degree, threshold, dropping, before_masked=split)
    risk: dict = {"abort_probability_at_most": float(f"{bound:.3g}"), "warnings": []}
    if bound > ABORT_WARNING_ABOVE:
        advice = ""
        larger = graphs.safer_degree(
            devices, degree, dropping, ABORT_WARNING_ABOVE, before_masked=split
        )
        if larger is None and degree < devices - 1:  # only the full graph, if even that
            t, full = graphs.default_threshold(devices), devices - 1
            if graphs.session_abort_bound(devices, full, t, dropping, before_masked=split) <= (
                ABORT_WARNING_ABOVE
            ):
                larger = full
        if larger is not None:
            advice = f"; --neighbors {larger} keeps it below {ABORT_WARNING_ABOVE:.0%}"
        splits = graphs.split_probability_bound(devices, degree, dropping) if split else 0.0
        why = (
            "a device left with fewer than t live share holders, or the survivors' graph "
            "split in parts: the protocol's rules"
            if splits > 0.0
            else "a device left with fewer than t live share holders: the protocol's rule"
        )
        risk["warnings"] = [
            f"with {degree} neighbours (t = {threshold}) and {dropping} of {devices} devices "
            f"dropping, up to {bound:.1%} of sessions abort before unmasking ({why}){advice}"
        ]
    return risk


async def bench_secagg(
    devices: int,
    dim: int,
    *,
    neighbors: int | None = None,
    full: bool = False,
    dropout: float = 0.0,
    dropout_stage: str = "after_shares",
    broker: str = "memory",
    seed: int = 0,
    stage_timeout: float = 30.0,
    silent_dropouts: bool = False,
    bits: int = 64,
    scale: float = 2.0**16,
    active: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Run one session and measure it; ``progress(connected, devices)`` during the
    connect phase."""
    check_options(
        devices,
        dim,
        dropout=dropout,
        dropout_stage=dropout_stage,
        stage_timeout=stage_timeout,
        seed=seed,
    )
    fixed_point = FixedPoint(-1.0, 1.0, scale, bits)
    bench = _SecAggBench.draw(devices, dim, dropout, seed, fixed_point, active)
    async with open_broker(broker) as (transport, info):
        agents = bench.agents(transport, dropout_stage, silent_dropouts)
        connect_started = time.perf_counter()
        agent_tasks = [asyncio.create_task(agent.run()) for agent in agents]
        await _connected(agents, progress)
        connect_seconds = time.perf_counter() - connect_started
        started = time.perf_counter()
        try:
            result = await _session(
                transport, bench, dim, full, neighbors, stage_timeout=stage_timeout, active=active
            )
        finally:  # a refused setting (a degree, a capacity) must not leave the agents running
            wall = time.perf_counter() - started
            for task in agent_tasks:
                task.cancel()
            await asyncio.gather(*agent_tasks, return_exceptions=True)
    exact, float_error = bench.exactness(result)
    summary = result.summary
    n_drop = len(bench.dropping)
    return {
        "bench": "secagg",
        "broker": info.kind,
        "devices": devices,
        "dim": dim,
        "graph": "full" if full else "harary",
        "active": active,
        "neighbors": summary.get("degree", neighbors),
        "threshold": summary.get("threshold"),
        "dropout": dropout,
        "dropout_stage": dropout_stage if n_drop else None,
        "dropped_devices": n_drop,
        "dropout_detection": "deadline" if silent_dropouts else "last will",
        "survivors": len(result.survivors),
        "aborted": result.aborted,
        "exact": exact,
        "max_abs_error": float_error if exact is not None else None,
        "seconds_per_stage": {k: round(v, 3) for k, v in result.stage_seconds.items()},
        "seconds": round(wall, 3),
        "connect_seconds": round(connect_seconds, 3),
        **_traffic(agents, result),
        **abort_risk(devices, dropout, neighbors, full, dropout_stage),
    }


async def _session(transport, bench, dim: int, full: bool, neighbors, *, stage_timeout, active):
    """The server's secure sum over the bench's devices (a Harary graph of degree
    ``neighbors`` unless ``full``); the session's refused ``degree`` is this bench's
    ``--neighbors``."""
    try:
        return await secure_sum(
            transport,
            bench.run,
            bench.session,
            bench.names,
            dim,
            bench.fixed_point,
            graph="full" if full else "harary",
            degree=None if full else neighbors,
            stage_timeout=stage_timeout,
            active=active,
            identity_keys=bench.identity_keys or None,
            random_bytes=bench.server_random,
        )
    except ParameterError as error:
        if error.field != "degree":
            raise
        raise ParameterError(
            error.reason, field="neighbors", limit=error.limit, value=error.value
        ) from None


@dataclass
class _SecAggBench:
    """One bench session's devices: their names, inputs (drawn with the seed), which of
    them drop out, and (active mode) their signing identities."""

    run: str
    session: str
    dim: int
    names: list[str]
    inputs: dict[str, np.ndarray]
    dropping: set[str]
    fixed_point: FixedPoint
    active: bool = False
    identities: dict = field(default_factory=dict)
    identity_keys: dict = field(default_factory=dict)
    # the server's randomness (the SecAgg+ graph's labelling): seeded, so that the seed
    # decides the whole session, an abort included (with os.urandom the README's K = 11
    # session aborted in about 4 % of runs of one seed: ``abort_probability_at_most``)
    server_random: Callable[[int], bytes] = os.urandom

    @classmethod
    def draw(
        cls, devices: int, dim: int, dropout: float, seed: int, fixed_point: FixedPoint,
        active: bool,
    ) -> _SecAggBench:  # fmt: skip
        """The inputs in [-1, 1]^dim and round(dropout * devices) dropping devices, drawn
        with ``seed``; in active mode a signing key pair per device, every public key known
        to all."""
        rng = np.random.default_rng(seed)
        run = f"bench-sa-{secrets.token_hex(3)}"
        names = [f"d{i:05d}" for i in range(devices)]
        inputs = {name: rng.uniform(-1.0, 1.0, dim) for name in names}
        n_drop = round(dropout * devices)
        dropping = set(rng.choice(names, size=n_drop, replace=False)) if n_drop else set()
        identities = {name: signing_keypair() for name in names} if active else {}
        identity_keys = {name: pair.public for name, pair in identities.items()}
        server_random = np.random.default_rng([seed, SERVER_STREAM]).bytes
        return cls(run, "s0", dim, names, inputs, dropping, fixed_point, active, identities,
                   identity_keys, server_random)  # fmt: skip

    def client_for(self, name: str) -> SecAggClient:
        """Device ``name``'s protocol client (signing in active mode)."""
        if not self.active:
            return SecAggClient(self.run, self.session, name, self.inputs[name])
        return SecAggClient(
            self.run,
            self.session,
            name,
            self.inputs[name],
            active=True,
            signing_key=self.identities[name].private,
            identity_keys=self.identity_keys,
        )

    def agents(self, transport, dropout_stage: str, silent: bool) -> list[SecAggAgent]:
        """One agent per device, 64 connecting at a time."""
        gate = asyncio.Semaphore(64)
        return [
            SecAggAgent(
                transport,
                self.client_for(name),
                dropout=dropout_stage if name in self.dropping else None,
                announce_dropout=not silent,
                connect_gate=gate,
            )
            for name in self.names
        ]

    def exactness(self, result) -> tuple[bool | None, float | None]:
        """Whether the unmasked total is the survivors' encoded sum mod 2^bits, and the
        largest error of the decoded total (None, None when nothing was unmasked)."""
        if result.encoded_total is None:
            return None, None
        fixed_point, inputs = self.fixed_point, self.inputs
        expected = np.zeros(self.dim, dtype=np.uint64)
        for name in result.survivors:
            expected = add_mod(expected, fixed_point.encode(inputs[name]), fixed_point.bits)
        exact = bool(np.array_equal(expected, result.encoded_total))
        float_error = float(
            np.max(np.abs(result.total - sum(np.clip(inputs[n], -1, 1) for n in result.survivors)))
        )
        return exact, float_error


async def _connected(
    agents: list[SecAggAgent], progress: Callable[[int, int], None] | None
) -> None:
    """Wait until every agent subscribed (``progress(connected, devices)`` on the way)."""
    waits = [asyncio.ensure_future(agent.subscribed.wait()) for agent in agents]
    for connected, wait in enumerate(asyncio.as_completed(waits), 1):
        await wait
        if progress is not None:
            progress(connected, len(agents))


def _traffic(agents: list[SecAggAgent], result) -> dict:
    """Bytes and messages per device (means) and the collector's bytes."""
    return {
        "bytes_up_per_device": round(float(np.mean([a.bytes_up for a in agents])), 1),
        "bytes_down_per_device": round(float(np.mean([a.bytes_down for a in agents])), 1),
        "messages_up_per_device": round(float(np.mean([a.messages_up for a in agents])), 2),
        "messages_down_per_device": round(float(np.mean([a.messages_down for a in agents])), 2),
        "collector_bytes_in": result.bytes_in,
        "collector_bytes_out": result.bytes_out,
    }
