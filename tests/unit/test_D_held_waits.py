"""Deadlines held on a reader's buffer (``broker.pump.InputHold``), the partitioned CADR
coordinator's gathering (``collector.cadr_partition.ReleaseGatherer``) that uses it, and
the DSR stage's deadline and sentence (``protocol.cadr_dsr_stage.DsrStage``); on virtual
time (tests/virtual_time.py) where time matters.

Planted bugs checked (each made a test here fail): ``ReleaseGatherer._answer`` without
the hold (the two queued-status tests: "missing [2]", "1 partition(s) sent no
releases"); ``InputHold.queued`` ignoring the reader's end (the stopped-reader test spins to
its guard); ``DsrStage.handle_timer`` without the completeness check ("0 release(s)
missing"); the sentence listing departed devices among the missing; ``drive_timers``
ignoring ``max_hold`` (the bounded-hold test polls to its guard)."""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.broker.pump import InputHold, answer_of, drive_timers
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.cadr_fleet import CadrFailed
from ldpfleet.collector.cadr_partition import ReleaseGatherer, listen_to_workers
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_collect import DsrIntake
from ldpfleet.protocol.cadr_dsr_stage import DsrStage, ReleasesFailed, ReleasesGathered
from ldpfleet.protocol.cadr_messages import DsrReport
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.partition import CadrReleases, PartitionStatus, status_topic

from tests.virtual_time import VirtualTimeLoop

RUN = "d-hold"
BUSY = 1.0  # virtual seconds the coordinator is busy elsewhere before each read


class _Busy:
    """A connection whose reader is busy ``BUSY`` s before it takes each delivery: what
    arrived meanwhile stays in the connection's buffer (``pending`` counts it)."""

    def __init__(self, conn) -> None:
        self._conn = conn

    def pending(self) -> int:
        return self._conn.pending()

    async def messages(self):
        deliveries = self._conn.messages()
        while True:
            await asyncio.sleep(BUSY)
            yield await anext(deliveries)


def _ready(p: int, partitions: int) -> PartitionStatus:
    return PartitionStatus(
        run=RUN, sender=topics.COLLECTOR_ID, partition=p, partitions=partitions, state="ready"
    )


def _final(p: int, partitions: int, theta: int = 7) -> CadrReleases:
    return CadrReleases(
        run=RUN, sender=topics.COLLECTOR_ID, partition=p, partitions=partitions, theta=theta,
        devices=[f"n{p}"], values=[1.0 + p], refusals=[], final=True,
    )  # fmt: skip


async def _gathering(messages: list, wait):
    """Publish ``messages`` on the status topic at t = 0, read them through a busy reader,
    and return ``wait(gatherer)``'s outcome and the time it ended."""
    transport = MemoryTransport()
    gatherer = ReleaseGatherer(RUN, 3)
    async with transport.connect("coordinator") as conn, transport.connect("workers") as pub:
        await conn.subscribe(status_topic(RUN))
        for message in messages:
            await pub.publish(status_topic(RUN), codec.encode(message))
        reader = asyncio.create_task(listen_to_workers(_Busy(conn), gatherer))  # type: ignore[arg-type]
        try:
            outcome = await wait(gatherer)
        except CadrFailed as error:
            outcome = str(error)
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
    return outcome, asyncio.get_running_loop().time()


def test_pin_the_gatherers_ready_wait_names_the_missing_at_exactly_its_deadline():
    """Two of three workers said ready (read at 1 s and 2 s): the 2.5 s wait ends at
    exactly 2.5 s naming partition 1 (nothing was queued then)."""
    ready = [_ready(0, 3), _ready(2, 3)]
    missing, ended = VirtualTimeLoop.run(_gathering(ready, lambda g: g.wait_ready(2.5)))
    assert missing == [1]
    assert ended == pytest.approx(2.5)


def test_ready_statuses_queued_when_the_ready_wait_passes_are_counted():
    """Three ready statuses arrived at t = 0; the busy coordinator reads one a second, so
    the third still sits in its buffer at the 2.5 s deadline: held, it is read at 3 s and
    every worker is ready. Without the hold: partition 2 missing at 2.5 s."""
    ready = [_ready(p, 3) for p in range(3)]
    missing, ended = VirtualTimeLoop.run(_gathering(ready, lambda g: g.wait_ready(2.5)))
    assert missing == []
    assert ended == pytest.approx(3.0)


def test_final_chunks_queued_when_the_release_wait_passes_are_counted():
    """The same for the partitions' final chunks and the release wait (``gathered``):
    every partition's releases are gathered, none judged missing."""

    async def wait(gatherer: ReleaseGatherer):
        return (await gatherer.gathered(7, 1.0, 2.5)).values

    finals = [_final(p, 3) for p in range(3)]
    values, ended = VirtualTimeLoop.run(_gathering(finals, wait))
    assert values == {"n0": 1.0, "n1": 2.0, "n2": 3.0}
    assert ended == pytest.approx(3.0)


class _OneDeadline:
    """A machine with one deadline at t = 1 s; records when it fired."""

    def __init__(self) -> None:
        self.fired: list[float] = []

    def next_timer(self) -> float | None:
        return None if self.fired else 1.0

    def handle_timer(self, now: float) -> None:
        self.fired.append(now)


