"""The partition conversation's machines on a fake clock (no asyncio, no broker).

``protocol.partition_link`` (a worker: ``PartitionLinkMachine``, ``PartitionWorker``) and
``protocol.partition_coordinator`` (``StreamCoordinator``) took over the decisions that the
pumps of ``collector/partition.py`` and ``collector/service.py`` made themselves: when a
worker says ready, progress and closed, that a worker never broadcasts on ``ctl/``, when the
coordinator opens again, gives up on missing workers or a silent fleet, and closes. Each
test feeds messages and times and reads the outbox and the events.
"""

from __future__ import annotations

import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import Reject, Stage
from ldpfleet.protocol.partition import COMPLETE_REASON, COUNTERS, PartitionStatus, status_topic
from ldpfleet.protocol.partition_control import CLOSE
from ldpfleet.protocol.partition_coordinator import (
    Progress,
    StageAborted,
    StreamCoordinator,
    WorkersGone,
    WorkersReady,
)
from ldpfleet.protocol.partition_link import (
    PROGRESS_EVERY,
    READY_EVERY,
    PartitionLinkMachine,
    PartitionWorker,
)
from ldpfleet.protocol.stream import STAGE, StreamCollector, StreamConfig

RUN = "pm1"
DEVICES = ["d0001", "d0002"]


def _stage(state: str, *, stage: str = STAGE, detail: str = "", sender=topics.COLLECTOR_ID):
    return Stage(run=RUN, sender=sender, stage=stage, state=state, detail=detail)


def _collector() -> StreamCollector:
    config = StreamConfig(RUN, "sw", 2.0, 2, 4, 2, 0.0, 1.0, partitions=2)
    collector = StreamCollector(config, DEVICES, deadline=600.0, idle_timeout=600.0)
    collector.open()
    return collector


def _said(machine) -> list[tuple[str, object]]:
    """(topic, message) of the outbox, emptied."""
    return [(o.topic, o.message) for o in machine.pop_outbound()]


def _states(machine) -> list[str]:
    return [m.state for _, m in _said(machine)]


# ---- a worker's link --------------------------------------------------------------------


def test_ready_at_start_and_every_ready_every_until_the_stage_opens():
    link = PartitionLinkMachine(RUN, 1, 2)
    link.start(10.0, _collector())
    [(topic, ready)] = _said(link)
    assert topic == status_topic(RUN)
    assert (ready.state, ready.partition, ready.partitions) == ("ready", 1, 2)
    assert (ready.devices, ready.expected, ready.persisted, ready.joined) == (2, 4, 0, 0)
    assert link.next_timer() == 10.0 + READY_EVERY
    link.handle_timer(10.0 + READY_EVERY - 1e-9)  # not due: nothing
    assert _said(link) == []
    link.handle_timer(10.0 + READY_EVERY)
    assert _states(link) == ["ready"]  # said again, whether or not it changed
    assert link.next_timer() == 10.0 + 2 * READY_EVERY and not link.opened


def test_open_says_progress_at_once_then_only_when_it_changed():
    collector = _collector()
    link = PartitionLinkMachine(RUN, 0, 2)
    link.start(0.0, collector)
    _said(link)
    order = link.take(_stage("open"), 0.3)
    assert order.action == "open" and link.opened
    assert _states(link) == ["progress"]
    assert link.next_timer() == 0.3 + PROGRESS_EVERY
    link.handle_timer(0.3 + PROGRESS_EVERY)  # nothing changed: nothing said
    assert _said(link) == []
    collector.restore([("d0001", 0)])  # a report persisted, its device joined
    link.handle_timer(0.3 + 2 * PROGRESS_EVERY)
    [(_, progress)] = _said(link)
    assert (progress.state, progress.persisted, progress.joined) == ("progress", 1, 1)
    link.take(_stage("open"), 3.0)  # said again (a restarted worker): nothing new
    assert _said(link) == []


@pytest.mark.parametrize(
    ("message", "detail", "reason"),
    [
        (_stage("closed", detail="deadline"), "deadline", "deadline"),
        (_stage("closed"), "", "the coordinator closed the stage"),
        (_stage("closed", stage="run"), "the coordinator closed the run", None),
    ],
)
def test_a_close_order_keeps_the_coordinators_detail(message, detail, reason):
    link = PartitionLinkMachine(RUN, 0, 2)
    link.start(0.0, _collector())
    order = link.take(message, 1.0)
    assert order.action == CLOSE and link.close_detail == detail
    assert order.reason == (reason or detail)


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (_stage("open", sender="d0001"), "sender"),
        (Stage(run="other", sender=topics.COLLECTOR_ID, stage=STAGE, state="open"), "run"),
        (
            PartitionStatus(
                run=RUN, sender=topics.COLLECTOR_ID, partition=0, partitions=2, state="ready"
            ),
            "type",
        ),
    ],
)
def test_what_is_not_the_coordinators_stage_is_refused_and_changes_nothing(message, field):
    link = PartitionLinkMachine(RUN, 0, 2)
    link.start(0.0, _collector())
    _said(link)
    with pytest.raises(RemoteProtocolError) as refused:
        link.take(message, 0.5)
    assert refused.value.field == field
    assert not link.opened and link.close_detail is None and _said(link) == []


