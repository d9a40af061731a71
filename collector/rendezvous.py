"""The collector's side of the run rendezvous: announce the run, retained, on ``ctl/run``.

A thin pump over ``protocol.rendezvous.RunHost`` (the theory of operation is there):
``open`` publishes the host's ``RunOpen`` and ``close`` its ``RunClosed``, both as MQTT
retained messages on ``ldp/{run}/ctl/run``, so that a fleet started before or after the
collector meets the announcement (``devices.rendezvous.wait_for_run``). ``clear`` deletes
the retained message (an empty retained payload), for tests and for cleaning a shared
broker. The connection must log in as the run's ``collector`` (or ``admin``): no other
role may publish on ``ctl/``. With ``repeat_every`` (``[broker] announce_every``) a
background task publishes the ``RunOpen`` again at that interval until ``close``: for
broker clusters that keep a retained message on one node only.
"""

from __future__ import annotations

import asyncio
import logging
import time

from ldpfleet.broker.pump import drive_timers, publish_outbound
from ldpfleet.broker.transport import Connection
from ldpfleet.protocol.rendezvous import RunHost, RunTerms

__all__ = ["RunAnnouncer", "default_epoch"]

log = logging.getLogger(__name__)


def default_epoch() -> int:
    """This collector's incarnation: wall-clock milliseconds, so a restarted collector
    announces a larger epoch than the one before it (on the same host clock)."""
    return time.time_ns() // 1_000_000


class RunAnnouncer:
    """Publishes ``RunHost``'s announcements of ``run`` on ``terms`` (retained)."""

    def __init__(
        self,
        run: str,
        terms: RunTerms,
        epoch: int | None = None,
        *,
        repeat_every: float | None = None,
    ) -> None:
        self.host = RunHost(
            run, terms, default_epoch() if epoch is None else epoch, repeat_every=repeat_every
        )
        self._repeating: asyncio.Task | None = None

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
        self.host.open(asyncio.get_running_loop().time())
        await publish_outbound(conn, self.host)
        if self.host.repeat_every is not None:
            self._repeating = asyncio.create_task(
                drive_timers(self.host, lambda: publish_outbound(conn, self.host)),
                name=f"announce {self.run} again",
            )

    async def close(self, conn: Connection, reason: str = "") -> None:
        """Replace the announcement with ``RunClosed`` of this epoch, retained (a second
        close publishes nothing)."""
        await self.stop_repeating()
        self.host.close(reason)
        await publish_outbound(conn, self.host)

    async def close_again(self, conn: Connection) -> None:
        """Publish the ``RunClosed`` of ``close`` again, on ``conn`` (a new connection after
        the one that closed broke; nothing if the run was not closed)."""
        self.host.resend_close()
        await publish_outbound(conn, self.host)

    async def stop_repeating(self) -> None:
        """End the repeats (``close`` does; a pump that gives up without closing must)."""
        task, self._repeating = self._repeating, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception as error:  # a lost connection: the close will say it
                log.warning("repeating the announcement of %s stopped: %s", self.run, error)

    async def clear(self, conn: Connection) -> None:
        """Delete the retained announcement (an empty retained payload on the topic)."""
        await conn.publish(self.topic, b"", retain=True)
