"""When a device stops waiting for a silent collector in one secure-aggregation session —
theory of operation.

A collector that dies mid-session (a crash, a lost broker) sends no goodbye, so a device
that waited for its next message forever would never end (held-out QA, helper T: with the
collector task cancelled after 5 ms, every agent of the docs/secagg.md example still
waited after 5 s, and forever). ``SessionSilence`` is that device's deadline, the same
machine as a fleet shard's (``protocol.liveness.SilenceWatch``) with the session's rules:

- before the session's ``SaSetup`` arrived there is no deadline: when a session starts is
  the caller's business (``first_timeout`` is ``math.inf``);
- once the client holds its setup, the device accepts ``limit()`` seconds without a word
  from the collector: ``give_up_after`` when the caller gave one (``math.inf``: never),
  else ``collector_silence_limit(setup.stage_timeout)``: the longest the server holds a
  stage (``DEFAULT_PATIENCE`` x ``stage_timeout``, ``SecAggServer.silence_limit``), one
  ``stage_timeout`` more for the server's own work between stages, and never less than
  ``SILENCE_FLOOR`` (a loaded machine, a large fleet);
- every delivery on the device's inbox is a word (``heard``), whatever the client made of
  it, and moves the deadline to ``now + limit()``; at ``now >= deadline`` exactly
  (``handle_timer``) the watch emits ``CollectorSilent`` whose sentence names the limit and
  the client's state, and, for a ``give_up_after`` shorter than the session's own limit,
  that a live collector may have been holding a stage open for slower devices (a device
  giving up then looks like a dropout to it). The device then publishes nothing: the
  collector, if alive, counts it out at its own deadline.

The pump (``devices.secagg_agent.SecAggAgent``) calls ``start`` once it listens, ``heard``
after each delivery was fed to the client, and ``handle_timer`` at ``next_timer``; it
only moves bytes and timers. No I/O, no clock: ``now`` is injected.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.liveness import CollectorSilent, SilenceWatch
from ldpfleet.protocol.secagg.server import DEFAULT_PATIENCE

if TYPE_CHECKING:
    from ldpfleet.protocol.secagg.client import SecAggClient

__all__ = [
    "SILENCE_FLOOR",
    "CollectorSilent",
    "SessionSilence",
    "check_give_up_after",
    "collector_silence_limit",
]

SILENCE_FLOOR = 60.0  # seconds: a device never gives up on its collector sooner


def collector_silence_limit(stage_timeout: float) -> float:
    """How long a device waits for its collector's next message once the session started:
    a stage lasts at most ``DEFAULT_PATIENCE`` x ``stage_timeout`` after it opened (the
    server's cap), one more ``stage_timeout`` covers the server's own work between stages,
    and never less than ``SILENCE_FLOOR`` (a loaded machine, a large fleet)."""
    return max(SILENCE_FLOOR, (DEFAULT_PATIENCE + 1) * stage_timeout)


def check_give_up_after(give_up_after: float | None) -> float | None:
    """``give_up_after`` as a caller may give it: None (the session's own limit) or seconds
    > 0 (``math.inf``: never), else a ``ParameterError`` naming it, the limit and the
    value (NaN, 0, negatives, booleans and strings are refused)."""
    if give_up_after is not None and (
        isinstance(give_up_after, bool)
        or not isinstance(give_up_after, int | float)
        or not give_up_after > 0  # NaN fails too; math.inf: never give up
    ):
        raise ParameterError(
            f"must be None (the session's own limit) or > 0 seconds, got {give_up_after!r}",
            field="give_up_after",
            limit="None or > 0 seconds",
            value=give_up_after,
        )
    return give_up_after


class SessionSilence(SilenceWatch):
    """One device's deadline on its collector's silence in ``client``'s session (the module
    docstring); ``give_up_after`` overrides the session's own limit."""

    def __init__(self, client: SecAggClient, give_up_after: float | None = None) -> None:
        self.give_up_after = check_give_up_after(give_up_after)
        super().__init__(client.run, math.inf, first_timeout=math.inf)
        self.client = client

    def limit(self) -> float | None:
        """Seconds of the collector's silence the device accepts now (None: no limit before
        the session's setup arrived; ``math.inf``: never)."""
        setup = self.client.setup
        if setup is None:
            return None
        if self.give_up_after is not None:
            return float(self.give_up_after)
        return collector_silence_limit(setup.stage_timeout)

    def heard(self, now: float) -> None:
        """A delivery reached the device at ``now`` (after the client took it)."""
        limit = self.limit()
        self.timeout = math.inf if limit is None else limit
        super().heard(now)

    def _sentence(self) -> str:
        sentence = (
            f"the collector was silent for {self.timeout:g} s in the session's "
            f"{self.client.state} state: this device stopped waiting (give_up_after)"
        )
        setup = self.client.setup
        own = None if setup is None else collector_silence_limit(setup.stage_timeout)
        if own is not None and self.timeout < own:  # the caller's give_up_after, shorter
            sentence += (
                f"; that is shorter than the session's own limit, {own:g} s (a stage may "
                f"stay open {DEFAULT_PATIENCE:g} x stage_timeout = "
                f"{DEFAULT_PATIENCE * setup.stage_timeout:g} s): a live collector may "
                "have been waiting for slower devices"
            )
        return sentence
