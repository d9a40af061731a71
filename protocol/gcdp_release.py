"""The GC-DP window release: window formation and the release machine — theory of operation.

Devices report clipped, normalised readings in batches that arrive in any order across
devices (flow control admits them as credit allows). The collector releases, for each
complete non-overlapping window k (steps ``k*W .. k*W+W-1``), the M node means with GC-DP
(Algorithm 4, docs/gcdp-fleet.md) under a fixed public theta (``collector.gcdp``'s
``FleetTheta``, computed before any protected reading arrives):

* ``WindowAssembler`` (pure data structure) files each persisted batch's values into the
  windows they cover and says when a window has every step of every node. Steps past the
  last complete window (a trailing partial window) are ignored. A step given twice is a
  bug of the caller (the stream collector deduplicates), so it raises
  ``LocalProtocolError``.
* ``MeansAssembler`` is the same for windows whose node means arrive ready-made (a
  partitioned run: each partition worker sends its nodes' means of window k,
  ``protocol.partition.GcdpWindowMeans``, computed by its own ``WindowAssembler`` exactly
  as one collector's would be); a window is complete when every node's mean is in.
* ``GcdpReleaseMachine`` (a ``protocol.events.Machine``) releases windows IN INDEX ORDER:
  window k waits until windows 0..k-1 are released, so the sequence of noise draws from
  the injected generator does not depend on delivery order, and a seed gives the same
  release on every transport. For each window it (1) charges ``eps_rel`` to its OWN
  ledger account (``BudgetExhausted`` -> nothing is drawn or published), (2) draws the
  noise with the injected ``draw(means, theta, rng)`` (the collector's
  ``collector.gcdp.windows.GcdpReleaser`` injects Algorithm 4, ``laplace_release``; the
  noise arithmetic is a mechanism, not a protocol decision), (3) queues a ``GcdpRelease``
  on ``rel/gcdp``. ``finish()`` (stage closed) releases the complete windows still waiting
  behind a gap, in index order, and reports the windows that never completed; they are
  never released.
* ``receive_means`` admits a partition worker's ``GcdpWindowMeans``: this run, windows of
  theta's length starting at their own step, known nodes, each node's mean once. A message
  that does not fit is refused (``RemoteProtocolError`` naming the field), counted in
  ``means_refused`` and never filed; the pump only hands messages over.

Accounting. The account is a ``WindowAccount(eps_rel, w=1)`` indexed by window number:
each window is one charge of eps_rel at its own index, so a second release of a window is
refused by the ledger. Every protected unit (one value of one node at one step) lies in
exactly one window, so by parallel composition each unit's loss is eps_rel (the account's
``max_window_spent``), plus eps_cal = 0 for public calibration; ``total_spent`` (windows x
eps_rel) is the sum over disjoint data, not a per-unit loss.

Time plays no part (windows are defined by step index); randomness only from the injected
``numpy.random.Generator``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import (
    BudgetExhausted,
    LocalProtocolError,
    ParameterError,
    RemoteProtocolError,
)
from ldpfleet.protocol.events import Event, Machine
from ldpfleet.protocol.ledger import PrivacyLedger, WindowAccount
from ldpfleet.protocol.messages import GcdpRelease
from ldpfleet.protocol.partition import GcdpWindowMeans

__all__ = [
    "RELEASE_ACCOUNT",
    "RELEASE_KIND",
    "RELEASE_MECHANISM",
    "GcdpReleaseMachine",
    "MeansAssembler",
    "ReleaseDraw",
    "ReleaseRefused",
    "ReleaseTheta",
    "WindowAssembler",
    "WindowReleased",
]

RELEASE_ACCOUNT = "gcdp_release"
RELEASE_KIND = "gcdp"
RELEASE_MECHANISM = "gcdp_laplace"


class ReleaseTheta(Protocol):
    """What the release machine reads of the public theta (``collector.gcdp.FleetTheta``)."""

    method: str
    window: int
    eps_rel: float
    eps_cal: float
    adjacency: str
    bounds: np.ndarray
    scales: np.ndarray
    budgets: np.ndarray
    edges: tuple[tuple[int, int], ...]

    @property
    def d(self) -> int:
        """Coordinates per release (= nodes)."""
        ...


# the noise of one window: (the M true node means, theta, the generator) -> released values
ReleaseDraw = Callable[[np.ndarray, ReleaseTheta, np.random.Generator], np.ndarray]


class WindowAssembler:
    """Collect per-node step values into non-overlapping windows of ``window`` steps."""

    def __init__(self, nodes: int, window: int, steps: int) -> None:
        for name, value, low in (("nodes", nodes, 1), ("window", window, 1), ("steps", steps, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ParameterError(
                    f"must be an integer >= {low}, got {value!r}",
                    field=name,
                    limit=f"an integer >= {low}",
                    value=value,
                )
        self.nodes = nodes
        self.window = window
        self.n_windows = steps // window  # the trailing partial window is never released
        self._values: dict[int, np.ndarray] = {}
        self._filled: dict[int, np.ndarray] = {}
        self._missing: dict[int, int] = {}
        self._taken: set[int] = set()

    def add(self, node: int, t0: int, values: Sequence[float]) -> list[int]:
        """File node ``node``'s values for steps ``t0 ..``; return the windows this made
        complete (ascending)."""
        if isinstance(node, bool) or not isinstance(node, int) or not 0 <= node < self.nodes:
            raise LocalProtocolError(f"node {node!r} is not in [0, {self.nodes})", field="node")
        if isinstance(t0, bool) or not isinstance(t0, int) or t0 < 0:
            raise LocalProtocolError(f"must be an integer >= 0, got {t0!r}", field="t0")
        x = np.asarray(values, dtype=float).ravel()
        if not np.all(np.isfinite(x)) or np.any(x < 0.0) or np.any(x > 1.0):
            raise LocalProtocolError("values must be finite and in [0, 1]", field="values")
        w = self.window
        end = min(t0 + x.size, self.n_windows * w)
        completed = []
        t = t0
        while t < end:
            k, offset = divmod(t, w)
            span = min(w - offset, end - t)
            if k in self._taken:
                raise LocalProtocolError(f"window {k} was already taken", field="t0")
            buf = self._values.get(k)
            if buf is None:
                buf = self._values[k] = np.zeros((self.nodes, w))
                self._filled[k] = np.zeros((self.nodes, w), dtype=bool)
                self._missing[k] = self.nodes * w
            filled = self._filled[k][node, offset : offset + span]
            if filled.any():
                raise LocalProtocolError(
                    f"node {node} step {t + int(np.argmax(filled))} given twice", field="t0"
                )
            buf[node, offset : offset + span] = x[t - t0 : t - t0 + span]
            self._filled[k][node, offset : offset + span] = True
            self._missing[k] -= span
            if self._missing[k] == 0:
                completed.append(k)
            t += span
        return sorted(completed)

    def complete(self, k: int) -> bool:
        """Window ``k`` has every step of every node (and was not taken yet)."""
        return self._missing.get(k) == 0

    def pending(self) -> list[int]:
        """Windows started but not complete, ascending."""
        return sorted(k for k, missing in self._missing.items() if missing > 0)

    def take(self, k: int) -> tuple[int, np.ndarray]:
        """Remove complete window ``k``: (first step, the M node means)."""
        if not self.complete(k):
            raise LocalProtocolError(f"window {k} is not complete", field="window")
        buf = self._values.pop(k)
        del self._filled[k], self._missing[k]
        self._taken.add(k)
        return k * self.window, buf.mean(axis=1)


class MeansAssembler:
    """Windows made of node means given ready-made (``add_means``); ``complete``,
    ``pending``, ``take`` and ``n_windows`` as ``WindowAssembler``'s."""

    def __init__(self, nodes: int, window: int, steps: int) -> None:
        WindowAssembler(nodes, window, steps)  # the same parameter checks
        self.nodes, self.window, self.n_windows = nodes, window, steps // window
        self._means: dict[int, np.ndarray] = {}
        self._given: dict[int, np.ndarray] = {}
        self._taken: set[int] = set()

    def add_means(self, k: int, nodes: Sequence[int], means: Sequence[float]) -> bool:
        """Node ``nodes[i]``'s mean of window ``k`` is ``means[i]``; returns whether window
        ``k`` is complete now. A window past the stream, taken, or a node given twice:
        ``LocalProtocolError``."""
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < self.n_windows:
            raise LocalProtocolError(
                f"window {k!r} is not in [0, {self.n_windows})", field="window"
            )
        if k in self._taken:
            raise LocalProtocolError(f"window {k} was already taken", field="window")
        index = np.asarray(nodes, dtype=int)
        x = np.asarray(means, dtype=float).ravel()
        if index.shape != x.shape or np.any(index < 0) or np.any(index >= self.nodes):
            raise LocalProtocolError("one node in [0, M) per mean", field="nodes")
        if not np.all(np.isfinite(x)) or np.any(x < 0.0) or np.any(x > 1.0):
            raise LocalProtocolError("means must be finite and in [0, 1]", field="means")
        given = self._given.get(k, np.zeros(self.nodes, dtype=bool))
        if given[index].any() or len(set(index.tolist())) != index.size:
            # checked before window k is started: a refused message leaves no trace
            raise LocalProtocolError(f"a node's mean of window {k} given twice", field="nodes")
        self._means.setdefault(k, np.zeros(self.nodes))[index] = x
        self._given.setdefault(k, given)[index] = True
        return bool(given.all())

    def complete(self, k: int) -> bool:
        """Window ``k`` has every node's mean (and was not taken yet)."""
        given = self._given.get(k)
        return given is not None and bool(given.all())

    def pending(self) -> list[int]:
        """Windows started but not complete, ascending."""
        return sorted(k for k in self._given if not self.complete(k))

    def take(self, k: int) -> tuple[int, np.ndarray]:
        """Remove complete window ``k``: (first step, the M node means)."""
        if not self.complete(k):
            raise LocalProtocolError(f"window {k} is not complete", field="window")
        del self._given[k]
        self._taken.add(k)
        return k * self.window, self._means.pop(k)


