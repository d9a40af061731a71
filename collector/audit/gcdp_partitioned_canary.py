"""The ``gcdp-partitioned`` audit entry: GC-DP through a partitioned fleet's release path,
in both noise modes — theory of operation.

What the fleet runs with ``[collector] partitions = P > 1`` (``collector.gcdp_stage``,
``scenarios.coordinator``): each partition worker files its devices' persisted batches into
windows with its own ``GcdpShare`` (a ``WindowAssembler``) and publishes each complete
window's node means as ``protocol.partition.GcdpWindowMeans`` on the status topic; the
coordinator decodes them and hands them to its ``GcdpStage`` (``given_means``), whose
``GcdpReleaser`` admits or refuses each message (``receive_means``: this run, the window
layout, known nodes, each node's mean once, not after the stage finished), assembles them
(``MeansAssembler``) and releases window k once every node's mean is in: one ledger
charge, one noise draw from ``release_rng(seed, noise)``, one ``GcdpRelease`` on
``rel/gcdp``.

The canary runs exactly that, minus the broker, with the ``gcdp`` entry's public theta,
nodes, window and worlds (``gcdp_canary``: node 0 takes 0.9933 eps_rel; D all readings 0,
D' node 0's reading at step 0 is 1):

* partitions: P = 3, each node in the partition ``protocol.topics.partition_of`` gives it
  (node0 -> 1, node1 -> 0, node2 -> 2: one node each, so the window is assembled from three
  workers' messages); each worker a ``GcdpShare`` fed its node's readings as two batches of
  W/2 steps (``on_persisted`` rows, as the ``CollectorService`` calls it), its outbox
  published with its own ``flush`` on a wire that keeps the payloads;
* delivery, the adversarial schedule of an at-least-once broker: node 0's worker first,
  every message delivered twice in a row (a QoS 1 redelivery), then the other workers in
  partition order, then node 0's message once more after the window was released (late).
  Each payload is decoded by the codec (what the coordinator's pump reads) and given to
  ``receive_means``; a refused one (``RemoteProtocolError``) is counted and dropped, as the
  coordinator's ``coordinate_stream`` does. A correct coordinator admits each message once
  and refuses the 4 copies; then ``finish()``;
* noise modes: each trial draws "seeded" or "os" (probability 1/2, from the audit's
  generator). "seeded": the coordinator's generator is ``release_rng(seed)``, the run's
  seed a secret of the run (the observer does not hold it: ``RELEASE_NOISE_NOTE``).
  "os" (``[privacy] device_noise = "os"``): ``release_rng(seed, "os")``, and the observer
  HOLDS the seed (it is in results.json: privacy review V's threat, the one "os" exists
  for): the output is the release minus the noise the seeded generator of that seed would
  have drawn (``laplace_draw`` of zero means with ``release_rng(seed)``, exact on the grid).
  A correct "os" release is independent of the seed, so the subtraction is
  post-processing with data-independent randomness and the claim still holds; a release
  that takes its noise from the seed is given away exactly (eps_LB unbounded);
* output and witnesses: as ``gcdp``'s (``gcdp_canary.node0_scores``): node 0's values of
  every ``GcdpRelease`` of window 0 read through the codec; its Laplace likelihood ratio
  over its releases and its mean on a grid of B_0 / 2, on every run and on the runs of
  each mode alone (``_witnesses``).

Claim: eps_rel per protected unit (the release's adjacency), delta 0. A correct path
releases node 0's window mean once with noise of scale (s_0 + g) / eps_0: eps_LB stays
below eps_0 = 0.9933 eps_rel. The "os" half spreads node 0's value over a difference of
two Laplace draws, so this entry certifies less than ``gcdp`` on the same runs; its job is
the partitioned path's and the "os" mode's planted bugs (``mutants``: a redelivered
partition's means summed, a window released per partition message, "os" ignored).

Randomness only from the generators: in "os" trials the fleet's "os" path runs with a
stand-in for OS entropy (``OS_STAND_IN_TAG``; ``devices.noise_entropy.stand_in_entropy``),
independent of the run's seed as OS entropy is, so the entry's figures are a fixed outcome
of the audit's seed like every other entry's. No time, no I/O.
"""

