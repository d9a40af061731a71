"""A CADR partition worker's pump (``collector/cadr_partition.py``) acts on its admission
machine's answers (``CadrWorkerAdmission``): what it refuses is counted in
``worker.rejected`` as before, and now also published as a ``Reject`` on
``svc/collector/reject``, as one collector publishes its admission's refusals and as the
worker already published its intake's. On the old pump these refusals were counted with
no notice (docs/reliability.md "Hostile input at every intake": count it, and publish a
``Reject`` where the intake has notices)."""

from __future__ import annotations

import asyncio

from ldpfleet.broker.transport import Delivery
from ldpfleet.collector.cadr_partition import _control, _intake, _Worker
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_messages import CadrTheta, DsrReport
from ldpfleet.protocol.messages import BudgetRefused, Reject, Stage

RUN = "cwn"
MEMBERS = ["n0", "n1"]
REJECT_TOPIC = topics.svc(RUN, topics.COLLECTOR_ID, "reject")


class _Conn:
    """What the pump publishes (decoded), and the control deliveries it reads."""

    def __init__(self, deliveries=()) -> None:
        self.sent: list[tuple[str, object]] = []
        self.deliveries = list(deliveries)

    async def publish(self, topic: str, payload: bytes, **_) -> None:
        self.sent.append((topic, codec.decode(payload)))

    async def publish_many(self, items) -> None:
        for topic, payload in items:
            await self.publish(topic, payload)

    async def messages(self):
        for delivery in self.deliveries:
            yield delivery

    def notices(self) -> list[Reject]:
        return [m for t, m in self.sent if t == REJECT_TOPIC]


async def _inbound(deliveries):
    for delivery in deliveries:
        yield delivery


def _release(device: str) -> bytes:
    return codec.encode(DsrReport(run=RUN, sender=device, seq=1, value=2.0, theta=5, eps=1.0))


def test_the_workers_refusals_of_device_input_are_counted_and_noticed():
    refusal = BudgetRefused(run=RUN, sender="n1", account="node", request="dsr",
                            requested=1.0, remaining=0.1)  # fmt: skip
    deliveries = [
        Delivery(topics.up(RUN, "n0", "budget_refused"), _release("n0")),  # wrong kind
        Delivery(topics.up(RUN, "n1", "dsr"), codec.encode(refusal)),  # wrong kind
        Delivery(topics.up(RUN, "n0", "dsr"), b"\xff not json"),  # undecodable
        Delivery(topics.up(RUN, "intruder", "dsr"), _release("intruder")),  # not a member
    ]
    worker, conn = _Worker(RUN, (0, 1), MEMBERS, 1.0, None), _Conn()

    async def main():
        await _intake(worker, conn, _inbound(deliveries))
        await worker.start(conn, 5)  # the old pump judged what it held at θ

    asyncio.run(main())
    assert worker.rejected == len(deliveries)  # as on the old pump
    assert worker.intake.values == {} and worker.intake.refusals == {}
    notices = conn.notices()
    assert [n.field for n in notices] == ["topic", "topic", "payload", "sender"]
    assert [n.seq for n in notices] == [1, 2, 3, 4]
    assert notices[3].device == "intruder"


def test_the_workers_refusals_on_its_control_topics_are_counted_and_noticed():
    theta_topic = topics.ctl(RUN, "cadr_theta")

    def theta(sender: str = topics.COLLECTOR_ID, run: str = RUN) -> bytes:
        return codec.encode(CadrTheta(run=run, sender=sender, theta=5))

    close = codec.encode(Stage(run=RUN, sender=topics.COLLECTOR_ID, stage="run", state="closed"))
    hostile = [b"\xff", theta(sender="n0"), theta(run="other")]
    deliveries = [Delivery(theta_topic, p) for p in [*hostile, theta(), close]]
    worker, conn = _Worker(RUN, (0, 1), MEMBERS, 1.0, None), _Conn(deliveries)
    asyncio.run(_control(worker, conn))
    assert worker.rejected == len(hostile)
    assert worker.intake is not None and worker.intake.theta == 5 and worker.closed.is_set()
    assert [(n.field, n.code) for n in conn.notices()] == [
        ("payload", "undecodable"), ("sender", "schema"), ("run", "schema")
    ]  # fmt: skip
