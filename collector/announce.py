"""The collector's last message of a run, in a module of its own: the CADR-LDP processes
need it without the stream collector (``collector.service``) and its analytics, whose
scipy imports cost each of them ~0.4 s of CPU at start-up (``python -X importtime``).

``say_run_closed`` says it even when the broker has just closed the connection: RabbitMQ
3.10's MQTT plugin ends a client's connection when a publish it routed is nacked (a
message routed, as the workers end their persistent sessions, to a queue being deleted;
docs/rabbitmq-cluster-notes.md). The run's last words then go out once more on a new
connection, so the workers and the recorders that wait for ``run closed`` still end.
"""

from __future__ import annotations

import logging

from ldpfleet.broker.transport import Connection, Transport, TransportError
from ldpfleet.collector.rendezvous import RunAnnouncer
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.messages import Stage

__all__ = ["announce_run_closed", "say_run_closed"]

log = logging.getLogger(__name__)


async def announce_run_closed(conn: Connection, run: str) -> None:
    """The collector's last message of a run (the trace recorder stops after it)."""
    await conn.publish(
        topics.ctl(run, "stage"),
        codec.encode(Stage(run=run, sender=topics.COLLECTOR_ID, stage="run", state="closed")),
    )


async def say_run_closed(
    transport: Transport,
    conn: Connection,
    run: str,
    announcer: RunAnnouncer | None = None,
) -> bool:
    """``announce_run_closed`` on ``conn``; if that connection is lost (the broker closed
    it), the run's last words once more on a new connection ``{run}-collector-end``: the
    announcer's ``RunClosed`` (retained; nothing if it was not closed) and ``run closed``.
    Returns whether the new connection was needed. A failure of the new connection
    raises ``TransportError`` (the broker is gone: the caller's run fails as before)."""
    try:
        await announce_run_closed(conn, run)
        return False
    except TransportError as lost:
        log.warning("%s; saying 'run closed' again on a new connection", lost)
    async with transport.connect(f"{run}-collector-end") as again:
        if announcer is not None:
            await announcer.close_again(again)
        await announce_run_closed(again, run)
    return True