from __future__ import annotations

import numpy as np
from ldpfleet.collector.audit.core import Canary
from ldpfleet.collector.audit.gcdp_canary import (
    GCDP_NODES,
    GCDP_WINDOW,
    RUN,
    fleet_theta,
    node0_scores,
)

__all__ = [
    "NOISE_MODES",
    "PARTITIONS",
    "gcdp_partitioned_spec",
    "partitioned_release",
    "worker_payloads",
]

ENTRY = "gcdp-partitioned"
PARTITIONS = 3  # partition_of puts node0, node1, node2 in partitions 1, 0, 2
NOISE_MODES = ("seeded", "os")
# "os" runs draw from a stand-in for OS entropy (``devices.noise_entropy.stand_in_entropy``):
# default_rng((OS_STAND_IN_TAG, run seed)), a stream no scenario seed's generator reaches
# and the observer does not model, so every row is a fixed outcome of ``--seed``
OS_STAND_IN_TAG = 0x05E7
OTHER_MODE = -4e12  # a seeded-runs witness's score of an "os" run (below NO_RELEASE)


class _Wire:
    """A connection that keeps what is published (a worker's ``flush`` target)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, bytes]] = []

    async def publish_many(self, items, qos: int = 1) -> None:
        self.items.extend(items)


def _run_to_end(coroutine) -> None:
    """Run a coroutine that never suspends (``GcdpShare.flush`` on a ``_Wire``)."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise RuntimeError("the coroutine suspended")


def worker_payloads(window: int, moved: bool) -> dict[int, list[bytes]]:
    """Partition -> the ``GcdpWindowMeans`` payloads its worker's ``GcdpShare`` publishes
    for one window of the canary's readings (D, or D' when ``moved``)."""
    from ldpfleet.collector.gcdp_stage import GcdpShare
    from ldpfleet.protocol.topics import partition_of

    half = window // 2
    out: dict[int, list[bytes]] = {}
    for p in range(PARTITIONS):
        devices = [d for d in GCDP_NODES if partition_of(d, PARTITIONS) == p]
        if not devices:
            continue
        share = GcdpShare(RUN, devices, window, window, (p, PARTITIONS))
        for seq, (t0, size) in enumerate(((0, half), (half, window - half))):
            rows = []
            for device in devices:
                readings = [0.0] * size
                if moved and device == GCDP_NODES[0] and t0 == 0:
                    readings[0] = 1.0  # the one protected unit D' changes
                rows.append((device, seq, t0, readings, 0.0))
            share.on_persisted(rows)
        wire = _Wire()
        _run_to_end(share.flush(wire))
        out[p] = [payload for _topic, payload in wire.items]
    return out


def delivery_schedule(payloads: dict[int, list[bytes]]) -> list[bytes]:
    """The adversarial at-least-once schedule (module docstring): node 0's worker first,
    every message twice in a row, the others in partition order, node 0's again at the end."""
    from ldpfleet.protocol.topics import partition_of

    first = partition_of(GCDP_NODES[0], PARTITIONS)
    order = [first] + [p for p in sorted(payloads) if p != first]
    schedule = [payload for p in order for payload in payloads[p] for _copy in range(2)]
    return schedule + payloads[first][:1]


