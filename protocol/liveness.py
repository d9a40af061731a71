"""A silence deadline: a fleet shard gives up on a collector that went quiet — theory of
operation.

CADR-LDP devices take every instruction from the collector side (the plan, θ-search
queries and their secure-aggregation rounds, θ, the relay's supersteps, the acks of the
releases); none of their machines has a deadline of its own before the release. A
collector side that dies (``kill -9``, a host lost) sends no goodbye, so without a
deadline its devices would wait forever. ``SilenceWatch`` is that deadline for a whole
shard: the pump tells it whenever any of the shard's devices heard anything (``heard``),
and once nothing arrived for ``timeout`` seconds it emits ``CollectorSilent`` with one
sentence. Every live stage keeps the devices busy far more often than that (a superstep,
a secure-aggregation round), and the collector's own stage deadlines are the same
``[cadr] stage_timeout``, so a healthy run never trips it.

Before the first message (the plan) the collector may legitimately be waiting for other
shards to join; that wait has its own bound (``first_timeout``, the collector's join
deadline plus slack), after which the sentence says the run never started. ``stop``
ends the watch (the devices finished). No I/O, no clock: ``now`` is injected.

The same deadline serves one device in one secure-aggregation session
(``protocol.secagg.silence.SessionSilence``, pumped by ``devices.secagg_agent``): there
the wait before the first word is unbounded and the silence a device accepts is only
known once the session's ``SaSetup`` arrived, so a subclass sets ``timeout`` when it
does, and words its own sentence (``_sentence``). And one stream device
(``protocol.stream.ReporterSilence``, inside its ``StreamReporter``, pumped by
``devices.agent``): ``timeout`` is the fleet's ``silence_timeout`` from the moment the
pump listens, every delivery is a word, and the sentence names the reporter's state and
retransmissions. Either bound may be ``math.inf``:
no deadline (``next_timer`` is None), never silent. The rules, for all: the watch
goes silent at ``now >= last word + timeout`` exactly (``handle_timer`` before that
does nothing), and every word heard moves the deadline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError
from ldpfleet.protocol.events import Event, Machine

__all__ = ["CollectorSilent", "SilenceWatch"]


@dataclass(frozen=True, slots=True)
class CollectorSilent(Event):
    """Nothing arrived within the deadline: the collector side is gone or stuck."""

    sentence: str
    started: bool  # had any device heard anything before the silence


class SilenceWatch(Machine):
    """Deadline on the silence of ``run``'s collector side, seen by one shard (or, by a
    subclass, one device: the module docstring). ``timeout`` and ``first_timeout`` are
    seconds > 0; ``math.inf`` means never."""

    def __init__(self, run: str, timeout: float, *, first_timeout: float | None = None) -> None:
        super().__init__()
        for name, value in (("timeout", timeout), ("first_timeout", first_timeout)):
            if value is not None and not value > 0:
                raise ParameterError(
                    f"must be > 0 seconds, got {value!r}",
                    field=name,
                    limit="> 0 seconds",
                    value=value,
                )
        self.run = topics.check_ident(run, "run")
        self.timeout = timeout
        self.first_timeout = timeout if first_timeout is None else first_timeout
        self.state = "new"  # new -> watching -> silent | stopped
        self.started = False
        self._deadline: float | None = None

    def start(self, now: float) -> None:
        """Begin watching (the shard's devices listen)."""
        if self.state != "new":
            raise LocalProtocolError(f"the watch is already {self.state}")
        self.state = "watching"
        self._deadline = now + self.first_timeout

    def heard(self, now: float) -> None:
        """Some device of the shard received something at ``now``."""
        if self.state != "watching":
            return
        self.started = True
        self._deadline = now + self.timeout

    def stop(self) -> None:
        """The devices are done: no deadline any more."""
        if self.state == "watching":
            self.state = "stopped"
            self._deadline = None

    def next_timer(self) -> float | None:
        """When the watch goes silent unless something is heard first (None: never, or
        not watching)."""
        if self.state != "watching" or self._deadline is None or math.isinf(self._deadline):
            return None
        return self._deadline

    def handle_timer(self, now: float) -> None:
        """Go silent, emitting ``CollectorSilent``, if ``now`` reached the deadline."""
        deadline = self.next_timer()
        if deadline is None or now < deadline:
            return
        self.state = "silent"
        self._deadline = None
        self._emit(CollectorSilent(self._sentence(), self.started))

    def _sentence(self) -> str:
        """Why the watch went silent, in one sentence."""
        if self.started:
            return (
                f"the collector of run {self.run} sent nothing for {self.timeout:g} s "
                "(it stopped or is unreachable)"
            )
        return (
            f"the collector of run {self.run} did not start the run within "
            f"{self.first_timeout:g} s of this shard joining"
        )
