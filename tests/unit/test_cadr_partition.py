"""CADR-LDP partitions (collector/cadr_partition.py, protocol/partition.py CadrReleases):
the coordinator's ``ReleaseGatherer`` refuses misplaced chunks with typed errors and counts
them; a worker's releases and refusals, chunked, come back whole."""

from __future__ import annotations

import asyncio

import msgspec
import pytest
from ldpfleet.collector import cadr_partition
from ldpfleet.collector.cadr_fleet import CadrFailed
from ldpfleet.collector.cadr_partition import ReleaseGatherer, _send_if_complete, _Worker
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_collect import DsrIntake
from ldpfleet.protocol.cadr_messages import DsrReport
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import BudgetRefused
from ldpfleet.protocol.partition import CadrRefusal, CadrReleases, PartitionStatus

RUN = "cadrpart"


def chunk(partition: int, devices, values, *, final=True, theta=7, partitions=2, run=RUN,
          refusals=()) -> CadrReleases:  # fmt: skip
    return CadrReleases(run=run, sender=topics.COLLECTOR_ID, partition=partition,
                        partitions=partitions, theta=theta, devices=list(devices),
                        values=list(values), refusals=list(refusals), final=final)  # fmt: skip


def test_the_gatherer_refuses_misplaced_chunks_naming_the_field():
    gatherer = ReleaseGatherer(RUN, 2)
    gatherer.receive(chunk(0, ["n0"], [1.5], final=False))
    cases = [
        (chunk(1, ["n1"], [2.0], run="other"), "type"),
        (chunk(1, ["n1"], [2.0], partitions=3), "partition"),
        (chunk(1, ["n0"], [2.0]), "devices"),  # n0 came from partition 0 already
        (chunk(1, ["n1", "n1"], [2.0, 2.0]), "devices"),
        (object(), "type"),
    ]
    for message, field in cases:
        with pytest.raises(RemoteProtocolError) as caught:
            gatherer.receive(message)
        assert caught.value.field == field
    gatherer.receive(chunk(0, ["n2"], [3.0]))  # partition 0's final chunk
    with pytest.raises(RemoteProtocolError) as caught:
        gatherer.receive(chunk(0, ["n3"], [3.0]))
    assert caught.value.field == "final"
    assert gatherer.refused == len(cases) + 1
    assert gatherer.values == {"n0": 1.5, "n2": 3.0} and gatherer.final == {0}


def test_a_chunk_with_a_value_per_device_missing_or_not_finite_does_not_decode():
    good = codec.encode(chunk(0, ["n0"], [1.0]))
    for bad in (good.replace(b"[1.0]", b"[1.0,2.0]"), good.replace(b"[1.0]", b"[1e999]")):
        with pytest.raises(RemoteProtocolError):
            codec.decode(bad)
    with pytest.raises(msgspec.ValidationError):
        chunk(0, ["n0"], [])


def test_the_gatherer_fails_the_stage_naming_missing_partitions_or_another_theta():
    async def main():
        gatherer = ReleaseGatherer(RUN, 3)
        gatherer.receive(chunk(1, ["n1"], [1.0], partitions=3))
        with pytest.raises(CadrFailed, match=r"2 partition\(s\).*\[0, 2\]"):
            await gatherer.gathered(7, 1.0, 0.0)
        gatherer.receive(chunk(0, [], [], partitions=3))
        gatherer.receive(chunk(2, ["n2"], [2.0], partitions=3, theta=8))
        with pytest.raises(CadrFailed, match="θ"):
            await gatherer.gathered(7, 1.0, 0.0)

    asyncio.run(main())


class _Conn:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []

    async def publish(self, topic: str, payload: bytes, **_) -> None:
        self.sent.append((topic, payload))


def test_a_workers_releases_and_refusals_come_back_whole_across_chunks(monkeypatch):
    monkeypatch.setattr(cadr_partition, "RELEASES_CHUNK", 3)
    devices = [f"n{i:04d}" for i in range(8)]
    intake = DsrIntake(RUN, devices, 5, 1.0)
    for i, device in enumerate(devices):
        if i % 3 == 2:  # a refusal
            message = BudgetRefused(run=RUN, sender=device, seq=0, account="node",
                                    request="dsr", requested=1.0, remaining=0.25)  # fmt: skip
            kind = "budget_refused"
        else:
            message = DsrReport(run=RUN, sender=device, seq=1, value=i + 0.5, theta=5, eps=1.0)
            kind = "dsr"
        intake.receive(topics.parse(topics.up(RUN, device, kind)), message, 0.0)
    assert intake.complete
    worker = _Worker(RUN, (1, 2), devices, 1.0, None)
    worker.intake, worker.rejected, worker.duplicates = intake, 2, 1
    conn = _Conn()
    asyncio.run(_send_if_complete(worker, conn))
    asyncio.run(_send_if_complete(worker, conn))  # once only
    assert len(conn.sent) == worker.sent == 3  # 8 devices, 3 a chunk
    gatherer = ReleaseGatherer(RUN, 2)
    for _, payload in conn.sent:
        gatherer.receive(codec.decode(payload))
    gatherer.receive(chunk(0, [], [], theta=5))
    got = asyncio.run(gatherer.gathered(5, 1.0, 1.0))
    assert got.values == intake.values and got.refusals == intake.refusals
    assert (got.rejected, got.duplicates) == (2, 1)
    assert isinstance(codec.decode(conn.sent[-1][1]).refusals[0], CadrRefusal)


def test_ready_statuses_count_and_wait_ready_names_the_missing_workers():
    async def main():
        gatherer = ReleaseGatherer(RUN, 3)
        for p in (0, 2):
            gatherer.receive(PartitionStatus(run=RUN, sender=topics.COLLECTOR_ID, partition=p,
                                             partitions=3, state="ready"))  # fmt: skip
        assert await gatherer.wait_ready(0.0) == [1]

    asyncio.run(main())


def test_a_release_read_before_theta_is_held_and_judged_once_theta_is_heard():
    """A stalled worker may read a device's release before the θ broadcast: held (the
    first release of each device; an identical repeat is counted as a duplicate), then
    accepted and acked, or refused, under the heard θ."""
    devices = ["n0000", "n0001"]
    worker = _Worker(RUN, (0, 1), devices, 1.0, None)
    conn = _Conn()

    def release(device: str, theta: int) -> tuple:
        message = DsrReport(run=RUN, sender=device, seq=1, value=2.5, theta=theta, eps=1.0)
        return topics.parse(topics.up(RUN, device, "dsr")), message

    async def main():
        await worker.handle(conn, *release("n0000", 5))
        await worker.handle(conn, *release("n0001", 6))  # a θ that will not be the run's
        for _ in range(3):
            await worker.handle(conn, *release("n0000", 5))
        assert worker.gate.held == 2 and worker.duplicates == 3 and worker.rejected == 0
        assert conn.sent == []
        await worker.start(conn, 5)

    asyncio.run(main())
    intake = worker.intake
    assert intake.values == {"n0000": 2.5} and intake.rejected == 1
    assert worker.duplicates == 3  # the same release again before θ: counted, held once
    acks = [t for t, _ in conn.sent if t.endswith("/in/collector")]
    assert acks == [topics.inbox(RUN, "n0000", topics.COLLECTOR_ID)]