class _NeverEmpty:
    """A buffer that always holds ``queued`` deliveries. The guard: a hold that never
    ends polls (or spins: virtual time stands still) for ever, so it is cut off by a
    count of the checks."""

    def __init__(self, queued: int) -> None:
        self.queued, self.asked = queued, 0

    def pending(self) -> int:
        self.asked += 1
        if self.asked > 10_000:
            raise AssertionError("the hold never ended")
        return self.queued


def _fired_at(reader_seconds: float, queued: int, max_hold: float | None) -> list[float]:
    """When ``_OneDeadline`` fires under a hold on ``_NeverEmpty(queued)`` whose reader
    stops after ``reader_seconds``."""

    async def session() -> list[float]:
        reader = asyncio.create_task(asyncio.sleep(reader_seconds))
        hold = InputHold(_NeverEmpty(queued), reader)
        machine = _OneDeadline()
        fired = asyncio.Event()

        async def after_timer() -> None:
            fired.set()

        timers = asyncio.create_task(
            drive_timers(
                machine, after_timer, inputs_queued=hold.queued, inputs_drained=hold.drained,
                max_hold=max_hold,
            )
        )  # fmt: skip
        waiting = asyncio.create_task(fired.wait())
        await asyncio.wait((waiting, timers), return_when=asyncio.FIRST_COMPLETED)
        for task in (waiting, timers, reader):
            task.cancel()
        (outcome,) = await asyncio.gather(timers, return_exceptions=True)
        if isinstance(outcome, AssertionError):
            raise outcome
        return machine.fired

    return VirtualTimeLoop.run(session())


def test_a_stopped_reader_releases_the_hold():
    """A reader that stopped (its connection lost) leaves deliveries nobody will feed: the
    deadline fires once it stopped (t = 2 s) instead of waiting for ever."""
    assert _fired_at(2.0, 5, max_hold=None) == [2.0]


def test_the_hold_is_bounded_by_max_hold():
    """A buffer that never empties (a live reader always behind) holds the deadline at
    most ``max_hold`` seconds: it fires at 1 s + 2 s, not never."""
    assert _fired_at(3600.0, 1, max_hold=2.0) == [pytest.approx(3.0)]


MEMBERS = ["n0", "n1", "n2", "n3"]


def _stage() -> DsrStage:
    stage = DsrStage(MEMBERS)
    stage.open(DsrIntake(RUN, MEMBERS, 5, 2.7))
    return stage


def _release(stage: DsrStage, device: str, *, tell: bool = True) -> None:
    assert stage.intake is not None
    report = DsrReport(run=RUN, sender=device, seq=1, value=2.0, theta=5, eps=2.7)
    stage.intake.receive(topics.parse(topics.up(RUN, device, "dsr")), report, 0.0)
    if tell:
        stage.intake_changed()


def test_a_release_the_intake_took_before_the_deadline_is_not_judged_missing():
    """The pump tells the stage of a release after publishing its acknowledgement; a
    deadline that passes meanwhile (nothing left queued) finds the intake complete: the
    stage is gathered, not failed with "0 release(s) missing"."""
    stage = _stage()
    stage.await_releases(0.0, 10.0)
    for device in MEMBERS[:-1]:
        _release(stage, device)
    _release(stage, MEMBERS[-1], tell=False)  # taken, not yet told
    stage.handle_timer(10.0)
    assert stage.pop_events() == [ReleasesGathered()]


def test_the_failure_sentence_says_departed_devices_apart_from_missing_ones():
    stage = _stage()
    stage.depart("n1", "after_shares")
    stage.depart("n3", "")
    _release(stage, "n0")
    stage.await_releases(0.0, 10.0)
    stage.handle_timer(10.0)
    assert stage.pop_events() == [
        ReleasesFailed(
            "1 release(s) missing after 10 s: ['n2']; 2 departed (last will): ['n1', 'n3']"
        )
    ]


class _FailingDeadline:
    """A machine whose deadline handler raises (a bug in a machine): its wait must fail
    with that error at the deadline, not hang until something else ends it."""

    def next_timer(self) -> float | None:
        return 1.0

    def handle_timer(self, now: float) -> None:
        raise KeyError("handle_timer bug")

    def pop_events(self) -> list:
        return []


def test_a_failing_timer_fails_the_answer_at_once():
    """``answer_of`` used to wait on ``changed`` only: the timer task's error was seen
    only when an outer timeout cancelled the wait (here: 1 hour of virtual time)."""

    async def session() -> float:
        loop = asyncio.get_running_loop()
        with pytest.raises(KeyError, match="handle_timer bug"):
            async with asyncio.timeout(3600):
                await answer_of(_FailingDeadline(), asyncio.Event(), lambda: None, None)
        return loop.time()

    assert VirtualTimeLoop.run(session()) == pytest.approx(1.0)


@pytest.mark.parametrize("max_hold", [float("nan"), float("inf"), -1.0])
def test_a_max_hold_that_would_never_end_is_refused(max_hold):
    async def session() -> None:
        await drive_timers(_OneDeadline(), asyncio.sleep, max_hold=max_hold)

    with pytest.raises(ParameterError) as refused:
        VirtualTimeLoop.run(session())
    assert refused.value.field == "max_hold" and refused.value.limit.startswith("None or")
