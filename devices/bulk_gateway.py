"""Bulk gateway pumps: ``protocol.bulk.BulkGateway`` machines over a ``Transport``.

One connection per gateway (client id ``{run}-gateway-g{gateway}``: with the run's
credentials it logs in as ``gateway-g{gateway}``, whose ACL allows only its own uplink and
inbox, broker/auth.py), subscribed to its inbox in
every partition its devices belong to and to ``ctl/stage``. The pump decodes, hands each
message to the machine with the loop's time and publishes what it returns; a reader task
feeds a queue so the pump can wait for a delivery or the machine's next timer. No
protocol decision lives here (docs/scaling.md, "Bulk gateways").
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import Callable, Iterable

import numpy as np
from ldpfleet.broker.auth import bulk_gateway_username
from ldpfleet.broker.pump import cancel_all
from ldpfleet.broker.transport import Connection, Delivery, Transport
from ldpfleet.devices.noise_entropy import bulk_noise_key
from ldpfleet.protocol.bulk import (
    BulkGateway,
    BulkPlan,
    decode_bulk,
    encode_bulk,
    gateway_inbox,
    stage_topic,
)
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.events import Outbound

__all__ = ["gateway_outcome", "run_bulk_gateway", "run_bulk_gateways"]

log = logging.getLogger(__name__)


class _Publisher:
    """Publishes without awaiting each acknowledgement in turn (the machine's window
    bounds how many reports are outstanding)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.tasks: set[asyncio.Task] = set()

    def send(self, items: Iterable[Outbound]) -> None:
        for item in items:
            task = asyncio.ensure_future(self.conn.publish(item.topic, encode_bulk(item.message)))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def drain(self) -> None:
        if self.tasks:
            await asyncio.gather(*list(self.tasks))

    async def abandon(self) -> None:
        """Cancel what is still being published and collect every outcome (the pump is
        ending on an error or a cancellation: a publish failing as the connection closes
        was logged as "Task exception was never retrieved")."""
        await cancel_all(self.tasks)


async def _read(conn: Connection, queue: asyncio.Queue[Delivery | None]) -> None:
    try:
        async for delivery in conn.messages():
            queue.put_nowait(delivery)
    finally:
        queue.put_nowait(None)


async def next_delivery(
    queue: asyncio.Queue[Delivery | None], timeout: float | None
) -> Delivery | None:
    """The next delivery, ``TimeoutError`` after ``timeout`` seconds (None: none).

    ``asyncio.timeout``, not ``asyncio.wait_for``: on Python 3.11 ``wait_for`` returns the
    item instead of raising when the task is cancelled just as ``queue.get()`` completes
    (CPython gh-86296, fixed in 3.12), and a busy gateway's queue is rarely empty. The
    runner's SIGTERM on Ctrl-C (``cancelled_on_sigterm``) was then lost: the shard went on
    waiting for the acks of a collector stopped with it until ``STOP_GRACE`` (60 s) ran
    out and it was killed (2 of 7 Ctrl-Cs 2.8-4.1 s into a 20,000-device bulk run on
    Mosquitto took 60.3 s instead of 0.4-0.7 s)."""
    async with asyncio.timeout(timeout):
        return await queue.get()


def gateway_client_id(run: str, gateway: int) -> str:
    """The client id of bulk gateway ``gateway`` (its identity ``gateway-g{gateway}``)."""
    return f"{run}-{bulk_gateway_username(gateway)}"


async def run_bulk_gateway(
    transport: Transport,
    plan: BulkPlan,
    gateway: int,
    *,
    tamper: Callable | None = None,
    device_noise: str = "seeded",
) -> BulkGateway:
    """Run one gateway until every report is resolved or the stage closes (``device_noise``:
    where its devices' SW noise key comes from, devices.noise_entropy)."""
    key = bulk_noise_key(device_noise)
    machine = BulkGateway(plan, gateway, tamper=tamper, noise_key=key)
    loop = asyncio.get_running_loop()
    async with transport.connect(gateway_client_id(plan.run, gateway)) as conn:
        filters = [
            gateway_inbox(plan.run, gateway, plan.partition_level_of(p)) for p in machine.rows
        ]
        await conn.subscribe(*filters, stage_topic(plan.run))
        queue: asyncio.Queue[Delivery | None] = asyncio.Queue()
        reader = asyncio.ensure_future(_read(conn, queue))
        out = _Publisher(conn)
        try:
            out.send(machine.start(loop.time()))
            while not machine.done:
                deadline = machine.next_timer()
                timeout = None if deadline is None else max(0.0, deadline - loop.time())
                try:
                    delivery = await next_delivery(queue, timeout)
                except TimeoutError:
                    out.send(machine.handle_timer(loop.time()))
                    continue
                if delivery is None:
                    raise ConnectionError(f"gateway g{gateway}: connection closed")
                try:
                    message = decode_bulk(delivery.payload)
                    out.send(machine.receive(message, loop.time()))
                except RemoteProtocolError as error:
                    log.warning("gateway g%d refused a message: %s", gateway, error)
            await out.drain()
        except BaseException:
            await asyncio.shield(out.abandon())
            raise
        finally:
            reader.cancel()
    return machine


def gateway_outcome(machines: list[BulkGateway]) -> dict:
    """The shard's outcome: summed counters, ledger figures, truth sums, peak RSS."""
    rejected: dict[str, int] = {}
    for m in machines:
        for reason, n in m.counters.rejected.items():
            rejected[reason] = rejected.get(reason, 0) + n
    return {
        "gateways": len(machines),
        "devices": sum(m.count for m in machines),
        "entries_built": sum(m.counters.entries_built for m in machines),
        "messages_sent": sum(m.counters.messages_sent for m in machines),
        "retransmitted_entries": sum(m.counters.retransmitted_entries for m in machines),
        "rejected": rejected,
        "ledger_refusals": sum(m.counters.ledger_refusals for m in machines),
        "ledger_charges": int(sum(int(m.ledger.charges.sum()) for m in machines)),
        "max_window_spent": max((m.ledger.max_window_spent() for m in machines), default=0.0),
        "truth_sum": np.sum([m.truth_sum for m in machines], axis=0).tolist() if machines else [],
        # raw readings, clipped ones, smallest, largest (scenarios.clipping)
        "truth_clip": [
            sum(m.truth_clip[0] for m in machines),
            sum(m.truth_clip[1] for m in machines),
            min((m.truth_clip[2] for m in machines if m.truth_clip[0]), default=None),
            max((m.truth_clip[3] for m in machines if m.truth_clip[0]), default=None),
        ],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


async def run_bulk_gateways(
    transport: Transport,
    plan: BulkPlan,
    gateways: Iterable[int],
    *,
    tamper: dict[int, Callable] | None = None,
    device_noise: str = "seeded",
) -> dict:
    """Run several gateways concurrently (one connection each); their outcome."""
    tamper = tamper or {}
    machines = await asyncio.gather(
        *(
            run_bulk_gateway(transport, plan, g, tamper=tamper.get(g), device_noise=device_noise)
            for g in gateways
        )
    )
    return gateway_outcome(list(machines))
