"""The collector's last message of a run, in a module of its own: the CADR-LDP processes
need it without the stream collector (``collector.service``) and its analytics, whose
scipy imports cost each of them ~0.4 s of CPU at start-up (``python -X importtime``)."""

from __future__ import annotations

from ldpfleet.broker.transport import Connection
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.messages import Stage

__all__ = ["announce_run_closed"]


async def announce_run_closed(conn: Connection, run: str) -> None:
    """The collector's last message of a run (the trace recorder stops after it)."""
    await conn.publish(
        topics.ctl(run, "stage"),
        codec.encode(Stage(run=run, sender=topics.COLLECTOR_ID, stage="run", state="closed")),
    )