def partitioned_release(
    theta, moved: bool, seed: int, noise: str = "seeded", *, payloads=None
) -> tuple[list[list[float]], int]:
    """One partitioned run of one window (module docstring): the ``values`` of every
    ``GcdpRelease`` of window 0 the coordinator queued on ``rel/gcdp``, read through the
    codec (with ``noise`` "os": minus the seeded noise of ``seed``, the observer's replay),
    and how many ``GcdpWindowMeans`` the coordinator refused. ``payloads``: the workers'
    (``worker_payloads(theta.window, moved)``, computed here when None)."""
    from ldpfleet.collector.gcdp.windows import GcdpReleaser, laplace_draw
    from ldpfleet.collector.gcdp_stage import LEDGER_OWNER, release_rng
    from ldpfleet.devices.noise_entropy import stand_in_entropy
    from ldpfleet.protocol import codec, topics
    from ldpfleet.protocol.errors import RemoteProtocolError
    from ldpfleet.protocol.ledger import PrivacyLedger
    from ldpfleet.protocol.messages import GcdpRelease

    w = theta.window
    with stand_in_entropy(lambda: np.random.default_rng((OS_STAND_IN_TAG, seed))):
        generator = release_rng(seed, noise)  # "os": the stand-in, not the seed's stream
    coordinator = GcdpReleaser(
        RUN, list(GCDP_NODES), theta, w, PrivacyLedger(LEDGER_OWNER), generator,
        given_means=True,
    )  # fmt: skip
    refused = 0
    if payloads is None:
        payloads = worker_payloads(w, moved)
    for payload in delivery_schedule(payloads):
        try:
            coordinator.receive_means(codec.decode(payload))
        except RemoteProtocolError:
            refused += 1
    coordinator.finish()
    topic = topics.rel(RUN, "gcdp")
    releases = [
        np.asarray(message.values, dtype=float)
        for out in coordinator.pop_outbound()
        if out.topic == topic
        and isinstance(message := codec.decode(codec.encode(out.message)), GcdpRelease)
        and message.window == 0
    ]
    if noise == "os":  # the observer holds the seed: subtract what it would have drawn
        replay = laplace_draw(np.zeros(theta.d), theta, release_rng(seed))
        releases = [values - replay for values in releases]
    return [values.tolist() for values in releases], refused


def _witnesses(shift: float) -> dict:
    """``gcdp``'s two witnesses on every run, and again on the runs of each noise mode
    alone: the "os" runs' value is spread by the observer's subtraction, so a bug of the
    partitioned path shows best on the "seeded" runs, and a bug of the "os" mode only on
    the "os" runs. A run of the other mode scores ``OTHER_MODE``, below every score."""

    def likelihood_ratio(y):
        return np.asarray(y)[:, 1]

    def coordinate_0(y):
        return np.round(np.asarray(y)[:, 0] / (shift / 2)) * (shift / 2)

    def runs_of(mode, score):
        def witness(y):
            y = np.asarray(y)
            return np.where(y[:, 3] == NOISE_MODES.index(mode), score(y), OTHER_MODE)

        return witness

    return {
        "node 0 likelihood ratio": likelihood_ratio,
        "coordinate 0": coordinate_0,
        **{
            f"{name}, {mode} runs": runs_of(mode, score)
            for mode in NOISE_MODES
            for name, score in (
                ("node 0 likelihood ratio", likelihood_ratio),
                ("coordinate 0", coordinate_0),
            )
        },
    }


def gcdp_partitioned_spec(eps: float, delta: float):
    """The battery's ``gcdp-partitioned`` entry (module docstring)."""
    from ldpfleet.collector.audit.battery import AuditSpec

    theta = fleet_theta(eps)
    shift = 1.0 / theta.window  # D' moves node 0's window mean by 1/W = B_0

    def sampler(moved: bool):
        def run(rng: np.random.Generator, n: int) -> np.ndarray:
            seeds = rng.integers(0, 2**63 - 1, size=n)
            modes = rng.integers(0, len(NOISE_MODES), size=n)
            # the workers hold no randomness and no state between runs: their payloads,
            # computed once per call (under any planted bug), are every run's
            payloads = worker_payloads(theta.window, moved)
            rows = []
            for seed, mode in zip(seeds, modes, strict=True):
                noise = NOISE_MODES[int(mode)]
                releases, _refused = partitioned_release(
                    theta, moved, int(seed), noise, payloads=payloads
                )
                rows.append((*node0_scores(releases, shift), float(mode)))
            return np.array(rows)

        return run

    canary = Canary(
        f"partitioned fleet release ({PARTITIONS} workers' window means, each delivered "
        f"twice, node 0's late again; w = {GCDP_WINDOW}; noise seeded or os): "
        "one reading of node 0, 0 vs 1",
        sampler(False),
        sampler(True),
    )
    return AuditSpec(
        ENTRY,
        canary,
        _witnesses(shift),
        eps,
        trials=4000,
        notes=f"eps_LB is bounded by node 0's share eps_0 = {theta.budgets[0] / eps:.4f} "
        'eps_rel; "os" trials are not reproducible from the seed',
    )