def test_the_closed_summary_then_again_every_ready_every_and_at_once_when_asked():
    collector = _collector()
    link = PartitionLinkMachine(RUN, 0, 2)
    link.start(0.0, collector)
    link.take(_stage("open"), 0.0)
    _said(link)
    collector.close("stage deadline passed")
    link.stage_done(5.0, collector.summary())
    [(_, closed)] = _said(link)
    assert closed.state == "closed" and not closed.complete
    assert closed.detail == "stage deadline passed"
    assert len(closed.counters) == len(COUNTERS)
    assert closed.counters[COUNTERS.index("reports_lost")] == 4
    assert link.closed_status == closed
    link.handle_timer(5.0 + READY_EVERY)
    assert [m for _, m in _said(link)] == [closed]
    link.say_closed_again(5.2)  # a new connection: at once
    assert [m for _, m in _said(link)] == [closed]
    assert link.next_timer() == 5.2 + READY_EVERY


def test_a_partition_without_devices_says_a_complete_closed():
    link = PartitionLinkMachine(RUN, 1, 2)
    link.close_empty(2.0)
    [(_, closed)] = _said(link)
    assert (closed.state, closed.complete, closed.detail) == ("closed", True, COMPLETE_REASON)
    assert closed.counters == [0] * len(COUNTERS) and closed.devices == 0
    assert link.next_timer() == 2.0 + READY_EVERY


# ---- a worker: its collector and its link -----------------------------------------------


def test_a_worker_never_broadcasts_but_says_everything_else():
    collector = _collector()  # its ``open`` put ``ctl/stage`` open in its outbox
    worker = PartitionWorker(collector, PartitionLinkMachine(RUN, 0, 2))
    worker.start(0.0)
    said = _said(worker)
    assert [t for t, _ in said] == [status_topic(RUN)]  # the ready, not the stage open
    worker.control(_stage("closed", detail="the coordinator's close"), 1.0)
    assert collector.state == "closed"
    assert collector.close_reason == "the coordinator's close"
    said = _said(worker)
    assert not any(t.startswith(topics.ctl(RUN, "")) for t, _ in said)  # no stage closed
    worker.stage_done(1.5)
    [(topic, closed)] = _said(worker)
    assert topic == status_topic(RUN) and closed.state == "closed"
    assert closed.detail == "the coordinator's close"


def test_a_worker_refuses_what_is_not_the_coordinators_as_the_collector_refuses():
    collector = _collector()
    worker = PartitionWorker(collector, PartitionLinkMachine(RUN, 0, 2))
    worker.start(0.0)
    _said(worker)
    worker.control(_stage("closed", sender="d0001", detail="from a device"), 1.0)
    worker.refuse_control(RemoteProtocolError("undecodable", field="payload"))
    assert collector.state == "open" and collector.rejected == 2
    notices = [m for _, m in _said(worker)]
    assert all(isinstance(n, Reject) for n in notices) and len(notices) == 2
    assert {n.topic for n in notices} == {topics.ctl(RUN, "stage")}
    assert [n.field for n in notices] == ["sender", "payload"]


def test_a_worker_merges_the_two_timers():
    collector = _collector()  # deadline 600
    worker = PartitionWorker(collector, PartitionLinkMachine(RUN, 0, 2))
    worker.start(0.0)
    assert _states(worker) == ["ready"]
    assert worker.next_timer() == READY_EVERY
    worker.handle_timer(READY_EVERY)
    assert _states(worker) == ["ready"] and collector.state == "open"
    worker.handle_timer(600.0)  # the stage deadline: closed, still no broadcast
    assert collector.state == "closed"
    assert not any(t.startswith(topics.ctl(RUN, "")) for t, _ in _said(worker))


# ---- the coordinator --------------------------------------------------------------------


def _status(partition: int, state: str, partitions: int = 2, **fields) -> PartitionStatus:
    return PartitionStatus(run=RUN, sender=topics.COLLECTOR_ID, partition=partition,
                           partitions=partitions, state=state, **fields)  # fmt: skip


def _closed(partition: int, complete: bool = True, detail: str = COMPLETE_REASON, partitions=2):
    return _status(partition, "closed", partitions, complete=complete, detail=detail,
                   counters=[1] * len(COUNTERS), joined=1)  # fmt: skip


def _stage_states(machine) -> list[tuple[str, str]]:
    return [(m.state, m.detail) for _, m in _said(machine)]


