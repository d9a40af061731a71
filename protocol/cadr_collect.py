"""The collector's intake of CADR-LDP degree releases (``DsrReport``) — theory of operation.

Seed 004 Alg. 6: every device releases ``clip(kept, 0, θ) + Laplace(θ / eps_dsr)``. The
collector accepts one release per device and refuses (counted, published on
``svc/collector/reject``, never aggregated), naming the field:

- a sender that is not the topic's device, not a member of the run (``sender``);
- a θ that is not the run's θ (``theta``), an ε that is not the run's DSR share (``eps``);
- a value that is not finite, or further than ``TAIL_SCALES`` Laplace scales outside
  ``[0, θ]`` (``value``): an honest release lands there with probability
  ``exp(-60) < 1e-26``;
- a second, different release of the same device (``seq``). The same release again (a
  retransmission whose ack was lost) is accepted again as a duplicate, so it is acked
  again but counted once.

A device that refused to spend (``BudgetRefused`` on ``up/budget_refused``: its ledger
cannot afford the plan or a stage) is recorded in ``refusals`` and no longer awaited:
``complete`` counts it, ``missing`` leaves it out, and a release it sends afterwards is
refused (``seq``, reason ``refused``). A refusal must name the ``node`` account and a CADR
request, once per device (the same refusal again is ignored).

The devices still awaited are kept as a set beside ``values`` and ``refusals`` (a device
leaves it when its first release or refusal is taken): ``missing_count`` and
``missing_outside`` read it without walking the fleet, so the DSR stage
(``protocol.cadr_dsr_stage``), which asks after every release, pays for the missing
devices only, not for every member (a 20,000-member stage with wills from devices that had
released sorted the missing list after each of the last releases: 22.8 s of CPU for the
machines alone, against 0.1 s).

``DsrAccepted`` events go to the pump, which persists the value and only then calls
``ack`` (``Ack`` on the device's inbox): an acknowledged release is never lost.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable
from dataclasses import dataclass

from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_messages import DsrReport
from ldpfleet.protocol.dsr import dsr_scale
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.events import Event, PeerFacingMachine
from ldpfleet.protocol.messages import Ack, BudgetRefused, Message

__all__ = ["CADR_REQUESTS", "TAIL_SCALES", "DsrAccepted", "DsrIntake"]

TAIL_SCALES = 60.0
CADR_REQUESTS = ("cadr_plan", "ndoe", "lpea", "dsr")  # what a device can refuse to pay for


@dataclass(frozen=True, slots=True)
class DsrAccepted(Event):
    """A release to persist (then ack); ``duplicate``: already counted once."""

    device: str
    seq: int
    value: float
    duplicate: bool


class DsrIntake(PeerFacingMachine):
    """Accepts the fleet's DSR releases for one θ and ε (module docstring)."""

    def __init__(self, run: str, devices: Iterable[str], theta: int, eps_dsr: float) -> None:
        super().__init__(run)
        self.run = run
        self.devices = frozenset(devices)
        self.theta = theta
        self.eps = eps_dsr
        self.scale = dsr_scale(theta, eps_dsr)
        self.values: dict[str, float] = {}
        self._seqs: dict[str, int] = {}
        self.refusals: dict[str, dict] = {}
        # the devices neither in ``values`` nor in ``refusals`` (module docstring)
        self._awaited: set[str] = set(self.devices)

    @property
    def complete(self) -> bool:
        """Every device's release is in, or the device refused to spend."""
        return not self._awaited

    @property
    def missing_count(self) -> int:
        """How many devices' releases are not in yet (``len(missing())``, without the list)."""
        return len(self._awaited)

    def missing(self) -> list[str]:
        """Devices whose release is not in yet (refusals are not missing), sorted."""
        return sorted(self._awaited)

    def missing_outside(self, excused: Container[str]) -> str | None:
        """A device whose release is not in yet and that is not in ``excused`` (None: every
        missing device is): stops at the first, so it costs at most the missing devices."""
        return next((d for d in self._awaited if d not in excused), None)

    def _on_refusal(self, message: BudgetRefused) -> None:
        device = message.sender
        if message.account != "node" or message.request not in CADR_REQUESTS:
            raise RemoteProtocolError(
                f"refusal of {message.request!r} on account {message.account!r} is not a "
                "CADR-LDP spend",
                field="request",
                code="parameter_mismatch",
            )
        if device in self.values:
            raise RemoteProtocolError(
                f"{device} already released a value", field="request", code="out_of_order"
            )
        if device in self.refusals:
            return  # the same device refusing again (a later stage): once is enough
        self.refusals[device] = {
            "request": message.request,
            "round": message.round,
            "requested": message.requested,
            "remaining": message.remaining,
            "reason": message.reason,
        }
        self._awaited.discard(device)

    def _receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        self._check_upstream(topic, message)
        device = message.sender
        if device not in self.devices:
            raise RemoteProtocolError(
                f"{device} is not a device of this run", field="sender", code="unknown_sender"
            )
        if isinstance(message, BudgetRefused):
            self._on_refusal(message)
            return
        if not isinstance(message, DsrReport):
            raise RemoteProtocolError(f"unexpected {message.type_name()} message", field="type")
        if device in self.refusals:
            raise RemoteProtocolError(
                f"{device} refused to spend ({self.refusals[device]['request']}): no release "
                "can follow",
                field="seq",
                code="refused",
            )
        if message.theta != self.theta:
            raise RemoteProtocolError(
                f"θ = {message.theta} is not the run's θ = {self.theta}", field="theta"
            )
        if not math.isclose(message.eps, self.eps, rel_tol=1e-12):
            raise RemoteProtocolError(
                f"ε = {message.eps!r} is not the run's DSR share {self.eps!r}", field="eps"
            )
        value = message.value
        slack = TAIL_SCALES * self.scale
        if not math.isfinite(value) or not -slack <= value <= self.theta + slack:
            raise RemoteProtocolError(
                f"{value!r} is not a Laplace release around [0, {self.theta}] "
                f"(limit ±{slack:g} outside)",
                field="value",
            )
        if device in self.values:
            if self._seqs[device] != message.seq or self.values[device] != value:
                raise RemoteProtocolError(f"{device} already released a value", field="seq")
            self._emit(DsrAccepted(device, message.seq, value, duplicate=True))
            return
        self.values[device] = value
        self._seqs[device] = message.seq
        self._awaited.discard(device)
        self._emit(DsrAccepted(device, message.seq, value, duplicate=False))

    def ack(self, device: str, seq: int) -> None:
        """The release of ``device`` is persisted: tell it."""
        self._send(
            topics.inbox(self.run, device, topics.COLLECTOR_ID),
            Ack(run=self.run, sender=topics.COLLECTOR_ID, seq=seq),
        )
