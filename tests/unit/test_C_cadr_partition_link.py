"""The CADR partition worker's and coordinator's timing decisions as machines
(``protocol/cadr_partition_link.py``) on a fake clock, their pumps on virtual time, and the
one ``PartitionStatus`` builder (``protocol.partition_link.partition_status``) that the
stream link, the CADR link and the bulk collector share, its bytes those of the builders
it replaced."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import numpy as np
import pytest
from ldpfleet.collector.bulk import _Conversation
from ldpfleet.collector.cadr_fleet import CadrFailed
from ldpfleet.collector.cadr_partition import ReleaseGatherer
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_collect import DsrIntake
from ldpfleet.protocol.cadr_messages import DsrReport
from ldpfleet.protocol.cadr_partition_link import (
    READY_EVERY,
    CadrPartitionLink,
    ReleaseGatheringMachine,
    ReleasesFailed,
    ReleasesGathered,
    WorkersListening,
    WorkersNotReady,
)
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import BudgetRefused
from ldpfleet.protocol.partition import CadrReleases, PartitionStatus, status_topic
from ldpfleet.protocol.partition_link import WorkerCounts, partition_status

from tests.virtual_time import VirtualTimeLoop

RUN = "cadrlink"


def old_ready(partition: int, partitions: int, devices: int) -> PartitionStatus:
    """What ``collector/cadr_partition._say_ready`` built before the link machine."""
    return PartitionStatus(run=RUN, sender=topics.COLLECTOR_ID, partition=partition,
                           partitions=partitions, state="ready", devices=devices)  # fmt: skip


def said(machine) -> list:
    return [(o.topic, o.message) for o in machine.pop_outbound()]


# ---- the worker's link ------------------------------------------------------------------


def test_the_link_says_ready_at_start_and_every_second_until_theta_is_heard():
    link = CadrPartitionLink(RUN, 1, 3, 17)
    assert link.next_timer() is None and said(link) == []
    link.start(10.0)
    ready = (status_topic(RUN), old_ready(1, 3, 17))
    assert said(link) == [ready]
    assert codec.encode(ready[1]) == codec.encode(old_ready(1, 3, 17))  # the same bytes
    for k in range(1, 4):  # ready at 10, 11, 12, 13: each exactly READY_EVERY later
        due = 10.0 + k * READY_EVERY
        assert link.next_timer() == due
        link.handle_timer(due - 1e-9)  # not due yet: nothing
        assert said(link) == []
        link.handle_timer(due)
        assert said(link) == [ready]
    link.theta_heard(13.4)
    assert link.next_timer() is None
    link.handle_timer(14.0)
    link.handle_timer(100.0)
    assert said(link) == []  # θ heard: never ready again


def test_a_link_that_heard_theta_before_it_started_says_nothing():
    link = CadrPartitionLink(RUN, 0, 1, 4)
    link.theta_heard(0.0)
    link.start(0.0)
    assert said(link) == [] and link.next_timer() is None


def _complete_intake(devices: list[str]) -> DsrIntake:
    intake = DsrIntake(RUN, devices, 5, 1.0)
    for i, device in enumerate(devices):
        if i % 3 == 2:
            message = BudgetRefused(run=RUN, sender=device, seq=0, account="node",
                                    request="dsr", requested=1.0, remaining=0.25)  # fmt: skip
            kind = "budget_refused"
        else:
            message = DsrReport(run=RUN, sender=device, seq=1, value=i + 0.5, theta=5, eps=1.0)
            kind = "dsr"
        intake.receive(topics.parse(topics.up(RUN, device, kind)), message, 0.0)
    return intake


def test_the_link_sends_a_complete_intake_once_in_chunks_with_the_counts_in_the_last():
    devices = [f"n{i:04d}" for i in range(8)]
    link = CadrPartitionLink(RUN, 1, 2, len(devices), chunk_size=3)
    incomplete = DsrIntake(RUN, devices, 5, 1.0)
    link.intake_changed(incomplete, rejected=2, duplicates=1)
    assert said(link) == [] and not link.done
    intake = _complete_intake(devices)
    link.intake_changed(intake, rejected=2, duplicates=1)
    link.intake_changed(intake, rejected=2, duplicates=1)  # once only
    chunks = [m for _, m in said(link)]
    assert link.done and link.sent == len(chunks) == 3  # 8 items, 3 a chunk
    assert all(isinstance(c, CadrReleases) and c.theta == 5 for c in chunks)
    assert [c.final for c in chunks] == [False, False, True]
    assert [(c.rejected, c.duplicates) for c in chunks] == [(0, 0), (0, 0), (2, 1)]
    values = {d: v for c in chunks for d, v in zip(c.devices, c.values, strict=True)}
    assert values == intake.values
    assert {r.device for c in chunks for r in c.refusals} == set(intake.refusals)


def test_an_empty_partition_sends_one_final_empty_chunk():
    link = CadrPartitionLink(RUN, 0, 2, 0)
    link.intake_changed(DsrIntake(RUN, [], 5, 1.0), rejected=0, duplicates=0)
    (chunk,) = [m for _, m in said(link)]
    assert chunk.final and chunk.devices == [] and chunk.refusals == []


# ---- the coordinator's gathering --------------------------------------------------------


def status(partition: int, partitions: int = 3) -> PartitionStatus:
    return old_ready(partition, partitions, 1)


def chunk(partition: int, devices, *, theta: int = 7, partitions: int = 3) -> CadrReleases:
    return CadrReleases(run=RUN, sender=topics.COLLECTOR_ID, partition=partition,
                        partitions=partitions, theta=theta, devices=list(devices),
                        values=[1.0] * len(devices), refusals=[], final=True)  # fmt: skip


def test_the_ready_wait_ends_at_exactly_its_deadline_naming_the_missing_partitions():
    gathering = ReleaseGatheringMachine(RUN, 3)
    gathering.receive(status(1))  # before the wait: counted, no answer
    assert gathering.pop_events() == [] and gathering.next_timer() is None
    gathering.await_ready(5.0, 2.5)
    assert gathering.next_timer() == 7.5
    gathering.receive(status(0))
    gathering.handle_timer(7.5 - 1e-9)
    assert gathering.pop_events() == []
    gathering.handle_timer(7.5)
    assert gathering.pop_events() == [WorkersNotReady((2,))]
    assert gathering.next_timer() is None
    gathering.receive(status(2))  # too late: the wait is over, no second answer
    assert gathering.pop_events() == []


def test_the_ready_wait_ends_on_the_last_ready_or_at_once_when_all_are_there():
    gathering = ReleaseGatheringMachine(RUN, 2)
    gathering.await_ready(0.0, 60.0)
    gathering.receive(status(0, 2))
    assert gathering.pop_events() == []
    gathering.receive(status(1, 2))
    assert gathering.pop_events() == [WorkersListening()] and gathering.next_timer() is None
    gathering.await_ready(1.0, 60.0)  # every worker said ready already
    assert gathering.pop_events() == [WorkersListening()]


def test_a_refused_chunk_still_ends_the_ready_wait():
    """A chunk refused (a device given twice) still says its partition listens; the wait
    ends on it (before, the pump woke only on an accepted message)."""
    gathering = ReleaseGatheringMachine(RUN, 2)
    gathering.receive(chunk(0, ["n0"], partitions=2))
    gathering.await_ready(0.0, 60.0)
    with pytest.raises(RemoteProtocolError):
        gathering.receive(chunk(1, ["n0"], partitions=2))
    assert gathering.pop_events() == [WorkersListening()]


def test_the_final_wait_ends_at_exactly_its_deadline_naming_the_missing_partitions():
    gathering = ReleaseGatheringMachine(RUN, 3)
    gathering.await_final(2.0, 20.0, theta=7)
    gathering.receive(chunk(1, ["n1"]))
    assert gathering.next_timer() == 22.0
    gathering.handle_timer(21.999)
    assert gathering.pop_events() == []
    gathering.handle_timer(22.0)
    assert gathering.pop_events() == [
        ReleasesFailed("2 partition(s) sent no releases within 20 s: [0, 2]")
    ]


def test_the_final_wait_ends_on_the_last_final_chunk_or_fails_on_another_theta():
    gathering = ReleaseGatheringMachine(RUN, 2)
    gathering.await_final(0.0, 20.0, theta=7)
    gathering.receive(chunk(0, ["n0"], partitions=2))
    assert gathering.pop_events() == []
    gathering.receive(chunk(1, ["n1"], partitions=2))
    assert gathering.pop_events() == [ReleasesGathered()] and gathering.next_timer() is None
    other = ReleaseGatheringMachine(RUN, 2)
    other.receive(chunk(0, ["n0"], partitions=2))
    other.receive(chunk(1, ["n1"], partitions=2, theta=8))
    other.await_final(0.0, 20.0, theta=7)
    assert other.pop_events() == [ReleasesFailed("a partition used θ [8], not 7")]


# ---- the coordinator's pump on virtual time ---------------------------------------------


def test_the_gatherers_waits_end_at_their_deadline_on_the_loops_clock():
    """``ReleaseGatherer`` drives the machine's deadline: with nothing heard, each wait
    ends exactly ``timeout`` virtual seconds after it began."""

    async def main() -> tuple:
        loop = asyncio.get_running_loop()
        gatherer = ReleaseGatherer(RUN, 2)
        gatherer.receive(status(1, 2))
        await asyncio.sleep(0.25)
        missing = await gatherer.wait_ready(2.5)
        ready_end = loop.time()
        with pytest.raises(CadrFailed, match=r"2 partition\(s\).*within 20 s: \[0, 1\]"):
            await gatherer.gathered(7, 1.0, 20.0)
        return missing, ready_end, loop.time()

    missing, ready_end, final_end = VirtualTimeLoop.run(main())
    assert missing == [0]
    assert ready_end == pytest.approx(2.75, abs=1e-9)
    assert final_end == pytest.approx(22.75, abs=1e-9)


def test_the_gatherer_answers_as_soon_as_the_last_worker_speaks():
    async def main() -> float:
        loop = asyncio.get_running_loop()
        gatherer = ReleaseGatherer(RUN, 2)
        loop.call_later(0.5, gatherer.receive, status(0, 2))
        loop.call_later(1.25, gatherer.receive, status(1, 2))
        assert await gatherer.wait_ready(60.0) == []
        return loop.time()

    assert VirtualTimeLoop.run(main()) == pytest.approx(1.25, abs=1e-9)


# ---- one PartitionStatus builder --------------------------------------------------------


def test_the_bulk_collectors_status_bytes_are_those_of_its_old_builder():
    counters = SimpleNamespace(reports_received=40, messages=3, reports_rejected=2,
                               reports_duplicate=1)  # fmt: skip
    machine = SimpleNamespace(counters=counters, expected=50, owned=5, complete=False,
                              admitted=np.array([True, True, False, True, False]))  # fmt: skip
    conversation = _Conversation(None, SimpleNamespace(run=RUN, partitions=4), 2, "none",
                                 None, None)  # fmt: skip
    for state in ("ready", "closed"):
        got = conversation.status(machine, state)
        old = PartitionStatus(  # what collector/bulk.py built before the shared builder
            run=RUN, sender="collector", partition=2, partitions=4, state=state, persisted=40,
            expected=50, joined=3, devices=5, complete=False,
            detail="bulk: 3 reports, 2 entries rejected, 1 duplicate",
        )  # fmt: skip
        assert got.topic == topics.svc(RUN, "collector", "partition")
        assert codec.encode(got.message) == codec.encode(old)


def test_the_builder_says_the_counts_and_the_closed_summary():
    counts = WorkerCounts(persisted=4, expected=8, joined=2, devices=2)
    built = partition_status(RUN, 1, 2, "closed", counts, complete=True, detail="done",
                             counters=(1, 2))  # fmt: skip
    assert built == PartitionStatus(run=RUN, sender=topics.COLLECTOR_ID, partition=1,
                                    partitions=2, state="closed", persisted=4, expected=8,
                                    joined=2, devices=2, complete=True, detail="done",
                                    counters=[1, 2])  # fmt: skip
    assert partition_status(RUN, 0, 1, "ready") == PartitionStatus(
        run=RUN, sender=topics.COLLECTOR_ID, partition=0, partitions=1, state="ready"
    )


# ---- the worker's pump on virtual time --------------------------------------------------


def test_the_worker_pump_publishes_ready_at_the_links_times_until_theta():
    """``collector/cadr_partition._say_ready`` only drives the link: ready at 0, 1 and 2 s,
    θ heard at 2.5 s, nothing more however long the worker then waits."""
    from ldpfleet.collector.cadr_partition import _say_ready, _Worker

    class Conn:
        def __init__(self) -> None:
            self.times: list[tuple[float, str]] = []

        async def publish(self, topic: str, payload: bytes, **_) -> None:
            state = codec.decode(payload).state
            self.times.append((asyncio.get_running_loop().time(), state))

    async def main(conn: Conn) -> None:
        worker = _Worker(RUN, (0, 2), ["n0000"], 1.0, None)
        pumping = asyncio.create_task(_say_ready(worker, conn))
        await asyncio.sleep(2.5)
        await worker.start(conn, 5)
        await asyncio.sleep(10.0)
        pumping.cancel()
        await asyncio.gather(pumping, return_exceptions=True)

    conn = Conn()
    VirtualTimeLoop.run(main(conn))
    assert conn.times == [(0.0, "ready"), (1.0, "ready"), (2.0, "ready")]