def test_the_coordinator_opens_after_every_worker_said_ready_and_closes_after_all_closed():
    machine = StreamCoordinator(RUN, 2, workers_timeout=60.0, fleet_timeout=60.0)
    machine.start(0.0)
    assert machine.next_timer() == 60.0
    machine.receive(_status(0, "ready"), 1.0)
    assert machine.pop_events() == [] and machine.phase == "waiting"
    machine.receive(_status(1, "ready"), 2.0)
    assert machine.pop_events() == [WorkersReady()] and _said(machine) == []
    machine.open(2.5)  # after the run announcement
    assert _stage_states(machine) == [("open", "")]
    assert machine.next_timer() == 3.0
    machine.handle_timer(3.0)
    assert machine.pop_events() == [Progress(0, 0, 0, 0)]
    machine.receive(_status(0, "progress", joined=1, devices=1), 3.1)
    machine.receive(_closed(0), 4.0)
    assert not machine.done and _said(machine) == []
    machine.receive(_closed(1, complete=False, detail="stage deadline passed"), 4.2)
    assert machine.done and machine.next_timer() is None
    assert _stage_states(machine) == [("closed", "stage deadline passed")]
    assert machine.pop_events() == [Progress(0, 0, 2, 0)]  # the last check
    assert machine.tally.counters()["devices"] == 2


def test_workers_missing_at_the_deadline_are_named():
    machine = StreamCoordinator(RUN, 3, workers_timeout=60.0)
    machine.start(0.0)
    machine.receive(_status(1, "ready", partitions=3), 1.0)
    machine.handle_timer(59.9)
    assert machine.pop_events() == []
    machine.handle_timer(60.0)
    assert machine.pop_events() == [
        WorkersGone(f"2 of 3 partition workers of run {RUN} did not say ready within 60 s "
                    "(partitions [0, 2])")
    ]  # fmt: skip
    assert machine.phase == "missing" and _said(machine) == []


def test_a_silent_fleet_closes_at_the_first_check_after_fleet_timeout_once():
    machine = StreamCoordinator(RUN, 1, fleet_timeout=30.0)
    machine.start(0.0)
    machine.receive(_status(0, "ready", partitions=1), 0.0)
    machine.pop_events()
    machine.open(0.0)
    _said(machine)
    now = 0.0
    while machine.next_timer() <= 30.0:  # every check up to 30 s: not yet (not > 30)
        now = machine.next_timer()
        machine.handle_timer(now)
        assert not any(isinstance(e, StageAborted) for e in machine.pop_events())
    assert now == 30.0 and _said(machine) == []
    machine.handle_timer(machine.next_timer())  # 30.5
    sentence = f"no fleet joined run {RUN} within 30 s"
    assert StageAborted(sentence) in machine.pop_events()
    assert _stage_states(machine) == [("closed", sentence)]
    machine.handle_timer(machine.next_timer())  # said once
    assert _said(machine) == []
    machine.receive(_closed(0, complete=False, detail=sentence, partitions=1), 31.2)
    assert machine.done and _said(machine) == []  # no second ``closed``


def test_a_fleet_that_joined_is_never_closed_as_silent():
    machine = StreamCoordinator(RUN, 1, fleet_timeout=1.0)
    machine.start(0.0)
    machine.receive(_status(0, "ready", partitions=1), 0.0)
    machine.open(0.0)
    machine.receive(_status(0, "progress", partitions=1, joined=1), 0.2)
    for _ in range(10):
        machine.handle_timer(machine.next_timer())
    assert _stage_states(machine) == [("open", "")]


def test_a_restarted_worker_is_told_open_again_at_the_next_check():
    machine = StreamCoordinator(RUN, 2)
    machine.start(0.0)
    machine.receive(_status(0, "ready"), 0.0)
    machine.receive(_status(1, "ready"), 0.0)
    machine.open(1.0)
    _said(machine)
    machine.receive(_status(1, "ready"), 1.2)  # worker 1 restarted
    assert _said(machine) == []  # not at once
    machine.handle_timer(1.5)
    assert _stage_states(machine) == [("open", "")]
    machine.handle_timer(2.0)
    assert _said(machine) == []  # once


def test_workers_closed_before_the_opening_open_and_close_at_once():
    machine = StreamCoordinator(RUN, 2)
    machine.start(0.0)
    machine.receive(_closed(0), 0.1)
    machine.receive(_closed(1), 0.2)  # a closed worker listens: ready too
    assert machine.pop_events() == [WorkersReady()]
    machine.open(0.3)
    assert _stage_states(machine) == [("open", ""), ("closed", COMPLETE_REASON)]
    assert machine.done and machine.tally.complete


def test_the_coordinator_refuses_and_counts_what_is_not_its_runs_status():
    machine = StreamCoordinator(RUN, 2)
    machine.start(0.0)
    with pytest.raises(RemoteProtocolError):
        machine.receive(_stage("open"), 0.1)
    with pytest.raises(RemoteProtocolError):
        machine.receive(_status(0, "ready", partitions=3), 0.1)
    machine.refuse()  # an undecodable payload
    assert machine.tally.refused == 3 and machine.phase == "waiting"
