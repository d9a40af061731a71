"""A stream partition worker's control intake (``protocol.partition_link.PartitionWorker.
control``, the coordinator's messages on ``ctl/stage``): hostile input must be refused,
counted and noticed as at every other intake (docs/reliability.md "Hostile input at every
intake"), and the worker must still close when the coordinator says so.

The worker runs whole (``CollectorService`` with a link) on the in-process broker; the test
plays the coordinator: it waits for the worker's ``ready``, sends the hostile messages on
``ctl/stage``, then the genuine ``stream closed``. One publisher on one topic: the worker
receives them in that order, so every count is exact (no timing involved)."""

from __future__ import annotations

import asyncio

from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.partition import PartitionLink
from ldpfleet.collector.service import CollectorService
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.messages import Reject, Stage
from ldpfleet.protocol.partition import COUNTERS, PartitionStatus, status_topic
from ldpfleet.protocol.stream import STAGE, StreamConfig

RUN = "ctlrun"


def _stage(
    state: str, *, run: str = RUN, sender: str = topics.COLLECTOR_ID, detail: str = ""
) -> bytes:
    return codec.encode(Stage(run=run, sender=sender, stage=STAGE, state=state, detail=detail))


GENUINE_CLOSE = "the coordinator's own close"


HOSTILE = {
    "undecodable": b"\xff not json",
    "truncated": _stage("closed")[:-7],
    "unknown type": b'{"type": "no_such_message", "v": 1}',
    "another sender": _stage("closed", sender="d0001", detail="from a device"),
    "another run": _stage("closed", run="otherrun", detail="from another run"),
    "not a stage": codec.encode(
        PartitionStatus(
            run=RUN, sender=topics.COLLECTOR_ID, partition=0, partitions=2, state="ready"
        )
    ),
}


async def _serve_worker_against_hostile_control(tmp_path) -> tuple[dict, PartitionStatus, list]:
    """The worker's results, its ``closed`` status and the ``Reject`` notices it sent."""
    transport = MemoryTransport()
    config = StreamConfig(RUN, "sw", 2.0, 2, 4, 2, 0.0, 1.0, partitions=2)
    service = CollectorService(transport, config, ["d0001"], tmp_path / "c.sqlite",
                               stage_timeout=600.0, idle_timeout=600.0)  # fmt: skip
    service.partition, service.link = 0, PartitionLink(RUN, 0, 2)
    service.final_stage = False  # the coordinator closes the run
    notices: list[Reject] = []
    async with transport.connect("coordinator") as conn:
        await conn.subscribe(status_topic(RUN), topics.svc(RUN, topics.COLLECTOR_ID, "reject"))
        serving = asyncio.create_task(service.run())
        closed = None
        async for delivery in conn.messages():
            message = codec.decode(delivery.payload)
            if isinstance(message, Reject):
                notices.append(message)
            elif message.state == "ready" and not service.link.opened:
                await conn.publish(topics.ctl(RUN, "stage"), _stage("open"))
                for payload in HOSTILE.values():
                    await conn.publish(topics.ctl(RUN, "stage"), payload)
                await conn.publish(topics.ctl(RUN, "stage"), _stage("closed", detail=GENUINE_CLOSE))
            elif message.state == "closed":
                closed = message
                break
        results = await serving
    return results, closed, notices


async def test_hostile_control_messages_are_refused_counted_and_noticed(tmp_path):
    """Before: the worker dropped each of these without a count (undecodable), silently
    (a stage of another sender, another type) or obeyed it (another run's close: the stage
    closed early). Now each is a rejection: counted in ``reports_rejected`` by reason, in
    the ``closed`` status the coordinator sums, and noticed on ``svc/collector/reject``;
    the genuine close still closes the stage."""
    results, closed, notices = await _serve_worker_against_hostile_control(tmp_path)
    assert results["stage_state"] == "closed"
    assert results["close_reason"] == GENUINE_CLOSE  # was "from another run"
    assert results["reports_rejected"] == len(HOSTILE), results["rejections_by_reason"]
    assert results["rejections_by_reason"] == {"schema": 4, "undecodable": 2}
    assert closed.counters[COUNTERS.index("reports_rejected")] == len(HOSTILE)
    # one notice per refusal (by seq: the session may publish a batch twice when the stage
    # closes during its publish, at-least-once delivery)
    by_seq = {notice.seq: notice for notice in notices}
    assert sorted(by_seq) == list(range(1, len(HOSTILE) + 1))
    assert {n.topic for n in by_seq.values()} == {topics.ctl(RUN, "stage")}
    assert [n.field for _, n in sorted(by_seq.items())] == [
        "payload", "payload", "type", "sender", "run", "type"
    ], [(n.field, n.reason) for n in by_seq.values()]  # fmt: skip
