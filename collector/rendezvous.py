"""The collector's side of the run rendezvous: announce the run, retained, on ``ctl/run``.

A thin pump over ``protocol.rendezvous.RunHost`` (the theory of operation is there):
``open`` publishes the host's ``RunOpen`` and ``close`` its ``RunClosed``, both as MQTT
retained messages on ``ldp/{run}/ctl/run``, so that a fleet started before or after the
collector meets the announcement (``devices.rendezvous.wait_for_run``). ``clear`` deletes
the retained message (an empty retained payload), for tests and for cleaning a shared
broker. The connection must log in as the run's ``collector`` (or ``admin``): no other
role may publish on ``ctl/``.
"""

from __future__ import annotations

import time

from ldpfleet.broker.pump import publish_outbound
from ldpfleet.broker.transport import Connection
from ldpfleet.protocol.rendezvous import RunHost, RunTerms

__all__ = ["RunAnnouncer", "default_epoch"]


def default_epoch() -> int:
    """This collector's incarnation: wall-clock milliseconds, so a restarted collector
    announces a larger epoch than the one before it (on the same host clock)."""
    return time.time_ns() // 1_000_000


class RunAnnouncer:
    """Publishes ``RunHost``'s announcements of ``run`` on ``terms`` (retained)."""

    def __init__(self, run: str, terms: RunTerms, epoch: int | None = None) -> None:
        self.host = RunHost(run, terms, default_epoch() if epoch is None else epoch)

    @property
    def run(self) -> str:
        return self.host.run

    @property
    def epoch(self) -> int:
        return self.host.epoch

    @property
    def topic(self) -> str:
        """``ldp/{run}/ctl/run``."""
        return self.host.topic

    async def open(self, conn: Connection) -> None:
        """Announce the run: ``RunOpen`` retained (``LocalProtocolError`` if already
        opened or closed)."""
        self.host.open()
        await publish_outbound(conn, self.host)

    async def close(self, conn: Connection, reason: str = "") -> None:
        """Replace the announcement with ``RunClosed`` of this epoch, retained (a second
        close publishes nothing)."""
        self.host.close(reason)
        await publish_outbound(conn, self.host)

    async def clear(self, conn: Connection) -> None:
        """Delete the retained announcement (an empty retained payload on the topic)."""
        await conn.publish(self.topic, b"", retain=True)
