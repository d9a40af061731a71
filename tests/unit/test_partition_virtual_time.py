"""The partition coordinator's ``fleet_timeout`` is measured on the event loop's clock.

``coordinate_stream`` (collector/partition.py) closed a silent stage when
``time.monotonic()`` said ``fleet_timeout`` had passed since the opening: the wall clock of
a busy machine decided, and the deadline could not run on virtual time. On
``tests/virtual_time.py``'s ``VirtualTimeLoop`` the old code never closed the stage within
the loop's (virtual) 10 * fleet_timeout guard; now it closes it at opening + fleet_timeout
(the coordinator re-checks every 0.5 s), and not before.
"""

from __future__ import annotations

import asyncio

from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.partition import coordinate_stream
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.partition import COUNTERS, PartitionStatus, status_topic

from tests.virtual_time import VirtualTimeLoop

RUN = "vt1"
FLEET_TIMEOUT = 30.0
CHECK_EVERY = 0.5  # coordinate_stream re-checks the silent fleet this often


def _status(state: str, **fields) -> bytes:
    return codec.encode(PartitionStatus(run=RUN, sender=topics.COLLECTOR_ID, partition=0,
                                        partitions=1, state=state, **fields))  # fmt: skip


async def _silent_fleet() -> tuple[float, float, str]:
    """(virtual time the stage opened, virtual time the coordinator gave up on the
    fleet, its sentence): one worker whose fleet never joins."""
    loop = asyncio.get_running_loop()
    transport = MemoryTransport()
    opened_at: list[float] = []
    aborted_at: list[tuple[float, str]] = []
    checks: list[tuple] = []  # what ``progress`` heard at each check

    async def worker() -> None:
        async with transport.connect(f"{RUN}-w0") as conn:
            await conn.subscribe(topics.ctl(RUN, "stage"))
            await conn.publish(status_topic(RUN), _status("ready"))
            async for delivery in conn.messages():
                stage = codec.decode(delivery.payload)
                if stage.state == "open" and not opened_at:
                    opened_at.append(loop.time())
                    await conn.publish(status_topic(RUN), _status("progress"))
                elif stage.state == "closed":
                    closed = _status("closed", complete=False, detail=stage.detail,
                                     counters=[0] * len(COUNTERS))  # fmt: skip
                    await conn.publish(status_topic(RUN), closed)
                    return

    task = asyncio.create_task(worker())
    try:
        async with asyncio.timeout(10 * FLEET_TIMEOUT):  # virtual seconds: fails fast
            await coordinate_stream(
                transport,
                RUN,
                1,
                workers_timeout=60,
                fleet_timeout=FLEET_TIMEOUT,
                aborted=lambda sentence: aborted_at.append((loop.time(), sentence)),
                progress=lambda *counts: checks.append(counts),
            )
            await task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    [(when, sentence)] = aborted_at
    # (persisted, expected, joined, devices) at each check, every CHECK_EVERY s until then
    assert checks and set(checks) == {(0, 0, 0, 0)}, checks[:3]
    assert len(checks) >= FLEET_TIMEOUT / CHECK_EVERY, len(checks)
    return opened_at[0], when, sentence


def test_fleet_timeout_fires_at_its_virtual_time_not_before():
    opened, aborted, sentence = VirtualTimeLoop.run(_silent_fleet())
    waited = aborted - opened
    assert FLEET_TIMEOUT < waited <= FLEET_TIMEOUT + CHECK_EVERY + 1e-9, waited
    assert sentence == f"no fleet joined run {RUN} within {FLEET_TIMEOUT:g} s"