@dataclass(frozen=True, slots=True)
class WindowReleased(Event):
    """Window ``window`` was charged and released: its true ``means`` and the ``values``."""

    window: int
    t0: int
    means: np.ndarray
    values: np.ndarray


@dataclass(frozen=True, slots=True)
class ReleaseRefused(Event):
    """The ledger refused window ``window``'s charge: nothing was drawn or published."""

    window: int
    reason: str


class GcdpReleaseMachine(Machine):
    """Release every complete window of the fleet with GC-DP, in window order (module
    docstring); ``draw`` makes one window's noisy values from its means."""

    def __init__(
        self,
        run: str,
        nodes: Sequence[str],
        theta: ReleaseTheta,
        steps: int,
        ledger: PrivacyLedger,
        rng: np.random.Generator,
        draw: ReleaseDraw,
        *,
        account: str = RELEASE_ACCOUNT,
        given_means: bool = False,
    ) -> None:
        super().__init__()
        self.run = topics.check_ident(run, "run")
        self.nodes = [topics.check_ident(node, "nodes") for node in nodes]
        if len(set(self.nodes)) != len(self.nodes):
            raise ParameterError(
                "node ids must be distinct",
                field="nodes",
                limit="distinct node ids (value is the first repeated id)",
                value=next(n for n in self.nodes if self.nodes.count(n) > 1),
            )
        if theta.d != len(self.nodes):
            raise ParameterError(
                f"theta has {theta.d} coordinates for {len(self.nodes)} nodes",
                field="theta",
                limit=f"{len(self.nodes)} coordinates (one per node)",
                value=theta.d,
            )
        self.theta = theta
        self.index = {node: k for k, node in enumerate(self.nodes)}
        # given_means: the windows' node means arrive ready-made (``add_means``)
        assembler = MeansAssembler if given_means else WindowAssembler
        self.assembler = assembler(len(self.nodes), theta.window, steps)
        self.ledger = ledger
        self.account = account
        ledger.open_account(account, WindowAccount(theta.eps_rel, 1))
        self._rng = rng
        self._draw = draw
        self._edges = [tuple(edge) for edge in theta.edges]
        self.next_window = 0
        self.released: list[int] = []
        self.refused: list[int] = []
        self.means_refused = 0  # GcdpWindowMeans refused (receive_means)
        self.state = "open"  # open -> finished

    @property
    def n_windows(self) -> int:
        """Complete windows the stream can make."""
        return self.assembler.n_windows

    def add(self, device: str, t0: int, values: Sequence[float]) -> None:
        """Persisted values of ``device`` from step ``t0``; releases what became due."""
        if self.state != "open":
            raise LocalProtocolError(f"add() in state {self.state}", field="state")
        node = self.index.get(device)
        if node is None:
            raise LocalProtocolError(f"{device!r} is not a node of this release", field="device")
        self.assembler.add(node, t0, values)
        self._release_due()

    def add_means(self, k: int, devices: Sequence[str], means: Sequence[float]) -> None:
        """``devices[i]``'s mean of window ``k`` is ``means[i]`` (a releaser made with
        ``given_means``); releases what became due."""
        if self.state != "open":
            raise LocalProtocolError(f"add_means() in state {self.state}", field="state")
        if not isinstance(self.assembler, MeansAssembler):
            raise LocalProtocolError("this releaser assembles steps, not means", field="means")
        unknown = [d for d in devices if d not in self.index]
        if unknown:
            raise LocalProtocolError(f"{unknown[0]!r} is not a node of this release", field="nodes")
        self.assembler.add_means(k, [self.index[d] for d in devices], means)
        self._release_due()

    def receive_means(self, message: GcdpWindowMeans) -> None:
        """A partition worker's node means of one window (``given_means``): filed, and
        what became due released. A message that does not fit (another run or window
        layout, a window not starting at its step, an unknown node, a mean given twice, a
        finished release) is refused: ``RemoteProtocolError`` naming the field, counted in
        ``means_refused``, nothing filed."""
        window = self.theta.window
        try:
            if message.run != self.run or message.steps != window:
                raise LocalProtocolError(
                    f"not a window of {window} steps of this run", field="steps"
                )
            if message.t0 != message.window * window:
                raise LocalProtocolError(f"window {message.window} starts at its step", field="t0")
            self.add_means(message.window, message.nodes, message.means)
        except LocalProtocolError as error:
            self.means_refused += 1
            raise RemoteProtocolError(error.reason, field=error.field) from None

    def add_many(self, items: Iterable[tuple[str, int, Sequence[float]]]) -> None:
        """``add`` for each (device, t0, values)."""
        for device, t0, values in items:
            self.add(device, t0, values)

    def _release_due(self) -> None:
        while self.next_window < self.n_windows and self.assembler.complete(self.next_window):
            self._release(self.next_window)
            self.next_window += 1

    def _release(self, k: int) -> None:
        t0, means = self.assembler.take(k)
        th = self.theta
        try:  # charge BEFORE any noise is drawn
            self.ledger.charge(self.account, th.eps_rel, t=k, mechanism=RELEASE_MECHANISM)
        except BudgetExhausted as refusal:
            self.refused.append(k)
            self._emit(ReleaseRefused(k, refusal.reason))
            return
        values = self._draw(means, th, self._rng)
        self.released.append(k)
        self._send(
            topics.rel(self.run, RELEASE_KIND),
            GcdpRelease(
                run=self.run,
                sender=topics.COLLECTOR_ID,
                seq=k,
                window=k,
                t0=t0,
                steps=th.window,
                mechanism=RELEASE_MECHANISM,
                method=th.method,  # type: ignore[arg-type]
                eps_cal=th.eps_cal,
                eps_rel=th.eps_rel,
                adjacency=th.adjacency,
                values=values.tolist(),
                budgets=th.budgets.tolist(),
                scales=th.scales.tolist(),
                bounds=th.bounds.tolist(),
                nodes=self.nodes,
                edges=self._edges,
            ),
        )
        self._emit(WindowReleased(k, t0, means, values))

    def finish(self) -> None:
        """The stream stage closed: release the complete windows left behind a gap (in
        index order); incomplete windows are never released."""
        if self.state != "open":
            return
        for k in range(self.next_window, self.n_windows):
            if self.assembler.complete(k):
                self._release(k)
        self.next_window = self.n_windows
        self.state = "finished"

    def unreleased(self) -> list[int]:
        """Windows of the stream that were not released (incomplete or refused)."""
        done = set(self.released)
        return [k for k in range(self.n_windows) if k not in done]
